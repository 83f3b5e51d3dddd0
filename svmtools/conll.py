"""svmtools conll2svm / svm2conll: CoNLL and CoNLL-U files to and from the sequence task's files.

CoNLL column files (CoNLL-2000 chunking, CoNLL-2003 NER, ...) hold one token per line,

    word [column ...] tag

whitespace-separated, a blank line after each sentence; the last column is the tag and
``-DOCSTART-`` lines are skipped. ``conll2svm`` writes one svmlight line per token, as the sequence
task (and SVM-hmm) reads them:

    TAG qid:SENTENCE index:value ...

TAG is the tag's number 1..K, SENTENCE numbers the sentences from 1 in file order, and the features
(binary indicators, or scaled to unit length per token) are sorted by their 1-based index. Tag and
feature numbers come from a *dictionary*: built from the training file and written with
``--new-dictionary FILE`` (which never replaces an existing file unless ``--force``), then read,
never written, with ``--dictionary FILE`` for every other file, so all of them are numbered alike:
unknown features are dropped, an unknown tag is an error (``--unknown-tag-ok``: written as 0, which
no model predicts; the CoNLL-2000 test file has two I-LST tokens, a tag its training file lacks).
The dictionary also records the feature options, so a test file cannot be featurised differently
by mistake. ``svm2conll`` joins predicted tag numbers back onto the CoNLL file as tag names (a new
last column), ready for conlleval.

Dictionary file (plain UTF-8 text; nothing in it is executed):

    svmtools-conll-dictionary 1       format name and version
    columns 3                         columns of the CoNLL files (word ... tag)
    word yes                          the feature options, one `key value` line each, in this order:
    lower yes                           word lower shape affix other-columns window column-window
    shape yes                           column-ngrams bias unit-length min-count (yes/no or a number;
    affix 3                             a dictionary without the column-window and column-ngrams
    other-columns yes                   lines, written before they existed, reads as column-window =
    window 1                            window, column-ngrams 1: the features it was made with)
    column-window 2
    column-ngrams 2
    bias yes
    unit-length no
    min-count 1
    tags 22                           K, then K lines `number name`, numbered 1..K
    1 B-NP
    ...
    features 317989                   F, then F lines `index name`, indexed 1..F
    1 bias
    2 w=Confidence
    ...

Feature names: ``bias``; ``w=`` the word, ``lower=`` it lowercased, ``shape=`` its shape (upper-case
letters X, other letters x, digits d, anything else itself, runs collapsed: Xx, d,d, x-x),
``pre3=`` / ``suf3=`` its prefixes and suffixes of 1..N characters (as written), ``col2=`` the value
of column 2 (each column between the word and the tag); a neighbour's features carry its relative
position, ``w[-1]=``, ``lower[+1]=``, ``col2[-2]=``, ``shape[+1]=``, and ``bos[-1]`` / ``eos[+1]``
stand for a position outside the sentence. The columns reach ``--column-window`` tokens either side
(the word features ``--window``), and ``--column-ngrams N`` adds the n-grams of 2..N consecutive values
of a column inside that window, ``col2[-1:+0]=DT|NN`` (``<s>`` / ``</s>`` outside the sentence): the
POS window and POS bigrams of CoNLL-2000 chunkers (Kudo and Matsumoto 2001; CRF++'s example
template), worth +0.26 points of token accuracy on a held-out part of the training file
(bench/README.md, tasks).

CoNLL-U files (Universal Dependencies: ten tab-separated columns ID FORM LEMMA UPOS XPOS FEATS
HEAD DEPREL DEPS MISC, ``#`` comment lines, multiword tokens ``n-m`` and empty nodes ``n.k``) are
read directly with ``--format conllu`` (the default for a file named ``*.conllu``): each word line
is *projected* onto the column-file shape, FORM, the ``--feature-columns``, the ``--tag-column``
(UPOS by default), so the encoder, the feature options and the dictionary are the same; a
projected column's features are named after it (``lemma=``, ``xpos[-1]=``) rather than ``colK=``.
Comments, multiword tokens and empty nodes are no words of the sentence (they neither count as
tokens nor end a sentence), and svm2conll copies them back unchanged while writing the predicted
tag into the tag column, so its output is CoNLL-U again. The dictionary records the projection
in three lines after ``columns`` (``format conllu``, ``tag-column UPOS``, ``feature-columns
LEMMA,XPOS`` or ``-``); a column file's dictionary has none, as before they existed.

Files are read as UTF-8; bytes that are not UTF-8 pass through unchanged (surrogateescape).
"""
from __future__ import annotations

import gzip
import lzma
import math
import os
import zlib
from dataclasses import dataclass, fields
from typing import Iterator, Optional

import click

from svmtrain.cli.options import InputError, data_path, quiet_option, user_errors
from svmtrain.data import DataError, open_input

__all__ = ["Settings", "Layout", "Dictionary", "read_dictionary", "write_dictionary", "Encoder",
           "read_conll", "read_conllu", "shape", "conll2svm", "svm2conll"]

MAGIC = "svmtools-conll-dictionary"
VERSION = 1
DOCSTART = "-DOCSTART-"
#: The ten columns of a CoNLL-U file (Universal Dependencies), in order.
CONLLU_COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
_COMPRESSED = (".gz", ".bz2", ".xz")
_DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)


