# cython: boundscheck=False, wraparound=False, cdivision=True
"""Kernels of the 1-slack mode (Joachims, Finley, Yu 2009, Alg. 3/4): building an aggregated plane
from constraint terms, and the dual QP over the working set of planes.

The QP over m planes a_k with offsets b_k, all sharing one slack (OP5 in the dual, with the cost of
the shared slack folded into the planes, so that the bound is `bound`):

    max_beta  D(beta) = -1/2 beta' G beta + b' beta,   beta_k >= 0,  sum_k beta_k <= bound,
    G_kl = a_k . a_l,   w(beta) = sum_k beta_k a_k.

An implicit zero plane (a = 0, b = 0) takes the unused bound (beta_0 = bound - sum beta), which makes
the constraint an equality and every step a pair step "beta_i += t, beta_j -= t" (Ramanan's pair
step; the papers README has the signs): with gradients g_k = b_k - (G beta)_k (g_0 = 0), the step is
t = (g_i - g_j) / (G_ii + G_jj - 2 G_ij), clipped to [0, beta_j]. i has the largest gradient, j the
largest second-order gain (LIBSVM's working set selection): planes are often nearly parallel, and
the maximal violating pair then crawls (cpusmall regression: 53 ms per QP with the maximal violating pair, 6 ms with this). The QP's own duality gap, with P_ws(w) = 1/2 |w|^2 + bound * max(0, max_k g_k),

    P_ws - D = bound * max(0, max_k g_k) - sum_k beta_k g_k,

is the stopping rule (the b' beta and |w|^2 terms cancel).
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.math cimport fabs, INFINITY
from libc.string cimport memcmp, memcpy

from _sparse cimport column_t, mix64, offset_t, row_t, scale_t, value_t

cnp.import_array()


def _bias_flags(term_bias, bint use_bias):
    """The terms' bias flags as bytes (all 0 without a bias)."""
    flags = np.ascontiguousarray(term_bias, dtype=np.uint8)
    return flags if use_bias else np.zeros_like(flags)


def _checked_terms(const int64_t[::1] indptr, const column_t[::1] indices, const value_t[::1] data,
                   int64_t n_cols, const int64_t[::1] tptr, const row_t[::1] term_row,
                   const scale_t[::1] term_scale, const offset_t[::1] term_offset, term_bias,
                   const double[::1] weight, bint use_bias, int64_t stride, int64_t n_w):
    """The checks of accumulate_plane and plane_entries (every term's row in the store, every
    entry it writes below n_w); returns the terms' bias flags as bytes (0 without a bias)."""
    cdef int64_t m = tptr.shape[0] - 1, n_rows = indptr.shape[0] - 1
    flags = _bias_flags(term_bias, use_bias)
    cdef const unsigned char[::1] has_bias = flags
    cdef int64_t t, c, r, p, o, col
    if stride < 1:
        raise ValueError("the stride must be >= 1")
    if weight.shape[0] != m:
        raise ValueError(f"weight has {weight.shape[0]} entries, expected {m}")
    if m < 0 or tptr[0] != 0 or tptr[m] > term_row.shape[0] or tptr[m] > term_scale.shape[0] \
            or tptr[m] > term_offset.shape[0] or tptr[m] > flags.shape[0]:
        raise ValueError("inconsistent constraint terms")
    for c in range(m):
        if tptr[c + 1] < tptr[c]:
            raise ValueError("inconsistent constraint terms")
    if indptr[n_rows] > indices.shape[0] or indices.shape[0] != data.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    for t in range(tptr[m]):
        r = term_row[t]
        if r < 0 or r >= n_rows or indptr[r] < 0 or indptr[r + 1] < indptr[r]:
            raise ValueError("a term names a row outside the store")
        o = term_offset[t]
        if o < 0 or (has_bias[t] and o + stride * n_cols >= n_w):
            raise ValueError("a term reaches beyond w")
        for p in range(indptr[r], indptr[r + 1]):
            col = indices[p]
            if col < 0 or (col < n_cols and o + stride * col >= n_w):
                raise ValueError("a term reaches beyond w")
    return flags


def accumulate_plane(const int64_t[::1] indptr, const column_t[::1] indices, const value_t[::1] data,
                     int64_t n_cols, const int64_t[::1] tptr, const row_t[::1] term_row,
                     const scale_t[::1] term_scale, const offset_t[::1] term_offset, term_bias,
                     const double[::1] weight, double bias, bint use_bias, int64_t stride,
                     double[::1] scratch, unsigned char[::1] mark, int64_t[::1] touched,
                     int64_t n_touched=0, int64_t lo=0, int64_t n_w=-1, bint checked=False):
    """scratch += sum_c weight[c] * x_c for constraints given as terms (svmtrain.tasks.base.Constraints,
    the layout of svmtrain._linear.term_dots); constraints with weight 0 are skipped.

    Every entry of scratch that is written for the first time (mark == 0) is marked and appended to
    `touched` after its first n_touched entries; returns the new count. Callers read the plane as
    scratch[touched[:count]] and reset scratch and mark there: no pass over all of w per plane.
    Runs without the GIL (threads may run it on separate scratch buffers).

    A band: scratch (and mark, and what touched lists) may hold the columns lo .. lo + len(scratch)
    of a w of n_w columns only; the sum's entries outside it are skipped. Each entry of the band
    then takes its additions in the order, and with the products, of the whole sum's, so bands
    taken one after the other add up to it bit for bit with a vector of a band's length. `checked`:
    these very arrays passed the checks in an earlier call (of the same band's walk over w), and are
    not checked again (a pass over every entry); writes stay within the band whatever the arrays.
    """
    cdef int64_t m = tptr.shape[0] - 1, n_band = scratch.shape[0]
    if n_w < 0:
        n_w = lo + n_band
    if mark.shape[0] != n_band or touched.shape[0] < n_band or not 0 <= n_touched <= n_band:
        raise ValueError("mark and touched must cover scratch")
    if lo < 0 or lo + n_band > n_w:
        raise ValueError("the band must lie within w")
    cdef const unsigned char[::1] has_bias
    if checked:
        has_bias = _bias_flags(term_bias, use_bias)
    else:
        has_bias = _checked_terms(indptr, indices, data, n_cols, tptr, term_row, term_scale,
                                  term_offset, term_bias, weight, use_bias, stride, n_w)
    cdef int64_t t, c, r, p, o, col
    cdef double s, a
    with nogil:
        for c in range(m):
            if weight[c] == 0.0:
                continue
            for t in range(tptr[c], tptr[c + 1]):
                r = term_row[t]
                o = term_offset[t]
                a = weight[c] * term_scale[t]
                for p in range(indptr[r], indptr[r + 1]):
                    col = indices[p]
                    if col < n_cols:
                        col = o + stride * col - lo
                        if <uint64_t>col < <uint64_t>n_band:     # (0 <= col < n_band)
                            scratch[col] += a * data[p]
                            if not mark[col]:
                                mark[col] = 1
                                touched[n_touched] = col
                                n_touched += 1
                if has_bias[t]:
                    col = o + stride * n_cols - lo
                    if <uint64_t>col < <uint64_t>n_band:
                        scratch[col] += a * bias
                        if not mark[col]:
                            mark[col] = 1
                            touched[n_touched] = col
                            n_touched += 1
    return n_touched


