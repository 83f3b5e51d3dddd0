"""The command line through click's CliRunner: exit codes, messages, files left (or not) behind."""

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import shared_data_root
from svmtrain.cli import main
from svmtrain.model import read_model
from svmtools.cli import main as svmtools_main


@pytest.fixture
def heart(shared):
    return shared("heart_scale/heart_scale.xz")


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args, prog=main, input=None):
    return runner.invoke(prog, [str(a) for a in args], input=input)


def test_train_predict_verify_round_trip(runner, heart, tmp_path):
    model = tmp_path / "heart.model"
    r = run(runner, "train", heart, model)
    assert r.exit_code == 0, r.output
    assert re.search(r"270 examples, 13 features: \d+ epochs", r.stderr)
    m = read_model(model)
    assert m.task == "binary" and m.labels == [1.0, -1.0] and m.n_features == 13
    assert m.relative_gap <= m.epsilon == 1e-3 and m.examples == 270

    out = tmp_path / "pred"
    r = run(runner, "predict", heart, model, out)
    assert r.exit_code == 0, r.output
    acc = re.fullmatch(r"Accuracy = ([\d.]+)% \((\d+)/270\)\n", r.stderr)
    assert acc and float(acc.group(1)) > 80
    predicted = out.read_text().split()
    assert len(predicted) == 270 and set(predicted) <= {"1", "-1"}

    r = run(runner, "predict", "--scores", heart, model)     # OUTPUT omitted: standard output
    scores = np.array(r.stdout.split(), dtype=float)
    assert r.exit_code == 0 and len(scores) == 270
    assert np.array_equal(np.where(scores > 0, "1", "-1"), np.array(predicted))

    r = run(runner, "verify-bound", model, heart)
    assert r.exit_code == 0, r.output
    assert "certified" in r.stdout and repr(m.primal) in r.stdout


def test_verify_bound_exit_status_and_json(runner, heart, tmp_path):
    model = tmp_path / "m"
    assert run(runner, "train", "-q", "-e", "0.05", heart, model).exit_code == 0
    m = read_model(model)
    r = run(runner, "verify-bound", "--json", model, heart)
    assert r.exit_code == 0
    figures = json.loads(r.stdout)
    assert set(figures) >= {"primal", "dual", "gap", "relative_gap", "examples"}
    assert figures["primal"] == m.primal and figures["dual"] == m.dual and figures["examples"] == 270
    assert figures["gap"] == figures["primal"] - figures["dual"] > 0
    r = run(runner, "verify-bound", "--tol", "1e-9", model, heart)
    assert r.exit_code == 1 and "NOT certified" in r.stdout
    # a different data set gives another primal: the dual no longer brackets it
    other = tmp_path / "other"
    other.write_text("".join(line for i, line in enumerate(open(heart)) if i % 2))
    r = run(runner, "verify-bound", "--json", model, other)
    assert json.loads(r.stdout)["examples"] == 135 and "warning" in r.stderr
    assert r.exit_code == 1 and json.loads(r.stdout)["certified"] is False
    assert json.loads(r.stdout)["relative_gap"] < 0          # P < D: never certified
    r = run(runner, "verify-bound", model, other)
    assert r.exit_code == 1 and "primal is below the dual" in r.stdout


def test_same_seed_same_model_bits(runner, heart, tmp_path):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        assert run(runner, "train", "-q", "--seed", seed, heart, tmp_path / name).exit_code == 0
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert (tmp_path / "a").read_bytes() != (tmp_path / "c").read_bytes()
    assert read_model(tmp_path / "c").seed == 4


@pytest.mark.parametrize("bad_line, reason", [
    ("+1 1:0.5 1:0.7", "strictly increasing|duplicate"),
    ("abc 1:1", "target"),
    ("+1 0:1", "index 0"),
    ("+1 2:nan", "nan|NaN"),
    ("+1 3:", "value"),
])
def test_malformed_training_data_exit_2_and_no_files(runner, tmp_path, bad_line, reason):
    data = tmp_path / "bad.svm"
    data.write_text("+1 1:1 2:1\n-1 1:-1\n# comment\n" + bad_line + "\n+1 2:3\n")
    model, trace = tmp_path / "m", tmp_path / "trace"
    r = run(runner, "train", "--trace", trace, data, model)
    assert r.exit_code == 2
    assert re.search(rf"{re.escape(str(data))}:4: .*({reason})", r.stderr), r.stderr
    assert "Traceback" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.svm"]


def test_existing_model_survives_a_failed_run(runner, heart, tmp_path):
    model = tmp_path / "m"
    assert run(runner, "train", "-q", heart, model).exit_code == 0
    before = model.read_bytes()
    bad = tmp_path / "bad"
    bad.write_text("1 1:1\n-1 x\n")
    assert run(runner, "train", bad, model).exit_code == 2
    assert model.read_bytes() == before


