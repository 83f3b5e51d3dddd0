"""Dual coordinate descent over a cache of constraints with shared slacks.

The problem (DESIGN.md "One problem, one engine"; Ramanan eq. 2 with C kept explicit):

    max_a  D(a) = -1/2 ||w(a)||^2 + sum_c l_c a_c,        w(a) = sum_c a_c x_c
    s.t.   a_c >= 0,   A_g = sum_{c in g} a_c <= C_g        for every group g

    P(w)  = 1/2 ||w||^2 + sum_g C_g max(0, max_{c in g} (l_c - w.x_c)),   D(a) <= OPT <= P(w(a))

A constraint is a short sum of shifted, scaled rows of a CSR store X (n_cols columns), so a task lists
its constraints without copying the data:

    x_c = sum_{t in [tptr_c, tptr_{c+1})}  s_t * shift(X[r_t], o_t)  (+ s_t * bias * e_{o_t + n_cols}
                                                                        when the term carries the bias)

where shift(x, o) puts column j of x at column o + stride * j of w (and the bias feature at
o + stride * n_cols), `stride` being one engine-wide integer: 1 for the class-major layout (block k
at offset k * width), K for the feature-major one (class k at offset k: the K weights of a feature
are contiguous, as LIBLINEAR's Crammer-Singer keeps them). Binary is one term per constraint (s = y_i,
o = 0), regression two constraints on one row (+1 and -1), a ranking pair X[a] - X[b], a multiclass
constraint row i at class block y_i (+1) and at block j (-1), a sequence the tokens' rows at their tag
blocks plus transition counts on a "unit row". Terms may overlap (x_c may even be 0).

Steps (Ramanan Alg. 1, re-derived; papers/README lists the slips in the printed eq. 12-15), with the
gradient g_c = l_c - w.x_c and Q_c = ||x_c||^2:

    single:  a_c += d,   d = clip(g_c / Q_c, -a_c, C_g - A_g)
    pair:    a_j += d, a_k -= d,   d = clip((g_j - g_k) / ||x_j - x_k||^2, -a_j, a_k)

The pair step is taken when the group is at its bound and j wants to grow; k is the group's support
constraint (a_k > 0) with the smallest gradient. For a group of one constraint this is exactly
LIBLINEAR's dual coordinate descent for the L1-loss SVM (Hsieh et al. 2008, Alg. 1).

Non-negativity (Ramanan sec. 5, `nonneg`: a mask of columns with w_k >= 0). The Lagrangian gains
-beta . w (beta >= 0), so w = v + beta with v = sum_c a_c x_c, and for fixed alpha the best beta is
max(0, -v): w = max(v, 0) on the masked columns. The dual, maximised over beta, is
D(a) = -1/2 ||w||^2 + sum_c l_c a_c with that clipped w (beta_k w_k = 0), so the bounds below hold
unchanged. A step moves w linearly with beta held fixed (the paper's alternation: the single and
pair steps above are exact for fixed beta), then beta's exact step re-clips the columns the step
touched (_reclip, which keeps beta = w - v and est_ww up to date); the gradient l_c - w.x_c of the
concave reduced dual is the one the steps use, so shrinking and the stopping rule are unchanged.

Shrinking follows LIBLINEAR (Hsieh et al. 2008, sec. 3.2): a constraint at a = 0 whose gradient is
below -M, M being the largest violation seen in the previous epoch, leaves the active set; so does a
one-constraint group at its bound whose gradient is above M. The caller decides when to stop, on the
duality gap: `exact_bounds` evaluates P over every constraint, shrunk or not, with the current w.

Speed (binary problems must cost what LIBLINEAR's -s 3 costs). Epochs visit constraints in random
order, so their cost is cache misses, and the state a visit reads must stay small enough to live in
L2 while the rows stream through it: 32 bytes per constraint, as structure-of-arrays (alpha, q, row
start, (nnz, kind)) with (scale, margin, C) in a table of distinct triples (two rows for binary
problems: LIBLINEAR's GETI trick), and int32 column indices (a copy: 4 bytes per nonzero, or the
store's own when it keeps int32 columns, as online-dual's and the sequence task's do). Values and
term scales are float64, or float32 read in place where a store or cache keeps them so because
each is a float32 exactly (the sequence task's +-1 scales), or for values bytes where each is an
integer from 0 to 255 (its indicator features); each is widened to double as it is read, so the
arithmetic is the same bit for bit. When every
group has one constraint (`singles`) a visit needs no group look-up either. Measured on a9a, epochs
are 2x faster than with a group record, then a 48-byte constraint record, then indptr, and about 1.3x
faster than with one 64-byte line per constraint (int32 indices alone: 1.15x). Since the order of an
epoch is drawn before it starts, the epoch asks for each visit's record and row a few visits ahead
(_prefetch_record, _prefetch_row): the misses then overlap instead of following one another, and a
full a9a epoch takes 2 ms where it took 8-11. Nothing per epoch is O(n): the active count and the
terms of `approximate_bounds` are kept up to date by the steps.

Two layouts share that state. When every constraint is one unshifted term (binary, regression, raw
constraints) the "one-row" layout keeps it exactly as above: (start, nnz) is the row's slice of the
store and the term's scale sits in the kind table. Otherwise (the "terms" layout) (start, nnz) is the
constraint's slice of the caller's term arrays (row, offset, scale, bias flag), read in place: a
`Term` (row slice, offset, scale, bias column) is assembled as it is read (`_term`). A copy of them
as an array of 32-byte Terms was the largest array of a sequence solve (60 MB of n-slack's first
rounds on UD English EWT, 1.9 million terms); reading in place, a whole UD n-slack run took 32.2 to
36.7 s of CPU against 32.7 to 33.5 s before (3 interleaved runs each, idle machine). The
kind table's scale is 1, and dot and axpy loop over the terms with w shifted by each offset. ||x_c||^2 and
the pair step's x_j . x_k are exact: x_j is summed column by column into a small table keyed by the
w index (twice the entries of the largest constraint, see _acc_slot), then squared or read with x_k.

Shared-row groups (Crammer-Singer's examples: every term of every constraint is one row, with one
bias flag, at one of a few offsets that do not overlap): g_c = l_c - sum_t s_t S[o_t] with
S[o] = w[o:].row, so a visit takes one row product per offset, steps on S exactly (a step d on a term
adds d s_t ||row||^2 to S[o_t]; the pair step's x_j . x_k is sum s_t s_u ||row||^2 over terms at one
offset) and adds to w once at its end. With a stride > 1 the products at all the group's offsets
are taken in one pass over the row (per nonzero j, the weights w[o + stride * j] of the offsets o
lie within one stride: a few cache lines instead of one per offset), and so is the final update.
It makes several passes over the group (_visit_shared).

Crammer-Singer groups (shared-row groups whose constraints are exactly +row at one slot y and -row at
a slot of their own: the multiclass task's examples) are visited by _visit_cs instead: the example's
subproblem over its active constraints is solved exactly by one sort (Crammer and Singer 2001;
Keerthi et al. 2008; LIBLINEAR's -s 4), and they shrink as LIBLINEAR's -s 4 does: a constraint at 0
whose gradient is below every movable one's, and the whole example when at most one variable is
left free. exact_bounds() then refreshes the estimate's terms of the examples out of the active set.
"""

from libc.math cimport INFINITY, NAN, fabs
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcmp

from _cs_threshold cimport cs_threshold
from _sparse cimport (buffer_address, int32_columns, offset_t, value_t, prefetch, row_t, shuffle,
                      row_axpy, row_axpy_s, row_dot, row_dot_s, row_row_dot, row_sqnorm,
                      zeros_as_numpy)

from svmtrain import _numpy as np    # (numpy on first use: svmtrain/_numpy.py)


# A constraint's length (row nonzeros, or terms in the terms layout) and the row of `kinds` holding its
# (scale, margin, C): one 8-byte slot.
cdef struct NnzKind:
    int32_t nnz
    int32_t kind

cdef struct Kind:
    double scale         # x_c = scale * X[row] (1 in the terms layout: each term has its own)
    double margin        # l_c
    double C             # its group's C_g, read here by the one-constraint step

# One term of a constraint in the terms layout: scale * shift(X[row], offset) (+ the bias feature).
cdef struct Term:
    int64_t start        # the row is indices/data[start : start + nnz]
    int64_t offset       # placed at w[offset + stride * j]
    double scale
    int32_t nnz
    int32_t bias_col     # stride * n_cols when the term carries the bias feature, else -1

# A group of constraints sharing one slack. Its sizes are int32: the engine takes at most 2**31 - 1
# constraints. 32 bytes: a one-constraint group (binary) has no more to say, and the row of a
# shared-row group is kept apart (SharedRow) only when there are such groups (it took 72 bytes a
# group: kddcup99 binary's 444,000 groups, 32 MB of the n-slack engine, 14 MB now).
cdef struct Group:
    int64_t start        # its constraints are [start : start + size], the active ones first
    int32_t size
    int32_t active       # kept for groups of several constraints only
    double C
    int32_t n_off        # > 0: a shared-row group (its row: SharedRow)
    # A Crammer-Singer group (cs_y >= 0; shared-row only): every constraint is +row at one offset,
    # the y slot cs_y, and -row at its own slot (terms[start] the +1 term, terms[start + 1] the -1
    # term), so its visit solves the example's subproblem exactly (_visit_cs).
    int32_t cs_y

# The row of a "shared-row" group (n_off > 0; terms layout only): every term of its constraints is the
# same row with the same bias flag, at one of n_off distinct offsets soffs[off_start : off_start + n_off]
# (far enough apart that the shifted rows do not overlap); tslot[t] is term t's offset among them.
cdef struct SharedRow:
    int64_t row_start    # the row is indices/data[row_start : row_start + row_nnz]
    int64_t off_start
    double rsq           # ||row||^2, with the bias feature when the terms carry it
    int32_t row_nnz
    int32_t bias_col

# What one epoch tallies as it goes (a local of the epoch, not fields of the engine object).
cdef struct Tally:
    int64_t steps        # coordinates that moved
    int64_t shrunk       # constraints that left the active set
    double violation     # the largest projected gradient
    double v_dec         # the largest wish to decrease / increase a coordinate (next epoch's M_dec, M_inc)
    double v_inc
    double loss          # sum over the groups that stay active of C_g max(0, max_c g_c) (eq. 23 terms)
    double gap           # one-constraint groups: sum of their gap terms C max(0, g) - a g at their visit


cdef inline double clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline bint _same_bits(double a, double b) noexcept nogil:
    return memcmp(&a, &b, sizeof(double)) == 0


def _columns_in_range(const int32_t[::1] indices, int64_t n_cols):
    """Whether every int32 column index lies in [0, n_cols)."""
    cdef int64_t p
    cdef bint bad = False
    with nogil:
        for p in range(indices.shape[0]):
            if indices[p] < 0 or indices[p] >= n_cols:
                bad = True
                break
    return not bad


