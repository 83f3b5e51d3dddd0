"""train's lean path (svmtrain.lean_train) against the full one (click, svmtrain.api).

The console script offers every `train` command line to the lean path first. Whatever it takes, it
must do byte for byte as the full path does (the model file, standard output and error but the
seconds of the summary line, the exit status); whatever it declines, it must decline before
writing anything. Each case runs the same command both ways in fresh processes.
"""

import gzip
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from conftest import CLICK_ONLY, CONSOLE_SCRIPT

from svmtrain import interrupt, lean_train

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
HEART = os.path.join(DATA, "heart_scale")
A9A = os.path.join(DATA, "a9a.train.sample")
PENDIGITS = os.path.join(DATA, "pendigits_scale.train.sample")
OHSUMED = os.path.join(DATA, "ohsumed.train.sample")
CPUSMALL = os.path.join(DATA, "cpusmall_scale.train.sample")

_CONSOLE, _CLICK = CONSOLE_SCRIPT, CLICK_ONLY
_SECONDS = re.compile(r"(, )[0-9.e+-]+( s, primal)")


def _run(code, args, cwd):
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, cwd=cwd,
                       input=b"")
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def both(args, cwd, model="model"):
    """Run `svmtrain train ARGS` through the console script and through click alone; assert the
    same status, standard output, standard error (the summary's seconds aside) and model file;
    return (whether the console script's run imported numpy, status, stderr, the model's bytes)."""
    results = []
    for code in (_CONSOLE, _CLICK):
        target = os.path.join(cwd, model)
        if os.path.isfile(target):
            os.unlink(target)
        status, out, err = _run(code, ["train", *args], cwd)
        written = None
        if os.path.isfile(target):
            with open(target, "rb") as f:
                written = f.read()
        leftovers = [n for n in os.listdir(cwd) if ".tmp-" in n]
        assert not leftovers
        results.append((status, out, _SECONDS.sub(r"\1S\2", err), written))
    (s1, o1, e1, w1), (s2, o2, e2, w2) = results
    imported = e1.splitlines()[-1] == "True"
    e1 = "".join(line + "\n" for line in e1.splitlines()[:-1])
    assert (s1, o1, e1) == (s2, o2, e2)
    assert w1 == w2
    return imported, s1, e1, w1


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Binary files of several kinds: labels other than +1/-1, zero-based indices, compressed."""
    d = tmp_path_factory.mktemp("lean_train_data")
    with open(A9A) as f:
        rows = f.read().splitlines()
    out = {"heart": HEART, "a9a": A9A}
    relabelled = [("7" if r.split()[0] == "+1" else "2.5") + r[r.index(" "):] for r in rows]
    out["labels 7 2.5"] = str(d / "labels")
    (d / "labels").write_text("\n".join(relabelled) + "\n")
    out["labels 1 0"] = str(d / "labels01")
    (d / "labels01").write_text("\n".join(("1" if r.split()[0] == "+1" else "0") + r[r.index(" "):]
                                          for r in rows) + "\n")

    def zero_based(r):
        head, *feats = r.split()
        return " ".join([head] + [f"{int(k) - 1}:{v}" for k, v in (t.split(":") for t in feats)])
    out["zero-based"] = str(d / "zero")
    (d / "zero").write_text("\n".join(map(zero_based, rows)) + "\n")
    out["gzip"] = str(d / "a9a.gz")
    with open(A9A, "rb") as f, gzip.open(d / "a9a.gz", "wb") as g:
        g.write(f.read())
    # comments, blank lines, a last line without its newline
    out["odd lines"] = str(d / "odd")
    (d / "odd").write_text("# a comment\n\n" + "\n".join(rows[:300]) + "  # trailing\n\n"
                           + rows[300])
    return out


OPTIONS = [[], ["-c", "0.25"], ["-c", "4", "-e", "0.01"], ["-B", "1"], ["--bias=0.5", "-c", "2"],
           ["-B", "-1"], ["--seed", "7"], ["--seed=0", "--no-shrinking"], ["--shrinking"],
           ["-t", "binary", "-m", "n-slack"], ["--mode", "auto", "--task=binary"],
           ["--max-epochs", "3"], ["--epsilon", "0.1", "-q"], ["-c", "1e3", "--max-epochs=5"],
           ["--format", "liblinear"], ["--format=liblinear", "-B", "1", "-c", "0.5"],
           ["--format", "svmtrain"]]


@pytest.mark.parametrize("options", OPTIONS, ids=" ".join)
def test_the_lean_path_trains_what_the_full_path_trains(tmp_path, files, options):
    imported, status, err, model = both([*options, files["a9a"], "model"], tmp_path)
    liblinear = any(o.endswith("liblinear") for o in options)
    assert not imported and status == 0
    assert model.startswith(b"solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\n" if liblinear
                            else b"svmtrain_model 1\ntask binary\n")
    if "-q" not in options:
        assert "svmtrain: binary n-slack, " in err


@pytest.mark.parametrize("kind", ["heart", "labels 7 2.5", "labels 1 0", "zero-based", "gzip",
                                  "odd lines"])
def test_every_kind_of_file_it_takes(tmp_path, files, kind):
    options = ["--zero-based"] if kind == "zero-based" else []
    imported, status, err, model = both([*options, "-B", "1", files[kind], "model"], tmp_path)
    assert not imported and status == 0 and model
    if kind == "labels 7 2.5":
        assert b"\nlabels 7 2.5\n" in model
        # LIBLINEAR's format stores integer labels: the full path says so
        imported, status, err, model = both(["--format", "liblinear", files[kind], "model"],
                                            tmp_path)
        assert imported and status == 2 and model is None


@pytest.mark.parametrize("name", ["a9a/a9a.xz", "ijcnn1/ijcnn1.xz", "reuters_lasvm/reuters.trn.xz",
                                  "heart_scale/heart_scale.xz"])
def test_the_shared_binary_sets(tmp_path, shared, name):
    """The real sets the footprint benchmark times (svmtrain against LIBLINEAR's train), whole."""
    imported, status, err, model = both([str(shared(name)), "model"], tmp_path)
    assert not imported and status == 0 and "relative gap" in err


def test_the_model_is_the_python_api_s(tmp_path, files):
    """The same model from the command line's lean path and from Python (svmtrain.api)."""
    from svmtrain import api
    imported, status, _, lean = both(["-c", "0.5", "-B", "1", files["a9a"], "model"], tmp_path)
    assert not imported and status == 0
    model = api.train(files["a9a"], api.Problem(task="binary", C=0.5, bias=1.0))
    model.save(str(tmp_path / "api"))
    assert (tmp_path / "api").read_bytes() == lean


def test_a_sparse_model_and_one_not_converged(tmp_path):
    # most columns unused: the weights are written sparse
    data = tmp_path / "sparse"
    data.write_text("".join(f"{1 if i % 2 else -1} {1 + i % 3}:1 {500 + i}:0.5\n" for i in range(40)))
    imported, status, err, model = both(["--max-epochs", "1", "-e", "1e-9", str(data), "model"],
                                        tmp_path)
    assert not imported and status == 0 and b"\nweights sparse " in model
    assert "svmtrain: warning: relative gap " in err and "(--max-epochs)" in err


MULTICLASS_OPTIONS = [[], ["-c", "0.5", "-B", "1"], ["--seed", "3", "--no-shrinking"],
                      ["-e", "0.01", "--max-epochs", "4"], ["--task=multiclass", "-m", "n-slack"]]


@pytest.mark.parametrize("options", MULTICLASS_OPTIONS, ids=" ".join)
def test_multiclass_models_are_the_full_path_s(tmp_path, options):
    args = ["-t", "multiclass", *options, PENDIGITS, "model"] if "--task=multiclass" not in options \
        else [*options, PENDIGITS, "model"]
    imported, status, err, model = both(args, tmp_path)
    assert not imported and status == 0
    assert b"\ntask multiclass\n" in model and b"\nlabels 0 1 2 3 4 5 6 7 8 9\n" in model
    assert b"\nloss zero-one\nrescaling margin\nweights dense 10x" in model


def test_multiclass_labels_sparse_weights_and_the_shared_set(tmp_path, shared):
    # labels that are not integers, in no order, and most columns unused: sparse weights
    data = tmp_path / "classes"
    labels = ["2.5", "-1", "7", "0.125"]
    data.write_text("".join(f"{labels[i % 4]} {1 + i % 4}:1 {900 + i}:0.25\n" for i in range(60)))
    imported, status, err, model = both(["-t", "multiclass", str(data), "model"], tmp_path)
    assert not imported and status == 0
    assert b"\nlabels -1 0.125 2.5 7\n" in model and b"\nweights sparse " in model
    imported, status, err, model = both(["-t", "multiclass", str(shared("pendigits/pendigits.xz")),
                                         "model"], tmp_path)
    assert not imported and status == 0 and "multiclass n-slack, 7494 examples" in err
    # sector: 105 classes, 55,197 features, its 5.8 M weights in huge pages (svmtrain._reader.zeros)
    imported, status, err, model = both(["-t", "multiclass", "-e", "0.01",
                                         str(shared("sector/sector.scale.xz")), "model"], tmp_path)
    assert not imported and status == 0 and "multiclass n-slack, 6412 examples" in err


REGRESSION_OPTIONS = [[], ["-p", "0.05", "-c", "2"], ["-p", "0"], ["-B", "1"],
                      ["--seed", "3", "--no-shrinking"], ["-e", "0.01", "--max-epochs", "4"],
                      ["--task=regression", "-m", "n-slack", "-q"]]


@pytest.mark.parametrize("options", REGRESSION_OPTIONS, ids=" ".join)
def test_regression_models_are_the_full_path_s(tmp_path, options):
    args = [*options, CPUSMALL, "model"]
    if "--task=regression" not in options:
        args = ["-t", "regression", *args]
    imported, status, err, model = both(args, tmp_path)
    assert not imported and status == 0
    assert model.startswith(b"svmtrain_model 1\ntask regression\nmode n-slack\n")
    width = 13 if "-B" in options else 12
    assert b"\nlabels" not in model and f"\nweights dense {width}\n".encode() in model
    p = options[options.index("-p") + 1] if "-p" in options else "0.1"
    assert f"\np {float(p)!r}\n".encode() in model


def test_a_tube_wider_than_every_target(tmp_path):
    """-p 1e308: w = 0 is optimal and certified; the margins' check must not overflow (numpy
    warned on the full path)."""
    imported, status, err, model = both(["-t", "regression", "-p", "1e308", CPUSMALL, "model"],
                                        tmp_path)
    assert not imported and status == 0 and "Warning" not in err
    assert b"\nrelative_gap 0.0\n" in model and b"\nweights sparse 0\n" in model


@pytest.mark.parametrize("name", ["cadata/cadata.xz", "cpusmall/cpusmall.xz"])
def test_the_shared_regression_sets(tmp_path, shared, name):
    """Targets and features as the files have them (cadata's house values run to 500,001)."""
    imported, status, err, model = both(["-t", "regression", "--max-epochs", "50",
                                         str(shared(name)), "model"], tmp_path)
    assert not imported and status == 0 and "regression n-slack" in err


def test_it_lists_every_constraint_where_the_task_does():
    from svmtrain.tasks import multiclass
    assert lean_train.LIST_ALL_UP_TO == multiclass.LIST_ALL_UP_TO


DECLINED = {
    "three labels": (PENDIGITS, []),
    "multiclass loss": (PENDIGITS, ["-t", "multiclass", "--loss", "zero-one"]),
    "multiclass rescaling": (PENDIGITS, ["-t", "multiclass", "--rescaling", "slack"]),
    "qids": (OHSUMED, []),
    "1-slack": (HEART, ["-m", "1-slack"]),
    "online-dual": (HEART, ["-m", "online-dual"]),
    "trace": (HEART, ["--trace", "trace"]),
    "liblinear format, multiclass": (PENDIGITS, ["-t", "multiclass", "--format", "liblinear"]),
    "liblinear format, zero-based": (HEART, ["--zero-based", "--format", "liblinear"]),
    "class weights": (HEART, ["-w", "1", "2"]),
    "attached value": (HEART, ["-c2"]),
    "C zero": (HEART, ["-c", "0"]),
    "C nan": (HEART, ["-c", "nan"]),
    "epsilon one": (HEART, ["-e", "1"]),
    "seed negative": (HEART, ["--seed", "-1"]),
    "max epochs zero": (HEART, ["--max-epochs", "0"]),
    "unknown option": (HEART, ["--frobnicate"]),
    "missing value": (HEART, ["-c"]),
    "no such file": ("no-such-file", []),
    "a directory": (DATA, []),
    "liblinear format, regression": (CPUSMALL, ["-t", "regression", "--format", "liblinear"]),
    "p of a binary task": (HEART, ["-p", "0.2"]),
    "p negative": (CPUSMALL, ["-t", "regression", "-p", "-1"]),
    "p inf": (CPUSMALL, ["-t", "regression", "-p", "inf"]),
}


# what click or the reader refuses (the same message from the full path, run after the lean one)
REFUSED = {"liblinear format, multiclass", "liblinear format, zero-based", "C zero", "C nan", "epsilon one", "seed negative", "max epochs zero", "unknown option",
           "missing value", "no such file", "a directory", "p of a binary task", "p negative",
           "p inf"}


@pytest.mark.parametrize("case", sorted(DECLINED))
def test_what_it_declines_the_full_path_does(tmp_path, case):
    data, options = DECLINED[case]
    args = [*options, data, "model"] if case != "missing value" else [data, "model", *options]
    imported, status, err, model = both(args, tmp_path)
    if case in REFUSED:
        assert status == 2 and model is None and err.startswith(("Usage:", "Error:"))
    else:
        assert imported


@pytest.mark.parametrize("text, why", [
    ("1 1:1\n-1 2:x\n", "a bad value"),
    ("1 1:1\n-1 2:1\n1 3:1e200 4:1e200\n", "an overflowing norm"),
    ("1 1:1\n1 2:1\n", "one label"),
    ("", "no rows"),
    ("1 1:1\n-0 2:1\n0 3:1\n", "a negative zero label"),
    ("1 1:1\n0 2:1\n-0 3:1\n", "a negative zero label after a zero"),
    ("1 qid:3 1:1\n-1 qid:3 2:1\n", "qids"),
    ("1 cost:2 1:1\n-1 2:1\n", "a cost"),
])
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_bad_or_unusual_files_go_to_the_full_path(tmp_path, text, why, task):
    data = tmp_path / "data"
    data.write_text(text)
    imported, status, err, model = both(["-t", task, str(data), "model"], tmp_path)
    assert imported, why


@pytest.mark.parametrize("text, why", [
    ("1 1:1\n-1 2:x\n", "a bad value"),
    ("1 1:1\n-1 2:1\n1 3:1e200 4:1e200\n", "an overflowing norm"),
    ("", "no rows"),
    ("1 qid:3 1:1\n-1 qid:3 2:1\n", "qids"),
    ("1 cost:2 1:1\n-1 2:1\n", "a cost"),
])
def test_bad_or_unusual_regression_files_go_to_the_full_path(tmp_path, text, why):
    data = tmp_path / "data"
    data.write_text(text)
    imported, status, err, model = both(["-t", "regression", str(data), "model"], tmp_path)
    assert imported, why


def test_regression_takes_any_targets(tmp_path):
    # one target value, a negative zero, targets far outside the features' scale
    data = tmp_path / "data"
    data.write_text("3 1:1\n3 2:1\n-0 1:0.5 3:1\n1e6 2:0.25\n-2.5e-3 3:1\n")
    imported, status, err, model = both(["-t", "regression", str(data), "model"], tmp_path)
    assert not imported and status == 0


def test_an_unwritable_model_goes_to_the_full_path(tmp_path):
    imported, status, err, model = both([HEART, "no/such/dir/model"], tmp_path,
                                        model="no/such/dir/model")
    assert imported and status == 2 and model is None


@pytest.mark.parametrize("task, data", [("binary", A9A), ("multiclass", PENDIGITS),
                                        ("regression", CPUSMALL)])
def test_an_interrupted_run_leaves_what_the_full_path_leaves(tmp_path, monkeypatch, task, data):
    """SIGINT in the first epoch: the model and its dual state (MODEL_FILE.state.npz), and the
    full path's message, from both paths (in this process, the signal simulated)."""
    monkeypatch.setattr(interrupt, "requested", lambda: True)
    monkeypatch.setattr(interrupt, "signal_received", lambda: signal.SIGINT)
    monkeypatch.setattr(interrupt, "exit_status", lambda: 130)
    lean = str(tmp_path / "lean")
    assert lean_train.run(["-t", task, data, lean]) == 130
    from click.testing import CliRunner

    from svmtrain.cli import main
    full = str(tmp_path / "full")
    r = CliRunner().invoke(main, ["train", "-t", task, data, full])
    assert r.exit_code == 130, r.output
    with open(lean, "rb") as a, open(full, "rb") as b:
        assert a.read() == b.read()
    with np.load(lean + ".state.npz") as a, np.load(full + ".state.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            assert np.array_equal(a[name], b[name]), name


def test_it_is_taken_only_below_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(lean_train, "LEAN_BYTES", os.path.getsize(HEART) - 1)
    assert lean_train.run([HEART, str(tmp_path / "m")]) is None
    assert not (tmp_path / "m").exists()
