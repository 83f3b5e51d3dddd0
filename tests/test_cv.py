"""Cross-validation and the path over C (svmtrain.cv, `svmtrain cv`): folds as a user would check
them, the same figures for any number of jobs, every point of a path certified, and the warm
path's optima equal to cold training's within their gaps."""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

import svmtrain
from svmtrain import data as data_layer
from svmtrain.cli import main
from svmtrain.cv import example_of_rows, fold_of_rows, geometric_grid, smallest_useful_C
from svmtrain.model import read_model
from svmtrain.options import OptionError

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
HEART = os.path.join(DATA, "heart_scale")
PENDIGITS = os.path.join(DATA, "pendigits_scale.train.sample")
OHSUMED = os.path.join(DATA, "ohsumed.train.sample")
CONLL = os.path.join(DATA, "conll2000.train.svm")
CPUSMALL = os.path.join(DATA, "cpusmall_scale.train.sample")


def _block(path):
    return data_layer.load(path)


@pytest.mark.parametrize("path,task", [(HEART, "binary"), (PENDIGITS, "multiclass")])
def test_folds_are_stratified(path, task):
    block = _block(path)
    fold = fold_of_rows(block, task, 5, seed=3)
    sizes = np.bincount(fold, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for label in np.unique(block.target):
        per_fold = np.bincount(fold[block.target == label], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1, (label, per_fold)


@pytest.mark.parametrize("path,task", [(OHSUMED, "ranking"), (CONLL, "sequence")])
def test_grouped_folds_never_split_a_query(path, task):
    block = _block(path)
    fold = fold_of_rows(block, task, 4, seed=1)
    example = example_of_rows(block, task)
    for e in np.unique(example):
        assert len(set(fold[example == e].tolist())) == 1
    if task == "ranking":
        for q in np.unique(block.qid):
            assert len(set(fold[block.qid == q].tolist())) == 1
    assert set(fold.tolist()) == {0, 1, 2, 3}


def test_same_seed_same_folds_other_seed_other_folds():
    block = _block(HEART)
    a = fold_of_rows(block, "binary", 5, seed=7)
    assert np.array_equal(a, fold_of_rows(block, "binary", 5, seed=7))
    assert not np.array_equal(a, fold_of_rows(block, "binary", 5, seed=8))
    r = fold_of_rows(_block(CPUSMALL), "regression", 3, seed=7)
    assert np.array_equal(r, fold_of_rows(_block(CPUSMALL), "regression", 3, seed=7))


def test_more_folds_than_examples_is_refused():
    block = _block(OHSUMED)
    n = len(np.unique(block.qid))
    with pytest.raises(svmtrain.InputError, match=f"{n + 1} folds need at least"):
        fold_of_rows(block, "ranking", n + 1, seed=1)


def test_cross_validate_jobs_1_and_2_identical():
    problem = svmtrain.Problem(C=0.5)
    one = svmtrain.cross_validate(HEART, problem, folds=4, seed=2, jobs=1)
    two = svmtrain.cross_validate(HEART, problem, folds=4, seed=2, jobs=2)
    assert one.folds == two.folds and one.mean == two.mean and one.std == two.std
    assert one.metric == "accuracy" and len(one.folds) == 4
    assert 0.7 < one.mean < 0.95
    assert one.std == pytest.approx(np.std(one.folds, ddof=1))
    assert one.certified


def test_cross_validate_scores_a_fold_as_train_and_predict_do(tmp_path):
    """Fold k's score is what train on the other folds' lines and predict on its lines give."""
    block = _block(HEART)
    fold = fold_of_rows(block, "binary", 3, seed=5)
    lines = open(HEART).read().splitlines(True)
    train = tmp_path / "train"
    test = tmp_path / "test"
    train.write_text("".join(l for l, f in zip(lines, fold) if f != 1))
    test.write_text("".join(l for l, f in zip(lines, fold) if f == 1))
    model = svmtrain.train(str(train), svmtrain.Problem(C=2.0))
    expected = svmtrain.predict(model, str(test)).metrics["accuracy"]
    result = svmtrain.cross_validate(HEART, svmtrain.Problem(C=2.0), folds=3, seed=5)
    assert result.folds[1] == pytest.approx(expected, abs=1.0 / 90)


@pytest.mark.parametrize("path,task,metric", [
    (PENDIGITS, "multiclass", "accuracy"), (CPUSMALL, "regression", "mse"),
    (OHSUMED, "ranking", "pairwise_accuracy"), (CONLL, "sequence", "token_accuracy")])
def test_every_task_has_its_metric(path, task, metric):
    result = svmtrain.cross_validate(path, svmtrain.Problem(task=task, C=0.1, epsilon=1e-2),
                                     folds=3)
    assert result.metric == metric and len(result.folds) == 3
    assert all(np.isfinite(result.folds))
    if task == "regression":
        assert all(0 <= d["squared_correlation"] <= 1 for d in result.details)
    else:
        assert all(0.3 < v <= 1 for v in result.folds)


def test_path_every_point_certified_and_warm_equals_cold():
    Cs = geometric_grid(2.0 ** -4, 2.0 ** 4, 5)
    problem, mode = svmtrain.Problem(epsilon=1e-3), svmtrain.NSlack(max_epochs=5000)
    warm = svmtrain.c_path(HEART, problem, mode, Cs=Cs)
    cold = svmtrain.c_path(HEART, problem, mode, Cs=Cs, warm=False)
    assert [p.C for p in warm.points] == Cs
    for w, c in zip(warm.points, cold.points):
        assert w.certified and c.certified
        assert w.relative_gap <= 1e-3
        # both bracket the same optimum: [D, P] intervals overlap
        assert w.dual <= c.primal * (1 + 1e-12) and c.dual <= w.primal * (1 + 1e-12)


def test_hot_start_continues_from_the_previous_C():
    """The warm start is the previous optimum scaled by C_new / C_old: at the same C it starts at
    the optimum, so the run needs fewer epochs than from scratch."""
    problem = svmtrain.Problem(epsilon=1e-5, C=1.0)
    path = svmtrain.c_path(HEART, problem, Cs=[1.0, 1.0])
    cold = svmtrain.c_path(HEART, problem, Cs=[1.0])
    assert path.points[1].epochs < cold.points[0].epochs


def test_cutting_plane_path_is_certified():
    """The sequence task grows its cache by cutting planes: the cache itself is carried."""
    path = svmtrain.c_path(CONLL, svmtrain.Problem(task="sequence", epsilon=1e-2),
                           Cs=[0.05, 0.1, 0.2])
    assert all(p.certified for p in path.points)


def test_path_with_folds_picks_the_best_and_writes_its_model(tmp_path):
    out = tmp_path / "best.model"
    result = svmtrain.c_path(HEART, svmtrain.Problem(), Cs=[0.01, 0.1, 1.0], folds=3, jobs=2,
                             model_file=str(out))
    means = [p.cv.mean for p in result.points]
    assert result.best.cv.mean == max(means)
    assert result.best.C == result.points[means.index(max(means))].C
    model = read_model(str(out))
    assert model.C == result.best.C and model.relative_gap <= model.epsilon
    j = result.as_json()
    assert j["C"] == [0.01, 0.1, 1.0] and j["metric"] == "accuracy" and len(j["mean"]) == 3


def test_automatic_search_starts_where_predictions_start_to_change():
    block = _block(HEART)
    start = smallest_useful_C(block, "binary", None)
    rows = np.repeat(np.arange(block.n_rows), np.diff(block.indptr))
    top = np.bincount(rows, weights=block.data ** 2).max()
    assert start <= 1 / (block.n_rows * top) < 2 * start
    result = svmtrain.c_path(HEART, svmtrain.Problem(), folds=3, C_max=start * 2 ** 6, patience=2)
    assert result.points[0].C == start
    assert all(b.C == 2 * a.C for a, b in zip(result.points, result.points[1:]))
    best = result.points.index(result.best)
    assert len(result.points) <= best + 3


def test_library_refuses_bad_arguments():
    with pytest.raises(OptionError, match="folds"):
        svmtrain.cross_validate(HEART, folds=1)
    with pytest.raises(OptionError, match="jobs"):
        svmtrain.cross_validate(HEART, jobs=0)
    with pytest.raises(OptionError, match="automatic"):
        svmtrain.c_path(HEART)
    with pytest.raises(OptionError, match="--weights"):
        svmtrain.cross_validate(HEART, controls=svmtrain.Controls(example_weights=HEART))


def _cv(*args):
    return CliRunner().invoke(main, ["cv", *args])


def test_cli_cv_prints_folds_mean_and_std():
    r = _cv("-v", "3", "-c", "0.5", HEART)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert [l.split(":")[0] for l in lines[:3]] == ["fold 1", "fold 2", "fold 3"]
    assert lines[3].startswith("cross-validation accuracy: mean ")
    j = _cv("-v", "3", "-c", "0.5", "--json", HEART)
    result = json.loads(j.stdout)
    assert set(result) >= {"folds", "mean", "std", "metric"} and len(result["folds"]) == 3
    assert lines[0] == f"fold 1: accuracy {result['folds'][0]:.6g}"


def test_cli_c_path_json_and_model(tmp_path):
    out = tmp_path / "best.model"
    r = _cv("-v", "3", "--C-min", "0.01", "--C-max", "1", "--C-steps", "3", "--json",
            "--model", str(out), HEART)
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["C"] == pytest.approx([0.01, 0.1, 1.0]) and result["metric"] == "accuracy"
    assert len(result["mean"]) == len(result["std"]) == 3
    assert read_model(str(out)).C == result["best_C"]


@pytest.mark.parametrize("args,message", [
    (["-v", "1"], "-v"),
    (["--jobs", "0"], "--jobs"),
    (["--C-path", "-c", "2"], "--C-path chooses C"),
    (["--C-steps", "3"], "needs --C-min and --C-max"),
    (["--C-min", "2", "--C-max", "1"], "below --C-min"),
    (["--C-min", "-1"], "positive"),
    (["--model", "m"], "give --C-path"),
    (["--trace", "t"], "model per fold"),
    (["--workers", "2"], "local processes"),
    (["-t", "ranking", "-v", "500"], "folds need at least"),
])
def test_cli_bad_options_exit_2(args, message):
    path = OHSUMED if "ranking" in args else HEART
    r = _cv(*args, path)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert "Traceback" not in r.output


def test_cli_bad_data_names_file_and_line(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("+1 1:0.5\n-1 2:x\n")
    r = _cv("-v", "2", str(bad))
    assert r.exit_code == 2
    assert f"{bad}:2" in r.output
    r = _cv(str(tmp_path / "missing"))
    assert r.exit_code == 2 and "missing" in r.output


def test_cli_help_lists_the_cross_validation_options():
    r = CliRunner().invoke(main, ["cv", "--help"])
    assert r.exit_code == 0
    for flag in ("-v, --folds", "--jobs", "--C-path", "--C-min", "--C-max", "--C-steps", "--model",
                 "--json", "-c"):
        assert flag in r.output


def _console_examples(path):
    """(command, expected stdout) of every `$ ` line in the ```console blocks of a Markdown file."""
    examples, block, command = [], False, None
    for line in open(path).read().splitlines():
        if line.startswith("```"):
            block = line == "```console"
            command = None
            continue
        if not block:
            continue
        if line.startswith("$ "):
            command = [line[2:], []]
            examples.append(command)
        elif command is not None:
            command[1].append(line)
    return [(c, "\n".join(out)) for c, out in examples]


def test_user_guide_examples_print_what_the_guide_shows(tmp_path):
    """docs/cv.md's console examples, run from a copy of the repository root's layout."""
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(__file__), "..")
    os.symlink(os.path.abspath(os.path.join(root, "data")), tmp_path / "data")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    examples = _console_examples(os.path.join(root, "docs", "cv.md"))
    assert len(examples) >= 8
    for command, expected in examples:
        r = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0, (command, r.stderr)
        assert r.stdout.rstrip("\n") == expected, command
