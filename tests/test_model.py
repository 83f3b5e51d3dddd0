"""Model files: exact round trips, every reader error with its line, truncation, LIBLINEAR parity."""
import lzma
import os
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from svmtrain.model import (
    Model,
    ModelError,
    format_liblinear,
    format_model,
    parse_model,
    read_model,
    write_liblinear,
    write_model,
)

SPECIAL = [0.0, -0.0, 5e-324, -2.2250738585072014e-308, 1e-310, 1.7976931348623157e308,
           -1e300, 0.1 + 0.2, 1 / 3, 2.0**53 + 2, -123456789.123456789]


def make_model(n_features=20, bias=1.0, density=1.0, rng_seed=0, **changes):
    rng = np.random.default_rng(rng_seed)
    d = n_features + (bias is not None)
    w = rng.standard_normal(d) * 10.0 ** rng.integers(-300, 300, d)
    w[rng.random(d) >= density] = 0.0
    fields = dict(task="binary", mode="n-slack", C=0.5, bias=bias, n_features=n_features,
                  index_base=1, labels=[1.0, -1.0], w=w, epsilon=0.01, dual=11324.171875,
                  primal=11325.0234375, relative_gap=7.5e-05, examples=32561, seed=1,
                  epochs=14)
    fields.update(changes)
    return Model(**fields)


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("bias", [None, 1.0, 0.25])
@pytest.mark.parametrize("density", [1.0, 0.3, 0.0])
def test_round_trip_is_bit_exact(tmp_path, bias, density):
    m = make_model(n_features=40, bias=bias, density=density)
    path = tmp_path / "m.txt"
    write_model(m, path)
    back = read_model(path)
    assert back == m
    assert same_bits(back.w, m.w)
    layout = open(path).read().split("weights ")[1].split()[0]
    nnz = np.count_nonzero(m.w)
    assert layout == ("sparse" if 2 * nnz < m.w.size else "dense")


@pytest.mark.parametrize("sparse", [False, True])
def test_round_trip_special_values(tmp_path, sparse):
    values = np.array(SPECIAL)
    n = len(values) * (3 if sparse else 1)
    w = np.zeros(n + 1)
    w[: len(values)] = values
    m = make_model(n_features=n, w=w, labels=[2.5, -7.0], C=1e-300, dual=-0.0,
                   primal=0.1 + 0.2, relative_gap=5e-324, seed=-3, index_base=0, bias=0.1 + 0.2)
    text = format_model(m)
    assert ("weights sparse" in text) == sparse
    if sparse:
        assert "1:-0.0\n" in text  # -0.0 is kept (bit pattern, not value, decides "nonzero")
    assert "labels 2.5 -7\n" in text
    back = parse_model(text)
    assert back == m and same_bits(back.w, m.w)
    path = tmp_path / "m"
    write_model(back, path)
    assert path.read_text() == text


def test_written_text_layout():
    m = make_model(n_features=3, bias=None, w=[0.5, -1.0, 0.1 + 0.2], C=1, labels=[1, -1])
    assert format_model(m) == (
        "svmtrain_model 1\ntask binary\nmode n-slack\nsolver dcd\nC 1.0\nbias none\nfeatures 3\n"
        "index_base 1\nlabels 1 -1\nepsilon 0.01\ndual 11324.171875\n"
        "primal 11325.0234375\nrelative_gap 7.5e-05\nexamples 32561\nseed 1\nepochs 14\n"
        "weights dense 3\n0.5\n-1.0\n0.30000000000000004\nend\n")


def test_keys_out_of_order_and_crlf_are_accepted():
    m = make_model(n_features=4)
    lines = format_model(m).split("\n")
    lines[2], lines[13] = lines[13], lines[2]
    assert parse_model("\r\n".join(lines)) == m


def test_write_to_stdout(capsys):
    m = make_model(n_features=5)
    write_model(m, "-")
    assert capsys.readouterr().out == format_model(m)


