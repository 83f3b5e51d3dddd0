"""The budgeted kernel SVM: a kernel expansion of at most B support vectors, trained by BSCA or BSGD.

Problem (binary, no bias; Qaadan, Schueler, Glasmachers 2019, eq. 2 with C per example):

    max_a  D(a) = sum_i a_i - 1/2 sum_ij a_i a_j y_i y_j k(x_i, x_j),   0 <= a_i <= C_i
    min_w  P(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i <w, phi(x_i)>)

with the RBF kernel k(x, x') = exp(-gamma ||x - x'||^2). The model is the expansion
w~ = sum_j beta_j phi(x~_j) over at most B points x~_j (the support vectors, SVs), kept as a sparse
CSR pool with their squared norms, so that k(x, x~_j) costs one sparse dot:
||x - x~_j||^2 = ||x||^2 + ||x~_j||^2 - 2 x.x~_j.

BSCA (Alg. 2): per example i of a random permutation, the margin f~(x_i) = sum_j beta_j k(x_i, x~_j)
against the budgeted model; the truncated Newton step on a_i (Q_ii = k(x_i, x_i) = 1 for RBF):

    a_i <- [a_i + (1 - y_i f~(x_i)) / Q_ii]_0^C_i,   delta = new a_i - old a_i,

and beta of x_i's own SV grows by delta y_i (a new SV when x_i has none, or its SV was merged away).
Epsilon-SVR (box [-C_i, C_i]): D(a) = sum y_i a_i - p sum |a_i| - 1/2 a^T K a; the coordinate
maximiser is a soft threshold, a_i <- clip(sign(v) max(|v| - p/Q_ii, 0), -C_i, C_i) with
v = a_i + (y_i - f~(x_i)) / Q_ii.

BSGD (Wang et al. 2012): Pegasos on the primal, learning rate 1/(lambda t), lambda = 1/(C n), the
loss of example i weighted C_i / C. w_{t+1} = (1 - 1/t) w_t + (n C_i / t) y_i phi(x_i) [violated],
which is w_{t+1} = S_{t+1} / t for the running sum S of n C_i y_i phi(x_i) over the violations: the
store keeps S (no O(B) rescaling per step), margins divide by t - 1. The implied dual coefficients
are a_i = n C_i (violations of i) / T, within [0, C_i] after whole epochs.

Merging (Alg. 1, re-derived): take the SV m with the smallest |beta|; for every SV j of the same sign,
z(h) = h x_m + (1-h) x_j gives k(x_m, z) = kappa^((1-h)^2), k(x_j, z) = kappa^(h^2) with
kappa = k(x_m, x_j) = exp(-gamma d2), d2 = ||x_m - x_j||^2. The best coefficient for a fixed z is the
projection beta_z = beta_m kappa^((1-h)^2) + beta_j kappa^(h^2) (k(z, z) = 1), and the weight
degradation ||beta_m phi(x_m) + beta_j phi(x_j) - beta_z phi(z)||^2 =
beta_m^2 + beta_j^2 + 2 beta_m beta_j kappa - beta_z^2, so h maximises
g(h) = s kappa^((1-h)^2) + (1-s) kappa^(h^2), s = beta_m / (beta_m + beta_j) (the paper's Alg. 1
prints m = beta / (beta + beta_min), the two weights swapped for its z = h x_min + (1-h) x).
Golden-section search on [0, 1] to the given precision, plus both ends (g can be bimodal when
kappa is small). O(B) kernel evaluations per merge: one sparse dot per candidate.

The precomputed search (Glasmachers & Qaadan 2018, the default): h* and the normalised degradation
W(s, kappa) = WD / (beta_m + beta_j)^2 = s^2 + (1-s)^2 + 2 s (1-s) kappa - g(h*)^2 depend on s and
kappa only, so both are tabulated once on a grid over [0, 1]^2 (each node searched finely). A
candidate then costs one bilinear interpolation of W instead of ~20 exponentials; W is continuous,
h* is not (it jumps between the two modes of g), so the chosen pair's h is the best, by exact g, of
the interpolated h and the h of the four grid nodes around (s, kappa) (and the ends), and its
coefficient and degradation are the exact closed forms for that h.
"""

import numpy as np
cimport numpy as cnp
from libc.math cimport INFINITY, exp, fabs, log
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

from _sparse cimport shuffle

cnp.import_array()

cdef double GOLDEN = 0.6180339887498949   # (sqrt(5) - 1) / 2
# The SVs are also kept as dense rows when capacity x columns is at most this many doubles (16 MB):
# a kernel row then loops over the example's few non-zeros, not over the SVs' (merged SVs fill in:
# the union of both supports), and needs no scatter.
cdef int64_t DENSE_LIMIT = 1 << 21


cdef struct Store:
    int64_t n_sv           # support vectors in use: slots 0 .. n_sv-1
    int64_t cap_sv         # slots allocated (budget + 1)
    double* beta
    double* beta_avg       # BSCA's averaged output on the same points (see bsca_epoch), else unused
    bint track_avg         # merges keep beta_avg (two more exponentials each) only when it is used
    double* sqnorm
    int64_t* start         # row j is pool_ind/pool_val[start[j] : start[j] + length[j]]
    int64_t* length
    int64_t* owner         # the example whose row this SV still is, or -1 once merged
    int64_t* pool_ind      # sorted column indices of every row, rows anywhere in the pool
    double* pool_val
    int64_t used           # pool entries handed out (live rows and holes)
    int64_t cap            # pool entries allocated
    int64_t n_cols
    double gamma
    double* work           # n_cols, all zero between calls: one row scattered at a time
    double* dense          # cap_sv rows of n_cols: SV j densely at j * n_cols, or NULL (too large)
    # the kernel row of the last example whose margin was computed, against SVs 0 .. n_sv-1 then:
    # gamma ||x - x~_j||^2 and k(x, x~_j). row_of is the slot that example's new SV took, or -1:
    # a merge whose smallest SV is that one reads its candidates' kernel values from here.
    double* row_gd2
    double* row_kappa
    int64_t row_of
    # partner_by_table's scratch, cap_sv each: the candidates' kappa (negative or NaN: not one),
    # gamma ||x_m - x_j||^2 of a fresh kernel row, the slots that pass the threshold
    double* cand_kappa
    double* cand_gd2
    int64_t* cand_slot
    # kernel values k(x~_m, x~_j) merges have computed afresh (not read from the margin's row), ever
    int64_t fresh_kernels


cdef int reserve(Store* s, int64_t extra) noexcept nogil:
    """Room for `extra` more pool entries after `used`: compacts into fresh, larger arrays when
    needed (holes left by removed SVs disappear). Returns -1 when memory runs out."""
    if s.used + extra <= s.cap:
        return 0
    cdef int64_t live = 0, j, p, q = 0
    for j in range(s.n_sv):
        live += s.length[j]
    cdef int64_t new_cap = 2 * (live + extra) + 1024
    cdef int64_t* ind = <int64_t*> malloc(new_cap * sizeof(int64_t))
    cdef double* val = <double*> malloc(new_cap * sizeof(double))
    if ind == NULL or val == NULL:
        free(ind)
        free(val)
        return -1
    for j in range(s.n_sv):
        for p in range(s.length[j]):
            ind[q + p] = s.pool_ind[s.start[j] + p]
            val[q + p] = s.pool_val[s.start[j] + p]
        s.start[j] = q
        q += s.length[j]
    free(s.pool_ind)
    free(s.pool_val)
    s.pool_ind, s.pool_val, s.used, s.cap = ind, val, q, new_cap
    return 0


cdef inline void scatter(Store* s, const int64_t* ind, const double* val, int64_t a, int64_t b) noexcept nogil:
    cdef int64_t p
    for p in range(a, b):
        if ind[p] < s.n_cols:   # columns the model has never seen meet only zeros in the SVs
            s.work[ind[p]] = val[p]


cdef inline void unscatter(Store* s, const int64_t* ind, int64_t a, int64_t b) noexcept nogil:
    cdef int64_t p
    for p in range(a, b):
        if ind[p] < s.n_cols:
            s.work[ind[p]] = 0.0


