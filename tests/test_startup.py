"""Start-up: each command imports what it needs and nothing else (counted, not timed).

The floor of a training run is the interpreter and numpy; `svmtrain --help` and `train --help`
stay below numpy. A module that starts being imported by every run shows up here first.
"""

import json
import os
import subprocess
import sys

import pytest

DATA = os.path.join(os.path.dirname(__file__), "..", "data")

_PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
sys.argv = ["svmtrain"] + sys.argv[1:]
from svmtrain.cli import main
main()
"""


def _modules(*args, cwd=None):
    r = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                       cwd=cwd)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def _floor(code):
    r = subprocess.run([sys.executable, "-c", f"{code}; import sys, json; "
                        f"print(json.dumps(sorted(sys.modules)))"], capture_output=True, text=True)
    return set(json.loads(r.stdout))


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["--version"]])
def test_help_imports_no_numpy(args):
    mods = _modules(*args)
    assert "numpy" not in mods and not any(m.startswith("svmtrain._") for m in mods)
    # click and svmtrain's own command line over the bare interpreter, nothing else of size: the
    # rest (44; 47 for train --help, whose defaults come from the option records: dataclasses) is
    # the standard library click itself imports (inspect, typing, uuid, datetime,
    # and shutil for the terminal's width, which brings bz2, lzma, fnmatch)
    extra = {m for m in mods - _floor("pass") if not m.startswith(("click", "svmtrain"))}
    assert len(extra) <= 48, sorted(extra)


def test_training_imports_only_its_mode(tmp_path):
    mods = _modules("train", "-q", os.path.join(DATA, "heart_scale"), str(tmp_path / "m"))
    for heavy in ("scipy", "dask", "distributed", "tqdm", "sklearn", "svmtrain.solvers.online",
                  "svmtrain.solvers.online_store", "svmtrain.solvers.online_reading",
                  "svmtrain.solvers.online_state",
                  "svmtrain.solvers.oneslack", "svmtrain.solvers.budgeted", "svmtrain._budget",
                  "svmtrain._oneslack", "svmtrain.distributed", "svmtrain.tasks.multiclass",
                  "concurrent.futures", "gzip", "bz2", "lzma"):
        assert heavy not in mods, heavy
    beyond = mods - _floor("import numpy")
    ours = {m for m in beyond if m.startswith("svmtrain")}
    # the rest (18): click, dataclasses and what click imports (uuid, locale, gettext; difflib for
    # the short options); no tempfile, whose shutil and random cost 4-6 ms (svmtrain.atomic
    # creates its temporary file itself)
    others = {m for m in beyond - ours if not m.startswith("click")}
    assert "tempfile" not in others and len(others) <= 20, sorted(others)
    # with svmtrain.auto, the CLI's records, svmtrain.records, svmtrain.stopping, svmtrain._numpy
    assert len(ours) <= 32, sorted(ours)


_CONSOLE_PROBE = _PROBE.replace("from svmtrain.cli import main\nmain()",
                                "from svmtrain.__main__ import run\nrun()")


@pytest.mark.parametrize("task, data", [("binary", "heart_scale"),
                                        ("multiclass", "pendigits_scale.train.sample"),
                                        ("regression", "cpusmall_scale.train.sample")])
def test_lean_training_imports_neither_numpy_nor_click_nor_dataclasses(tmp_path, task, data):
    """`train` of a binary, multiclass or regression model on a small file
    (svmtrain.lean_train): the interpreter, the reader, the kernel and the certificate's modules;
    not even svmtrain.records' dataclasses."""
    r = subprocess.run([sys.executable, "-c", _CONSOLE_PROBE, "train", "-q", "-t", task,
                        os.path.join(DATA, data), str(tmp_path / "m")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    mods = set(json.loads(r.stderr.strip().splitlines()[-1]))
    for heavy in ("numpy", "click", "dataclasses", "inspect", "typing", "contextlib", "tempfile",
                  "svmtrain.records", "svmtrain.engine", "svmtrain.api", "svmtrain.cli"):
        assert heavy not in mods, heavy
    ours = {m for m in mods if m.startswith("svmtrain")}
    assert ours <= {"svmtrain", "svmtrain.__main__", "svmtrain.lean_train", "svmtrain.lean_predict",
                    "svmtrain.auto", "svmtrain._reader", "svmtrain._engine", "svmtrain._linear",
                    "svmtrain._multiclass", "svmtrain._regression",
                    "svmtrain.interrupt", "svmtrain.objective", "svmtrain.stopping",
                    "svmtrain.atomic", "svmtrain._numpy"}, sorted(ours)
    assert (tmp_path / "m").read_text().startswith(f"svmtrain_model 1\ntask {task}\n")


@pytest.mark.parametrize("task, data", [("multiclass", "pendigits_scale.train.sample"),
                                        ("sequence", "conll2000.train.svm"),
                                        ("ranking", "ohsumed.train.sample")])
def test_training_a_task_imports_no_numpy_ma(tmp_path, task, data):
    """np.unique(x) imports numpy.ma (11 ms) to ask whether x is masked: the tasks' label sets
    come from svmtrain.data.distinct instead."""
    mods = _modules("train", "-q", "-t", task, os.path.join(DATA, data), str(tmp_path / "m"))
    assert "svmtrain.tasks." + task in mods
    assert "numpy.ma" not in mods


def test_one_slack_on_one_thread_starts_no_thread_pool(tmp_path):
    """concurrent.futures (and the logging it imports) only for --threads above 1."""
    mods = _modules("train", "-q", "-m", "1-slack", os.path.join(DATA, "heart_scale"),
                    str(tmp_path / "m"))
    assert "svmtrain.solvers.oneslack" in mods
    assert not {"concurrent.futures", "logging"} & mods


def test_the_collector_is_on_for_the_command(tmp_path):
    """The console script imports with the cyclic collector off (svmtrain.__main__); the command
    itself runs with it on, the imported modules frozen out of its way."""
    code = ("import atexit, gc, sys; atexit.register(lambda: print(gc.isenabled(), "
            "gc.get_freeze_count() > 0, file=sys.__stderr__)); sys.argv = ['svmtrain'] + "
            "sys.argv[1:]; from svmtrain.__main__ import run; run()")
    r = subprocess.run([sys.executable, "-c", code, "train", "-q", os.path.join(DATA, "heart_scale"),
                        str(tmp_path / "m")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.split() == ["True", "True"], r.stderr


def test_predict_and_verify_import_no_dask_nor_the_option_records(tmp_path):
    """Neither takes a training option: the records' eight frozen dataclasses (svmtrain.options)
    are 5 ms of start-up. Nor does either run the engine (verify-bound prices P(w) and reads D)."""
    model = str(tmp_path / "m")
    subprocess.run([sys.executable, "-m", "svmtrain", "train", "-q",
                    os.path.join(DATA, "heart_scale"), model], check=True)
    for args in (["predict", "-q", os.path.join(DATA, "heart_scale"), model, str(tmp_path / "o")],
                 ["verify-bound", "-q", model, os.path.join(DATA, "heart_scale")]):
        mods = _modules(*args)
        assert "svmtrain.api" in mods, args
        assert not {"dask", "distributed", "scipy", "svmtrain.distributed", "tqdm",
                    "svmtrain.options", "svmtrain.engine", "svmtrain._engine"} & mods, args


_CONSOLE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
sys.argv = ["svmtrain"] + sys.argv[1:]
from svmtrain.__main__ import run
run()
"""
_CLICK = "import sys; sys.argv[0] = 'svmtrain'; from svmtrain.cli import main; main(prog_name='svmtrain')"


def _console(args, columns):
    env = dict(os.environ, COLUMNS=str(columns))
    r = subprocess.run([sys.executable, "-c", _CONSOLE, *args], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout, set(json.loads(r.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
@pytest.mark.parametrize("columns", [80, 200, 60])
def test_console_help_and_version_are_clicks_text(args, columns):
    """The console script answers `svmtrain --help` and `--version` without importing click (its
    import is most of their time), with click's very text; a terminal narrower than 80 columns
    gets click's own rendering at its width."""
    out, mods = _console(args, columns)
    env = dict(os.environ, COLUMNS=str(columns))
    clicks = subprocess.run([sys.executable, "-c", _CLICK, *args], capture_output=True, text=True,
                            env=env)
    assert clicks.returncode == 0 and out == clicks.stdout
    assert ("click" in mods) == (columns < 80 and args != ["--version"])


def test_prerendered_help_is_up_to_date():
    from svmtools.manpages import USAGE_MODULE, usage_module_text
    assert USAGE_MODULE.read_text(encoding="utf-8") == usage_module_text(), \
        "svmtrain/_usage.py is stale: run `make man`"


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_console_help_without_a_standard_output_or_reader(args):
    """Closed standard output: nothing written, status 0; a reader that went away: status 1; no
    traceback either way (as click)."""
    code = "import sys; sys.argv = ['svmtrain'] + sys.argv[1:]; from svmtrain.__main__ import run; run()"
    closed = subprocess.run(f"'{sys.executable}' -c \"{code}\" {args[0]} >&-", shell=True,
                            capture_output=True, text=True, env=dict(os.environ, COLUMNS="100"))
    assert closed.returncode == 0 and closed.stderr == ""
    r, w = os.pipe()
    os.close(r)                     # the reader is gone before the first byte
    gone = subprocess.run([sys.executable, "-c", code, *args], stdout=w, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, COLUMNS="100"))
    os.close(w)
    assert gone.returncode == 1 and "Traceback" not in gone.stderr, gone.stderr