@pytest.mark.parametrize("args, option", [
    (["-c", "-1"], "-c"), (["-c", "0"], "-c"), (["-c", "nan"], "-c"),
    (["-e", "0"], "epsilon"), (["-e", "1.5"], "epsilon"), (["--seed", "-1"], "seed"),
    (["--max-epochs", "0"], "max-epochs"), (["-t", "nonsense"], "task"), (["-m", "foo"], "mode"),
    (["-B", "inf"], "bias"),
])
def test_bad_options_named_before_any_data_is_read(runner, tmp_path, args, option):
    # the data file does not exist: an option error must come first
    r = run(runner, "train", *args, tmp_path / "missing.svm", tmp_path / "m")
    assert r.exit_code == 2
    assert option in r.stderr and "missing.svm" not in r.stderr
    assert not (tmp_path / "m").exists()


def test_missing_files_and_bad_labels(runner, heart, tmp_path):
    r = run(runner, "train", tmp_path / "nope", tmp_path / "m")
    assert r.exit_code == 2 and "nope" in r.stderr and "cannot open" in r.stderr
    three = tmp_path / "three"
    three.write_text("1 1:1\n2 1:2\n3 1:3\n")
    r = run(runner, "train", three, tmp_path / "m")
    assert r.exit_code == 2 and f"{three}:3:" in r.stderr and "found 3 (1, 2, 3)" in r.stderr
    one = tmp_path / "one"
    one.write_text("1 1:1\n1 1:2\n")
    r = run(runner, "train", one, tmp_path / "m")
    assert r.exit_code == 2 and "two labels" in r.stderr
    r = run(runner, "train", heart, tmp_path / "no-such-dir" / "m")
    assert r.exit_code == 2 and "no-such-dir/m: cannot write" in r.stderr and ".tmp" not in r.stderr
    assert "Traceback" not in r.output
    assert not (tmp_path / "m").exists()


def test_predict_failures_leave_no_output(runner, heart, tmp_path):
    model, out = tmp_path / "m", tmp_path / "out"
    assert run(runner, "train", "-q", heart, model).exit_code == 0
    bad = tmp_path / "bad"
    bad.write_text("1 1:1\n" * 5 + "1 1:1 1:2\n")
    r = run(runner, "predict", bad, model, out)
    assert r.exit_code == 2 and f"{bad}:6:" in r.stderr and not out.exists()
    r = run(runner, "predict", "--json", heart, model)
    assert r.exit_code == 2 and "OUTPUT" in r.stderr
    truncated = tmp_path / "truncated"
    truncated.write_text("".join(model.read_text().splitlines(keepends=True)[:25]))
    r = run(runner, "predict", heart, truncated, out)
    assert r.exit_code == 2 and "truncated" in r.stderr and not out.exists()
    r = run(runner, "predict", heart, tmp_path / "absent", out)
    assert r.exit_code == 2 and not out.exists()
    # a label the model does not know counts as an error in the metric, not as bad input
    odd = tmp_path / "odd"
    odd.write_text("5 1:1\n")
    r = run(runner, "predict", "--json", odd, model, out)
    assert r.exit_code == 0 and json.loads(r.stdout)["correct"] == 0
    # but verify-bound cannot price it
    r = run(runner, "verify-bound", model, odd)
    assert r.exit_code == 2 and f"{odd}:1:" in r.stderr and "label 5" in r.stderr


def test_standard_input_and_compressed_data(runner, shared, tmp_path):
    text = open(shared("heart_scale/heart_scale.xz")).read()
    r = run(runner, "train", "-q", "-", tmp_path / "from_stdin", input=text)
    assert r.exit_code == 0, r.output
    r = run(runner, "train", "-q", shared_data_root() / "heart_scale" / "heart_scale.xz", tmp_path / "from_xz")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "from_stdin").read_bytes() == (tmp_path / "from_xz").read_bytes()


def test_trace_has_a_line_per_epoch(runner, heart, tmp_path):
    trace = tmp_path / "trace"
    r = run(runner, "train", "-q", "--trace", trace, heart, tmp_path / "m")
    assert r.exit_code == 0
    lines = trace.read_text().splitlines()
    assert lines[0].startswith("# epoch seconds dual primal gap")
    rows = [list(map(float, line.split())) for line in lines[1:]]
    m = read_model(tmp_path / "m")
    assert len(rows) == m.epochs and [int(r[0]) for r in rows] == list(range(1, m.epochs + 1))
    assert all(r[4] == pytest.approx(r[3] - r[2]) for r in rows)
    assert rows[-1][5] <= 1e-3 and rows[-1][6] == 1     # the last line is an exact bound


