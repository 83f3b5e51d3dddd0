"""The online-dual mode's memory (svmtrain.solvers.online): the row store that its cached
constraints name rows in (RowStore), the cache of constraints over it (Cache), and the support
vectors a bound evicted, kept to come back with their example (Folded) and folded into w0
(SparseW0).

Each of them counts its bytes (`nbytes`): the cache limit and the window bound are bounds in bytes.
Why each layout is as it is, with the measurements that chose it, is said where it is defined; the
whole is taken apart in the online module's docstring (Memory, The window bound).
"""

from dataclasses import field
from types import SimpleNamespace
from typing import Optional

import numpy as np

from svmtrain import data
from svmtrain.data import resize_in_place
from svmtrain.records import record
from svmtrain.tasks.base import Constraints

COMPACT_PIECE = 1 << 16         # non-zeros (and rows) a row-store compaction moves at a time
                               # (its index arrays are int64: 1 << 20 was 25 MB of UD x4's heap
                               # peak)
FOLD_BANDS = 8                 # a large fold into w0 is added w's length / 8 columns at a time,
                               # and a smaller one as a list of its entries (SparseW0)
FOLD_PIECE = 1 << 13           # evicted constraints folded into w0 and kept (Folded.add) at a
                               # time
REL_UNKNOWN = -2               # a term's row in its example, when a resume state did not know it
STORE_SPARE = (4096, 1 << 16)  # rows, non-zeros of room a rebuilt or pinned row store leaves for
                               # the rows chunks add beyond the data (sequence: a unit row each)