def test_model_error_is_picklable_and_formatted():
    e = ModelError("a/m.txt", 7, "bad thing")
    assert str(e) == "a/m.txt:7: bad thing"
    assert str(ModelError("m", None, "why")) == "m: why"
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.path, e2.line, e2.reason, str(e2)) == ("a/m.txt", 7, "bad thing", str(e))


# ---------------------------------------------------------------------------------------------
# Reader errors: each with its line


BASE = format_model(make_model(n_features=4, bias=1.0)).split("\n")[:-1]  # 23 lines
LINE = {line.split()[0]: i + 1 for i, line in enumerate(BASE[:17])}  # key -> 1-based line
W_AT = LINE["weights"]


def edit(set_=None, insert=None, delete=None, tail=None):
    lines = list(BASE)
    for n, text in (set_ or {}).items():
        lines[n - 1] = text
    for n, text in sorted((insert or {}).items(), reverse=True):
        lines.insert(n - 1, text)
    for n in sorted(delete or (), reverse=True):
        del lines[n - 1]
    return "\n".join(lines) + "\n" + (tail or "")


CASES = [
    # (name, text, line, message fragment)
    ("unknown key", edit(insert={5: "cache_size 100"}), 5, "unknown key 'cache_size'"),
    ("kernel key, linear mode", edit(insert={5: "kernel rbf"}), 5, "not used by the binary task in mode n-slack"),
    ("key of another task", edit(insert={5: "p 0.1"}), 5, "key 'p' is not used by the binary task"),
    ("duplicate key", edit(insert={9: "C 2"}), 9, f"duplicate key 'C' (first on line {LINE['C']})"),
    ("missing key", edit(delete=[LINE["seed"]]), W_AT - 1, "missing key seed"),
    ("missing keys", edit(delete=[LINE["dual"], LINE["seed"]]), W_AT - 2, "missing keys dual, seed"),
    ("version", edit(set_={1: "svmtrain_model 2"}), 1, "unsupported model format version 2"),
    ("bad version", edit(set_={1: "svmtrain_model x"}), 1, "bad model format version 'x'"),
    ("no version", edit(set_={1: "svmtrain_model"}), 1, "expected 'svmtrain_model 1'"),
    ("magic", edit(set_={1: "svm_model 1"}), 1, "not a model file"),
    ("non-numeric C", edit(set_={LINE["C"]: "C one"}), LINE["C"], "C: not a number: 'one'"),
    ("negative C", edit(set_={LINE["C"]: "C -1"}), LINE["C"], "C: -1.0 must be > 0"),
    ("nan dual", edit(set_={LINE["dual"]: "dual nan"}), LINE["dual"], "dual: non-finite value 'nan'"),
    ("inf primal", edit(set_={LINE["primal"]: "primal -inf"}), LINE["primal"], "non-finite"),
    ("overflow", edit(set_={LINE["primal"]: "primal 1e999"}), LINE["primal"], "overflows"),
    ("two values", edit(set_={LINE["C"]: "C 1 2"}), LINE["C"], "C: expected 1 value, found 2"),
    ("float count", edit(set_={LINE["features"]: "features 4.0"}), LINE["features"],
     "features: not an integer: '4.0'"),
    ("index base", edit(set_={LINE["index_base"]: "index_base 2"}), LINE["index_base"],
     "index_base: 2 must be one of 0, 1"),
    ("task", edit(set_={LINE["task"]: "task clustering"}), LINE["task"], "unknown task 'clustering'"),
    ("mode", edit(set_={LINE["mode"]: "mode fast"}), LINE["mode"], "unknown mode 'fast'"),
    ("three labels", edit(set_={LINE["labels"]: "labels 1 2 3"}), LINE["labels"],
     "labels: a binary model has 2 labels, found 3"),
    ("same labels", edit(set_={LINE["labels"]: "labels 1 1"}), LINE["labels"], "repeated label"),
    ("empty line", edit(insert={4: ""}), 4, "empty line"),
    ("weight count", edit(set_={W_AT: "weights dense 4"}), W_AT,
     "weight count 4 does not match features + bias = 5"),
    ("weight shape", edit(set_={W_AT: "weights dense 2x5"}), W_AT, "weight shape 2x5 does not match"),
    ("layout", edit(set_={W_AT: "weights packed 5"}), W_AT, "expected 'dense N' or 'sparse K'"),
    ("truncated weights", edit(delete=[W_AT + 3, W_AT + 4, W_AT + 5]), W_AT + 3,
     "truncated: expected 5 weights, found 2"),
    ("nan weight", edit(set_={W_AT + 2: "nan"}), W_AT + 2, "weight: non-finite value 'nan'"),
    ("junk weight", edit(set_={W_AT + 4: "0.5x"}), W_AT + 4, "weight: not a number: '0.5x'"),
    ("digit groups", edit(set_={W_AT + 4: "1_000"}), W_AT + 4, "weight: not a number: '1_000'"),
    ("two weights on a line", edit(set_={W_AT + 1: "1 2"}), W_AT + 1, "expected 1 value, found 2"),
    ("extra weight", edit(insert={W_AT + 6: "0.5"}), W_AT + 6, "expected 'end' after the weights"),
    ("missing end", edit(delete=[W_AT + 6]), W_AT + 6, "truncated: missing 'end'"),
    ("after end", edit(tail="0.5\n"), W_AT + 7, "unexpected content after 'end'"),
    ("blank after end", edit(tail="\n"), W_AT + 7, "unexpected content after 'end'"),
    ("no final newline", "\n".join(BASE), W_AT + 6, "missing newline at end of file"),
    ("empty file", "", 1, "empty file"),
]