cdef inline double sv_dot(Store* s, int64_t j) noexcept nogil:
    """x~_j . (the scattered row)."""
    cdef double d = 0.0
    cdef int64_t p, e = s.start[j] + s.length[j]
    for p in range(s.start[j], e):
        d += s.work[s.pool_ind[p]] * s.pool_val[p]
    return d


cdef inline void dense_write(Store* s, int64_t j) noexcept nogil:
    """Row j of the dense mirror from SV j's pool row."""
    if s.dense == NULL:
        return
    cdef double* row = s.dense + j * s.n_cols
    cdef int64_t p
    memset(row, 0, s.n_cols * sizeof(double))
    for p in range(s.start[j], s.start[j] + s.length[j]):
        row[s.pool_ind[p]] = s.pool_val[p]


cdef inline double dense_dot(Store* s, int64_t j, const int64_t* ind, const double* val,
                             int64_t a, int64_t b) noexcept nogil:
    """x~_j . x for the row x = ind/val[a:b] (s.dense set)."""
    cdef const double* row = s.dense + j * s.n_cols
    cdef double d = 0.0
    cdef int64_t p
    for p in range(a, b):
        if ind[p] < s.n_cols:
            d += val[p] * row[ind[p]]
    return d


cdef inline double sq_distance(double sqn_a, double sqn_b, double dot) noexcept nogil:
    cdef double d2 = sqn_a + sqn_b - 2.0 * dot
    return d2 if d2 > 0.0 else 0.0


cdef double expansion_at(Store* s, const int64_t* ind, const double* val, int64_t a, int64_t b,
                         double sqn) noexcept nogil:
    """f~(x) = sum_j beta_j k(x, x~_j) for the row x = ind/val[a:b] with squared norm sqn; its
    kernel row on the side (Store)."""
    cdef double f = 0.0, kappa, d
    cdef int64_t j, p, n = s.n_sv, n_cols = s.n_cols
    # local copies: the stores into the kernel row would otherwise reload every s.field (the
    # extensions build with -fno-strict-aliasing)
    cdef const double* beta = s.beta
    cdef const double* sqnorm = s.sqnorm
    cdef const double* dense = s.dense
    cdef double* row_gd2 = s.row_gd2
    cdef double* row_kappa = s.row_kappa
    cdef double gamma = s.gamma
    cdef const double* sv
    # a training row has no column the model has not seen; a row to predict may (they meet zeros)
    cdef bint unseen = False
    for p in range(a, b):
        unseen |= ind[p] >= n_cols
    s.row_of = -1
    if dense == NULL or unseen:
        if dense == NULL:
            scatter(s, ind, val, a, b)
        for j in range(n):
            d = dense_dot(s, j, ind, val, a, b) if dense != NULL else sv_dot(s, j)
            row_gd2[j] = gamma * sq_distance(sqn, sqnorm[j], d)
        if dense == NULL:
            unscatter(s, ind, a, b)
    else:
        for j in range(n):   # the common case: the dense copies, no test per non-zero
            sv = dense + j * n_cols
            d = 0.0
            for p in range(a, b):
                d += val[p] * sv[ind[p]]
            row_gd2[j] = gamma * sq_distance(sqn, sqnorm[j], d)
    for j in range(n):
        kappa = exp(-row_gd2[j])
        row_kappa[j] = kappa
        f += beta[j] * kappa
    return f


cdef int add_sv(Store* s, const int64_t* ind, const double* val, int64_t a, int64_t b, double sqn,
                double beta, int64_t owner) noexcept nogil:
    """Append a copy of the row as a new SV (columns beyond n_cols dropped: training rows have
    none). The caller keeps n_sv < cap_sv. Returns -1 when memory runs out."""
    if reserve(s, b - a) != 0:
        return -1
    cdef int64_t j = s.n_sv, p, q = s.used
    for p in range(a, b):
        if ind[p] < s.n_cols:
            s.pool_ind[q] = ind[p]
            s.pool_val[q] = val[p]
            q += 1
    s.start[j], s.length[j] = s.used, q - s.used
    s.used = q
    s.beta[j], s.sqnorm[j], s.owner[j] = beta, sqn, owner
    s.beta_avg[j] = beta
    s.row_of = -1
    dense_write(s, j)
    s.n_sv += 1
    return 0


cdef void remove_sv(Store* s, int64_t j, int64_t* slot_of) noexcept nogil:
    """Drop SV j; the last SV takes its slot (its pool row stays where it is)."""
    cdef int64_t last = s.n_sv - 1
    s.row_of = -1   # slots move
    if s.owner[j] >= 0 and slot_of != NULL:
        slot_of[s.owner[j]] = -1
    if j != last:
        s.beta[j], s.sqnorm[j], s.beta_avg[j] = s.beta[last], s.sqnorm[last], s.beta_avg[last]
        s.start[j], s.length[j], s.owner[j] = s.start[last], s.length[last], s.owner[last]
        if s.dense != NULL:
            memcpy(s.dense + j * s.n_cols, s.dense + last * s.n_cols, s.n_cols * sizeof(double))
        if s.owner[j] >= 0 and slot_of != NULL:
            slot_of[s.owner[j]] = j
    s.n_sv = last


cdef inline double merge_gain(double share, double gd2, double h) noexcept nogil:
    """g(h) = share kappa^((1-h)^2) + (1-share) kappa^(h^2), kappa = exp(-gd2)."""
    return share * exp(-gd2 * (1.0 - h) * (1.0 - h)) + (1.0 - share) * exp(-gd2 * h * h)


cdef double _golden(double share, double gd2, double lo, double hi, double precision,
                    double* gain) noexcept nogil:
    """Golden-section search for the max of merge_gain on [lo, hi] until the bracket is shorter
    than `precision`: the better of the last two inner points (the lower one on a tie), its gain
    in gain[0]."""
    cdef double c = hi - GOLDEN * (hi - lo), d = lo + GOLDEN * (hi - lo)
    cdef double fc = merge_gain(share, gd2, c), fd = merge_gain(share, gd2, d)
    while hi - lo > precision:
        if fc >= fd:
            hi, d, fd = d, c, fc
            c = hi - GOLDEN * (hi - lo)
            fc = merge_gain(share, gd2, c)
        else:
            lo, c, fc = c, d, fd
            d = lo + GOLDEN * (hi - lo)
            fd = merge_gain(share, gd2, d)
    if fd > fc:
        gain[0] = fd
        return d
    gain[0] = fc
    return c


cdef double golden_h(double share, double gd2, double kappa, double precision, double* gain) noexcept nogil:
    """argmax of merge_gain over [0, 1]: golden-section search until the bracket is shorter than
    `precision`, then the best of its two inner points and the two ends of [0, 1] (g(0) and g(1)
    share one exponential, kappa)."""
    cdef double best, g
    cdef double h = _golden(share, gd2, 0.0, 1.0, precision, &best)
    g = share * kappa + (1.0 - share)          # h = 0: z = the partner
    if g > best:
        h, best = 0.0, g
    g = share + (1.0 - share) * kappa          # h = 1: z = x_m
    if g > best:
        h, best = 1.0, g
    gain[0] = best
    return h


# The merge table: MERGE_GRID x MERGE_GRID nodes, node (a, b) at s = a / (MERGE_GRID - 1),
# kappa = b / (MERGE_GRID - 1); row-major in s. Built once (ensure_merge_table) before any loop reads it.
DEF MERGE_GRID = 201
cdef double MERGE_H[MERGE_GRID * MERGE_GRID]
cdef double MERGE_W[MERGE_GRID * MERGE_GRID]
cdef bint merge_table_ready = False
# A lower bound that lets choose_merge skip most candidates' interpolation. The smallest SV m and a
# candidate j of the same sign (|beta_j| >= |beta_m|) have s = beta_m / (beta_m + beta_j) in (0, 1/2]
# (also in floating point), and j is ranked by wd = (beta_m + beta_j)^2 W~(s, kappa)
# = beta_m^2 W~(s, kappa) / s^2, W~ the bilinear interpolation. In the cell (a, b) holding (s, kappa),
# W~ = (1 - fa) A_a + fa A_(a+1), A_a the interpolation along kappa at s-node a, so A_a >= s_a^2 L
# when L is the least W / s^2 over the cell's nodes with s > 0 (the nodes at s = 0 hold W = 0), and
# W~ >= L ((1 - fa) s_a^2 + fa s_(a+1)^2) >= L s^2 (s^2 is convex; L >= 0). KAPPA_BOUND[b] is the
# least such L over the cells of kappa column b with s <= 1/2 and over every column below b, less
# a relative 1e-9 for rounding: wd >= beta_m^2 KAPPA_BOUND[b] for every candidate with kappa in a
# column <= b, so once a candidate's wd is known, all those with a smaller kappa than a threshold
# are out (kappa_cut). -INFINITY (no pruning) from a column holding a negative W (rounding at kappa 1).
cdef double KAPPA_BOUND[MERGE_GRID - 1]
cdef bint prune_candidates = True   # False: every candidate interpolated (set_candidate_pruning)
cdef bint merge_incoming = True     # False: a new SV is always stored before a merge (set_incoming_merge)