# ---------------------------------------------------------------------------------------------
# settings and the dictionary


@dataclass(frozen=True)
class Settings:
    """How tokens become features; recorded in the dictionary so every file is featurised alike.
    Field names are the dictionary keys (with '-' for '_') and the option names."""

    word: bool = True
    lower: bool = True
    shape: bool = True
    affix: int = 3
    other_columns: bool = True
    window: int = 1
    column_window: int = 2
    column_ngrams: int = 2
    bias: bool = True
    unit_length: bool = False
    min_count: int = 1

    @staticmethod
    def key(name: str) -> str:
        return name.replace("_", "-")


@dataclass(frozen=True)
class Layout:
    """Which columns of the input are the word, the features and the tag.

    A CoNLL column file (``format="conll"``) is used as it is: the first column is the word, the
    last the tag, every column between them a feature column. A CoNLL-U file is *projected* onto
    that shape, token by token: FORM, then `feature_columns` (CoNLL-U names, in the order given),
    then `tag_column`; so one encoder, one feature naming and one svm2conll serve both formats.
    The projection is recorded in the dictionary (lines ``format``, ``tag-column``,
    ``feature-columns``) so that every file of a task is read alike.
    """

    format: str = "conll"
    tag_column: str = "UPOS"
    feature_columns: tuple = ()

    @property
    def conllu(self) -> bool:
        return self.format == "conllu"

    @property
    def columns(self) -> int:
        """Columns of the projected token lines (word, features..., tag)."""
        return 2 + len(self.feature_columns)

    def column_names(self, columns: int) -> list:
        """The feature-name stem of each projected column (index 0 is the word, never used)."""
        if self.conllu:
            return ["form"] + [c.lower() for c in self.feature_columns] + [self.tag_column.lower()]
        return [f"col{c + 1}" for c in range(columns)]


CONLL = Layout()


def conllu_column(name: str) -> str:
    """A CoNLL-U column given by name (any case) or 1-based number, as its upper-case name."""
    text = name.strip()
    if text.isdigit() and 1 <= int(text) <= len(CONLLU_COLUMNS):
        return CONLLU_COLUMNS[int(text) - 1]
    if text.upper() in CONLLU_COLUMNS:
        return text.upper()
    raise ValueError(f"{name!r} is not a CoNLL-U column (one of {' '.join(CONLLU_COLUMNS)}, "
                     f"or its number 1-10)")


@dataclass
class Dictionary:
    """Tag names and feature names, each numbered from 1 in first-seen order."""

    columns: int
    settings: Settings
    tags: list
    features: list
    layout: Layout = CONLL

    def __post_init__(self):
        self.tag_index = {t: i for i, t in enumerate(self.tags, 1)}
        self.feature_index = {f: i for i, f in enumerate(self.features, 1)}


def _format_value(v) -> str:
    return ("yes" if v else "no") if isinstance(v, bool) else str(v)


def dictionary_text(d: Dictionary) -> str:
    lines = [f"{MAGIC} {VERSION}", f"columns {d.columns}"]
    if d.layout.conllu:   # a CoNLL column file's dictionary has no layout lines (as before them)
        lines += ["format conllu", f"tag-column {d.layout.tag_column}",
                  "feature-columns " + (",".join(d.layout.feature_columns) or "-")]
    lines += [f"{Settings.key(f.name)} {_format_value(getattr(d.settings, f.name))}"
              for f in fields(Settings)]
    lines.append(f"tags {len(d.tags)}")
    lines += [f"{i} {t}" for i, t in enumerate(d.tags, 1)]
    lines.append(f"features {len(d.features)}")
    lines += [f"{i} {f}" for i, f in enumerate(d.features, 1)]
    return "\n".join(lines) + "\n"


def write_dictionary(f, d: Dictionary) -> None:
    """Write to a binary file object (names keep any non-UTF-8 bytes of the input)."""
    f.write(dictionary_text(d).encode("utf-8", "surrogateescape"))


# The widest --window / --column-window: every token gets a feature per offset (bos[-k] past the
# sentence's start), so a window far beyond any sentence only costs memory (1e11 was killed).
MAX_WINDOW = 100


# Options newer than the dictionary format, and the value that reproduces the features of a
# dictionary written without them (the other columns then shared the word window, unigrams only).
_LEGACY = {"column_window": lambda values: values["window"], "column_ngrams": lambda values: 1}