@pytest.mark.parametrize("name,text,line,message", CASES, ids=[c[0] for c in CASES])
def test_reader_errors(tmp_path, name, text, line, message):
    path = tmp_path / "bad.model"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        read_model(path)
    e = info.value
    assert (e.path, e.line) == (str(path), line), str(e)
    assert message in e.reason
    assert str(e) == f"{path}:{line}: {e.reason}"


def sparse_text(entries, n_features=9):
    m = make_model(n_features=n_features, bias=None, w=np.zeros(n_features))
    head = format_model(m).split("weights")[0]
    return head + f"weights sparse {len(entries)}\n" + "".join(e + "\n" for e in entries) + "end\n"


SPARSE_AT = 18  # line of the first sparse entry


@pytest.mark.parametrize("entries,line,message", [
    (["0:1.5", "9:2.0"], SPARSE_AT + 1, "weight index 9 out of range 0..8"),
    (["3:1.5", "2:2.0"], SPARSE_AT + 1, "weight index 2 not increasing (previous 3)"),
    (["3:1.5", "3:2.0"], SPARSE_AT + 1, "not increasing"),
    (["3:1.5", "4:inf"], SPARSE_AT + 1, "weight: non-finite value 'inf'"),
    (["3:1.5", "-4:1"], SPARSE_AT + 1, "expected 'index:value'"),
    (["3 1.5"], SPARSE_AT, "expected 'index:value'"),
])
def test_sparse_reader_errors(entries, line, message):
    with pytest.raises(ModelError) as info:
        parse_model(sparse_text(entries), "s.model")
    assert info.value.line == line and message in info.value.reason, str(info.value)


def test_sparse_count_errors():
    text = sparse_text(["1:1.5", "2:2.5"])
    with pytest.raises(ModelError, match=r":17: weights: sparse weight count 10 is not in 0..9"):
        parse_model(text.replace("weights sparse 2", "weights sparse 10"), "s")
    with pytest.raises(ModelError, match=r":20: truncated: expected 3 weights, found 2"):
        parse_model(text.replace("weights sparse 2", "weights sparse 3"), "s")
    m = parse_model(text, "s")
    assert m.w.tolist() == [0, 1.5, 2.5, 0, 0, 0, 0, 0, 0]


