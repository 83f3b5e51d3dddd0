"""User tasks (svmtrain.StructuredTask): loading, the adapter in every linear mode against the
built-in multiclass task, model files, and the refusals of predict and verify-bound."""

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain.cli import main
from svmtrain.model import format_model, parse_model, read_model
from svmtrain.tasks.user import (TaskError, UserTask, example_block, load_examples, load_task,
                                 parse_task_options)

from conftest import REPO

EXAMPLE = str(REPO / "examples" / "multiclass_task.py") + ":CrammerSinger"
MIXTURE = str(REPO / "examples" / "mixture.py") + ":Mixture"
TRAIN = REPO / "data" / "pendigits_scale.train.sample"
TEST = REPO / "data" / "pendigits_scale.test.sample"
OPTIONS = ["--task-option", "classes=0,1,2,3,4,5,6,7,8,9", "--task-option", "features=16"]
TASK_OPTIONS = {"classes": "0,1,2,3,4,5,6,7,8,9", "features": "16"}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- the oracle against brute force -------------------------------------------------------------


def _brute(task, labels, x, y, w, augmented):
    def value(label):
        idx, val = task.joint_feature(x, label)
        return (task.loss(y, label) if augmented else 0.0) + float(np.dot(w[idx], val))
    values = [value(label) for label in labels]
    return max(values), values


@pytest.mark.parametrize("spec,options,labels", [
    (EXAMPLE, TASK_OPTIONS, list(range(10))),
    (MIXTURE, dict(TASK_OPTIONS, templates="3"), [(c, m) for c in range(10) for m in range(3)]),
])
def test_oracle_answers_equal_brute_force(spec, options, labels):
    task = load_task(spec, options)
    examples = load_examples(task, str(TRAIN))[:200]
    rng = np.random.default_rng(0)
    for trial in range(3):
        w = rng.normal(size=task.size_joint_feature)
        xs, ys = [x for x, _ in examples], [(y[0], 0) if isinstance(y, tuple) else y
                                           for _, y in examples]
        worst = task.batch_loss_augmented_inference(xs, ys, w)
        guess = task.batch_inference(xs, w)
        for x, y, a, p in zip(xs, ys, worst, guess):
            best, values = _brute(task, labels, x, y, w, True)
            assert values[labels.index(tuple(a) if isinstance(a, tuple) else a)] == best
            best, values = _brute(task, labels, x, y, w, False)
            assert values[labels.index(tuple(p) if isinstance(p, tuple) else p)] == best


# -- loading ------------------------------------------------------------------------------------


