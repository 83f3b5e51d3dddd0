"""svmtools conll2svm / svm2conll: CoNLL column files to the sequence task's svmlight lines and back."""

import gzip
import math

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data
from svmtools import conll
from svmtools.cli import main

# two sentences after a -DOCSTART- line; the file ends without a blank line
SNIPPET = """\
-DOCSTART- -X- O

He PRP B-NP
rose VBD B-VP
. . O

Sales NNS B-NP
rose VBD B-VP
"""

# features numbered in first-seen order, with --affix 1 --column-window 1 --column-ngrams 1 (the
# column features in the word window, no n-grams; see the module notes for the names)
SNIPPET_FEATURES = [
    "bias", "w=He", "lower=he", "shape=Xx", "pre1=H", "suf1=e", "col2=PRP", "bos[-1]",  # 1-8
    "w[+1]=rose", "lower[+1]=rose", "shape[+1]=x", "col2[+1]=VBD",                     # 9-12
    "w=rose", "lower=rose", "shape=x", "pre1=r", "col2=VBD",                           # 13-17
    "w[-1]=He", "lower[-1]=he", "shape[-1]=Xx", "col2[-1]=PRP",                        # 18-21
    "w[+1]=.", "lower[+1]=.", "shape[+1]=.", "col2[+1]=.",                             # 22-25
    "w=.", "lower=.", "shape=.", "pre1=.", "suf1=.", "col2=.",                         # 26-31
    "w[-1]=rose", "lower[-1]=rose", "shape[-1]=x", "col2[-1]=VBD", "eos[+1]",          # 32-36
    "w=Sales", "lower=sales", "pre1=S", "suf1=s", "col2=NNS",                          # 37-41
    "w[-1]=Sales", "lower[-1]=sales", "col2[-1]=NNS",                                  # 42-44
]


LEGACY = ("--column-window", "1", "--column-ngrams", "1")


def svm(tag, qid, *ids):
    return f"{tag} qid:{qid} " + " ".join(f"{i}:1" for i in ids)


SNIPPET_SVM = [
    svm(1, 1, *range(1, 13)),
    svm(2, 1, 1, 6, *range(13, 26)),
    svm(3, 1, 1, *range(26, 37)),
    svm(1, 2, 1, 4, 8, 9, 10, 11, 12, 37, 38, 39, 40, 41),
    svm(2, 2, 1, 6, 13, 14, 15, 16, 17, 20, 36, 42, 43, 44),
]


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args, input=None):
    return runner.invoke(main, [str(a) for a in args], input=input)


@pytest.fixture
def snippet(tmp_path):
    path = tmp_path / "train.conll"
    path.write_text(SNIPPET)
    return path


@pytest.fixture
def trained(runner, snippet, tmp_path):
    """(dictionary, svm output) of the snippet converted with --affix 1 --column-window 1
    --column-ngrams 1."""
    dic, out = tmp_path / "dict.txt", tmp_path / "train.svm"
    r = run(runner, "conll2svm", "--affix", "1", *LEGACY, "--new-dictionary", dic, snippet, out)
    assert r.exit_code == 0, r.output
    return dic, out


def lines(path):
    return path.read_text().splitlines()


def test_shape():
    assert [conll.shape(w) for w in ("Confidence", "1999", "well-known", "U.S.", "1,000",
                                     "McDonald", "NYSE", "$", "")] == \
        ["Xx", "d", "x-x", "X.X.", "d,d", "XxXx", "X", "$", ""]


def test_snippet_gives_exactly_the_expected_lines_and_dictionary(runner, trained):
    dic, out = trained
    assert lines(out) == SNIPPET_SVM
    text = lines(dic)
    assert text[:14] == ["svmtools-conll-dictionary 1", "columns 3", "word yes", "lower yes",
                         "shape yes", "affix 1", "other-columns yes", "window 1",
                         "column-window 1", "column-ngrams 1", "bias yes", "unit-length no",
                         "min-count 1", "tags 3"]
    assert text[14:18] == ["1 B-NP", "2 B-VP", "3 O", f"features {len(SNIPPET_FEATURES)}"]
    assert text[18:] == [f"{i} {name}" for i, name in enumerate(SNIPPET_FEATURES, 1)]
    d = conll.read_dictionary(str(dic))
    assert d.tags == ["B-NP", "B-VP", "O"] and d.features == SNIPPET_FEATURES
    assert d.settings == conll.Settings(affix=1, column_window=1, column_ngrams=1)
    assert d.columns == 3