def plane_entries(const int64_t[::1] indptr, const column_t[::1] indices, const value_t[::1] data,
                  int64_t n_cols, const int64_t[::1] tptr, const row_t[::1] term_row,
                  const scale_t[::1] term_scale, const offset_t[::1] term_offset, term_bias,
                  const double[::1] weight, double bias, bint use_bias, int64_t stride, int64_t n_w):
    """sum_c weight[c] * x_c as the list of the additions (column, value) accumulate_plane makes,
    in its order and with its products: np.add.at(v, columns, values) leaves v as
    accumulate_plane(..., v, ...) would, bit for bit, with no vector of n_w entries (a sparse v:
    svmtrain.solvers.online.SparseW0). The same checks as accumulate_plane's."""
    cdef int64_t m = tptr.shape[0] - 1
    cdef const unsigned char[::1] has_bias = _checked_terms(
        indptr, indices, data, n_cols, tptr, term_row, term_scale, term_offset, term_bias, weight,
        use_bias, stride, n_w)
    cdef int64_t t, c, r, p, o, col, k = 0, n = 0
    for c in range(m):
        if weight[c] != 0.0:
            for t in range(tptr[c], tptr[c + 1]):
                n += indptr[term_row[t] + 1] - indptr[term_row[t]] + has_bias[t]
    columns = np.empty(n, np.int64)
    values = np.empty(n, np.float64)
    cdef int64_t[::1] cols = columns
    cdef double[::1] vals = values
    cdef double a
    with nogil:
        for c in range(m):
            if weight[c] == 0.0:
                continue
            for t in range(tptr[c], tptr[c + 1]):
                r = term_row[t]
                o = term_offset[t]
                a = weight[c] * term_scale[t]
                for p in range(indptr[r], indptr[r + 1]):
                    col = indices[p]
                    if col < n_cols:
                        cols[k] = o + stride * col
                        vals[k] = a * data[p]
                        k += 1
                if has_bias[t]:
                    cols[k] = o + stride * n_cols
                    vals[k] = a * bias
                    k += 1
    return columns[:k], values[:k]


def plane_qp(double[:, ::1] G, const double[::1] b, double[::1] beta, double bound, double tol,
             int64_t max_steps):
    """Maximise D(beta) over the working set (module docstring) from the given feasible beta, in
    place, until the QP's gap P_ws - D <= tol or max_steps pair steps. Returns (steps, gap).

    G must be symmetric with G_kk >= 0; beta >= 0 with sum beta <= bound (checked here).
    """
    cdef int64_t m = b.shape[0], k, i, j, ii, jj, steps = 0
    if G.shape[0] != m or G.shape[1] != m or beta.shape[0] != m:
        raise ValueError("G, b and beta disagree in size")
    if not bound > 0:
        raise ValueError("the bound must be positive")
    beta_a = np.asarray(beta)
    if m and (beta_a.min() < 0 or beta_a.sum() > bound * (1 + 1e-12)):
        raise ValueError("beta is not feasible")
    grad_a = np.asarray(b) - np.asarray(G) @ beta_a
    cdef double[::1] g = grad_a
    cdef double free, gmax, gmin, gap, curv, t, gi, best, gain, gk
    cdef double lowest = 1e-300
    with nogil:
        free = bound
        for k in range(m):
            free -= beta[k]
        if free < 0:
            free = 0
        # i: the largest gradient (the zero plane, gradient 0, is index -1); kept up to date by the
        # gradient update at the end of each step (one pass over k instead of two)
        i = -1
        gmax = 0.0
        for k in range(m):
            if g[k] > gmax:
                gmax = g[k]
                i = k
        while True:
            # the QP's gap and, in the same pass, j: among the planes with beta > 0 (and the zero
            # plane when free > 0) whose gradient is below g_i, the one whose pair step gains most,
            # (g_i - g_j)^2 / curvature (LIBSVM's second-order working set selection, Fan, Chen
            # and Lin 2005)
            gap = bound * gmax
            j = -2
            best = -1.0
            gmin = gmax
            if free > 0 and gmax > 0:
                curv = G[i, i] if i >= 0 else 0.0
                best = gmax * gmax / (curv if curv > lowest else lowest)
                j = -1
                gmin = 0.0
            for k in range(m):
                gk = g[k]
                gap -= beta[k] * gk
                if beta[k] > 0 and gk < gmax:
                    curv = G[k, k]
                    if i >= 0:
                        curv += G[i, i] - 2 * G[i, k]
                    gain = (gmax - gk) * (gmax - gk) / (curv if curv > lowest else lowest)
                    if gain > best:
                        best = gain
                        j = k
                        gmin = gk
            if gap <= tol or steps >= max_steps:
                break
            if j == -2 or i == j or gmax - gmin <= 0:
                break
            # curvature of the pair step (G_ii + G_jj - 2 G_ij; the zero plane has G = 0)
            curv = 0.0
            if i >= 0:
                curv += G[i, i]
            if j >= 0:
                curv += G[j, j]
            if i >= 0 and j >= 0:
                curv -= 2 * G[i, j]
            t = beta[j] if j >= 0 else free
            if curv > lowest and (gmax - gmin) / curv < t:
                t = (gmax - gmin) / curv
            if t <= 0:
                break
            if i >= 0:
                beta[i] += t
            else:
                free += t
            if j >= 0:
                beta[j] -= t
                if beta[j] < 0:
                    beta[j] = 0
            else:
                free -= t
                if free < 0:
                    free = 0
            # g -= t (G[:, i] - G[:, j]), read along rows i and j (G is symmetric; rows are
            # contiguous); and the next step's i
            ii, jj = i, j
            i = -1
            gmax = 0.0
            for k in range(m):
                gi = 0.0
                if ii >= 0:
                    gi += G[ii, k]
                if jj >= 0:
                    gi -= G[jj, k]
                g[k] -= t * gi
                if g[k] > gmax:
                    gmax = g[k]
                    i = k
            steps += 1
    return steps, gap