def read_dictionary(path: str) -> Dictionary:
    """Read a dictionary file; DataError(path, line, reason) for anything malformed."""
    with open_input(path) as f:
        lines = _decoded_lines(path, f)

        pushed = []      # a line read ahead and given back

        def take(what):
            if pushed:
                return pushed.pop()
            try:
                return next(lines)
            except StopIteration:
                raise DataError(path, None, f"ends early: expected {what}") from None

        lineno, text = take(f"'{MAGIC} {VERSION}'")
        head = text.split()
        if len(head) != 2 or head[0] != MAGIC:
            raise DataError(path, lineno, f"not an svmtools conll dictionary (the first line should "
                                          f"be '{MAGIC} {VERSION}')")
        if head[1] != str(VERSION):
            raise DataError(path, lineno, f"dictionary format version {head[1]!r}, but this "
                                          f"svmtools reads version {VERSION}")

        def number(lineno, key, value, low):
            try:
                n = int(value)
            except ValueError:
                n = None
            if n is None or n < low or not (value.isascii() and value.isdigit()):
                raise DataError(path, lineno, f"{key}: expected an integer >= {low}, got {value!r}")
            if key in ("window", "column-window") and n > MAX_WINDOW:
                raise DataError(path, lineno, f"{key}: at most {MAX_WINDOW}, got {n}")
            return n

        def keyed(key, low=0, parse=None):
            lineno, text = take(f"'{key} ...'")
            parts = text.split()
            if len(parts) != 2 or parts[0] != key:
                raise DataError(path, lineno, f"expected '{key} VALUE', got {text.strip()!r}")
            if parse is bool:
                if parts[1] not in ("yes", "no"):
                    raise DataError(path, lineno, f"{key}: expected yes or no, got {parts[1]!r}")
                return parts[1] == "yes"
            return number(lineno, key, parts[1], low)

        columns = keyed("columns", low=2)
        layout = CONLL
        lineno, text = take("'word ...'")
        pushed.append((lineno, text))
        if text.split()[:1] == ["format"]:
            layout = _read_layout(path, take, columns)
        values = {}
        for fld in fields(Settings):
            if fld.name in _LEGACY:
                # absent from dictionaries written before the option existed: the features
                # those were made with
                lineno, text = take(f"'{Settings.key(fld.name)} ...'")
                pushed.append((lineno, text))
                if text.split()[:1] != [Settings.key(fld.name)]:
                    values[fld.name] = _LEGACY[fld.name](values)
                    continue
            low = 1 if fld.name in ("min_count", "column_ngrams") else 0
            values[fld.name] = keyed(Settings.key(fld.name), low=low,
                                     parse=bool if fld.type in (bool, "bool") else None)
        settings = Settings(**values)

        def names(section):
            n = keyed(section)
            out, seen = [], set()
            for k in range(1, n + 1):
                lineno, text = take(f"{n} {section} (got {k - 1})")
                parts = text.split()
                if len(parts) != 2 or parts[0] != str(k):
                    raise DataError(path, lineno, f"expected '{k} NAME' ({section} {k} of {n}), "
                                                  f"got {text.strip()!r}")
                if parts[1] in seen:
                    raise DataError(path, lineno, f"{section}: {parts[1]!r} appears twice")
                seen.add(parts[1])
                out.append(parts[1])
            return out

        tags = names("tags")
        features = names("features")
        for lineno, text in lines:
            raise DataError(path, lineno, f"unexpected text after the last feature: "
                                          f"{text.strip()[:40]!r}")
    return Dictionary(columns, settings, tags, features, layout)


def _read_layout(path, take, columns) -> Layout:
    """The lines `format conllu`, `tag-column NAME`, `feature-columns A,B | -` of a dictionary."""
    got = {}
    for key in ("format", "tag-column", "feature-columns"):
        lineno, text = take(f"'{key} ...'")
        parts = text.split()
        if len(parts) != 2 or parts[0] != key:
            raise DataError(path, lineno, f"expected '{key} VALUE', got {text.strip()!r}")
        got[key] = (lineno, parts[1])
    lineno, fmt = got["format"]
    if fmt != "conllu":
        raise DataError(path, lineno, f"format: expected conllu, got {fmt!r}")
    try:
        lineno, tag = got["tag-column"]
        tag = conllu_column(tag)
        lineno, names = got["feature-columns"]
        feats = () if names == "-" else tuple(conllu_column(c) for c in names.split(","))
        layout = Layout("conllu", tag, feats)
        layout_problem(layout)
    except ValueError as e:
        raise DataError(path, lineno, str(e)) from None
    if layout.columns != columns:
        raise DataError(path, lineno, f"{len(feats)} feature columns and a tag make "
                                      f"{layout.columns} columns, but the dictionary says {columns}")
    return layout


def layout_problem(layout: Layout) -> None:
    """ValueError when a CoNLL-U layout reads a column twice or reads ID / FORM as a feature."""
    seen = {"ID", "FORM"}
    if layout.tag_column in seen:
        raise ValueError(f"the tag column cannot be {layout.tag_column}")
    seen.add(layout.tag_column)
    for c in layout.feature_columns:
        if c in seen:
            what = "the tag column" if c == layout.tag_column else (
                "always read (the word)" if c == "FORM" else "not a feature" if c == "ID"
                else "given twice")
            raise ValueError(f"feature column {c} is {what}")
        seen.add(c)


# ---------------------------------------------------------------------------------------------
# reading CoNLL files


def _decoded_lines(path: str, f) -> Iterator:
    """(line number, text without its line end) for every line of a binary stream."""
    lineno = 0
    try:
        for raw in f:
            lineno += 1
            yield lineno, raw.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
    except _DECOMPRESS_ERRORS as e:
        raise DataError(path, None, f"cannot decompress: {e}") from None
    except OSError as e:
        raise DataError(path, None, f"cannot read: {e.strerror or e}") from None


@dataclass
class Line:
    number: int
    text: str              # the line without its line end
    fields: Optional[list]  # the columns of a token line (word, feature columns..., tag); else None
    ends_sentence: bool = True  # for a line that is not a token: a blank or -DOCSTART- line ends
                                # the sentence; a CoNLL-U comment, multiword token or empty node
                                # is kept on the way back but neither a token nor a break