def test_bias_matches_liblinear_objective(runner, heart, tmp_path):
    from sklearn.datasets import load_svmlight_file
    from sklearn.svm import LinearSVC
    model = tmp_path / "m"
    assert run(runner, "train", "-q", "-B", "1", "-e", "1e-5", "--max-epochs", "100000", heart, model).exit_code == 0
    m = read_model(model)
    assert m.bias == 1.0 and len(m.w) == 14
    X, y = load_svmlight_file(str(heart))
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    clf = LinearSVC(loss="hinge", dual=True, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                    tol=1e-8, max_iter=1000000).fit(X, y)
    w = np.append(clf.coef_.ravel(), clf.intercept_)
    Xb = np.hstack([X.toarray(), np.ones((X.shape[0], 1))])
    ref = 0.5 * w @ w + np.maximum(0, 1 - np.where(y > 0, 1, -1) * (Xb @ w)).sum()
    assert m.relative_gap <= 1e-5 and m.primal == pytest.approx(ref, rel=1e-5)
    assert m.dual <= ref * (1 + 1e-12)


def test_liblinear_models_both_ways(runner, heart, tmp_path):
    from liblinear.liblinearutil import load_model, predict, problem, parameter, save_model, svm_read_problem, train
    y, x = svm_read_problem(str(heart))
    # theirs -> our predict
    theirs = tmp_path / "theirs.model"
    save_model(str(theirs), train(problem(y, x), parameter("-s 3 -c 1 -B 1 -q")))
    their_labels, _, _ = predict(y, x, load_model(str(theirs)), "-q")
    r = run(runner, "predict", heart, theirs, tmp_path / "p1")
    assert r.exit_code == 0, r.output
    assert [float(v) for v in (tmp_path / "p1").read_text().split()] == their_labels
    # ours (--format liblinear) -> their predict
    ours = tmp_path / "ours.model"
    assert run(runner, "train", "-q", "--format", "liblinear", "-B", "1", heart, ours).exit_code == 0
    assert ours.read_text().startswith("solver_type L2R_L1LOSS_SVC_DUAL\n")
    labels, _, _ = predict(y, x, load_model(str(ours)), "-q")
    r = run(runner, "predict", heart, ours, tmp_path / "p2")
    assert [float(v) for v in (tmp_path / "p2").read_text().split()] == labels
    # verify-bound cannot certify a LIBLINEAR model (it records no dual)
    r = run(runner, "verify-bound", ours, heart)
    assert r.exit_code == 2 and "dual" in r.stderr


def test_svmtools_check(runner, heart, tmp_path):
    r = run(runner, "check", heart, prog=svmtools_main)
    assert r.exit_code == 0
    assert re.search(r"rows\s+270\n", r.stdout) and re.search(r"features\s+13 ", r.stdout)
    assert "-1 (150), 1 (120)" in r.stdout and re.search(r"qids\s+none", r.stdout)
    r = run(runner, "check", "--json", heart, prog=svmtools_main)
    assert json.loads(r.stdout)["labels"] == {"-1": 150, "1": 120}
    bad = tmp_path / "bad"
    bad.write_text("1 qid:3 1:1\n1 qid:3 2:1 1:1\n")
    r = run(runner, "check", bad, prog=svmtools_main)
    trainer = run(runner, "train", bad, tmp_path / "m")
    assert r.exit_code == trainer.exit_code == 2
    assert r.stderr == trainer.stderr and f"{bad}:2:" in r.stderr


def test_mutated_inputs_never_crash(runner, heart, tmp_path):
    """Random byte edits of a data file and of a model file: exit 0 or 2, never a traceback."""
    rng = np.random.default_rng(0)
    original = heart.read_bytes()[:3000]
    model = tmp_path / "good.model"
    assert run(runner, "train", "-q", heart, model).exit_code == 0
    model_bytes = model.read_bytes()
    alphabet = np.frombuffer(b"0123456789:.-+eE \n\t#qidcost:nanif\x00\xff", dtype=np.uint8)
    for case in range(60):
        for source, name in ((original, "data"), (model_bytes, "model")):
            buf = bytearray(source)
            for _ in range(rng.integers(1, 6)):
                pos = int(rng.integers(0, len(buf)))
                if rng.random() < 0.5:
                    buf[pos] = int(rng.choice(alphabet))
                else:
                    del buf[pos:pos + int(rng.integers(1, 20))]
            f = tmp_path / f"{name}{case}"
            f.write_bytes(bytes(buf))
            if name == "data":
                r = run(runner, "train", "-q", "--max-epochs", "50", f, tmp_path / f"m{case}")
            else:
                r = run(runner, "predict", "-q", heart, f, tmp_path / f"p{case}")
            assert r.exit_code in (0, 2), (name, case, r.output, r.exception)
            assert r.exception is None or isinstance(r.exception, SystemExit), r.exception


@pytest.mark.parametrize("args, flag", [
    (["-t", "binary", "-p", "0.5"], "-p"), (["-t", "regression", "--loss", "hamming"], "--loss"),
    (["-t", "binary", "--rescaling", "slack"], "--rescaling"), (["-t", "ranking", "-B", "1"], "-B"),
    (["-t", "multiclass", "--loss", "hamming"], "--loss"),
])
def test_options_of_other_tasks_are_refused(runner, heart, tmp_path, args, flag):
    r = run(runner, "train", *args, heart, tmp_path / "m")
    assert r.exit_code == 2 and flag in r.stderr and not (tmp_path / "m").exists()
