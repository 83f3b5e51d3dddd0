"""predict's lean path (svmtrain.lean_predict) against the full one (click, svmtrain.api).

The console script offers every `predict` command line to the lean path first. Whatever it takes,
it must do byte for byte as the full path does (the output file, standard output and error, the
exit status); whatever it declines, it must decline before writing anything. Each case runs the
same command both ways in fresh processes.
"""

import gzip
import io
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import CLICK_ONLY, CONSOLE_SCRIPT

from svmtrain import lean_predict
from svmtrain.model import ModelError, parse_model
from svmtrain.tasks.base import format_label

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
HEART = os.path.join(DATA, "heart_scale")
PENDIGITS = os.path.join(DATA, "pendigits_scale.train.sample")
PENDIGITS_TEST = os.path.join(DATA, "pendigits_scale.test.sample")
CPUSMALL = os.path.join(DATA, "cpusmall_scale.train.sample")
CPUSMALL_TEST = os.path.join(DATA, "cpusmall_scale.test.sample")
CONLL = os.path.join(DATA, "conll2000.train.svm")
CONLL_TEST = os.path.join(DATA, "conll2000.test.svm")

_CONSOLE, _CLICK = CONSOLE_SCRIPT, CLICK_ONLY


def _run(code, args, cwd, stdin=None):
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, cwd=cwd,
                       input=stdin if stdin is not None else b"")
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def both(args, cwd, output=None, stdin=None):
    """Run `svmtrain predict ARGS` through the console script and through click alone (`stdin`:
    the bytes on standard input); assert the same status, standard output, standard error and
    output file; return whether the console script's run imported numpy (False: the lean path
    took it)."""
    results = []
    for code in (_CONSOLE, _CLICK):
        if output is not None and os.path.exists(os.path.join(cwd, output)):
            os.unlink(os.path.join(cwd, output))
        status, out, err = _run(code, ["predict", *args], cwd, stdin)
        written = None
        if output is not None and os.path.exists(os.path.join(cwd, output)):
            with open(os.path.join(cwd, output), "rb") as f:
                written = f.read()
        results.append((status, out, err, written))
    (s1, o1, e1, w1), (s2, o2, e2, w2) = results
    imported = e1.splitlines()[-1] == "True"
    e1 = "".join(line + "\n" for line in e1.splitlines()[:-1])
    assert (s1, o1, e1, w1) == (s2, o2, e2, w2)
    return imported, s1, o1, e1, w1


