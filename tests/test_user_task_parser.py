"""The dependency parser example (examples/parser) driven as a user task through the commands."""

import json
import lzma

import pytest
from click.testing import CliRunner

from conftest import REPO, shared_data_root
from svmtrain.cli import main
from svmtrain.model import read_model

SPEC = "examples.parser.task:ArcFactoredParser"


def sentences(rel, count, out):
    """The first `count` sentences of a shared CoNLL-U file, written to `out`."""
    src = shared_data_root() / rel
    if not src.exists():
        pytest.skip(f"shared data not found: {src}")
    kept = []
    with lzma.open(src, "rt", encoding="utf-8") as f:
        for line in f:
            kept.append(line)
            if not line.strip():
                count -= 1
                if count == 0:
                    break
    out.write_text("".join(kept), encoding="utf-8")
    return out


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("mode,extra", [("online-dual", ["--chunk", "10", "--passes", "2"]),
                                        ("1-slack", ["-e", "0.05"])])
def test_parser_trains_certifies_and_predicts(tmp_path, monkeypatch, mode, extra):
    monkeypatch.chdir(REPO)             # the package spec imports from the current directory
    train = sentences("ud_english_ewt/en_ewt-ud-train.conllu.xz", 60, tmp_path / "train.conllu")
    test = sentences("ud_english_ewt/en_ewt-ud-test.conllu.xz", 30, tmp_path / "test.conllu")
    model, out = tmp_path / "parser.model", tmp_path / "heads.txt"
    options = ["--task-module", SPEC, "--task-option", "bits=16"]
    r = run("train", *options, "-m", mode, *extra, "-c", "0.1", "-q", train, model)
    assert r.exit_code == 0, r.output
    m = read_model(model)
    assert (m.task_name, m.n_features, m.examples) == ("arc-factored-parser", 1 << 16, 60)
    # verify-bound's pass through the task's oracle gives the primal training recorded, bit for bit
    r = run("verify-bound", *options, "--json", "--tol", "1", model, train)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["primal"] == m.primal
    r = run("predict", *options, test, model, out)
    assert r.exit_code == 0, r.output
    uas = float(r.stderr.split("UAS = ")[1].split()[0])
    assert 0.4 < uas <= 1.0            # 60 training sentences: well above chance, far from trained
    assert len(out.read_text().splitlines()) == 30