class RowStore:
    """CSR rows copied out of streamed chunks, with a count of the cached terms using each row.

    Columns are int32, the engine's own (it reads them in place instead of converting a copy).
    Values are uint8 while every row added had uint8 values (the sequence task keeps its
    indicator features so: svmtrain.data.value_dtype), then float32 or float64 (numpy's promotion
    of the two types) from the first rows that had not.
    Arrays grow by a quarter (_room; appending a chunk's rows costs its own size, not the store's). The
    rows of the shuffle window being looked at are the store's too (`pin`): the window is held
    once, its rows are never compacted away while it is looked at, and a constraint on one of
    them costs no copy."""

    def __init__(self, indptr=None, indices=None, data_=None, refs=None):
        if indptr is None:
            indptr, indices, data_, refs = (np.zeros(1, np.int64), np.zeros(0, np.int32),
                                            np.zeros(0), np.zeros(0, np.int64))
        self.n_rows = len(indptr) - 1
        self.nnz = int(indptr[-1])
        self._indptr = _grown(np.asarray(indptr, np.int64), len(indptr))
        self._indices = _grown(np.asarray(indices, np.int32), self.nnz)
        data_ = np.asarray(data_)
        self._data = _grown(data_.astype(data_.dtype if data_.dtype in (np.uint8, np.float32)
                                         else np.float64, copy=False), self.nnz)
        self._refs = _grown(np.asarray(refs, np.int64), self.n_rows)
        self._pos = None       # each row's row in its example, once tracked (track_positions)
        self.pinned = None     # (first row, rows) of the window being looked at
        self.compactions = 0   # how often the arrays were rebuilt (a block over them is then stale)
        self.moved = None      # old row -> row now (-1: dropped), over the compactions since
                               # the owner last looked (see OnlineDual._follow_store)

    @property
    def indptr(self):
        return self._indptr[:self.n_rows + 1]

    @property
    def indices(self):
        return self._indices[:self.nnz]

    @property
    def data(self):
        return self._data[:self.nnz]

    @property
    def refs(self):
        return self._refs[:self.n_rows]

    @property
    def positions(self):
        """Each row's row in its example (int32; -1: a row beyond the data, such as the sequence
        task's unit row, or one whose place is not known, kept by value when its constraint is
        evicted; REL_UNKNOWN: restored without it), or None when not tracked. A bounded cache's
        evicted support vectors are kept as terms over their example's rows (Folded), which
        needs it: kept a row, not a term (UD English EWT written 4 times: 5.3 MB for its 1.3
        million cached terms, about 1 MB for its rows)."""
        return None if self._pos is None else self._pos[:self.n_rows]

    def track_positions(self, pos=None):
        """Keep each row's row in its example from now on: `pos` for the first rows (the others
        -1, until set_positions places them)."""
        self._pos = np.full(max(len(self._refs), self.n_rows), -1, np.int32)
        if pos is not None:
            self._pos[:len(pos)] = pos

    def set_positions(self, rows, pos):
        if self._pos is not None:
            self._pos[rows] = pos

    def place_window(self, starts):
        """The pinned window's rows' places in their examples, which start at its rows `starts`."""
        if self._pos is not None:
            first, n = self.pinned
            self._pos[first:first + n] = _places(starts)

    def _row_arrays(self):
        """The names of the per-row arrays besides the row pointers."""
        return ("_refs",) if self._pos is None else ("_refs", "_pos")

    @property
    def nbytes(self):
        """Bytes of the rows the cache's terms use besides the data: a pinned window's rows are
        the window's own (held for its looks whether or not a constraint uses them), and rows no
        term uses are not counted (they go at the next compaction, and a resume state does not
        hold them: a resumed run then counts what the run it continues counted)."""
        return 8 + self.rows_bytes(self.refs > 0)

    def dead_bytes(self):
        """The bytes of the rows no term uses (beyond a pinned window), which a compaction drops."""
        return self.rows_bytes(self.refs == 0)

    def rows_bytes(self, mask):
        """Bytes of the rows where mask is True outside a pinned window: their entries, and their
        row pointers and counts (8 bytes each)."""
        if self.pinned is not None:
            first, n = self.pinned
            mask[first:first + n] = False
        rows = int(np.count_nonzero(mask))
        nnz = _rows_nnz(self.indptr, mask) if rows else 0
        return (4 + self._data.itemsize) * nnz + (16 if self._pos is None else 20) * rows

    def add(self, indptr, indices, data_, rows, spare=None):
        """Copy rows `rows` of the CSR (indptr, indices, data_) in; their new row numbers.
        `spare`: (rows, nonzeros) of room to leave after them when the arrays must grow (then
        they grow to that, not by doubling)."""
        rows = np.asarray(rows, np.int64)
        starts = indptr[rows]
        lengths = indptr[rows + 1] - starts
        total = int(lengths.sum())
        dtype = data_.dtype if self.nnz == 0 else np.promote_types(self._data.dtype, data_.dtype)
        if dtype != self._data.dtype:
            self._retype(dtype)
        self._reserve(len(rows), total, spare)
        ends = np.cumsum(lengths)
        src = np.repeat(starts - (ends - lengths), lengths) + np.arange(total)
        self._indices[self.nnz:self.nnz + total] = indices[src]
        self._data[self.nnz:self.nnz + total] = data_[src]
        self._indptr[self.n_rows + 1:self.n_rows + 1 + len(rows)] = self.nnz + ends
        self._refs[self.n_rows:self.n_rows + len(rows)] = 0
        if self._pos is not None:
            self._pos[self.n_rows:self.n_rows + len(rows)] = -1
        ids = self.n_rows + np.arange(len(rows), dtype=np.int64)
        self.n_rows += len(rows)
        self.nnz += total
        return ids

    def _retype(self, dtype):
        """Values as `dtype` from now on (an empty store takes the first rows' type; narrower
        values widen exactly for rows that the narrower type cannot hold). A block over the old
        array is stale afterwards, as after a compaction."""
        self._data = self._data.astype(dtype)
        self.compactions += 1

    def _reserve(self, rows, nnz, spare=None):
        """Room for `rows` more rows of `nnz` non-zeros (see add)."""
        spare_rows, spare_nnz = (None, None) if spare is None else spare
        before = self._indices, self._data
        self._indptr = _room(self._indptr, self.n_rows + 1 + rows, spare_rows)
        self._indices = _room(self._indices, self.nnz + nnz, spare_nnz)
        self._data = _room(self._data, self.nnz + nnz, spare_nnz)
        for name in self._row_arrays():
            setattr(self, name, _room(getattr(self, name), self.n_rows + rows, spare_rows))
        if self._indices is not before[0] or self._data is not before[1]:
            # a block over the old arrays (the pinned window's) is stale: its owner takes the
            # new ones, and the old are let go (the window's block held them through its sweeps)
            self.compactions += 1

    def pin(self, parts, before=None):
        """Take a window's rows in from its parts (an iterator: each is stored as it comes, and
        let go before the next is cut) and hold them while it is looked at; returns the window
        as a block over the store's arrays (its per-row fields joined from the parts'), None when
        there were no parts. `before()` is called once the first part is read, before anything
        is stored (it may compact the store): the owner knows then that a window follows, and
        holds one part of it.
        The arrays grow in place (realloc) by each part and as much again, and are cut back to the
        window and a spare for the rows its chunks' constraints add beyond the data (sequence: a
        unit row each): the parts, read whole before they were stored, were held beside their
        copy in the store (UD English EWT written 4 times, 250,000-row windows: 23 MB of the heap
        peak)."""
        parts = iter(parts)
        head = next(parts, None)
        if head is None:
            return None
        if before is not None:
            before()
        first = self.n_rows
        target, qid, cost, line = [], [], [], []
        n_features = nbytes = 0
        p, head = head, None
        while p is not None:
            self._grow_in_place(p.n_rows, p.nnz)
            self.add(p.indptr, p.indices, p.data, np.arange(p.n_rows))
            target.append(p.target)
            qid.append(p.qid)
            cost.append(p.cost)
            line.append(p.line)
            n_features, nbytes = max(n_features, p.n_features), nbytes + p.nbytes
            del p
            p = next(parts, None)
        self._shrink()
        cat = np.concatenate
        fields = SimpleNamespace(target=cat(target), qid=cat(qid), cost=cat(cost), line=cat(line),
                                 n_features=n_features, nbytes=nbytes)
        self.pinned = (first, self.n_rows - first)
        return self.pinned_block(fields)

    def _grow_in_place(self, rows, nnz):
        """Room for `rows` more rows of `nnz` non-zeros and as much again, by resizing the arrays
        in place (realloc: a large array is remapped, not copied beside itself), or as add
        grows them where something else refers to an array."""
        arrays = ((("_indptr", self.n_rows + 1, rows),)
                  + tuple((name, self.n_rows, rows) for name in self._row_arrays())
                  + (("_indices", self.nnz, nnz), ("_data", self.nnz, nnz)))
        for name, used, more in arrays:
            if len(getattr(self, name)) < used + more:
                resize_in_place(self, name, used + 2 * more)

    def pinned_block(self, like):
        """The pinned window as a block over the store's arrays (`like`: its per-row fields)."""
        first, n = self.pinned
        ptr = self.indptr[first:first + n + 1]
        lo, hi = int(ptr[0]), int(ptr[-1])
        return data.Block(ptr - lo, self._indices[lo:hi], self._data[lo:hi], like.target, like.qid,
                          like.cost, like.line, like.n_features, like.nbytes)

    def unpin(self):
        self.pinned = None

    def saved(self, term_row):
        """The rows some term uses, as CSR arrays and their counts for a resume state (a pinned
        window's other rows are read again on resume); term_row renumbered to them; and each
        one's row in the pinned window (-1: none), so that a resumed run shares them again."""
        live = np.flatnonzero(self.refs > 0)
        renumber = np.full(self.n_rows, -1, np.int64)
        renumber[live] = np.arange(len(live))
        starts = self.indptr[live]
        lengths = self.indptr[live + 1] - starts
        ends = np.cumsum(lengths)
        src = np.repeat(starts - (ends - lengths), lengths) + np.arange(int(lengths.sum()))
        window_row = np.full(len(live), -1, np.int64)
        if self.pinned is not None:
            first, n = self.pinned
            inside = (live >= first) & (live < first + n)
            window_row[inside] = live[inside] - first
        arrays = (np.concatenate(([0], ends)).astype(np.int64), self.indices[src], self.data[src],
                  self.refs[live])
        return arrays, renumber[term_row], window_row

    def hold(self, term_row):
        np.add.at(self._refs, term_row, 1)

    def release(self, term_row):
        np.subtract.at(self._refs, term_row, 1)

    def _shrink(self):
        """Cut the arrays to the rows and a spare, in place (realloc), each one nothing else
        refers to (numpy's reference check: a block over them keeps its array whole)."""
        spare_rows, spare_nnz = STORE_SPARE
        arrays = ((("_indptr", self.n_rows + 1 + spare_rows),)
                  + tuple((name, self.n_rows + spare_rows) for name in self._row_arrays())
                  + (("_indices", self.nnz + spare_nnz), ("_data", self.nnz + spare_nnz)))
        for name, size in arrays:
            if len(getattr(self, name)) > size:
                resize_in_place(self, name, size)

    def compact(self, term_row, force=False):
        """Drop the rows no term uses when they hold more entries than the live rows; returns
        term_row, renumbered in place when rows moved.

        The kept rows move down in place, a bounded piece at a time, and the arrays are then cut
        to them and a spare where nothing else refers to them: a rebuilt copy of the store next to
        the old one was the peak of a one-pass UD English EWT run (39 MB). A block over the old
        arrays is stale afterwards (`compactions` counts the moves), as it was with new arrays.
        The rows are taken a piece at a time too (COMPACT_PIECE rows or entries), so that what a
        compaction holds besides the store is a byte and a new number per row: the kept rows'
        starts, lengths and ends listed whole, with their numbers, were 7-11 MB above the level
        of UD written 4 times at its peak, in a window's evictions."""
        live = self.refs > 0
        if self.pinned is not None:
            live[self.pinned[0]:self.pinned[0] + self.pinned[1]] = True
        if live.all():              # nothing to drop (a forced compaction still cuts the arrays)
            if force:
                self._shrink()
            return term_row
        n_rows = self.n_rows
        if not force:
            dead = ~live
            dead_nnz, dead_rows = _rows_nnz(self.indptr, dead), int(np.count_nonzero(dead))
            del dead
            if (dead_nnz <= max(self.nnz - dead_nnz, 1 << 16)
                    and dead_rows <= max(n_rows - dead_rows, 1 << 12)):
                return term_row
        indptr = self._indptr
        renumber = np.full(n_rows, -1, np.int64)
        rows = nnz = 0              # kept so far: where the next piece's rows and entries go
        first = 0
        # rows in order, each to at or below where it was: a piece is read before it is written,
        # and never overwrites a later piece's rows (nor the row pointers those are read from)
        while first < n_rows:
            ends = indptr[first + 1:min(first + COMPACT_PIECE, n_rows) + 1]
            fit = int(np.searchsorted(ends, indptr[first] + COMPACT_PIECE, side="right"))
            last = first + max(fit, 1)
            keep = first + np.flatnonzero(live[first:last])
            if len(keep):
                starts = indptr[keep]
                n = indptr[keep + 1] - starts
                total = int(n.sum())
                src = np.repeat(starts - (np.cumsum(n) - n), n) + np.arange(total)
                self._indices[nnz:nnz + total] = self._indices[src]
                self._data[nnz:nnz + total] = self._data[src]
                del src
                self._refs[rows:rows + len(keep)] = self._refs[keep]
                if self._pos is not None:
                    self._pos[rows:rows + len(keep)] = self._pos[keep]
                indptr[rows + 1:rows + 1 + len(keep)] = nnz + np.cumsum(n)
                renumber[keep] = rows + np.arange(len(keep))
                rows, nnz = rows + len(keep), nnz + total
            first = last
        indptr[0] = 0
        del indptr, ends                     # (views: _shrink's reference check would keep it)
        self._refs[rows:n_rows] = 0
        self.n_rows, self.nnz = rows, nnz
        self._shrink()
        self.compactions += 1
        if self.pinned is not None:          # its rows were all kept, in order
            self.pinned = (int(renumber[self.pinned[0]]), self.pinned[1])
        if self.moved is None:
            self.moved = renumber
        else:                                # (its readers take it and let it go)
            earlier = self.moved >= 0
            self.moved[earlier] = renumber[self.moved[earlier]]
        # in place, a piece at a time: renumber[term_row] whole was an int64 copy of every term
        # beside the int32 original, at the peak of a one-pass UD English EWT run (9 + 5 MB)
        for first in range(0, len(term_row), COMPACT_PIECE):
            piece = term_row[first:first + COMPACT_PIECE]
            piece[...] = renumber[piece]
        return term_row


