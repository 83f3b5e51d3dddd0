"""How the online-dual mode reads its file (svmtrain.solvers.online): the reader's blocks checked
as training rows, cut into whole examples (sentences and queries stay whole), re-cut into chunks
and shuffle windows that do not depend on how the reader cut the file (so neither does the model),
windows of about equal size (_balanced_windows), a fingerprint of the rows that a resumed run checks
(RowDigest), and the task of a streamed file, its labels taken from a pass over it.
"""

import math

import numpy as np

from svmtrain import data

HEAD_BYTES = 1 << 20           # the head of a file that estimates its rows (_balanced_windows)


def _example_starts(block, grouping):
    """Row where each example of a block starts, and the block's end."""
    if grouping == "row":
        return np.arange(block.n_rows + 1)
    starts = np.flatnonzero(block.qid[1:] != block.qid[:-1]) + 1
    return np.concatenate(([0], starts, [block.n_rows])).astype(np.int64)


def _take_examples(block, starts, which):
    """The examples `which` (indices into starts) of a block, in that order, as a block."""
    which = np.asarray(which, np.int64)
    first, stop = starts[which], starts[which + 1]
    n = stop - first
    rows = np.repeat(first - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
    lo, hi = block.indptr[rows], block.indptr[rows + 1]
    lengths = hi - lo
    ends = np.cumsum(lengths)
    src = np.repeat(lo - (ends - lengths), lengths) + np.arange(int(lengths.sum()))
    indices = block.indices[src].astype(np.int64, copy=False)    # (a pinned window's are int32)
    return rows, data.Block(np.concatenate(([0], ends)).astype(np.int64), indices, block.data[src],
                      block.target[rows], block.qid[rows], block.cost[rows], block.line[rows],
                      int(indices.max()) + 1 if len(indices) else 0, 0)


class RowDigest:
    """A fingerprint of rows that does not depend on how they were cut into blocks: CRC-32s of
    their targets, row lengths, columns and values, each in row order."""

    def __init__(self):
        self.crcs = [0, 0, 0, 0]

    def add(self, block):
        parts = ((block.target, np.float64), (np.diff(block.indptr), np.int64),
                 (block.indices, np.int64), (block.data, np.float64))
        self.crcs = [data.crc32_as(a, dtype, c) for (a, dtype), c in zip(parts, self.crcs)]

    @property
    def value(self):
        a, b, c, d = self.crcs
        return ((a ^ (c << 16)) << 31 ^ (b ^ (d << 8))) & ((1 << 62) - 1)


def _rechunk(blocks, grouping, size):
    """Blocks of whole examples re-cut into chunks of `size` examples (the last may be short), so
    that chunks, and the model, do not depend on how the reader cut the file. Only a chunk that
    straddles two blocks is copied; the others are views of their block."""
    pending, have = None, 0            # a short chunk carried over, and its examples
    for block in blocks:
        starts = _example_starts(block, grouping)        # starts[k]: example k; last: the end
        n = len(starts) - 1
        first = 0
        if pending is not None:
            first = min(size - have, n)
            pending = data.concat_blocks([pending, block.rows(0, int(starts[first]))])
            have += first
            if have < size:
                continue
            yield pending
            pending, have = None, 0
        while n - first >= size:
            yield block.rows(int(starts[first]), int(starts[first + size]))
            first += size
        if first < n:
            pending, have = block.rows(int(starts[first]), block.n_rows), n - first
    if pending is not None:
        yield pending


def _checked(blocks, path, zero_based):
    """The blocks, each checked as training rows (feature indices a model can have, finite
    norms) as it is read."""
    for block in blocks:
        data.check_training_rows(block, path, zero_based)
        checked, block = [block], None
        yield checked.pop()         # not held here while the next block is read, nor while a
                                    # window that ends inside it is looked at (_window_parts)


def _compact(block, compact_values=False):
    """A block's own copy with int32 columns, holding nothing of the block it was cut from; its
    values, and its per-row arrays, in the narrowest types that hold them exactly where the task
    reads such types (Task.compact_values; data.narrow_row_arrays: 32 -> 10 bytes a token of a
    sequence window)."""
    values = block.data.astype(data.value_dtype(block.data, compact_values))     # (a copy)
    out = data.Block(np.array(block.indptr, np.int64), block.indices.astype(np.int32), values,
                     block.target, block.qid, block.cost, block.line, block.n_features, block.nbytes)
    data.narrow_row_arrays(out, compact_values, copy=True)
    return out


def _balanced_windows(path, grouping, size, max_rows):
    """(size, max_rows, windows): the window caps that cut a plain file into windows of about
    equal size, and how many it is estimated to have (None: not estimated).
    The number of windows is the file's at the caps given, its rows and examples estimated from
    its size and its first MiB (data.head_counts: not from the reader's blocks, so that the model
    does not depend on their size); the cap that sets it becomes that share of the estimate, at
    most the cap given (an estimate a little low leaves a small last window, as before). Without
    it the last window is what remains (UD English EWT written 4 times: three windows of 250,000
    rows and one of 68,308), and the others are larger than they need be: the window bound holds
    what the largest window's constraints needed. Other sources keep the caps given."""
    file_bytes = data.plain_size(path)
    if file_bytes is None or file_bytes <= HEAD_BYTES:     # (a file read whole is not scaled)
        return size, max_rows, None
    try:
        head_bytes, rows, runs = data.head_counts(path, HEAD_BYTES)
    except OSError:             # (gone since: the reader says so, at its first block)
        return size, max_rows, None
    if head_bytes <= 0 or head_bytes >= file_bytes or rows == 0:
        return size, max_rows, None
    scale = file_bytes / head_bytes
    rows_est = rows * scale
    examples_est = (rows if grouping == "row" else runs) * scale
    by_rows, by_examples = math.ceil(rows_est / max_rows), math.ceil(examples_est / size)
    n = max(by_rows, by_examples)
    if n <= 1:
        return size, max_rows, n
    if by_rows >= by_examples:
        max_rows = min(max_rows, math.ceil(rows_est / n))
    else:
        size = min(size, math.ceil(examples_est / n))
    return size, max_rows, n


def _window_parts(blocks, grouping, size, max_rows, compact_values=None):
    """The shuffle windows of the blocks of whole examples, as the parts they are cut into, each
    handed out as soon as it is cut, and None after a window's last part: windows of at most
    `size` examples and at most `max_rows` rows (at least one example each), independent of how
    the reader cut the file. `compact_values` (not None): each part is a compact copy
    (_compact, with compact_values) that holds nothing of the block it was cut from."""
    have_examples = have_rows = 0      # of the window being cut
    for block in blocks:
        starts = _example_starts(block, grouping)
        n = len(starts) - 1
        first = 0
        while first < n:
            # the examples first..k-1 of this block still fit: at most size - have examples, and
            # rows up to max_rows - have_rows (one example at least when the window is empty)
            k = min(n, first + size - have_examples)
            room = max_rows - have_rows
            k_rows = int(np.searchsorted(starts, starts[first] + room, side="right")) - 1
            k = min(k, max(k_rows, first + (1 if not have_examples else 0)))
            if k > first:
                part = [block.rows(int(starts[first]), int(starts[k]))]
                yield part.pop() if compact_values is None else _compact(part.pop(), compact_values)
                have_examples += k - first
                have_rows += int(starts[k] - starts[first])
                first = k
            if first < n or have_examples >= size or have_rows >= max_rows:
                # the rest of the block starts the next window: a copy of its own is held while
                # this window is looked at, not the reader's block (UD English EWT written 4
                # times: 2.8 MB of the heap peak)
                if first < n:
                    block = _rest_of(block, int(starts[first]), compact_values)
                    starts, n, first = starts[first:] - starts[first], n - first, 0
                else:
                    block = None
                yield None
                have_examples = have_rows = 0
        block = starts = None          # a block done with is not held while the next is read,
                                       # nor the last one while its window is looked at
    if have_examples:
        yield None


def _rest_of(block, first_row, compact_values):
    """Rows first_row.. of a block as a copy that holds nothing of it (compact as the parts are
    when `compact_values` is not None)."""
    rest = block.rows(first_row, block.n_rows)
    return rest.copy() if compact_values is None else _compact(rest, compact_values)


def _one_window(parts):
    """The parts of _window_parts up to the next None (the rest of the window)."""
    for part in parts:
        if part is None:
            return
        yield part


def _windows(blocks, grouping, size, max_rows):
    """The shuffle windows of _window_parts, each one block joined from its parts."""
    parts = _window_parts(blocks, grouping, size, max_rows)
    while True:
        pieces = list(_one_window(parts))
        if not pieces:
            return
        window = [data.concat_blocks(pieces)]
        del pieces                     # the parts are not held beside the joined window
        yield window.pop()


def streaming_task(task_cls, path, options, labels=None, zero_based=False, progress=None,
                   counts=None):
    """The task for a streamed file. A task that learns nothing from the rows is built from none; a
    labelled one from `labels` when given, else from one reading pass over the file (labels and
    their first lines only), which standard input cannot give. `counts` (a dict), when given, is
    filled with the rows of each label (that pass, or one for the purpose)."""
    empty = data.concat_blocks([])
    try:
        return task_cls.from_training_data(empty, path, options)
    except data.DataError:
        pass
    if counts is not None:
        if path == "-":
            raise data.DataError(path, None, "--class-weight balanced counts the classes in a pass "
                                             "before training: standard input is read once")
    if labels is not None and counts is None:
        values = np.asarray(labels, np.float64)
        lines = np.zeros(len(values), np.int64)
    else:
        if path == "-" or getattr(path, "once", False):
            raise data.DataError(path, None, f"the online-dual mode reads "
                                             f"{'standard input' if path == '-' else 'an iterator'} "
                                             f"once: give the labels with --labels")
        seen = {}
        for block in data.stream(path, zero_based=zero_based, progress=progress):
            values, first, n = np.unique(block.target, return_index=True, return_counts=True)
            for v, i, k in zip(values.tolist(), first.tolist(), n.tolist()):
                if v not in seen:
                    seen[v] = int(block.line[i])
                if counts is not None:
                    counts[v] = counts.get(v, 0) + k
        pairs = sorted(seen.items(), key=lambda kv: kv[1])
        values = np.array([v for v, _ in pairs], np.float64)
        lines = np.array([ln for _, ln in pairs], np.int64)
        if labels is not None:      # the order given (the pass was for the counts)
            values = np.asarray(labels, np.float64)
            lines = np.zeros(len(values), np.int64)
    n = len(values)
    pseudo = data.Block(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0), values,
                        np.full(n, -1, np.int64), np.ones(n), lines, 0, 0)
    return task_cls.from_training_data(pseudo, path, options)