def test_column_window_and_ngrams(runner, snippet, tmp_path):
    """POS tags two tokens either side and their bigrams and trigrams (<s>, </s> past the ends);
    bos/eos once per offset the word window does not reach."""
    dic, out = tmp_path / "d", tmp_path / "o"
    r = run(runner, "conll2svm", "--affix", "0", "--window", "0", "--column-window", "2",
            "--column-ngrams", "3", "--no-word", "--no-lower", "--no-shape", "--no-bias",
            "--new-dictionary", dic, snippet, out)
    assert r.exit_code == 0, r.output
    d = conll.read_dictionary(str(dic))
    first = [d.features[int(f.split(":")[0]) - 1] for f in lines(out)[0].split()[2:]]
    assert sorted(first) == sorted([
        "col2=PRP", "bos[-2]", "bos[-1]", "col2[+1]=VBD", "col2[+2]=.",
        "col2[-2:-1]=<s>|<s>", "col2[-1:+0]=<s>|PRP", "col2[+0:+1]=PRP|VBD", "col2[+1:+2]=VBD|.",
        "col2[-2:+0]=<s>|<s>|PRP", "col2[-1:+1]=<s>|PRP|VBD", "col2[+0:+2]=PRP|VBD|."])
    last = [d.features[int(f.split(":")[0]) - 1] for f in lines(out)[-1].split()[2:]]
    assert "col2[+0:+1]=VBD|</s>" in last and "col2[-1:+1]=NNS|VBD|</s>" in last
    assert "eos[+2]" in last and "col2[-2]=VBD" not in last    # sentences do not leak


def test_dictionary_without_the_column_options_reads_as_before(runner, snippet, tmp_path, trained):
    """A dictionary written before --column-window / --column-ngrams existed lacks their lines:
    it reads as column window = window, no n-grams, and the test file maps as it did."""
    dic, out = trained
    old = tmp_path / "old.dict"
    old.write_text("".join(line + "\n" for line in lines(dic)
                           if not line.startswith(("column-window", "column-ngrams"))))
    d = conll.read_dictionary(str(old))
    assert d.settings == conll.Settings(affix=1, column_window=1, column_ngrams=1)
    again = tmp_path / "again.svm"
    r = run(runner, "conll2svm", "--dictionary", old, snippet, again)
    assert r.exit_code == 0, r.output
    assert lines(again) == lines(out)


def test_default_options(runner, snippet, tmp_path):
    """Defaults: affixes up to 3, window 1, columns in a window of 2 with their bigrams, binary
    values."""
    r = run(runner, "conll2svm", "--new-dictionary", tmp_path / "d", snippet, tmp_path / "o")
    assert r.exit_code == 0, r.output
    d = conll.read_dictionary(str(tmp_path / "d"))
    assert d.settings == conll.Settings()
    assert {"pre3=Sal", "suf3=les", "pre2=He", "suf2=se"} <= set(d.features)
    assert "pre3=He" not in d.features      # no affix longer than the word
    assert {"col2[-2]=PRP", "col2[-1:+0]=PRP|VBD", "col2[+0:+1]=.|</s>"} <= set(d.features)
    assert not any(f.count("|") > 1 for f in d.features)      # bigrams only
    assert "2 sentences, 5 tokens, 3 tags" in r.stderr


def test_test_file_maps_identically_and_the_dictionary_is_only_read(runner, trained, snippet,
                                                                    tmp_path):
    dic, out = trained
    before = dic.read_bytes(), dic.stat().st_mtime_ns
    again = tmp_path / "again.svm"
    r = run(runner, "conll2svm", "--dictionary", dic, snippet, again)
    assert r.exit_code == 0, r.output
    assert again.read_text() == out.read_text()
    assert (dic.read_bytes(), dic.stat().st_mtime_ns) == before
    assert "0 of" in r.stderr and "unknown (dropped)" in r.stderr


