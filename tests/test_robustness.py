"""Bad input in every command: exit status 2, the file and line named, nothing written, no traceback.

The cases kept from the adversarial harness (tests/fuzz_cli.py, run by hand), through click's
CliRunner: an uncaught exception would show as exit status 1 with `result.exception` set.
"""

import os

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain.cli import main
from svmtrain.cli.options import InputError, user_errors
from svmtools.cli import main as svmtools_main

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def _head(name, n):
    with open(os.path.join(DATA, name), "rb") as f:
        return b"".join(f.readlines()[:n])


def _lines(content):
    return content.splitlines()


def _with_line(content, k, line):
    """content with its line k (1-based) replaced."""
    lines = _lines(content)
    lines[k - 1] = line
    return b"\n".join(lines) + b"\n"


BINARY = _head("a9a.train.sample", 40)

# line 3 of the binary sample, broken in one way each
BAD_LINES = [
    (b"-1 3:nan 11:1", "value is nan"),
    (b"-1 3:inf 11:1", "value is infinite"),
    (b"-1 3:1e999 11:1", "value is infinite"),
    (b"-1 3:0x1 11:1", "expected a number as value"),
    (b"-1 3: 11:1", "value missing"),
    (b"-1 0:1 11:1", "index 0"),
    (b"-1 -3:1 11:1", "negative index"),
    (b"-1 18446744073709551616:1", "index too large"),
    (b"-1 11:1 3:1", "strictly increasing"),
    (b"-1 3:1 3:1", "duplicate index"),
    (b"3:1 11:1", "expected a number as target"),
    (b"nan 3:1", "target is nan"),
    (b"-1 qid:-2 3:1", "bad qid"),
    (b"-1 cost:-1 3:1", "bad cost"),
    (b"-1 cost:nan 3:1", "bad cost"),
    (b"-1 3:1\x00 11:1", "nul byte"),
    (b"-1 3:1 \xff\xfe:1", "index is not an integer"),
]

# every command that reads a data file, with a model where it needs one
COMMANDS = {
    "train n-slack": ["train", "-q", "{data}", "{out}/m"],
    "train 1-slack": ["train", "-q", "-m", "1-slack", "{data}", "{out}/m"],
    "train online-dual": ["train", "-q", "-m", "online-dual", "--chunk", "7", "{data}", "{out}/m"],
    "train budgeted": ["train", "-q", "-m", "budgeted", "--budget", "5", "--epochs", "1", "{data}", "{out}/m"],
    "predict": ["predict", "{data}", "{model}", "{out}/p"],
    "verify-bound": ["verify-bound", "-q", "{model}", "{data}"],
    "check": ["check", "{data}"],
}


@pytest.fixture(scope="module")
def binary_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("model")
    (d / "good.svm").write_bytes(BINARY)
    r = CliRunner().invoke(main, ["train", "-q", str(d / "good.svm"), str(d / "good.model")])
    assert r.exit_code == 0, r.output
    return d / "good.model"


def _invoke(command, data, model, out):
    args = [a.format(data=data, model=model, out=out) for a in COMMANDS[command]]
    prog = svmtools_main if command == "check" else main
    return CliRunner().invoke(prog, args)


def _assert_refused(r, out, where, reason):
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert where in r.output and reason in r.output, r.output
    assert os.listdir(out) == [], "a refused run must write nothing (nor leave a temporary)"


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("line,reason", BAD_LINES, ids=[r for _, r in BAD_LINES])
def test_malformed_line_names_file_and_line(tmp_path, binary_model, command, line, reason):
    data = tmp_path / "d.svm"
    data.write_bytes(_with_line(BINARY, 3, line))
    out = tmp_path / "out"
    out.mkdir()
    r = _invoke(command, data, binary_model, out)
    _assert_refused(r, out, f"{data}:3:", reason)


