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
from libc.stdint cimport int64_t
from libc.math cimport fabs

cnp.import_array()


def accumulate_plane(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] data,
                     int64_t n_cols, const int64_t[::1] tptr, const int64_t[::1] term_row,
                     const double[::1] term_scale, const int64_t[::1] term_offset, term_bias,
                     const double[::1] weight, double bias, bint use_bias, int64_t stride,
                     double[::1] scratch, unsigned char[::1] mark, int64_t[::1] touched,
                     int64_t n_touched=0):
    """scratch += sum_c weight[c] * x_c for constraints given as terms (svmtrain.tasks.base.Constraints,
    the layout of svmtrain._linear.term_dots); constraints with weight 0 are skipped.

    Every entry of scratch that is written for the first time (mark == 0) is marked and appended to
    `touched` after its first n_touched entries; returns the new count. Callers read the plane as
    scratch[touched[:count]] and reset scratch and mark there: no pass over all of w per plane.
    Runs without the GIL (threads may run it on separate scratch buffers).
    """
    cdef int64_t m = tptr.shape[0] - 1, n_rows = indptr.shape[0] - 1, n_w = scratch.shape[0]
    flags = np.ascontiguousarray(term_bias, dtype=np.uint8)
    if not use_bias:
        flags = np.zeros_like(flags)
    cdef const unsigned char[::1] has_bias = flags
    cdef int64_t t, c, r, p, o, col
    if stride < 1:
        raise ValueError("the stride must be >= 1")
    if weight.shape[0] != m:
        raise ValueError(f"weight has {weight.shape[0]} entries, expected {m}")
    if mark.shape[0] != n_w or touched.shape[0] < n_w or not 0 <= n_touched <= n_w:
        raise ValueError("mark and touched must cover scratch")
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
                        col = o + stride * col
                        scratch[col] += a * data[p]
                        if not mark[col]:
                            mark[col] = 1
                            touched[n_touched] = col
                            n_touched += 1
                if has_bias[t]:
                    col = o + stride * n_cols
                    scratch[col] += a * bias
                    if not mark[col]:
                        mark[col] = 1
                        touched[n_touched] = col
                        n_touched += 1
    return n_touched


def plane_qp(double[:, ::1] G, const double[::1] b, double[::1] beta, double bound, double tol,
             int64_t max_steps):
    """Maximise D(beta) over the working set (module docstring) from the given feasible beta, in
    place, until the QP's gap P_ws - D <= tol or max_steps pair steps. Returns (steps, gap).

    G must be symmetric with G_kk >= 0; beta >= 0 with sum beta <= bound (checked here).
    """
    cdef int64_t m = b.shape[0], k, i, j, steps = 0
    if G.shape[0] != m or G.shape[1] != m or beta.shape[0] != m:
        raise ValueError("G, b and beta disagree in size")
    if not bound > 0:
        raise ValueError("the bound must be positive")
    beta_a = np.asarray(beta)
    if m and (beta_a.min() < 0 or beta_a.sum() > bound * (1 + 1e-12)):
        raise ValueError("beta is not feasible")
    grad_a = np.asarray(b) - np.asarray(G) @ beta_a
    cdef double[::1] g = grad_a
    cdef double free, gmax, gmin, gap, curv, t, gi, best, gain
    cdef double lowest = 1e-300
    with nogil:
        free = bound
        for k in range(m):
            free -= beta[k]
        if free < 0:
            free = 0
        while True:
            # i: the largest gradient (the zero plane, gradient 0, is index -1); j: among the
            # planes with beta > 0 (and the zero plane when free > 0) whose gradient is below
            # g_i, the one whose pair step gains most, (g_i - g_j)^2 / curvature (LIBSVM's
            # second-order working set selection, Fan, Chen and Lin 2005)
            i = -1
            gmax = 0.0
            for k in range(m):
                if g[k] > gmax:
                    gmax = g[k]
                    i = k
            gap = bound * gmax
            for k in range(m):
                gap -= beta[k] * g[k]
            if gap <= tol or steps >= max_steps:
                break
            j = -2
            best = -1.0
            gmin = gmax
            if free > 0 and gmax > 0:
                curv = G[i, i] if i >= 0 else 0.0
                best = gmax * gmax / (curv if curv > lowest else lowest)
                j = -1
                gmin = 0.0
            for k in range(m):
                if beta[k] > 0 and g[k] < gmax:
                    curv = G[k, k]
                    if i >= 0:
                        curv += G[i, i] - 2 * G[i, k]
                    gain = (gmax - g[k]) * (gmax - g[k]) / (curv if curv > lowest else lowest)
                    if gain > best:
                        best = gain
                        j = k
                        gmin = g[k]
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
            # contiguous)
            for k in range(m):
                gi = 0.0
                if i >= 0:
                    gi += G[i, k]
                if j >= 0:
                    gi -= G[j, k]
                g[k] -= t * gi
            steps += 1
    return steps, gap