def test_unknown_features_are_dropped(runner, trained, tmp_path):
    dic, _ = trained
    test = tmp_path / "test.conll"
    test.write_text("She PRP B-NP\nrose VBD B-VP\n")
    out = tmp_path / "test.svm"
    r = run(runner, "conll2svm", "--dictionary", dic, test, out)
    assert r.exit_code == 0, r.output
    # w=She, lower=she, w[-1]=She, lower[-1]=she are unknown; shape, suf1=e, pre1=S... are known
    assert lines(out) == [svm(1, 1, 1, 4, 6, 7, 8, 9, 10, 11, 12, 39),
                          svm(2, 1, 1, 6, 13, 14, 15, 16, 17, 20, 21, 36)]
    assert "4 of 24 feature occurrences unknown (dropped)" in r.stderr


def test_unknown_test_tag_is_an_error_naming_the_line(runner, trained, tmp_path):
    dic, _ = trained
    test = tmp_path / "test.conll"
    test.write_text("He PRP B-NP\n\nrose VBD B-XX\n")
    out = tmp_path / "test.svm"
    r = run(runner, "conll2svm", "--dictionary", dic, test, out)
    assert r.exit_code == 2
    assert f"{test}:3: tag 'B-XX' is not in the dictionary" in r.stderr
    assert not out.exists()
    # --unknown-tag-ok: written as 0, which no model predicts
    r = run(runner, "conll2svm", "--unknown-tag-ok", "--dictionary", dic, test, out)
    assert r.exit_code == 0, r.output
    assert [line.split()[:2] for line in lines(out)] == [["1", "qid:1"], ["0", "qid:2"]]
    assert "1 tokens with a tag not in the dictionary (written as 0)" in r.stderr


def test_svm2conll_restores_tag_names(runner, trained, snippet, tmp_path):
    dic, out = trained
    preds = tmp_path / "pred"
    preds.write_text("".join(line.split()[0] + "\n" for line in lines(out)))
    joined = tmp_path / "joined"
    r = run(runner, "svm2conll", "--dictionary", dic, snippet, preds, joined)
    assert r.exit_code == 0, r.output
    assert joined.read_text() == ("-DOCSTART- -X- O O\n\nHe PRP B-NP B-NP\nrose VBD B-VP B-VP\n"
                                  ". . O O\n\nSales NNS B-NP B-NP\nrose VBD B-VP B-VP\n")
    # other predictions (3.0 as a float label reads as 3), tab-separated input keeps its tabs
    tabbed = tmp_path / "tabbed"
    tabbed.write_text("He\tPRP\tB-NP\nrose\tVBD\tB-VP\n")
    preds.write_text("3.0\n1\n")
    r = run(runner, "svm2conll", "--dictionary", dic, tabbed, preds, "-")
    assert r.exit_code == 0, r.output
    assert r.stdout == "He\tPRP\tB-NP\tO\nrose\tVBD\tB-VP\tB-NP\n"


@pytest.mark.parametrize("pred_text, where, reason", [
    ("1\n2\n", "pred", "ends after 2 lines, but {conll}:5 is a token with no prediction"),
    ("1\n2\n3\n1\n2\n1\n", "pred:6", "more lines than {conll} has tokens"),
    ("1\n2\n4\n1\n2\n", "pred:3", "expected a tag number 1..3, got '4'"),
    ("1\nB-VP\n3\n1\n2\n", "pred:2", "expected a tag number 1..3, got 'B-VP'"),
    ("1\n\n3\n1\n2\n", "pred:2", "expected a tag number 1..3, got ''"),
])
def test_svm2conll_errors(runner, trained, snippet, tmp_path, pred_text, where, reason):
    dic, _ = trained
    preds = tmp_path / "pred"
    preds.write_text(pred_text)
    joined = tmp_path / "joined"
    r = run(runner, "svm2conll", "--dictionary", dic, snippet, preds, joined)
    assert r.exit_code == 2
    assert f"Error: {tmp_path}/{where}: {reason.format(conll=snippet)}" in r.stderr
    assert not joined.exists()