cdef object _planes(planes_cols, planes_vals, int64_t m):
    """The planes' (cols, vals) as int64 or int32 / float64 C-contiguous vectors of equal lengths
    (the arrays themselves where they are already: the solver's, whose columns are int32), in a
    list that keeps them alive while their pointers are used."""
    kept = []
    cdef cnp.ndarray c, v
    for k in range(m):
        c, v = planes_cols[k], planes_vals[k]
        if c is None or v is None:
            raise ValueError("a plane is None")
        if not ((cnp.PyArray_TYPE(c) == cnp.NPY_INT64 or cnp.PyArray_TYPE(c) == cnp.NPY_INT32)
                and cnp.PyArray_NDIM(c) == 1 and cnp.PyArray_IS_C_CONTIGUOUS(c)):
            c = np.ascontiguousarray(c, dtype=np.int64)
        if not (cnp.PyArray_TYPE(v) == cnp.NPY_FLOAT64 and cnp.PyArray_NDIM(v) == 1
                and cnp.PyArray_IS_C_CONTIGUOUS(v)):
            v = np.ascontiguousarray(v, dtype=np.float64)
        if c.ndim != 1 or v.ndim != 1 or c.shape[0] != v.shape[0]:
            raise ValueError("a plane's cols and vals differ in length")
        kept.append((c, v))
    return kept


cdef inline int64_t _col(size_t cols, bint narrow, int64_t p) noexcept nogil:
    """Entry p of a plane's columns (int32 when narrow, else int64)."""
    if narrow:
        return (<const int32_t*>cols)[p]
    return (<const int64_t*>cols)[p]


def gram_row(double[::1] dense, planes_cols, planes_vals):
    """a . a_k for every stored sparse plane a_k (columns sorted), with the new plane a given dense (zero elsewhere):
    one gather per stored nonzero (the new plane's size does not enter, unlike a merge of sorted
    columns, which costs |a| per stored plane). The planes' arrays are checked and their pointers
    taken first, then every dot runs in one loop without the GIL (a short plane costs no
    per-plane memoryview)."""
    cdef int64_t m = len(planes_cols), k, p, n_w = dense.shape[0], length
    if len(planes_vals) != m:
        raise ValueError("planes' cols and vals differ in number")
    kept = _planes(planes_cols, planes_vals, m)
    out = np.zeros(m, dtype=np.float64)
    cdef double[::1] res = out
    lengths_a = np.zeros(m, np.int64)
    addr_a = np.zeros((m, 2), np.uintp)
    narrow_a = np.zeros(m, np.uint8)
    cdef int64_t[::1] lengths = lengths_a
    cdef size_t[:, ::1] addr = addr_a
    cdef unsigned char[::1] narrow = narrow_a
    cdef cnp.ndarray c, v
    cdef size_t cp
    cdef const int32_t* c32
    cdef const int64_t* c64
    cdef const double* vp
    cdef double s
    for k in range(m):
        c, v = kept[k]
        length = c.shape[0]
        narrow[k] = cnp.PyArray_TYPE(c) == cnp.NPY_INT32
        cp = <size_t>cnp.PyArray_DATA(c)
        # columns are sorted (as the solver stores them): the ends bound them all
        if length and (_col(cp, narrow[k], 0) < 0 or _col(cp, narrow[k], length - 1) >= n_w):
            raise ValueError("a stored plane reaches beyond w")
        lengths[k] = length
        addr[k, 0] = cp
        addr[k, 1] = <size_t>cnp.PyArray_DATA(v)
    with nogil:
        for k in range(m):
            vp = <const double*>addr[k, 1]
            s = 0.0
            if narrow[k]:
                c32 = <const int32_t*>addr[k, 0]
                for p in range(lengths[k]):
                    s += dense[c32[p]] * vp[p]
            else:
                c64 = <const int64_t*>addr[k, 0]
                for p in range(lengths[k]):
                    s += dense[c64[p]] * vp[p]
            res[k] = s
    return out


cdef inline int64_t _lower_bound(size_t a, bint narrow, int64_t n, int64_t x) noexcept nogil:
    """The first index p < n with a[p] >= x (a sorted), else n."""
    cdef int64_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if _col(a, narrow, mid) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline int64_t _scatter_run(const column_t* cp, const double* vp, double a, int64_t first,
                                 int64_t last, double* dense, int64_t n_w, unsigned char* mark,
                                 int64_t* touched, int64_t n_touched) noexcept nogil:
    """dense[cp[p]] += a * vp[p] for p in [first, last), marking and listing the entries written
    first when `mark` is given; the new count, or -1 (nothing written) when a column is outside w."""
    cdef int64_t p, col
    for p in range(first, last):       # bounds first: the loops below trust them
        if cp[p] < 0 or cp[p] >= n_w:
            return -1
    if mark != NULL:
        for p in range(first, last):
            col = cp[p]
            dense[col] += a * vp[p]
            if not mark[col]:
                mark[col] = 1
                touched[n_touched] = col
                n_touched += 1
    else:
        for p in range(first, last):
            dense[cp[p]] += a * vp[p]
    return n_touched