def test_reading_binary_junk_and_missing_files(tmp_path):
    path = tmp_path / "pickle"
    path.write_bytes(pickle.dumps(make_model()))
    with pytest.raises(ModelError, match="not a text file|not a model"):
        read_model(path)
    with pytest.raises(ModelError, match="cannot read model"):
        read_model(tmp_path / "absent")


def every_prefix(text):
    data = text.encode()
    cuts = set(range(len(data)))  # every byte offset, which includes every line boundary
    return [data[:k].decode() for k in sorted(cuts)]


@pytest.mark.parametrize("density", [1.0, 0.2])
def test_no_truncation_parses(density):
    text = format_model(make_model(n_features=12, density=density))
    assert parse_model(text) is not None
    for prefix in every_prefix(text):
        with pytest.raises(ModelError):
            parse_model(prefix)


def test_truncation_of_a_large_model_at_line_boundaries():
    m = make_model(n_features=123, bias=1.0)
    lines = format_model(m).split("\n")
    with pytest.raises(ModelError, match=r":98: truncated: expected 124 weights, found 80"):
        parse_model("\n".join(lines[:97]) + "\n")
    for k in range(len(lines) - 1):
        with pytest.raises(ModelError):
            parse_model("\n".join(lines[:k]) + "\n" * (k > 0))


def test_mutated_files_fail_only_with_model_error():
    """Random byte edits: each result parses or raises ModelError, never anything else."""
    import random

    rnd = random.Random(1)
    texts = [format_model(make_model(n_features=6)),
             format_model(make_model(n_features=12, density=0.2)), LL]
    alphabet = "0123456789.-+eE:x \n\tnainfendweights_sparsedense\x00\xff"
    for _ in range(3000):
        t = list(rnd.choice(texts))
        for _ in range(rnd.randint(1, 3)):
            op, k = rnd.random(), rnd.randrange(len(t) + 1)
            if op < 0.4 and k < len(t):
                t[k] = rnd.choice(alphabet)
            elif op < 0.7:
                t.insert(k, rnd.choice(alphabet))
            elif k < len(t):
                del t[k]
        try:
            parse_model("".join(t))
        except ModelError:
            pass


def _outcome(text):
    try:
        return parse_model(text)
    except ModelError as e:
        return str(e)


def test_weights_read_in_small_pieces_give_the_same_models_and_errors(monkeypatch):
    """The weights body is parsed from pieces of the file (1 MiB); pieces of 7 bytes, so that
    lines are cut everywhere, give the same model or the same error as one piece of everything."""
    import random

    from svmtrain import model as model_module
    rnd = random.Random(2)
    multiclass = make_model(n_features=5, task="multiclass", labels=[1.0, 2.0, 3.0],
                            w=np.arange(18.0).reshape(3, 6) - 4.5, loss="zero-one",
                            rescaling="margin")
    texts = [format_model(make_model(n_features=30)), format_model(make_model(n_features=40, density=0.2)),
             format_model(multiclass), LL]
    cases = list(texts)
    for _ in range(400):
        t = list(rnd.choice(texts))
        for _ in range(rnd.randint(1, 2)):
            k = rnd.randrange(len(t))
            t[k] = rnd.choice("0123456789.-+e:x \n\tend\xff")
        cases.append("".join(t))
    whole = [_outcome(t) for t in cases]
    monkeypatch.setattr(model_module._Source, "CHUNK", 7)
    assert [_outcome(t) for t in cases] == whole
    assert all(isinstance(o, Model) for o in whole[:len(texts)])


