"""examples/parser: the arc-factored dependency parser task (CoNLL-U, hashed arc features, Eisner).

The oracles are checked against brute force (STYLE example 9): every projective tree of a short
sentence is enumerated, and Eisner's argmax, the loss-augmented argmax and its value
(w . psi + loss) must equal the best of them.
"""

import hashlib
import itertools
import lzma
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository root: `examples`

from examples.parser import ArcFactoredParser, DataError, ParserInput, eisner, read_conllu  # noqa: E402
from examples.parser.eisner import compiled_module, eisner_numpy  # noqa: E402
from examples.parser.task import feature_sums_numpy  # noqa: E402
from examples.parser._check import averaged_perceptron, is_projective  # noqa: E402
from examples.parser.features import (BETWEEN_CLASSES, N_FEATURES_PER_ARC, arc_grid,  # noqa: E402
                                      between_counts, token_codes)

REPO = Path(__file__).resolve().parent.parent


def shared_data_root():
    return Path(os.environ.get("SVMTRAIN_SHARED_DATA", REPO.parent / "shared" / "data"))

# comments, a multiword token (3-4 "don't" over "do" "n't"), an empty node (5.1), a sentence that
# ends the file without a blank line
TINY = """\
# newdoc id = tiny
# sent_id = 1
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tsaid\tsay\tVERB\tVBD\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = 2
1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\t_
"""