def scatter_planes(double[::1] dense, unsigned char[::1] mark, int64_t[::1] touched,
                   int64_t n_touched, planes_cols, planes_vals, coefs, int64_t lo=0, int64_t hi=-1):
    """dense += coef_k a_k for sparse planes (cols, vals), in list order, skipping coef 0.

    With `mark` (same length as dense) every entry written for the first time is marked and
    appended to `touched` after its first n_touched entries, as in accumulate_plane; returns the
    new count. An empty `mark` skips the bookkeeping (a dense w updated in place); then with
    0 <= lo <= hi only the columns in [lo, hi) are written, the planes' columns being sorted, so that
    threads can share one w by column ranges (each entry sums its planes in list order: the same
    result for any split). The planes' arrays are checked and their pointers taken first; the
    sums run in one loop without the GIL."""
    cdef int64_t n_w = dense.shape[0], k, p, col, m = len(planes_cols), first, last, length
    cdef bint track = mark.shape[0] > 0
    if len(planes_vals) != m or len(coefs) != m:
        raise ValueError("planes and coefficients differ in number")
    if track and (mark.shape[0] != n_w or touched.shape[0] < n_w or not 0 <= n_touched <= n_w):
        raise ValueError("mark and touched must cover dense")
    cdef bint ranged = hi >= 0      # else every column (those past w are an error)
    if ranged and (track or lo < 0 or hi > n_w or lo > hi):
        raise ValueError("a column range applies to an untracked scatter, inside w")
    weights_a = np.asarray(coefs, dtype=np.float64).reshape(-1)
    cdef const double[::1] weights = weights_a
    used = [k for k in range(m) if weights[k] != 0.0]
    kept = _planes([planes_cols[k] for k in used], [planes_vals[k] for k in used], len(used))
    cdef int64_t n_used = len(used)
    lengths_a = np.zeros(n_used, np.int64)
    addr_a = np.zeros((n_used, 2), np.uintp)
    narrow_a = np.zeros(n_used, np.uint8)
    a_a = weights_a[used] if n_used else np.zeros(0)
    cdef int64_t[::1] lengths = lengths_a
    cdef size_t[:, ::1] addr = addr_a
    cdef unsigned char[::1] narrow = narrow_a
    cdef const double[::1] a = a_a
    cdef cnp.ndarray c, v
    cdef size_t cp
    cdef bint nw
    cdef const double* vp
    for k in range(n_used):
        c, v = kept[k]
        lengths[k] = c.shape[0]
        narrow[k] = cnp.PyArray_TYPE(c) == cnp.NPY_INT32
        addr[k, 0] = <size_t>cnp.PyArray_DATA(c)
        addr[k, 1] = <size_t>cnp.PyArray_DATA(v)
    cdef bint bad = False
    with nogil:
        for k in range(n_used):
            cp = addr[k, 0]
            nw = narrow[k]
            vp = <const double*>addr[k, 1]
            length = lengths[k]
            if not ranged:
                first, last = 0, length
            else:
                # the run of sorted columns inside [lo, hi): binary searches for its ends
                first, last = _lower_bound(cp, nw, length, lo), _lower_bound(cp, nw, length, hi)
            if nw:
                n_touched = _scatter_run(<const int32_t*>cp, vp, a[k], first, last, &dense[0], n_w,
                                         &mark[0] if track else NULL, &touched[0] if track else NULL,
                                         n_touched)
            else:
                n_touched = _scatter_run(<const int64_t*>cp, vp, a[k], first, last, &dense[0], n_w,
                                         &mark[0] if track else NULL, &touched[0] if track else NULL,
                                         n_touched)
            if n_touched < 0:
                bad = True
                break
    if bad:
        raise ValueError("a plane reaches beyond w")
    return n_touched


cdef inline double _row_dot(const double* w, const int64_t* indices, const double* data,
                           int64_t start, int64_t end, int64_t n_cols, bint use_bias,
                           double bias) noexcept nogil:
    """w . x for the row of nonzeros start..end (columns at or past n_cols ignored; the bias
    weight at w[n_cols]), summed in the order of the binary task's own scores."""
    cdef double s = 0.0
    cdef int64_t p, col
    for p in range(start, end):
        col = indices[p]
        if col < n_cols:
            s += w[col] * data[p]
    if use_bias:
        s += w[n_cols] * bias
    return s


def hinge_plane(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] data,
                int64_t n_cols, const double[::1] y, const double[::1] C, const double[::1] w,
                double bias, bint use_bias, double[::1] scratch, unsigned char[::1] mark,
                int64_t[::1] touched):
    """The binary task's 1-slack plane in one pass over the rows (x_i1 = y_i x_i, l_i1 = 1):
    H_i = 1 - y_i w.x_i; scratch += sum over H_i > 0 of C_i y_i x_i, marking new entries in
    `touched` as accumulate_plane does. Returns (count, sum_i C_i max(0, H_i), sum_{H_i > 0} C_i).
    The bias weight, when used, is w[n_cols] with feature value `bias`. Runs without the GIL."""
    cdef int64_t n = indptr.shape[0] - 1, n_w = scratch.shape[0], i, p, col, count = 0
    cdef int64_t bias_col = n_cols
    cdef double h, a, loss = 0.0, b = 0.0
    if y.shape[0] != n or C.shape[0] != n:
        raise ValueError("y and C must have one entry per row")
    if w.shape[0] != n_w or mark.shape[0] != n_w or touched.shape[0] < n_w:
        raise ValueError("w, scratch, mark and touched must have the same length")
    if n_cols < 0 or n_cols + (1 if use_bias else 0) > n_w:
        raise ValueError("the columns reach beyond w")
    if indptr[0] != 0 or indptr[n] > indices.shape[0] or indices.shape[0] != data.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("inconsistent CSR arrays")
    for p in range(indptr[n]):
        if indices[p] < 0:
            raise ValueError("a negative column index")
    cdef const double* Wp = &w[0] if w.shape[0] else NULL
    cdef const int64_t* Ip = &indices[0] if indices.shape[0] else NULL
    cdef const double* Xp = &data[0] if data.shape[0] else NULL
    with nogil:
        for i in range(n):
            h = 1.0 - y[i] * _row_dot(Wp, Ip, Xp, indptr[i], indptr[i + 1], n_cols, use_bias, bias)
            if h <= 0.0:
                continue
            loss += C[i] * h
            b += C[i]
            a = C[i] * y[i]
            for p in range(indptr[i], indptr[i + 1]):
                col = indices[p]
                if col < n_cols:
                    scratch[col] += a * data[p]
                    if not mark[col]:
                        mark[col] = 1
                        touched[count] = col
                        count += 1
            if use_bias:
                scratch[bias_col] += a * bias
                if not mark[bias_col]:
                    mark[bias_col] = 1
                    touched[count] = bias_col
                    count += 1
    return count, loss, b