def test_weights_body_reports_truncation_before_a_bad_line():
    m = make_model(n_features=9, bias=None)
    lines = format_model(m).split("\n")
    at = lines.index("weights dense 9")
    bad = lines[:at + 3] + ["x"] + lines[at + 4:at + 6] + ["end", ""]
    with pytest.raises(ModelError, match=rf":{at + 7}: truncated: expected 9 weights, found 5"):
        parse_model("\n".join(bad))
    bad = lines[:at + 3] + ["x"] + lines[at + 4:]
    with pytest.raises(ModelError, match=rf":{at + 4}: weight: not a number: 'x'"):
        parse_model("\n".join(bad))


def test_read_multiclass_weights_are_the_solvers_layout(tmp_path):
    """A read K x width multiclass w is column-major: the feature-major w of the kernels is a
    view of it, not a copy, and it writes back the same bytes."""
    from svmtrain.tasks.multiclass import Multiclass
    w = np.arange(12.0).reshape(3, 4) - 5.0
    m = make_model(n_features=3, task="multiclass", labels=[1.0, 2.0, 3.0], w=w,
                   loss="zero-one", rescaling="margin")
    write_model(m, tmp_path / "m")
    back = read_model(tmp_path / "m")
    assert back == m and np.array_equal(back.w, w) and back.w.flags.f_contiguous
    flat = Multiclass.from_model(back).solver_weights(back.w)
    assert np.shares_memory(flat, back.w) and np.array_equal(flat, w.T.ravel())
    assert format_model(back) == (tmp_path / "m").read_text()


# ---------------------------------------------------------------------------------------------
# Writer refusals


@pytest.mark.parametrize("changes,message", [
    (dict(w=np.array([1.0, np.nan, 0.0])), r"w\[1\] is nan: refusing to write a non-finite weight"),
    (dict(w=np.array([1.0, 0.0, -np.inf])), r"w\[2\] is -inf"),
    (dict(dual=float("inf")), "dual: non-finite value"),
    (dict(w=np.zeros(2)), "w has shape 2, expected 3"),
    (dict(labels=[1.0]), "labels: a binary model has 2 labels, found 1"),
    (dict(C=0.0), "C: 0.0 must be > 0"),
    (dict(seed=1.5), "seed: not an integer"),
    (dict(task="tagging"), "unknown task 'tagging'"),
    (dict(task="ranking"), "the ranking task records no labels"),
    (dict(solver="my solver"), "solver: not a name"),
])
def test_writer_refuses_invalid_models(tmp_path, changes, message):
    m = make_model(n_features=2, **changes)
    path = tmp_path / "out"
    with pytest.raises(ModelError, match=message) as info:
        write_model(m, path)
    assert info.value.path == str(path) and info.value.line is None
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# LIBLINEAR


def test_liblinear_text_parses_exactly():
    text = ("solver_type L2R_L2LOSS_SVC_DUAL\nnr_class 2\nlabel 3 -7\nnr_feature 3\nbias -1\nw\n"
            "-0.12345678901234566 \n0.30000000000000004 \n5e-324 \n")
    m = parse_model(text, "ll")
    assert (m.format, m.liblinear_solver, m.bias, m.labels, m.n_features, m.index_base) == (
        "liblinear", "L2R_L2LOSS_SVC_DUAL", None, [3.0, -7.0], 3, 1)
    assert same_bits(m.w, np.array([-0.12345678901234566, 0.1 + 0.2, 5e-324]))
    assert (m.C, m.dual, m.primal, m.relative_gap, m.epsilon) == (None,) * 5
    assert format_liblinear(m) == text.replace("5e-324", "4.9406564584124654e-324")
    with pytest.raises(ModelError, match=r"C is unknown \(None\).*liblinear file"):
        format_model(m)


LL = ("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\nlabel 1 -1\nnr_feature 2\nbias 1\nw\n"
      "0.5 \n-0.25 \n1 \n")