def write(tmp_path, text, name="tiny.conllu"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def projective_trees(n, single_root):
    """All projective trees over n words, by enumeration: every head assignment (no self-arcs)
    that reaches the root from every word and has no two crossing arcs (root at position 0)."""
    cands = np.array(list(itertools.product(range(n + 1), repeat=n)), dtype=np.int64).reshape(-1, n)
    d = np.arange(1, n + 1)
    ok = np.all(cands != d, axis=1)
    parent = np.concatenate([np.zeros((len(cands), 1), np.int64), cands], axis=1)
    top = parent.copy()
    for _ in range(n):
        top = np.take_along_axis(parent, top, 1)
    ok &= np.all(top == 0, axis=1)
    lo, hi = np.minimum(cands, d), np.maximum(cands, d)
    cross = ((lo[:, :, None] < lo[:, None, :]) & (lo[:, None, :] < hi[:, :, None])
             & (hi[:, :, None] < hi[:, None, :]))
    ok &= ~cross.any(axis=(1, 2))
    if single_root:
        ok &= (cands == 0).sum(axis=1) == 1
    return cands[ok]


def test_projective_tree_counts():
    # the enumerator itself: 1, 3, 12, 55, 273, 1428 trees rooted at position 0 (A001764), of which
    # 1, 2, 7, 30, 143, 728 have one root child (A006013)
    assert [len(projective_trees(n, False)) for n in range(1, 7)] == [1, 3, 12, 55, 273, 1428]
    assert [len(projective_trees(n, True)) for n in range(1, 7)] == [1, 2, 7, 30, 143, 728]


@pytest.mark.parametrize("decoder", [eisner, eisner_numpy])
@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_eisner_equals_brute_force(n, single_root, decoder):
    rng = np.random.default_rng(100 * n + single_root)
    trees = projective_trees(n, single_root)
    for _ in range(15):
        scores = rng.normal(size=(n + 1, n + 1))
        if rng.random() < 0.3:
            scores = np.round(scores)        # ties: still a best tree, with its exact value
        values = scores[trees, np.arange(1, n + 1)].sum(axis=1)
        heads, value = decoder(scores, single_root)
        assert value == pytest.approx(values.max(), abs=1e-12)
        assert any(np.array_equal(heads, t) for t in trees[np.isclose(values, values.max(), atol=1e-12)])


def test_compiled_module_equals_numpy_bit_for_bit():
    """The typed-loop decoder (built on first use) returns numpy's trees and values exactly, ties
    included, on sentences up to 60 words: training gives the same model with either."""
    compiled = compiled_module()
    if compiled is None:
        pytest.skip("the compiled decoder could not be built here (Cython or a C compiler missing)")
    fast = compiled.eisner_compiled
    rng = np.random.default_rng(11)
    for n in list(range(0, 13)) + [31, 60]:
        for single_root in (True, False):
            for _ in range(10):
                scores = rng.normal(size=(n + 1, n + 1))
                if rng.random() < 0.5:
                    scores = np.round(scores)
                heads, value = fast(scores, single_root)
                expected_heads, expected_value = eisner_numpy(scores, single_root)
                assert np.array_equal(heads, expected_heads) and heads.dtype == np.int64
                assert value == expected_value


def random_sentence(rng, n):
    words = ["the", "dog", "barks", "at", "a", "cat", "The", ".", "and"]
    tags = ["DET", "NOUN", "VERB", "ADP", "PUNCT", "CCONJ"]
    return ParserInput([str(rng.choice(words)) for _ in range(n)], [str(rng.choice(tags)) for _ in range(n)])


def dense_psi(task, x, y):
    indices, values = task.joint_feature(x, y)
    v = np.zeros(task.size_joint_feature)
    np.add.at(v, indices, values)          # repeated indices are summed
    return v


@pytest.mark.parametrize("single_root", ["yes", "no"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_oracles_equal_brute_force(n, single_root):
    """inference = argmax w.psi and loss-augmented inference = argmax w.psi + loss over all
    projective trees; the loss-augmented value is w.psi(y') + loss(y, y') of the tree returned."""
    task = ArcFactoredParser(bits="10", single_root=single_root)
    rng = np.random.default_rng(7 * n + (single_root == "yes"))
    trees = projective_trees(n, single_root == "yes")
    for _ in range(4):
        x = random_sentence(rng, n)
        y = trees[rng.integers(len(trees))]
        w = rng.normal(size=task.size_joint_feature) * 0.3
        scores = np.array([w @ dense_psi(task, x, t) for t in trees])
        losses = np.array([task.loss(y, t) for t in trees])
        assert losses.min() == 0 and task.loss(y, y) == 0

        y_hat = task.inference(x, w)
        assert w @ dense_psi(task, x, y_hat) == pytest.approx(scores.max(), abs=1e-9)

        y_aug, value = task.loss_augmented(x, y, w)
        assert value == pytest.approx((scores + losses).max(), abs=1e-9)
        assert value == pytest.approx(w @ dense_psi(task, x, y_aug) + task.loss(y, y_aug), abs=1e-9)
        assert np.array_equal(task.loss_augmented_inference(x, y, w), y_aug)


def test_joint_feature_is_a_sum_of_arc_rows():
    task = ArcFactoredParser(bits="16")
    rng = np.random.default_rng(3)
    x = random_sentence(rng, 9)
    y = np.array([2, 0, 2, 5, 3, 5, 8, 6, 8])
    indices, values = task.joint_feature(x, y)
    assert indices.dtype == np.int64 and values.dtype == np.float64
    assert indices.min() >= 0 and indices.max() < task.size_joint_feature
    assert values.sum() == len(y) * N_FEATURES_PER_ARC
    features = task.arc_features(x)
    assert np.array_equal(np.sort(indices), np.sort(features[y * 9 + np.arange(9)].ravel()))
    # arc scores are the mat-vec; a tree's score is w . psi
    w = rng.normal(size=task.size_joint_feature)
    scores = task.arc_scores(x, w)
    assert scores[y, np.arange(1, 10)].sum() == pytest.approx(w[indices] @ values)
    assert scores[2, 1] == pytest.approx(w[features[2 * 9 + 0]].sum())
    with pytest.raises(ValueError, match="feature space has 65536 columns"):
        task.arc_scores(x, w[:-1])
    with pytest.raises(ValueError, match="9 heads"):
        task.joint_feature(x, y[:-1])


def test_features_depend_only_on_the_sentence():
    """Same words, same features, in a fresh task and after a pickle round trip (process pools);
    the digest pins the hashing: a model of version "1" keeps its meaning."""
    forms, upos = ["Dogs", "bark", "loudly", "."], ["NOUN", "VERB", "ADV", "PUNCT"]
    a = ArcFactoredParser(bits="20").arc_features(ParserInput(forms, upos))
    x = pickle.loads(pickle.dumps(ParserInput(forms, upos)))
    b = ArcFactoredParser(bits="20", cache_features="no").arc_features(x)
    assert a.shape == (4 * 5, N_FEATURES_PER_ARC)
    assert np.array_equal(a, b)
    assert hashlib.sha256(np.ascontiguousarray(a, dtype="<i4").tobytes()).hexdigest()[:16] == FEATURE_DIGEST
    # the lowercase is a feature of its own: "dogs" shares some, not all, features with "Dogs"
    c = ArcFactoredParser(bits="20").arc_features(ParserInput(["dogs"] + forms[1:], upos))
    assert 0 < (a != c).sum() < a.size


FEATURE_DIGEST = "8ebb788bd4fb2207"


def test_compiled_feature_sums_equal_numpy_bit_for_bit():
    compiled = compiled_module()
    if compiled is None:
        pytest.skip("the compiled helpers could not be built here (Cython or a C compiler missing)")
    task = ArcFactoredParser(bits="16")
    rng = np.random.default_rng(4)
    w = rng.normal(size=task.size_joint_feature)
    for n in (1, 5, 30):
        features = task.arc_features(random_sentence(rng, n))
        assert np.array_equal(compiled.feature_sums(w, features), feature_sums_numpy(w, features))


def test_between_counts():
    upos = ["NOUN", "VERB", "PUNCT", "AUX", "CCONJ", "NOUN", "PUNCT"]
    codes = token_codes(["w"] * len(upos), upos)
    heads, dependents = arc_grid(len(upos))
    counts = between_counts(codes, heads, dependents)
    for a, (h, d) in enumerate(zip(heads, dependents)):
        inside = upos[min(h, d):max(h, d) - 1]            # words min+1 .. max-1 (1-based)
        expected = [sum(p in c for p in inside) for c in BETWEEN_CLASSES]
        assert counts[:, a].tolist() == expected, (h, d)


def test_loss_and_score():
    task = ArcFactoredParser()
    assert task.loss(np.array([2, 0, 2]), np.array([2, 0, 2])) == 0.0
    assert task.loss(np.array([2, 0, 2]), np.array([0, 1, 2])) == 2.0
    name, value = task.score([np.array([2, 0, 2]), np.array([0])], [np.array([0, 1, 2]), np.array([0])])
    assert name == "UAS" and value == pytest.approx(2 / 4)
    assert task.format_label(np.array([2, 0, 2])) == "2 0 2"


def test_options_are_checked():
    assert ArcFactoredParser(bits="12").size_joint_feature == 4096
    assert ArcFactoredParser().size_joint_feature == 2 ** 20
    for options, message in [({"bits": "x"}, "bits='x': expected an integer"),
                             ({"bits": "40"}, "bits=40: expected 8 <= bits <= 30"),
                             ({"single_root": "maybe"}, "single_root='maybe': expected yes or no"),
                             ({"bitz": "3"}, "unknown task option 'bitz'")]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            ArcFactoredParser(**options)


def test_non_projective_gold_costs_at_test_time():
    """Eisner outputs a projective tree even when w prefers a crossing gold tree: its arcs count
    as errors (the UAS of such a sentence is below 1)."""
    task = ArcFactoredParser(bits="12")
    x = random_sentence(np.random.default_rng(5), 4)
    y = np.array([3, 4, 0, 3])           # 1 <- 3 and 2 <- 4 cross
    assert not is_projective(y)
    w = dense_psi(task, x, y)            # scores the gold tree's own features highest
    y_hat = task.inference(x, w)
    assert is_projective(y_hat) and task.loss(y, y_hat) >= 1
    assert task.score([y], [y_hat])[1] < 1


# -- CoNLL-U --------------------------------------------------------------------------------------

def test_reader_skips_comments_multiword_tokens_and_empty_nodes(tmp_path):
    sentences = list(read_conllu(write(tmp_path, TINY)))
    assert len(sentences) == 2
    s = sentences[0]
    assert s.forms == ["I", "do", "n't", "know", "."]
    assert s.upos == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert s.heads.tolist() == [4, 4, 4, 0, 4]
    assert s.line == 4
    assert sentences[1].forms == ["Hello"] and sentences[1].heads.tolist() == [0]


def test_reader_reads_xz_and_the_task_yields_examples(tmp_path):
    path = tmp_path / "tiny.conllu.xz"
    path.write_bytes(lzma.compress(TINY.encode("utf-8")))
    examples = list(ArcFactoredParser(bits="12").read_examples(path))
    assert [len(x) for x, _ in examples] == [5, 1]
    assert examples[0][1].tolist() == [4, 4, 4, 0, 4]
    assert examples[0][0].forms[1] == "do"
    assert examples[0][0].features is None
    ArcFactoredParser(bits="12").initialize(examples)
    assert examples[0][0].features.shape == (5 * 6, N_FEATURES_PER_ARC)
    # a task with another feature space never uses features hashed for this one
    assert ArcFactoredParser(bits="9").arc_features(examples[0][0]).max() < 2 ** 9


def _line(i, form="w", upos="NOUN", head="0", id_=None, ncols=10):
    cols = [str(id_ if id_ is not None else i), form, "_", upos, "_", "_", head, "dep", "_", "_"]
    return "\t".join(cols[:ncols]) + "\n"


@pytest.mark.parametrize("text, line, reason", [
    (_line(1) + _line(2, head="1", ncols=9), 2, "9 tab-separated columns, CoNLL-U has 10"),
    (_line(1) + _line(3, head="1"), 2, "word ID 3 where 2 was expected"),
    (_line(1, head="x"), 1, "bad HEAD 'x'"),
    (_line(1) + _line(2, head="7"), 2, "HEAD 7 is not a word of this sentence (it has 2 words)"),
    (_line(1, head="1"), 1, "word 1 is its own HEAD"),
    (_line(1, head="2"), 1, "HEAD 2 is not a word of this sentence (it has 1 word)"),
    (_line(1, head="2") + _line(2, head="1"), 1, "the HEADs do not form a tree: word 1 is on a cycle"),
    (_line(1) + "# late\n", 2, "a comment inside a sentence"),
    (_line(1, id_="a"), 1, "bad word ID 'a'"),
    (_line(1, id_="2-1"), 1, "bad multiword-token ID '2-1'"),
    (_line(1, id_="1.x"), 1, "bad empty-node ID '1.x'"),
    (_line(1, upos=""), 1, "empty UPOS"),
    ("# c\n\n" + _line(1) + "\n" + _line(1, head="_"), 5, "bad HEAD '_'"),
])
def test_reader_errors_name_file_line_and_reason(tmp_path, text, line, reason):
    path = write(tmp_path, text, "bad.conllu")
    with pytest.raises(DataError) as e:
        list(read_conllu(path))
    assert e.value.line == line and reason in e.value.reason
    assert str(e.value).startswith(f"{path}:{line}: ")


def test_reader_rejects_bad_bytes_and_missing_files(tmp_path):
    path = tmp_path / "latin1.conllu"
    path.write_bytes(_line(1).encode() + b"2\tcaf\xe9\t_\tNOUN\t_\t_\t1\tdep\t_\t_\n")
    with pytest.raises(DataError, match="not UTF-8"):
        list(read_conllu(path))
    with pytest.raises(DataError, match="cannot open"):
        list(read_conllu(tmp_path / "absent.conllu"))


def test_reader_reports_a_truncated_compressed_file(tmp_path):
    path = tmp_path / "cut.conllu.xz"
    path.write_bytes(lzma.compress(((TINY + "\n") * 50).encode("utf-8"))[:-40])
    with pytest.raises(DataError, match="cannot decompress") as e:
        list(read_conllu(path))
    assert str(e.value).startswith(str(path))


def test_unannotated_heads_when_allowed(tmp_path):
    path = write(tmp_path, _line(1, head="_") + _line(2, head="_"))
    (s,) = read_conllu(path, require_heads=False)
    assert s.heads.tolist() == [-1, -1]


# -- it learns ------------------------------------------------------------------------------------

def test_perceptron_learns_on_ud_english():
    """300 UD English sentences and two perceptron epochs already attach most words (UAS 0.72 on
    300 dev sentences), far above attaching every word to a neighbour."""
    root = shared_data_root() / "ud_english_ewt"
    if not root.exists():
        pytest.skip(f"shared data not found: {root} (set SVMTRAIN_SHARED_DATA)")
    task = ArcFactoredParser(bits="18")
    # the first sentences of each file, read from the xz stream
    train = list(itertools.islice(task.read_examples(root / "en_ewt-ud-train.conllu.xz"), 300))
    dev = list(itertools.islice(task.read_examples(root / "en_ewt-ud-dev.conllu.xz"), 300))
    w = averaged_perceptron(task, train, epochs=2, seed=0, log=lambda _: None)
    gold = [y for _, y in dev]
    name, uas = task.score(gold, task.batch_inference([x for x, _ in dev], w))
    left = [np.arange(len(y)) for y in gold]                            # d -> d - 1 (1 -> root)
    right = [np.append(np.arange(2, len(y) + 1), 0) for y in gold]      # d -> d + 1 (n -> root)
    neighbours = max(task.score(gold, left)[1], task.score(gold, right)[1])
    assert name == "UAS" and uas > 0.65 and uas > neighbours + 0.25