@pytest.mark.parametrize("mode", ["n-slack", "1-slack", "online-dual"])
@pytest.mark.parametrize("index", [2**31, 2**62])
def test_feature_index_no_model_can_have(tmp_path, mode, index):
    """A valid 64-bit index far beyond the engine's 32-bit columns: refused at its line, before
    a dense w of 2**62 doubles is asked for (a traceback from numpy or the engine before)."""
    data = tmp_path / "d.svm"
    data.write_bytes(_with_line(BINARY, 4, b"-1 3:1 %d:1" % index))
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-m", mode, str(data), str(out / "m")])
    _assert_refused(r, out, f"{data}:4:", f"feature index {index} is above the largest")


@pytest.mark.parametrize("mode", ["n-slack", "1-slack"])
def test_feature_index_no_multiclass_model_can_have(tmp_path, mode):
    """pendigits' 10 classes x 3e8 features pass the 2**31 - 1 weights the kernels index: refused
    at the line (the Crammer-Singer kernel's ValueError traceback before)."""
    data = tmp_path / "d.svm"
    lines = _lines(_head("pendigits_scale.train.sample", 40))
    data.write_bytes(_with_line(b"\n".join(lines), 4, lines[3] + b" 300000000:1"))
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-t", "multiclass", "-m", mode, str(data),
                                  str(out / "m")])
    _assert_refused(r, out, f"{data}:4:", "feature index 300000000 is above the largest a model "
                                          "of 10 classes can have, 214748363")