@pytest.mark.parametrize("text, line, reason", [
    ("He PRP B-NP\nrose VBD\n", 2, "expected 3 columns (word ... tag) as on line 1, found 2"),
    ("\nHe\n", 2, "expected at least 2 columns (word ... tag), found 1"),
    ("He PRP B-NP\n\nrose VBD B-VP x\n", 3, "expected 3 columns (word ... tag) as on line 1, found 4"),
])
def test_bad_conll_lines(runner, tmp_path, text, line, reason):
    src = tmp_path / "bad.conll"
    src.write_text(text)
    dic, out = tmp_path / "dict", tmp_path / "out"
    r = run(runner, "conll2svm", "--new-dictionary", dic, src, out)
    assert r.exit_code == 2
    assert f"Error: {src}:{line}: {reason}" in r.stderr
    assert not out.exists() and not dic.exists()


def test_test_file_must_have_the_dictionarys_columns(runner, trained, tmp_path):
    dic, _ = trained
    test = tmp_path / "test.conll"
    test.write_text("He B-NP\n")
    r = run(runner, "conll2svm", "--dictionary", dic, test, tmp_path / "o")
    assert r.exit_code == 2
    assert f"{test}:1: expected 3 columns (word ... tag) as in the dictionary, found 2" in r.stderr


def test_empty_input_is_an_error(runner, tmp_path):
    src = tmp_path / "empty"
    src.write_text("-DOCSTART- -X- O\n\n")
    r = run(runner, "conll2svm", "--new-dictionary", tmp_path / "d", src, tmp_path / "o")
    assert r.exit_code == 2 and f"{src}: no tokens" in r.stderr
    assert not (tmp_path / "d").exists() and not (tmp_path / "o").exists()


def _dictionary_text():
    return conll.dictionary_text(conll.Dictionary(3, conll.Settings(), ["B-NP", "O"],
                                                  ["bias", "w=He"]))


@pytest.mark.parametrize("edit, line, reason", [
    (lambda t: "svmlight\n" + t, 1, "not an svmtools conll dictionary"),
    (lambda t: t.replace("dictionary 1", "dictionary 2"), 1, "dictionary format version '2'"),
    (lambda t: t.replace("columns 3", "columns x"), 2, "columns: expected an integer >= 2, got 'x'"),
    (lambda t: t.replace("shape yes", "shape maybe"), 5, "shape: expected yes or no"),
    (lambda t: t.replace("window 1", "windows 1"), 8, "expected 'window VALUE'"),
    (lambda t: t.replace("column-window 2", "column-window x"), 9,
     "column-window: expected an integer >= 0, got 'x'"),
    (lambda t: t.replace("column-ngrams 2", "column-ngrams 0"), 10,
     "column-ngrams: expected an integer >= 1, got '0'"),
    (lambda t: t.replace("2 O", "3 O"), 16, "expected '2 NAME' (tags 2 of 2)"),
    (lambda t: t.replace("2 O", "2 B-NP"), 16, "tags: 'B-NP' appears twice"),
    (lambda t: t + "3 extra\n", 20, "unexpected text after the last feature"),
    (lambda t: t.replace("2 w=He\n", ""), None, "ends early: expected 2 features (got 1)"),
])
def test_malformed_dictionary(runner, snippet, tmp_path, edit, line, reason):
    dic = tmp_path / "dict"
    dic.write_text(edit(_dictionary_text()))
    where = f"{dic}:{line}" if line else f"{dic}"
    with pytest.raises(data.DataError) as e:
        conll.read_dictionary(str(dic))
    assert str(e.value).startswith(f"{where}: {reason}")
    out = tmp_path / "out"
    for args in (("conll2svm", "--dictionary", dic, snippet, out),
                 ("svm2conll", "--dictionary", dic, snippet, snippet, out)):
        r = run(runner, *args)
        assert r.exit_code == 2 and f"Error: {where}: {reason}" in r.stderr
        assert not out.exists()