cdef double best_h_fine(double share, double kappa, double* gain) noexcept nogil:
    """argmax of g over [0, 1] for the table: a scan of 65 points finds the right mode (g can be
    bimodal), golden-section search to 1e-9 inside the scan cell around the best point, the ends."""
    if kappa <= 0.0:   # g(0) = 1 - s, g(1) = s, g = 0 elsewhere
        gain[0] = share if share >= 0.5 else 1.0 - share
        return 1.0 if share >= 0.5 else 0.0
    if kappa >= 1.0:   # g = 1 everywhere; h* -> s as kappa -> 1
        gain[0] = 1.0
        return share
    cdef double gd2 = -log(kappa), h, g, best = -1.0, best_h = 0.0
    cdef int k
    for k in range(65):
        h = k / 64.0
        g = merge_gain(share, gd2, h)
        if g > best:
            best, best_h = g, h
    cdef double lo = best_h - 1.0 / 64.0, hi = best_h + 1.0 / 64.0
    lo = 0.0 if lo < 0.0 else lo
    hi = 1.0 if hi > 1.0 else hi
    cdef double inner
    h = _golden(share, gd2, lo, hi, 1e-9, &inner)
    if inner > best:
        best, best_h = inner, h
    gain[0] = best
    return best_h


def ensure_merge_table():
    """Fill the merge table (about 40,000 fine searches, tens of milliseconds), once."""
    global merge_table_ready
    if merge_table_ready:
        return
    cdef int a, b
    cdef double share, kappa, gain, h
    with nogil:
        for a in range(MERGE_GRID):
            share = a / (MERGE_GRID - 1.0)
            for b in range(MERGE_GRID):
                kappa = b / (MERGE_GRID - 1.0)
                h = best_h_fine(share, kappa, &gain)
                MERGE_H[a * MERGE_GRID + b] = h
                MERGE_W[a * MERGE_GRID + b] = (share * share + (1.0 - share) * (1.0 - share)
                                               + 2.0 * share * (1.0 - share) * kappa - gain * gain)
        fill_kappa_bound()
    merge_table_ready = True