def test_feature_index_beyond_the_model_is_fine_to_predict(tmp_path, binary_model):
    """predict and verify-bound ignore features the model does not have (as LIBLINEAR)."""
    data = tmp_path / "d.svm"
    data.write_bytes(_with_line(BINARY, 4, b"-1 3:1 %d:1" % 2**62))
    r = CliRunner().invoke(main, ["predict", str(data), str(binary_model), str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    assert len((tmp_path / "p").read_text().splitlines()) == 40


def test_out_of_memory_is_an_input_error():
    """What a huge (but representable) index makes of a dense w: one line, exit status 2."""
    with pytest.raises(InputError, match="out of memory"):
        with user_errors():
            np.zeros(2**55)   # 256 PiB: malloc refuses


@pytest.mark.parametrize("mode", ["n-slack", "1-slack", "online-dual"])
@pytest.mark.parametrize("bias", [[], ["-B", "1"]], ids=["no bias", "bias"])
def test_sequence_without_features(tmp_path, mode, bias):
    """Tokens with tags but no features: the transitions alone are a model (n-slack and 1-slack
    raised a reshape error: the unit row of the transitions needs a column)."""
    rows = [line.split()[:2] for line in _lines(_head("conll2000.train.svm", 60))]
    data = tmp_path / "seq.svm"
    data.write_bytes(b"".join(b" ".join(r) + b"\n" for r in rows))
    model = tmp_path / "m"
    extra = ["--passes", "20"] if mode == "online-dual" else []
    r = CliRunner().invoke(main, ["train", "-q", "-t", "sequence", "-m", mode, *bias, *extra,
                                  str(data), str(model)])
    assert r.exit_code == 0, (r.output, r.exception)
    r = CliRunner().invoke(main, ["verify-bound", "-q", str(model), str(data)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["predict", str(data), str(model), str(tmp_path / "p")])
    assert r.exit_code == 0 and len((tmp_path / "p").read_text().splitlines()) == 60


@pytest.mark.parametrize("mode", ["n-slack", "1-slack"])
def test_corrupt_warm_start_state(tmp_path, mode):
    """A state file whose zip member is damaged (a flipped byte): refused with its name (a
    zlib.error traceback before)."""
    data = tmp_path / "d.svm"
    data.write_bytes(_head("ohsumed.train.sample", 80))
    state = tmp_path / "s.npz"
    r = CliRunner().invoke(main, ["train", "-q", "-t", "ranking", "-m", mode, "--save-state", str(state),
                                  str(data), str(tmp_path / "m0")])
    assert r.exit_code == 0, r.output
    raw = bytearray(state.read_bytes())
    flipped = 0
    for at in range(len(raw) // 3, len(raw) // 3 + 64):   # some flip in the deflated data breaks it
        raw[at] ^= 0xFF
        state.write_bytes(bytes(raw))
        out = tmp_path / f"out{at}"
        out.mkdir()
        r = CliRunner().invoke(main, ["train", "-q", "-t", "ranking", "--warm-start", str(state),
                                      str(data), str(out / "m")])
        raw[at] ^= 0xFF
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        if r.exit_code == 2:
            assert str(state) in r.output and os.listdir(out) == []
            flipped += 1
        else:
            assert r.exit_code == 0, r.output
    assert flipped > 0


DEGENERATE = {
    "empty": b"",
    "only comments": b"# nothing\n# here\n",
    "one example": b"1 1:1\n",
    "one class": b"1 1:1\n1 2:1\n",
    "all-zero rows": b"1\n-1\n1\n",
    "crlf": b"1 1:1\r\n-1 2:1\r\n",
    "huge values": b"1 1:1e300\n-1 2:1e300 3:-1e300\n",
}


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("train")])
@pytest.mark.parametrize("name", list(DEGENERATE))
def test_degenerate_data_never_crashes(tmp_path, command, name):
    data = tmp_path / "d.svm"
    data.write_bytes(DEGENERATE[name])
    out = tmp_path / "out"
    out.mkdir()
    r = _invoke(command, data, None, out)
    assert r.exception is None or isinstance(r.exception, SystemExit), (r.exception, r.output)
    assert r.exit_code in (0, 2), r.output
    left = os.listdir(out)
    assert left == (["m"] if r.exit_code == 0 else []), left


@pytest.mark.parametrize("mode", ["n-slack", "1-slack", "online-dual"])
def test_row_norm_overflow_is_refused(tmp_path, mode):
    """Values whose squares overflow: the linear solvers' steps divide by inf and stood still at
    w = 0 for --max-epochs, reporting gap 1; now the row is named."""
    data = tmp_path / "d.svm"
    data.write_bytes(_with_line(BINARY, 5, b"1 2:1e200 7:1"))
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-m", mode, str(data), str(out / "m")])
    _assert_refused(r, out, f"{data}:5:", "squared norm overflows")
    # each square finite, their sum not: refused; large values whose squares sum finitely: trained
    data.write_bytes(_with_line(BINARY, 3, b"1 2:1e154 7:1.5e154"))
    r = CliRunner().invoke(main, ["train", "-q", "-m", mode, str(data), str(out / "m")])
    _assert_refused(r, out, f"{data}:3:", "squared norm overflows")
    data.write_bytes(_with_line(BINARY, 3, b"1 2:1e150 7:-1e150"))
    r = CliRunner().invoke(main, ["train", "-q", "-m", mode, "--max-epochs", "3", str(data), str(out / "m")])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("content,reason", [
    (b"99999999999999999999999:2\n", "above the largest a model can have"),   # np.ones(10**23) before
    (b"\xc2\xb2:2\n", "bad feature index"),        # a Unicode digit: int() raised before
], ids=["huge index", "unicode digit"])
@pytest.mark.parametrize("mode", ["n-slack", "online-dual"])
def test_reg_scale_bad_index(tmp_path, content, reason, mode):
    data = tmp_path / "d.svm"
    data.write_bytes(BINARY)
    scales = tmp_path / "r.txt"
    scales.write_bytes(b"3:0.5\n" + content)
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-m", mode, "--reg-scale", str(scales), str(data),
                                  str(out / "m")])
    _assert_refused(r, out, f"{scales}:2:", reason)


def test_nonneg_unicode_digit(tmp_path):
    data = tmp_path / "d.svm"
    data.write_bytes(BINARY)
    r = CliRunner().invoke(main, ["train", "-q", "--nonneg", "1-\u00b2", str(data), str(tmp_path / "m")])
    assert r.exit_code == 2 and "bad range" in r.output and not (tmp_path / "m").exists()