def test_task_options_parse_and_refuse():
    assert parse_task_options(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    for bad in (["novalue"], ["=1"], ["a=1", "a=2"], ["1a=2"]):
        with pytest.raises(TaskError):
            parse_task_options(bad)


@pytest.mark.parametrize("spec,message", [
    ("nosuchfile.py:Task", "no such file"),
    ("no_such_module_xyz:Task", "no module named"),
    (str(REPO / "examples" / "multiclass_task.py") + ":Nope", "has no class Nope"),
    ("svmtrain.tasks.user:TaskError", "does not implement the task protocol"),
    ("justaname", "expected PATH.py:Class"),
])
def test_train_refuses_bad_task_module(tmp_path, spec, message):
    model = tmp_path / "m.txt"
    r = run("train", "--task-module", spec, *OPTIONS, TRAIN, model)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert not model.exists()


def test_train_refuses_bad_task_option_and_foreign_flags(tmp_path):
    model = tmp_path / "m.txt"
    r = run("train", "--task-module", EXAMPLE, "--task-option", "colour=red", TRAIN, model)
    assert r.exit_code == 2 and "bad --task-option" in r.output
    r = run("train", "--task-module", EXAMPLE, "--task-option", "oops", TRAIN, model)
    assert r.exit_code == 2 and "KEY=VALUE" in r.output
    r = run("train", "--task-module", EXAMPLE, *OPTIONS, "-B", "1", TRAIN, model)
    assert r.exit_code == 2 and "--bias" in r.output
    r = run("train", "--task-option", "a=1", TRAIN, model)
    assert r.exit_code == 2 and "--task-module" in r.output
    assert not model.exists()


def test_a_broken_oracle_is_an_input_error_not_a_traceback(tmp_path):
    code = tmp_path / "broken.py"
    code.write_text(
        "import numpy as np, svmtrain\n"
        "class Broken(svmtrain.StructuredTask):\n"
        "    name = 'broken'\n"
        "    size_joint_feature = 4\n"
        "    def read_examples(self, path):\n"
        "        yield 1.0, 0\n"
        "        yield 2.0, 1\n"
        "    def joint_feature(self, x, y):\n"
        "        return np.array([7]), np.array([x])\n"      # index 7 >= 4
        "    def loss(self, y, p): return float(y != p)\n"
        "    def loss_augmented_inference(self, x, y, w): return 1 - y\n"
        "    def inference(self, x, w): return 0\n")
    model = tmp_path / "m.txt"
    r = run("train", "--task-module", f"{code}:Broken", TRAIN, model)
    assert r.exit_code == 2, r.output
    assert "outside [0, size_joint_feature = 4)" in r.output
    assert not model.exists()


# -- the plug-in reaches the built-in optimum in every linear mode ------------------------------


def _gap_ok(a, b):
    """Relative primal difference within the two certified gaps."""
    return abs(a.primal - b.primal) / max(a.primal, b.primal) <= a.relative_gap + b.relative_gap


@pytest.mark.parametrize("mode,extra", [("n-slack", []), ("1-slack", []),
                                        ("online-dual", ["--passes", "3"])])
def test_multiclass_plugin_agrees_with_builtin(tmp_path, mode, extra):
    ours, builtin = tmp_path / "ours.txt", tmp_path / "builtin.txt"
    r = run("train", "--task-module", EXAMPLE, *OPTIONS, "-m", mode, *extra, "-e", "0.001", "-q",
            TRAIN, ours)
    assert r.exit_code == 0, r.output
    r = run("train", "-t", "multiclass", "-m", "n-slack", "-e", "0.0001", "-q", TRAIN, builtin)
    assert r.exit_code == 0, r.output
    a, b = read_model(ours), read_model(builtin)
    assert a.task == "user" and a.task_name == "crammer-singer" and a.mode == mode
    assert a.relative_gap <= 0.001 + 1e-12
    assert _gap_ok(a, b), (a.primal, a.relative_gap, b.primal, b.relative_gap)
    # the same weights: the class-major K x 16 matrix of the built-in model
    assert np.abs(a.w - b.w.ravel()).max() < 0.05 * np.abs(b.w).max()
    # verify-bound certifies the user model with the oracle's exact primal
    r = run("verify-bound", "--task-module", EXAMPLE, *OPTIONS, "--json", ours, TRAIN)
    assert r.exit_code == 0, r.output
    figures = json.loads(r.stdout)
    assert figures["certified"] and figures["primal"] == a.primal    # training's P, bit for bit


def test_oneslack_threads_give_the_same_model(tmp_path):
    one, two = tmp_path / "1.txt", tmp_path / "2.txt"
    for path, threads in ((one, "1"), (two, "2")):
        r = run("train", "--task-module", EXAMPLE, *OPTIONS, "-m", "1-slack", "--threads",
                threads, "-q", TRAIN, path)
        assert r.exit_code == 0, r.output
    assert read_model(one) == read_model(two)


# -- model files --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def user_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "cs.txt"
    r = run("train", "--task-module", EXAMPLE, *OPTIONS, "-q", TRAIN, path)
    assert r.exit_code == 0, r.output
    return path


def test_user_model_round_trips(user_model):
    m = read_model(user_model)
    assert (m.task, m.task_name, m.task_version, m.n_features) == ("user", "crammer-singer", "1", 160)
    assert parse_model(format_model(m)) == m
    text = user_model.read_text()
    assert "task_name crammer-singer\n" in text and "task_version 1\n" in text
    assert "multiclass_task" not in text           # the file names no code


def test_predict_with_the_module(user_model, tmp_path):
    out = tmp_path / "pred.txt"
    r = run("predict", "--task-module", EXAMPLE, *OPTIONS, TEST, user_model, out)
    assert r.exit_code == 0, r.output
    lines = out.read_text().split()
    truth = [line.split()[0] for line in TEST.read_text().splitlines()]
    assert len(lines) == len(truth) == 500
    accuracy = np.mean([a == b for a, b in zip(lines, truth)])
    assert accuracy > 0.85
    assert f"accuracy = {accuracy:.6g}" in r.stderr


def test_predict_and_verify_refuse_missing_or_other_module(user_model, tmp_path):
    out = tmp_path / "pred.txt"
    r = run("predict", TEST, user_model, out)
    assert r.exit_code == 2 and "--task-module" in r.output and not out.exists()
    r = run("verify-bound", user_model, TRAIN)
    assert r.exit_code == 2 and "--task-module" in r.output
    other = tmp_path / "other.py"
    other.write_text((REPO / "examples" / "multiclass_task.py").read_text()
                     .replace('name = "crammer-singer"', 'name = "another-task"'))
    for command in (["predict", "--task-module", f"{other}:CrammerSinger", *OPTIONS, TEST,
                     user_model, out],
                    ["verify-bound", "--task-module", f"{other}:CrammerSinger", *OPTIONS,
                     user_model, TRAIN]):
        r = run(*command)
        assert r.exit_code == 2 and "another-task" in r.output and "crammer-singer" in r.output
    assert not out.exists()
    # a built-in model with a task module
    builtin = tmp_path / "builtin.txt"
    assert run("train", "-t", "multiclass", "-q", TRAIN, builtin).exit_code == 0
    r = run("predict", "--task-module", EXAMPLE, *OPTIONS, TEST, builtin, out)
    assert r.exit_code == 2 and "built-in" in r.output and not out.exists()


def test_adapter_blocks_survive_slicing():
    """The solvers cut and join blocks: the adapter finds the examples by ordinal whatever the cut."""
    task = load_task(EXAMPLE, TASK_OPTIONS)
    examples = load_examples(task, str(TRAIN))
    adapter = UserTask(task, examples)
    block = example_block(0, len(examples), task.size_joint_feature)
    w = np.random.default_rng(1).normal(size=task.size_joint_feature)
    whole = adapter.violations(w, block, "", None)
    parts = np.concatenate([adapter.violations(w, block.rows(a, b), "", None)
                            for a, b in itertools.pairwise([0, 3, 300, 301, len(examples)])])
    assert np.array_equal(whole, parts)
