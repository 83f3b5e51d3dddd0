"""CoNLL-U sentences: the four columns a first-order parser needs (ID, FORM, UPOS, HEAD).

A CoNLL-U file is blocks of tab-separated word lines, one block per sentence, ended by a blank
line. `#` lines are comments; a multiword-token line (ID `n-m`, e.g. "don't" over "do" "n't") and
an empty node (ID `n.k`, enhanced dependencies only) are not words of the basic tree, so they are
skipped. The word IDs of a sentence must run 1, 2, ..., n and every HEAD must be 0..n: the tree is
over those words, with 0 the artificial root. A HEAD of `_` (an unannotated sentence, e.g. raw text
to parse) is read as -1 when `require_heads` is False.

Errors name the file and the line (1-based) and say what is wrong, so a user can fix the file.
"""

import gzip
import lzma
import os
import zlib
from dataclasses import dataclass

import numpy as np

try:
    from svmtrain.data import DataError
except ImportError:   # the example also runs without svmtrain installed
    class DataError(ValueError):
        """A malformed input file: str(e) == f"{path}:{line}: {reason}" (or f"{path}: {reason}")."""

        def __init__(self, path, line, reason):
            super().__init__(path, line, reason)
            self.path, self.line, self.reason = str(path), line, reason

        def __str__(self):
            return f"{self.path}: {self.reason}" if self.line is None else f"{self.path}:{self.line}: {self.reason}"

N_COLUMNS = 10


@dataclass
class Sentence:
    """n words; arrays indexed 0..n-1 for words 1..n. heads[i] is the head of word i+1 (0 = root),
    -1 when unannotated. `line` is the file line of the first word (for messages)."""

    forms: list
    upos: list
    heads: np.ndarray
    line: int = 0

    def __len__(self):
        return len(self.forms)


def _open_text(path):
    """A text stream over a plain or xz/gzip/bzip2-compressed file (svmtrain's reader when present:
    it knows compressed streams and stdin; otherwise lzma for .xz and open() for the rest)."""
    try:
        from svmtrain.data import open_input
    except ImportError:
        open_input = None
    if open_input is not None:
        import io
        return io.TextIOWrapper(open_input(path), encoding="utf-8", errors="strict", newline=None)
    try:
        if os.fspath(path).endswith(".xz"):
            return lzma.open(path, "rt", encoding="utf-8")
        return open(path, "rt", encoding="utf-8")
    except OSError as e:
        raise DataError(path, None, f"cannot open: {e.strerror or e}") from None


def _word_id(field, path, lineno):
    """The integer ID of a word line, or None for a multiword token (n-m) or an empty node (n.k)."""
    if "-" in field:
        lo, _, hi = field.partition("-")
        if lo.isdigit() and hi.isdigit() and 0 < int(lo) <= int(hi):
            return None
        raise DataError(path, lineno, f"bad multiword-token ID {field!r} (expected n-m with 0 < n <= m)")
    if "." in field:
        whole, _, frac = field.partition(".")
        if whole.isdigit() and frac.isdigit():
            return None
        raise DataError(path, lineno, f"bad empty-node ID {field!r} (expected n.k)")
    if not field.isdigit() or int(field) == 0:
        raise DataError(path, lineno, f"bad word ID {field!r} (expected 1, 2, ...)")
    return int(field)


def _on_cycle(heads):
    """A word (1-based) on a cycle of the head pointers, or None when every word reaches
    the root (unannotated heads, -1, end a path like the root does)."""
    n = len(heads)
    parent = np.concatenate(([0], np.where(heads < 0, 0, heads)))
    # pointer doubling: after ceil(log2(n + 1)) squarings every path of length <= n has been followed
    top = parent.copy()
    for _ in range(max(1, int(n).bit_length())):
        top = top[top]
    cyclic = np.flatnonzero(top[1:] != 0)
    if len(cyclic) == 0:
        return None
    # a word whose path ends on a cycle may itself be off it; report one on it
    word = int(cyclic[0]) + 1
    seen = set()
    while word not in seen:
        seen.add(word)
        word = int(parent[word])
    return word


def read_conllu(path, require_heads=True):
    """Yield the Sentences of a CoNLL-U file, in order (streamed: one sentence in memory at a time).

    Raises DataError(path, line, reason) on the first malformed line; a truncated last sentence
    (no blank line after it) is accepted, as the CoNLL-U validator does for files that end in one.
    """
    path_str = os.fspath(path) if path != "-" else "-"
    stream = _open_text(path)
    forms, upos, heads, first_line = [], [], [], 0
    # (line number, head field) of every word, checked once the sentence's length is known
    head_lines = []

    def finish():
        n = len(forms)
        values = np.empty(n, dtype=np.int64)
        for i, (lineno, field) in enumerate(head_lines):
            if field == "_" and not require_heads:
                values[i] = -1
                continue
            if not field.isdigit():
                raise DataError(path_str, lineno, f"bad HEAD {field!r} (expected 0..{n}, the ID of a "
                                                  f"word of this sentence or 0 for the root)")
            h = int(field)
            if h > n:
                raise DataError(path_str, lineno, f"HEAD {h} is not a word of this sentence "
                                                  f"(it has {n} word{'s' if n != 1 else ''})")
            if h == i + 1:
                raise DataError(path_str, lineno, f"word {i + 1} is its own HEAD")
            values[i] = h
        word = _on_cycle(values)
        if word is not None:
            raise DataError(path_str, head_lines[word - 1][0], f"the HEADs do not form a tree: word "
                                                               f"{word} is on a cycle")
        return Sentence(list(forms), list(upos), values, first_line)

    lineno = 0
    try:
        with stream:
            for lineno, line in enumerate(stream, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    if forms:
                        yield finish()
                        forms.clear(), upos.clear(), heads.clear(), head_lines.clear()
                    continue
                if line.startswith("#"):
                    if forms:
                        raise DataError(path_str, lineno, "a comment inside a sentence (comments "
                                                          "come before its first word line)")
                    continue
                cols = line.split("\t")
                if len(cols) != N_COLUMNS:
                    raise DataError(path_str, lineno, f"{len(cols)} tab-separated columns, CoNLL-U "
                                                      f"has {N_COLUMNS} (ID FORM LEMMA UPOS XPOS FEATS "
                                                      "HEAD DEPREL DEPS MISC)")
                word_id = _word_id(cols[0], path_str, lineno)
                if word_id is None:
                    continue
                if word_id != len(forms) + 1:
                    raise DataError(path_str, lineno, f"word ID {word_id} where {len(forms) + 1} was "
                                                      "expected (IDs run 1, 2, ... in each sentence)")
                if not forms:
                    first_line = lineno
                if not cols[1]:
                    raise DataError(path_str, lineno, "empty FORM")
                if not cols[3]:
                    raise DataError(path_str, lineno, "empty UPOS")
                forms.append(cols[1])
                upos.append(cols[3])
                head_lines.append((lineno, cols[6]))
            if forms:
                yield finish()
    except UnicodeDecodeError as e:
        raise DataError(path_str, lineno + 1, f"not UTF-8 text ({e.reason})") from None
    except (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as e:
        raise DataError(path_str, None, f"cannot decompress after line {lineno}: {e}") from None
    except OSError as e:
        raise DataError(path_str, None, f"cannot read after line {lineno}: {e.strerror or e}") from None