def read_conll(path: str, columns: Optional[int] = None) -> Iterator[Line]:
    """Every line of a CoNLL file; a token line must have `columns` fields (default: as many as the
    first token line, at least 2)."""
    with open_input(path) as f:
        first = None
        for lineno, text in _decoded_lines(path, f):
            cols = text.split()
            if not cols or cols[0] == DOCSTART:
                yield Line(lineno, text, None)
                continue
            if columns is None:
                if len(cols) < 2:
                    raise DataError(path, lineno, f"expected at least 2 columns (word ... tag), "
                                                  f"found {len(cols)}")
                columns, first = len(cols), lineno
            elif len(cols) != columns:
                where = f"as on line {first}" if first else "as in the dictionary"
                raise DataError(path, lineno, f"expected {columns} columns (word ... tag) {where}, "
                                              f"found {len(cols)}")
            yield Line(lineno, text, cols)


def read_conllu(path: str, layout: Layout) -> Iterator[Line]:
    """Every line of a CoNLL-U file; a word line's fields are projected as `layout` says.

    Comment lines (``#``), multiword tokens (ID ``n-m``) and empty nodes (ID ``n.k``) are not words
    of the sentence: they come as lines without fields that do not end it, so svm2conll can copy
    them back. A value's inner spaces (FORM may have them) become ``_``: names in the dictionary
    are whitespace-free.
    """
    take = ([1] + [CONLLU_COLUMNS.index(c) for c in layout.feature_columns]
            + [CONLLU_COLUMNS.index(layout.tag_column)])
    with open_input(path) as f:
        for lineno, text in _decoded_lines(path, f):
            if not text.strip():
                yield Line(lineno, text, None)
                continue
            if text.startswith("#"):
                yield Line(lineno, text, None, ends_sentence=False)
                continue
            cols = text.split("\t")
            if len(cols) != len(CONLLU_COLUMNS):
                raise DataError(path, lineno, f"expected 10 tab-separated columns (CoNLL-U: "
                                              f"{' '.join(CONLLU_COLUMNS)}), found {len(cols)}")
            word_id = cols[0]
            if word_id.isascii() and word_id.isdigit():
                yield Line(lineno, text, [_value(cols[k]) for k in take])
            elif _is_span_or_empty(word_id):
                yield Line(lineno, text, None, ends_sentence=False)
            else:
                raise DataError(path, lineno, f"ID: expected a word number, a multiword range "
                                              f"n-m or an empty node n.k, got {word_id[:20]!r}")


def _is_span_or_empty(word_id: str) -> bool:
    for sep in ("-", "."):
        a, found, b = word_id.partition(sep)
        if found and a.isascii() and a.isdigit() and b.isascii() and b.isdigit():
            return True
    return False


def _value(text: str) -> str:
    return "_".join(text.split()) or "_"


def is_conllu_name(path: str) -> bool:
    """A file named *.conllu (compressed or not) is read as CoNLL-U unless told otherwise."""
    name = os.path.basename(path)
    for ext in _COMPRESSED:
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name.endswith(".conllu")


def read_lines(path: str, layout: Layout, columns: Optional[int] = None) -> Iterator[Line]:
    """The lines of a file in either format."""
    return read_conllu(path, layout) if layout.conllu else read_conll(path, columns)


def sentences(lines: Iterator[Line]) -> Iterator[list]:
    """Token lines grouped into sentences (blank and -DOCSTART- lines end a sentence)."""
    sentence = []
    for line in lines:
        if line.fields is None:
            if line.ends_sentence and sentence:
                yield sentence
                sentence = []
        else:
            sentence.append(line)
    if sentence:
        yield sentence


# ---------------------------------------------------------------------------------------------
# features


def shape(word: str) -> str:
    """Upper-case letters X, other letters x, digits d, anything else itself; runs collapsed."""
    out = []
    prev = ""
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if c != prev:
            out.append(c)
            prev = c
    return "".join(out)


