"""The benchmarks stay runnable: `bench/run.py --smoke` runs every benchmark once on tiny slices of
the shared data and fails when one raises (it judges no figure). Without the shared data the run
has nothing to slice: skipped."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SVMTRAIN_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared data in {SHARED}")
def test_every_benchmark_runs_on_tiny_data(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--smoke",
                           "--shared-data", str(SHARED), "--results", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    results = json.loads((tmp_path / "latest.json").read_text())
    listed = subprocess.run([sys.executable, "-c", "import run; print(' '.join(run.BENCHMARKS))"],
                            cwd=ROOT / "bench", capture_output=True, text=True, check=True)
    every = set(listed.stdout.split())
    ran = set(results["benchmarks"])
    skipped = {note.split(":", 1)[0] for note in results["options"]["skipped"]}
    # every benchmark either ran (a table) or said why it could not (a peer or a file absent)
    assert every and ran | skipped == every, (every, ran, skipped)
    assert not results["options"]["failed"]
    for name, table in results["benchmarks"].items():
        assert table["rows"], f"{name}: an empty table"