cdef void fill_kappa_bound() noexcept nogil:
    """KAPPA_BOUND from MERGE_W (see there): s-nodes 1 .. (MERGE_GRID - 1) / 2 + 1, the cells with
    s <= 1/2 (s = 1/2 itself lies in the cell whose upper node has weight 0)."""
    cdef int a, b, k
    cdef double running = INFINITY, low, w, share
    for b in range(MERGE_GRID - 1):
        low = INFINITY
        for k in range(2):   # the column's two kappa nodes
            if MERGE_W[b + k] < 0.0:   # the node at s = 0 (W = 0 there, up to rounding)
                low = -INFINITY
            for a in range(1, (MERGE_GRID - 1) // 2 + 2):
                share = a / (MERGE_GRID - 1.0)
                w = MERGE_W[a * MERGE_GRID + b + k]
                if w < 0.0:
                    low = -INFINITY
                elif w / (share * share) < low:
                    low = w / (share * share)
        if low < running:
            running = low
        KAPPA_BOUND[b] = running * (1.0 - 1e-9) if running > 0.0 else running


cdef inline double kappa_cut(double bm2, double incumbent) noexcept nogil:
    """The candidates whose kappa (MERGE_GRID - 1) is below the returned value have a bound
    bm2 KAPPA_BOUND above `incumbent` (a degradation already found): they cannot be chosen. The
    largest column b with bm2 KAPPA_BOUND[b] > incumbent (KAPPA_BOUND falls with b), plus 1; 0 if
    none."""
    if not bm2 * KAPPA_BOUND[0] > incumbent:
        return 0.0
    cdef int lo = 0, hi = MERGE_GRID - 1, mid   # the test holds at lo, fails at hi (or hi is past the end)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bm2 * KAPPA_BOUND[mid] > incumbent:
            lo = mid
        else:
            hi = mid
    return lo + 1.0


cdef inline void table_cell(double share, double kappa, int* a, int* b, double* fa, double* fb) noexcept nogil:
    """The grid cell holding (s, kappa), both clamped to [0, 1], and the position inside it."""
    cdef double x = share * (MERGE_GRID - 1), y = kappa * (MERGE_GRID - 1)
    x = 0.0 if x < 0.0 else (MERGE_GRID - 1.0 if x > MERGE_GRID - 1.0 else x)
    y = 0.0 if y < 0.0 else (MERGE_GRID - 1.0 if y > MERGE_GRID - 1.0 else y)
    a[0], b[0] = <int> x, <int> y
    if a[0] > MERGE_GRID - 2:
        a[0] = MERGE_GRID - 2
    if b[0] > MERGE_GRID - 2:
        b[0] = MERGE_GRID - 2
    fa[0], fb[0] = x - a[0], y - b[0]


cdef inline double bilinear(const double* t, int a, int b, double fa, double fb) noexcept nogil:
    cdef int k = a * MERGE_GRID + b
    return ((1.0 - fa) * ((1.0 - fb) * t[k] + fb * t[k + 1])
            + fa * ((1.0 - fb) * t[k + MERGE_GRID] + fb * t[k + MERGE_GRID + 1]))


cdef inline double table_degradation(double share, double kappa) noexcept nogil:
    """W(s, kappa) interpolated: the degradation over (beta_m + beta_j)^2 at the best h."""
    cdef int a, b
    cdef double fa, fb
    table_cell(share, kappa, &a, &b, &fa, &fb)
    return bilinear(MERGE_W, a, b, fa, fb)


cdef double table_h(double share, double gd2, double kappa, double* gain) noexcept nogil:
    """h for a chosen pair: the best, by exact g, of the interpolated h*, the h* of the cell's four
    nodes and the two ends of [0, 1]."""
    cdef int a, b, k
    cdef double fa, fb, h, g, best_h, best
    table_cell(share, kappa, &a, &b, &fa, &fb)
    best_h = bilinear(MERGE_H, a, b, fa, fb)
    best = merge_gain(share, gd2, best_h)
    cdef int[4] nodes = [a * MERGE_GRID + b, a * MERGE_GRID + b + 1,
                       (a + 1) * MERGE_GRID + b, (a + 1) * MERGE_GRID + b + 1]
    for k in range(4):
        h = MERGE_H[nodes[k]]
        g = merge_gain(share, gd2, h)
        if g > best:
            best, best_h = g, h
    g = share * kappa + (1.0 - share)
    if g > best:
        best, best_h = g, 0.0
    g = share + (1.0 - share) * kappa
    if g > best:
        best, best_h = g, 1.0
    gain[0] = best
    return best_h


cdef int64_t smallest_magnitude(const double* beta, int64_t n) noexcept nogil:
    """The first j with the least |beta_j| (n >= 1)."""
    cdef int64_t j, m = 0
    for j in range(1, n):
        if fabs(beta[j]) < fabs(beta[m]):
            m = j
    return m


cdef int64_t largest(const double* key, int64_t n) noexcept nogil:
    """The first j with the largest key[j] (n >= 1; NaN keys never win over a number)."""
    cdef int64_t j, top = 0
    for j in range(1, n):
        if key[j] > key[top]:
            top = j
    return top


cdef int64_t scan_for_merge(Store* s, double coef, int64_t* top) noexcept nogil:
    """For a new SV of coefficient coef about to take the model over the budget, whose margin's
    kernel row is in the store: the first slot of least |beta| (returned) and in top the first slot
    of largest kappa among the SVs of coef's sign (-1 for none), in one pass. The sign test is an
    index, not a branch (it would be mispredicted half the time); the other branches are rarely
    taken after the first few slots."""
    cdef int64_t j, n = s.n_sv, m = 0
    cdef const double* beta = s.beta
    cdef const double* row_kappa = s.row_kappa
    cdef double least = INFINITY, most = -1.0, magnitude, key
    cdef double[2] weight = [-INFINITY, 1.0]
    top[0] = -1
    for j in range(n):
        magnitude = fabs(beta[j])
        if magnitude < least:
            least, m = magnitude, j
        key = row_kappa[j] * weight[<int> (beta[j] * coef > 0.0)]
        if key > most:
            most, top[0] = key, j
    return m


cdef struct MergeChoice:
    int64_t m, partner     # partner -1: no SV of the same sign (m is then simply removed)
    double h, beta_z, degradation
    double gd2             # gamma ||x_m - x_partner||^2 of the chosen pair


cdef MergeChoice choose_merge(Store* s, int64_t m, double bm, int64_t n, double precision,
                              bint table, int64_t top=-1) noexcept nogil:
    """Alg. 1's choice for m, the SV with the smallest |beta| (bm): its best same-sign partner
    among slots 0 .. n-1, and h. m = n is the incoming row of place's fast path: not stored, its
    kernel row the margin's, top the slot of its sign's largest kappa (scan_for_merge). table:
    candidates are ranked by the tabulated degradation, h is searched for the chosen one only."""
    cdef MergeChoice best
    cdef int64_t j
    best.m, best.partner, best.h = m, -1, 1.0
    best.beta_z, best.degradation, best.gd2 = 0.0, bm * bm, 0.0
    cdef double bj, gd2, kappa, gain, h, bz, wd
    # the smallest SV is often the example just added: its kernel row came with its margin
    cdef bint cached = m == s.row_of or m == n
    if table:
        if m == n:
            partner_of_incoming(s, bm, top, &best)
        else:
            partner_by_table(s, m, bm, n, cached, &best)
        return best
    if s.dense == NULL and not cached:
        scatter(s, s.pool_ind, s.pool_val, s.start[m], s.start[m] + s.length[m])
    for j in range(n):
        bj = s.beta[j]
        if j == m or not (bj * bm > 0.0):
            continue
        if cached:
            gd2, kappa = s.row_gd2[j], s.row_kappa[j]
        else:
            gd2 = s.gamma * sq_distance(s.sqnorm[m], s.sqnorm[j], kernel_dot(s, m, j))
            kappa = exp(-gd2)
            s.fresh_kernels += 1
        h = golden_h(bm / (bm + bj), gd2, kappa, precision, &gain)
        bz = (bm + bj) * gain
        wd = bm * bm + bj * bj + 2.0 * bm * bj * kappa - bz * bz
        if wd < 0.0:
            wd = 0.0   # rounding: the true degradation is >= 0
        if best.partner < 0 or wd < best.degradation:
            best.partner, best.h, best.beta_z, best.degradation, best.gd2 = j, h, bz, wd, gd2
    if s.dense == NULL and not cached:
        unscatter(s, s.pool_ind, s.start[m], s.start[m] + s.length[m])
    return best


cdef inline double kernel_dot(Store* s, int64_t m, int64_t j) noexcept nogil:
    """x~_m . x~_j (without the dense mirror, x~_m must be scattered)."""
    if s.dense != NULL:
        return dense_dot(s, j, s.pool_ind, s.pool_val, s.start[m], s.start[m] + s.length[m])
    return sv_dot(s, j)


cdef void partner_by_table(Store* s, int64_t m, double bm, int64_t n, bint cached,
                           MergeChoice* best) noexcept nogil:
    """The partner of the stored SV m among slots 0 .. n-1, ranked by the tabulated degradation,
    then h by table_h: best.partner the first slot of least wd = (beta_m + beta_j)^2 W~(s, kappa),
    exactly as a scan of every candidate would find it, but interpolating few of them. Most of the
    cost of a plain scan is not the interpolation but mispredicted branches on the candidates'
    signs, so the passes below run without branches on the candidates: (1) kappa of every
    candidate into s.cand_kappa, a negative value or NaN for the others (m itself: its entry of
    the row is not part of the row), and the largest; (2) the candidate of the largest kappa gives
    a first wd, hence a kappa threshold below which no candidate can do better (KAPPA_BOUND,
    kappa_cut); (3) the slots at or above it, in slot order, into s.cand_slot; (4) those are
    ranked (rank_candidates)."""
    cdef int64_t j, count = 0, top
    cdef double bj, wd, cut, most
    # local copies of the store's pointers: extensions build with -fno-strict-aliasing, so a store
    # through key[j] would otherwise reload every s.field in the loops
    cdef double* key = s.cand_kappa
    cdef int64_t* slot = s.cand_slot
    cdef const double* beta = s.beta
    cdef const double* row_kappa = s.row_kappa
    cdef const double* gd2_of = s.row_gd2
    # kappa times 1 (a candidate: exact) or -inf (not one: -inf, or NaN for kappa 0; either fails
    # every test below), picked by indexing: a conditional here compiles to a mispredicted branch
    cdef double[2] weight = [-INFINITY, 1.0]
    if cached:   # the margin's kernel row (the new SV m has no entry in it: key[m] is reset below)
        for j in range(n):
            key[j] = row_kappa[j] * weight[<int> (beta[j] * bm > 0.0)]
    else:        # a fresh row: a sparse dot and an exponential per candidate only
        if s.dense == NULL:
            scatter(s, s.pool_ind, s.pool_val, s.start[m], s.start[m] + s.length[m])
        for j in range(n):
            key[j] = -1.0
            if s.beta[j] * bm > 0.0 and j != m:
                s.cand_gd2[j] = s.gamma * sq_distance(s.sqnorm[m], s.sqnorm[j], kernel_dot(s, m, j))
                key[j] = exp(-s.cand_gd2[j])
                s.fresh_kernels += 1
        if s.dense == NULL:
            unscatter(s, s.pool_ind, s.start[m], s.start[m] + s.length[m])
        gd2_of = s.cand_gd2
    key[m] = -1.0
    top = largest(key, n)
    most = key[top]
    if not most >= 0.0:   # no SV of m's sign
        return
    bj = s.beta[top]
    cut = 0.0
    if prune_candidates:
        cut = kappa_cut(bm * bm, (bm + bj) * (bm + bj) * table_degradation(bm / (bm + bj), most))
    for j in range(n):
        slot[count] = j
        count += key[j] * (MERGE_GRID - 1) >= cut   # a non-candidate never passes: cut >= 0
    rank_candidates(s, bm, key, gd2_of, count, cut, best)


cdef void partner_of_incoming(Store* s, double bm, int64_t top, MergeChoice* best) noexcept nogil:
    """partner_by_table for the incoming row (place's fast path: m not stored, coefficient bm),
    from the margin's kernel row: top, the slot of the largest kappa of m's sign (scan_for_merge;
    -1 for none), sets the threshold and one pass collects the slots at or above it (the same
    choice, bit for bit: only which candidates are interpolated can differ, by ties of the
    largest kappa)."""
    cdef int64_t j, n = s.n_sv, count = 0
    cdef int64_t* slot = s.cand_slot
    cdef const double* beta = s.beta
    cdef const double* row_kappa = s.row_kappa
    if top < 0:   # no SV of m's sign
        return
    cdef double bj = beta[top], most = row_kappa[top], cut = 0.0
    if prune_candidates:
        cut = kappa_cut(bm * bm, (bm + bj) * (bm + bj) * table_degradation(bm / (bm + bj), most))
    for j in range(n):   # without branches on the candidates, as partner_by_table
        slot[count] = j
        count += (row_kappa[j] * (MERGE_GRID - 1) >= cut) & (beta[j] * bm > 0.0)
    rank_candidates(s, bm, row_kappa, s.row_gd2, count, cut, best)


cdef void rank_candidates(Store* s, double bm, const double* key, const double* gd2_of, int64_t count,
                          double cut, MergeChoice* best) noexcept nogil:
    """The last step of partner_by_table and partner_of_incoming: the `count` slots in
    s.cand_slot (in slot order; key[j] and gd2_of[j] their kappa and gamma ||x_m - x_j||^2),
    those at or above the threshold `cut` ranked as a plain scan would (the threshold rising as
    better ones turn up, so ties go to the lowest slot), then the exact h, coefficient and
    degradation of the chosen pair."""
    cdef int64_t k, j
    cdef const int64_t* slot = s.cand_slot
    cdef const double* beta = s.beta
    cdef double bj, kappa, wd, gain
    cdef double best_gd2 = 0.0, best_kappa = 0.0
    for k in range(count):
        j = slot[k]
        kappa = key[j]
        if kappa * (MERGE_GRID - 1) < cut:
            continue
        bj = beta[j]
        wd = (bm + bj) * (bm + bj) * table_degradation(bm / (bm + bj), kappa)
        if best.partner < 0 or wd < best.degradation:
            best.partner, best.degradation = j, wd
            best_gd2, best_kappa = gd2_of[j], kappa
            if prune_candidates:
                cut = kappa_cut(bm * bm, wd)
    # the exact h search, coefficient and degradation of the pair
    bj = s.beta[best.partner]
    best.h = table_h(bm / (bm + bj), best_gd2, best_kappa, &gain)
    best.gd2 = best_gd2
    best.beta_z = (bm + bj) * gain
    wd = bm * bm + bj * bj + 2.0 * bm * bj * best_kappa - best.beta_z * best.beta_z
    best.degradation = wd if wd > 0.0 else 0.0


cdef int merge(Store* s, MergeChoice c, const int64_t* in_ind, const double* in_val, int64_t in_a,
               int64_t in_b, double in_avg, int64_t* slot_of, double* degradation) noexcept nogil:
    """Apply a merge choice (Alg. 1): m and its partner become z = h x_m + (1-h) x_partner, in the
    last slot. m stored (c.m < n_sv): its row is in the pool. Else m is the incoming row
    in_ind/in_val[in_a:in_b] (every column below n_cols: training rows are checked for that) with
    averaged coefficient in_avg, never stored. Returns -1 when memory runs out."""
    degradation[0] += c.degradation
    cdef bint incoming = c.m >= s.n_sv
    if c.partner < 0:
        if not incoming:
            remove_sv(s, c.m, slot_of)
        return 0
    cdef int64_t m = c.m, j = c.partner
    cdef int64_t m_length = (in_b - in_a) if incoming else s.length[m]
    if reserve(s, m_length + s.length[j]) != 0:
        return -1
    # z = h x_m + (1-h) x_j: the union of two sorted index lists, written after `used` (the pool
    # pointers read after reserve, which may move it)
    cdef const int64_t* m_ind = in_ind if incoming else s.pool_ind
    cdef const double* m_val = in_val if incoming else s.pool_val
    cdef int64_t p = in_a if incoming else s.start[m]
    cdef int64_t pe = p + m_length
    cdef int64_t q = s.start[j], qe = s.start[j] + s.length[j]
    cdef int64_t out = s.used
    cdef double h = c.h, v, sqn = 0.0
    while p < pe or q < qe:
        if q >= qe or (p < pe and m_ind[p] < s.pool_ind[q]):
            s.pool_ind[out], v = m_ind[p], h * m_val[p]
            p += 1
        elif p >= pe or s.pool_ind[q] < m_ind[p]:
            s.pool_ind[out], v = s.pool_ind[q], (1.0 - h) * s.pool_val[q]
            q += 1
        else:
            s.pool_ind[out], v = m_ind[p], h * m_val[p] + (1.0 - h) * s.pool_val[q]
            p += 1
            q += 1
        if v != 0.0:
            s.pool_val[out] = v
            sqn += v * v
            out += 1
    cdef int64_t z_start = s.used, z_length = out - s.used
    s.used = out
    # the averaged coefficients follow the same merge: their best coefficient on phi(z), the
    # projection avg_m k(x_m, z) + avg_j k(x_j, z) (k(x_m, z) = kappa^((1-h)^2), k(x_j, z) = kappa^(h^2))
    cdef double avg_z = 0.0
    if s.track_avg:
        avg_z = ((in_avg if incoming else s.beta_avg[m]) * exp(-c.gd2 * (1.0 - h) * (1.0 - h))
                 + s.beta_avg[j] * exp(-c.gd2 * h * h))
    if incoming:
        remove_sv(s, j, slot_of)
    elif m > j:   # remove the higher slot first: the lower one does not move
        remove_sv(s, m, slot_of)
        remove_sv(s, j, slot_of)
    else:
        remove_sv(s, j, slot_of)
        remove_sv(s, m, slot_of)
    cdef int64_t z = s.n_sv
    s.start[z], s.length[z] = z_start, z_length
    s.beta[z], s.sqnorm[z], s.owner[z] = c.beta_z, sqn, -1
    s.beta_avg[z] = avg_z
    dense_write(s, z)
    s.n_sv += 1
    return 0


cdef class Expansion:
    """A budgeted model w~ = sum_j beta_j phi(x~_j) with the RBF kernel, at most `capacity` SVs."""

    cdef Store s

    def __cinit__(self, int64_t n_cols, double gamma, int64_t capacity):
        if n_cols < 0 or capacity < 1 or not gamma > 0:
            raise ValueError("Expansion needs n_cols >= 0, capacity >= 1, gamma > 0")
        self.s.n_sv, self.s.cap_sv, self.s.n_cols, self.s.gamma = 0, capacity, n_cols, gamma
        self.s.beta = <double*> malloc(capacity * sizeof(double))
        self.s.beta_avg = <double*> malloc(capacity * sizeof(double))
        self.s.sqnorm = <double*> malloc(capacity * sizeof(double))
        self.s.start = <int64_t*> malloc(capacity * sizeof(int64_t))
        self.s.length = <int64_t*> malloc(capacity * sizeof(int64_t))
        self.s.owner = <int64_t*> malloc(capacity * sizeof(int64_t))
        self.s.work = <double*> calloc(n_cols + 1, sizeof(double))
        # zeroed: partner_by_table reads (and then discards) the row's entry of the new SV's slot
        self.s.row_gd2 = <double*> calloc(capacity, sizeof(double))
        self.s.row_kappa = <double*> calloc(capacity, sizeof(double))
        self.s.cand_kappa = <double*> calloc(capacity, sizeof(double))
        self.s.cand_gd2 = <double*> calloc(capacity, sizeof(double))
        self.s.cand_slot = <int64_t*> calloc(capacity, sizeof(int64_t))
        self.s.row_of = -1
        self.s.fresh_kernels = 0
        self.s.track_avg = False
        self.s.used, self.s.cap = 0, 0
        self.s.pool_ind, self.s.pool_val, self.s.dense = NULL, NULL, NULL
        if 0 < n_cols and capacity * n_cols <= DENSE_LIMIT:
            self.s.dense = <double*> malloc(capacity * n_cols * sizeof(double))
            if self.s.dense == NULL:
                raise MemoryError()
        if (self.s.beta == NULL or self.s.beta_avg == NULL or self.s.sqnorm == NULL or self.s.start == NULL
                or self.s.length == NULL or self.s.owner == NULL or self.s.work == NULL
                or self.s.row_gd2 == NULL or self.s.row_kappa == NULL or self.s.cand_kappa == NULL
                or self.s.cand_gd2 == NULL or self.s.cand_slot == NULL
                or reserve(&self.s, 1024) != 0):
            raise MemoryError()

    def __dealloc__(self):
        free(self.s.beta)
        free(self.s.beta_avg)
        free(self.s.sqnorm)
        free(self.s.start)
        free(self.s.length)
        free(self.s.owner)
        free(self.s.work)
        free(self.s.row_gd2)
        free(self.s.row_kappa)
        free(self.s.cand_kappa)
        free(self.s.cand_gd2)
        free(self.s.cand_slot)
        free(self.s.dense)
        free(self.s.pool_ind)
        free(self.s.pool_val)

    @property
    def n_sv(self):
        return self.s.n_sv

    @property
    def capacity(self):
        return self.s.cap_sv

    @property
    def fresh_kernel_values(self):
        """Kernel values merges have computed afresh since the expansion was made: one per
        same-sign candidate of a merge whose smallest SV is not the example whose margin was just
        computed (that one's row is reused at no cost)."""
        return self.s.fresh_kernels

    @property
    def gamma(self):
        return self.s.gamma

    @classmethod
    def from_arrays(cls, int64_t n_cols, double gamma, beta, indptr, indices, data, int64_t capacity=0):
        """An expansion holding given SVs (rows of a CSR with sorted columns < n_cols)."""
        cdef const double[::1] b = np.ascontiguousarray(beta, dtype=np.float64)
        cdef const int64_t[::1] ip = np.ascontiguousarray(indptr, dtype=np.int64)
        cdef const int64_t[::1] ind = np.ascontiguousarray(indices, dtype=np.int64)
        cdef const double[::1] val = np.ascontiguousarray(data, dtype=np.float64)
        cdef int64_t n = b.shape[0], j, p
        _check_csr(ip, ind, val, n)
        for j in range(n):
            for p in range(ip[j], ip[j + 1]):
                if not 0 <= ind[p] < n_cols or (p > ip[j] and ind[p] <= ind[p - 1]):
                    raise ValueError(f"support vector {j}: columns must be increasing, in 0..{n_cols - 1}")
        cdef Expansion e = cls(n_cols, gamma, max(capacity, n, 1))
        cdef double sqn
        for j in range(n):
            sqn = 0.0
            for p in range(ip[j], ip[j + 1]):
                sqn += val[p] * val[p]
            if add_sv(&e.s, &ind[0] if ind.shape[0] else NULL, &val[0] if val.shape[0] else NULL,
                      ip[j], ip[j + 1], sqn, b[j], -1) != 0:
                raise MemoryError()
        return e

    def export(self, double scale=1.0, bint averaged=False):
        """(beta * scale, indptr, indices, data) of the SVs in slot order; averaged: BSCA's averaged
        coefficients instead of beta (the last epoch's mean iterate, see bsca_epoch)."""
        cdef int64_t n = self.s.n_sv, j, p, q = 0, total = 0
        for j in range(n):
            total += self.s.length[j]
        beta = np.empty(n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        indices = np.empty(total, dtype=np.int64)
        data = np.empty(total)
        cdef double[::1] b = beta, d = data
        cdef int64_t[::1] ip = indptr, ind = indices
        for j in range(n):
            b[j] = (self.s.beta_avg[j] if averaged else self.s.beta[j]) * scale
            for p in range(self.s.start[j], self.s.start[j] + self.s.length[j]):
                ind[q] = self.s.pool_ind[p]
                d[q] = self.s.pool_val[p]
                q += 1
            ip[j + 1] = q
        return beta, indptr, indices, data

    def decision_values(self, indptr, indices, data, double scale=1.0):
        """scale * f~(x_i) for every row of a CSR block (any columns: unseen ones count in ||x||)."""
        cdef const int64_t[::1] ip = indptr
        cdef const int64_t[::1] ind = indices
        cdef const double[::1] val = data
        cdef int64_t n = ip.shape[0] - 1, i
        _check_csr(ip, ind, val, n)
        out = np.empty(n)
        cdef double[::1] f = out
        cdef double[::1] sqn = row_sqnorms(ip, ind, val)
        cdef const int64_t* pi = &ind[0] if ind.shape[0] else NULL
        cdef const double* pv = &val[0] if val.shape[0] else NULL
        with nogil:
            for i in range(n):
                f[i] = scale * expansion_at(&self.s, pi, pv, ip[i], ip[i + 1], sqn[i])
        return out

    def quadratic(self):
        """beta^T K beta = ||w~||^2, over all pairs of SVs."""
        cdef int64_t j, l, n = self.s.n_sv
        cdef double total = 0.0, row
        with nogil:
            for j in range(n):
                scatter(&self.s, self.s.pool_ind, self.s.pool_val, self.s.start[j],
                        self.s.start[j] + self.s.length[j])
                row = 0.0
                for l in range(j + 1, n):
                    row += self.s.beta[l] * exp(-self.s.gamma * sq_distance(
                        self.s.sqnorm[j], self.s.sqnorm[l], sv_dot(&self.s, l)))
                unscatter(&self.s, self.s.pool_ind, self.s.start[j], self.s.start[j] + self.s.length[j])
                total += self.s.beta[j] * (self.s.beta[j] + 2.0 * row)
        return total

    def merge_once(self, double precision, bint table=False):
        """One budget-maintenance step (for tests): (m, partner, h, beta_z, degradation) of the
        choice, slots as before the merge, then applied. table: the precomputed search."""
        if self.s.n_sv < 2:
            raise ValueError("nothing to merge")
        if table:
            ensure_merge_table()
        cdef int64_t m = smallest_magnitude(self.s.beta, self.s.n_sv)
        cdef MergeChoice c = choose_merge(&self.s, m, self.s.beta[m], self.s.n_sv, precision, table)
        cdef double wd = 0.0
        if merge(&self.s, c, NULL, NULL, 0, 0, 0.0, NULL, &wd) != 0:
            raise MemoryError()
        return c.m, c.partner, c.h, c.beta_z, c.degradation


def _check_csr(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] data, int64_t n):
    if indptr.shape[0] != n + 1 or indptr[0] != 0 or indices.shape[0] != data.shape[0] \
            or indptr[n] > indices.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    cdef int64_t i
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("inconsistent CSR arrays")
    for i in range(indptr[n]):
        if indices[i] < 0:
            raise ValueError("negative column index")


def row_sqnorms(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] data):
    cdef int64_t n = indptr.shape[0] - 1, i, p
    out = np.zeros(n)
    cdef double[::1] s = out
    with nogil:
        for i in range(n):
            for p in range(indptr[i], indptr[i + 1]):
                s[i] += data[p] * data[p]
    return out