class Encoder:
    """Feature and tag numbers for the tokens of a sentence.

    With `frozen`, numbers come from the dictionary and unknown features are dropped (counted in
    `dropped`); otherwise new names get the next number (first-seen order) and `counts[i]` counts the
    tokens on which feature i is on. Feature names are made once per word type (cached).
    """

    def __init__(self, columns: int, settings: Settings, dictionary: Optional[Dictionary] = None,
                 unknown_tag_ok: bool = False, layout: Layout = CONLL):
        self.columns = columns
        self.layout = layout
        self.column_names = layout.column_names(columns)
        self.unknown_tag_ok = unknown_tag_ok
        self.unknown_tags = 0      # tokens whose tag a frozen dictionary lacks (written as 0)
        self.s = settings
        self.frozen = dictionary is not None
        self.tags = list(dictionary.tags) if dictionary else []
        self.tag_index = dict(dictionary.tag_index) if dictionary else {}
        self.features = list(dictionary.features) if dictionary else []
        self.feature_index = dict(dictionary.feature_index) if dictionary else {}
        self.counts = [0] * (len(self.features) + 1)
        self.dropped = 0           # feature occurrences not in a frozen dictionary
        self.occurrences = 0       # feature occurrences written
        self._cache = {}
        # the token itself, then its neighbours left to right (the first-seen order of the numbers)
        w = max(settings.window, settings.column_window)
        self._offsets = [0] + [d for d in range(-w, w + 1) if d]

    def _ids(self, key, make):
        """(feature numbers, number unknown) of the names make() gives, cached under key."""
        got = self._cache.get(key)
        if got is None:
            names = make()
            if self.frozen:
                index = self.feature_index
                ids = tuple(index[n] for n in names if n in index)
                got = (ids, len(names) - len(ids))
            else:
                index = self.feature_index
                ids = []
                for n in names:
                    i = index.get(n)
                    if i is None:
                        self.features.append(n)
                        self.counts.append(0)
                        i = index[n] = len(self.features)
                    ids.append(i)
                got = (tuple(ids), 0)
            self._cache[key] = got
        return got

    def _word_names(self, word, d):
        s, at = self.s, "" if d == 0 else f"[{d:+d}]"
        names = []
        if s.word:
            names.append(f"w{at}={word}")
        if s.lower:
            names.append(f"lower{at}={word.lower()}")
        if s.shape:
            names.append(f"shape{at}={shape(word)}")
        if d == 0:
            for k in range(1, min(s.affix, len(word)) + 1):
                names.append(f"pre{k}={word[:k]}")
            for k in range(1, min(s.affix, len(word)) + 1):
                names.append(f"suf{k}={word[-k:]}")
        return names

    def tag(self, path: str, line: Line) -> int:
        name = line.fields[-1]
        i = self.tag_index.get(name)
        if i is None:
            if self.frozen:
                if self.unknown_tag_ok:
                    self.unknown_tags += 1
                    return 0
                raise DataError(path, line.number, f"tag {name!r} is not in the dictionary "
                                                   f"(its {len(self.tags)} tags come from the "
                                                   f"training file; --unknown-tag-ok writes 0)")
            self.tags.append(name)
            i = self.tag_index[name] = len(self.tags)
        return i

    def sentence(self, path: str, tokens: list) -> list:
        """[(tag number, sorted feature numbers)] for the token lines of one sentence."""
        n = len(tokens)
        s = self.s
        other = range(1, self.columns - 1) if s.other_columns else ()
        words = [t.fields[0] for t in tokens]
        names = self.column_names

        def outside(j, d):
            return self._ids(("out", d), lambda: [f"bos[{d}]" if d < 0 else f"eos[+{d}]"])

        def word_at(j, d):
            """the word features position j contributes to a token d away"""
            if not 0 <= j < n:
                return outside(j, d)
            word = words[j]
            return self._ids(("w", word, d), lambda: self._word_names(word, d))

        def column_at(j, d, c):
            if not 0 <= j < n:
                return outside(j, d) if abs(d) > s.window else ((), 0)  # once per offset
            value = tokens[j].fields[c]
            at_d = "" if d == 0 else f"[{d:+d}]"
            return self._ids(("c", c, value, d), lambda: [f"{names[c]}{at_d}={value}"])

        def column_gram(i, d, size, c):
            """column c's values at i + d .. i + d + size - 1 as one feature (<s>, </s> outside)"""
            values = tuple(tokens[j].fields[c] if 0 <= j < n else ("<s>" if j < 0 else "</s>")
                           for j in range(i + d, i + d + size))
            span = f"[{d:+d}:{d + size - 1:+d}]"
            return self._ids(("g", c, values, d),
                             lambda: [f"{names[c]}{span}=" + "|".join(values)])

        out = []
        bias = s.bias
        cw = s.column_window
        for i, token in enumerate(tokens):
            ids, unknown = self._ids(("bias",), lambda: ["bias"]) if bias else ((), 0)
            for d in self._offsets:
                if abs(d) <= s.window:
                    more, u = word_at(i + d, d)
                    ids, unknown = ids + more, unknown + u
                if abs(d) <= cw:
                    for c in other:
                        more, u = column_at(i + d, d, c)
                        ids, unknown = ids + more, unknown + u
            # n-grams of the other columns inside their window (CoNLL-2000 chunkers' POS bigrams)
            for size in range(2, min(s.column_ngrams, 2 * cw + 1) + 1):
                for d in range(-cw, cw - size + 2):
                    for c in other:
                        more, u = column_gram(i, d, size, c)
                        ids, unknown = ids + more, unknown + u
            ids = sorted(ids)
            if not self.frozen:
                counts = self.counts
                for k in ids:
                    counts[k] += 1
            self.dropped += unknown
            self.occurrences += len(ids)
            out.append((self.tag(path, token), ids))
        return out

    def dictionary(self, remap=None) -> Dictionary:
        features = self.features
        if remap is not None:
            features = [f for f, r in zip(self.features, remap[1:]) if r]
        return Dictionary(self.columns, self.s, list(self.tags), features, self.layout)


