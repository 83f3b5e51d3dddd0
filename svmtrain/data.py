"""The data layer: svmlight / libsvm files as CSR blocks.

    target [qid:N] [cost:V] idx:val idx:val ... [# comment]

`iter_blocks` streams a file (plain, .gz/.bz2/.xz, or '-' for stdin) as `Block`s of consecutive rows,
reading `block_bytes` at a time, so memory is bounded by one block; `load` returns the whole file as
one Block. The parsing itself is C (`svmtrain._reader`, no GIL); this module only moves bytes.

Byte ranges (plain files only): the range [offset, offset + length) owns every line whose first byte
lies inside it, so the ranges of any split of a file together yield each row exactly once, in order.
Line numbers are always those of the whole file.

Every malformed line raises `DataError` naming the file, the 1-based line and what is wrong.
"""
from __future__ import annotations

import io
import os
import sys
import zlib
from dataclasses import replace
from typing import BinaryIO, Callable, Iterator, Optional

import numpy as np

from svmtrain import _reader
from svmtrain.records import record

__all__ = ["DataError", "Block", "open_input", "iter_blocks", "load", "MAX_FEATURES", "check_features",
           "check_norms", "check_training_rows", "take_rows", "repeated_run"]

# The most feature columns a model can have: the engine keeps int32 column numbers, one of them
# for the bias feature (LIBLINEAR's indices are C ints too). The reader takes any 64-bit index, so
# that a test file may carry features a model ignores; training checks its data against this.
MAX_FEATURES = 2**31 - 2


def index_dtype(largest: int):
    """int32 for indices up to `largest` when it fits (half the memory of the largest arrays:
    column indices, constraint term rows and offsets), else int64."""
    return np.int32 if largest <= np.iinfo(np.int32).max else np.int64


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-d array, as np.unique(values) gives them (no NaN here:
    the reader refuses it). np.unique without return_* arguments asks numpy.ma whether the array is
    masked, which imports numpy.ma: 11 ms, a tenth of a short training run's whole process."""
    s = np.sort(values)                  # the sort np.unique runs
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def crc32_as(a, dtype, crc=0, piece=1 << 16):
    """CRC-32 of a's entries as `dtype`, a piece at a time (no copy of the whole array): the same
    for the same values however they are stored (int32 or int64 columns, float32 or float64
    values). A piece converted is 512 KB: at 8 MB, the converted piece of a window's columns was
    the peak of online-dual's one pass over UD English EWT written 4 times (at each window's end,
    where the fingerprint of its rows is taken)."""
    for i in range(0, len(a), piece):
        crc = zlib.crc32(np.ascontiguousarray(a[i:i + piece], dtype=dtype), crc)
    return crc


def value_dtype(values: np.ndarray, compact: bool = True, *, bytes_too: bool = True):
    """The narrowest type that holds every value exactly: uint8 when each is an integer from 0 to
    255 (indicator features, counts: an eighth of the memory), else float32 when each is a float32
    (half), else float64. The kernels widen each value to double before any arithmetic, so the
    model is the same bit for bit. float64 when `compact` is False (a task whose kernels read only
    float64: Task.compact_values); no bytes when `bytes_too` is False (a constraint's scales, which
    the engine reads as float32 or float64). Checked a piece at a time: no full-size temporaries."""
    if not compact:
        return np.float64
    if values.dtype == np.uint8:      # (bytes already: a compacted window's rows, chunk by chunk)
        return np.uint8 if bytes_too else np.float32
    piece = 1 << 20
    narrowest = np.uint8 if bytes_too else np.float32
    with np.errstate(over="ignore", invalid="ignore"):    # a value past float32's range: float64
        for s in range(0, len(values), piece):
            v = values[s:s + piece]
            if narrowest == np.uint8 and not (np.array_equal(v.astype(np.uint8), v)
                                              and not np.signbit(v).any()):    # -0.0: not a byte
                narrowest = np.float32
            if narrowest == np.float32 and not np.array_equal(v.astype(np.float32), v):
                return np.float64
    return narrowest