@pytest.mark.parametrize("key,value", [("C", np.array("x")), ("examples", np.array("x")),
                                       ("fingerprint", np.array(1.5)), ("task", np.array(3))])
def test_edited_nslack_state(tmp_path, key, value):
    """A hand-edited --save-state file whose single values have the wrong type: refused by name
    (float('x') / int('x') raised from the loader before)."""
    r, out, state = _warm_start_from_edited_state(tmp_path, [], key, value)
    _assert_refused(r, out, str(state), f"{key} must be a single")


def _warm_start_from_edited_state(tmp_path, mode, key, value):
    """Train on BINARY with --save-state, set the state's `key` to `value` (None: every entry
    1e308), warm-start a second run from it into an empty folder: (result, folder, state)."""
    data = tmp_path / "d.svm"
    data.write_bytes(BINARY)
    state = tmp_path / "s.npz"
    r = CliRunner().invoke(main, ["train", "-q", *mode, "--save-state", str(state), str(data),
                                  str(tmp_path / "m0")])
    assert r.exit_code == 0, r.output
    arrays = dict(np.load(state))
    arrays[key] = np.full_like(arrays[key], 1e308) if value is None else value
    np.savez(state, **arrays)
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", *mode, "--warm-start", str(state), str(data),
                                  str(out / "m")])
    return r, out, state


def test_state_with_overflowing_term_scale(tmp_path):
    """A sequence state whose cached term scales overflow w . x: refused (the Viterbi oracle's
    'E has a non-finite value' traceback before)."""
    data = tmp_path / "seq.svm"
    data.write_bytes(_head("conll2000.train.svm", 120))
    state = tmp_path / "s.npz"
    r = CliRunner().invoke(main, ["train", "-q", "-t", "sequence", "-m", "n-slack", "--save-state",
                                  str(state), str(data), str(tmp_path / "m0")])
    assert r.exit_code == 0, r.output
    arrays = dict(np.load(state))
    arrays["cache_term_scale"] = np.full_like(arrays["cache_term_scale"], 1e308)
    np.savez(state, **arrays)
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-t", "sequence", "--warm-start", str(state), str(data),
                                  str(out / "m")])
    _assert_refused(r, out, str(state), "cached constraints must be finite")


@pytest.mark.parametrize("mode", ["n-slack", "1-slack"])
def test_save_state_in_missing_directory_writes_nothing(tmp_path, mode):
    """1-slack wrote the model, then failed on the state: a model without its state was left."""
    data = tmp_path / "d.svm"
    data.write_bytes(BINARY)
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-m", mode, "--save-state", str(tmp_path / "no" / "s.npz"),
                                  str(data), str(out / "m")])
    _assert_refused(r, out, "--save-state", "no such directory")


@pytest.mark.parametrize("option", ["--window", "--column-window"])
def test_conll_window_is_bounded(tmp_path, option):
    """conll2svm --window 99999999999 built a list of 2e11 offsets and was killed (out of memory)."""
    conll = tmp_path / "c.txt"
    conll.write_bytes(b"a NN B-NP\nb NN I-NP\n\n")
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(svmtools_main, ["conll2svm", option, "99999999999", "--new-dictionary",
                                           str(out / "d"), str(conll), str(out / "s")])
    assert r.exit_code == 2 and "0<=x<=100" in r.output and os.listdir(out) == []
    dictionary = tmp_path / "dict"
    dictionary.write_text(open(os.path.join(DATA, "conll2000.dict")).read()
                          .replace("\nwindow 0\n", "\nwindow 101\n"))
    r = CliRunner().invoke(svmtools_main, ["conll2svm", "--dictionary", str(dictionary), str(conll),
                                           str(out / "s")])
    _assert_refused(r, out, f"{dictionary}:8:", "window: at most 100")