def _svm_lines(qid: int, rows: list, unit_length: bool, remap=None) -> str:
    out = []
    for tag, ids in rows:
        if remap is not None:
            ids = [r for r in (remap[k] for k in ids) if r]
        if not ids:
            out.append(f"{tag} qid:{qid}\n")
        elif unit_length:
            v = repr(1 / math.sqrt(len(ids)))
            out.append(f"{tag} qid:{qid} " + f":{v} ".join(map(str, ids)) + f":{v}\n")
        else:
            out.append(f"{tag} qid:{qid} " + ":1 ".join(map(str, ids)) + ":1\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# commands

_FEATURE_OPTIONS = ("word", "lower", "shape", "affix", "other_columns", "window", "column_window",
                    "column_ngrams", "bias", "unit_length")


def _feature_options(f):
    d = Settings()
    opts = [
        click.option("--word/--no-word", default=d.word, show_default=True,
                     help="The word itself (w=WORD)."),
        click.option("--lower/--no-lower", default=d.lower, show_default=True,
                     help="The word lowercased (lower=word)."),
        click.option("--shape/--no-shape", default=d.shape, show_default=True,
                     help="The word's shape: X upper-case, x other letters, d digits, other "
                          "characters kept, runs collapsed (Xx, d,d, x-x)."),
        click.option("--affix", metavar="N", type=click.IntRange(0), default=d.affix,
                     show_default=True,
                     help="Prefixes and suffixes of the word of 1..N characters (0: none)."),
        click.option("--other-columns/--no-other-columns", default=d.other_columns,
                     show_default=True,
                     help="The columns between the word and the tag (POS ...), as colK=VALUE."),
        click.option("--window", metavar="N", type=click.IntRange(0, MAX_WINDOW), default=d.window,
                     show_default=True,
                     help="Neighbours up to N tokens away contribute their word, lowercase, shape "
                          "and column features, marked by relative position (w[-1]=...); bos[-k] / "
                          "eos[+k] past the sentence's ends."),
        click.option("--column-window", metavar="N", type=click.IntRange(0, MAX_WINDOW),
                     default=d.column_window, show_default=True,
                     help="Neighbours up to N tokens away contribute their column features "
                          "(col2[-2]=..., POS tags in CoNLL-2000), bos[-k] / eos[+k] past the "
                          "sentence's ends; the word features keep --window."),
        click.option("--column-ngrams", metavar="N", type=click.IntRange(1),
                     default=d.column_ngrams, show_default=True,
                     help="N-grams of 2..N consecutive values of each column inside the column "
                          "window (col2[-1:+0]=DT|NN, <s> and </s> past the ends); 1: none."),
        click.option("--bias/--no-bias", default=d.bias, show_default=True,
                     help="A feature on for every token."),
        click.option("--unit-length/--binary", default=d.unit_length, show_default=True,
                     help="Scale each token's features to unit Euclidean length (1/sqrt(n) "
                          "each); --binary: every feature is 1."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@click.command()
@data_path(name="conll_file")
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--new-dictionary", "new_dictionary", metavar="FILE",
              type=click.Path(dir_okay=False),
              help="Number the tags and features of CONLL_FILE (the training file) in first-seen "
                   "order and write them, with the feature options, to FILE. FILE must not exist "
                   "(see --force).")
@click.option("--dictionary", "dictionary", metavar="FILE", type=click.Path(dir_okay=False),
              help="Number tags and features as the dictionary FILE (written by "
                   "--new-dictionary) does, and featurise as it records; FILE is only read. "
                   "Unknown features are dropped; an unknown tag is an error.")
@click.option("--min-count", metavar="N", type=click.IntRange(1), default=1, show_default=True,
              help="With --new-dictionary: keep only features on at least N tokens.")
@click.option("--force", is_flag=True,
              help="With --new-dictionary: replace FILE if it exists.")
@click.option("--unknown-tag-ok", is_flag=True,
              help="With --dictionary: write a tag the dictionary lacks as 0, a number no model "
                   "predicts (so it counts as an error), instead of stopping. svm2conll keeps the "
                   "true tag from the CoNLL file, so conlleval's figures stay exact.")
@click.option("--format", "file_format", type=click.Choice(["auto", "conll", "conllu"]),
              default="auto", show_default=True,
              help="conll: CoNLL column files (word ... tag). conllu: Universal Dependencies "
                   "CoNLL-U (10 tab-separated columns; # comments, multiword tokens n-m and empty "
                   "nodes n.k skipped). auto: conllu for a file named *.conllu (also .gz, .bz2, "
                   ".xz), else conll; with --dictionary, the dictionary's format.")
@click.option("--tag-column", metavar="NAME", default=None,
              help="CoNLL-U: the column holding the tag, by name (UPOS, XPOS, DEPREL, ...) or "
                   "number 1-10.  [default: UPOS]")
@click.option("--feature-columns", metavar="NAMES", default=None,
              help="CoNLL-U: the columns besides FORM that give features, comma-separated "
                   "(LEMMA,XPOS); they are used as the columns between word and tag of a CoNLL "
                   "file (--other-columns, --column-window, --column-ngrams), named by the "
                   "column (xpos=NN, xpos[-1]=DT).  [default: none]")
@_feature_options
@quiet_option
@click.pass_context
def conll2svm(ctx, conll_file, output, new_dictionary, dictionary, min_count, force, unknown_tag_ok,
              file_format, tag_column, feature_columns, quiet, **feature_options):
    """Convert a CoNLL column file to the sequence task's svmlight format.

    CONLL_FILE holds one token per line, `word [column ...] tag`, and a blank line between
    sentences; or it is a CoNLL-U file (--format), whose FORM is the word, --tag-column the tag
    and --feature-columns the columns between them. OUTPUT gets one line `TAG qid:SENTENCE index:value ...` per token: TAG is the tag's
    number 1..K, sentences are numbered from 1, features are sorted by index.

    The training file is converted with --new-dictionary FILE, every other file with --dictionary
    FILE, so that all of them number tags and features alike; the feature options are then read
    from the dictionary (giving a different one is an error). The last column is the tag;
    -DOCSTART- lines are skipped. A summary goes to standard error.
    """
    from click.core import ParameterSource

    # options first, before any data is read
    if (new_dictionary is None) == (dictionary is None):
        raise InputError("give --new-dictionary FILE (for the training file) or --dictionary FILE "
                         "(for the others), not " + ("both" if dictionary else "neither"))
    if dictionary is not None:
        for name in ("min_count", "force"):
            if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
                raise InputError(f"--{Settings.key(name)} goes with --new-dictionary; "
                                 f"--dictionary is only read")
    if new_dictionary is not None and unknown_tag_ok:
        raise InputError("--unknown-tag-ok goes with --dictionary: --new-dictionary numbers "
                         "every tag")
    target = new_dictionary
    if target is not None and output != "-" and os.path.abspath(output) == os.path.abspath(target):
        raise InputError(f"{output}: OUTPUT and the dictionary must be different files")
    if target is not None and dictionary is None and not force and os.path.lexists(target):
        raise InputError(f"{target}: file exists (refusing to overwrite a dictionary; "
                         f"use --force to replace it)")

    layout = None
    if file_format == "auto" and dictionary is None:
        file_format = "conllu" if is_conllu_name(conll_file) else "conll"
    if file_format == "conll" and (tag_column or feature_columns):
        raise InputError("--tag-column and --feature-columns are for CoNLL-U files (--format "
                         "conllu); in a CoNLL column file the tag is the last column")
    if file_format == "conllu":
        try:
            feats = tuple(conllu_column(c) for c in (feature_columns or "").split(",") if c.strip())
            layout = Layout("conllu", conllu_column(tag_column or "UPOS"), feats)
            layout_problem(layout)
        except ValueError as e:
            raise InputError(str(e)) from None
    elif file_format == "conll":
        layout = CONLL

    with user_errors():
        if dictionary is not None:
            dic = read_dictionary(dictionary)
            recorded = dic.layout
            given_tag = given_feats = None
            try:
                if tag_column:
                    given_tag = conllu_column(tag_column)
                if feature_columns is not None:
                    given_feats = tuple(conllu_column(c) for c in feature_columns.split(",")
                                        if c.strip())
            except ValueError as e:
                raise InputError(str(e)) from None
            if ((layout is not None and layout.format != recorded.format)
                    or (given_tag is not None and given_tag != recorded.tag_column)
                    or (given_feats is not None and given_feats != recorded.feature_columns)
                    or ((given_tag or given_feats is not None) and not recorded.conllu)):
                raise InputError(f"{dictionary}: the dictionary was made from a "
                                 f"{_layout_text(recorded)}; leave --format, --tag-column and "
                                 f"--feature-columns out (the dictionary's are used)")
            for name in _FEATURE_OPTIONS:
                given, recorded = feature_options[name], getattr(dic.settings, name)
                if (ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
                        and given != recorded):
                    raise InputError(f"{dictionary}: the dictionary was made with "
                                     f"{Settings.key(name)} {_format_value(recorded)}, not "
                                     f"{_format_value(given)}; leave the feature options out")
            summary = _convert(conll_file, output, dic.columns, dic.settings, dic, None, force,
                               unknown_tag_ok, dic.layout)
        else:
            settings = Settings(min_count=min_count, **feature_options)
            summary = _convert(conll_file, output, None, settings, None, new_dictionary, force, False,
                               layout)
    if not quiet:
        click.echo(f"conll2svm: {summary}", err=True)


def _layout_text(layout: Layout) -> str:
    if not layout.conllu:
        return "CoNLL column file"
    return (f"CoNLL-U file with tag column {layout.tag_column} and feature columns "
            f"{','.join(layout.feature_columns) or '-'}")


def _convert(conll_file, output, columns, settings, dic, new_dictionary, force, unknown_tag_ok,
             layout=CONLL):
    from svmtrain.atomic import atomic_output

    if layout.conllu:
        columns = layout.columns
    lines = read_lines(conll_file, layout, columns)
    # the first token line fixes the column count (when no dictionary does)
    pending = []
    for line in lines:
        pending.append(line)
        if line.fields is not None:
            columns = len(line.fields)
            break
    if columns is None or not any(line.fields for line in pending):
        raise DataError(conll_file, None, "no tokens")

    def all_lines():
        yield from pending
        yield from lines

    enc = Encoder(columns, settings, dic, unknown_tag_ok, layout)
    buffered = new_dictionary is not None and settings.min_count > 1
    n_sentences = n_tokens = 0
    rows_kept = []
    with _maybe_atomic(new_dictionary, force) as dict_out:
        with atomic_output(output, "w") as out:
            for n_sentences, tokens in enumerate(sentences(all_lines()), 1):
                rows = enc.sentence(conll_file, tokens)
                n_tokens += len(rows)
                if buffered:
                    rows_kept.append(rows)
                else:
                    out.write(_svm_lines(n_sentences, rows, settings.unit_length))
            remap = None
            if buffered:   # renumber the features kept, in first-seen order
                remap, k = [0] * len(enc.counts), 0
                for i in range(1, len(enc.counts)):
                    if enc.counts[i] >= settings.min_count:
                        k += 1
                        remap[i] = k
                for qid, rows in enumerate(rows_kept, 1):
                    out.write(_svm_lines(qid, rows, settings.unit_length, remap))
        if dict_out is not None:
            built = enc.dictionary(remap)
            write_dictionary(dict_out, built)

    text = f"{n_sentences} sentences, {n_tokens} tokens, {len(enc.tags)} tags"
    if dict_out is not None:
        text += f", {len(built.features)} features"
        if remap is not None:
            text += f" (of {len(enc.features)}; min-count {settings.min_count})"
        text += f"; wrote {new_dictionary}"
    else:
        total = enc.occurrences + enc.dropped
        text += (f", {len(enc.features)} features in the dictionary; {enc.dropped} of {total} "
                 f"feature occurrences unknown (dropped)")
        if enc.unknown_tags:
            text += f"; {enc.unknown_tags} tokens with a tag not in the dictionary (written as 0)"
    return text


class _maybe_atomic:
    """atomic_output(path, "wb", force=force), or None when path is None."""

    def __init__(self, path, force):
        self.path, self.force, self.cm = path, force, None

    def __enter__(self):
        if self.path is None:
            return None
        from svmtrain.atomic import atomic_output
        self.cm = atomic_output(self.path, "wb", force=self.force)
        return self.cm.__enter__()

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc) if self.cm is not None else False


@click.command()
@click.option("--dictionary", "dictionary", metavar="FILE", type=click.Path(dir_okay=False),
              required=True, help="The dictionary conll2svm wrote (--new-dictionary): tag names.")
@data_path(name="conll_file")
@data_path(name="predictions")
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True))
def svm2conll(dictionary, conll_file, predictions, output):
    """Join predicted tag numbers back onto a CoNLL file, as tag names.

    OUTPUT is CONLL_FILE with the predicted tag as a new last column; for a CoNLL-U file (as the
    dictionary records) the predicted tag replaces the tag column instead, so OUTPUT is CoNLL-U
    again, comments, multiword tokens and empty nodes copied as they are. PREDICTIONS holds one tag
    number per line, one line per token of CONLL_FILE in order, as `svmtrain predict` writes them
    for the file conll2svm made from CONLL_FILE; they are written as the dictionary's tag names.
    Every line of CONLL_FILE is kept as it is (blank lines too; a
    -DOCSTART- line gets its last column repeated), so `word ... tag predicted` is what conlleval
    reads.
    """
    if conll_file == "-" and predictions == "-":
        raise InputError("CONLL_FILE and PREDICTIONS cannot both be standard input")
    with user_errors():
        _join(dictionary, conll_file, predictions, output)