def test_dictionary_round_trip(tmp_path):
    d = conll.Dictionary(4, conll.Settings(affix=2, window=0, lower=False, unit_length=True,
                                           min_count=5), ["B-NP", "O"], ["bias", "w=Zürich", "x"])
    path = tmp_path / "d"
    with open(path, "wb") as f:
        conll.write_dictionary(f, d)
    back = conll.read_dictionary(str(path))
    assert (back.columns, back.settings, back.tags, back.features) == \
        (d.columns, d.settings, d.tags, d.features)


def test_options_and_the_dictionary_guard(runner, trained, snippet, tmp_path):
    dic, _ = trained
    before = dic.read_bytes()
    out = tmp_path / "o"

    def fails(*args, says):
        r = run(runner, "conll2svm", *args)
        assert r.exit_code == 2, r.output
        assert says in r.stderr
        assert not out.exists()

    fails(snippet, out, says="give --new-dictionary FILE (for the training file) or --dictionary")
    fails("--new-dictionary", tmp_path / "n", "--dictionary", dic, snippet, out, says="not both")
    # the training dictionary is never overwritten by mistake
    fails("--new-dictionary", dic, snippet, out, says="file exists (refusing to overwrite")
    fails("--dictionary", dic, "--min-count", "2", snippet, out, says="--min-count goes with")
    fails("--dictionary", dic, "--force", snippet, out, says="--force goes with")
    fails("--new-dictionary", tmp_path / "n", "--unknown-tag-ok", snippet, out,
          says="--unknown-tag-ok goes with --dictionary")
    fails("--dictionary", dic, "--window", "2", snippet, out,
          says="the dictionary was made with window 1, not 2")
    fails("--dictionary", dic, "--no-bias", snippet, out,
          says="the dictionary was made with bias yes, not no")
    fails("--new-dictionary", out, snippet, out, says="OUTPUT and the dictionary must be different")
    assert dic.read_bytes() == before
    # the recorded options may be repeated; --force replaces
    r = run(runner, "conll2svm", "--dictionary", dic, "--affix", "1", snippet, out)
    assert r.exit_code == 0, r.output
    r = run(runner, "conll2svm", "--new-dictionary", dic, "--force", snippet, out)
    assert r.exit_code == 0, r.output
    assert conll.read_dictionary(str(dic)).settings.affix == 3


def test_min_count_keeps_frequent_features_in_first_seen_order(runner, snippet, tmp_path, trained):
    full_dic, full_out = trained
    dic, out = tmp_path / "d2", tmp_path / "o2"
    r = run(runner, "conll2svm", "--affix", "1", *LEGACY, "--min-count", "2", "--new-dictionary",
            dic, snippet, out)
    assert r.exit_code == 0, r.output
    full, pruned = conll.read_dictionary(str(full_dic)), conll.read_dictionary(str(dic))
    counts = {}
    for line in lines(full_out):
        for item in line.split()[2:]:
            name = full.features[int(item.split(":")[0]) - 1]
            counts[name] = counts.get(name, 0) + 1
    assert pruned.features == [f for f in full.features if counts[f] >= 2]
    assert pruned.settings.min_count == 2
    for a, b in zip(lines(full_out), lines(out)):
        names_a = {full.features[int(x.split(":")[0]) - 1] for x in a.split()[2:]}
        names_b = [pruned.features[int(x.split(":")[0]) - 1] for x in b.split()[2:]]
        assert a.split()[:2] == b.split()[:2]
        assert set(names_b) == {n for n in names_a if counts[n] >= 2}


def test_unit_length(runner, snippet, tmp_path):
    dic, out = tmp_path / "d", tmp_path / "o"
    r = run(runner, "conll2svm", "--unit-length", "--affix", "1", *LEGACY, "--new-dictionary", dic,
            snippet, out)
    assert r.exit_code == 0, r.output
    for line, expected in zip(lines(out), SNIPPET_SVM):
        items = line.split()[2:]
        assert [x.split(":")[0] for x in items] == [x.split(":")[0] for x in expected.split()[2:]]
        values = [float(x.split(":")[1]) for x in items]
        assert math.isclose(sum(v * v for v in values), 1.0)
        assert len(set(values)) == 1