def merge_gain_at(double share, double gd2, double h):
    """g(h) of the merge objective (for tests)."""
    return merge_gain(share, gd2, h)


def table_search(double share, double gd2):
    """(h, g(h), W) as the precomputed search finds them for one pair (for tests): W is the
    interpolated normalised degradation the candidates are ranked by."""
    ensure_merge_table()
    cdef double gain, kappa = exp(-gd2)
    cdef double h = table_h(share, gd2, kappa, &gain)
    return h, gain, table_degradation(share, kappa)


def set_candidate_pruning(bint on):
    """Turn the merge's candidate pruning (KAPPA_BOUND) off or on again, for tests: without it
    every candidate is interpolated, the reference the pruned ranking must match bit for bit."""
    global prune_candidates
    prune_candidates = on


def set_incoming_merge(bint on):
    """Turn place's fast path off or on again, for tests: without it a new SV is stored even when
    it is the one merged at once, the reference the fast path must match bit for bit."""
    global merge_incoming
    merge_incoming = on


def kappa_bound(double kappa):
    """KAPPA_BOUND of kappa's column (for tests): a lower bound of W~(s, kappa) / s^2, s in (0, 1/2]."""
    ensure_merge_table()
    cdef int a, b
    cdef double fa, fb
    table_cell(0.0, kappa, &a, &b, &fa, &fb)
    return KAPPA_BOUND[b]