def test_online_shuffle_window_split_sentence(tmp_path):
    """A sentence whose lines are not consecutive (qid 1, 999, 1): the in-memory modes name the
    line; online-dual's shuffle window joined the two runs of qid 1 and failed an assertion."""
    lines = _lines(_head("conll2000.train.svm", 120))
    lines[2] = lines[2].replace(b"qid:1", b"qid:999")
    data = tmp_path / "seq.svm"
    data.write_bytes(b"\n".join(lines) + b"\n")
    for mode in ("n-slack", "online-dual"):
        out = tmp_path / mode
        out.mkdir()
        r = CliRunner().invoke(main, ["train", "-q", "-t", "sequence", "-m", mode, "--chunk" if mode ==
                                      "online-dual" else "--seed", "17" if mode == "online-dual" else "1",
                                      str(data), str(out / "m")])
        _assert_refused(r, out, f"{data}:4:", "qid 1 appears again")


def _trained(tmp_path_factory, task, data, lines):
    """A model of `task` trained on the first `lines` lines of data/`data`."""
    d = tmp_path_factory.mktemp(task)
    (d / "train.svm").write_bytes(_head(data, lines))
    r = CliRunner().invoke(main, ["train", "-q", "-t", task, str(d / "train.svm"),
                                  str(d / "m.model")])
    assert r.exit_code == 0, r.output
    return d / "m.model"


@pytest.fixture(scope="module")
def sequence_model(tmp_path_factory):
    return _trained(tmp_path_factory, "sequence", "conll2000.train.svm", 300)


@pytest.mark.parametrize("where", ["next", "last line", "past a reader block"])
@pytest.mark.parametrize("command", ["predict", "verify-bound", "train online-dual"])
def test_sentence_qid_again_refused_wherever_it_is(tmp_path, sequence_model, where, command):
    """A sentence's qid coming back after other sentences is refused at its line by every command,
    as training in memory refuses it, wherever the reader cut the file: predict and verify-bound
    had checked a block at a time, and the last sentence of a block came in a block of its own,
    so a repeat at the end of the file or past a block was taken for a new sentence."""
    from svmtrain import data as data_layer
    lines = _lines(_head("conll2000.train.svm", 300))
    if where == "past a reader block":     # the sentences again under new qids, past 1 MB
        if command == "train online-dual":
            pytest.skip("(its windows of 100 rows cut the file at the last line already)")
        lines += [line.replace(b"qid:", b"qid:%d" % k, 1) for k in range(1, 200) for line in lines]
        assert sum(map(len, lines)) > data_layer.STREAM_BLOCK
    first = lines[0].split()[1]
    again = 60 if where == "next" else len(lines)
    assert lines[again - 1].split()[1] != first
    lines.insert(again, lines[0])
    bad = tmp_path / "again.svm"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    out.mkdir()
    args = {"predict": ["predict", str(bad), str(sequence_model), str(out / "p")],
            "verify-bound": ["verify-bound", "-q", str(sequence_model), str(bad)],
            "train online-dual": ["train", "-q", "-t", "sequence", "-m", "online-dual",
                                  "--window-rows", "100", str(bad), str(out / "m")]}[command]
    r = CliRunner().invoke(main, args)
    _assert_refused(r, out, f"{bad}:{again + 1}:", f"qid {first[4:].decode()} appears again")


def test_sequence_predict_error_names_the_file(tmp_path, sequence_model):
    """A line without its sentence's qid, at predict: the message names the test file (it had
    named "<arrays>")."""
    lines = _lines(_head("conll2000.train.svm", 40))
    lines[4] = b" ".join(t for t in lines[4].split() if not t.startswith(b"qid:"))
    bad = tmp_path / "noqid.svm"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["predict", str(bad), str(sequence_model), str(out / "p")])
    _assert_refused(r, out, f"{bad}:5:", "needs qid:N on every line")


@pytest.fixture(scope="module")
def ranking_model(tmp_path_factory):
    return _trained(tmp_path_factory, "ranking", "ohsumed.train.sample", 200)