def test_compressed_and_standard_input(runner, snippet, trained, tmp_path):
    dic, out = trained
    gz = tmp_path / "train.conll.gz"
    gz.write_bytes(gzip.compress(SNIPPET.encode()))
    r = run(runner, "conll2svm", "--dictionary", dic, gz, "-")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == SNIPPET_SVM
    r = run(runner, "conll2svm", "--dictionary", dic, "-", "-", input=SNIPPET)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == SNIPPET_SVM


def test_windows_line_ends_and_non_utf8_bytes(runner, tmp_path):
    src = tmp_path / "crlf"
    src.write_bytes(b"Z\xfcrich NNP B-NP\r\nis VBZ B-VP\r\n\r\n")
    dic, out = tmp_path / "d", tmp_path / "o"
    r = run(runner, "conll2svm", "--new-dictionary", dic, src, out)
    assert r.exit_code == 0, r.output
    assert b"w=Z\xfcrich" in dic.read_bytes()
    assert [line.split()[:2] for line in lines(out)] == [["1", "qid:1"], ["2", "qid:1"]]
    preds = tmp_path / "p"
    preds.write_text("2\n1\n")
    joined = tmp_path / "j"
    r = run(runner, "svm2conll", "--dictionary", dic, src, preds, joined)
    assert r.exit_code == 0, r.output
    assert joined.read_bytes() == b"Z\xfcrich NNP B-NP B-VP\nis VBZ B-VP B-NP\n\n"


def test_real_conll2000(runner, shared, tmp_path):
    train, test = shared("conll2000/train.txt.xz"), shared("conll2000/test.txt.xz")
    dic, train_svm, test_svm = tmp_path / "dict", tmp_path / "train.svm", tmp_path / "test.svm"
    r = run(runner, "conll2svm", "--new-dictionary", dic, train, train_svm)
    assert r.exit_code == 0, r.output
    tags = {line.split()[-1] for line in open(train) if line.strip()}
    block = data.load(str(train_svm))
    assert block.n_rows == 211_727
    assert len(np.unique(block.qid)) == 8_936
    assert np.all(np.diff(block.qid) >= 0) and block.qid[0] == 1 and block.qid[-1] == 8_936
    assert set(np.unique(block.target).tolist()) == set(range(1, len(tags) + 1))
    assert len(tags) == 22

    # the official test file has a tag (I-LST, 2 tokens) that the training file lacks
    r = run(runner, "conll2svm", "--dictionary", dic, test, test_svm)
    assert r.exit_code == 2 and "tag 'I-LST' is not in the dictionary" in r.stderr
    assert not test_svm.exists()
    r = run(runner, "conll2svm", "--dictionary", dic, "--unknown-tag-ok", test, test_svm)
    assert r.exit_code == 0, r.output
    tblock = data.load(str(test_svm))
    assert tblock.n_rows == 47_377 and len(np.unique(tblock.qid)) == 2_012
    assert int(np.sum(tblock.target == 0)) == 2

    # gold tags as predictions: svm2conll gives back the gold column
    preds = tmp_path / "pred"
    preds.write_text("".join(f"{int(t)}\n" for t in block.target))
    joined = tmp_path / "joined"
    r = run(runner, "svm2conll", "--dictionary", dic, train, preds, joined)
    assert r.exit_code == 0, r.output
    with open(joined) as f:
        for line in f:
            cols = line.split()
            assert not cols or cols[-1] == cols[-2]


# ---------------------------------------------------------------------------------------------
# CoNLL-U (Universal Dependencies)