# -- oracle screening (binary and multiclass) -----------------------------------------------------
#
# A pass of the 1-slack oracle at a query point q re-scores every example, though most lie far from
# the margin and keep their worst offender from one query point to the next. At a reference point
# r where every example was scored exactly, each example gets a safe radius t_i: the decision it
# took at r (violated or not; the worst label) cannot change at any q with rho(q - r) < t_i, where
# rho bounds how much a score difference can move per unit of |x_i|:
#
#   binary:      H_i = 1 - y_i w.x_i moves by at most |q - r| |x_i|, so t_i = |H_i(r)| / |x_i|,
#                rho = |q - r|;
#   multiclass:  f_ij = Delta(y_i, j) - w_{y_i}.x_i + w_j.x_i (f_{i y_i} = 0: "none"); a difference
#                f_ij - f_ik moves by at most (|q_j - r_j| + |q_k - r_k|) |x_i|, so with the gap g_i
#                between the best and the second best f_ij at r, t_i = g_i / |x_i| and rho = the sum
#                of the two largest per-class distances |q_k - r_k|.
#
# (|x_i| includes the bias feature.) An example with t_i > rho is "certain": if it violated at r it
# adds the fixed vector C_i a_i (binary y_i x_i; multiclass psi(x_i, y_i) - psi(x_i, j_i)) and the
# fixed offset C_i to the plane, and C_i (1 - q.a_i) to the loss; if not, nothing. The certain
# violators are kept summed as one dense vector `agg` with offset `agg_b`, so their part of the
# plane is agg and their loss agg_b - q.agg, whatever their number; only the other ("uncertain")
# examples are scored. Which examples are certain depends on q (rho moves both ways as the query
# points jump between the in-out point and the QP's w): a violator whose certainty is lost is
# taken out of agg, one that regains it is put back (a row's nonzeros, not K scores). Multiclass
# tightens both tests with the direction of the move, d = q - r. With j_i the best label at r
# (y_i for none), every f_ik - f_{i j_i} moves by exactly x_i.(d_k - d_{j_i}) (the y_i terms cancel
# in each case), so:
#   per label:   |x_i| (|d_{j_i}| + the largest |d_k| over k != j_i) bounds the move: t_i against
#                R_{j_i}, the radius of the example's own best label (at most rho, and K numbers);
#   per example: for the rows the first test leaves, x_i.d_k <= sum_f x_if (U_f if x_if > 0 else
#                L_f), with U_f / L_f the largest / smallest d_fk over the classes k of feature f
#                (and of the bias), so every f_ik - f_{i j_i} moves by at most
#                sum_f |x_if| (U_f - d_{f j_i} or d_{f j_i} - L_f, by the sign of x_if): the row's
#                own features, its best class exactly and a signed bound on the others.
# The plane and the loss equal the unscreened pass's up to
# rounding (the sums are taken in another order); a reference pass gives the unscreened plane bit
# for bit (the same sums in the same order).
#
# The state lives in a ScreenedOracle over one shard's rows, validated once; the planes are summed
# into dense n_w buffers and swept into the caller's marked scratch at the end (the solver uses it
# where n_w is at most the shard's nonzeros, so the sweep costs less than a pass).


cdef inline void _mark_add(double[::1] scratch, unsigned char[::1] mark, int64_t[::1] touched,
                           int64_t* count, int64_t col, double v) noexcept nogil:
    scratch[col] += v
    if not mark[col]:
        mark[col] = 1
        touched[count[0]] = col
        count[0] += 1


cdef inline double _safe_radius(double gap, double radius) noexcept nogil:
    if not gap > 0:
        return 0.0
    if not radius > 0:
        return INFINITY       # an empty row: its scores never move
    return gap / radius


cdef inline double _signed_move(double x, double d_best, double upper, double lower) noexcept nogil:
    """A bound on x (d_k - d_best) over every class k, for one feature value x (0 when x is 0)."""
    if x > 0.0:
        return x * (upper - d_best)
    if x < 0.0:
        return x * (lower - d_best)
    return 0.0


cdef inline void _class_scores(double* S, const double* W, const int64_t* indices,
                               const double* data, int64_t start, int64_t end, int64_t n_cols,
                               int64_t K, bint use_bias, double bias) noexcept nogil:
    """S[k] = w_k . x for the row of nonzeros start..end (w feature-major: W[col * K + k]; columns
    at or past n_cols ignored; the bias weights at n_cols * K), summed as block_scores does. Four
    nonzeros per sweep over S: S[k] = (((S[k] + a) + b) + c) + d rounds as the one-at-a-time sum
    does, with a quarter of the loads and stores of S (raw pointers: the K-long loops vectorize)."""
    cdef const double* rows[4]
    cdef const double* w0
    cdef const double* w1
    cdef const double* w2
    cdef const double* w3
    cdef double vals[4]
    cdef double v0, v1, v2, v3, v
    cdef int64_t p, k, col, held = 0
    for k in range(K):
        S[k] = 0.0
    for p in range(start, end):
        col = indices[p]
        if col < n_cols:
            rows[held] = W + col * K
            vals[held] = data[p]
            held += 1
            if held == 4:
                w0, w1, w2, w3 = rows[0], rows[1], rows[2], rows[3]
                v0, v1, v2, v3 = vals[0], vals[1], vals[2], vals[3]
                for k in range(K):
                    S[k] = S[k] + w0[k] * v0 + w1[k] * v1 + w2[k] * v2 + w3[k] * v3
                held = 0
    for p in range(held):
        w0 = rows[p]
        v = vals[p]
        for k in range(K):
            S[k] += w0[k] * v
    if use_bias:
        for k in range(K):
            S[k] += W[n_cols * K + k] * bias


def _checked_csr(indptr, indices, data, bint columns=True):
    """The CSR arrays as contiguous int64 / float64 and the number of rows, checked for what the
    nogil loops trust: ordered row bounds inside the stores and (columns) no negative column."""
    ip = np.ascontiguousarray(indptr, dtype=np.int64)
    ind = np.ascontiguousarray(indices, dtype=np.int64)
    dat = np.ascontiguousarray(data, dtype=np.float64)
    n = ip.shape[0] - 1
    if n < 0 or ip[0] != 0 or np.any(np.diff(ip) < 0) or ip[n] > ind.shape[0] \
            or ind.shape[0] != dat.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    if columns and ip[n] and ind[:ip[n]].min() < 0:
        raise ValueError("a negative column index")
    return ip, ind, dat, n


def _checked_labels(labels, int64_t n, int64_t K):
    """(sign, cls): binary (K = 0) the +-1 labels as float64 and an empty cls; multiclass the
    class indices 0..K-1 as int64 and an empty sign; one per row."""
    if K == 0:
        y = np.ascontiguousarray(labels, dtype=np.float64)
        if y.shape[0] != n or not np.all(np.abs(y) == 1):
            raise ValueError("binary labels must be +1 or -1, one per row")
        return y, np.zeros(0, np.int64)
    y = np.ascontiguousarray(labels, dtype=np.int64)
    if y.shape[0] != n or (n and (y.min() < 0 or y.max() >= K)):
        raise ValueError("class labels must be in 0..K-1, one per row")
    return np.zeros(0), y