def golden_search(double share, double gd2, double precision):
    """(h, g(h)) as the merge finds them (for tests)."""
    cdef double gain
    cdef double h = golden_h(share, gd2, exp(-gd2), precision, &gain)
    return h, gain


cdef int64_t STATUS_OK = 0, STATUS_NOMEM = -1
cdef int32_t MAX_REST = 8   # the longest rest of a shrunk example, in epochs


cdef int64_t place(Store* s, const int64_t* pi, const double* pv, int64_t start, int64_t end,
                   double sqn, double coef, double avg_coef, int64_t i, int64_t* slot_of,
                   bint row_known, int64_t budget, double precision, bint merge_table,
                   int64_t* merges, double* degradation) noexcept nogil:
    """Add coef phi(x_i) to the model (BSCA's and BSGD's step alike), and avg_coef phi(x_i) to the
    averaged coefficients: to x_i's own support vector while it has one, else as a new one, merging
    two when over the budget. row_known: the kernel row of the margin just computed is x_i's
    against the others (a merge may reuse it). An SV whose beta returns to exactly 0 leaves (its
    averaged coefficient with it: the iterates' path is the same with and without averaging)."""
    cdef int64_t j = slot_of[i], l, near
    if j >= 0:
        s.beta[j] += coef
        s.beta_avg[j] += avg_coef
        if s.beta[j] == 0.0:
            if s.beta_avg[j] != 0.0 and row_known and s.n_sv > 1:
                # x_i leaves the iterate but not the average: its averaged coefficient goes to the
                # SV nearest to x_i, projected (avg k(x_i, x~_l)); the margin's kernel row has them
                near = 0 if j != 0 else 1
                for l in range(s.n_sv):
                    if l != j and s.row_kappa[l] > s.row_kappa[near]:
                        near = l
                s.beta_avg[near] += s.beta_avg[j] * s.row_kappa[near]
            remove_sv(s, j, slot_of)
        return STATUS_OK
    cdef int64_t m = -1, top = -1
    cdef MergeChoice c
    if s.n_sv >= budget:   # x_i's SV takes the model over the budget: the smallest |beta| merges
        if row_known and merge_incoming:
            m = scan_for_merge(s, coef, &top)
        else:
            m = smallest_magnitude(s.beta, s.n_sv)
        if fabs(coef) < fabs(s.beta[m]):   # x_i's own (on a tie the stored SV's lower slot wins)
            if row_known and merge_incoming:
                # its partner comes from the margin's kernel row and z is written without storing
                # x_i first: the same choice, slots and model as storing it and then merging
                c = choose_merge(s, s.n_sv, coef, s.n_sv, precision, merge_table, top)
                if merge(s, c, pi, pv, start, end, avg_coef, slot_of, degradation) != 0:
                    return STATUS_NOMEM
                merges[0] += 1
                return STATUS_OK
            m = s.n_sv   # the slot x_i is about to take
    if add_sv(s, pi, pv, start, end, sqn, coef, i) != 0:
        return STATUS_NOMEM
    s.beta_avg[s.n_sv - 1] = avg_coef
    slot_of[i] = s.n_sv - 1
    if row_known:
        s.row_of = s.n_sv - 1
    if s.n_sv > budget:
        c = choose_merge(s, m, s.beta[m], s.n_sv, precision, merge_table)
        if merge(s, c, NULL, NULL, 0, 0, 0.0, slot_of, degradation) != 0:
            return STATUS_NOMEM
        merges[0] += 1
    return STATUS_OK


