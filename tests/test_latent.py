"""Latent structural SVMs by CCCP (svmtrain.solvers.latent) on the mixture-of-templates example."""

import pytest
from click.testing import CliRunner

from svmtrain.cli import main
from svmtrain.model import read_model
from svmtrain.tasks.user import load_task, train_user_task

from conftest import REPO

MIXTURE = str(REPO / "examples" / "mixture.py") + ":Mixture"
TRAIN = REPO / "data" / "pendigits_scale.train.sample"
TEST = REPO / "data" / "pendigits_scale.test.sample"
OPTIONS = {"classes": "0,1,2,3,4,5,6,7,8,9", "features": "16", "templates": "3"}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def trained():
    task = load_task(MIXTURE, OPTIONS)
    return train_user_task(task, str(TRAIN), C=1.0, epsilon=1e-3, latent_rounds=4)


def test_objective_never_increases_across_rounds(trained):
    f = [r.objective for r in trained.rounds]
    assert len(f) >= 2
    assert all(b <= a for a, b in zip(f, f[1:])), f
    # the first round starts from w = 0 (every example's loss is 1: f = C n at most)
    assert f[0] <= 1.0 * 1000
    # each round's convex problem is certified to epsilon
    assert all(r.relative_gap <= 1e-3 + 1e-12 for r in trained.rounds)
    assert trained.stopped


def test_hot_start_keeps_later_rounds_short(trained):
    """Rounds after the first start from the previous round's dual state: fewer engine epochs."""
    epochs = [r.epochs for r in trained.rounds]
    assert min(epochs[1:]) < epochs[0], epochs


def test_latent_cli_trace_records_rounds_and_model_predicts(tmp_path):
    model, trace, out = tmp_path / "m.txt", tmp_path / "trace.txt", tmp_path / "p.txt"
    opts = [a for k, v in OPTIONS.items() for a in ("--task-option", f"{k}={v}")]
    r = run("train", "--task-module", MIXTURE, *opts, "--latent-rounds", "2",
            "--trace", trace, TRAIN, model)
    assert r.exit_code == 0, r.output
    rounds = [line for line in trace.read_text().splitlines() if line.startswith("# latent round")]
    assert 1 <= len(rounds) <= 3
    assert "latent round 1: objective" in r.stderr
    m = read_model(model)
    assert m.task_name == "mixture-of-templates" and m.n_features == 10 * 3 * 17
    r = run("predict", "--task-module", MIXTURE, *opts, TEST, model, out)
    assert r.exit_code == 0, r.output
    assert "accuracy = " in r.stderr
    # a task without latent(): refused before any data is read
    cs = str(REPO / "examples" / "multiclass_task.py") + ":CrammerSinger"
    r = run("train", "--task-module", cs, "--task-option", "classes=0,1,2,3,4,5,6,7,8,9",
            "--task-option", "features=16", "--latent-rounds", "2", TRAIN, tmp_path / "x.txt")
    assert r.exit_code == 2 and "latent" in r.output
    r = run("train", "--task-module", MIXTURE, *opts, "--latent-rounds", "2", "-m", "1-slack",
            TRAIN, tmp_path / "y.txt")
    assert r.exit_code == 2 and "n-slack" in r.output