def train(tmp_path, data, name, *options):
    model = str(tmp_path / name)
    r = subprocess.run([sys.executable, "-m", "svmtrain", "train", "-q", *options, data, model],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return model


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    weights = d / "weights"
    weights.write_text("".join(f"{0.5 + (i % 3) / 2}\n" for i in range(270)))
    scale = d / "scale"
    scale.write_text("1:2.0\n4:0.5\n")
    models = {
        "binary": train(d, HEART, "binary"),
        "binary bias": train(d, HEART, "binary_bias", "-B", "1"),
        "binary 1-slack": train(d, HEART, "binary_1slack", "-m", "1-slack"),
        "binary online": train(d, HEART, "binary_online", "-m", "online-dual"),
        "multiclass": train(d, PENDIGITS, "multiclass", "-t", "multiclass"),
        "multiclass bias": train(d, PENDIGITS, "multiclass_bias", "-t", "multiclass", "-B", "0.5"),
        "regression": train(d, CPUSMALL, "regression", "-t", "regression"),
        "regression bias": train(d, CPUSMALL, "regression_bias", "-t", "regression", "-B", "1",
                                 "-p", "0.05"),
        # the training controls, each a key of its own in the model's header
        "binary weighted": train(d, HEART, "binary_weighted", "-w", "1", "2", "-w", "-1", "0.5",
                                 "--weights", str(weights)),
        "binary constrained": train(d, HEART, "binary_constrained", "-B", "1", "--bias-reg", "4",
                                    "--nonneg", "1-5,bias", "--reg-scale", str(scale)),
        "multiclass weighted": train(d, PENDIGITS, "multiclass_weighted", "-t", "multiclass",
                                     "--class-weight", "balanced"),
        "sequence": train(d, CONLL, "sequence", "-t", "sequence", "-c", "0.1"),
        "sequence bias": train(d, CONLL, "sequence_bias", "-t", "sequence", "-B", "1",
                               "-m", "n-slack"),
        "sequence slack zero-one": train(d, CONLL, "sequence_slack", "-t", "sequence", "--loss",
                                         "zero-one", "--rescaling", "slack", "-e", "0.01"),
    }
    models["binary prior"] = train(d, HEART, "binary_prior", "--prior", models["binary"])
    return models


def _test_file(kind):
    return (PENDIGITS_TEST if kind.startswith("multiclass") else
            CPUSMALL_TEST if kind.startswith("regression") else
            CONLL_TEST if kind.startswith("sequence") else HEART)


KINDS = ["binary", "binary bias", "binary 1-slack", "binary online", "multiclass",
         "multiclass bias", "regression", "regression bias", "binary weighted",
         "binary constrained", "binary prior", "multiclass weighted", "sequence", "sequence bias",
         "sequence slack zero-one"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scores", [False, True])
def test_the_lean_path_writes_what_the_full_path_writes(tmp_path, models, kind, scores):
    args = [_test_file(kind), models[kind], "out"] + (["--scores"] if scores else [])
    imported, status, out, err, written = both(args, tmp_path, output="out")
    assert not imported and status == 0 and written
    if kind.startswith("regression"):
        assert err.startswith("Mean squared error = ") and "Squared correlation" in err
    elif kind.startswith("sequence"):
        assert err.startswith("Token accuracy = ")
    else:
        assert err.startswith("Accuracy = ")


def test_the_models_hold_the_controls(models):
    """(what the lean reader is shown above: each control's key is in its model)"""
    for kind, keys in (("binary weighted", ["class_weights", "example_weights",
                                            "example_weights_crc32"]),
                       ("binary constrained", ["bias_reg", "nonneg", "reg_scale"]),
                       ("binary prior", ["prior"]), ("multiclass weighted", ["class_weights"])):
        with open(models[kind]) as f:
            header = [line.split(" ")[0] for line in f]
        assert all(k in header for k in keys), kind


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regression bias", "binary weighted",
                                  "sequence"])
def test_json_is_the_full_paths(tmp_path, models, kind):
    for extra in ([], ["-q"], ["--scores"]):
        imported, status, out, err, written = both(
            ["--json", _test_file(kind), models[kind], "out", *extra], tmp_path, output="out")
        assert not imported and status == 0 and err == "" and written
        metrics = json.loads(out)
        assert metrics["total"] == written.count(b"\n")
        if kind.startswith("binary"):
            assert set(metrics) == {"accuracy", "correct", "total", "precision", "recall", "f1"}
    # --json prints on standard output: the predictions must go to a file (the full path says so)
    # (click refuses it before numpy is imported)
    _, status, _, err, _ = both(["--json", HEART, models["binary"]], tmp_path)
    assert status == 2 and "--json" in err


@pytest.mark.parametrize("line", ["1e300 1:0.5 3:0.2", "5 1:1e200 2:1e200 3:1e200"])
def test_regression_metric_of_huge_values(tmp_path, models, line):
    """Sums that overflow give inf in both paths' metric (its square taken by a product, not
    ** 2, which raises OverflowError), and json.dumps' Infinity with --json."""
    with open(CPUSMALL_TEST) as f:
        test = tmp_path / "huge"
        test.write_text(line + "\n" + "".join(f.readlines()[:20]))
    imported, status, _, err, written = both([str(test), models["regression"], "out"], tmp_path,
                                             output="out")
    assert not imported and status == 0 and "Mean squared error = inf (regression)" in err
    imported, status, out, _, _ = both(["--json", str(test), models["regression"], "out"],
                                       tmp_path, output="out")
    assert not imported and status == 0 and json.loads(out)["mse"] == float("inf")