def narrow_row_arrays(block: "Block", compact: bool = True, copy: bool = False) -> None:
    """Keep a block's per-row arrays (target, cost, qid, line) in the narrowest types that hold
    their values exactly (value_dtype, index_dtype), in place: a task whose oracle reads them every
    round holds them through training (the sequence task: 32 bytes a token as the reader gives
    them, 10 for tags and costs that are bytes). The values are the same; code reading them widens
    as it computes (a cost is widened before it scales C). `compact` False keeps the reader's
    types (Task.compact_values); `copy`: arrays of the block's own, whatever the types."""
    n = block.n_rows
    qid_range = max(int(block.qid.max()), -int(block.qid.min())) if n else 0
    last_line = int(block.line.max()) if n else 0
    types = (value_dtype(block.target, compact), value_dtype(block.cost, compact),
             index_dtype(qid_range) if compact else np.int64,
             index_dtype(last_line) if compact else np.int64)
    for name, dtype in zip(("target", "cost", "qid", "line"), types):
        setattr(block, name, getattr(block, name).astype(dtype, copy=copy))


_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
)


def _decompress_errors():
    """What a broken compressed stream raises while being read, from the modules in use: gzip, bz2
    and lzma are imported for a compressed file only (2.6 ms of every start-up, -X importtime)."""
    errors = [EOFError, zlib.error]
    for module, name in (("lzma", "LZMAError"), ("gzip", "BadGzipFile")):
        if module in sys.modules:
            errors.append(getattr(sys.modules[module], name))
    return tuple(errors)


class DataError(ValueError):
    """A malformed input file: str(e) == f"{path}:{line}: {reason}" (or f"{path}: {reason}")."""

    def __init__(self, path: str, line: Optional[int], reason: str):
        super().__init__(path, line, reason)
        self.path = str(path)
        self.line = line
        self.reason = reason

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.reason}"
        return f"{self.path}:{self.line}: {self.reason}"

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.reason))


@record
class Block:
    """One CSR block of consecutive rows."""

    indptr: np.ndarray   # int64, n_rows + 1, indptr[0] == 0
    indices: np.ndarray  # int64 0-based columns (int32 once training narrowed them: a task's
                         # store, index_dtype; the n-slack engine's one-row problems)
    data: np.ndarray     # float64 (uint8 or float32 in a task's store where exact: value_dtype)
    target: np.ndarray   # float64, per row
    qid: np.ndarray      # int64, per row, -1 = no qid
    cost: np.ndarray     # float64, per row, 1.0 = no cost
    line: np.ndarray     # int64, per row, 1-based line number in the file
    n_features: int      # max column + 1 in this block (0 if no features)
    nbytes: int          # input (decompressed) bytes this block consumed

    @property
    def n_rows(self) -> int:
        return len(self.target)

    @property
    def nnz(self) -> int:
        return len(self.data)

    def copy(self) -> "Block":
        """The block with arrays of its own (nothing of a block it was cut from is held)."""
        return Block(self.indptr.copy(), self.indices.copy(), self.data.copy(), self.target.copy(),
                     self.qid.copy(), self.cost.copy(), self.line.copy(), self.n_features, self.nbytes)

    def rows(self, start: int, stop: int) -> "Block":
        """Rows start..stop-1 as a block of their own (arrays are views where possible)."""
        a, b = int(self.indptr[start]), int(self.indptr[stop])
        indices = self.indices[a:b]
        return Block(self.indptr[start:stop + 1] - a, indices, self.data[a:b],
                     self.target[start:stop], self.qid[start:stop], self.cost[start:stop],
                     self.line[start:stop], int(indices.max()) + 1 if len(indices) else 0, 0)