def _join(dictionary, conll_file, predictions, output):
    from svmtrain.atomic import atomic_output

    dic = read_dictionary(dictionary)
    names = [None] + [t.encode("utf-8", "surrogateescape") for t in dic.tags]
    k = len(dic.tags)
    with open_input(predictions) as pf, atomic_output(output, "wb") as out:
        preds = _decoded_lines(predictions, pf)
        n_preds = 0
        tag_at = CONLLU_COLUMNS.index(dic.layout.tag_column) if dic.layout.conllu else None
        for line in read_lines(conll_file, dic.layout, dic.columns):
            if tag_at is not None and line.fields is None:   # CoNLL-U: every other line as it is
                out.write(line.text.encode("utf-8", "surrogateescape") + b"\n")
                continue
            text = line.text if tag_at is not None else line.text.rstrip()
            if not text:
                out.write(b"\n")
                continue
            sep = "\t" if "\t" in text and " " not in text else " "
            if line.fields is None:       # -DOCSTART-: repeat its last column
                out.write(f"{text}{sep}{text.split()[-1]}\n".encode("utf-8", "surrogateescape"))
                continue
            got = next(preds, None)
            if got is None:
                raise DataError(predictions, None, f"ends after {n_preds} lines, but "
                                                   f"{conll_file}:{line.number} is a token with no "
                                                   f"prediction")
            pno, ptext = got
            n_preds = pno
            parts = ptext.split()
            tag = _tag_number(parts[0]) if len(parts) == 1 else None
            if tag is None or not 1 <= tag <= k:
                raise DataError(predictions, pno, f"expected a tag number 1..{k}, got "
                                                  f"{ptext.strip()[:40]!r}")
            if tag_at is not None:
                cols = text.encode("utf-8", "surrogateescape").split(b"\t")
                cols[tag_at] = names[tag]
                out.write(b"\t".join(cols) + b"\n")
            else:
                out.write(text.encode("utf-8", "surrogateescape") + sep.encode() + names[tag]
                          + b"\n")
        extra = next(preds, None)
        if extra is not None:
            raise DataError(predictions, extra[0], f"more lines than {conll_file} has tokens")


def _tag_number(text: str) -> Optional[int]:
    """An integer tag number ('3', or '3.0' as a float), else None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        x = float(text)
    except ValueError:
        return None
    return int(x) if math.isfinite(x) and x.is_integer() else None