cdef class ScreenedOracle:
    """The 1-slack plane of one shard's rows with oracle screening (above): binary (K = 0, labels
    y_i = +-1: x_i1 = y_i x_i, l_i1 = 1) or multiclass (K classes, labels 0..K-1, the zero-one
    loss, where margin and slack rescaling coincide; w feature-major: class k of column j at
    w[j * K + k], the bias weights at n_cols * K + k). The rows, labels and costs are checked
    once, here; `plane` then trusts them."""

    cdef const int64_t[::1] indptr
    cdef const int64_t[::1] indices
    cdef const double[::1] data
    cdef const double[::1] C
    cdef const double[::1] sign
    cdef const int64_t[::1] cls
    cdef int64_t n, n_cols, n_w, K
    cdef double bias
    cdef bint use_bias
    cdef double[::1] radius, safe, agg, part, scores
    cdef int64_t[::1] decision       # binary: 1 when violated at r; multiclass: the worst label
    cdef unsigned char[::1] member   # a violator at r whose a_i is in agg now
    cdef double agg_b
    cdef public object ref           # the number of the reference point (None: none yet)

    def __init__(self, indptr, indices, data, int64_t n_cols, int64_t n_w, labels, C, double bias,
                 bint use_bias, int64_t K):
        ip, ind, dat, n = _checked_csr(indptr, indices, data)
        cost = np.ascontiguousarray(C, dtype=np.float64)
        if cost.shape[0] != n or not np.all(np.isfinite(cost)):
            raise ValueError("C must hold one finite cost per row")
        if K < 0 or n_cols < 0 or max(K, 1) * (n_cols + (1 if use_bias else 0)) > n_w:
            raise ValueError("the columns reach beyond w")
        self.sign, self.cls = _checked_labels(labels, n, K)
        self.indptr, self.indices, self.data, self.C = ip, ind, dat, cost
        self.n, self.n_cols, self.n_w, self.K = n, n_cols, n_w, K
        self.bias, self.use_bias = bias, use_bias
        # |x_i| over every stored value: a column past n_cols only makes it larger (still safe)
        sq = np.zeros(n)
        if ip[n]:
            lengths = np.diff(ip)
            sq = np.bincount(np.repeat(np.arange(n), lengths), dat[:ip[n]] ** 2, minlength=n)
        if use_bias:
            sq = sq + bias * bias
        self.radius = np.sqrt(sq)
        self.safe = np.zeros(n)
        self.decision = np.zeros(n, np.int64)
        self.member = np.zeros(n, np.uint8)
        self.agg, self.part = np.zeros(n_w), np.zeros(n_w)
        self.scores = np.zeros(max(K, 1))
        self.agg_b = 0.0
        self.ref = None

    def plane(self, const double[::1] w, bint refresh, double rho, feature_move,
              double[::1] scratch, unsigned char[::1] mark, int64_t[::1] touched):
        """The plane at w added into scratch (new entries marked and listed in `touched`, as
        accumulate_plane does). refresh: w is the new reference point r, every row is scored.
        Else rho bounds rho(w - r) and, multiclass, feature_move = (d, U, L, R) the tests' bounds
        for d = w - r (n_w entries): U_f >= max_k d_fk and L_f <= min_k d_fk (one entry per column
        and the bias's last, when used), R_k >= the radius of label k (K entries); None: rho
        alone. Returns (count, loss, b, scored):
        loss = sum_i C_i max(0, H_i), b = sum_{H_i > 0} C_i over every row (up to rounding),
        scored = the rows scored."""
        if w.shape[0] != self.n_w or scratch.shape[0] != self.n_w or mark.shape[0] != self.n_w \
                or touched.shape[0] < self.n_w:
            raise ValueError("w, scratch, mark and touched must cover w")
        move = self._feature_move(feature_move)
        cdef const double[::1] diff = move[0]
        cdef const double[::1] upper = move[1]
        cdef const double[::1] lower = move[2]
        cdef const double[::1] by_label = move[3]
        cdef int64_t count = 0, scored, col
        cdef double loss = 0.0, b = 0.0, dot = 0.0, v
        if refresh:
            self.agg[:] = 0.0
            self.agg_b = 0.0
        with nogil:
            if self.K == 0:
                scored = self._hinge(w, refresh, rho, &loss, &b)
            else:
                scored = self._crammer_singer(w, refresh, rho, diff, upper, lower, by_label,
                                              &loss, &b)
            # the certain violators' part (after a reference pass: the whole plane, already priced)
            for col in range(self.n_w):
                v = self.agg[col]
                if not refresh:
                    dot += w[col] * v
                    v += self.part[col]
                    self.part[col] = 0.0
                if v != 0.0:
                    _mark_add(scratch, mark, touched, &count, col, v)
            if not refresh:
                loss += self.agg_b - dot
            b += self.agg_b
        return count, loss, b, scored

    def _feature_move(self, feature_move):
        """feature_move's four arrays (d, U, L, R), checked against this shard; empty for None."""
        if feature_move is None:
            return (np.zeros(0),) * 4
        diff, upper, lower, by_label = (np.ascontiguousarray(a, dtype=np.float64)
                                        for a in feature_move)
        m = self.n_cols + self.use_bias
        if self.K == 0 or diff.shape[0] != self.n_w or upper.shape[0] != m \
                or lower.shape[0] != m or by_label.shape[0] != self.K:
            raise ValueError("feature_move: w - r, two bounds per feature and the bias, and one "
                             "radius per class (multiclass)")
        return diff, upper, lower, by_label

    def probe(self, double rho, feature_move, int64_t stride):
        """How many of the rows 0, stride, 2 stride, ... the next `plane` at this rho and
        feature_move would score (the rows it cannot screen), and how many were probed: an
        estimate of a pass's cost before it runs. Every row counts as scored without a
        reference (ref None)."""
        if stride < 1:
            raise ValueError("stride must be at least 1")
        move = self._feature_move(feature_move)
        cdef const double[::1] diff = move[0]
        cdef const double[::1] upper = move[1]
        cdef const double[::1] lower = move[2]
        cdef const double[::1] by_label = move[3]
        cdef int64_t i, probed = 0, scored = 0
        if self.ref is None:
            probed = (self.n + stride - 1) // stride
            return probed, probed
        with nogil:
            i = 0
            while i < self.n:
                probed += 1
                if not self._certain(i, rho, diff, upper, lower, by_label):
                    scored += 1
                i += stride
        return scored, probed

    cdef inline bint _certain(self, int64_t i, double rho, const double[::1] diff,
                              const double[::1] upper, const double[::1] lower,
                              const double[::1] by_label) noexcept nogil:
        """Whether row i's decision at the reference provably stands (the tests of the passes)."""
        cdef int64_t p, col, j, K = self.K
        cdef double bound
        if K == 0 or not upper.shape[0]:
            return self.safe[i] > rho
        j = self.decision[i]
        if self.safe[i] > by_label[j]:
            return True
        if not self.safe[i] > 0:
            return False
        bound = 0.0
        for p in range(self.indptr[i], self.indptr[i + 1]):
            col = self.indices[p]
            if col < self.n_cols:
                bound += _signed_move(self.data[p], diff[col * K + j], upper[col], lower[col])
        if self.use_bias:
            bound += _signed_move(self.bias, diff[self.n_cols * K + j], upper[self.n_cols],
                                  lower[self.n_cols])
        return self.safe[i] * self.radius[i] > bound

    cdef inline void _add_row(self, double[::1] into, int64_t i, int64_t offset, double a) noexcept nogil:
        """into += a x_i, column j at offset + stride j (stride K, or 1 for binary)."""
        cdef int64_t p, col, stride = self.K if self.K else 1
        for p in range(self.indptr[i], self.indptr[i + 1]):
            col = self.indices[p]
            if col < self.n_cols:
                into[offset + stride * col] += a * self.data[p]
        if self.use_bias:
            into[offset + stride * self.n_cols] += a * self.bias

    cdef inline void _move(self, int64_t i, bint certain, double a) noexcept nogil:
        """Keeps a violator's a_i in agg exactly while it is certain (a = C_i or -C_i below)."""
        if certain == self.member[i]:
            return
        if not certain:
            a = -a
        if self.K == 0:
            self._add_row(self.agg, i, 0, a * self.sign[i])
        else:
            self._add_row(self.agg, i, self.cls[i], a)
            self._add_row(self.agg, i, self.decision[i], -a)
        self.agg_b += a
        self.member[i] = certain

    cdef int64_t _hinge(self, const double[::1] w, bint refresh, double rho, double* loss,
                        double* b) noexcept nogil:
        cdef int64_t i, scored = 0
        cdef double s, h
        cdef const double* Wp = &w[0] if w.shape[0] else NULL
        cdef const int64_t* Ip = &self.indices[0] if self.indices.shape[0] else NULL
        cdef const double* Xp = &self.data[0] if self.data.shape[0] else NULL
        for i in range(self.n):
            if not refresh:
                if self.decision[i]:
                    self._move(i, self.safe[i] > rho, self.C[i])
                if self.safe[i] > rho:
                    continue
            scored += 1
            s = _row_dot(Wp, Ip, Xp, self.indptr[i], self.indptr[i + 1], self.n_cols,
                         self.use_bias, self.bias)
            h = 1.0 - self.sign[i] * s
            if refresh:
                self.decision[i] = h > 0.0
                self.member[i] = h > 0.0
                self.safe[i] = _safe_radius(h if h > 0.0 else -h, self.radius[i])
            if h <= 0.0:
                continue
            loss[0] += self.C[i] * h
            if refresh:
                self._add_row(self.agg, i, 0, self.C[i] * self.sign[i])
                self.agg_b += self.C[i]
            else:
                self._add_row(self.part, i, 0, self.C[i] * self.sign[i])
                b[0] += self.C[i]
        return scored

    cdef int64_t _crammer_singer(self, const double[::1] w, bint refresh, double rho,
                                 const double[::1] diff, const double[::1] upper,
                                 const double[::1] lower, const double[::1] by_label,
                                 double* loss, double* b) noexcept nogil:
        # scores, worst label (ties to the smallest, y_i counting 0) and the plane's order of
        # summation are those of block_scores, multiclass_worst and accumulate_plane
        cdef int64_t i, p, col, k, j, yi, best_j, K = self.K, scored = 0
        cdef double v, best, second, sy, bound
        cdef bint certain
        cdef double[::1] S = self.scores
        cdef double* Sp = &S[0]          # raw pointers: the K-long inner loops vectorize
        cdef const double* Wp = &w[0] if w.shape[0] else NULL
        cdef const int64_t* Ip = &self.indices[0] if self.indices.shape[0] else NULL
        cdef const double* Xp = &self.data[0] if self.data.shape[0] else NULL
        for i in range(self.n):
            yi = self.cls[i]
            if not refresh:
                # the best label's radius, then the per-example signed test against the gap
                certain = self._certain(i, rho, diff, upper, lower, by_label)
                if self.decision[i] != yi:
                    self._move(i, certain, self.C[i])
                if certain:
                    continue
            scored += 1
            _class_scores(Sp, Wp, Ip, Xp, self.indptr[i], self.indptr[i + 1], self.n_cols, K,
                          self.use_bias, self.bias)
            sy = S[yi]
            best = -INFINITY
            second = -INFINITY
            best_j = yi
            for j in range(K):
                v = 0.0 if j == yi else 1.0 - (sy - S[j])
                if v > best:
                    second = best
                    best = v
                    best_j = j
                elif v > second:
                    second = v
            if refresh:
                self.decision[i] = best_j if best > 0.0 else yi
                self.member[i] = best > 0.0
                self.safe[i] = _safe_radius(best - second, self.radius[i])
            if best <= 0.0:
                continue
            loss[0] += self.C[i] * best
            if refresh:
                self._add_row(self.agg, i, yi, self.C[i] * 1.0)
                self._add_row(self.agg, i, best_j, self.C[i] * -1.0)
                self.agg_b += self.C[i]
            else:
                self._add_row(self.part, i, yi, self.C[i] * 1.0)
                self._add_row(self.part, i, best_j, self.C[i] * -1.0)
                b[0] += self.C[i]
        return scored