@pytest.mark.parametrize("old,new,line,message", [
    ("L2R_L1LOSS_SVC_DUAL", "MCSVM_CS", 1, "MCSVM_CS: LIBLINEAR multiclass (Crammer-Singer) models are not supported"),
    ("L2R_L1LOSS_SVC_DUAL", "L2R_L1LOSS_SVR_DUAL", 1, "regression models are not supported"),
    ("L2R_L1LOSS_SVC_DUAL", "ONECLASS_SVM", 1, "one-class models are not supported"),
    ("L2R_L1LOSS_SVC_DUAL", "FANCY", 1, "unknown LIBLINEAR solver 'FANCY'"),
    ("nr_class 2", "nr_class 3", 2, "only binary (nr_class 2)"),
    ("label 1 -1", "label 1 0.5", 3, "label: not an integer: '0.5'"),
    ("label 1 -1", "label 1", 3, "2 labels, found 1"),
    ("bias 1\n", "bias 1\nrho 0.5\n", 6, "rho"),
    ("bias 1\n", "bias 1\nbias 1\n", 6, "duplicate key 'bias'"),
    ("bias 1\n", "", 5, "missing key bias"),
    ("bias 1\n", "bias 1\ncolor red\n", 6, "unknown LIBLINEAR key 'color'"),
    ("bias 1", "bias -1", 9, "unexpected content after the 2 weight rows"),
    ("-0.25 \n", "", 9, "truncated: expected 3 weight rows, found 2"),
    ("-0.25 \n", "-0.25 0.5\n", 8, "expected 1 value, found 2"),
    ("-0.25 \n", "nan \n", 8, "non-finite"),
    ("1 \n", "1 ", 9, "missing newline at end of file"),
])
def test_liblinear_reader_errors(old, new, line, message):
    with pytest.raises(ModelError) as info:
        parse_model(LL.replace(old, new), "ll.model")
    assert info.value.line == line and message in info.value.reason, str(info.value)


def test_liblinear_truncation():
    for prefix in every_prefix(LL):
        with pytest.raises(ModelError):
            parse_model(prefix)


@pytest.mark.parametrize("changes,message", [
    (dict(labels=[0.5, -1.0]), "label 0.5: LIBLINEAR model files store labels as integers"),
    (dict(labels=[2.0**40, -1.0]), "store labels as integers"),
    (dict(bias=-0.5, w=np.zeros(3)), "bias -0.5 < 0 would mean 'no bias'"),
    (dict(index_base=0), "index_base 0"),
    (dict(w=np.array([1.0, np.inf, 0.0])), r"w\[1\] is inf"),
])
def test_liblinear_writer_refusals(tmp_path, changes, message):
    m = make_model(n_features=2, **changes)
    with pytest.raises(ModelError, match=message):
        write_liblinear(m, tmp_path / "ll")
    assert os.listdir(tmp_path) == []


def shared_data():
    root = os.environ.get("SVMTRAIN_SHARED_DATA")
    return Path(root) if root else Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def heart_scale(tmp_path_factory):
    source = shared_data() / "heart_scale" / "heart_scale.xz"
    if not source.exists():
        pytest.skip(f"{source} not found (set SVMTRAIN_SHARED_DATA)")
    path = tmp_path_factory.mktemp("data") / "heart_scale"
    path.write_bytes(lzma.decompress(source.read_bytes()))
    return path


@pytest.fixture(scope="module")
def liblinear():
    return pytest.importorskip("liblinear.liblinearutil")


def decisions(m, x):
    """Our own decision rule on liblinear's dict rows: w.x (+ bias * w_last) > 0 -> labels[0]."""
    out = []
    for row in x:
        s = sum(m.w[j - 1] * v for j, v in row.items() if j <= m.n_features)
        if m.bias is not None:
            s += m.bias * m.w[-1]
        out.append(m.labels[0] if s > 0 else m.labels[1])
    return out


@pytest.mark.parametrize("options", ["-s 3", "-s 3 -B 1", "-s 1 -B 2.5", "-s 0", "-s 5 -B 1",
                                     "-s 2", "-s 6", "-s 7 -B 1"])