def _column_indices(const int64_t[::1] indices, int64_t n_cols):
    """The column indices as int32 (the engine's row store), checked to lie in [0, n_cols) on the way."""
    out = np.empty(indices.shape[0], dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef int64_t p, j
    cdef bint bad = False
    with nogil:
        for p in range(indices.shape[0]):
            j = indices[p]
            if j < 0 or j >= n_cols:
                bad = True
                break
            o[p] = <int32_t>j
    if bad:
        raise ValueError("a column index is outside [0, n_cols)")
    return out


def _kind_table(scale, margin, C, int64_t few=16):
    """The distinct triples (scale_c, margin_c, C_c) (compared bit for bit) as the rows of a table,
    and each constraint's row in it, as int32. A linear scan finds the usual handful (two for a
    binary problem) in O(n); past `few` distinct rows it gives way to a sort."""
    cols = [np.asarray(a, dtype=np.float64).view(np.int64) for a in (scale, margin, C)]
    cdef const int64_t[:] b0 = cols[0], b1 = cols[1], b2 = cols[2]
    cdef int64_t n = b1.shape[0], i, j, m = 0
    cdef bint overflow = False
    table = np.empty((few, 3), dtype=np.int64)
    index = np.empty(n, dtype=np.int32)
    cdef int64_t[:, ::1] t = table
    cdef int32_t[::1] ix = index
    with nogil:
        for i in range(n):
            j = 0
            while j < m and not (t[j, 0] == b0[i] and t[j, 1] == b1[i] and t[j, 2] == b2[i]):
                j += 1
            if j == m:
                if m == few:
                    overflow = True
                    break
                t[m, 0], t[m, 1], t[m, 2] = b0[i], b1[i], b2[i]
                m += 1
            ix[i] = <int32_t>j
    if overflow:
        # np.unique(axis=0)'s table and inverse, by a sort on the three columns (np.unique sorts
        # rows as records: 10x slower, 30 ms a round for a sequence cache of 60,000 constraints)
        order = np.lexsort((cols[2], cols[1], cols[0]))
        ordered = np.stack(cols, axis=1)[order]
        new = np.empty(n, dtype=bool)
        new[0] = True
        new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
        inverse = np.empty(n, dtype=np.int32)
        inverse[order] = np.cumsum(new) - 1
        return ordered[new].view(np.float64), inverse
    return table[:m].view(np.float64), index


def _term_dtype(a):
    """int32 for an int32 array of term rows or offsets (read in place), else int64."""
    return np.int32 if isinstance(a, np.ndarray) and a.dtype == np.int32 else np.int64


def _value_dtype(a, bytes_too=False):
    """float32 for a float32 array (the store's values, the terms' scales: read in place), uint8
    for a uint8 one where `bytes_too` (the store's values), else float64."""
    if isinstance(a, np.ndarray) and (a.dtype == np.float32 or (bytes_too and a.dtype == np.uint8)):
        return a.dtype
    return np.float64


def _furthest_reach(const int64_t[::1] last, const row_t[:] term_row, const offset_t[:] term_offset,
                    const uint8_t[:] term_bias, bint has_bias, int64_t n_cols, int64_t stride):
    """The largest column of w a term touches: o_t + stride * (its row's last column, or n_cols for
    the bias feature, which lies beyond every column); -1 without terms. One pass, no temporaries
    (term_offset and term_bias may be broadcast views)."""
    cdef int64_t t, r, out = -1
    with nogil:
        for t in range(term_row.shape[0]):
            if has_bias and term_bias[t]:
                r = term_offset[t] + stride * n_cols
            else:
                r = term_offset[t] + stride * last[term_row[t]]
            if r > out:
                out = r
    return out


def _row_last_columns(const int64_t[::1] indptr, const int32_t[::1] indices):
    """The largest column index of each row (-1 for an empty row)."""
    n_rows = indptr.shape[0] - 1
    out = np.full(n_rows, -1, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int64_t i, p
    with nogil:
        for i in range(n_rows):
            for p in range(indptr[i], indptr[i + 1]):
                if indices[p] > o[i]:
                    o[i] = indices[p]
    return out


cdef struct ResOff:
    int64_t res
    int64_t off

cdef int _cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)

cdef int _cmp_resoff(const void* a, const void* b) noexcept nogil:
    cdef const ResOff* x = <const ResOff*>a
    cdef const ResOff* y = <const ResOff*>b
    if x.res != y.res:
        return (x.res > y.res) - (x.res < y.res)
    return (x.off > y.off) - (x.off < y.off)


def _shared_row_groups(indptr, indices32, tptr, const row_t[:] term_row, const offset_t[:] term_offset,
                       term_bias, group, gsize, int64_t n_cols, bint has_bias, int64_t stride=1,
                       order=None):
    """The groups of two constraints or more whose terms all place one row, with one bias flag, at
    offsets far enough apart that the shifted rows do not overlap (multiclass: an example's group).

    Returns (shared, slot, offsets, off_start, n_off, row, bias): per group whether it is shared-row,
    its first entry in `offsets` (the distinct offsets of the shared-row groups, group after group,
    ascending), their number, its row and bias flag; per term of a shared-row group its offset's
    index among its group's (int32; empty when no group is shared-row). indptr None: the one-row
    layout, where no group takes this path. `order` lists the constraints group by group (None: they
    are in that order already). One pass over the terms, group by group, with a sort of each group's
    offsets, and a second over the shared-row groups' terms for their slots. Nothing of the size of
    the terms is allocated unless some group is shared-row: a sequence cache's groups never are, and
    two arrays over its terms were the peak of a UD English EWT solve (24 MB)."""
    n_groups = gsize.shape[0]
    n = tptr.shape[0] - 1
    n_terms = int(tptr[n]) if n >= 0 else 0
    shared = np.zeros(n_groups, dtype=bool)
    off_start = np.zeros(n_groups, dtype=np.int64)
    n_off = np.zeros(n_groups, dtype=np.int64)
    rep_row = np.zeros(n_groups, dtype=np.int64)
    rep_bias = np.zeros(n_groups, dtype=bool)
    if indptr is None or n_terms == 0 or not np.any(gsize >= 2):
        return shared, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64), off_start, n_off, \
            rep_row, rep_bias
    if order is None:
        order = np.arange(n, dtype=np.int64)
    gterms = np.bincount(group, weights=np.diff(tptr), minlength=n_groups)
    buf = np.empty(max(int(gterms.max()), 1), dtype=np.int64)
    pairs = np.empty(buf.shape[0] * 2, dtype=np.int64)
    tb = np.ascontiguousarray(np.asarray(term_bias, dtype=bool) & bool(has_bias)).view(np.uint8)
    last = _row_last_columns(indptr, indices32)
    gstart = np.cumsum(gsize) - gsize
    cdef const int64_t[::1] ord_v = np.ascontiguousarray(order, dtype=np.int64)
    cdef const int64_t[::1] tptr_v = tptr, last_v = last
    cdef const int64_t[::1] gsize_v = gsize, gstart_v = gstart
    cdef const uint8_t[::1] tb_v = tb
    cdef int64_t[::1] buf_v = buf, ostart_v = off_start, noff_v = n_off
    cdef int64_t[::1] rrow_v = rep_row
    cdef uint8_t[::1] sh_v = shared.view(np.uint8), rb_v = rep_bias.view(np.uint8)
    cdef ResOff* ro = <ResOff*> buffer_address(pairs)
    # the distinct offsets of the shared-row groups, in a buffer that grows as they are found
    cdef int64_t room = 1024
    cdef int64_t* obuf = <int64_t*> malloc(room * sizeof(int64_t))
    cdef int64_t* grown
    if obuf == NULL:
        raise MemoryError("cannot allocate the shared-row offsets")
    cdef int64_t g, k, c, t, nt, nd, i, lo, hi, mid, r0, reach, out = 0, n_g = n_groups
    cdef uint8_t b0
    cdef bint ok, failed = False
    with nogil:
        for g in range(n_g):
            if gsize_v[g] < 2:
                continue
            nt = 0
            ok = True
            r0 = -1
            b0 = 0
            for k in range(gstart_v[g], gstart_v[g] + gsize_v[g]):
                c = ord_v[k]
                for t in range(tptr_v[c], tptr_v[c + 1]):
                    if nt == 0:
                        r0 = term_row[t]
                        b0 = tb_v[t]
                    elif term_row[t] != r0 or tb_v[t] != b0:
                        ok = False
                        break
                    buf_v[nt] = term_offset[t]
                    nt += 1
                if not ok:
                    break
            if not ok or nt == 0:
                continue
            # the distinct offsets, ascending
            qsort(&buf_v[0], nt, sizeof(int64_t), _cmp_int64)
            nd = 1
            for i in range(1, nt):
                if buf_v[i] != buf_v[nd - 1]:
                    buf_v[nd] = buf_v[i]
                    nd += 1
            # neighbouring offsets must be further apart than the row reaches (its last column, or
            # the bias); with a stride, rows at offsets of distinct residues never meet, and offsets of
            # one residue must be further apart than stride * the reach
            reach = n_cols if b0 else last_v[r0]
            if stride == 1:
                for i in range(1, nd):
                    if buf_v[i] - buf_v[i - 1] <= reach:
                        ok = False
                        break
            elif buf_v[nd - 1] - buf_v[0] >= stride:
                for i in range(nd):
                    ro[i].res = buf_v[i] % stride
                    ro[i].off = buf_v[i]
                qsort(ro, nd, sizeof(ResOff), _cmp_resoff)
                for i in range(1, nd):
                    if ro[i].res == ro[i - 1].res and ro[i].off - ro[i - 1].off <= stride * reach:
                        ok = False
                        break
            if not ok:
                continue
            if out + nd > room:
                room = max(2 * room, out + nd)
                grown = <int64_t*> realloc(obuf, room * sizeof(int64_t))
                if grown == NULL:
                    failed = True
                    break
                obuf = grown
            sh_v[g] = 1
            rrow_v[g] = r0
            rb_v[g] = b0
            ostart_v[g] = out
            noff_v[g] = nd
            for i in range(nd):
                obuf[out + i] = buf_v[i]
            out += nd
    if failed:
        free(obuf)
        raise MemoryError("cannot allocate the shared-row offsets")
    offsets = np.empty(out, dtype=np.int64)
    cdef int64_t[::1] offs_v = offsets
    for i in range(out):
        offs_v[i] = obuf[i]
    free(obuf)
    # each shared-row term's slot: a binary search among its group's distinct offsets
    slot = np.zeros(n_terms if out else 0, dtype=np.int32)
    cdef int32_t[::1] slot_v = slot
    cdef int64_t base
    if out:
        with nogil:
            for g in range(n_g):
                if not sh_v[g]:
                    continue
                base = ostart_v[g]
                nd = noff_v[g]
                for k in range(gstart_v[g], gstart_v[g] + gsize_v[g]):
                    c = ord_v[k]
                    for t in range(tptr_v[c], tptr_v[c + 1]):
                        lo = 0
                        hi = nd - 1
                        while lo < hi:
                            mid = (lo + hi) // 2
                            if offs_v[base + mid] < term_offset[t]:
                                lo = mid + 1
                            else:
                                hi = mid
                        slot_v[t] = <int32_t>lo
    return shared, slot, offsets, off_start, n_off, rep_row, rep_bias


# A shared-row visit makes passes over its group until the group's violation falls below _TOL times
# its entry violation, at most _PASSES of them (sector at -e 1e-3: 49 epochs in 25.7 s with one pass
# of the general visit, 29 in 12.9 s with these; 5 passes, 30 passes or a tolerance of 0.01 or 0.3
# measured within the noise of these).
cdef enum:
    _PASSES = 10
    _AHEAD_RECORD = 16    # (see DualCD._prefetch_record)
    _AHEAD_ROW = 8
cdef double _TOL = 0.1

