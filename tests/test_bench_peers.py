"""What the `footprint` benchmark reads from the peers and from svmtrain to put them on one problem:
the primal svm_rank / svm_hmm print, the primal an svmtrain model records, the number of queries or
sentences their -c is summed over, and CRFsuite's child reading a sequence file one sentence at a
time. The peers themselves are built outside the repository; `test_bench_smoke.py` runs the group."""

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from svmtrain.model import read_model

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import crfpeer  # noqa: E402
import footprint  # noqa: E402

#: the end of an svm_rank run on ohsumed Fold 1, as svm_struct_learn.c prints it
SVM_RANK_REPORT = """Iter 92: .........(NumConst=60, SV=14, CEps=5.2926, QPEps=0.0000)
Final epsilon on KKT-Conditions: 5.29260
Upper bound on duality gap: 3.28149
Dual objective value: dval=2982.53016
Primal objective value: pval=2985.81166
Total number of constraints in final working set: 60 (of 91)
Number of iterations: 92
Runtime in cpu-seconds: 0.37
Compacting linear model...done
Writing learned model...done
"""


def test_peer_primal_is_the_printed_pval_and_none_without_it():
    assert footprint.peer_primal(SVM_RANK_REPORT) == 2985.81166
    assert footprint.peer_primal(SVM_RANK_REPORT.replace("Primal objective value", "Primal")) is None
    assert footprint.peer_primal("") is None


def test_count_groups_counts_distinct_qids(tmp_path):
    path = tmp_path / "rank.txt"
    path.write_text("# a comment line\n"
                    "2 qid:7 1:1 2:0.5\n1 qid:7 1:0.2\n"
                    "1 qid:3 2:1 # qid:99 in a comment\n0 qid:3 1:0.1\n"
                    "\n"
                    "1 qid:7 2:0.3\n")
    assert footprint.count_groups(path) == 2


def test_model_primal_is_the_models_recorded_primal(tmp_path):
    train = tmp_path / "rank.txt"
    lines = []
    for q in range(4):
        for doc in range(5):
            lines.append(f"{(doc + q) % 3} qid:{q} 1:{doc * 0.3 + q * 0.1:g} 2:{(doc % 2) * 0.7:g} "
                         f"3:{1.0 / (doc + 1):g}")
    train.write_text("\n".join(lines) + "\n")
    model = tmp_path / "rank.model"
    subprocess.run([sys.executable, "-m", "svmtrain", "train", "-q", "-t", "ranking", "-c",
                    repr(footprint.SVM_RANK_C / footprint.count_groups(train)), str(train),
                    str(model)], check=True, cwd=ROOT)
    recorded = read_model(model).primal
    assert recorded is not None and recorded > 0
    assert footprint.model_primal(model) == recorded
    assert read_model(model).C == footprint.SVM_RANK_C / 4


def test_row_carries_both_primals_and_leaves_peer_cells_empty_without_a_peer():
    column = {name: k for k, name in enumerate(footprint.COLUMNS)}
    alone = footprint._row("train", "ohsumed", (1.5, 40.0), primals=(2984.79, None))
    assert len(alone) == len(footprint.COLUMNS)
    assert alone[column["peer s"]] == alone[column["time ratio"]] == ""
    assert alone[-2:] == ["2984.79", ""]
    both = footprint._row("train", "ohsumed", (1.0, 40.0), (2.0, 8.0), "svm_rank", (1.0, 2.5))
    assert len(both) == len(footprint.COLUMNS)
    assert both[column["time ratio"]] == "0.50x" and both[column["memory ratio"]] == "5.00x"
    assert both[column["time floor"]] == both[column["memory floor"]] == ""
    assert both[-2:] == ["1", "2.5"]


def test_row_gives_the_floors_ratios_to_the_peer():
    """The floor columns: python -c "import numpy" (0.08 s, 25 MB) against the peer's figures."""
    column = {name: k for k, name in enumerate(footprint.COLUMNS)}
    row = footprint._row("predict", "a9a test", (0.114, 35.0), (0.02, 3.0), "LL predict",
                         floor=(0.08, 25.0))
    assert len(row) == len(footprint.COLUMNS)
    assert row[column["time ratio"]] == "5.70x" and row[column["time floor"]] == "4.00x"
    assert row[column["memory ratio"]] == "11.67x" and row[column["memory floor"]] == "8.33x"


SEQUENCES = ("DT qid:1 1:1 4:1\nNN qid:1 2:1 5:1\n"
             "VB qid:2 3:1 # the second sentence\n"
             "NN qid:3 2:1 6:0.5\nDT qid:3 1:1\n")


def test_crfpeer_reads_one_sentence_at_a_time(tmp_path):
    path = tmp_path / "seq.svm"
    path.write_text(SEQUENCES)
    stream = crfpeer.sequences(path)
    assert isinstance(stream, types.GeneratorType)
    assert next(stream) == ([{"1": 1.0, "4": 1.0}, {"2": 1.0, "5": 1.0}], ["DT", "NN"])
    assert list(stream) == [([{"3": 1.0}], ["VB"]), ([{"2": 1.0, "6": 0.5}, {"1": 1.0}], ["NN", "DT"])]


def test_crfpeer_trains_and_tags(tmp_path):
    pytest.importorskip("pycrfsuite")
    path = tmp_path / "seq.svm"
    path.write_text(SEQUENCES * 5)
    result = tmp_path / "out.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "crfpeer.py"), str(path),
                    str(tmp_path / "crf.model"), "--test", str(path), "--result", str(result)],
                   check=True)
    r = json.loads(result.read_text())
    assert r["total"] == 5 * 5 and r["correct"] == r["total"]    # separable: every tag recovered
    assert r["iterations"] > 0


def test_crfpeer_imports_no_numpy(tmp_path):
    """The child's peak memory is reported as CRFsuite's: it must not carry numpy's."""
    pytest.importorskip("pycrfsuite")
    path = tmp_path / "seq.svm"
    path.write_text(SEQUENCES)
    script = ROOT / "bench" / "crfpeer.py"
    probe = ("import runpy, sys\n"
             f"sys.argv = [{str(script)!r}, {str(path)!r}, {str(tmp_path / 'crf.model')!r}]\n"
             "runpy.run_path(sys.argv[0], run_name='__main__')\n"
             "print('numpy' in sys.modules, 'pycrfsuite' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_commands_side_by_side_alternate_and_short_ones_run_eleven_times(tmp_path):
    log = tmp_path / "log"
    argvs = [["sh", "-c", f"echo a >> {log}"], ["sh", "-c", f"echo b >> {log}"]]
    measured = footprint.measure_side_by_side(argvs, 2)
    assert log.read_text().split() == ["a", "b"] * footprint.SHORT_REPEAT
    assert [len(m) for m in measured] == [3, 3]
    assert all(seconds > 0 and mb > 0 for seconds, mb, _ in measured)
    log.unlink()
    footprint.measure_side_by_side(argvs, 1)         # one run asked for: one run (a smoke run)
    assert log.read_text().split() == ["a", "b"]