# -- identical examples and the final pricing ----------------------------------------------------
#
# Rows with the same label and the same (indices, values) are one term of the loss with the summed
# cost: 1-slack trains on one row per class of identical rows (svmtrain.duplicates). The classes
# come from one hash pass and a hash table with exact comparison (a collision costs a comparison,
# never a wrong merge); the final pricing then scores the distinct rows only.


cdef inline uint64_t _bits(double x) noexcept nogil:
    cdef uint64_t u
    memcpy(&u, &x, 8)
    return u


cdef inline bint _same_row(const int64_t[::1] P, const int64_t* cols, const double* vals,
                           const double[::1] T, int64_t k, int64_t i, int64_t length) noexcept nogil:
    """Whether row k equals row i (of `length` entries): target, columns and values bit for bit."""
    return (P[k + 1] - P[k] == length and _bits(T[k]) == _bits(T[i])
            and (length == 0
                 or (memcmp(cols + P[k], cols + P[i], length * sizeof(int64_t)) == 0
                     and memcmp(vals + P[k], vals + P[i], length * sizeof(double)) == 0)))


def distinct_rows(indptr, indices, data, target):
    """Classes of identical rows: rows i and k are identical when their targets, their column lists
    and their values agree bit for bit (so every score, loss and plane term of the two is the same).
    Returns (first, inverse): first[c] = the first row of class c, ascending (classes are numbered
    in order of first occurrence); inverse[i] = the class of row i."""
    ip, ind, dat, n_rows = _checked_csr(indptr, indices, data, columns=False)
    tgt = np.ascontiguousarray(target, dtype=np.float64)
    cdef int64_t n = n_rows
    if tgt.shape[0] != n:
        raise ValueError("target must have one entry per row")
    cdef int64_t size = 1
    while size < 2 * n:
        size *= 2
    cdef const int64_t[::1] P = ip
    cdef const int64_t[::1] I = ind
    cdef const double[::1] X = dat
    cdef const double[::1] T = tgt
    # open addressing, linear probing; a slot holds a row hash and its class + 1 (0: empty), side
    # by side, so that a probe costs one cache line
    table_a = np.zeros((size, 2), np.uint64)
    first_a = np.empty(n, np.int64)
    inverse_a = np.empty(n, np.int64)
    cdef uint64_t[:, ::1] table = table_a
    cdef int64_t[::1] first = first_a, inverse = inverse_a
    cdef const int64_t* ip0 = &I[0] if I.shape[0] else NULL
    cdef const double* xp0 = &X[0] if X.shape[0] else NULL
    cdef int64_t i, p, c, k, slot, length, classes = 0
    cdef uint64_t h, last = 0, mask = <uint64_t>(size - 1)
    with nogil:
        for i in range(n):
            # the row's hash: a sum of independently mixed (column, value) terms (no chain of
            # dependent multiplications), then its length and target
            length = P[i + 1] - P[i]
            h = 0
            for p in range(P[i], P[i + 1]):
                h += mix64(_bits(X[p]) + <uint64_t>I[p] * <uint64_t>0x9E3779B97F4A7C15)
            h = mix64(h ^ mix64(_bits(T[i]) + <uint64_t>length))
            # a run of identical rows (kddcup99: 43% of the rows repeat the row before) needs no
            # probe of the table
            if i and h == last and _same_row(P, ip0, xp0, T, i - 1, i, length):
                inverse[i] = inverse[i - 1]
                continue
            last = h
            slot = <int64_t>(h & mask)
            while True:
                if table[slot, 1] == 0:
                    # a new class, first seen at row i
                    table[slot, 0] = h
                    table[slot, 1] = <uint64_t>(classes + 1)
                    first[classes] = i
                    inverse[i] = classes
                    classes += 1
                    break
                if table[slot, 0] == h:
                    c = <int64_t>table[slot, 1] - 1
                    if _same_row(P, ip0, xp0, T, first[c], i, length):
                        inverse[i] = c
                        break
                slot = <int64_t>((<uint64_t>slot + 1) & mask)
    return first_a[:classes].copy(), inverse_a