def concat_blocks(blocks) -> "Block":
    """One block of the rows of several, in order."""
    blocks = list(blocks)
    if len(blocks) == 1:
        return blocks[0]
    if not blocks:
        return _empty_block()
    offsets = np.cumsum([0] + [b.nnz for b in blocks[:-1]])
    indptr = np.concatenate([[0]] + [b.indptr[1:] + o for b, o in zip(blocks, offsets)])
    cat = np.concatenate
    return Block(indptr.astype(np.int64), cat([b.indices for b in blocks]), cat([b.data for b in blocks]),
                 cat([b.target for b in blocks]), cat([b.qid for b in blocks]),
                 cat([b.cost for b in blocks]), cat([b.line for b in blocks]),
                 max(b.n_features for b in blocks), sum(b.nbytes for b in blocks))


def take_rows(block, rows):
    """The CSR arrays (indptr, indices, data) of the given rows of a block (or of anything with
    indptr, indices and data), in that order."""
    starts, ends = block.indptr[rows], block.indptr[np.asarray(rows) + 1]
    lengths = ends - starts
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    picks = (np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])).astype(np.int64)
    return indptr, block.indices[picks], block.data[picks]


def repeated_run(qid, starts):
    """The first row whose qid run (runs starting at `starts`) repeats an earlier run's qid, or None:
    an example whose lines are not consecutive."""
    run_qids = qid[starts]
    unique, first = np.unique(run_qids, return_index=True)
    if len(unique) == len(run_qids):
        return None
    return int(starts[np.setdiff1d(np.arange(len(run_qids)), first)[0]])


