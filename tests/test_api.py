"""The library (svmtrain.api): the same models as the command line, from files and from arrays."""

import os

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import load_svmlight_file

import svmtrain
from svmtrain.cli import main
from svmtrain.model import read_model
from svmtrain.options import OptionError

DATA = os.path.join(os.path.dirname(__file__), "..", "data")

# task -> (training file, whether its examples are qid groups)
SETS = {
    "binary": ("heart_scale", False),
    "multiclass": ("pendigits_scale.train.sample", False),
    "regression": ("cpusmall_scale.train.sample", False),
    "ranking": ("ohsumed.train.sample", True),
    "sequence": ("conll2000.train.svm", True),
}
CASES = [(task, mode) for task in SETS for mode in ("n-slack", "1-slack", "online-dual")]
CASES += [(task, "budgeted") for task in ("binary", "multiclass", "regression")]


def _cli_model(tmp_path, args):
    out = str(tmp_path / "cli.model")
    r = CliRunner().invoke(main, ["train", "-q", *args, out])
    assert r.exit_code == 0, r.output
    return out


def _arrays(path, grouped):
    if grouped:
        X, y, q = load_svmlight_file(path, query_id=True)
        return X, y, q
    return load_svmlight_file(path)


@pytest.mark.parametrize("task,mode", CASES)
def test_arrays_give_the_cli_model_bit_for_bit(tmp_path, task, mode):
    name, grouped = SETS[task]
    path = os.path.join(DATA, name)
    C = {"ranking": "0.1", "sequence": "0.1"}.get(task, "1")
    extra = ["--budget", "30", "--epochs", "2"] if mode == "budgeted" else []
    cli = _cli_model(tmp_path, ["-t", task, "-m", mode, "-c", C, "--seed", "3", *extra, path])
    record = (svmtrain.Budgeted(budget=30, epochs=2) if mode == "budgeted"
              else svmtrain.options.MODE_RECORDS[mode]())
    problem = svmtrain.Problem(task=task, C=float(C), seed=3)
    from_file = svmtrain.train(path, problem, record)
    from_arrays = svmtrain.train(_arrays(path, grouped), problem, record)
    assert from_file == read_model(cli)
    assert from_arrays == from_file
    saved = tmp_path / "api.model"
    from_arrays.save(saved)
    assert saved.read_bytes() == open(cli, "rb").read()
    assert svmtrain.Model.load(saved) == from_file
    assert from_file.certificate.relative_gap == from_file.relative_gap
    assert from_file.stats.mode == mode and from_file.stats.summary