def gather_rows(indptr, indices, data, rows):
    """The CSR arrays (indptr, indices, data) of the given rows, in that order (svmtrain.data.
    take_rows, by whole-row copies)."""
    ip, ind, dat, n_rows = _checked_csr(indptr, indices, data, columns=False)
    picks = np.ascontiguousarray(rows, dtype=np.int64)
    cdef int64_t n = n_rows, m = picks.shape[0]
    if m and (picks.min() < 0 or picks.max() >= n):
        raise ValueError("a row outside the block")
    out_ptr = np.zeros(m + 1, np.int64)
    np.cumsum(ip[picks + 1] - ip[picks], out=out_ptr[1:])
    out_ind = np.empty(out_ptr[m], np.int64)
    out_dat = np.empty(out_ptr[m], np.float64)
    cdef const int64_t[::1] P = ip
    cdef const int64_t[::1] R = picks
    cdef const int64_t[::1] Q = out_ptr
    cdef const int64_t* src_i = <const int64_t*>cnp.PyArray_DATA(ind)
    cdef const double* src_x = <const double*>cnp.PyArray_DATA(dat)
    cdef int64_t* dst_i = <int64_t*>cnp.PyArray_DATA(out_ind)
    cdef double* dst_x = <double*>cnp.PyArray_DATA(out_dat)
    cdef int64_t r, length
    with nogil:
        for r in range(m):
            length = Q[r + 1] - Q[r]
            if length:
                memcpy(dst_i + Q[r], src_i + P[R[r]], length * sizeof(int64_t))
                memcpy(dst_x + Q[r], src_x + P[R[r]], length * sizeof(double))
    return out_ptr, out_ind, out_dat


def row_violations(indptr, indices, data, int64_t n_cols, labels, int64_t K, w, double bias,
                   bint use_bias):
    """H_i, every row's worst violation at w (the loss of P(w) is sum_i C_i max(0, H_i)): binary
    (K = 0, labels y_i = +1 or -1) H_i = 1 - y_i w.x_i; multiclass (K classes, labels 0..K-1, the
    zero-one loss, w feature-major) H_i = max(0, max_{j != y_i} 1 - (w_{y_i}.x_i - w_j.x_i)).
    Every sum is taken in the order of the tasks' own `violations` (csr_scores; block_scores and
    multiclass_worst), so the values are theirs bit for bit (the primal verify-bound recomputes),
    without their n x K score matrix. Columns at or past n_cols are ignored, as there."""
    ip, ind, dat, n_rows = _checked_csr(indptr, indices, data)
    wv = np.ascontiguousarray(w, dtype=np.float64)
    cdef int64_t n = n_rows
    if K < 0 or n_cols < 0 or wv.shape[0] < max(K, 1) * (n_cols + (1 if use_bias else 0)):
        raise ValueError("the columns reach beyond w")
    y_f, y_i = _checked_labels(labels, n, K)
    out = np.empty(n, np.float64)
    scores = np.zeros(max(K, 1))
    cdef const int64_t[::1] P = ip
    cdef const int64_t[::1] I = ind
    cdef const double[::1] X = dat
    cdef const double[::1] W = wv
    cdef const double[::1] sign = y_f
    cdef const int64_t[::1] cls = y_i
    cdef double[::1] H = out
    cdef double[::1] S = scores
    cdef double* Sp = &S[0]
    cdef const double* Wp = &W[0] if W.shape[0] else NULL
    cdef const int64_t* Ip = &I[0] if I.shape[0] else NULL
    cdef const double* Xp = &X[0] if X.shape[0] else NULL
    cdef int64_t i, j, yi
    cdef double v, best, sy
    with nogil:
        for i in range(n):
            if K == 0:
                H[i] = 1.0 - sign[i] * _row_dot(Wp, Ip, Xp, P[i], P[i + 1], n_cols, use_bias,
                                                bias)
                continue
            _class_scores(Sp, Wp, Ip, Xp, P[i], P[i + 1], n_cols, K, use_bias, bias)
            yi = cls[i]
            sy = Sp[yi]
            best = -INFINITY
            for j in range(K):
                v = 0.0 if j == yi else 1.0 - (sy - Sp[j])
                if v > best:
                    best = v
            H[i] = best
    return out
