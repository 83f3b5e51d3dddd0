"""Shared fixtures: the real datasets of ../shared/data, decompressed once per session."""

import lzma
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# A command run two ways, for the lean paths' tests (test_lean_predict, test_lean_train): the
# console script's entry, which offers it to svmtrain.lean_predict / lean_train first and reports
# at exit whether numpy was imported (False: the lean path ran it), and click's alone
CONSOLE_SCRIPT = """
import atexit, sys
atexit.register(lambda: print("numpy" in sys.modules, file=sys.__stderr__))
sys.argv = ["svmtrain"] + sys.argv[1:]
from svmtrain.__main__ import run
run()
"""
CLICK_ONLY = """
import sys
sys.argv = ["svmtrain"] + sys.argv[1:]
from svmtrain.cli import main
main(prog_name="svmtrain")
"""


def shared_data_root() -> Path:
    return Path(os.environ.get("SVMTRAIN_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    """shared("a9a/a9a.xz", max_lines=None) -> path of the decompressed file (skip if absent)."""
    root = tmp_path_factory.mktemp("shared")
    cache = {}

    def get(rel, max_lines=None):
        key = (rel, max_lines)
        if key not in cache:
            src = shared_data_root() / rel
            if not src.exists():
                pytest.skip(f"shared data not found: {src} (set SVMTRAIN_SHARED_DATA)")
            out = root / (rel.replace("/", "_").removesuffix(".xz") + (f".{max_lines}" if max_lines else ""))
            with lzma.open(src, "rb") as f, open(out, "wb") as g:
                for i, line in enumerate(f):
                    if max_lines is not None and i >= max_lines:
                        break
                    g.write(line)
            cache[key] = out
        return cache[key]

    return get