@pytest.mark.parametrize("command", ["predict", "verify-bound"])
@pytest.mark.parametrize("task", ["sequence", "ranking"])
def test_scores_that_overflow_are_refused_at_their_line(tmp_path, sequence_model, ranking_model,
                                                        command, task):
    """Feature values of 1e308 overflow a row's scores: Viterbi's input check (a token's
    emission scores) and the ranking pairs' (a document's score) raised a ValueError with a
    traceback; the line is named instead."""
    data, model = {"sequence": ("conll2000.train.svm", sequence_model),
                   "ranking": ("ohsumed.train.sample", ranking_model)}[task]
    lines = _lines(_head(data, 40))
    lines[6] = b" ".join(lines[6].split()[:2] + [b"%d:1e308" % j for j in range(1, 46)])
    bad = tmp_path / "huge.svm"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    out.mkdir()
    args = ({"predict": ["predict", str(bad), str(model), str(out / "p")],
             "verify-bound": ["verify-bound", "-q", str(model), str(bad)]}[command])
    r = CliRunner().invoke(main, args)
    _assert_refused(r, out, f"{bad}:7:", "scores overflow")


def test_seen_qids_against_a_set():
    """SeenQids' merged levels answer as a set of every run's qid would, block after block."""
    from svmtrain import data as data_layer
    rng = np.random.default_rng(5)
    seen, reference = data_layer.SeenQids("f"), set()
    fresh = rng.permutation(100_000)
    at = 0
    for _ in range(300):
        n = int(rng.integers(1, 40))
        qids = fresh[at:at + n]
        at += n
        lengths = rng.integers(1, 4, n)
        qid = np.repeat(qids, lengths)
        block = data_layer.block_from_arrays(np.ones((len(qid), 1)), np.ones(len(qid)), qid)
        seen.add(block)
        reference.update(qids.tolist())
        probe = rng.integers(0, 100_000, 50)
        assert seen._seen(probe).tolist() == [int(q) in reference for q in probe]
    assert sum(len(level) for level in seen._levels) == len(reference)
    assert len(seen._levels) <= 12
    old = int(fresh[7])
    block = data_layer.block_from_arrays(np.ones((3, 1)), np.ones(3), np.array([at + 10**6, old, old]))
    with pytest.raises(data_layer.DataError, match=f"qid {old} appears again"):
        seen.add(block)


@pytest.mark.parametrize("key,value,reason", [
    ("C", np.array([[1.0]]), "C is not a single number"),
    ("b", np.array("x"), "b is not a vector of numbers"),
    ("task", np.array(3), "task is not a single text"),
    ("data", None, "overflow"),        # every plane value at 1e308
])
def test_edited_oneslack_state(tmp_path, key, value, reason):
    r, out, state = _warm_start_from_edited_state(tmp_path, ["-m", "1-slack"], key, value)
    _assert_refused(r, out, str(state), reason)


def test_budgeted_huge_index_names_the_line(tmp_path):
    data = tmp_path / "d.svm"
    data.write_bytes(_with_line(BINARY, 4, b"-1 3:1 %d:1" % 2**62))
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-m", "budgeted", str(data), str(out / "m")])
    _assert_refused(r, out, f"{data}:4:", "above the largest")


def test_budgeted_overflowing_row_and_endless_epochs_are_refused(tmp_path):
    data = tmp_path / "d.svm"
    data.write_bytes(_with_line(BINARY, 3, b"+1 1:1e200"))
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["train", "-q", "-m", "budgeted", str(data), str(out / "m")])
    _assert_refused(r, out, f"{data}:3:", "squared norm overflows")
    data.write_bytes(BINARY)
    r = CliRunner().invoke(main, ["train", "-q", "-m", "budgeted", "--epochs", "9" * 20, str(data),
                                  str(out / "m")])
    assert r.exit_code == 2 and "--epochs" in r.output and os.listdir(out) == [], r.output