@pytest.mark.parametrize("compress", ["gzip", "bz2", "lzma"])
@pytest.mark.parametrize("kind", ["binary", "regression"])
def test_compressed_test_files(tmp_path, models, compress, kind):
    module = __import__(compress)
    packed = tmp_path / "test.packed"
    with open(_test_file(kind), "rb") as f, module.open(packed, "wb") as g:
        shutil.copyfileobj(f, g)
    imported, status, _, err, written = both([str(packed), models[kind], "out"], tmp_path,
                                             output="out")
    assert not imported and status == 0 and written
    _, _, _, _, plain = both([_test_file(kind), models[kind], "out"], tmp_path, output="out")
    assert written == plain
    # a broken stream: the full path's message, no file
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) // 2] + bytes(64) + data[len(data) // 2:])
    imported, status, _, err, written = both([str(packed), models[kind], "out"], tmp_path,
                                             output="out")
    assert imported and status == 2 and "test.packed" in err and written is None


def test_compressed_text_longer_than_the_lean_limit_goes_to_the_full_path(tmp_path, models,
                                                                          monkeypatch):
    packed = tmp_path / "heart.xz"
    with open(HEART, "rb") as f, __import__("lzma").open(packed, "wb") as g:
        shutil.copyfileobj(f, g)
    monkeypatch.setattr(lean_predict, "LEAN_BYTES", 5000)      # heart_scale: 27,669 bytes
    monkeypatch.setattr(lean_predict, "_READ", 1024)
    assert lean_predict.run([str(packed), models["binary"], str(tmp_path / "out")]) is None
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(lean_predict, "LEAN_BYTES", 1 << 20)
    assert lean_predict.run([str(packed), models["binary"], str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").read_bytes().count(b"\n") == 270


@pytest.fixture(scope="module")
def liblinear_models(tmp_path_factory):
    """Binary LIBLINEAR models as LIBLINEAR writes them (liblinear-official), with and without
    its bias, and as svmtrain's `--format liblinear` writes them."""
    ll = pytest.importorskip("liblinear.liblinearutil")
    d = tmp_path_factory.mktemp("liblinear")
    y, x = ll.svm_read_problem(HEART)
    paths = {}
    for name, options in (("ll", "-s 3 -c 1 -q"), ("ll bias", "-s 1 -c 0.5 -B 1 -q")):
        paths[name] = str(d / name.replace(" ", "_"))
        ll.save_model(paths[name], ll.train(ll.problem(y, x), ll.parameter(options)))
    paths["ours"] = train(d, HEART, "ours_ll", "--format", "liblinear", "-B", "2")
    return paths


@pytest.mark.parametrize("kind", ["ll", "ll bias", "ours"])
def test_binary_liblinear_models_take_the_lean_path(tmp_path, liblinear_models, kind):
    for extra in ([], ["--scores"]):
        imported, status, _, err, written = both([HEART, liblinear_models[kind], "out", *extra],
                                                 tmp_path, output="out")
        assert not imported and status == 0 and err.startswith("Accuracy = ") and written
    # --json: the positive class (precision, recall) is the first of LIBLINEAR's `label` line
    imported, status, out, _, _ = both(["--json", HEART, liblinear_models[kind], "out"],
                                       tmp_path, output="out")
    assert not imported and status == 0 and json.loads(out)["total"] == 270


@pytest.mark.parametrize("output", [[], ["-"]])
def test_standard_output(tmp_path, models, output):
    imported, status, out, err, _ = both([HEART, models["binary"], *output, "-q"], tmp_path)
    assert not imported and status == 0 and err == ""
    assert len(out.splitlines()) == 270


def test_labels_and_files_of_every_kind(tmp_path):
    """Labels that are not integers, 0-based indices, a sparse weight body, features the model
    never saw, qids, comments, blank lines, CRLF line ends, an empty test file."""
    rng = random.Random(3)
    lines = []
    for i in range(120):
        y = "0.5" if i % 2 else "-2"
        feats = sorted(rng.sample(range(0, 40), 5))
        x = " ".join(f"{j}:{rng.choice(['1', '0.25', '-3e-2', '7'])}" for j in feats)
        lines.append(f"{y} {x}")
    lines.append("-2 2000:1")                       # a far feature: the weights are sparse
    train_file = tmp_path / "train"
    train_file.write_text("\n".join(lines) + "\n")
    model = train(tmp_path, str(train_file), "m", "--zero-based")
    with open(model) as f:
        assert "weights sparse" in f.read()
    test = tmp_path / "test"
    test.write_bytes(b"# a comment\n\n0.5 qid:3 1:1 39:2 5000:1\r\n-2 0:1 3:0.5 # why\n7 2:1\n")
    imported, status, _, err, written = both([str(test), model, "out"], tmp_path, output="out")
    assert not imported and status == 0 and written.count(b"\n") == 3
    assert b"0.5\n" in written or b"-2\n" in written
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    imported, status, _, err, written = both([str(empty), model, "out"], tmp_path, output="out")
    assert not imported and status == 0 and err == "Accuracy = 0% (0/0)\n" and written == b""


def test_a_file_read_in_pieces_and_a_line_longer_than_a_piece(tmp_path, models, monkeypatch,
                                                                capsys):
    """The reading loop as a large file drives it: many reads, and a line that does not fit the
    buffer (which then grows); the output is the full path's."""
    with open(HEART) as f:
        lines = f.read().splitlines()
    lines[7] = lines[7] + " 14:0.5" + "".join(f" {j}:1" for j in range(100, 400))
    test = tmp_path / "test"
    test.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(lean_predict, "_READ", 64)
    assert lean_predict.run([str(test), models["binary"], str(tmp_path / "lean")]) == 0
    lean_line = capsys.readouterr().err
    _, status, _, err, written = both([str(test), models["binary"], "out"], tmp_path,
                                      output="out")
    assert status == 0 and lean_line == err
    assert (tmp_path / "lean").read_bytes() == written


def test_what_the_lean_path_declines_the_full_path_runs(tmp_path, models):
    ranking = train(tmp_path, os.path.join(DATA, "ohsumed.train.sample"), "rank", "-t", "ranking")
    budgeted = train(tmp_path, HEART, "budgeted", "-m", "budgeted", "--budget", "20")
    for args in (["--", HEART, models["binary"], "out"],                   # click's
                 [os.path.join(DATA, "ohsumed.test.sample"), ranking, "out"],
                 [HEART, budgeted, "out"]):                                 # a kernel model
        imported, status, out, err, written = both(args, tmp_path, output="out")
        assert imported and written, args


@pytest.mark.parametrize("compress", [None, "gzip", "lzma"])
@pytest.mark.parametrize("output", [["out"], []])
def test_standard_input(tmp_path, models, compress, output):
    with open(HEART, "rb") as f:
        text = f.read()
    feed = text if compress is None else __import__(compress).compress(text)
    imported, status, out, err, written = both(["-", models["binary"], *output], tmp_path,
                                               output="out" if output else None, stdin=feed)
    assert not imported and status == 0 and err.startswith("Accuracy = ")
    assert (written if output else out.encode()).count(b"\n") == 270
    # a bad line: the full path reads standard input from its first byte and names the line
    bad = text.replace(b"\n", b"\nx\n", 1)
    imported, status, _, err, written = both(["-", models["binary"], "out"], tmp_path,
                                             output="out", stdin=bad)
    assert imported and status == 2 and err.startswith("Error: -:2: ") and written is None


def _sentences_changed(change):
    """conll2000's test file with its lines changed by change(lines) (a list of bytes)."""
    with open(CONLL_TEST, "rb") as f:
        lines = f.read().splitlines()
    change(lines)
    return b"".join(line + b"\n" for line in lines)


def _qid_again(lines):
    lines.append(lines[0])              # the first sentence's qid, after all the others


def _no_qid(lines):
    lines[30] = b" ".join(t for t in lines[30].split() if not t.startswith(b"qid:"))


def _huge(lines):
    lines[40] = lines[40].split()[0] + b" " + lines[40].split()[1] + b" " + b" ".join(
        b"%d:1e308" % j for j in range(1, 300))


def _one_token_sentences(lines):
    lines[:] = [b"%s qid:%d %s" % (line.split()[0], k + 1, b" ".join(line.split()[2:]))
                for k, line in enumerate(lines)]


def _comments_blank_crlf(lines):
    lines.insert(0, b"# a comment")
    lines.insert(5, b"")
    lines[10] = lines[10] + b" # a token's comment\r"


@pytest.mark.parametrize("change,declined", [(_qid_again, True), (_no_qid, True), (_huge, True),
                                             (_one_token_sentences, False),
                                             (_comments_blank_crlf, False)])
def test_sentences_the_lean_path_tags_or_declines(tmp_path, models, change, declined):
    """Sentences as the full path reads them: a qid that comes back, a line without one and
    scores that overflow are the full path's to name (exit 2, no file); one-token sentences,
    comments, blank lines and CRLF ends are tagged here, the same bytes."""
    test = tmp_path / "test.svm"
    test.write_bytes(_sentences_changed(change))
    for extra in ([], ["--scores"]):
        imported, status, out, err, written = both([str(test), models["sequence"], "out", *extra],
                                                   tmp_path, output="out")
        assert imported == declined
        if declined:
            assert status == 2 and f"Error: {test}:" in err and written is None
        else:
            assert status == 0 and err.startswith("Token accuracy = ") and written


def test_sequence_standard_input_and_compressed(tmp_path, models):
    with open(CONLL_TEST, "rb") as f:
        text = f.read()
    gz = tmp_path / "test.svm.gz"
    gz.write_bytes(gzip.compress(text))
    for feed, args in ((text, ["-"]), (gzip.compress(text), ["-"]), (None, [str(gz)])):
        imported, status, out, err, _ = both([*args, models["sequence bias"]], tmp_path,
                                             stdin=feed)
        assert not imported and status == 0 and out.count("\n") == text.count(b"\n")


def test_a_sequence_file_past_the_lean_limit_goes_to_the_full_path(tmp_path, models,
                                                                   monkeypatch):
    """A sequence file's rows are parsed whole before they are tagged: past LEAN_SEQUENCE_BYTES
    the full path, which streams it, reads it."""
    monkeypatch.setattr(lean_predict, "LEAN_SEQUENCE_BYTES", os.path.getsize(CONLL_TEST) - 1)
    assert lean_predict.run([CONLL_TEST, models["sequence"], str(tmp_path / "out")]) is None
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(lean_predict, "LEAN_SEQUENCE_BYTES", os.path.getsize(CONLL_TEST))
    assert lean_predict.run(["-q", CONLL_TEST, models["sequence"], str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").read_bytes().count(b"\n") == 1171


def test_standard_input_declined_is_put_back_whole(tmp_path, models, monkeypatch):
    """Past the lean limit, the full path gets standard input as it came: the bytes the lean
    path read, then the rest."""
    with open(HEART, "rb") as f:
        text = f.read()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    monkeypatch.setattr(lean_predict, "LEAN_BYTES", 1000)
    assert lean_predict.run(["-", models["binary"], str(tmp_path / "out")]) is None
    assert not (tmp_path / "out").exists()
    assert sys.stdin.buffer.read(7) == text[:7] and sys.stdin.buffer.read() == text[7:]


def test_bad_input_gets_the_full_paths_message_and_no_file(tmp_path, models):
    bad = tmp_path / "bad"
    with open(HEART) as f:
        text = f.read().splitlines()
    text[100] = text[100].replace(":", "=", 1)
    bad.write_text("\n".join(text) + "\n")
    imported, status, _, err, written = both([str(bad), models["binary"], "out"], tmp_path,
                                             output="out")
    assert imported and status == 2 and "bad:101: " in err and written is None
    with open(models["binary"]) as f:
        broken = f.read().replace("C 1.0", "C -1.0")
    (tmp_path / "broken").write_text(broken)
    imported, status, _, err, written = both([HEART, "broken", "out"], tmp_path, output="out")
    assert imported and status == 2 and "broken:5: " in err and written is None
    imported, status, _, err, written = both([HEART, "missing", "out"], tmp_path, output="out")
    assert imported and status == 2 and written is None


def test_dask_from_the_environment_is_the_full_paths(tmp_path, models, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")
    assert lean_predict.run([HEART, models["binary"], str(tmp_path / "out")]) is None
    assert not (tmp_path / "out").exists()


def test_compressed_files_are_known_as_the_reader_knows_them():
    from svmtrain import data
    assert lean_predict._MAGIC == data._MAGIC


def test_label_text_is_format_label():
    for x in (1.0, -1.0, 0.0, -0.0, 0.5, 1e20, 2.0**53, 2.0**53 - 1, -2.0**60, 1e-300, 3.25,
              123456789.0, 5e-324):
        assert lean_predict.label_text(x) == format_label(x), x


# ---------------------------------------------------------------------------------------------
# The lean model reader: what it accepts, the full reader reads to the same model


def _same_model(lean, text):
    """The full reader's model of `text` is the lean reader's (the text must read)."""
    model = parse_model(text)
    assert model.labels == lean.labels and model.n_features == lean.n_cols
    assert model.bias == lean.bias and model.index_base == lean.index_base
    w = np.asarray(model.w)
    flat = w.T.ravel() if w.ndim == 2 else w.ravel()    # the feature-major layout, as the lean w
    assert np.array_equal(flat.view(np.int64), np.asarray(lean.w).view(np.int64))


_TOKENS = ["1", "1.0", "-1", "-1.0", "-0.0", "0", "0.0", "2.0", "01", "+1", "1e400", "1e5", "100000.0", "nan", "inf",
           "-inf", "1_0", "0x10", "x", "", "none", "0.5", "2", "3x124", "123", "124", "dense",
           "sparse", "end", "\u0661", "1e-05", "1.5e+300", "-", "9" * 20, "3:0.5", "0:1.0",
           "0.10000000000000001", "L2R_LR", "MCSVM_CS", "w", "nr_class", "-2", "13", "14",
           # a training control's pairs and words
           "1:-2.0", "1:0.0", "-1:2.0", "x:1.0", "1:2.0:3", "1:", ":1.0", "13:1.0", "14:1.0",
           "1:1e400", "-0.0:1.0", "all", "bias", "1-5", "A", "1,,2", "prior", "class_weights"]


def _mutations(text, rng):
    lines = text.split("\n")
    header = next((k for k, line in enumerate(lines)
                   if line.startswith("weights") or line == "w"), len(lines))
    # the header's lines mostly: the weights' are parsed by the full reader's own code
    i = min(rng.randrange(header + 1), len(lines) - 1) if rng.random() < 0.8 else \
        rng.randrange(len(lines))
    kind = rng.randrange(9)
    if kind == 0:                               # a token replaced
        tokens = lines[i].split(" ")
        tokens[rng.randrange(len(tokens))] = rng.choice(_TOKENS)
        lines[i] = " ".join(tokens)
    elif kind == 1:
        del lines[i]
    elif kind == 2:
        lines.insert(i, lines[i])
    elif kind == 3:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 4:
        lines[i] = lines[i] + rng.choice([" ", "\r", "\t", "  x"])
    elif kind == 5:
        lines[i] = rng.choice([" ", "\t", ""]) + lines[i]
    elif kind == 6:
        lines[i] = lines[i].replace(" ", rng.choice(["  ", "\t"]), 1)
    elif kind == 7:
        return text[: rng.randrange(len(text) + 1)]
    else:
        lines.insert(i, rng.choice(["class_weights 1:2.0", "prior 0:1.0", "p 0.1",
                                    "loss hamming", "averaged 2", "end", "weights dense 3",
                                    "rho 0.5", "nr_class 2", "bias 1", "w", "0.5 ",
                                    "class_weights -1:0.5 1:2.0", "class_weights 1:2.0 1:3.0",
                                    "bias_reg 2.0", "nonneg all", "nonneg 1-3,bias",
                                    "example_weights w file", "example_weights_crc32 5",
                                    "reg_scale 0:1.0 2:3.0", "prior 13:1.0", "prior 99:1.0",
                                    "labels 1 -1", "task_name x"]))
    return "\n".join(lines)


@pytest.mark.parametrize("kind", ["binary", "binary bias", "multiclass bias", "regression bias",
                                  "sequence bias",
                                  "binary weighted", "binary constrained", "binary prior"])
def test_the_lean_model_reader_accepts_only_what_reads_the_same(models, kind):
    with open(models[kind]) as f:
        text = f.read()
    lean = lean_predict._parse(text.encode())
    assert lean is not None          # svmtrain's own models take the lean path
    _same_model(lean, text)
    rng = random.Random(kind)
    accepted = 0
    for _ in range(1500):
        mutated = text
        for _ in range(rng.choice([1, 1, 2])):
            mutated = _mutations(mutated, rng)
        try:
            lean = lean_predict._parse(mutated.encode("utf-8"))
        except lean_predict._NotHere:
            continue
        except UnicodeError:
            continue
        accepted += 1
        try:
            _same_model(lean, mutated)
        except ModelError as e:
            pytest.fail(f"the lean reader took a model the full one refuses ({e}):\n{mutated}")
    assert accepted > 20          # (many keep a valid model: another C, a swapped weight, ...)


@pytest.mark.parametrize("kind", ["ll", "ll bias"])
def test_the_lean_liblinear_reader_accepts_only_what_reads_the_same(liblinear_models, kind):
    with open(liblinear_models[kind]) as f:
        text = f.read()
    lean = lean_predict._parse(text.encode())
    assert lean is not None
    _same_model(lean, text)
    rng = random.Random(kind)
    for _ in range(1500):
        mutated = _mutations(text, rng)
        try:
            lean = lean_predict._parse(mutated.encode("utf-8"))
        except (lean_predict._NotHere, UnicodeError):
            continue
        try:
            _same_model(lean, mutated)
        except ModelError as e:
            pytest.fail(f"the lean reader took a model the full one refuses ({e}):\n{mutated}")


def _model_bits(lean):
    return lean.task, lean.labels, lean.n_cols, lean.bias, np.asarray(lean.w).view(np.int64).tolist()


@pytest.mark.parametrize("kind", ["binary", "multiclass bias", "sequence", "sequence bias", "ll"])
def test_a_model_read_in_pieces_is_the_model_read_whole(tmp_path, models, liblinear_models,
                                                        monkeypatch, kind):
    """The model file is read _MODEL_PIECE bytes at a time (its header in the first piece): a
    weight line cut by a piece, the `end` line in the next piece, a truncated file and bytes
    after the end, each at every cut, read as the whole file's bytes read."""
    path = liblinear_models[kind] if kind == "ll" else models[kind]
    with open(path, "rb") as f:
        text = f.read()
    whole = lean_predict._parse(text)
    header = text.index(b"\nw\n" if kind == "ll" else b"\nweights ")
    header = text.index(b"\n", header + 1) + 1
    for piece in (header + 1, header + 7, 333, 4096):
        monkeypatch.setattr(lean_predict, "_MODEL_PIECE", piece)
        assert _model_bits(lean_predict.read_model(path)) == _model_bits(whole)
    monkeypatch.setattr(lean_predict, "_MODEL_PIECE", header - 1)
    assert lean_predict.read_model(path) is None          # (the header past the first piece)
    monkeypatch.setattr(lean_predict, "_MODEL_PIECE", header + 5)
    bad = tmp_path / "bad.model"
    for broken in (text[:-1], text[:-4], text[: header + 40], text + b"x", text + b"\n",
                   text + text[-4:], text.replace(b"\nend\n", b"\n") if kind != "ll" else text[:-1]):
        bad.write_bytes(broken)
        assert lean_predict.read_model(str(bad)) is None, broken[-30:]


def test_predict_imports_neither_numpy_nor_click(tmp_path, models):
    probe = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
sys.argv = ["svmtrain"] + sys.argv[1:]
from svmtrain.__main__ import run
run()
"""
    r = subprocess.run([sys.executable, "-c", probe, "predict", "-q", HEART, models["binary"],
                        str(tmp_path / "out")], capture_output=True, text=True)
    mods = set(json.loads(r.stderr.strip().splitlines()[-1]))
    floor = set(json.loads(subprocess.run(
        [sys.executable, "-c", "import sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True).stdout))
    beyond = mods - floor
    # nor collections (4 ms), which typed memoryviews in _reader would import to register with
    # collections.abc
    assert not any(m.split(".")[0] in ("numpy", "click", "re", "typing", "collections")
                   for m in beyond), beyond
    # svmtrain's package, its __main__, lean_predict, _reader and atomic (_stdout when writing to
    # stdout); Cython's runtime; gc, math, errno, __future__; the probe's atexit
    assert len(beyond) <= 13, sorted(beyond)