# a comment block, a multiword token (3-4), an empty node (5.1) and a FORM with a space
CONLLU = (
    "# newdoc id = d1\n"
    "# sent_id = 1\n"
    "# text = I can't go\n"
    "1\tI\tI\tPRON\tPRP\tCase=Nom\t3\tnsubj\t3:nsubj\t_\n"
    "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tca\tcan\tAUX\tMD\t_\t4\taux\t4:aux\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_\n"
    "4\tgo\tgo\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No\n"
    "4.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t4:conj\t_\n"
    "\n"
    "# sent_id = 2\n"
    "1\tNew York\tNew York\tPROPN\tNNP\t_\t0\troot\t0:root\t_\n"
    "\n"
)


@pytest.fixture
def conllu(tmp_path):
    path = tmp_path / "train.conllu"
    path.write_text(CONLLU)
    return path


def test_conllu_skips_comments_multiword_tokens_and_empty_nodes(runner, conllu, tmp_path):
    dic, out = tmp_path / "d", tmp_path / "o"
    r = run(runner, "conll2svm", "--affix", "0", "--window", "0", "--new-dictionary", dic,
            conllu, out)
    assert r.exit_code == 0, r.output
    assert "2 sentences, 5 tokens, 5 tags" in r.output
    d = conll.read_dictionary(str(dic))
    assert d.tags == ["PRON", "AUX", "PART", "VERB", "PROPN"]
    assert d.layout == conll.Layout("conllu", "UPOS", ())
    assert "w=New_York" in d.features and not any("gone" in f for f in d.features)
    assert [line.split()[:2] for line in lines(out)] == [
        ["1", "qid:1"], ["2", "qid:1"], ["3", "qid:1"], ["4", "qid:1"], ["5", "qid:2"]]
    assert lines(dic)[2:5] == ["format conllu", "tag-column UPOS", "feature-columns -"]


def test_conllu_tag_and_feature_columns_by_name(runner, conllu, tmp_path):
    dic, out = tmp_path / "d", tmp_path / "o"
    r = run(runner, "conll2svm", "--tag-column", "xpos", "--feature-columns", "LEMMA,5",
            "--new-dictionary", dic, conllu, out)
    assert r.exit_code == 2 and "feature column XPOS is the tag column" in r.output
    r = run(runner, "conll2svm", "--tag-column", "xpos", "--feature-columns", "LEMMA,upos",
            "--column-window", "1", "--new-dictionary", dic, conllu, out)
    assert r.exit_code == 0, r.output
    d = conll.read_dictionary(str(dic))
    assert d.tags == ["PRP", "MD", "RB", "VB", "NNP"]
    assert d.layout == conll.Layout("conllu", "XPOS", ("LEMMA", "UPOS"))
    assert d.columns == 4
    for name in ("lemma=can", "upos=AUX", "upos[-1]=PRON", "lemma[+1]=not",
                 "upos[-1:+0]=PRON|AUX", "lemma=New_York"):
        assert name in d.features, name
    # the test file is read as the dictionary says; other columns on the command line are refused
    again = tmp_path / "again"
    assert run(runner, "conll2svm", "--dictionary", dic, conllu, again).exit_code == 0
    assert lines(again) == lines(out)
    r = run(runner, "conll2svm", "--dictionary", dic, "--tag-column", "UPOS", conllu, again)
    assert r.exit_code == 2 and "tag column XPOS" in r.output


def test_svm2conll_writes_conllu_back_with_every_line_kept(runner, conllu, tmp_path):
    dic, out = tmp_path / "d", tmp_path / "o"
    assert run(runner, "conll2svm", "--new-dictionary", dic, conllu, out).exit_code == 0
    # gold tags as predictions give back the file itself, byte for byte
    gold = tmp_path / "gold"
    gold.write_text("".join(line.split()[0] + "\n" for line in lines(out)))
    back = tmp_path / "back.conllu"
    r = run(runner, "svm2conll", "--dictionary", dic, conllu, gold, back)
    assert r.exit_code == 0, r.output
    assert back.read_text() == CONLLU
    # other predictions replace the UPOS column only
    pred = tmp_path / "pred"
    pred.write_text("4\n4\n4\n4\n4\n")
    assert run(runner, "svm2conll", "--dictionary", dic, conllu, pred, back).exit_code == 0
    got = lines(back)
    assert got[3] == "1\tI\tI\tVERB\tPRP\tCase=Nom\t3\tnsubj\t3:nsubj\t_"
    assert got[4] == "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_"
    assert got[8] == "4.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t4:conj\t_"
    assert got[:3] == CONLLU.splitlines()[:3]