def test_constraints_task_from_arrays_and_file(tmp_path):
    rng = np.random.default_rng(0)
    lines, rows = [], []
    for q in range(1, 41):
        for _ in range(3):
            x = rng.normal(size=4)
            margin = float(rng.integers(0, 3))
            lines.append(f"{margin} qid:{q} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(x)))
            rows.append((margin, q, x))
    path = tmp_path / "c.svm"
    path.write_text("\n".join(lines) + "\n")
    cli = read_model(_cli_model(tmp_path, ["-t", "constraints", str(path)]))
    X = np.array([r[2] for r in rows])
    model = svmtrain.train((X, [r[0] for r in rows], [r[1] for r in rows]),
                           svmtrain.Problem(task="constraints"))
    assert model == cli


@pytest.mark.parametrize("task", ["binary", "sequence"])
def test_training_leaves_the_callers_block_as_it_was(task):
    """Training narrows its data (the n-slack engine's int32 columns, the sequence task's store
    of int32 columns and byte values) by giving the block other arrays: a Block the caller
    passed keeps its own, unchanged."""
    from svmtrain import api, data
    from svmtrain.options import Problem
    block = data.load(os.path.join(DATA, SETS[task][0]))
    before = {name: getattr(block, name) for name in ("indptr", "indices", "data", "target", "qid",
                                                       "cost", "line")}
    copies = {name: a.copy() for name, a in before.items()}
    api.train(block, Problem(task=task, C=0.1))
    for name, a in before.items():
        assert getattr(block, name) is a and a.dtype == copies[name].dtype, name
        assert np.array_equal(a, copies[name]), name


def test_liblinear_format_and_predict_verify(tmp_path):
    path = os.path.join(DATA, "heart_scale")
    cli = _cli_model(tmp_path, ["--format", "liblinear", "-B", "1", path])
    model = svmtrain.train(path, svmtrain.Problem(bias=1))
    model.save(tmp_path / "m.ll", format="liblinear")
    assert (tmp_path / "m.ll").read_bytes() == open(cli, "rb").read()
    v = svmtrain.verify_bound(model, path)
    assert v.certified and v.dual == model.dual and v.examples == 270
    p = svmtrain.predict(model, path)
    X, y = load_svmlight_file(path)
    assert np.array_equal(p.labels, model.predict(X))
    assert p.metrics["accuracy"] == pytest.approx(np.mean(model.predict(X) == y))
    r = CliRunner().invoke(main, ["predict", path, str(tmp_path / "m.ll"), str(tmp_path / "out")])
    assert r.exit_code == 0
    assert [float(x) for x in (tmp_path / "out").read_text().split()] == p.labels.tolist()


def test_model_file_written_by_train(tmp_path):
    path = os.path.join(DATA, "heart_scale")
    model = svmtrain.train(path, model_file=str(tmp_path / "m"), trace=str(tmp_path / "t"))
    assert read_model(tmp_path / "m") == model
    trace = (tmp_path / "t").read_text().splitlines()
    assert trace[0].startswith("# epoch") and len(trace) == 1 + model.stats.epochs
    assert len(model.stats.trace) == model.stats.epochs


def test_streaming_chunks_match_the_file(tmp_path):
    path = os.path.join(DATA, "heart_scale")
    X, y = load_svmlight_file(path)
    chunks = [(X[i:i + 50], y[i:i + 50]) for i in range(0, X.shape[0], 50)]
    mode = svmtrain.OnlineDual(chunk=50)
    assert svmtrain.train(chunks, mode=mode) == svmtrain.train(path, mode=mode)
    # an iterator is read once, as standard input: the labels must be given, no verify pass
    with pytest.raises(svmtrain.DataError, match="--labels"):
        svmtrain.train(iter(chunks), mode=mode)
    once = svmtrain.train(iter(chunks), mode=svmtrain.OnlineDual(chunk=50, labels=(1, -1)))
    assert "NOT certified" in once.stats.summary or "certified" in once.stats.summary


@pytest.mark.parametrize("kwargs,flag,message", [
    (dict(problem=svmtrain.Problem(C=-1)), "-c", "C must be a positive number"),
    (dict(problem=svmtrain.Problem(epsilon=2)), "-e", "must be in (0, 1)"),
    (dict(problem=svmtrain.Problem(task="binary", loss="hamming")), "--loss",
     "applies to the multiclass and sequence tasks"),
    (dict(problem=svmtrain.Problem(task="ranking", bias=1)), "-B", "cancels"),
    (dict(mode=svmtrain.Budgeted(), problem=svmtrain.Problem(task="ranking")), "--task",
     "--mode budgeted trains"),
    (dict(mode="budgeted", controls=svmtrain.Controls(nonneg="all")), "--mode",
     "the training controls apply"),
    (dict(where=svmtrain.Local(threads=2)), "--threads", "applies to --mode 1-slack"),
    (dict(mode=svmtrain.OnlineDual(cache_limit="12 parsecs")), "--cache-limit", "expected a number"),
])
def test_options_are_checked_before_reading(kwargs, flag, message):
    with pytest.raises(OptionError) as e:
        svmtrain.train("/nonexistent/file", **kwargs)
    assert e.value.flag == flag and message in e.value.message


def test_where_is_local_or_dask_for_every_function(tmp_path):
    """predict and verify_bound take where=None as this process without importing the option
    records; anything but Local() or Dask(...) is refused, by train as by them."""
    path = os.path.join(DATA, "heart_scale")
    model = svmtrain.train(path)
    here = svmtrain.predict(model, path)
    assert np.array_equal(svmtrain.predict(model, path, where=svmtrain.Local()).values, here.values)
    for call in (lambda: svmtrain.train(path, where="local"),
                 lambda: svmtrain.predict(model, path, where="local"),
                 lambda: svmtrain.verify_bound(model, path, where="local")):
        with pytest.raises(OptionError, match="where must be Local"):
            call()
    # the records are still the library's, as svmtrain.api's __all__ says
    from svmtrain import api
    assert api.Problem is svmtrain.Problem and api.Dask is svmtrain.Dask
    assert svmtrain.OptionError is OptionError


def test_cli_prints_the_library_messages():
    r = CliRunner().invoke(main, ["train", "-t", "binary", "--loss", "hamming", "x", "y"])
    assert r.exit_code == 2 and "--loss" in r.output and "applies to the multiclass" in r.output


def test_bad_arrays_name_the_row():
    X = np.array([[1.0, 2.0], [np.inf, 1.0]])
    with pytest.raises(svmtrain.DataError, match=r"<arrays>:2: value inf"):
        svmtrain.train((X, [1, -1]))
    with pytest.raises(svmtrain.DataError, match="X has 2 rows and y 3"):
        svmtrain.train((X[:1].repeat(2, 0), [1, -1, 1]))


def test_cli_modules_are_thin():
    import svmtrain.cli as cli
    folder = os.path.dirname(cli.__file__)
    for name in os.listdir(folder):
        if name.endswith(".py"):
            with open(os.path.join(folder, name)) as f:
                assert sum(1 for _ in f) <= 250, name


def test_one_place_builds_a_trained_model():
    root = os.path.dirname(svmtrain.__file__)
    builders = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                text = open(os.path.join(folder, name)).read()
                if "Model(task=" in text:
                    builders.append(os.path.relpath(os.path.join(folder, name), root))
    assert builders == ["pipeline.py"]


def test_every_public_name_has_a_docstring():
    import inspect
    import svmtrain.sklearn as estimators
    missing = []
    names = [(svmtrain, n) for n in svmtrain.__all__ if n != "__version__"]
    names += [(estimators, n) for n in estimators.__all__]
    for module, name in names:
        obj = getattr(module, name)
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member) and not inspect.getdoc(member):
                    missing.append(f"{name}.{attr}")
    assert not missing, missing


