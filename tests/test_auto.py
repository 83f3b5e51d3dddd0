"""--mode auto: the rule of svmtrain.auto, and what the user sees of it."""

import os

import pytest
from click.testing import CliRunner

import svmtrain
from svmtrain import auto
from svmtrain.cli import main
from svmtrain.model import read_model

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
HEART = os.path.join(DATA, "heart_scale")


@pytest.mark.parametrize("task,path,mode", [
    ("binary", HEART, "n-slack"), ("multiclass", "pendigits_scale.train.sample", "n-slack"),
    ("regression", "cpusmall_scale.train.sample", "n-slack"),
    ("ranking", "ohsumed.train.sample", "n-slack"), ("sequence", "conll2000.train.svm", "1-slack"),
])
def test_rule_by_task(task, path, mode):
    assert auto.choose_mode(task, os.path.join(DATA, path))[0] == mode


def test_large_files_and_memory(monkeypatch, tmp_path):
    monkeypatch.setattr(auto, "LARGE_BYTES", 1000)
    monkeypatch.setattr(auto, "RANKING_BYTES", 1000)
    assert auto.choose_mode("binary", HEART) == ("1-slack", "a large file")
    assert auto.choose_mode("ranking", HEART) == ("1-slack", "ranking")
    monkeypatch.setattr(auto, "SEQUENCE_BYTES", 1000)
    assert auto.choose_mode("sequence", HEART)[0] == "n-slack"      # a whole corpus
    assert auto.choose_mode("regression", HEART)[0] == "n-slack"
    monkeypatch.setattr(auto, "available_memory", lambda: 10_000)
    assert auto.choose_mode("ranking", HEART) == ("online-dual", "the data would not fit in memory")
    # compressed input is judged by its estimated uncompressed size; stdin and arrays by the task
    import gzip
    with open(HEART, "rb") as f, gzip.open(tmp_path / "h.gz", "wb") as g:
        g.write(f.read())
    assert auto.input_bytes(str(tmp_path / "h.gz")) == 5 * os.path.getsize(tmp_path / "h.gz")
    assert auto.choose_mode("binary", "-")[0] == "n-slack"


def test_cli_says_which_mode_ran_and_why(tmp_path, monkeypatch):
    monkeypatch.setattr(auto, "RANKING_BYTES", 1000)
    out = tmp_path / "m"
    r = CliRunner().invoke(main, ["train", "-t", "ranking", "-c", "0.1",
                                  os.path.join(DATA, "ohsumed.train.sample"), str(out)])
    assert r.exit_code == 0, r.output
    assert "ranking 1-slack" in r.output and "(--mode auto: 1-slack for ranking)" in r.output
    assert read_model(out).mode == "1-slack"
    r = CliRunner().invoke(main, ["train", "-t", "ranking", "-c", "0.1", "-m", "n-slack",
                                  os.path.join(DATA, "ohsumed.train.sample"), str(out)])
    assert r.exit_code == 0 and "--mode auto" not in r.output and read_model(out).mode == "n-slack"


def test_a_modes_own_option_chooses_it(tmp_path):
    r = CliRunner().invoke(main, ["train", "--passes", "2", HEART, str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    assert read_model(tmp_path / "m").mode == "online-dual"
    r = CliRunner().invoke(main, ["train", "--passes", "2", "--budget", "3", HEART,
                                  str(tmp_path / "m")])
    assert r.exit_code == 2 and "applies to --mode" in r.output


def test_library_default_is_auto(monkeypatch):
    monkeypatch.setattr(auto, "RANKING_BYTES", 1000)
    model = svmtrain.train(os.path.join(DATA, "ohsumed.train.sample"),
                           svmtrain.Problem(task="ranking", C=0.1))
    assert model.mode == "1-slack" and model.stats.chosen_because == "ranking"
    assert svmtrain.train(HEART, mode="n-slack").stats.chosen_because is None


def test_dask_runs_one_slack():
    assert auto.choose_mode("binary", HEART, dask=True) == ("1-slack", "a Dask cluster")
    from svmtrain.pipeline import resolve_mode
    mode, _, reason = resolve_mode(None, svmtrain.Controls(), "binary", HEART,
                                   svmtrain.Dask(workers=2))
    assert mode.name == "1-slack" and reason == "a Dask cluster"