@pytest.mark.parametrize("text,line,reason", [
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\n", 1, "expected 10 tab-separated columns"),
    ("1 I I PRON PRP _ 0 root _ _\n", 1, "expected 10 tab-separated columns"),
    ("# c\nx\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\n", 2, "ID: expected a word number"),
])
def test_bad_conllu_lines(runner, tmp_path, text, line, reason):
    src = tmp_path / "bad.conllu"
    src.write_text(text)
    out = tmp_path / "o"
    r = run(runner, "conll2svm", "--new-dictionary", tmp_path / "d", src, out)
    assert r.exit_code == 2
    assert f"{src}:{line}: {reason}" in r.output
    assert not out.exists() and not (tmp_path / "d").exists()


@pytest.mark.parametrize("args,message", [
    (["--tag-column", "FORM"], "the tag column cannot be FORM"),
    (["--tag-column", "POS"], "'POS' is not a CoNLL-U column"),
    (["--feature-columns", "FORM"], "FORM is always read"),
    (["--format", "conll", "--tag-column", "UPOS"], "for CoNLL-U files"),
])
def test_conllu_option_errors(runner, conllu, tmp_path, args, message):
    r = run(runner, "conll2svm", *args, "--new-dictionary", tmp_path / "d", conllu, tmp_path / "o")
    assert r.exit_code == 2 and message in r.output


def test_conllu_format_chosen_by_name_or_option(runner, tmp_path):
    plain = tmp_path / "plain.txt"      # a CoNLL-U file without the .conllu name
    plain.write_text(CONLLU)
    r = run(runner, "conll2svm", "--new-dictionary", tmp_path / "d", plain, tmp_path / "o")
    assert r.exit_code == 2           # read as CoNLL columns: the comment line has 5 columns
    r = run(runner, "conll2svm", "--format", "conllu", "--new-dictionary", tmp_path / "d", plain,
            tmp_path / "o")
    assert r.exit_code == 0, r.output
    xz = tmp_path / "t.conllu.xz"
    import lzma
    xz.write_bytes(lzma.compress(CONLLU.encode()))
    r = run(runner, "conll2svm", "--new-dictionary", tmp_path / "d2", xz, tmp_path / "o2")
    assert r.exit_code == 0, r.output
    assert lines(tmp_path / "o2") == lines(tmp_path / "o")


def test_real_ud_english_ewt(runner, shared, tmp_path):
    train, test = (shared("ud_english_ewt/en_ewt-ud-train.conllu.xz"),
                   shared("ud_english_ewt/en_ewt-ud-test.conllu.xz"))
    # shared() names its copies without .conllu: the format is given
    dic, train_svm, test_svm = tmp_path / "dict", tmp_path / "train.svm", tmp_path / "test.svm"
    r = run(runner, "conll2svm", "--format", "conllu", "--new-dictionary", dic, train, train_svm)
    assert r.exit_code == 0, r.output
    block = data.load(str(train_svm))
    assert block.n_rows == 204_577 and len(np.unique(block.qid)) == 12_544   # SOURCES.md's counts
    assert len(conll.read_dictionary(str(dic)).tags) == 17                   # the UPOS tag set
    r = run(runner, "conll2svm", "--dictionary", dic, test, test_svm)
    assert r.exit_code == 0, r.output
    tblock = data.load(str(test_svm))
    assert tblock.n_rows == 25_094 and len(np.unique(tblock.qid)) == 2_077
    preds = tmp_path / "pred"
    preds.write_text("".join(f"{int(t)}\n" for t in tblock.target))
    back = tmp_path / "back"
    r = run(runner, "svm2conll", "--dictionary", dic, test, preds, back)
    assert r.exit_code == 0, r.output
    assert back.read_bytes() == open(test, "rb").read()