def gram_row(double[::1] dense, planes_cols, planes_vals):
    """a . a_k for every stored sparse plane a_k (columns sorted), with the new plane a given dense (zero elsewhere):
    one gather per stored nonzero (the new plane's size does not enter, unlike a merge of sorted
    columns, which costs |a| per stored plane)."""
    cdef int64_t m = len(planes_cols), k, p, n_w = dense.shape[0]
    out = np.zeros(m, dtype=np.float64)
    cdef double[::1] res = out
    cdef const int64_t[::1] cb
    cdef const double[::1] vb
    cdef double s
    for k in range(m):
        cb = planes_cols[k]
        vb = planes_vals[k]
        if cb.shape[0] != vb.shape[0]:
            raise ValueError("a stored plane's cols and vals differ in length")
        # columns are sorted (as the solver stores them): the ends bound them all
        if cb.shape[0] and (cb[0] < 0 or cb[cb.shape[0] - 1] >= n_w):
            raise ValueError("a stored plane reaches beyond w")
        s = 0.0
        with nogil:
            for p in range(cb.shape[0]):
                s += dense[cb[p]] * vb[p]
        res[k] = s
    return out


cdef inline int64_t _lower_bound(const int64_t[::1] a, int64_t x) noexcept nogil:
    """The first index p with a[p] >= x (a sorted)."""
    cdef int64_t lo = 0, hi = a.shape[0], mid
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def scatter_planes(double[::1] dense, unsigned char[::1] mark, int64_t[::1] touched,
                   int64_t n_touched, planes_cols, planes_vals, coefs, int64_t lo=0, int64_t hi=-1):
    """dense += coef_k a_k for sparse planes (cols, vals), in list order, skipping coef 0.

    With `mark` (same length as dense) every entry written for the first time is marked and
    appended to `touched` after its first n_touched entries, as in accumulate_plane; returns the
    new count. An empty `mark` skips the bookkeeping (a dense w updated in place); then with
    0 <= lo <= hi only the columns in [lo, hi) are written, the planes' columns being sorted, so that
    threads can share one w by column ranges (each entry sums its planes in list order: the same
    result for any split). Each plane's loop runs without the GIL."""
    cdef int64_t n_w = dense.shape[0], k, p, col, m = len(planes_cols), first, last
    cdef bint track = mark.shape[0] > 0
    cdef const int64_t[::1] cb
    cdef const double[::1] vb
    cdef double a
    if len(planes_vals) != m or len(coefs) != m:
        raise ValueError("planes and coefficients differ in number")
    if track and (mark.shape[0] != n_w or touched.shape[0] < n_w or not 0 <= n_touched <= n_w):
        raise ValueError("mark and touched must cover dense")
    cdef bint ranged = hi >= 0      # else every column (those past w are an error)
    if ranged and (track or lo < 0 or hi > n_w or lo > hi):
        raise ValueError("a column range applies to an untracked scatter, inside w")
    cdef bint bad = False
    for k in range(m):
        a = coefs[k]
        if a == 0.0:
            continue
        cb = planes_cols[k]
        vb = planes_vals[k]
        if cb.shape[0] != vb.shape[0]:
            raise ValueError("a plane's cols and vals differ in length")
        with nogil:
            if not ranged:
                first, last = 0, cb.shape[0]
            else:
                # the run of sorted columns inside [lo, hi): binary searches for its ends
                first, last = _lower_bound(cb, lo), _lower_bound(cb, hi)
            for p in range(first, last):       # bounds first: the loops below trust them
                if cb[p] < 0 or cb[p] >= n_w:
                    bad = True
            if not bad:
                if track:
                    for p in range(first, last):
                        col = cb[p]
                        dense[col] += a * vb[p]
                        if not mark[col]:
                            mark[col] = 1
                            touched[n_touched] = col
                            n_touched += 1
                else:
                    for p in range(first, last):
                        dense[cb[p]] += a * vb[p]
        if bad:
            raise ValueError("a plane reaches beyond w")
    return n_touched


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
    cdef double s, h, a, loss = 0.0, b = 0.0
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
    with nogil:
        for i in range(n):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                col = indices[p]
                if col < n_cols:
                    s += w[col] * data[p]
            if use_bias:
                s += w[bias_col] * bias
            h = 1.0 - y[i] * s
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