def test_liblinear_files_read_and_written_identically(tmp_path, heart_scale, liblinear, options):
    y, x = liblinear.svm_read_problem(str(heart_scale))
    y, x = y[:200], x[:200]
    theirs = tmp_path / "theirs.model"
    trained = liblinear.train(y, x, options + " -q")
    liblinear.save_model(str(theirs), trained)

    m = read_model(theirs)
    n = trained.get_nr_feature()
    bias = trained.bias if trained.bias >= 0 else None
    w = np.array([trained.w[j] for j in range(n + (bias is not None))])
    assert same_bits(m.w, w)
    assert (m.bias, m.n_features, m.labels) == (bias, n, [float(v) for v in trained.get_labels()])

    ours = tmp_path / "ours.model"
    write_liblinear(m, ours)
    assert ours.read_bytes() == theirs.read_bytes()

    y_all, x_all = liblinear.svm_read_problem(str(heart_scale))
    predicted, _, _ = liblinear.predict(y_all, x_all, liblinear.load_model(str(ours)), "-q")
    assert predicted == decisions(m, x_all)


@pytest.mark.parametrize("bias", [None, 1.0, 0.5])
def test_our_models_written_for_liblinear_predict_the_same(tmp_path, heart_scale, liblinear, bias):
    y, x = liblinear.svm_read_problem(str(heart_scale))
    m = make_model(n_features=13, bias=bias, labels=[7.0, -2.0], rng_seed=5)
    m.w = np.random.default_rng(3).standard_normal(m.n_weights)
    path = tmp_path / "ours.model"
    write_liblinear(m, path)
    head = path.read_text().split("\n")[:6]
    assert head == ["solver_type L2R_L1LOSS_SVC_DUAL", "nr_class 2", "label 7 -2", "nr_feature 13",
                    f"bias {'-1' if bias is None else format(bias, '.17g')}", "w"]
    loaded = liblinear.load_model(str(path))
    assert loaded is not None
    predicted, _, _ = liblinear.predict(y, x, loaded, "-q")
    assert predicted == decisions(m, x)
    assert set(predicted) == {7.0, -2.0}
    back = read_model(path)
    assert same_bits(back.w, m.w) and back.labels == m.labels and back.bias == m.bias
    assert replace(back, format="svmtrain", liblinear_solver=None, solver="dcd", C=m.C,
                   epsilon=m.epsilon, dual=m.dual, primal=m.primal, relative_gap=m.relative_gap,
                   examples=m.examples, seed=m.seed, epochs=m.epochs) == m


@pytest.mark.parametrize("task, labels, shape, extra", [
    ("multiclass", [3.0, 1.0, 7.0], (3, 6), dict(loss="zero-one", rescaling="margin")),
    ("regression", [], (6,), dict(p=0.1)),
    ("ranking", [], (6,), {}),
    ("constraints", [], (6,), {}),
    ("sequence", [1.0, 2.0], (2 * 6 + 3 * 2,), dict(loss="hamming", rescaling="slack")),
])
def test_every_task_round_trips_with_its_own_keys(tmp_path, task, labels, shape, extra):
    rng = np.random.default_rng(1)
    m = Model(task=task, mode="n-slack", C=2.0, bias=1.0, n_features=5, index_base=1,
              labels=labels, w=rng.normal(size=shape), epsilon=1e-3, dual=1.0, primal=1.5,
              relative_gap=1 / 3, examples=10, seed=1, epochs=3, **extra)
    write_model(m, tmp_path / "m")
    text = (tmp_path / "m").read_text()
    assert ("labels" in text) == bool(labels)
    for key, value in extra.items():
        assert f"\n{key} {value}\n" in text
    assert read_model(tmp_path / "m") == m
    # a key the task needs is missing: the reader names it
    key = next(iter(extra), None)
    if key is not None:
        (tmp_path / "bad").write_text("".join(l for l in text.splitlines(True) if not l.startswith(key + " ")))
        with pytest.raises(ModelError, match=f"missing key {key}"):
            read_model(tmp_path / "bad")