def check_features(block: "Block", path: str, zero_based: bool = False, labels: int = 1,
                   labels_noun: str = "labels") -> None:
    """Raise DataError at the first row whose feature index no model can have: MAX_FEATURES, and
    with one weight block per label (labels > 1: multiclass, sequence), at most 2**31 - 1 weights
    in all, the kernels' int32 offsets (labels x (features + the bias))."""
    limit = MAX_FEATURES if labels <= 1 else min(MAX_FEATURES, (2**31 - 1) // labels - 1)
    if block.n_features <= limit:
        return
    at = int(np.argmax(block.indices >= limit))
    row = int(np.searchsorted(block.indptr, at, side="right")) - 1
    index = int(block.indices[at]) + (0 if zero_based else 1)
    largest = limit - 1 if zero_based else limit
    model = "a model" if labels <= 1 else f"a model of {labels} {labels_noun}"
    raise DataError(path, int(block.line[row]),
                    f"feature index {index} is above the largest {model} can have, {largest}")


def check_norms(block: "Block", path: str) -> None:
    """Raise DataError at the first row whose squared norm overflows to inf (values of about 1e154
    and more): the linear solvers' steps divide by it and would silently stand still at w = 0.
    A row of n values of at most M in size cannot overflow while n M^2 is finite, which the largest
    row and value tell without the per-nonzero temporaries of the exact check (50 MB on UD English
    EWT, the peak of a sequence training run)."""
    if not block.nnz:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        largest = max(float(block.data.max()), -float(block.data.min()))
        if float(np.diff(block.indptr).max()) * largest * largest < np.finfo(np.float64).max:
            return
    with np.errstate(over="ignore"):
        rows = np.repeat(np.arange(block.n_rows), np.diff(block.indptr))
        sq = np.bincount(rows, weights=block.data * block.data, minlength=block.n_rows)
    bad = np.flatnonzero(~np.isfinite(sq))
    if not len(bad):
        return
    row = int(bad[0])
    raise DataError(path, int(block.line[row]), "the row's squared norm overflows (values of "
                    "1e154 or more): scale the features")


def check_training_rows(block: "Block", path: str, zero_based: bool = False) -> None:
    """What the trainers need of their rows beyond the reader's syntax: feature indices a model
    can have (check_features) and finite squared norms (check_norms)."""
    check_features(block, path, zero_based)
    check_norms(block, path)


class SeenQids:
    """The qids of the runs seen so far in a stream, so that a run whose qid came before (an
    example whose lines are not consecutive) is refused wherever the reader cut the file, as a
    training run, which holds the whole file, refuses it. Sorted arrays of sizes halving from
    the first (merged as a binary counter merges: each qid is merged O(log n) times), 8 bytes
    a run; a line without a qid (below 0) is the task's to refuse, and first when it comes first."""

    def __init__(self, path):
        self.path = path
        self._levels = []

    def _seen(self, qids):
        hit = np.zeros(len(qids), bool)
        for level in self._levels:
            at = np.minimum(np.searchsorted(level, qids), len(level) - 1)
            hit |= level[at] == qids
        return hit

    def add(self, block):
        """Check the runs of `block` (whole runs: it comes from whole_examples) and remember
        their qids; DataError at the first line of the first run seen before."""
        qid = block.qid
        if not len(qid):
            return
        starts = np.concatenate(([0], np.flatnonzero(qid[1:] != qid[:-1]) + 1))
        run_qids = np.asarray(qid[starts], np.int64)
        fresh = distinct(run_qids)              # (one sort a block: repeats are rare)
        i = repeated_run(qid, starts) if len(fresh) < len(run_qids) else None
        again = np.flatnonzero(self._seen(run_qids) & (run_qids >= 0))
        if len(again) and (i is None or starts[again[0]] < i):
            i = int(starts[again[0]])
        if i is not None and qid[i] >= 0 and not np.any(qid[:i] < 0):
            raise DataError(self.path, int(block.line[i]), f"qid {int(qid[i])} appears again "
                            "after other examples: an example's lines must be consecutive")
        self._levels.append(fresh)
        while len(self._levels) > 1 and len(self._levels[-1]) >= len(self._levels[-2]):
            top = self._levels.pop()
            self._levels[-1] = distinct(np.concatenate((self._levels[-1], top)))


def whole_examples(blocks, grouping, path=None, *, refuse_repeats=True):
    """Blocks re-cut so that no example straddles two.

    grouping "row": every row is an example (blocks pass through, memory stays one block);
    "consecutive": an example is a run of rows with one qid (a sentence): the last run of a block
    waits for the next, and a run whose qid came before in the stream is refused (SeenQids; the
    DataError names `path`) unless the caller checks that itself (`refuse_repeats` False);
    "whole": examples are spread over the file (ranking queries): one block.
    """
    if grouping == "row":
        yield from blocks
        return
    if grouping == "whole":
        yield concat_blocks(list(blocks))
        return
    seen = SeenQids("" if path is None else path) if refuse_repeats else None
    for block in _consecutive_runs(blocks):
        if seen is not None:
            seen.add(block)
        checked, block = [block], None
        yield checked.pop()         # (not held here while the consumer works on it)


def _consecutive_runs(blocks):
    # A reader's block is yielded in place (a view of it), but for the example that runs into it
    # from the block before, joined with that one's last rows, and its own last example, copied
    # out (it may go on in the next block): nothing is joined or copied at the size of a block
    # (UD English EWT's certificate pass held a joined copy of each block next to the reader's,
    # 20 MB). Where the blocks are cut does not matter to the consumers: each takes the examples
    # one by one in file order (the primal's compensated sum, the oracles' sentence by sentence).
    tail = None
    for block in blocks:
        if block.n_rows == 0:
            continue
        k = 0
        if tail is not None:        # the rows of the tail's example that open this block
            others = np.flatnonzero(block.qid != tail.qid[-1])
            k = int(others[0]) if len(others) else block.n_rows
            if k == block.n_rows:   # the block is all one example's: it goes on in the next
                tail = concat_blocks([tail, block])
                continue
            yield concat_blocks([tail, block.rows(0, k)])
            tail = None
        changes = np.flatnonzero(block.qid[k + 1:] != block.qid[k:-1])
        start = k + int(changes[-1]) + 1 if len(changes) else k
        whole = [block.rows(k, start)] if start > k else []
        tail, block = block.rows(start, block.n_rows).copy(), None
        if whole:
            # (handed out, not held here: a consumer that pauses at it, such as the online-dual
            # mode at the end of a window, copies what it keeps and lets the reader's block go)
            yield whole.pop()
    if tail is not None:
        yield tail


def _empty_block(nbytes: int = 0) -> Block:
    i8, f8 = np.empty(0, np.int64), np.empty(0, np.float64)
    return Block(np.zeros(1, np.int64), i8, f8, f8.copy(), i8.copy(), f8.copy(), i8.copy(), 0, nbytes)


class _Prefixed(io.RawIOBase):
    """A non-seekable stream with `head` (bytes already read from it) put back in front."""

    def __init__(self, head: bytes, raw, close_raw: bool):
        self._head = head
        self._raw = raw
        self._close_raw = close_raw

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return _readinto(self._raw, b)

    def close(self) -> None:
        if not self.closed and self._close_raw:
            self._raw.close()
        super().close()


class _Layers(io.RawIOBase):
    """A decompressor over a stream; closing it closes both (gzip & co. leave their fileobj open)."""

    def __init__(self, top, below):
        self._top = top
        self._below = below

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return _readinto(self._top, b)

    def close(self) -> None:
        if not self.closed:
            try:
                self._top.close()
            finally:
                self._below.close()
        super().close()


def _readinto(f, b) -> int:
    readinto = getattr(f, "readinto", None)
    if readinto is not None:
        return readinto(b) or 0
    chunk = f.read(len(b))
    b[: len(chunk)] = chunk
    return len(chunk)


def _sniff(head: bytes) -> Optional[str]:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return None


def plain_size(path) -> Optional[int]:
    """The size in bytes of a plain (uncompressed) regular file, else None (standard input, a
    pipe, a compressed file, a MemorySource)."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "-" or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            if _sniff(f.read(6)) is not None:
                return None
        return os.path.getsize(path)
    except OSError:
        return None


def head_counts(path, nbytes: int = 1 << 20):
    """(bytes, rows, qid runs) of the first whole lines of a plain file, about `nbytes` of them
    (rows: lines that are neither blank nor comments; qid runs: rows whose qid differs from the
    row before's, a row without one counting as its own run), for estimating the file's size in
    rows and examples from its size in bytes. Read apart from the blocks, so that the estimate
    does not depend on how the reader cuts the file."""
    import re
    with open(path, "rb") as f:
        head = f.read(nbytes)
        if len(head) == nbytes:
            head = head[:head.rfind(b"\n") + 1]
    rows = runs = 0
    last = None
    qid = re.compile(rb"\sqid:(\S+)")
    # a line at a time (io.BytesIO), not all of them listed (splitlines): their objects, made at
    # once, spread over allocator arenas that a long-lived object then kept (1 MB through a run)
    for line in io.BytesIO(head):
        line = line.strip()
        if not line or line.startswith(b"#"):
            continue
        rows += 1
        m = qid.search(line)
        q = m.group(1) if m else None
        if q is None or q != last:
            runs += 1
        last = q
    return len(head), rows, runs


def _decompressor(kind: str, f):
    if kind == "gzip":
        import gzip
        return gzip.GzipFile(fileobj=f, mode="rb")
    if kind == "bz2":
        import bz2
        return bz2.BZ2File(f, mode="rb")
    import lzma
    return lzma.LZMAFile(f, mode="rb")


def _open(path: str):
    """(stream, plain): the decompressed byte stream, and whether it is a seekable plain file."""
    if path == "-":
        raw = getattr(sys.stdin, "buffer", sys.stdin)
    else:
        try:
            raw = open(path, "rb")
        except OSError as e:
            raise DataError(path, None, f"cannot open: {e.strerror or e}") from None
    try:
        if path != "-" and raw.seekable():
            head = raw.read(6)
            raw.seek(0)
            kind = _sniff(head)
            if kind is None:
                return raw, True
            return io.BufferedReader(_Layers(_decompressor(kind, raw), raw)), False
        # stdin, a pipe or a FIFO (e.g. bash's <(zcat ...)): sniff, then put the bytes back
        head = b""
        while len(head) < 6:
            more = raw.read(6 - len(head))
            if not more:
                break
            head += more
        stream = _Prefixed(head, raw, close_raw=path != "-")   # never close stdin
        kind = _sniff(head)
        if kind is None:
            return io.BufferedReader(stream), False
        return io.BufferedReader(_Layers(_decompressor(kind, stream), stream)), False
    except OSError as e:
        if path != "-":
            raw.close()
        raise DataError(path, None, f"cannot read: {e.strerror or e}") from None


def open_input(path: str) -> BinaryIO:
    """Open an input file for binary reading: '-' is stdin; gzip/bzip2/xz are decompressed (known
    by their magic bytes). Raises DataError(path, None, "cannot open: ...") when it cannot be opened."""
    return _open(path if path == "-" else os.fspath(path))[0]


class _Reader:
    """Fills a growing buffer from a stream; knows the file offset of the buffer's first byte."""

    def __init__(self, path: str, f, block_bytes: int):
        self.path = path
        self.f = f
        self.buf = bytearray(max(block_bytes, 1))
        self.n = 0          # valid bytes in buf
        self.eof = False

    def fill(self) -> None:
        """Read until the buffer is full or the stream ends."""
        view = memoryview(self.buf)
        try:
            while self.n < len(self.buf):
                k = _readinto(self.f, view[self.n:])
                if k == 0:
                    self.eof = True
                    break
                self.n += k
        except _decompress_errors() as e:   # (evaluated only when raised)
            raise DataError(self.path, None, f"cannot decompress: {e}") from None
        except OSError as e:
            raise DataError(self.path, None, f"cannot read: {e.strerror or e}") from None
        finally:
            view.release()

    def drop(self, k: int) -> None:
        """Forget the first k bytes (carrying the rest to the front)."""
        if k:
            self.buf[: self.n - k] = self.buf[k: self.n]
            self.n -= k

    def grow(self) -> None:
        self.buf.extend(bytes(len(self.buf)))


def _count_newlines(f, end: int, chunk: int = 1 << 22) -> int:
    """Newlines in the first `end` bytes of the seekable file f."""
    f.seek(0)
    buf = bytearray(chunk)
    view = memoryview(buf)
    count, pos = 0, 0
    while pos < end:
        k = f.readinto(view[: min(chunk, end - pos)])
        if not k:
            break
        count += _reader.count_newlines(view[:k])
        pos += k
    view.release()
    return count


def iter_blocks(
    path: str,
    *,
    zero_based: bool = False,
    block_bytes: int = 8 << 20,
    offset: int = 0,
    length: Optional[int] = None,
    progress: Optional[Callable[[int], object]] = None,
    count_lines: bool = True,
) -> Iterator[Block]:
    """Stream the rows of an svmlight file as Blocks of about `block_bytes` input each.

    offset/length select a byte range of a plain file (see the module notes); `progress` is called
    with the number of input bytes consumed after each read. Empty blocks are not yielded.
    count_lines=False skips counting the lines before `offset` (a read of the file up to it): line
    numbers, in blocks and errors, are then lines_before(path, offset) lower than the file's.
    """
    yield from _blocks(path, zero_based, block_bytes, offset, length, progress, whole=False,
                       count_lines=count_lines)


def lines_before(path: str, offset: int) -> int:
    """What to add to the line numbers of a range read with count_lines=False."""
    if offset <= 0:
        return 0
    with open(path, "rb") as f:
        return _count_newlines(f, offset - 1)


def load(
    path: str,
    *,
    zero_based: bool = False,
    block_bytes: int = 8 << 20,
    offset: int = 0,
    length: Optional[int] = None,
    progress: Optional[Callable[[int], object]] = None,
) -> Block:
    """All rows of the file (or of the byte range offset/length) as one Block."""
    for block in _blocks(path, zero_based, block_bytes, offset, length, progress, whole=True):
        return block
    return _empty_block()


def _blocks(path, zero_based, block_bytes, offset, length, progress, whole, count_lines=True):
    """The reading loop. With whole=True rows accumulate in the parser and one Block is yielded."""
    path = path if path == "-" else os.fspath(path)
    if block_bytes < 1:
        raise ValueError("block_bytes must be positive")
    if offset < 0 or (length is not None and length < 0):
        raise ValueError("offset and length must be non-negative")
    ranged = offset != 0 or length is not None
    if ranged and path == "-":
        raise DataError(path, None, "byte ranges need a plain (uncompressed) file")
    f, plain = _open(path)
    with f:
        if ranged and not plain:
            raise DataError(path, None, "byte ranges need a plain (uncompressed) file")
        stop = None if length is None else offset + length
        if plain:
            # a small file's buffer need not be a block: bytearray(n) writes all its n bytes (8 MB
            # of resident memory for a 27 kB heart_scale); blocks are cut the same either way
            try:
                rest = os.fstat(f.fileno()).st_size - offset
            except (OSError, AttributeError, io.UnsupportedOperation):
                rest = -1
            if rest >= 0:
                block_bytes = min(block_bytes, rest + 1)
        reader = _Reader(path, f, block_bytes)
        first_line = 1
        skip_partial = False
        if offset > 0:
            try:
                # lines before the range; the line containing `offset` belongs to the previous range
                # unless `offset` is the first byte of a line
                first_line = 1 + (_count_newlines(f, offset - 1) if count_lines else 0)
                f.seek(offset - 1)
                skip_partial = f.read(1) != b"\n"
                if not skip_partial:
                    first_line += 1
            except OSError as e:
                raise DataError(path, None, f"cannot read: {e.strerror or e}") from None
        pos = offset                          # file offset of reader.buf[0]
        if skip_partial:                      # drop the rest of the line that starts before offset
            while True:
                reader.fill()
                i = reader.buf.find(b"\n", 0, reader.n)
                if i >= 0:
                    reader.drop(i + 1)
                    pos += i + 1
                    first_line += 1
                    break
                pos += reader.n
                reader.n = 0
                if reader.eof:
                    return
        parser = _reader.Parser(zero_based, first_line)
        pending = 0                           # bytes consumed since the last yielded block
        while True:
            if stop is not None and pos >= stop:
                break
            reader.fill()
            limit = None if stop is None else stop - pos
            consumed, done, err = parser.parse(memoryview(reader.buf)[: reader.n], reader.eof, limit)
            if err:
                line = parser.err_line
                raise DataError(path, int(line), parser.error_reason(memoryview(reader.buf)[: reader.n]))
            reader.drop(consumed)
            pos += consumed
            pending += consumed
            if consumed and progress is not None:
                progress(consumed)
            if not whole and parser.n_rows:
                yield _block(parser.take(), pending)
                pending = 0
            if done or (reader.eof and reader.n == 0):
                break
            if consumed == 0:
                if reader.eof:                # cannot happen: a final buffer is parsed to its end
                    break
                reader.grow()                 # one line longer than the buffer
        if whole or parser.n_rows:
            yield _block(parser.take(), pending)


def _block(parts, nbytes: int) -> Block:
    indptr, indices, data, target, qid, cost, line, n_features = parts
    return Block(indptr, indices, data, target, qid, cost, line, n_features, nbytes)


class MemorySource(str):
    """Rows held in memory (a Python caller's arrays or blocks), standing where a path stands.

    It is the name used in messages ("<arrays>"), so every layer that names its input keeps
    working; `stream` yields its blocks instead of reading a file. `once`: the blocks come from an
    iterator that can be read only once (as standard input).
    """

    def __new__(cls, blocks, name="<arrays>", once=False):
        self = super().__new__(cls, name)
        self._blocks, self.once, self._used = blocks, once, False
        return self

    def iter_blocks(self, progress=None):
        if self.once:
            if self._used:
                raise DataError(str(self), None, "the blocks of an iterator can be read only once")
            self._used = True
        for block in self._blocks:
            if progress is not None:
                progress(block.nbytes)
            # a record of its own over the same arrays: training narrows a block by giving it
            # other arrays (the sequence task's store, the n-slack engine's int32 columns), which
            # must not change the caller's Block
            yield replace(block)

    def __reduce__(self):      # Dask and process pools: the rows travel with it
        return (MemorySource, (list(self._blocks) if not self.once else [], str(self), self.once))


#: input bytes per block of a streaming pass (online-dual's windows, the certificate's pass,
#: verify-bound, predict): a block and the reader's buffer are what such a pass holds of the file.
#: 1 MB reads as fast as 8 MB; 8 MB blocks were 31 MB of the heap peak of online-dual on UD
#: English EWT written 4 times, and +9 MB of predict's on sector's test file
STREAM_BLOCK = 1 << 20


def stream(source, *, zero_based: bool = False, block_bytes: int = STREAM_BLOCK,
           progress: Optional[Callable[[int], object]] = None) -> Iterator[Block]:
    """The blocks of a path (iter_blocks) or of a MemorySource, STREAM_BLOCK input bytes at a
    time by default."""
    if isinstance(source, MemorySource):
        return source.iter_blocks(progress)
    return iter_blocks(source, zero_based=zero_based, block_bytes=block_bytes, progress=progress)


def load_source(source, *, zero_based: bool = False,
                progress: Optional[Callable[[int], object]] = None) -> Block:
    """All rows of a path (load) or of a MemorySource, as one Block."""
    if isinstance(source, MemorySource):
        return concat_blocks(list(source.iter_blocks(progress)))
    return load(source, zero_based=zero_based, progress=progress)


def block_from_arrays(X, y, qid=None, *, name: str = "<arrays>", first_row: int = 1) -> Block:
    """A Block of in-memory rows: X a scipy sparse matrix or a 2-d numpy array (0-based columns),
    y the targets, qid the query / sentence ids (optional). Rows are numbered from first_row in
    messages, as lines are in files. Raises DataError naming the row for what the reader would
    refuse (non-finite values, negative qids)."""
    import scipy.sparse as sp
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim != 2:
            raise DataError(name, None, f"X must be 2-dimensional, got shape {arr.shape}")
        X = sp.csr_matrix(arr)
    X.sum_duplicates()
    X.sort_indices()
    y = np.asarray(y, dtype=np.float64).ravel()
    n = X.shape[0]
    if len(y) != n:
        raise DataError(name, None, f"X has {n} rows and y {len(y)} values")
    rows = np.arange(first_row, first_row + n, dtype=np.int64)
    bad = ~np.isfinite(y)
    if bad.any():
        raise DataError(name, int(rows[np.argmax(bad)]),
                        f"target {float(y[bad][0])!r} is not a finite number")
    if not np.all(np.isfinite(X.data)):
        at = int(np.argmax(~np.isfinite(X.data)))
        row = int(np.searchsorted(X.indptr, at, side="right")) - 1
        raise DataError(name, int(rows[row]), f"value {float(X.data[at])!r} is not a finite number")
    if qid is None:
        qid = np.full(n, -1, np.int64)
    else:
        qid = np.asarray(qid)
        if len(qid) != n:
            raise DataError(name, None, f"X has {n} rows and qid {len(qid)} values")
        if qid.dtype.kind not in "iu" or (qid < 0).any():
            raise DataError(name, None, "qid must hold non-negative integers")
        qid = qid.astype(np.int64)
    return Block(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.float64),
                 y, qid, np.ones(n), rows, int(X.shape[1]), 0)


def resize_in_place(holder, name, n):
    """Resize the array `holder.<name>` to n entries where it is (ndarray.resize: realloc, which
    remaps a mapped array instead of copying it beside itself); False, the array untouched, where
    something else refers to it (a view, an engine over it, a caller's name) or it does not own its
    data. The array is given no name here: numpy's check counts references, and a local name
    would be one more (a helper holding it so refused every resize, and copied instead)."""
    try:
        getattr(holder, name).resize(n, refcheck=True)
        return True
    except ValueError:
        return False