def bsca_epoch(Expansion e, const int64_t[::1] indptr, const int64_t[::1] indices,
               const double[::1] data, const double[::1] sqnorm, const double[::1] y,
               const double[::1] cost, double[::1] alpha, int64_t[::1] slot_of, int64_t[::1] perm,
               uint64_t[::1] rng, int64_t budget, double precision, bint regression, double p,
               bint merge_table=True, double[::1] alpha_avg=None, int64_t window=0,
               double step_tol=0.0, int32_t[::1] skip_left=None, int32_t[::1] skip_next=None,
               double shrink=INFINITY):
    """One BSCA epoch over a fresh permutation. Returns (merges, weight degradation, steps,
    margins computed, kernel values computed). merge_table: the precomputed merge search, else
    golden-section search to `precision`.

    Kernel values k(x, x~_j), the machine-independent cost of the epoch: a margin costs the SVs
    the model holds then; a merge costs one per same-sign candidate when its smallest SV is not
    the example whose margin was just computed (else that margin's kernel row is reused, at no
    cost). Not counted: the few exponentials of a merge's h search and of the averaged
    coefficients' projections (a fixed handful per merge, none of them a kernel row).

    Two departures from Alg. 2 as printed, both off with their defaults (step_tol 0, shrink inf):
    step_tol: a step |delta a_i| < step_tol is not taken. Against a budgeted model the margin of a
    free a_i is never exactly 1, so every visit steps, and once x_i's SV has been merged away even a
    tiny step adds an SV and forces a merge. shrink (with skip_left / skip_next, per example,
    carried across epochs): an example at a bound whose step is zero by at least `shrink` (binary:
    a_i = 0 and y_i f~ >= 1 + shrink, or a_i = C_i and y_i f~ <= 1 - shrink; regression likewise
    with the tube) is not visited -- its margin not computed -- for its next skip_next[i] epochs,
    which doubles (up to MAX_REST) each time it is found so again and restarts at 1 otherwise
    (LIBLINEAR's shrinking, with a back-off instead of a final unshrinking pass, there being no
    stopping rule; every example is still visited at least every MAX_REST + 1 epochs).

    alpha_avg (optional): receives the mean of the iterates of the epoch's last `window` steps
    (all n when window is 0 or above n), a_bar = (1/W) sum_{s > n-W} a^(s), a^(s) the coefficients
    after step s (Shalev-Shwartz & Zhang 2013, SDCA's averaging output with T0 = n - W). Step s
    changes the iterates s..n, so it enters a_bar with the weight (n - s + 1) / W; the store's
    averaged coefficients (export(averaged=True)) get the same weighted updates on the same points,
    so the averaged model w(a_bar) costs no extra kernel row. A merge replaces their pair by its
    projection on phi(z) (z chosen for beta); an SV whose beta returns to 0 hands its averaged
    coefficient, projected, to the SV nearest to it. The iterates themselves, and so the next
    epoch, are those of plain BSCA."""
    cdef int64_t n = indptr.shape[0] - 1
    _check_epoch(e, indptr, indices, data, n, sqnorm, y, cost, alpha, slot_of, perm, rng, budget, precision)
    cdef bint average = alpha_avg is not None
    if average and alpha_avg.shape[0] != n:
        raise ValueError("alpha_avg needs one entry per row")
    cdef bint shrinking = shrink < INFINITY
    if shrinking and (skip_left is None or skip_next is None or skip_left.shape[0] != n
                      or skip_next.shape[0] != n):
        raise ValueError("shrinking needs skip_left and skip_next, one entry per row")
    if not step_tol >= 0.0 or not shrink >= 0.0:
        raise ValueError("step_tol and shrink must be >= 0")
    cdef Store* s = &e.s
    s.track_avg = average
    cdef int64_t t, i, merges = 0, steps = 0, margins = 0, status = STATUS_OK
    cdef int64_t kernel_values = 0, fresh_before = s.fresh_kernels
    cdef double room
    cdef double f, a, v, delta, coef, weight = 0.0, degradation = 0.0
    cdef int64_t j
    if window <= 0 or window > n:
        window = n
    cdef int64_t avg_from = n - window
    cdef const int64_t* pi = &indices[0] if indices.shape[0] else NULL
    cdef const double* pv = &data[0] if data.shape[0] else NULL
    cdef int64_t* order = &perm[0] if perm.shape[0] else NULL
    with nogil:
        shuffle(order, perm.shape[0], &rng[0])
        for t in range(n):
            i = perm[t]
            if average and t == avg_from:   # the averaging window opens: the mean starts here
                for j in range(s.n_sv):
                    s.beta_avg[j] = s.beta[j]
                for j in range(n):
                    alpha_avg[j] = alpha[j]
            if shrinking and skip_left[i] > 0:
                skip_left[i] -= 1
                continue
            kernel_values += s.n_sv
            f = expansion_at(s, pi, pv, indptr[i], indptr[i + 1], sqnorm[i])
            margins += 1
            if regression:   # soft threshold, then the box [-C_i, C_i]; Q_ii = 1
                v = alpha[i] + (y[i] - f)
                a = v - p if v > p else (v + p if v < -p else 0.0)
                a = cost[i] if a > cost[i] else (-cost[i] if a < -cost[i] else a)
                delta = a - alpha[i]
                coef = delta
                # how far inside its zero-step region a_i is: the tube at 0, the side at +-C
                if alpha[i] == 0.0:
                    room = p - fabs(y[i] - f)
                elif alpha[i] == cost[i]:
                    room = (y[i] - f) - p
                elif alpha[i] == -cost[i]:
                    room = (f - y[i]) - p
                else:
                    room = -1.0
            else:            # truncated Newton step, the box [0, C_i]
                a = alpha[i] + (1.0 - y[i] * f)
                a = cost[i] if a > cost[i] else (0.0 if a < 0.0 else a)
                delta = a - alpha[i]
                coef = delta * y[i]
                if alpha[i] == 0.0:
                    room = y[i] * f - 1.0
                elif alpha[i] == cost[i]:
                    room = 1.0 - y[i] * f
                else:
                    room = -1.0
            if shrinking:
                if room >= shrink:   # at a bound, well inside: rest for the next skip_next[i] epochs
                    skip_left[i] = skip_next[i]
                    skip_next[i] = 2 * skip_next[i] if 2 * skip_next[i] <= MAX_REST else MAX_REST
                else:
                    skip_next[i] = 1
            if delta == 0.0 or fabs(delta) < step_tol:
                continue
            steps += 1
            alpha[i] = a
            if average and t >= avg_from:   # step t + 1 of n
                weight = (n - t) / <double> window
                alpha_avg[i] += weight * delta
            else:
                weight = 0.0
            status = place(s, pi, pv, indptr[i], indptr[i + 1], sqnorm[i], coef, weight * coef, i,
                           &slot_of[0], True, budget, precision, merge_table, &merges, &degradation)
            if status == STATUS_NOMEM:
                break
    if status == STATUS_NOMEM:
        raise MemoryError("out of memory for the support vectors")
    kernel_values += s.fresh_kernels - fresh_before
    return merges, degradation, steps, margins, kernel_values