def _rows_nnz(indptr, mask):
    """The entries of the rows where mask is True, COMPACT_PIECE rows at a time (every row's
    length listed is 8 bytes a row)."""
    total = 0
    for first in range(0, len(mask), COMPACT_PIECE):
        rows = indptr[first:first + COMPACT_PIECE + 1]
        total += int((rows[1:] - rows[:-1])[mask[first:first + COMPACT_PIECE]].sum())
    return total


def _grown(a, n):
    out = np.zeros(max(2 * n, 16), a.dtype)
    out[:len(a)] = a
    return out


def _room(a, n, spare=None):
    """`a` with room for n entries: a quarter longer, or n + spare exactly when a spare is given.
    (A quarter, not double: a pinned window's arrays grow so when the rows its constraints add
    outrun their spare, and doubled they held 12 MB of UD English EWT's heap peak for nothing;
    appending still costs a constant a row, amortised.)"""
    if n <= len(a):
        return a
    out = np.zeros(max(len(a) + len(a) // 4, n, 16) if spare is None else n + spare, a.dtype)
    out[:len(a)] = a
    return out


@record
class Cache:
    """Cached constraints (terms over the store's rows) and their per-constraint state."""

    cons: Constraints          # group = the example's global id (position in the file, or key)
    C: np.ndarray              # C_i of each constraint's example
    alpha: np.ndarray
    grad: np.ndarray           # g_c = l_c - w.x_c at the current w
    age: np.ndarray            # insertion number (eviction: oldest first)
    idle: np.ndarray           # re-optimisations with alpha == 0
    store: RowStore = field(default_factory=RowStore)
    sqnorm: Optional[np.ndarray] = None   # ||x_c||^2 once an engine computed it (nan: not yet),
                                          # so that a re-optimisation does not compute it again

    def __post_init__(self):
        if self.sqnorm is None:
            self.sqnorm = np.full(self.cons.size, np.nan)

    @classmethod
    def empty(cls):
        z = np.zeros(0)
        i = np.zeros(0, np.int64)
        return cls(Constraints.empty(), z, z, z, i, i)

    @property
    def size(self):
        return self.cons.size

    @property
    def nbytes(self):
        return self.constraint_bytes(self.cons.size, len(self.cons.term_row)) + self.store.nbytes

    def constraint_bytes(self, m, t):
        """Bytes of m cached constraints of t terms in all, beside their rows (a term's row,
        offset, scale and bias flag)."""
        return 8 * (m + 1) + 64 * m + _term_bytes(self.cons) * t

    def keep(self, mask):
        """Keep the constraints where mask is True; release the rows of the others."""
        gone = np.repeat(~mask, np.diff(self.cons.tptr))        # the terms of the others
        if np.any(gone):
            self.store.release(self.cons.term_row[gone])
        del gone
        self.cons.retain(mask)
        self.C, self.alpha, self.grad = self.C[mask], self.alpha[mask], self.grad[mask]
        self.age, self.idle, self.sqnorm = self.age[mask], self.idle[mask], self.sqnorm[mask]
        self.cons.term_row = self.store.compact(self.cons.term_row)

    def groups(self):
        """(sorted global ids, index of each constraint's group, C per group, xi per group)."""
        ids, inv = np.unique(self.cons.group, return_inverse=True)
        C_group = np.zeros(len(ids))
        C_group[inv] = self.C
        xi = np.full(len(ids), -np.inf)
        np.maximum.at(xi, inv, self.grad)
        return ids, inv.astype(np.int64), C_group, np.maximum(xi, 0.0)


class Folded:
    """The support vectors a bounded cache evicted, kept as terms over their example's own rows
    (`rel`: a row of the example, or -1 - k: row k of `extra`, a row beyond the data such as the
    sequence task's unit row), or as the task's codes (`coded`), without the data they name: when
    the example is read again its rows are at hand, and its constraints return to the cache with
    their alphas (OnlineDual._unfold), so that later passes revise what the eviction froze (see
    Evicted support vectors come back in the module docstring)."""

    def __init__(self):
        i64, f64 = np.zeros(0, np.int64), np.zeros(0)
        self.group, self.key, self.alpha, self.margin = i64, i64, f64, f64
        self.coded = np.zeros(0, bool)        # kept as the task's code (Task.evicted_codes)
        self.cptr, self.codes = np.zeros(1, np.int64), i64
        self.tptr, self.rel = np.zeros(1, np.int64), np.zeros(0, np.int32)
        self.scale, self.offset, self.bias = f64, i64, np.zeros(0, bool)
        self.extra = (np.zeros(1, np.int64), np.zeros(0, np.int32), f64)     # CSR

    @property
    def size(self):
        return len(self.group)

    @property
    def nbytes(self):
        arrays = (self.group, self.key, self.alpha, self.margin, self.coded, self.cptr, self.codes,
                  self.tptr, self.rel, self.scale, self.offset, self.bias) + self.extra
        return sum(a.nbytes for a in arrays)

    def constraint_bytes(self):
        """The bytes of each constraint: its own, its terms' and its extra rows' (a row shared
        by several is counted with each: an upper bound)."""
        per = np.diff(self.tptr)
        each = 49 + 8 * np.diff(self.cptr) + per * (self.rel.itemsize + self.scale.itemsize
                                                    + self.offset.itemsize + 1)
        beyond = self.rel < 0
        if np.any(beyond):
            indptr, _, values = self.extra
            k = -1 - self.rel[beyond].astype(np.int64)
            row_bytes = 8 + (indptr[k + 1] - indptr[k]) * (4 + values.itemsize)
            owner = np.repeat(np.arange(self.size), per)[beyond]
            each = each + np.bincount(owner, weights=row_bytes, minlength=self.size).astype(np.int64)
        return each

    def add(self, cache, mask, alpha, coder=None):
        """Keep the cache's constraints where mask is True, with their alphas: as the codes
        `coder` (Task.evicted_codes) gives, else as their terms. FOLD_PIECE constraints at a time:
        the window bound evicts a window's support vectors at once, and their terms copied whole
        (and their rows in their example, as int64) were 35 MB of the heap peak of UD English
        EWT written 4 times."""
        for piece in _pieces(mask, FOLD_PIECE):
            self._add(cache, piece, alpha, coder)

    def _add(self, cache, mask, alpha, coder):
        cons, store = cache.cons, cache.store
        part = cons.select(mask)
        rel = store.positions[part.term_row].astype(np.int64)
        cat = np.concatenate
        coded = None if coder is None else coder(part, rel)
        self.group, self.key = cat([self.group, part.group]), cat([self.key, part.key])
        self.alpha, self.margin = cat([self.alpha, alpha[mask]]), cat([self.margin, part.margin])
        self.coded = cat([self.coded, np.full(part.size, coded is not None)])
        if coded is not None:
            cptr, codes = coded
            self.cptr = cat([self.cptr, self.cptr[-1] + cptr[1:]])
            self.codes = cat([self.codes, codes])
            self.tptr = cat([self.tptr, np.full(part.size, self.tptr[-1])])
            return
        self.cptr = cat([self.cptr, np.full(part.size, self.cptr[-1])])
        beyond = rel < 0
        if np.any(beyond):
            rows, inverse = np.unique(part.term_row[beyond], return_inverse=True)
            indptr, indices, values = self.extra
            n_extra = len(indptr) - 1
            lo, hi = store.indptr[rows], store.indptr[rows + 1]
            src = _ranges(lo, hi)
            self.extra = (np.concatenate([indptr, indptr[-1] + np.cumsum(hi - lo)]),
                          np.concatenate([indices, store.indices[src]]),
                          np.concatenate([values, store.data[src]]) if len(values)
                          else store.data[src].copy())
            rel[beyond] = -1 - (n_extra + inverse)
        self.tptr = cat([self.tptr, self.tptr[-1] + part.tptr[1:]])
        self.rel = cat([self.rel, rel.astype(np.int32)])
        self.scale = cat([self.scale, part.term_scale]) if len(self.scale) else part.term_scale.copy()
        self.offset = cat([self.offset, part.term_offset]) if len(self.offset) else part.term_offset.copy()
        self.bias = cat([self.bias, part.term_bias])

    def take(self, mask):
        """Remove the constraints where mask is True; returns them (their `extra` rows renumbered
        to a CSR of their own)."""
        out = Folded()
        lengths = np.diff(self.tptr)
        terms = np.repeat(mask, lengths)
        for name in ("group", "key", "alpha", "margin", "coded"):
            a = getattr(self, name)
            setattr(out, name, a[mask])
            setattr(self, name, a[~mask])
        out.tptr = np.concatenate(([0], np.cumsum(lengths[mask]))).astype(np.int64)
        self.tptr = np.concatenate(([0], np.cumsum(lengths[~mask]))).astype(np.int64)
        n_codes = np.diff(self.cptr)
        in_codes = np.repeat(mask, n_codes)
        out.codes, self.codes = self.codes[in_codes], self.codes[~in_codes]
        out.cptr = np.concatenate(([0], np.cumsum(n_codes[mask]))).astype(np.int64)
        self.cptr = np.concatenate(([0], np.cumsum(n_codes[~mask]))).astype(np.int64)
        for name in ("rel", "scale", "offset", "bias"):
            a = getattr(self, name)
            setattr(out, name, a[terms])
            setattr(self, name, a[~terms])
        out.extra = self._extra_of(out)
        self.extra = self._extra_of(self)
        return out

    def _extra_of(self, part):
        """The extra rows `part`'s terms use, as a CSR of their own (part.rel renumbered)."""
        indptr, indices, values = self.extra
        beyond = part.rel < 0
        rows, inverse = np.unique(-1 - part.rel[beyond].astype(np.int64), return_inverse=True)
        lo, hi = indptr[rows], indptr[rows + 1]
        src = _ranges(lo, hi)
        rel = part.rel.copy()
        rel[beyond] = -1 - inverse
        part.rel = rel
        return (np.concatenate(([0], np.cumsum(hi - lo))).astype(np.int64), indices[src], values[src])


class SparseW0:
    """w0, the w of the evicted support vectors (sum alpha x over them), as its non-zeros, or as a
    vector once that is smaller.

    w0 is as long as w, but a fold touches the columns of the evicted constraints only: on UD
    English EWT the trained w has 272,536 non-zeros of its 2.0 million entries (14%). Held dense,
    w0 was 16 MB beside w, and beside the engine's w and scratch in its solves (UD written 4 times
    under --cache-limit 32MB: peak RSS 184.1 MB dense, 178.2 dense outside the solves only, 167.6
    sparse, with RowStore._reserve letting old arrays go; the same models). A fold adds its
    entries in the order and with the products a dense w0 took them (plane_entries, np.add.at),
    so w0 is the same bit for bit. A fold of more entries than an eighth of w is added an eighth of
    w's columns at a time (`add_dense_bands`), each band a dense vector for the moment, as
    accumulate_plane adds them: passes over the fold's entries instead of a sort of them, and no
    list of them (16 bytes an entry: the folds at a window's end can be millions of entries, and
    such lists took UD written 4 times to 226.6 MB), nor a dense copy of w0 beside it.

    Held as its non-zeros, an entry takes 12 bytes against a vector's 8: w0 becomes a vector
    (`full`) when more than two thirds of its entries are non-zero, and its non-zeros again below
    one third (sector multiclass under --cache-limit 8MB: w0 is nearly dense, and the non-zeros
    took 70 MB where the vector takes 46). w.w0, in UB, is summed over the non-zeros or the whole
    vector: its last bits may differ from the other's (the models above did not move)."""

    def __init__(self, n):
        self.n = int(n)
        self.index = np.zeros(0, np.int32 if self.n < 2**31 else np.int64)     # ascending
        self.value = np.zeros(0)
        self.full = None            # w0 as a vector, when it is held so (index, value empty)

    @classmethod
    def of(cls, dense):
        out = cls(len(dense))
        out.full = np.ascontiguousarray(dense, np.float64)     # (the caller's: not copied)
        out._settle()
        return out

    def dense(self, out=None):
        """w0 as a vector (into `out`, a float64 vector of its length, when given)."""
        if self.full is not None:
            if out is None:
                return self.full.copy()
            out[:] = self.full
            return out
        if out is None:
            out = np.zeros(self.n)
        else:
            out[:] = 0.0
        out[self.index] = self.value
        return out

    def widened(self, at, gap):
        """w0 with `gap` zeros inserted before entry `at` (new features: OnlineDual._widen), held
        as SparseW0.of holds a vector: as such unless under a third of it is non-zero."""
        if self.full is not None:
            return SparseW0.of(inserted_zeros(self.full, at, gap))
        out = SparseW0(self.n + gap)
        kept = self.value != 0.0
        index = self.index[kept].astype(out.index.dtype)
        index[index >= at] += gap
        out.index, out.value = index, self.value[kept]
        # (of's rule decides the form: dense enough, the vector)
        return SparseW0.of(out.dense()) if 3 * len(index) >= out.n else out

    def add_to(self, w):
        """w += w0, in place."""
        if self.full is not None:
            w += self.full
        else:
            w[self.index] += self.value

    def dot(self, w):
        """w . w0"""
        if self.full is not None:
            return float(np.dot(w, self.full))
        return float(np.dot(w[self.index], self.value))

    def add_dense_bands(self, accumulate, bands):
        """w0 += a sum that `accumulate(band, lo, checked)` adds to the columns lo .. lo + len(band)
        of a dense vector (accumulate_plane over a band; `checked`: an earlier call checked the
        sum's terms), `bands` bands one after the other: a vector of a band's length at a time
        instead of w0's (w0 held as a vector: one band, itself).

        The bands go from the last to the first, and the old entries are cut back (in place) to
        those before each band once it is done, so that the old entries and the new are held
        together a band's worth at a time, not whole; the band and the old entries go before the
        new pieces are joined, the index pieces before the values. Each column's sum is its
        band's own, so the order of the bands moves no bit."""
        if self.full is not None:
            accumulate(self.full, 0, False)
            self._settle()
            return
        size = -(-self.n // max(int(bands), 1))
        dtype = self.index.dtype
        index, value = [], []
        band = np.empty(min(size, self.n))
        for k, lo in enumerate(reversed(range(0, self.n, size))):
            part = band[:min(size, self.n - lo)]
            part[:] = 0.0
            a = int(np.searchsorted(self.index, lo))     # the entries from a on are this band's
            part[self.index[a:] - lo] = self.value[a:]
            accumulate(part, lo, k > 0)
            nz = np.flatnonzero(part)
            index.append((nz + lo).astype(dtype))
            value.append(part[nz])
            del nz
            self._cut(a)
        del band, part
        self.index, self.value = np.zeros(0, dtype), np.zeros(0)
        if index:
            self.index = np.concatenate(index[::-1])
            del index[:]
            self.value = np.concatenate(value[::-1])
            del value[:]
        self._settle()

    def _cut(self, n):
        """Keep the first n entries: the arrays cut in place (realloc) where nothing else refers to
        them, else copied."""
        for name in ("index", "value"):
            if not resize_in_place(self, name, n):
                setattr(self, name, getattr(self, name)[:n].copy())

    def add(self, columns, values):
        """w0[columns[k]] += values[k] for k = 0, 1, ... in turn (plane_entries' list). Entries
        that end at 0 are dropped."""
        if not len(columns):
            return
        if self.full is not None:
            np.add.at(self.full, columns, values)
            self._settle()
            return
        columns = columns.astype(self.index.dtype)      # (searchsorted then takes index as it is)
        new = np.unique(columns)
        at = np.searchsorted(self.index, new)
        found = (self.index[np.minimum(at, len(self.index) - 1)] == new if len(self.index)
                 else np.zeros(len(new), bool))
        if not np.all(found):
            self.index = np.insert(self.index, at[~found], new[~found])
            self.value = np.insert(self.value, at[~found], 0.0)
        np.add.at(self.value, np.searchsorted(self.index, columns), values)
        if not np.all(self.value):
            kept = self.value != 0.0
            self.index, self.value = self.index[kept], self.value[kept]
        self._settle()

    def _settle(self):
        """Hold w0 in the smaller form: as a vector above two thirds of non-zeros, as its
        non-zeros below one third (between, as it is)."""
        if self.full is None and 3 * len(self.index) > 2 * self.n:
            full = np.zeros(self.n)
            full[self.index] = self.value
            self.full, self.index, self.value = full, self.index[:0], self.value[:0]
        elif self.full is not None:
            nnz = int(np.count_nonzero(self.full))
            if 3 * nnz < self.n:
                self.index = np.flatnonzero(self.full).astype(self.index.dtype)
                self.value = self.full[self.index]
                self.full = None


def inserted_zeros(v, at, gap):
    """The vector v with `gap` zeros inserted before entry `at` (one new vector)."""
    out = np.empty(len(v) + gap)
    out[:at] = v[:at]
    out[at:at + gap] = 0.0
    out[at + gap:] = v[at:]
    return out


def _ranges(lo, hi):
    """The indices lo[k]:hi[k] of every k, joined."""
    n = hi - lo
    return np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))


def _pieces(mask, size):
    """Masks of the True entries of `mask`, `size` of them at a time, in order."""
    which = np.flatnonzero(mask)
    for first in range(0, len(which), size):
        piece = np.zeros(len(mask), bool)
        piece[which[first:first + size]] = True
        yield piece


def _places(starts):
    """Each row's row in its example, for examples that start at rows `starts`."""
    return np.arange(starts[-1]) - np.repeat(starts[:-1], np.diff(starts))


def _kept_bytes(cache, kept):
    lengths = np.diff(cache.cons.tptr)
    keep = np.zeros(cache.size, bool)
    keep[kept] = True
    # the rows of the kept terms as a byte mask over the store, filled a piece of terms at a time:
    # the kept terms' rows listed (and sorted by np.unique) were 26 MB of the heap peak of UD
    # written 4 times under --cache-limit 32MB
    term_kept = np.repeat(keep, lengths)
    term_row = cache.cons.term_row
    used = np.zeros(cache.store.n_rows, bool)
    for first in range(0, len(term_row), COMPACT_PIECE):
        piece = slice(first, first + COMPACT_PIECE)
        used[term_row[piece][term_kept[piece]]] = True
    del term_kept
    # counted as Cache.nbytes counts (a count of its own, 12 bytes a row entry where a sequence
    # store holds 5, evicted further below the bound than it asked)
    return (cache.constraint_bytes(len(kept), int(lengths[kept].sum()))
            + 8 + cache.store.rows_bytes(used))


def _term_bytes(cons):
    """Bytes a cached term costs: 25 with int64 rows and offsets and float64 scales, 13 with
    int32 rows and offsets and float32 scales (the sequence task's)."""
    return sum(np.dtype(getattr(cons, name).dtype).itemsize
               for name in ("term_row", "term_scale", "term_offset", "term_bias"))