def test_python_gives_the_command_lines_model_whatever_blas_threads_numpy_has(tmp_path):
    """numpy's BLAS rounds its dot products by its thread count, which follows the cores unless
    a variable sets it: ||w||^2 over 200,000 weights differed in its last bits on 2 threads. A
    model trained from Python, numpy imported first with its default threads, is the command
    line's byte for byte (the command line runs BLAS on one thread)."""
    import subprocess
    import sys
    rng = np.random.default_rng(4)
    lines = []
    for i in range(300):
        cols = np.sort(rng.choice(200_000, 25, replace=False)) + 1
        lines.append(f"{1 if i % 2 else -1} " + " ".join(f"{c}:{v:.3g}" for c, v in
                                                        zip(cols, rng.uniform(-1, 1, 25))))
    data_file = tmp_path / "wide.svm"
    data_file.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    cli, lib = tmp_path / "cli.model", tmp_path / "lib.model"
    subprocess.run([sys.executable, "-m", "svmtrain", "train", "-q", str(data_file), str(cli)],
                   env=env, check=True)
    subprocess.run([sys.executable, "-c", "import numpy, svmtrain, sys; "
                    "svmtrain.train(sys.argv[1], model_file=sys.argv[2])", str(data_file), str(lib)],
                   env=env, check=True)
    assert lib.read_bytes() == cli.read_bytes()