def bsgd_epoch(Expansion e, const int64_t[::1] indptr, const int64_t[::1] indices,
               const double[::1] data, const double[::1] sqnorm, const double[::1] y,
               const double[::1] cost, double[::1] count, int64_t[::1] slot_of, int64_t[::1] perm,
               uint64_t[::1] rng, int64_t[::1] clock, int64_t budget, double precision,
               bint regression, double p, bint merge_table=True):
    """One BSGD epoch. The store holds S = sum of n C_i y_i phi(x_i) over violations, the model is
    S / (steps so far); clock[0] counts the steps. count[i] += 1 (regression: the sign) per
    violation of i. Returns (merges, weight degradation of S, violations, kernel values computed:
    counted as bsca_epoch counts them)."""
    cdef int64_t n = indptr.shape[0] - 1
    _check_epoch(e, indptr, indices, data, n, sqnorm, y, cost, count, slot_of, perm, rng, budget, precision)
    if clock.shape[0] != 1 or clock[0] < 0:
        raise ValueError("clock must be one non-negative counter")
    cdef Store* s = &e.s
    s.track_avg = False
    cdef int64_t t, i, merges = 0, violations = 0, status = STATUS_OK
    cdef int64_t kernel_values = 0, fresh_before = s.fresh_kernels
    cdef double f, coef, degradation = 0.0
    cdef const int64_t* pi = &indices[0] if indices.shape[0] else NULL
    cdef const double* pv = &data[0] if data.shape[0] else NULL
    cdef int64_t* order = &perm[0] if perm.shape[0] else NULL
    with nogil:
        shuffle(order, perm.shape[0], &rng[0])
        for t in range(n):
            i = perm[t]
            clock[0] += 1
            f = 0.0
            if clock[0] >= 2:
                kernel_values += s.n_sv
                f = expansion_at(s, pi, pv, indptr[i], indptr[i + 1], sqnorm[i]) / (clock[0] - 1)
            if regression:
                if y[i] - f > p:
                    coef = n * cost[i]
                elif f - y[i] > p:
                    coef = -n * cost[i]
                else:
                    continue
            elif y[i] * f < 1.0:
                coef = n * cost[i] * y[i]
            else:
                continue
            violations += 1
            count[i] += 1.0 if coef > 0.0 or not regression else -1.0
            # (the first step computed no margin, so no kernel row of x_i)
            status = place(s, pi, pv, indptr[i], indptr[i + 1], sqnorm[i], coef, 0.0, i, &slot_of[0],
                           clock[0] >= 2, budget, precision, merge_table, &merges, &degradation)
            if status == STATUS_NOMEM:
                break
    if status == STATUS_NOMEM:
        raise MemoryError("out of memory for the support vectors")
    kernel_values += s.fresh_kernels - fresh_before
    return merges, degradation, violations, kernel_values


cdef _check_epoch(Expansion e, const int64_t[::1] indptr, const int64_t[::1] indices,
                  const double[::1] data, int64_t n, const double[::1] sqnorm, const double[::1] y,
                  const double[::1] cost, double[::1] alpha, int64_t[::1] slot_of, int64_t[::1] perm,
                  uint64_t[::1] rng, int64_t budget, double precision):
    """The kernel boundary: everything the unchecked loops rely on."""
    _check_csr(indptr, indices, data, n)
    if sqnorm.shape[0] != n or y.shape[0] != n or cost.shape[0] != n or alpha.shape[0] != n:
            raise ValueError("per-example arrays must have one entry per row")
    if slot_of.shape[0] != n or perm.shape[0] != n or rng.shape[0] != 1:
        raise ValueError("slot_of and perm need one entry per row, rng one state")
    if not 1 <= budget < e.s.cap_sv:
        raise ValueError("the budget must be below the expansion's capacity")
    if not 0 < precision < 1:
        raise ValueError("merge precision must be in (0, 1)")
    ensure_merge_table()   # cheap once built; the loops may read it
    cdef int64_t i
    for i in range(indptr[n]):
        if indices[i] >= e.s.n_cols:
            raise ValueError("a column beyond the expansion's n_cols")
    seen_array = np.zeros(n, dtype=np.uint8)
    cdef unsigned char[::1] seen = seen_array
    for i in range(n):
        if not 0 <= perm[i] < n or seen[perm[i]]:
            raise ValueError("perm is not a permutation")
        seen[perm[i]] = 1
        if not -1 <= slot_of[i] < e.s.n_sv:
            raise ValueError("slot_of out of range")


def kernel_quadratic(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] data,
                     const int64_t[::1] rows, const double[:, ::1] coef, int64_t n_cols, double gamma):
    """For every column k of coef: sum_ab coef[a,k] coef[b,k] k(x_rows[a], x_rows[b]), with the
    exact kernel over all pairs (O(m^2) kernel evaluations for m rows, shared by the K columns).
    This is a^T Q a of the dual: the bound D(a) must use the true kernel, not the expansion."""
    cdef int64_t n = indptr.shape[0] - 1, m = rows.shape[0], K = coef.shape[1], a, b, k, p, r
    _check_csr(indptr, indices, data, n)
    if coef.shape[0] != m:
        raise ValueError("coef needs one row per selected example")
    for a in range(m):
        if not 0 <= rows[a] < n:
            raise ValueError("row index out of range")
    for p in range(indptr[n]):
        if indices[p] >= n_cols:
            raise ValueError("a column beyond n_cols")
    out = np.zeros(K)
    cdef double[::1] total = out
    cdef double[::1] sqn = row_sqnorms(indptr, indices, data)
    cdef double* work = <double*> calloc(n_cols + 1, sizeof(double))
    cdef double* row = <double*> calloc(K + 1, sizeof(double))
    cdef double d, kab
    if work == NULL or row == NULL:
        free(work)
        free(row)
        raise MemoryError()
    with nogil:
        for a in range(m):
            r = rows[a]
            for p in range(indptr[r], indptr[r + 1]):
                work[indices[p]] = data[p]
            for k in range(K):
                row[k] = 0.0
            for b in range(a + 1, m):
                d = 0.0
                for p in range(indptr[rows[b]], indptr[rows[b] + 1]):
                    d += work[indices[p]] * data[p]
                kab = exp(-gamma * sq_distance(sqn[r], sqn[rows[b]], d))
                for k in range(K):
                    row[k] += kab * coef[b, k]
            for p in range(indptr[r], indptr[r + 1]):
                work[indices[p]] = 0.0
            for k in range(K):   # the diagonal k(x, x) = 1, then both halves of the pairs
                total[k] += coef[a, k] * (coef[a, k] + 2.0 * row[k])
    free(work)
    free(row)
    return out