cdef class DualCD:
    """The engine's state: constraints, alphas, w, the active set and the generator.

    Build it from a constraint cache (arrays, validated here once), call `epoch()` until the caller's
    stopping rule on `exact_bounds()` is met, and read `w` and `alpha`. `w` is recomputed from the
    alphas on construction (hot start) and by `recompute_w()`, so it never drifts from w(alpha) in
    what is reported.
    """

    # the row store: CSR values and int32 column indices (kept alive by the Python references)
    cdef object _keep
    cdef const int32_t* indices
    cdef const double* data       # the values: float64, or float32 or bytes read in place (then
    cdef const float* data32      # data is NULL): a store whose values are all float32s, or all
    cdef const uint8_t* data8     # integers from 0 to 255, keeps them so
    cdef double bias
    cdef int64_t bias_col         # the one-row layout's bias column (n_cols), or -1
    # the constraints, laid out group by group (structure of arrays, see the module docstring)
    cdef double* alpha_
    cdef double* q                # ||x_c||^2
    cdef double* grad             # g_c at the last exact_bounds(), by position (NULL: not kept)
    cdef int64_t* start           # its row is indices/data[start : start + nnz]; in the terms layout
                                  # its terms are terms[start : start + nnz]
    cdef NnzKind* nk
    cdef Kind* kinds
    cdef bint terms               # the terms layout (False: the one-row layout)
    # the terms, read in place from the caller's arrays (a Term is assembled as it is read, see
    # _term: a copy of 32 bytes a term was the largest array of a sequence solve, 46-60 MB on UD
    # English EWT); a shared-row group's engine owns copies, since it reorders terms (_mark_crammer_singer)
    cdef const int64_t* rptr      # the row store's indptr
    cdef int64_t* t_row
    cdef int64_t* t_off
    cdef const int32_t* t_row32   # int32 term rows / offsets read in place (then t_row / t_off
    cdef const int32_t* t_off32   # are NULL): a sequence cache keeps them so
    cdef double* t_scale          # float64 scales, or float32 ones read in place (then t_scale is
    cdef const float* t_scale32   # NULL; a shared-row group's engine, which reorders, has float64)
    cdef uint8_t* t_bias
    cdef int32_t t_bias_col       # stride * n_cols when the model has a bias feature, else -1
    # terms layout: a constraint scattered into a small open-addressing table (w index -> value),
    # for ||x_c||^2 and x_j . x_k (see _acc_slot)
    cdef int64_t* acc_key         # a slot's w index, -1 when empty
    cdef double* acc_val
    cdef int64_t* acc_used        # the slots filled since the last _acc_clear
    cdef int64_t acc_n_used
    cdef uint64_t acc_mask        # capacity - 1 (a power of two)
    cdef int acc_shift            # 64 - log2(capacity)
    cdef int32_t* ids             # its position in the caller's arrays (at most 2**31 - 1)
    cdef double* gbuf             # a group's gradients during its visit (room for the largest group)
    cdef int32_t* tslot           # shared-row groups: each term's index among its group's offsets
    cdef int64_t* soffs           # shared-row groups: their distinct offsets, group after group
    cdef double* sbuf             # shared-row visit: s[o] = w[o:].row for the group's offsets
    cdef double* cbuf             # shared-row visit: the coefficient of the row added at each offset
    cdef int64_t* abuf            # shared-row visit (stride > 1): the offsets taken in the one pass
    cdef int64_t* ibuf            # ... and their indices among the group's offsets
    cdef double* dbuf             # ... and their products or coefficients, contiguous
    cdef double* xbuf             # Crammer-Singer visit: the subproblem's D values, sorted
    cdef int32_t* jslot           # Crammer-Singer groups: each constraint's -1 slot (moves with _swap)
    cdef bint has_cs              # some group is a Crammer-Singer example
    cdef int64_t stride           # column j of a term's row is at w[offset + stride * j]
    cdef int64_t n_shared         # shared-row groups
    cdef Group* grp
    cdef SharedRow* srow          # each group's shared row, when some group shares one (else NULL)
    cdef int64_t n_cons
    cdef int64_t n_groups
    cdef int64_t* groups          # the active groups are groups[:n_active]
    cdef int64_t n_active
    cdef int64_t n_listed         # groups with constraints: groups[:n_listed] (active ones first)
    cdef int64_t n_active_cons    # constraints in the active set
    cdef bint singles             # every group has one constraint: group g is constraint g
    cdef double[::1] w_
    cdef double* w
    cdef int64_t n_w              # the length of w; w_ has room for at least one
    cdef uint64_t rng
    # Shrinking thresholds (LIBLINEAR's PGmax_old, -PGmin_old): the previous epoch's largest wish to
    # decrease and to increase a coordinate. A constraint at 0 whose gradient is below -M_dec, or a
    # one-constraint group at its bound with a gradient above M_inc, is not expected to move.
    cdef double M_dec
    cdef double M_inc
    cdef bint shrinking
    # Non-negativity (Ramanan sec. 5): w = max(v, 0) on the masked columns, v = sum a_c x_c. The
    # steps move w linearly with beta = w - v held fixed (the paper's "update alpha holding beta
    # fixed"), then _reclip re-solves beta >= 0 on the columns they touched.
    cdef bint nonneg
    cdef const uint8_t* nn_mask   # n_w flags: is w_j constrained to be >= 0
    cdef double* beta             # w - v on the masked columns (>= 0), 0 elsewhere
    # Ramanan's eq. 23 estimate, kept current by the steps so that approximate_bounds() is O(1):
    # est_loss sums the groups' C_g max(0, max_c g_c) at their last visit (shrunk_loss those of the
    # groups shrunk since the last unshrink); est_ww = ||w||^2 and est_la = sum_c l_c a_c are updated
    # with each step and made exact again by recompute_w() and exact_bounds().
    cdef double est_loss
    cdef double est_gap           # the last epoch's Tally.gap (see approximate_gap)
    cdef double shrunk_loss
    cdef double est_ww
    cdef double est_la

    def __cinit__(self):
        self.alpha_ = NULL
        self.q = NULL
        self.grad = NULL
        self.start = NULL
        self.nk = NULL
        self.kinds = NULL
        self.terms = False
        self.acc_key = NULL
        self.acc_val = NULL
        self.acc_used = NULL
        self.ids = NULL
        self.gbuf = NULL
        self.soffs = NULL
        self.sbuf = NULL
        self.cbuf = NULL
        self.abuf = NULL
        self.ibuf = NULL
        self.dbuf = NULL
        self.xbuf = NULL
        self.jslot = NULL
        self.grp = NULL
        self.srow = NULL
        self.groups = NULL
        self.beta = NULL

    def __dealloc__(self):
        free(self.alpha_)
        free(self.q)
        free(self.grad)
        free(self.start)
        free(self.nk)
        free(self.kinds)
        free(self.acc_key)
        free(self.acc_val)
        free(self.acc_used)
        free(self.ids)
        free(self.gbuf)
        free(self.soffs)
        free(self.sbuf)
        free(self.cbuf)
        free(self.abuf)
        free(self.ibuf)
        free(self.dbuf)
        free(self.xbuf)
        free(self.jslot)
        free(self.grp)
        free(self.srow)
        free(self.groups)
        free(self.beta)

    def __init__(self, indptr, indices, data, tptr, term_row, term_scale, term_offset, term_bias,
                 margin, group, C_group, alpha=None, *, int64_t n_cols, int64_t n_w=-1,
                 double bias=0.0, bint has_bias=False, uint64_t seed=1, bint shrinking=True,
                 int64_t stride=1, nonneg=None, sqnorm=None, w_buffer=None):
        """The arrays of a `svmtrain.engine.ConstraintCache`, in its order; n_w < 0 means
        n_cols (+1 with the bias feature). A term places column j of its row at
        w[offset + stride * j], the bias feature at w[offset + stride * n_cols]. `nonneg`, when
        given, flags the columns of w constrained to be >= 0 (n_w booleans).

        `sqnorm`, when given, holds ||x_c||^2 per constraint as an earlier engine over the same
        rows computed it (`sqnorms`), nan where unknown. A cutting-plane loop rebuilds the engine
        every round over a cache that mostly carries over: a multi-term constraint's norm is a
        scatter of its terms (on a UD English cache, three quarters of building the engine), and
        the norms of the constraints carried over need not be computed again. Trusted as given:
        a wrong norm gives wrong steps, never a wrong certificate (the bounds use w, not q).

        `w_buffer`, when it is a writeable, contiguous float64 array of n_w entries (at least one),
        becomes this engine's w: it is overwritten with w(alpha) here. A caller that re-solves
        round after round hands over the w it is done with, which then is not held twice at the
        peak (16 MB on UD English EWT, 46 MB on sector multiclass). Otherwise w is allocated."""
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        if not (isinstance(indices, np.ndarray) and indices.dtype == np.int32):
            indices = np.ascontiguousarray(indices, dtype=np.int64)
        data = np.ascontiguousarray(data, dtype=_value_dtype(data, bytes_too=True))
        tptr = np.ascontiguousarray(tptr, dtype=np.int64)
        # term rows and offsets: int64, or int32 read in place (a sequence cache's)
        term_row = np.ascontiguousarray(term_row, dtype=_term_dtype(term_row))
        term_scale = np.ascontiguousarray(term_scale, dtype=_value_dtype(term_scale))
        term_offset = np.asarray(term_offset, dtype=_term_dtype(term_offset))   # may be a broadcast view
        term_bias = np.asarray(term_bias, dtype=bool)
        margin = np.ascontiguousarray(margin, dtype=np.float64)
        group = np.ascontiguousarray(group, dtype=np.int64)
        C_group = np.ascontiguousarray(C_group, dtype=np.float64)
        if n_w < 0:
            n_w = n_cols + (1 if has_bias else 0)
        n = tptr.shape[0] - 1
        n_rows = indptr.shape[0] - 1
        n_groups = C_group.shape[0]
        # Validate once at the edge; the kernels below trust these arrays.
        if n_rows < 0 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[n_rows] != indices.shape[0]:
            raise ValueError("indptr is not a valid CSR row pointer")
        if data.shape[0] != indices.shape[0]:
            raise ValueError("indices and data differ in length")
        if stride < 1:
            raise ValueError("the stride must be >= 1")
        if n_cols > INT32_MAX or n > INT32_MAX or (n_rows > 0 and np.max(np.diff(indptr)) > INT32_MAX):
            raise ValueError("the engine takes at most 2**31 - 1 columns, constraints and nonzeros per row")
        if stride > 1 and stride * n_cols > INT32_MAX:     # the bias column stride * n_cols is an int32
            raise ValueError("the engine takes at most 2**31 - 1 strided columns (stride * n_cols)")
        if indices.dtype == np.int32:       # a store that keeps int32 columns is used as it is
            indices32 = np.ascontiguousarray(indices)
            if not _columns_in_range(indices32, n_cols):
                raise ValueError("a column index is outside [0, n_cols)")
        else:
            indices32 = _column_indices(indices, n_cols)
        lengths = np.diff(tptr)                  # terms per constraint
        if n < 0 or tptr[0] != 0 or np.any(lengths < 0):
            raise ValueError("tptr is not a valid term pointer")
        n_terms = tptr[n]
        if any(a.ndim != 1 or a.shape[0] != n_terms for a in (term_row, term_scale, term_offset, term_bias)):
            raise ValueError("term_row, term_scale, term_offset and term_bias must hold tptr[-1] terms")
        if n and np.max(lengths) > INT32_MAX:
            raise ValueError("the engine takes at most 2**31 - 1 terms per constraint")
        if margin.shape[0] != n or group.shape[0] != n:
            raise ValueError("margin and group must hold one entry per constraint")
        if n_terms and (term_row.min() < 0 or term_row.max() >= n_rows):
            raise ValueError("a term names a row outside the store")
        if n and (group.min() < 0 or group.max() >= n_groups):
            raise ValueError("a constraint names a group outside [0, len(C_group))")
        if np.any(~np.isfinite(C_group)) or np.any(C_group < 0):
            raise ValueError("group bounds C_g must be finite and >= 0")
        if not (np.all(np.isfinite(term_scale)) and np.all(np.isfinite(margin)) and np.all(np.isfinite(data))):
            raise ValueError("constraints must be finite")
        if n_terms and term_offset.min() < 0:
            raise ValueError("a term offset is negative")
        # The one-row layout: every constraint is one unshifted term (binary, regression, raw rows).
        one_row = (stride == 1 and n_terms == n and bool(np.all(lengths == 1)) and not np.any(term_offset)
                   and (not has_bias or bool(np.all(term_bias))))
        # every column a term touches lies in w: o_t + stride * (the row's last column, or n_cols for
        # the bias)
        if n_terms and not (one_row and n_w >= n_cols + (1 if has_bias else 0)):
            if term_offset.max() > n_w:
                raise ValueError("a term reaches past the n_w columns of w")
            if _furthest_reach(_row_last_columns(indptr, indices32), term_row, term_offset,
                               np.asarray(term_bias, dtype=bool).view(np.uint8), has_bias, n_cols,
                               stride) >= n_w:
                raise ValueError("a term reaches past the n_w columns of w")
        if alpha is None:
            alpha = np.zeros(n, dtype=np.float64)
        else:
            alpha = np.array(alpha, dtype=np.float64, copy=True)
            if alpha.shape[0] != n or not np.all(np.isfinite(alpha)):
                raise ValueError("alpha must be finite and one per constraint")
            # Hot start: project onto the feasible set (a changed C may have made it infeasible).
            np.clip(alpha, 0.0, None, out=alpha)
            sums = np.bincount(group, weights=alpha, minlength=n_groups)
            over = sums > C_group
            if np.any(over):
                factor = np.where(over, C_group / np.where(sums > 0, sums, 1.0), 1.0)
                alpha = np.minimum(alpha * factor[group], C_group[group])

        if sqnorm is not None:
            sqnorm = np.ascontiguousarray(sqnorm, dtype=np.float64)
            if sqnorm.shape[0] != n or np.any(sqnorm < 0):
                raise ValueError("sqnorm must hold one non-negative entry (or nan) per constraint")
        else:
            sqnorm = np.full(1 if one_row else n, np.nan)     # (one-row: the rows' norms, below)
        if nonneg is not None:
            nonneg = np.ascontiguousarray(nonneg, dtype=np.uint8)
            if nonneg.ndim != 1 or nonneg.shape[0] != n_w:
                raise ValueError("nonneg must hold one flag per column of w (n_w)")
        self.nonneg = nonneg is not None and bool(nonneg.any())
        if self.nonneg:
            self.nn_mask = <const uint8_t*> buffer_address(nonneg)
            self.beta = <double*> calloc(max(n_w, 1), sizeof(double))
            if self.beta == NULL:
                raise MemoryError()
        self._keep = (indices32, nonneg)
        self.indices = <const int32_t*> buffer_address(indices32)
        self.bias = bias
        self.bias_col = n_cols if has_bias else -1
        self.n_w = n_w
        self.stride = stride
        if (isinstance(w_buffer, np.ndarray) and w_buffer.dtype == np.float64
                and w_buffer.ndim == 1 and w_buffer.shape[0] == max(self.n_w, 1)
                and w_buffer.flags.c_contiguous and w_buffer.flags.writeable):
            self.w_ = w_buffer          # recompute_w below overwrites every entry
        else:
            self.w_ = np.zeros(max(self.n_w, 1), dtype=np.float64)
        self.w = &self.w_[0]
        self.shrinking = shrinking
        self.rng = seed
        self.M_dec = INFINITY
        self.M_inc = INFINITY
        self.has_cs = False

        # Lay the constraints out group by group (stable: the caller's order inside a group).
        # The layout's own arrays over the constraints are held beside the engine's at the end of
        # this constructor, the peak of an n-slack solve: none is made that says nothing (the
        # order of constraints already group by group, the one-row layout's norms), none twice.
        gsize = np.bincount(group, minlength=n_groups).astype(np.int64, copy=False)
        gstart = np.cumsum(gsize)
        gstart -= gsize
        # None: already group by group (binary: one each)
        cdef bint reordered = not (n == 0 or bool(np.all(group[1:] >= group[:-1])))
        order = np.argsort(group, kind="stable").astype(np.int64) if reordered else None
        if one_row:
            term_scale = term_scale.astype(np.float64, copy=False)    # kept in the kind table
        kinds, kind = _kind_table(term_scale if one_row else np.broadcast_to(1.0, (n,)), margin,
                                  C_group[group])
        self.n_cons = n
        self.n_groups = n_groups
        self.singles = n == n_groups and bool(np.all(gsize == 1))
        self._allocate(n, n_groups, kinds.shape[0], int(gsize.max()) if n_groups else 1)
        shared, slot, soffs, off_start, n_off, rep_row, rep_bias = _shared_row_groups(
            None if one_row else indptr, indices32, tptr, term_row, term_offset, term_bias, group,
            gsize, n_cols, has_bias, stride, order)
        self.n_shared = int(np.count_nonzero(shared))
        # float32 and byte values are read in place by the terms layout's loops (_dot, _scatter
        # take the type once a constraint); the one-row and shared-row visits read float64 ones
        if data.dtype != np.float64 and (one_row or self.n_shared):
            data = data.astype(np.float64)
        self._keep = self._keep + (data,)
        self.data = self.data32 = NULL
        self.data8 = NULL
        if data.dtype == np.float32:
            self.data32 = <const float*> buffer_address(data)
        elif data.dtype == np.uint8:
            self.data8 = <const uint8_t*> buffer_address(data)
        else:
            self.data = <const double*> buffer_address(data)
        if self.n_shared:
            n_slot = max(int(n_off.max()), 1)
            # the slots are this engine's own (a fresh array, reordered with the terms)
            self._keep = self._keep + (slot,)
            self.tslot = <int32_t*> buffer_address(slot)
            self.soffs = <int64_t*> malloc(max(soffs.shape[0], 1) * sizeof(int64_t))
            self.sbuf = <double*> malloc(n_slot * sizeof(double))
            self.cbuf = <double*> malloc(n_slot * sizeof(double))
            self.abuf = <int64_t*> malloc(n_slot * sizeof(int64_t))
            self.ibuf = <int64_t*> malloc(n_slot * sizeof(int64_t))
            self.dbuf = <double*> malloc(n_slot * sizeof(double))
            self.xbuf = <double*> malloc((n_slot + 1) * sizeof(double))
            self.jslot = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
            self.srow = <SharedRow*> malloc(max(n_groups, 1) * sizeof(SharedRow))
            if (self.srow == NULL or self.soffs == NULL or self.sbuf == NULL or self.cbuf == NULL
                    or self.abuf == NULL or self.ibuf == NULL or self.dbuf == NULL or self.xbuf == NULL
                    or self.jslot == NULL):
                raise MemoryError("cannot allocate the constraint cache")
        if not one_row:
            self.terms = True
            term_offset = np.ascontiguousarray(term_offset)
            term_bias = np.ascontiguousarray(term_bias).view(np.uint8)
            if self.n_shared:         # reordered in place by _mark_crammer_singer: our own copies
                term_row, term_offset = term_row.astype(np.int64), term_offset.astype(np.int64)
                term_scale, term_bias = term_scale.astype(np.float64), term_bias.copy()
            self._keep = self._keep + (indptr, term_row, term_offset, term_scale, term_bias)
            self.rptr = <const int64_t*> buffer_address(indptr)
            self.t_row = self.t_off = NULL
            self.t_row32 = self.t_off32 = NULL
            if term_row.dtype == np.int32:
                self.t_row32 = <const int32_t*> buffer_address(term_row)
            else:
                self.t_row = <int64_t*> buffer_address(term_row)
            if term_offset.dtype == np.int32:
                self.t_off32 = <const int32_t*> buffer_address(term_offset)
            else:
                self.t_off = <int64_t*> buffer_address(term_offset)
            self.t_scale = NULL
            self.t_scale32 = NULL
            if term_scale.dtype == np.float32:
                self.t_scale32 = <const float*> buffer_address(term_scale)
            else:
                self.t_scale = <double*> buffer_address(term_scale)
            self.t_bias = <uint8_t*> buffer_address(term_bias)
            self.t_bias_col = <int32_t>(stride * n_cols) if has_bias else -1
            self._acc_alloc(tptr)
        cdef const int64_t[::1] order_v = order if reordered else np.zeros(1, np.int64)
        cdef const int64_t[::1] gsize_v = gsize, gstart_v = gstart
        cdef const int64_t[::1] row_v = (np.ascontiguousarray(term_row, dtype=np.int64) if one_row
                                         else np.zeros(1, np.int64))   # (the one-row layout's rows)
        cdef const int64_t[::1] ptr_v = indptr, tptr_v = tptr
        cdef const int32_t[::1] kind_v = kind
        cdef const double[:, ::1] kinds_v = kinds
        cdef const double[::1] scale_v = term_scale if one_row else np.zeros(1), alpha_v = alpha, C_v = C_group, sq_v = sqnorm
        cdef const uint8_t[::1] shared_v = shared.view(np.uint8), rbias_v = rep_bias.view(np.uint8)
        cdef const int64_t[::1] group_v = group
        cdef const int64_t[::1] soffs_v = soffs, ostart_v = off_start, noff_v = n_off, rrow_v = rep_row
        cdef int64_t k, c, g, t, r, n_c = n, n_g = n_groups, sbias = stride * n_cols
        cdef bint nonzero
        with nogil:
            for k in range(kinds_v.shape[0]):
                self.kinds[k].scale = kinds_v[k, 0]
                self.kinds[k].margin = kinds_v[k, 1]
                self.kinds[k].C = kinds_v[k, 2]
            for k in range(n_c):
                c = order_v[k] if reordered else k
                self.nk[k].kind = kind_v[c]
                self.ids[k] = <int32_t>c
                self.alpha_[k] = alpha_v[c]
                if not self.terms:
                    self.start[k] = ptr_v[row_v[c]]
                    self.nk[k].nnz = <int32_t>(ptr_v[row_v[c] + 1] - ptr_v[row_v[c]])
                    self.q[k] = scale_v[c] * scale_v[c] * self._row_sqnorm(
                        self.start[k], self.start[k] + self.nk[k].nnz, self.bias_col)
                else:
                    self.start[k] = tptr_v[c]
                    self.nk[k].nnz = <int32_t>(tptr_v[c + 1] - tptr_v[c])
                    if shared_v[group_v[c]]:
                        continue              # q from the group's row and slots, below
                    if sq_v[c] == sq_v[c]:    # known (not nan): x_c = 0 exactly when q is 0
                        self.q[k] = sq_v[c]
                        nonzero = sq_v[c] != 0.0
                    else:
                        self.q[k] = self._sqnorm(k, &nonzero)
                    if not nonzero:
                        self.nk[k].nnz = 0    # its terms cancel exactly: x_c = 0
            for g in range(n_g):
                self.grp[g].start = gstart_v[g]
                self.grp[g].size = gsize_v[g]
                self.grp[g].active = gsize_v[g]
                self.grp[g].C = C_v[g]
                self.grp[g].n_off = 0
                self.grp[g].cs_y = -1
                if shared_v[g]:
                    r = rrow_v[g]
                    self.grp[g].n_off = <int32_t>noff_v[g]
                    self.srow[g].off_start = ostart_v[g]
                    self.srow[g].row_start = ptr_v[r]
                    self.srow[g].row_nnz = <int32_t>(ptr_v[r + 1] - ptr_v[r])
                    self.srow[g].bias_col = <int32_t>sbias if (has_bias and rbias_v[g]) else -1
                    self.srow[g].rsq = row_sqnorm(self.data, self.srow[g].row_start,
                                                  self.srow[g].row_start + self.srow[g].row_nnz,
                                                  self.bias, self.srow[g].bias_col)
            if self.n_shared:
                for t in range(soffs_v.shape[0]):
                    self.soffs[t] = soffs_v[t]
                for g in range(n_g):
                    if self.grp[g].n_off > 0:
                        for k in range(self.grp[g].start, self.grp[g].start + self.grp[g].size):
                            self._shared_sqnorm(k, self.srow[g].rsq)
                        self._mark_crammer_singer(g)
                        if self.grp[g].cs_y >= 0:
                            self.has_cs = True
        self.est_loss = 0.0
        self.est_gap = 0.0
        self.shrunk_loss = 0.0
        self.unshrink()
        self.recompute_w()

    cdef int _allocate(self, int64_t n, int64_t n_groups, int64_t n_kinds,
                       int64_t largest_group) except -1:
        """The layout's arrays over n constraints in n_groups groups (alpha all 0)."""
        self.alpha_ = <double*> calloc(max(n, 1), sizeof(double))
        self.q = <double*> malloc(max(n, 1) * sizeof(double))
        self.start = <int64_t*> malloc(max(n, 1) * sizeof(int64_t))
        self.nk = <NnzKind*> malloc(max(n, 1) * sizeof(NnzKind))
        self.kinds = <Kind*> malloc(max(n_kinds, 1) * sizeof(Kind))
        self.ids = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
        self.grp = <Group*> malloc(max(n_groups, 1) * sizeof(Group))
        self.groups = <int64_t*> malloc(max(n_groups, 1) * sizeof(int64_t))
        self.gbuf = <double*> malloc(max(largest_group, 1) * sizeof(double))
        if (self.alpha_ == NULL or self.q == NULL or self.start == NULL or self.nk == NULL
                or self.kinds == NULL or self.ids == NULL or self.grp == NULL or self.groups == NULL
                or self.gbuf == NULL):
            raise MemoryError("cannot allocate the constraint cache")
        return 0

    @staticmethod
    def from_rows(indptr, indices, data, scale, double C, *, int64_t n_cols, double bias=0.0,
                  bint has_bias=False, uint64_t seed=1, bint shrinking=True):
        """The engine of one constraint per row, x_i = scale_i X[i] (+ the bias feature at column
        n_cols), l_i = 1, each row its own group of bound C, built from plain buffers (indptr and
        indices int64, data and scale float64): a binary problem's cache
        (ConstraintCache.one_term over every row, Binary.all_constraints) without numpy, for
        `train`'s lean path (svmtrain.lean_train). The engine is the one __init__ lays out from
        those arrays, constraint for constraint (the same kinds, norms, order and generator), so
        its epochs take the same steps: tests/test_lean_train.py compares the models bit for bit.
        At most 16 distinct scales, and rows whose squared norms are finite: ValueError otherwise
        (the caller takes __init__, whose caller checks the rows)."""
        cdef const int64_t[::1] ptr_v = indptr
        cdef const double[::1] data_v = data, scale_v = scale
        cdef int64_t n = ptr_v.shape[0] - 1, nnz = len(indices), k, j, m = 0
        cdef DualCD self = DualCD.__new__(DualCD)
        cdef int32_t* i32
        cdef double s
        if (n < 0 or ptr_v[0] != 0 or ptr_v[n] != nnz or data_v.shape[0] != nnz
                or scale_v.shape[0] != n):
            raise ValueError("from_rows: inconsistent arrays")
        if not (C >= 0.0 and C < INFINITY):
            raise ValueError("group bounds C_g must be finite and >= 0")
        if n_cols < 0 or n_cols > INT32_MAX or n > INT32_MAX:
            raise ValueError("the engine takes at most 2**31 - 1 columns and constraints")
        for k in range(n):
            if ptr_v[k + 1] < ptr_v[k] or ptr_v[k + 1] - ptr_v[k] > INT32_MAX:
                raise ValueError("from_rows: indptr is not a valid CSR row pointer")
        indices32 = int32_columns(indices, n_cols, &i32)
        self._keep = (indices32, data)
        self.indices = i32
        self.data = &data_v[0] if nnz else NULL
        self.data32 = NULL
        self.data8 = NULL
        self.bias = bias
        self.bias_col = n_cols if has_bias else -1
        self.n_w = n_cols + (1 if has_bias else 0)
        self.stride = 1
        self.w_ = zeros_as_numpy(max(self.n_w, 1))     # (numpy's huge-page advice, as an array's)
        self.w = &self.w_[0]
        self.shrinking = shrinking
        self.rng = seed
        self.M_dec = INFINITY
        self.M_inc = INFINITY
        self.has_cs = False
        self.nonneg = False
        self.terms = False
        self.n_shared = 0
        self.n_cons = n
        self.n_groups = n
        self.singles = True
        self._allocate(n, n, 16, 1)
        for k in range(n):
            # the kind table (_kind_table's linear scan, bit for bit): margin 1 and C are every
            # row's, so a kind is a scale
            s = scale_v[k]
            for j in range(m + 1):
                if j == m:
                    if m == 16:
                        raise ValueError("from_rows: more than 16 distinct scales")
                    self.kinds[m].scale = s
                    self.kinds[m].margin = 1.0
                    self.kinds[m].C = C
                    m += 1
                    break
                if _same_bits(self.kinds[j].scale, s):
                    break
            self.nk[k].kind = <int32_t>j
            self.ids[k] = <int32_t>k
            self.start[k] = ptr_v[k]
            self.nk[k].nnz = <int32_t>(ptr_v[k + 1] - ptr_v[k])
            self.q[k] = s * s * self._row_sqnorm(self.start[k], self.start[k] + self.nk[k].nnz,
                                                 self.bias_col)
            if not (self.q[k] < INFINITY):
                raise ValueError("from_rows: a row's squared norm overflows")
            self.grp[k].start = k
            self.grp[k].size = 1
            self.grp[k].active = 1
            self.grp[k].C = C
            self.grp[k].n_off = 0
            self.grp[k].cs_y = -1
        self.est_loss = 0.0
        self.est_gap = 0.0
        self.shrunk_loss = 0.0
        self.unshrink()
        self.recompute_w()
        return self

    # -- w(alpha) ------------------------------------------------------------------------------

    def recompute_w(self):
        """Set w = sum_c alpha_c x_c afresh (removes the drift of incremental updates)."""
        cdef int64_t k, j
        with nogil:
            for j in range(self.w_.shape[0]):
                self.w[j] = 0.0
            for k in range(self.n_cons):
                if self.alpha_[k] != 0.0:
                    self._scatter(k, self.alpha_[k], self.w)
            if self.nonneg:     # w = max(v, 0) on the masked columns, beta = w - v
                for j in range(self.n_w):
                    self.beta[j] = 0.0
                    if self.nn_mask[j] and self.w[j] < 0.0:
                        self.beta[j] = -self.w[j]
                        self.w[j] = 0.0
            self._norm_and_margin_sum(&self.est_ww, &self.est_la)

    # -- row access on constraints: dot, axpy, squared norm, cross product ----------------------

    # The cold paths' row kernels over this store's values, float64, float32 or bytes (the same bits).
    cdef inline double _row_sqnorm(self, int64_t s, int64_t e, int64_t bias_col) noexcept nogil:
        if self.data != NULL:
            return row_sqnorm(self.data, s, e, self.bias, bias_col)
        if self.data8 != NULL:
            return row_sqnorm(self.data8, s, e, self.bias, bias_col)
        return row_sqnorm(self.data32, s, e, self.bias, bias_col)

    cdef inline double _row_row_dot(self, int64_t s1, int64_t e1, int64_t s2, int64_t e2,
                                    int64_t bias_col) noexcept nogil:
        if self.data != NULL:
            return row_row_dot(self.indices, self.data, s1, e1, s2, e2, self.bias, bias_col)
        if self.data8 != NULL:
            return row_row_dot(self.indices, self.data8, s1, e1, s2, e2, self.bias, bias_col)
        return row_row_dot(self.indices, self.data32, s1, e1, s2, e2, self.bias, bias_col)

    cdef inline Term _term(self, int64_t t) noexcept nogil:
        """Term t of the caller's arrays: its row slice, offset, scale and bias column."""
        cdef Term tm
        cdef int64_t r = self.t_row[t] if self.t_row != NULL else self.t_row32[t]
        tm.start = self.rptr[r]
        tm.nnz = <int32_t>(self.rptr[r + 1] - tm.start)
        tm.offset = self.t_off[t] if self.t_off != NULL else self.t_off32[t]
        tm.scale = self.t_scale[t] if self.t_scale != NULL else <double>self.t_scale32[t]
        tm.bias_col = self.t_bias_col if self.t_bias[t] else -1
        return tm

    cdef inline Kind* _kind(self, int64_t k) noexcept nogil:
        return &self.kinds[self.nk[k].kind]

    cdef inline double _dot(self, int64_t k, const double* v) noexcept nogil:
        """v . x_c"""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz
        if not self.terms:
            return self._kind(k).scale * row_dot(v, self.indices, self.data, s, e, self.bias, self.bias_col)
        # The value type is taken once a constraint, so each term calls its row kernel inline: a
        # kernel chosen term by term was not inlined, and cost 10% of a UD English solve.
        if self.data32 != NULL:
            return terms_dot(self, self.data32, s, e, v)
        if self.data8 != NULL:
            return terms_dot(self, self.data8, s, e, v)
        return terms_dot(self, self.data, s, e, v)

    cdef inline void _scatter(self, int64_t k, double d, double* v) noexcept nogil:
        """v += d x_c"""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz
        if not self.terms:
            row_axpy(d * self._kind(k).scale, self.indices, self.data, s, e, self.bias, self.bias_col, v)
        elif self.data32 != NULL:       # (as in _dot)
            terms_axpy(self, self.data32, s, e, d, v)
        elif self.data8 != NULL:
            terms_axpy(self, self.data8, s, e, d, v)
        else:
            terms_axpy(self, self.data, s, e, d, v)

    cdef inline double _gradient(self, int64_t k) noexcept nogil:
        """g_c = l_c - w.x_c"""
        return self._kind(k).margin - self._dot(k, self.w)

    cdef inline void _axpy(self, int64_t k, double d) noexcept nogil:
        """w += d x_c (then w = max(v, 0) on its masked columns)"""
        self._scatter(k, d, self.w)
        if self.nonneg:
            self._reclip(k)

    # -- non-negativity: the beta step on the columns a step touched -----------------------------

    cdef inline void _reclip_col(self, int64_t col) noexcept nogil:
        """beta's optimum for column col: w = max(v, 0), v = w - beta (est_ww follows w)."""
        cdef double v, nw
        if self.nn_mask[col]:
            v = self.w[col] - self.beta[col]
            nw = v if v > 0.0 else 0.0
            self.est_ww += nw * nw - self.w[col] * self.w[col]
            self.beta[col] = nw - v
            self.w[col] = nw

    cdef void _reclip_row(self, int64_t offset, int64_t start, int64_t nnz,
                          int64_t bias_col) noexcept nogil:
        cdef int64_t p
        for p in range(start, start + nnz):
            self._reclip_col(offset + self.stride * self.indices[p])
        if bias_col >= 0:
            self._reclip_col(offset + bias_col)

    cdef void _reclip(self, int64_t k) noexcept nogil:
        """_reclip_col over the columns of x_c."""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz, t
        cdef Term tm
        if not self.terms:
            self._reclip_row(0, s, e - s, self.bias_col)
            return
        for t in range(s, e):
            tm = self._term(t)
            self._reclip_row(tm.offset, tm.start, tm.nnz, tm.bias_col)

    # -- the terms layout's accumulator ----------------------------------------------------------

    # ||x_c||^2 and x_j . x_k must sum the terms' entries that fall on one column of w before they
    # are squared or multiplied. A dense scratch of n_w zeros did that by indexing, but its pages
    # all became resident (16 MB of UD English EWT's 117,733 x 17 weights, in every re-solve); a
    # table keyed by the w index, of twice the entries of the largest constraint, holds the same
    # values: each column receives the same additions in the same order, so the sums are the same
    # bits. It stays in cache, where the scratch's entries were spread over all of w.
    cdef void _acc_alloc(self, tptr) except *:
        cdef const int64_t[::1] tp = tptr
        cdef int64_t c, t, m, most = 0, cap = 16
        cdef Term tm
        with nogil:
            for c in range(tp.shape[0] - 1):
                m = 0
                for t in range(tp[c], tp[c + 1]):
                    tm = self._term(t)
                    m += tm.nnz + (1 if tm.bias_col >= 0 else 0)
                if m > most:
                    most = m
        self.acc_shift = 60
        while cap < 2 * most:
            cap *= 2
            self.acc_shift -= 1
        self.acc_mask = <uint64_t>(cap - 1)
        self.acc_key = <int64_t*> malloc(cap * sizeof(int64_t))
        self.acc_val = <double*> malloc(cap * sizeof(double))
        self.acc_used = <int64_t*> malloc(cap * sizeof(int64_t))
        if self.acc_key == NULL or self.acc_val == NULL or self.acc_used == NULL:
            raise MemoryError("cannot allocate the constraint cache")
        for c in range(cap):
            self.acc_key[c] = -1
        self.acc_n_used = 0

    cdef inline uint64_t _acc_slot(self, int64_t key) noexcept nogil:
        """The slot holding `key`, or the empty slot where it goes (Fibonacci hashing, linear probing:
        the table is at most half full, so a probe ends)."""
        cdef uint64_t h = (<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> self.acc_shift
        while self.acc_key[h] != key and self.acc_key[h] >= 0:
            h = (h + 1) & self.acc_mask
        return h

    cdef inline void _acc_add(self, int64_t key, double x) noexcept nogil:
        cdef uint64_t h = self._acc_slot(key)
        if self.acc_key[h] < 0:
            self.acc_key[h] = key
            self.acc_val[h] = 0.0
            self.acc_used[self.acc_n_used] = <int64_t>h
            self.acc_n_used += 1
        self.acc_val[h] += x

    cdef inline double _acc_get(self, int64_t key) noexcept nogil:
        cdef uint64_t h = self._acc_slot(key)
        return self.acc_val[h] if self.acc_key[h] >= 0 else 0.0

    cdef inline void _acc_clear(self) noexcept nogil:
        cdef int64_t i
        for i in range(self.acc_n_used):
            self.acc_key[self.acc_used[i]] = -1
        self.acc_n_used = 0

    cdef inline void _acc_scatter(self, int64_t k) noexcept nogil:
        """table += x_c (the additions of _scatter(k, 1.0, v), in its order)"""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz
        if self.data32 != NULL:
            acc_scatter(self, self.data32, s, e)
        elif self.data8 != NULL:
            acc_scatter(self, self.data8, s, e)
        else:
            acc_scatter(self, self.data, s, e)

    cdef inline double _acc_dot(self, int64_t k) noexcept nogil:
        """table . x_c (the products of _dot(k, v), in its order)"""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz
        if self.data32 != NULL:
            return acc_dot(self, self.data32, s, e)
        if self.data8 != NULL:
            return acc_dot(self, self.data8, s, e)
        return acc_dot(self, self.data, s, e)

    cdef double _sqnorm(self, int64_t k, bint* nonzero) noexcept nogil:
        """||x_c||^2 in the terms layout, exactly (terms may overlap); `nonzero`: is x_c != 0."""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz, i
        cdef double r = 0.0, v
        cdef Term tm
        if e - s == 1:
            tm = self._term(s)
            nonzero[0] = True
            return tm.scale * tm.scale * self._row_sqnorm(tm.start, tm.start + tm.nnz, tm.bias_col)
        nonzero[0] = False
        self._acc_scatter(k)
        # each column once, in the order the terms first reach it (the table's filling order)
        for i in range(self.acc_n_used):
            v = self.acc_val[self.acc_used[i]]
            if v != 0.0:
                nonzero[0] = True
                r += v * v
        self._acc_clear()
        return r

    cdef void _shared_sqnorm(self, int64_t k, double rsq) noexcept nogil:
        """q_c of a constraint of a shared-row group: ||row||^2 times the sum over its offsets of the
        squared sum of the scales of its terms there (the shifted rows do not overlap); nnz 0 when
        x_c = 0, as _sqnorm says."""
        cdef int64_t s = self.start[k], e = s + self.nk[k].nnz, a, b
        cdef double r = 0.0, sc
        cdef bint first
        for a in range(s, e):
            first = True
            for b in range(s, a):
                if self.tslot[b] == self.tslot[a]:
                    first = False
                    break
            if first:
                sc = 0.0
                for b in range(a, e):
                    if self.tslot[b] == self.tslot[a]:
                        sc += self.t_scale[b]
                r += sc * sc
        r *= rsq
        self.q[k] = r
        if r == 0.0:
            self.nk[k].nnz = 0

    cdef double _cross(self, int64_t j, int64_t k) noexcept nogil:
        """x_j . x_k"""
        cdef double s, r
        cdef int64_t sj = self.start[j], ej = sj + self.nk[j].nnz
        cdef int64_t sk = self.start[k], ek = sk + self.nk[k].nnz
        cdef int64_t bc
        cdef Term a
        cdef Term b
        if not self.terms:
            s = self._kind(j).scale * self._kind(k).scale
            if sj == sk and ej == ek:   # the same row
                return s * self._row_sqnorm(sj, ej, self.bias_col)
            return s * self._row_row_dot(sj, ej, sk, ek, self.bias_col)
        if sj == ej or sk == ek:        # x = 0
            return 0.0
        a = self._term(sj)
        b = self._term(sk)
        if ej - sj == 1 and ek - sk == 1 and a.offset == b.offset:
            # one term each in the same place: the one-row products (the bias only if both carry it)
            s = a.scale * b.scale
            bc = a.bias_col if a.bias_col == b.bias_col else -1
            if a.start == b.start and a.nnz == b.nnz:
                return s * self._row_sqnorm(a.start, a.start + a.nnz, bc)
            return s * self._row_row_dot(a.start, a.start + a.nnz, b.start, b.start + b.nnz, bc)
        # x_j into the table, read with x_k
        self._acc_scatter(j)
        r = self._acc_dot(k)
        self._acc_clear()
        return r

    cdef inline void _swap(self, int64_t j, int64_t k) noexcept nogil:
        """Exchange the places of constraints j and k (within a group)."""
        self.alpha_[j], self.alpha_[k] = self.alpha_[k], self.alpha_[j]
        self.q[j], self.q[k] = self.q[k], self.q[j]
        self.start[j], self.start[k] = self.start[k], self.start[j]
        self.nk[j], self.nk[k] = self.nk[k], self.nk[j]
        self.ids[j], self.ids[k] = self.ids[k], self.ids[j]
        if self.jslot != NULL:
            self.jslot[j], self.jslot[k] = self.jslot[k], self.jslot[j]

    # -- one epoch -----------------------------------------------------------------------------

    def epoch(self):
        """One pass over the active groups in a fresh random order.

        Returns (steps, violation, active_constraints): the number of coordinates that moved, the
        largest violation of the optimality conditions seen (projected gradient), and the size of
        the active set after shrinking.
        """
        cdef Tally t
        with nogil:
            self._epoch(&t)
        return t.steps, t.violation, self.n_active_cons

    cdef void _epoch(self, Tally* out) noexcept nogil:
        cdef int64_t s, g
        cdef double v
        cdef Tally t
        t.steps = 0
        t.shrunk = 0
        t.violation = 0.0
        t.v_dec = 0.0
        t.v_inc = 0.0
        t.loss = 0.0
        t.gap = 0.0
        shuffle(self.groups, self.n_active, &self.rng)    # the active groups, the engine's generator
        s = 0
        while s < self.n_active:
            if s + _AHEAD_RECORD < self.n_active:
                self._prefetch_record(self.groups[s + _AHEAD_RECORD])
            if s + _AHEAD_ROW < self.n_active:
                self._prefetch_row(self.groups[s + _AHEAD_ROW])
            g = self.groups[s]
            if self.singles:                 # LIBLINEAR's case: no group look-up
                v = self._visit_single(g, &t)
            elif self.grp[g].size == 1:
                v = self._visit_single(self.grp[g].start, &t)
            elif self.grp[g].cs_y >= 0:
                v = self._visit_cs(g, &t)
            elif self.grp[g].n_off > 0:
                v = self._visit_shared(g, &t)
            else:
                v = self._visit_group(g, &t)
            if v < 0.0:
                # the group left the active set: the last active group takes its place
                self.n_active -= 1
                self.groups[s] = self.groups[self.n_active]
                self.groups[self.n_active] = g
                continue
            if v > t.violation:
                t.violation = v
            s += 1
        self.M_dec = t.v_dec if t.v_dec > 0.0 else INFINITY
        self.M_inc = t.v_inc if t.v_inc > 0.0 else INFINITY
        self.n_active_cons -= t.shrunk
        self.est_loss = t.loss
        self.est_gap = t.gap
        out[0] = t

    # A visit in a random order waits on memory twice: for the constraint's record (its row's start
    # and length, alpha, q), then for its row. The epoch asks for both ahead of the visit, the record
    # _AHEAD_RECORD visits ahead and the row, whose address the record gives, _AHEAD_ROW ahead: a9a's
    # epoch over all 32,561 constraints took 8-11 ms without, 2 ms with (in a stand-alone loop of
    # the same step, distances from 8 / 4 to 64 / 32 measured alike). A hint changes no value: the
    # same steps in the same order.
    cdef inline void _prefetch_record(self, int64_t g) noexcept nogil:
        if self.singles:
            prefetch(&self.start[g])
            prefetch(&self.nk[g])
            prefetch(&self.alpha_[g])
            prefetch(&self.q[g])
        else:
            prefetch(&self.grp[g])

    cdef inline void _prefetch_row(self, int64_t g) noexcept nogil:
        cdef int64_t k, p, last
        if not self.singles:
            # the group's record is in cache by now: its first constraint's record is next
            k = self.grp[g].start
            prefetch(&self.start[k])
            prefetch(&self.nk[k])
            prefetch(&self.alpha_[k])
            prefetch(&self.q[k])
            return
        if self.terms:
            return
        p = self.start[g]
        last = p + self.nk[g].nnz - 1
        if last < p:
            return
        prefetch(&self.indices[p])
        prefetch(&self.data[p])
        prefetch(&self.indices[last])
        prefetch(&self.data[last])

    cdef inline double _visit_single(self, int64_t k, Tally* t) noexcept nogil:
        """LIBLINEAR's step for a group of one constraint; returns its violation, or -1 if shrunk."""
        cdef Kind* kd = self._kind(k)
        cdef double Cg = kd.C
        cdef double a = self.alpha_[k]
        cdef double q = self.q[k]
        cdef double wx = self._dot(k, self.w)
        cdef double G = kd.margin - wx
        cdef double loss = Cg * G if G > 0.0 else 0.0
        cdef double pg, new_a, d
        if a <= 0.0:
            if self.shrinking and G < -self.M_dec:
                t.shrunk += 1
                self.shrunk_loss += loss
                return -1.0
            pg = G if G > 0.0 else 0.0
        elif a >= Cg:
            if self.shrinking and G > self.M_inc:
                t.shrunk += 1
                self.shrunk_loss += loss
                return -1.0
            pg = G if G < 0.0 else 0.0
        else:
            pg = G
        t.loss += loss
        t.gap += loss - a * G
        if pg > t.v_inc:
            t.v_inc = pg
        elif -pg > t.v_dec:
            t.v_dec = -pg
        if pg != 0.0:
            if q > 0.0:
                new_a = clip(a + G / q, 0.0, Cg)
            else:  # x_c = 0: the dual is linear in a_c, go to the bound the gradient points at
                new_a = Cg if G > 0.0 else 0.0
            if new_a != a:
                d = new_a - a
                self._scatter(k, d, self.w)
                self.alpha_[k] = new_a   # exactly on the bound when clipped: no rounding drift
                t.steps += 1
                self.est_ww += d * (2.0 * wx + d * q)      # ||w + d x_c||^2
                if self.nonneg:
                    self._reclip(k)
                self.est_la += d * kd.margin
        return fabs(pg)

    cdef double _visit_group(self, int64_t g, Tally* t) noexcept nogil:
        """Single and pair steps over a group's active constraints; returns the group's violation,
        or -1 when all its constraints were shrunk.

        The gradients of the group are taken once on entry (gbuf); a constraint's own gradient is
        taken afresh once the group has moved, and the partner of a pair step is the support
        constraint with the smallest recorded gradient, refreshed before the step: O(m) dot
        products per visit instead of O(m^2)."""
        cdef Group* gr = &self.grp[g]
        cdef int64_t base = gr.start
        cdef double Cg = gr.C
        cdef double Ag = 0.0, G, Gk, Gbest, a, d, q, room, v, gmax = -INFINITY, violation = 0.0
        cdef int64_t u, k, best, tt
        cdef int64_t m = gr.active
        cdef double* gb = self.gbuf - base          # gb[u] for u in base .. base + m - 1
        cdef bint moved = False
        for tt in range(base, base + m):
            Ag += self.alpha_[tt]
            gb[tt] = self._gradient(tt)
        tt = base
        while tt < base + m:
            a = self.alpha_[tt]
            if moved:
                gb[tt] = self._gradient(tt)
            G = gb[tt]
            if G > gmax:
                gmax = G
            if a <= 0.0 and self.shrinking and G < -self.M_dec:
                # shrink: swap it behind the group's active constraints, then visit the one moved in
                m -= 1
                self._swap(tt, base + m)
                gb[tt] = gb[base + m]
                continue
            room = Cg - Ag
            if room > 1e-12 * Cg or G <= 0.0:
                # single step: a decrease is always feasible, an increase up to the group's room
                v = G if a > 0.0 else (G if G > 0.0 else 0.0)
                if v != 0.0:
                    if room < 0.0:
                        room = 0.0
                    if self.q[tt] > 0.0:
                        d = clip(G / self.q[tt], -a, room)
                    else:
                        d = room if G > 0.0 else -a
                    if d != 0.0:
                        self._axpy(tt, d)
                        self.alpha_[tt] = a + d
                        Ag += d
                        moved = True
                        t.steps += 1
                        self.est_ww += d * (2.0 * (self._kind(tt).margin - G) + d * self.q[tt])
                        self.est_la += d * self._kind(tt).margin
            else:
                # the group is at its bound and c wants to grow: take mass from the support
                # constraint with the smallest gradient
                best = -1
                Gbest = INFINITY
                for u in range(base, base + m):
                    if u != tt and self.alpha_[u] > 0.0 and gb[u] < Gbest:
                        Gbest = gb[u]
                        best = u
                if best >= 0 and moved:
                    Gbest = self._gradient(best)
                    gb[best] = Gbest
                v = 0.0
                if best >= 0 and G > Gbest:
                    v = G - Gbest
                    q = self.q[tt] + self.q[best] - 2.0 * self._cross(tt, best)
                    if q > 1e-12 * (self.q[tt] + self.q[best]):
                        d = clip(v / q, 0.0, self.alpha_[best])
                    else:  # x_j == x_k: the dual is linear along the pair direction
                        d = self.alpha_[best]
                    if d > 0.0:
                        self._scatter(tt, d, self.w)
                        self._scatter(best, -d, self.w)
                        if self.nonneg:      # beta's step after the whole (feasible) pair step
                            self._reclip(tt)
                            self._reclip(best)
                        self.alpha_[tt] += d
                        self.alpha_[best] -= d   # d <= alpha_k, so this stays >= 0
                        moved = True
                        t.steps += 1
                        # ||w + d (x_j - x_k)||^2, with w.x_c = l_c - g_c
                        self.est_ww += d * (2.0 * (self._kind(tt).margin - G - self._kind(best).margin
                                                   + Gbest) + d * q)
                        self.est_la += d * (self._kind(tt).margin - self._kind(best).margin)
            if v > t.v_inc:
                t.v_inc = v
            elif -v > t.v_dec:
                t.v_dec = -v
            v = fabs(v)
            if v > violation:
                violation = v
            tt += 1
        t.shrunk += gr.active - m
        gr.active = m
        if m == 0:
            self.shrunk_loss += Cg * gmax if gmax > 0.0 else 0.0
            return -1.0
        t.loss += Cg * gmax if gmax > 0.0 else 0.0
        return violation

    # -- shared-row groups ----------------------------------------------------------------------

    cdef inline double _shared_gradient(self, int64_t k, const double* sv) noexcept nogil:
        """g_c = l_c - sum_t s_t s[o_t], from the group's row products s."""
        cdef int64_t t, s = self.start[k], e = s + self.nk[k].nnz
        cdef double r = self._kind(k).margin
        for t in range(s, e):
            r -= self.t_scale[t] * sv[self.tslot[t]]
        return r

    cdef inline void _shared_move(self, int64_t k, double d, double* sv, double* cf,
                                  double rsq) noexcept nogil:
        """a_c += d, on the row products s (exactly: the shifted rows do not overlap) and the
        coefficients cf, which the visit adds to w at its end."""
        cdef int64_t t, s = self.start[k], e = s + self.nk[k].nnz
        cdef double ds
        for t in range(s, e):
            ds = d * self.t_scale[t]
            cf[self.tslot[t]] += ds
            sv[self.tslot[t]] += ds * rsq

    cdef inline double _shared_cross(self, int64_t j, int64_t k, double rsq) noexcept nogil:
        """x_j . x_k: the products of their terms at the same offset."""
        cdef int64_t a, b, sj = self.start[j], ej = sj + self.nk[j].nnz
        cdef int64_t sk = self.start[k], ek = sk + self.nk[k].nnz
        cdef double r = 0.0
        for a in range(sj, ej):
            for b in range(sk, ek):
                if self.tslot[a] == self.tslot[b]:
                    r += self.t_scale[a] * self.t_scale[b]
        return r * rsq

    cdef void _strided_dots(self, const SharedRow* sr, int64_t na, double* sv) noexcept nogil:
        """sv[ibuf[a]] = w[abuf[a]:].row (strided) for a < na, in one pass over the row: per nonzero
        j, the weights w[o + stride * j] of the offsets o are read together (one contiguous run
        when the offsets are consecutive, as the K classes of an example are)."""
        cdef int64_t a, p, e = sr.row_start + sr.row_nnz
        cdef const int64_t* ao = self.abuf
        cdef const int64_t* ai = self.ibuf
        cdef double* acc = self.dbuf
        cdef const double* wc
        cdef double v
        if na == 0:
            return
        for a in range(na):
            acc[a] = 0.0
        if ao[na - 1] - ao[0] == na - 1:      # consecutive (ascending, distinct) offsets
            for p in range(sr.row_start, e):
                wc = self.w + ao[0] + self.stride * self.indices[p]
                v = self.data[p]
                for a in range(na):
                    acc[a] += wc[a] * v
            if sr.bias_col >= 0:
                wc = self.w + ao[0] + sr.bias_col
                for a in range(na):
                    acc[a] += wc[a] * self.bias
        else:
            for p in range(sr.row_start, e):
                wc = self.w + self.stride * self.indices[p]
                v = self.data[p]
                for a in range(na):
                    acc[a] += wc[ao[a]] * v
            if sr.bias_col >= 0:
                wc = self.w + sr.bias_col
                for a in range(na):
                    acc[a] += wc[ao[a]] * self.bias
        for a in range(na):
            sv[ai[a]] = acc[a]

    cdef void _strided_axpys(self, const SharedRow* sr, int64_t na, const double* cf) noexcept nogil:
        """w[abuf[a]:] += cf[ibuf[a]] row (strided) for a < na, in one pass over the row."""
        cdef int64_t a, p, e = sr.row_start + sr.row_nnz
        cdef const int64_t* ao = self.abuf
        cdef const int64_t* ai = self.ibuf
        cdef double* c = self.dbuf
        cdef double* wc
        cdef double v
        if na == 0:
            return
        for a in range(na):
            c[a] = cf[ai[a]]
        if ao[na - 1] - ao[0] == na - 1:      # consecutive offsets
            for p in range(sr.row_start, e):
                wc = self.w + ao[0] + self.stride * self.indices[p]
                v = self.data[p]
                for a in range(na):
                    wc[a] += c[a] * v
            if sr.bias_col >= 0:
                wc = self.w + ao[0] + sr.bias_col
                for a in range(na):
                    wc[a] += c[a] * self.bias
        else:
            for p in range(sr.row_start, e):
                wc = self.w + self.stride * self.indices[p]
                v = self.data[p]
                for a in range(na):
                    wc[ao[a]] += c[a] * v
            if sr.bias_col >= 0:
                wc = self.w + sr.bias_col
                for a in range(na):
                    wc[ao[a]] += c[a] * self.bias

    cdef double _visit_shared(self, int64_t g, Tally* t) noexcept nogil:
        """_visit_group for a shared-row group: the row's product with w at each of the group's
        offsets is taken once, every gradient follows from them, and the steps update them exactly
        (w itself once, at the end). Gradients being cheap, the visit makes passes over the group
        until its violation falls below a tenth of its entry violation (at most 10): close to
        LIBLINEAR's exact solve of an example's Crammer-Singer subproblem. Shrinking and the tallies
        are those of the first pass, and so is the loss term (eq. 23: the gradients on entry)."""
        cdef Group* gr = &self.grp[g]
        cdef const SharedRow* sr = &self.srow[g]
        cdef int64_t base = gr.start, m = gr.active, n_off = gr.n_off, tt, u, best, i
        cdef const int64_t* offs = self.soffs + sr.off_start
        cdef double* sv = self.sbuf
        cdef double* cf = self.cbuf
        cdef double Cg = gr.C, rsq = sr.rsq, Ag = 0.0, G, Gu, Gbest, a, d, q, room, v, pv
        cdef double violation = 0.0, gmax = -INFINITY
        cdef int p
        cdef int64_t na = 0
        cdef bint stepped, strided = self.stride != 1
        # s at the offsets the active constraints use (shrinking may leave few of them)
        for i in range(n_off):
            cf[i] = INFINITY
        for tt in range(base, base + m):
            Ag += self.alpha_[tt]
            for u in range(self.start[tt], self.start[tt] + self.nk[tt].nnz):
                i = self.tslot[u]
                if cf[i] != 0.0:
                    cf[i] = 0.0
                    if not strided:          # strided: taken below, all in one pass
                        sv[i] = row_dot(self.w + offs[i], self.indices, self.data, sr.row_start,
                                        sr.row_start + sr.row_nnz, self.bias, sr.bias_col)
        if strided:
            for i in range(n_off):           # ascending offsets
                if cf[i] == 0.0:
                    self.abuf[na] = offs[i]
                    self.ibuf[na] = i
                    na += 1
            self._strided_dots(sr, na, sv)
        for p in range(_PASSES):
            pv = 0.0
            stepped = False
            tt = base
            while tt < base + m:
                a = self.alpha_[tt]
                G = self._shared_gradient(tt, sv)
                if p == 0 and G > gmax:
                    gmax = G
                if p == 0 and a <= 0.0 and self.shrinking and G < -self.M_dec:
                    m -= 1
                    self._swap(tt, base + m)
                    continue
                room = Cg - Ag
                if room > 1e-12 * Cg or G <= 0.0:
                    v = G if a > 0.0 else (G if G > 0.0 else 0.0)
                    if v != 0.0:
                        if room < 0.0:
                            room = 0.0
                        if self.q[tt] > 0.0:
                            d = clip(G / self.q[tt], -a, room)
                        else:
                            d = room if G > 0.0 else -a
                        if d != 0.0:
                            self._shared_move(tt, d, sv, cf, rsq)
                            self.alpha_[tt] = a + d
                            Ag += d
                            stepped = True
                            t.steps += 1
                            self.est_ww += d * (2.0 * (self._kind(tt).margin - G) + d * self.q[tt])
                            self.est_la += d * self._kind(tt).margin
                else:
                    best = -1
                    Gbest = INFINITY
                    for u in range(base, base + m):
                        if u != tt and self.alpha_[u] > 0.0:
                            Gu = self._shared_gradient(u, sv)
                            if Gu < Gbest:
                                Gbest = Gu
                                best = u
                    v = 0.0
                    if best >= 0 and G > Gbest:
                        v = G - Gbest
                        q = self.q[tt] + self.q[best] - 2.0 * self._shared_cross(tt, best, rsq)
                        if q > 1e-12 * (self.q[tt] + self.q[best]):
                            d = clip(v / q, 0.0, self.alpha_[best])
                        else:
                            d = self.alpha_[best]
                        if d > 0.0:
                            self._shared_move(tt, d, sv, cf, rsq)
                            self._shared_move(best, -d, sv, cf, rsq)
                            self.alpha_[tt] += d
                            self.alpha_[best] -= d
                            stepped = True
                            t.steps += 1
                            self.est_ww += d * (2.0 * (self._kind(tt).margin - G - self._kind(best).margin
                                                       + Gbest) + d * q)
                            self.est_la += d * (self._kind(tt).margin - self._kind(best).margin)
                if p == 0:
                    if v > t.v_inc:
                        t.v_inc = v
                    elif -v > t.v_dec:
                        t.v_dec = -v
                v = fabs(v)
                if v > pv:
                    pv = v
                tt += 1
            if p == 0:
                violation = pv
                t.shrunk += gr.active - m
                gr.active = m
            if not stepped or pv <= _TOL * violation:
                break
        if strided:
            na = 0
            for i in range(n_off):
                if cf[i] != 0.0 and cf[i] != INFINITY:
                    self.abuf[na] = offs[i]
                    self.ibuf[na] = i
                    na += 1
            self._strided_axpys(sr, na, cf)
        else:
            for i in range(n_off):
                if cf[i] != 0.0 and cf[i] != INFINITY:
                    row_axpy(cf[i], self.indices, self.data, sr.row_start, sr.row_start + sr.row_nnz,
                             self.bias, sr.bias_col, self.w + offs[i])
        if self.nonneg:
            for i in range(n_off):
                if cf[i] != 0.0 and cf[i] != INFINITY:
                    self._reclip_row(offs[i], sr.row_start, sr.row_nnz, sr.bias_col)
        if m == 0:
            self.shrunk_loss += Cg * gmax if gmax > 0.0 else 0.0
            return -1.0
        t.loss += Cg * gmax if gmax > 0.0 else 0.0
        return violation

    # -- Crammer-Singer groups -----------------------------------------------------------------

    cdef inline void _swap_terms(self, int64_t a, int64_t b) noexcept nogil:
        """Exchange terms a and b (of one constraint; the engine's own copies of the term arrays)."""
        self.t_row[a], self.t_row[b] = self.t_row[b], self.t_row[a]
        self.t_off[a], self.t_off[b] = self.t_off[b], self.t_off[a]
        self.t_scale[a], self.t_scale[b] = self.t_scale[b], self.t_scale[a]
        self.t_bias[a], self.t_bias[b] = self.t_bias[b], self.t_bias[a]

    cdef void _mark_crammer_singer(self, int64_t g) noexcept nogil:
        """Set cs_y when shared-row group g is an example of Crammer and Singer's problem: every
        constraint two terms, +1 at one slot y (the same for all) and -1 at a slot of its own, and a
        row of positive norm. Puts each constraint's +1 term first (x_c is unchanged). Not with
        non-negative weights: the exact subproblem assumes w = sum alpha x (no clipping), so those
        examples take the shared-row visit, which re-clips after its steps."""
        cdef Group* gr = &self.grp[g]
        cdef const SharedRow* sr = &self.srow[g]
        cdef int64_t k, s, i, y = -1
        cdef double* seen = self.xbuf
        cdef int32_t sl
        if sr.rsq <= 0.0 or self.nonneg:
            return
        for i in range(gr.n_off):
            seen[i] = 0.0
        for k in range(gr.start, gr.start + gr.size):
            s = self.start[k]
            if self.nk[k].nnz != 2:
                return
            if self.t_scale[s] == -1.0 and self.t_scale[s + 1] == 1.0:
                self._swap_terms(s, s + 1)
                sl = self.tslot[s]
                self.tslot[s] = self.tslot[s + 1]
                self.tslot[s + 1] = sl
            if self.t_scale[s] != 1.0 or self.t_scale[s + 1] != -1.0:
                return
            if y < 0:
                y = self.tslot[s]
            if self.tslot[s] != y or self.tslot[s + 1] == y or seen[self.tslot[s + 1]] != 0.0:
                return
            seen[self.tslot[s + 1]] = 1.0
        for k in range(gr.start, gr.start + gr.size):
            self.jslot[k] = self.tslot[self.start[k] + 1]
        gr.cs_y = <int32_t>y

    cdef double _visit_cs(self, int64_t g, Tally* t) noexcept nogil:
        """A Crammer-Singer example: its subproblem solved exactly (Crammer and Singer 2001, sec. 6;
        Keerthi et al. 2008, sec. 4), with LIBLINEAR's shrinking of -s 4. Returns the example's
        violation, or -1 when the group leaves the active set.

        With R = ||row||^2, S_o = w[o:].row, constraint c = (+row at y, -row at j_c), A = sum_c a_c
        and the multipliers u_y = A', u_c = a'_c of the new point, the change of the dual is
        -(F(u) - F(u_now)) with

            F = R/2 [(u_y - A)^2 + sum_c (u_c - a_c)^2] + S_y (u_y - A) - sum_c (S_jc + l_c)(u_c - a_c)

        to be minimised s.t. u_y = sum_c u_c, u_c >= 0, u_y <= C. In LIBLINEAR's variables
        (alpha_y = u_y <= C, alpha_c = -u_c <= 0, sum alpha = 0) it is 1/2 R |alpha|^2 + B.alpha with
        B_y = S_y - R A, B_c = S_jc + l_c + R a_c. Its KKT point is alpha_m = min(bound_m, (beta - B_m)/R)
        where beta solves sum_m max(0, D_m - beta) = R C, D_m = B_m + R bound_m: one sort of the D.
        The gradients in the engine's sign are g_c = l_c - S_y + S_jc = G_c - G_y with G = B + R alpha.
        """
        cdef Group* gr = &self.grp[g]
        cdef const SharedRow* sr = &self.srow[g]
        cdef int64_t base = gr.start, m = gr.active, n_off = gr.n_off, k, i, r, na = 0
        cdef const int64_t* offs = self.soffs + sr.off_start
        cdef double* sv = self.sbuf
        cdef double* cf = self.cbuf
        cdef double* gb = self.gbuf - base          # gb[k]: g_k on entry
        cdef double* Ds = self.xbuf
        cdef double Cg = gr.C, R = sr.rsq, A = 0.0, Sy, G, gmax = -INFINITY, gsup = INFINITY, glow
        cdef double beta, a, u, d, delta = 0.0, ww = 0.0, la = 0.0, violation
        cdef int32_t ys = gr.cs_y
        cdef int64_t steps = 0
        cdef bint at_bound
        # the row products at y and at the active constraints' slots, in one pass over the row
        for i in range(n_off):
            cf[i] = INFINITY
        cf[ys] = 0.0
        for k in range(base, base + m):
            A += self.alpha_[k]
            cf[self.jslot[k]] = 0.0
        for i in range(n_off):                       # ascending offsets
            if cf[i] == 0.0:
                self.abuf[na] = offs[i]
                self.ibuf[na] = i
                na += 1
        if self.stride != 1:
            self._strided_dots(sr, na, sv)
        else:
            for r in range(na):
                sv[self.ibuf[r]] = row_dot(self.w + self.abuf[r], self.indices, self.data, sr.row_start,
                                           sr.row_start + sr.row_nnz, self.bias, sr.bias_col)
        Sy = sv[ys]
        at_bound = A >= Cg * (1.0 - 1e-12)
        for k in range(base, base + m):
            G = self._kind(k).margin - Sy + sv[self.jslot[k]]
            gb[k] = G
            if G > gmax:
                gmax = G
            if self.alpha_[k] > 0.0 and G < gsup:
                gsup = G
        # LIBLINEAR's violation max_m G_m - min_{m below its bound} G_m, relative to G_y
        glow = gsup if (at_bound or gsup < 0.0) else 0.0
        violation = (gmax if gmax > 0.0 else 0.0) - glow
        if violation < 0.0:                          # C_g = 0: nothing can move (glow is +inf)
            violation = 0.0
        if self.shrinking:
            # a constraint at 0 whose gradient is below every movable one's stays at 0 (be_shrunk)
            na = 0                                   # the constraints that stay
            for k in range(base, base + m):
                if self.alpha_[k] > 0.0 or gb[k] >= glow:
                    na += 1
            # the group is fixed when at most one variable is left: none besides y, or y at its
            # bound C with no wish to grow (0 < glow) and one constraint (its order then does not
            # matter: no swaps)
            if na == 0 or (at_bound and glow > 0.0 and na <= 1):
                t.shrunk += m
                gr.active = 0
                self.shrunk_loss += Cg * gmax if gmax > 0.0 else 0.0
                return -1.0
            if na < m:
                k = base
                while k < base + m:
                    if self.alpha_[k] <= 0.0 and gb[k] < glow:
                        m -= 1
                        self._swap(k, base + m)
                        gb[k] = gb[base + m]
                        continue
                    k += 1
                t.shrunk += gr.active - m
                gr.active = m
        t.loss += Cg * gmax if gmax > 0.0 else 0.0
        if violation > t.v_inc:
            t.v_inc = violation
        if violation <= 1e-12:
            return violation
        # D_y = B_y + R C, D_c = B_c; beta from the sorted D (LIBLINEAR's solve_sub_problem)
        Ds[0] = Sy - R * A + R * Cg
        for k in range(base, base + m):
            Ds[k - base + 1] = sv[self.jslot[k]] + self._kind(k).margin + R * self.alpha_[k]
        beta = cs_threshold(Ds, m, R, Cg)
        # the new point: u_c = max(0, (B_c - beta) / R), u_y = sum_c u_c
        # cf (0 at the slots read above) becomes the coefficient of the row added at each slot
        for k in range(base, base + m):
            a = self.alpha_[k]
            i = self.jslot[k]
            u = (sv[i] + self._kind(k).margin + R * a - beta) / R
            if u < 0.0:
                u = 0.0
            d = u - a
            if d != 0.0:
                # dual terms: ||w||^2 gains -2 d S_j + R d^2 at slot j; l.a gains l d
                ww += d * (-2.0 * sv[i] + R * d)
                la += d * self._kind(k).margin
                cf[i] -= d
                delta += d
                self.alpha_[k] = u
                steps += 1
        if steps:
            ww += delta * (2.0 * Sy + R * delta)
            cf[ys] += delta
            self.est_ww += ww
            self.est_la += la
            t.steps += steps
            na = 0
            for i in range(n_off):
                if cf[i] != 0.0 and cf[i] != INFINITY:
                    self.abuf[na] = offs[i]
                    self.ibuf[na] = i
                    na += 1
            if self.stride != 1:
                self._strided_axpys(sr, na, cf)
            else:
                for r in range(na):
                    row_axpy(cf[self.ibuf[r]], self.indices, self.data, sr.row_start,
                             sr.row_start + sr.row_nnz, self.bias, sr.bias_col, self.w + self.abuf[r])
        return violation

    # -- bounds --------------------------------------------------------------------------------

    def exact_bounds(self):
        """(primal, dual) at the current w over every constraint, shrunk or not.

        primal = 1/2||w||^2 + sum_g C_g max(0, max_c g_c) is the cached problem's exact upper bound
        (Ramanan eq. 22); dual = -1/2||w||^2 + sum_c l_c a_c its lower bound (eq. 21). Both use the
        w held now; call recompute_w() first for figures to certify.

        With Crammer-Singer groups, whose examples leave the active set whole (LIBLINEAR's -s 4
        shrinking), the estimate's terms of the groups out of the active set are set to these exact
        ones: approximate_bounds() then stays close to the exact bounds between checks.
        """
        cdef double loss = 0.0, out_loss = 0.0, gmax, G
        cdef int64_t g, k, i
        cdef Group* gr
        cdef const SharedRow* sr
        cdef uint8_t* out = NULL
        if self.has_cs:
            out = <uint8_t*> calloc(max(self.n_groups, 1), sizeof(uint8_t))
            if out == NULL:
                raise MemoryError("cannot allocate the exact bounds' scratch")
            for i in range(self.n_active, self.n_listed):
                out[self.groups[i]] = 1
        with nogil:
            for g in range(self.n_groups):
                gr = &self.grp[g]
                if gr.size == 0:
                    continue
                gmax = 0.0
                if gr.n_off > 0:
                    sr = &self.srow[g]
                if gr.n_off > 0 and self.stride != 1:    # shared-row, strided: one pass
                    for i in range(gr.n_off):
                        self.abuf[i] = self.soffs[sr.off_start + i]
                        self.ibuf[i] = i
                    self._strided_dots(sr, gr.n_off, self.sbuf)
                if gr.n_off > 0:     # shared-row: one row product per offset
                    if self.stride == 1:
                        for i in range(gr.n_off):
                            self.sbuf[i] = row_dot(self.w + self.soffs[sr.off_start + i], self.indices,
                                                   self.data, sr.row_start, sr.row_start + sr.row_nnz,
                                                   self.bias, sr.bias_col)
                    for k in range(gr.start, gr.start + gr.size):
                        G = self._shared_gradient(k, self.sbuf)
                        if self.grad != NULL:
                            self.grad[self.ids[k]] = G
                        if G > gmax:
                            gmax = G
                else:
                    for k in range(gr.start, gr.start + gr.size):
                        G = self._gradient(k)
                        if self.grad != NULL:
                            self.grad[self.ids[k]] = G
                        if G > gmax:
                            gmax = G
                loss += self.grp[g].C * gmax
                if out != NULL and out[g]:
                    out_loss += self.grp[g].C * gmax
            self._norm_and_margin_sum(&self.est_ww, &self.est_la)
        if out != NULL:
            free(out)
            self.shrunk_loss = out_loss
        return 0.5 * self.est_ww + loss, -0.5 * self.est_ww + self.est_la

    def approximate_gap(self):
        """The duality gap P - D estimated from the gap terms T_c = C max(0, g_c) - a_c g_c >= 0 of
        the last epoch's visits (they sum to P - D at one w), or nan when some group has several
        constraints (their terms are not kept).

        Unlike eq. 23 it has no stale terms: a constraint is shrunk only at a bound where its
        term is 0 (a = 0 with g < 0, or a = C with g > 0), and what it holds later, if anything,
        shrunk_gap() finds at the exact check."""
        return self.est_gap if self.singles else float("nan")

    def shrunk_gap(self):
        """The part of the duality gap P - D that the shrunk constraints hold, at the current w.

        The gap splits into one term per group, T_g = C_g max(0, max_c g_c) - sum_c a_c g_c >= 0
        (their sum is P - D, as w = sum_c a_c x_c): a group out of the active set holds its T_g, an
        active group with shrunk constraints (all at 0) the rise of C_g max(0, max_c g_c) that
        they cause. Correct shrinking holds none of it; what it holds, no step on the active set
        can remove (call recompute_w() first). One pass over the shrunk groups only, in storage
        order: in the active list's shuffled order the rows were read at random, which on ijcnn1
        cost 4 ms a call against 0.6 ms for exact_bounds' in-order pass over every group."""
        cdef double held = 0.0, gall, gact, ag, G
        cdef int64_t i, g, k
        cdef Group* gr
        cdef uint8_t* shrunk = <uint8_t*> calloc(max(self.n_groups, 1), sizeof(uint8_t))
        if shrunk == NULL:
            raise MemoryError("cannot allocate the shrunk gap's scratch")
        with nogil:
            for i in range(self.n_listed):       # 1: the whole group is shrunk; 2: some of it
                g = self.groups[i]
                if i >= self.n_active:
                    shrunk[g] = 1
                elif self.grp[g].active < self.grp[g].size:
                    shrunk[g] = 2
            for g in range(self.n_groups):
                if shrunk[g] == 0:
                    continue
                gr = &self.grp[g]
                gall = 0.0
                gact = 0.0
                ag = 0.0
                for k in range(gr.start, gr.start + gr.size):
                    G = self._gradient(k)
                    ag += self.alpha_[k] * G
                    if G > gall:
                        gall = G
                    if k < gr.start + gr.active and G > gact:
                        gact = G
                if shrunk[g] == 1:
                    held += gr.C * gall - ag
                else:
                    held += gr.C * (gall - gact)
        free(shrunk)
        return held

    def approximate_bounds(self):
        """(primal', dual): Ramanan's eq. 23 upper bound from the gradients seen in the last visits.

        Free to compute (O(1): its terms are kept by the steps) but not a certificate: w moved while
        the gradients were taken, and ||w||^2 and sum_c l_c a_c are updated incrementally.
        """
        return (0.5 * self.est_ww + self.est_loss + self.shrunk_loss,
                -0.5 * self.est_ww + self.est_la)

    cdef void _norm_and_margin_sum(self, double* ww_out, double* la_out) noexcept nogil:
        cdef double ww = 0.0, la = 0.0
        cdef int64_t j, k
        for j in range(self.w_.shape[0]):
            ww += self.w[j] * self.w[j]
        for k in range(self.n_cons):
            la += self._kind(k).margin * self.alpha_[k]
        ww_out[0] = ww
        la_out[0] = la

    # -- active set ----------------------------------------------------------------------------

    def unshrink(self):
        """Make every constraint active again and forget the shrinking threshold."""
        cdef int64_t g, n = 0
        for g in range(self.n_groups):
            self.grp[g].active = self.grp[g].size
            if self.grp[g].size > 0:
                self.groups[n] = g
                n += 1
        self.n_active = n
        self.n_listed = n
        self.n_active_cons = self.n_cons
        # the shrunk groups' last terms stay in the estimate until their next visit
        self.est_loss += self.shrunk_loss
        self.shrunk_loss = 0.0
        self.M_dec = INFINITY
        self.M_inc = INFINITY

    @property
    def shrinking_thresholds(self):
        """(M_dec, M_inc): the thresholds the next epoch shrinks by (inf: shrinks nothing).

        A hot start may set them from the run it continues (svmtrain.state): its first epoch then
        sets aside what that run had set aside, instead of visiting everything for several epochs
        while the thresholds fall from infinity. Any value is safe: a failed exact check unshrinks.
        """
        return self.M_dec, self.M_inc

    @shrinking_thresholds.setter
    def shrinking_thresholds(self, value):
        dec, inc = value
        if not (dec > 0.0 and inc > 0.0):
            raise ValueError("shrinking thresholds must be > 0 (inf: none)")
        self.M_dec, self.M_inc = dec, inc

    @property
    def n_shared_groups(self):
        """Groups visited by the shared-row fast path."""
        return self.n_shared

    @property
    def n_crammer_singer_groups(self):
        """Groups whose visit solves Crammer and Singer's subproblem exactly (_visit_cs)."""
        cdef int64_t g, n = 0
        for g in range(self.n_groups):
            n += self.grp[g].cs_y >= 0
        return n

    cpdef int64_t n_active_constraints(self):
        return self.n_active_cons

    @property
    def n_constraints(self):
        return self.n_cons

    def keep_gradients(self):
        """From now on exact_bounds() keeps every g_c = l_c - w.x_c it computes (`gradients`): a
        cutting-plane schedule needs them at the w it ends with, and the check that ended the run
        has just computed them all (recomputing them was a pass over the cache's terms a round)."""
        cdef int64_t k
        if self.grad == NULL:
            self.grad = <double*> malloc(max(self.n_cons, 1) * sizeof(double))
            if self.grad == NULL:
                raise MemoryError("cannot allocate the gradients")
            for k in range(self.n_cons):
                self.grad[k] = NAN

    @property
    def gradients(self):
        """g_c at the last exact_bounds() since keep_gradients(), in the caller's order (a copy;
        nan before the first): the gradients at the current w when w has not moved since."""
        if self.grad == NULL:
            raise ValueError("keep_gradients() was not called")
        out = np.empty(self.n_cons, dtype=np.float64)
        cdef double[::1] o = out
        cdef int64_t k
        for k in range(self.n_cons):
            o[k] = self.grad[k]
        return out

    @property
    def sqnorms(self):
        """||x_c||^2 in the caller's order (a copy): the `sqnorm` of the next engine over these
        rows."""
        return self._in_caller_order(self.q)

    cdef object _in_caller_order(self, const double* by_position, bint as_numpy=True):
        """A per-constraint array kept by position (constraints move within their group when
        they shrink), in the caller's order (a copy): a numpy array, or a buffer of doubles."""
        out = (np.empty(self.n_cons, dtype=np.float64) if as_numpy
               else memoryview(bytearray(8 * self.n_cons)).cast("d"))
        if self.n_cons == 0:
            return out
        cdef double[::1] o = out
        cdef int64_t k
        for k in range(self.n_cons):
            o[self.ids[k]] = by_position[k]
        return out

    def alpha_buffer(self):
        """The dual variables in the caller's order, as a buffer of doubles (a copy; no numpy)."""
        return self._in_caller_order(self.alpha_, False)

    def w_buffer(self):
        """final_w() as a buffer of doubles (no numpy), for a caller done with this engine."""
        return memoryview(self.w_)[:self.n_w]

    @property
    def all_active(self):
        return self.n_active_cons == self.n_cons

    @property
    def alpha(self):
        """The dual variables, in the caller's order (a copy)."""
        return self._in_caller_order(self.alpha_)

    @property
    def shrunk(self):
        """True for the constraints out of the active set, in the caller's order (a copy)."""
        out = np.zeros(self.n_cons, dtype=bool)
        cdef uint8_t[::1] o = out.view(np.uint8)
        cdef int64_t i, g, k
        cdef Group* gr
        for i in range(self.n_listed):
            g = self.groups[i]
            gr = &self.grp[g]
            for k in range(gr.start if i >= self.n_active else gr.start + gr.active,
                           gr.start + gr.size):
                o[self.ids[k]] = 1
        return out

    @property
    def w(self):
        """w = sum alpha_c x_c (a copy)."""
        return np.array(self.w_[:self.n_w], copy=True)

    def final_w(self):
        """w itself, not a copy, for a caller done with this engine (no step may follow: they
        would change the array returned). Sector multiclass's 46 MB w was held twice by the copy."""
        return np.asarray(self.w_[:self.n_w])

    @property
    def rng_state(self):
        return self.rng

    def shift_w(self, const double[::1] offset):
        """w += offset, alpha unchanged: the steps then see w = offset + sum alpha_c x_c.

        CoCoA+ (svmtrain.distributed) solves a partition's local subproblem this way: the offset
        carries the other partitions' share of w. The bounds of this engine no longer describe a
        dual of its own cache until `recompute_w`, which drops the offset.
        """
        if offset.shape[0] != self.n_w:
            raise ValueError(f"offset has {offset.shape[0]} entries, w has {self.n_w}")
        if self.nonneg:
            raise ValueError("shift_w does not apply to an engine with non-negative weights")
        cdef int64_t j
        with nogil:
            for j in range(self.n_w):
                self.w[j] += offset[j]


# The terms layout's dot and axpy, one body for each value type of the store. Unit stride (multiclass
# one-vs-rest rows, ranking) takes the plain kernel: the branch is the same for every term of a
# store, so it is predicted, and the plain kernel's index arithmetic is a little cheaper.
cdef inline double terms_dot(DualCD en, const value_t* data, int64_t s, int64_t e,
                             const double* v) noexcept nogil:
    cdef double r = 0.0
    cdef int64_t t
    cdef Term tm
    for t in range(s, e):
        tm = en._term(t)
        if en.stride == 1:
            r += tm.scale * row_dot(v + tm.offset, en.indices, data, tm.start, tm.start + tm.nnz,
                                    en.bias, tm.bias_col)
        else:
            r += tm.scale * row_dot_s(v + tm.offset, en.indices, data, tm.start, tm.start + tm.nnz,
                                      en.bias, tm.bias_col, en.stride)
    return r


cdef inline void terms_axpy(DualCD en, const value_t* data, int64_t s, int64_t e, double d,
                            double* v) noexcept nogil:
    cdef int64_t t
    cdef Term tm
    for t in range(s, e):
        tm = en._term(t)
        if en.stride == 1:
            row_axpy(d * tm.scale, en.indices, data, tm.start, tm.start + tm.nnz, en.bias,
                     tm.bias_col, v + tm.offset)
        else:
            row_axpy_s(d * tm.scale, en.indices, data, tm.start, tm.start + tm.nnz, en.bias,
                       tm.bias_col, v + tm.offset, en.stride)


# The accumulator's forms of terms_axpy (d = 1) and terms_dot: the same products and sums, in the
# same order, on the table's entries in place of v's.
cdef inline void acc_scatter(DualCD en, const value_t* data, int64_t s, int64_t e) noexcept nogil:
    cdef int64_t t, p
    cdef Term tm
    for t in range(s, e):
        tm = en._term(t)
        for p in range(tm.start, tm.start + tm.nnz):      # (terms_axpy's d * scale is the scale)
            en._acc_add(tm.offset + en.stride * en.indices[p], tm.scale * data[p])
        if tm.bias_col >= 0:
            en._acc_add(tm.offset + tm.bias_col, tm.scale * en.bias)


cdef inline double acc_dot(DualCD en, const value_t* data, int64_t s, int64_t e) noexcept nogil:
    cdef double r = 0.0, x
    cdef int64_t t, p
    cdef Term tm
    for t in range(s, e):
        tm = en._term(t)
        x = 0.0
        for p in range(tm.start, tm.start + tm.nnz):
            x += en._acc_get(tm.offset + en.stride * en.indices[p]) * data[p]
        if tm.bias_col >= 0:
            x += en._acc_get(tm.offset + tm.bias_col) * en.bias
        r += tm.scale * x
    return r
