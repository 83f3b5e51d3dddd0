"""Separation oracles and inference for the structured tasks: multiclass, HMM sequence tagging, ranking.

The tasks layer turns an example into constraints of the one QP (DESIGN.md); what it needs from here is
the worst offender of each example (loss-augmented inference, Joachims et al. 2009 sec. 2, eq. 1-2),
prediction, and the counts that make a constraint x_ij = psi(x_i, y_i) - psi(x_i, y) cheap to build:

    margin rescaling:  value_i = max_y  Delta(y_i, y) - (w.psi(x_i, y_i) - w.psi(x_i, y))         (OP2)
    slack rescaling:   value_i = max_y  Delta(y_i, y) * (1 - (w.psi(x_i, y_i) - w.psi(x_i, y)))   (OP3)

y = y_i gives 0 in both, so value_i >= 0 and value_i is the example's slack (its hinge term in P(w)).

Weights (shared with the tasks layer): class/tag block k is w[k*width : (k+1)*width] with
width = n_cols + has_bias; its bias weight is w[k*width + n_cols], the bias feature value is `bias`.
Sequence models append the transitions T = w[K*width:] viewed as a (K+1) x K matrix: T[p, c] scores
tag c after tag p, row K is START (T[K, c] scores a sentence starting with c).

Every function validates its arguments once, here at the edge (dtypes, shapes, pointer arrays, label
ranges, finiteness where a non-finite value would break an ordering), raising ValueError with the
argument's name; the loops below trust their input and run without the GIL.
"""

from collections import namedtuple

import numpy as np
cimport cython
cimport numpy as cnp
from libc.math cimport INFINITY, exp2, log2
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport qsort

from _sparse cimport column_t, value_t
from _viterbi cimport _argmax_next, _backward, _decode

cnp.import_array()



# ---------------------------------------------------------------------------------------------------
# Validation at the edge
# ---------------------------------------------------------------------------------------------------

def _array(x, dtype, ndim, name):
    """x as a C-contiguous array of `dtype` (safe casts only) with `ndim` dimensions, or ValueError."""
    try:
        a = np.asarray(x)
    except Exception as exc:  # e.g. ragged lists
        raise ValueError(f"{name}: not an array ({exc})") from None
    if not np.can_cast(a.dtype, dtype, casting="safe"):
        raise ValueError(f"{name} must hold {np.dtype(dtype).name} values, got {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=dtype)


@cython.wraparound(True)
@cython.boundscheck(True)
def _pointers(x, total, name, what):
    """An int64 pointer array: starts at 0, non-decreasing, ends at `total`."""
    p = _array(x, np.int64, 1, name)
    if p.shape[0] < 1:
        raise ValueError(f"{name} is empty (it needs n_{what} + 1 entries, starting at 0)")
    if p[0] != 0:
        raise ValueError(f"{name}[0] must be 0, got {p[0]}")
    if p.shape[0] > 1 and np.any(p[1:] < p[:-1]):
        bad = int(np.flatnonzero(p[1:] < p[:-1])[0])
        raise ValueError(f"{name} decreases between entries {bad} and {bad + 1} ({p[bad]} > {p[bad + 1]})")
    if p[-1] != total:
        raise ValueError(f"{name}[-1] = {p[-1]} but there are {total} rows")
    return p


@cython.wraparound(True)
@cython.boundscheck(True)
def _csr_pointers(x, nnz):
    """CSR row pointers: non-decreasing, within [0, nnz] (a block may start past 0)."""
    p = _array(x, np.int64, 1, "indptr")
    if p.shape[0] < 1:
        raise ValueError("indptr is empty (it needs n_rows + 1 entries)")
    if p.shape[0] > 1 and np.any(p[1:] < p[:-1]):
        bad = int(np.flatnonzero(p[1:] < p[:-1])[0])
        raise ValueError(f"indptr decreases between entries {bad} and {bad + 1} ({p[bad]} > {p[bad + 1]})")
    if p[0] < 0 or p[-1] > nnz:
        raise ValueError(f"indptr spans [{p[0]}, {p[-1]}), outside the {nnz} stored nonzeros")
    return p


def _labels(y, n, K, name):
    a = _array(y, np.int64, 1, name)
    if a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} entries, expected {n}")
    if n and (a.min() < 0 or a.max() >= K):
        bad = int(np.flatnonzero((a < 0) | (a >= K))[0])
        raise ValueError(f"{name}[{bad}] = {a[bad]} is not a label in [0, {K})")
    return a


def _finite(a, name):
    if a.size and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{name} has a non-finite value at {tuple(int(i) for i in bad)}")


def _choice(v, allowed, name):
    if v not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {v!r}")
    return int(v)


# ---------------------------------------------------------------------------------------------------
# 1. Block scores: S[i, k] = w_k . x_i (+ w_k[n_cols] * bias)
# ---------------------------------------------------------------------------------------------------

def block_scores(indptr, indices, data, w, int64_t n_cols, int64_t K, double bias=0.0, bint has_bias=False,
                 bint feature_major=False):
    """S (n, K) float64 with S[i, k] = w_k . x_i (+ bias weight of block k * bias).

    Class-major w (the default): w_k is w[k * width : (k + 1) * width], its bias weight at
    k * width + n_cols. Feature-major w (feature_major): the K weights of column j are
    w[j * K : j * K + K], the bias weights w[n_cols * K : n_cols * K + K]; one pass over a row reads
    them contiguously.

    CSR rows (indptr, indices int64 or int32, data float64, float32 or uint8); columns outside [0, n_cols) are
    ignored (a test file may have features the model never saw). w must hold at least K * width
    weights (a sequence model's transitions may follow).
    """
    if n_cols < 0:
        raise ValueError(f"n_cols must be >= 0, got {n_cols}")
    if K < 1:
        raise ValueError(f"K must be >= 1, got {K}")
    if isinstance(indices, np.ndarray) and indices.dtype == np.int32 and indices.ndim == 1:
        ind_a = np.ascontiguousarray(indices)       # read in place (a sequence problem's store)
    else:
        ind_a = _array(indices, np.int64, 1, "indices")
    if isinstance(data, np.ndarray) and data.dtype in (np.float32, np.uint8) and data.ndim == 1:
        dat_a = np.ascontiguousarray(data)          # read in place (a store of float32 or byte values)
    else:
        dat_a = _array(data, np.float64, 1, "data")
    if ind_a.shape[0] != dat_a.shape[0]:
        raise ValueError(f"indices has {ind_a.shape[0]} entries but data has {dat_a.shape[0]}")
    ptr_a = _csr_pointers(indptr, ind_a.shape[0])
    w_a = _array(w, np.float64, 1, "w")
    cdef int64_t width = n_cols + (1 if has_bias else 0)
    if w_a.shape[0] < K * width:
        raise ValueError(f"w has {w_a.shape[0]} weights, fewer than K * width = {K} * {width}")
    out = np.zeros((ptr_a.shape[0] - 1, K), dtype=np.float64)
    _block_scores(ptr_a, ind_a, dat_a, w_a, out, n_cols, K, width, bias, has_bias, feature_major)
    return out


def _block_scores(const int64_t[::1] ip, const column_t[::1] ind, const value_t[::1] val,
                  const double[::1] wv, double[:, ::1] S, int64_t n_cols, int64_t K,
                  int64_t width, double bias, bint has_bias, bint feature_major):
    cdef int64_t n = ip.shape[0] - 1
    cdef int64_t i, p, j, k
    cdef double v
    # weight of feature j (or the bias, j = n_cols) in class k: wv[j * sj + k * sk]
    cdef int64_t sj = K if feature_major else 1
    cdef int64_t sk = 1 if feature_major else width
    with nogil:
        for i in range(n):
            for p in range(ip[i], ip[i + 1]):
                j = ind[p]
                if 0 <= j < n_cols:
                    v = val[p]
                    for k in range(K):
                        S[i, k] += wv[j * sj + k * sk] * v
            if has_bias:
                for k in range(K):
                    S[i, k] += wv[n_cols * sj + k * sk] * bias


# ---------------------------------------------------------------------------------------------------
# 2. Multiclass (Crammer-Singer): explicit enumeration of the K classes
# ---------------------------------------------------------------------------------------------------

def multiclass_worst(S, y, loss, rescaling=0):
    """Worst offender of every example: (j_star int64[n], value float64[n], delta float64[n]).

        rescaling 0 (margin): value_i = max_j  Delta(y_i, j) - (S[i, y_i] - S[i, j])
        rescaling 1 (slack):  value_i = max_j  Delta(y_i, j) * (1 - (S[i, y_i] - S[i, j]))

    j = y_i counts as exactly 0; ties go to the smallest j (so j_star may differ from y_i at value 0).
    `loss` is the (K, K) matrix Delta(y, j): finite, >= 0, zero diagonal. delta_i = Delta(y_i, j_star).
    """
    S_a = _array(S, np.float64, 2, "S")
    cdef int64_t n = S_a.shape[0], K = S_a.shape[1]
    if K < 1:
        raise ValueError("S has no columns (K must be >= 1)")
    y_a = _labels(y, n, K, "y")
    L_a = _array(loss, np.float64, 2, "loss")
    if L_a.shape[0] != K or L_a.shape[1] != K:
        raise ValueError(f"loss has shape {L_a.shape}, expected ({K}, {K})")
    _finite(L_a, "loss")
    if np.any(L_a < 0) or np.any(np.diag(L_a) != 0):
        raise ValueError("loss must be >= 0 with a zero diagonal (Delta(y, y) = 0)")
    cdef int resc = _choice(rescaling, {0, 1}, "rescaling")

    cdef const double[:, ::1] Sv = S_a
    cdef const int64_t[::1] yv = y_a
    cdef const double[:, ::1] Lv = L_a
    j_out = np.empty(n, dtype=np.int64)
    v_out = np.empty(n, dtype=np.float64)
    d_out = np.empty(n, dtype=np.float64)
    cdef int64_t[::1] jv = j_out
    cdef double[::1] vv = v_out, dv = d_out
    cdef int64_t i, j, yi, best_j
    cdef double sy, v, best
    with nogil:
        for i in range(n):
            yi = yv[i]
            sy = Sv[i, yi]
            best = -INFINITY
            best_j = yi
            for j in range(K):
                if j == yi:
                    v = 0.0
                elif resc == 0:
                    v = Lv[yi, j] - (sy - Sv[i, j])
                else:
                    v = Lv[yi, j] * (1.0 - (sy - Sv[i, j]))
                if v > best:
                    best = v
                    best_j = j
            jv[i] = best_j
            vv[i] = best
            dv[i] = Lv[yi, best_j]
    return j_out, v_out, d_out


def multiclass_predict(S):
    """argmax_k S[i, k] for every row (ties: smallest k) as int64[n]."""
    S_a = _array(S, np.float64, 2, "S")
    if S_a.shape[1] < 1:
        raise ValueError("S has no columns (K must be >= 1)")
    cdef const double[:, ::1] Sv = S_a
    cdef int64_t n = S_a.shape[0], K = S_a.shape[1], i, k, bk
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef double b
    with nogil:
        for i in range(n):
            bk = 0
            b = Sv[i, 0]
            for k in range(1, K):
                if Sv[i, k] > b:
                    b = Sv[i, k]
                    bk = k
            o[i] = bk
    return out


# ---------------------------------------------------------------------------------------------------
# 3. Sequences: first-order HMM (SVM-hmm), Joachims et al. 2009 sec. 5, eq. 31
# ---------------------------------------------------------------------------------------------------
#
# score(y) = T[K, y_0] + E[0, y_0] + sum_{t >= 1} (T[y_{t-1}, y_t] + E[t, y_t])     (E = block scores)
#
# All dynamic programmes run BACKWARD (beta[t, k] = best score of positions t..L-1 given y_t = k) and
# decode FORWARD, taking the smallest tag among the maximisers at each step. In exact arithmetic this
# returns the lexicographically smallest optimal labelling (first token's tag smallest, then the
# second's, ...); decoding re-evaluates the very expressions the recursion maximised, so it always
# follows a path the recursion found optimal. Scores and values returned are re-computed from the
# returned labelling by `_path_score` (one summation order everywhere), so score(y_true) and
# score(y_hat) are comparable to the last bit and y_hat == y_true gives a value of exactly 0.
#
# Loss-augmented inference, for a sequence of length L (y = y_true below):
#   Hamming, margin:   Viterbi on E[t, k] + [k != y_t]                                    O(L K^2)
#   zero-one, both:    the best labelling DIFFERENT from y_true (exactly what a 2-best Viterbi gives
#                      when the best is y_true): a second table D[t, k] = best suffix from (t, k) that
#                      differs from y_true somewhere in t..L-1; D[t, k] = beta[t, k] for k != y_t and
#                      D[t, y_t] = E[t, y_t] + max_c T[y_t, c] + D[t+1, c]. value = 1 + best - score(y)
#                      (times 1: slack and margin rescaling coincide for a 0/1 loss)    O(L K^2)
#   Hamming, slack:    beta[t, k, r] = best suffix from (t, k) with exactly r mistakes in t..L-1
#                      (r <= L - t, a triangular table), B[r] = best score with r mistakes, then
#                      value = max_r r * (1 - score(y) + B[r]) (the best y at a fixed loss r is the one
#                      of highest score)                                          O(L^2 K^2) time, O(L^2 K) memory
# When no labelling has a positive value, y_true itself is returned with value 0 and delta 0.

# _argmax_next, _backward and _decode: pyx/_viterbi.pxd (predict's numpy-free path runs them too)


cdef double _path_score(const double* E, const double* T, const int64_t* tags, int64_t L,
                        int64_t K) noexcept nogil:
    cdef double s
    cdef int64_t t
    if L == 0:
        return 0.0
    s = T[K * K + tags[0]] + E[tags[0]]
    for t in range(1, L):
        s += T[tags[t - 1] * K + tags[t]] + E[t * K + tags[t]]
    return s


cdef double _zero_one_best_other(const double* E, const double* T, const int64_t* y, int64_t L,
                                 int64_t K, double* beta, double* D, int64_t* out) noexcept nogil:
    """Best labelling != y (decoded into out); returns its DP score, -inf when there is none (K = 1)."""
    cdef int64_t t, k, c
    cdef double m
    cdef bint must
    _backward(E, T, NULL, L, K, beta)
    for k in range(K):
        D[(L - 1) * K + k] = beta[(L - 1) * K + k]
    D[(L - 1) * K + y[L - 1]] = -INFINITY
    for t in range(L - 2, -1, -1):
        for k in range(K):
            D[t * K + k] = beta[t * K + k]
        _argmax_next(T, D + (t + 1) * K, y[t], K, &m)
        D[t * K + y[t]] = E[t * K + y[t]] + m
    k = _argmax_next(T, D, K, K, &m)
    if m == -INFINITY:
        return m
    out[0] = k
    must = k == y[0]
    for t in range(1, L):
        c = _argmax_next(T, (D if must else beta) + t * K, out[t - 1], K, &m)
        out[t] = c
        if c != y[t]:
            must = False
    return m


cdef double _hamming_slack(const double* E, const double* T, const int64_t* y, int64_t L, int64_t K,
                           double score_true, double* beta, int64_t* out) noexcept nogil:
    """Slack-rescaled Hamming worst offender (decoded into out); returns its DP value (<= 0: none)."""
    # beta[t, r, k] at ((base(t) + r) * K + k), base(t) = sum_{s<t} (L - s + 1), r in 0..L-t.
    cdef int64_t t, k, c, r, rp, mis, base_t, base_n, best_r
    cdef double m, v, best
    base_t = (L - 1) * (L + 1) - (L - 1) * (L - 2) // 2
    for r in range(2):
        for k in range(K):
            beta[(base_t + r) * K + k] = E[(L - 1) * K + k] if r == (k != y[L - 1]) else -INFINITY
    for t in range(L - 2, -1, -1):
        base_n = base_t
        base_t = t * (L + 1) - t * (t - 1) // 2
        for k in range(K):
            mis = k != y[t]
            for r in range(L - t + 1):
                rp = r - mis
                if rp < 0 or rp > L - t - 1:
                    beta[(base_t + r) * K + k] = -INFINITY
                else:
                    _argmax_next(T, beta + (base_n + rp) * K, k, K, &m)
                    beta[(base_t + r) * K + k] = E[t * K + k] + m
    # base_t == 0 now: B[r] = max_k T[K, k] + beta[0, r, k]
    best = 0.0
    best_r = 0
    for r in range(1, L + 1):
        _argmax_next(T, beta + r * K, K, K, &m)
        if m == -INFINITY:
            continue
        v = r * (1.0 - (score_true - m))
        if v > best:
            best = v
            best_r = r
    if best_r == 0:
        return 0.0
    r = best_r
    out[0] = _argmax_next(T, beta + r * K, K, K, &m)
    r -= out[0] != y[0]
    for t in range(1, L):
        base_t = t * (L + 1) - t * (t - 1) // 2
        c = _argmax_next(T, beta + (base_t + r) * K, out[t - 1], K, &m)
        out[t] = c
        r -= c != y[t]
    return best


def _seq_inputs(E, T, seq_ptr):
    E_a = _array(E, np.float64, 2, "E")
    cdef int64_t K = E_a.shape[1]
    if K < 1:
        raise ValueError("E has no columns (K must be >= 1)")
    T_a = _array(T, np.float64, 2, "T")
    if T_a.shape[0] != K + 1 or T_a.shape[1] != K:
        raise ValueError(f"T has shape {T_a.shape}, expected (K + 1, K) = ({K + 1}, {K}) (row K is START)")
    _finite(E_a, "E")
    _finite(T_a, "T")
    ptr = _pointers(seq_ptr, E_a.shape[0], "seq_ptr", "sequences")
    max_len = int(np.max(np.diff(ptr))) if ptr.shape[0] > 1 else 0
    return E_a, T_a, ptr, max_len


def viterbi(E, T, seq_ptr):
    """Best labelling of every sequence: (tags int64[n_tokens], score float64[n_seq]).

    E (n_tokens, K) emission scores (block_scores of the token rows), T (K+1, K) transitions (row K is
    START), seq_ptr int64[n_seq + 1] (sequence s is rows seq_ptr[s]:seq_ptr[s+1]; empty ones score 0).
    Ties: the lexicographically smallest optimal labelling.
    """
    E_a, T_a, ptr, max_len = _seq_inputs(E, T, seq_ptr)
    cdef const double[:, ::1] Ev = E_a
    cdef const double[:, ::1] Tv = T_a
    cdef const int64_t[::1] sp = ptr
    cdef int64_t K = E_a.shape[1], n_seq = ptr.shape[0] - 1, s, a, L
    tags = np.zeros(E_a.shape[0], dtype=np.int64)
    score = np.zeros(n_seq, dtype=np.float64)
    beta_a = np.empty(max(max_len, 1) * K, dtype=np.float64)
    cdef int64_t[::1] tg = tags
    cdef double[::1] sc = score, beta = beta_a
    if E_a.shape[0] == 0:
        return tags, score
    with nogil:
        for s in range(n_seq):
            a = sp[s]
            L = sp[s + 1] - a
            if L == 0:
                continue
            _backward(&Ev[a, 0], &Tv[0, 0], NULL, L, K, &beta[0])
            _decode(&Tv[0, 0], &beta[0], L, K, &tg[a])
            sc[s] = _path_score(&Ev[a, 0], &Tv[0, 0], &tg[a], L, K)
    return tags, score


def path_scores(E, T, seq_ptr, tags):
    """score(y) of given labellings, float64[n_seq] (the summation order every oracle here uses)."""
    E_a, T_a, ptr, _ = _seq_inputs(E, T, seq_ptr)
    t_a = _labels(tags, E_a.shape[0], E_a.shape[1], "tags")
    cdef const double[:, ::1] Ev = E_a
    cdef const double[:, ::1] Tv = T_a
    cdef const int64_t[::1] sp = ptr
    cdef const int64_t[::1] tg = t_a
    cdef int64_t K = E_a.shape[1], n_seq = ptr.shape[0] - 1, s, a
    out = np.zeros(n_seq, dtype=np.float64)
    cdef double[::1] o = out
    if E_a.shape[0] == 0:
        return out
    with nogil:
        for s in range(n_seq):
            a = sp[s]
            if sp[s + 1] > a:
                o[s] = _path_score(&Ev[a, 0], &Tv[0, 0], &tg[a], sp[s + 1] - a, K)
    return out


def viterbi_loss_augmented(E, T, seq_ptr, y_true, loss_kind=0, rescaling=0):
    """Worst offender of every sequence: (tags int64[n_tokens], value float64[n_seq], delta float64[n_seq]).

    loss_kind 0 = Hamming (number of differing tokens), 1 = zero-one; rescaling 0 = margin, 1 = slack:

        margin: value = max_y Delta(y_true, y) + score(y) - score(y_true)
        slack:  value = max_y Delta(y_true, y) * (1 - (score(y_true) - score(y)))

    Exact for all four combinations (see the comment above `_argmax_next`). value is re-computed from
    the returned labelling; when it is not positive, y_true is returned with value 0 and delta 0.
    Slack + Hamming takes O(L^2 K) memory for the longest sequence L of the batch.
    """
    E_a, T_a, ptr, max_len = _seq_inputs(E, T, seq_ptr)
    cdef int64_t K = E_a.shape[1]
    y_a = _labels(y_true, E_a.shape[0], K, "y_true")
    cdef int kind = _choice(loss_kind, {0, 1}, "loss_kind")
    cdef int resc = _choice(rescaling, {0, 1}, "rescaling")
    cdef int64_t Lm = max(max_len, 1)
    if kind == 0 and resc == 1:
        beta_a = np.empty((Lm * (Lm + 1) // 2 + Lm) * K, dtype=np.float64)
    else:
        beta_a = np.empty(Lm * K, dtype=np.float64)
    D_a = np.empty(Lm * K if kind == 1 else 1, dtype=np.float64)

    cdef const double[:, ::1] Ev = E_a
    cdef const double[:, ::1] Tv = T_a
    cdef const int64_t[::1] sp = ptr
    cdef const int64_t[::1] yv = y_a
    cdef int64_t n_seq = ptr.shape[0] - 1, s, a, L, t
    tags = y_a.copy()
    value = np.zeros(n_seq, dtype=np.float64)
    delta = np.zeros(n_seq, dtype=np.float64)
    cdef int64_t[::1] tg = tags
    cdef double[::1] vv = value, dv = delta, beta = beta_a, D = D_a
    cdef double s_true, s_hat, dp, d, v
    if E_a.shape[0] == 0:
        return tags, value, delta
    with nogil:
        for s in range(n_seq):
            a = sp[s]
            L = sp[s + 1] - a
            if L == 0:
                continue
            s_true = _path_score(&Ev[a, 0], &Tv[0, 0], &yv[a], L, K)
            if kind == 0 and resc == 0:
                _backward(&Ev[a, 0], &Tv[0, 0], &yv[a], L, K, &beta[0])
                _decode(&Tv[0, 0], &beta[0], L, K, &tg[a])
                dp = 1.0
            elif kind == 1:
                dp = _zero_one_best_other(&Ev[a, 0], &Tv[0, 0], &yv[a], L, K, &beta[0], &D[0], &tg[a])
            else:
                dp = _hamming_slack(&Ev[a, 0], &Tv[0, 0], &yv[a], L, K, s_true, &beta[0], &tg[a])
            v = 0.0
            d = 0.0
            if dp > -INFINITY:
                for t in range(a, a + L):
                    if tg[t] != yv[t]:
                        d += 1.0
                if kind == 1 and d > 0.0:
                    d = 1.0
                s_hat = _path_score(&Ev[a, 0], &Tv[0, 0], &tg[a], L, K)
                if resc == 0:
                    v = d + (s_hat - s_true)
                else:
                    v = d * (1.0 - (s_true - s_hat))
            if v > 0.0:
                vv[s] = v
                dv[s] = d
            else:
                for t in range(a, a + L):
                    tg[t] = yv[t]
    return tags, value, delta


JointCounts = namedtuple("JointCounts", [
    "diff_ptr", "diff_rows", "diff_true", "diff_hat",
    "trans_ptr", "trans_prev", "trans_cur", "trans_value",
])
JointCounts.__doc__ = """psi(x, y_true) - psi(x, y_hat) of every sequence s, in CSR-like pieces.

Emissions: token rows diff_rows[diff_ptr[s]:diff_ptr[s+1]] (increasing) are the tokens where the tags
differ; row t adds +x_t to block diff_true[.] = y_true[t] and -x_t to block diff_hat[.] = y_hat[t].
Transitions: entries trans_ptr[s]:trans_ptr[s+1], sorted by (prev, cur), each a nonzero
count_true(prev -> cur) - count_hat(prev -> cur) in trans_value (float64, an exact integer), prev = K
being START: it multiplies w[K*width + prev*K + cur]. Identical sequences have no entries at all."""


cdef int _cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


def joint_counts(y_true, y_hat, seq_ptr, int64_t K):
    """The differing tokens and transition-count differences of every sequence: a `JointCounts`.

    O(n_tokens) plus a sort of each sequence's few changed transitions; nothing is O(K^2) per sequence.
    """
    if K < 1:
        raise ValueError(f"K must be >= 1, got {K}")
    yt_a = _array(y_true, np.int64, 1, "y_true")
    ptr = _pointers(seq_ptr, yt_a.shape[0], "seq_ptr", "sequences")
    yt_a = _labels(yt_a, yt_a.shape[0], K, "y_true")
    yh_a = _labels(y_hat, yt_a.shape[0], K, "y_hat")
    cdef const int64_t[::1] yt = yt_a
    cdef const int64_t[::1] yh = yh_a
    cdef const int64_t[::1] sp = ptr
    cdef int64_t n = yt_a.shape[0], n_seq = ptr.shape[0] - 1, S = (K + 1) * K
    diff_ptr = np.zeros(n_seq + 1, dtype=np.int64)
    trans_ptr = np.zeros(n_seq + 1, dtype=np.int64)
    rows_a = np.empty(n, dtype=np.int64)
    dtrue_a = np.empty(n, dtype=np.int64)
    dhat_a = np.empty(n, dtype=np.int64)
    prev_a = np.empty(2 * n, dtype=np.int64)
    cur_a = np.empty(2 * n, dtype=np.int64)
    tval_a = np.empty(2 * n, dtype=np.float64)
    touched_a = np.empty(max(2 * n, 1), dtype=np.int64)
    count_a = np.zeros(S, dtype=np.int64)    # scratch, back to all-zero after each sequence
    cdef int64_t[::1] dp_ = diff_ptr, tp = trans_ptr, rows = rows_a, dtr = dtrue_a, dha = dhat_a
    cdef int64_t[::1] prv = prev_a, cur = cur_a, touched = touched_a, count = count_a
    cdef double[::1] tval = tval_a
    cdef int64_t s, t, nd = 0, nt = 0, nto, i, e, pt, ph, last
    with nogil:
        for s in range(n_seq):
            nto = 0
            for t in range(sp[s], sp[s + 1]):
                pt = K if t == sp[s] else yt[t - 1]
                ph = K if t == sp[s] else yh[t - 1]
                if yt[t] != yh[t]:
                    rows[nd] = t
                    dtr[nd] = yt[t]
                    dha[nd] = yh[t]
                    nd += 1
                if pt != ph or yt[t] != yh[t]:
                    touched[nto] = pt * K + yt[t]
                    touched[nto + 1] = ph * K + yh[t]
                    count[pt * K + yt[t]] += 1
                    count[ph * K + yh[t]] -= 1
                    nto += 2
            if nto > 1:
                qsort(&touched[0], nto, sizeof(int64_t), _cmp_int64)
            last = -1
            for i in range(nto):
                e = touched[i]
                if e != last:
                    last = e
                    if count[e] != 0:
                        prv[nt] = e // K
                        cur[nt] = e % K
                        tval[nt] = <double>count[e]
                        nt += 1
                    count[e] = 0
            dp_[s + 1] = nd
            tp[s + 1] = nt
    return JointCounts(diff_ptr, rows_a[:nd].copy(), dtrue_a[:nd].copy(), dhat_a[:nd].copy(),
                       trans_ptr, prev_a[:nt].copy(), cur_a[:nt].copy(), tval_a[:nt].copy())


# ---------------------------------------------------------------------------------------------------
# 4. Ranking (SVM-rank): pairs inside a query, a preferred over b when target_a > target_b
# ---------------------------------------------------------------------------------------------------
#
# hinge(q) = sum_{a, b in q: t_a > t_b} max(0, 1 - (s_a - s_b)), in O(m log m) for a query of m docs
# (Joachims 2006, "Training linear SVMs in linear time", sec. 4, generalised from two relevance levels
# to any number): sort the documents by score and map targets to levels 0..n_levels-1. Sweep the
# documents a by decreasing score while a second pointer inserts every b with s_a - s_b < 1 into a
# Fenwick tree over levels holding (count, sum of s_b); a's violated pairs are then the inserted b of
# lower level: cnt_a = prefix count, and their hinge is cnt_a * (1 - s_a) + prefix sum of s_b. The
# mirror sweep (b by increasing score, inserting a with s_a - s_b < 1, suffix counts over higher
# levels) gives cnt_b, the violated pairs in which b is the less preferred document. The predicate
# fl(s_a - s_b) < 1 is monotone in each score, so both sweeps count the same pairs exactly:
# sum_a cnt_a = sum_b cnt_b, and coef = cnt_a - cnt_b is the 1-slack plane's coefficient of each
# document (sum over violated pairs of x_a - x_b = sum_i coef_i x_i). Correctly ordered pairs
# (s_a > s_b) come from one ascending sweep inserting whole groups of tied scores after querying them.
# Scores are centred on the query's median before the sums, which keeps the cancellation in
# cnt_a * (1 - s_a) + sum s_b at the scale of the query's score spread rather than its offset.

cdef struct KeyIdx:
    double key
    int64_t idx


cdef int _cmp_keyidx(const void* a, const void* b) noexcept nogil:
    cdef const KeyIdx* x = <const KeyIdx*>a
    cdef const KeyIdx* y = <const KeyIdx*>b
    if x.key < y.key:
        return -1
    if x.key > y.key:
        return 1
    return (x.idx > y.idx) - (x.idx < y.idx)


cdef inline void _fw_add(int64_t* cnt, double* sm, int64_t n, int64_t i, double v) noexcept nogil:
    i += 1
    while i <= n:
        cnt[i] += 1
        sm[i] += v
        i += i & (-i)


cdef inline int64_t _fw_count(const int64_t* cnt, int64_t i) noexcept nogil:
    """Number of inserted items of level < i."""
    cdef int64_t c = 0
    while i > 0:
        c += cnt[i]
        i -= i & (-i)
    return c


cdef inline double _fw_sum(const double* sm, int64_t i) noexcept nogil:
    cdef double s = 0.0
    while i > 0:
        s += sm[i]
        i -= i & (-i)
    return s


cdef struct QueryBuf:
    KeyIdx* by_score      # (score, local index), ascending
    KeyIdx* by_target     # (target, local index), ascending
    double* s             # centred scores, by local index
    int64_t* lev          # level of each local index
    int64_t* fw_cnt       # Fenwick tree, n_levels + 1
    double* fw_sum


cdef int64_t _load_query(const double* scores, const double* targets, const int64_t* rows, int64_t m,
                         QueryBuf* q) noexcept nogil:
    """Fill the buffers for one query; returns the number of target levels."""
    cdef int64_t i, n_lev = 0
    cdef double centre
    for i in range(m):
        q.by_score[i].key = scores[rows[i]]
        q.by_score[i].idx = i
        q.by_target[i].key = targets[rows[i]]
        q.by_target[i].idx = i
    qsort(q.by_score, m, sizeof(KeyIdx), _cmp_keyidx)
    qsort(q.by_target, m, sizeof(KeyIdx), _cmp_keyidx)
    centre = q.by_score[m // 2].key
    for i in range(m):
        q.s[i] = scores[rows[i]] - centre
    for i in range(m):
        if i > 0 and q.by_target[i].key != q.by_target[i - 1].key:
            n_lev += 1
        q.lev[q.by_target[i].idx] = n_lev
    return n_lev + 1


cdef void _rank_query(const double* scores, const double* targets, const int64_t* rows, int64_t m,
                      QueryBuf* q, bint want_coef, bint want_correct, double* coef,
                      double* hinge_out, int64_t* n_pairs_out, int64_t* n_viol_out,
                      int64_t* n_correct_out) noexcept nogil:
    cdef int64_t n_lev, i, j, g, a, b, c, lower, n_ins, n_viol = 0, n_correct = 0, n_pairs
    cdef double hinge = 0.0, h
    hinge_out[0] = 0.0
    n_pairs_out[0] = 0
    n_viol_out[0] = 0
    n_correct_out[0] = 0
    if m < 2:
        return
    n_lev = _load_query(scores, targets, rows, m, q)
    # pairs with different targets: sum over docs of the number of docs of lower level
    n_pairs = 0
    lower = 0
    i = 0
    while i < m:
        j = i
        while j < m and q.by_target[j].key == q.by_target[i].key:
            j += 1
        n_pairs += (j - i) * lower
        lower += j - i
        i = j
    n_pairs_out[0] = n_pairs
    if n_pairs == 0:
        return
    # a side: decreasing s_a, insert b while s_a - s_b < 1
    for i in range(n_lev + 1):
        q.fw_cnt[i] = 0
        q.fw_sum[i] = 0.0
    j = m - 1
    for i in range(m - 1, -1, -1):
        a = q.by_score[i].idx
        while j >= 0 and q.s[a] - q.s[q.by_score[j].idx] < 1.0:
            b = q.by_score[j].idx
            _fw_add(q.fw_cnt, q.fw_sum, n_lev, q.lev[b], q.s[b])
            j -= 1
        c = _fw_count(q.fw_cnt, q.lev[a])
        if c > 0:
            h = c * (1.0 - q.s[a]) + _fw_sum(q.fw_sum, q.lev[a])
            if h > 0.0:
                hinge += h
            n_viol += c
            if want_coef:
                coef[rows[a]] += c
    # b side: increasing s_b, insert a while s_a - s_b < 1; count inserted a of higher level
    if want_coef:
        for i in range(n_lev + 1):
            q.fw_cnt[i] = 0
        j = 0
        n_ins = 0
        for i in range(m):
            b = q.by_score[i].idx
            while j < m and q.s[q.by_score[j].idx] - q.s[b] < 1.0:
                _fw_add(q.fw_cnt, q.fw_sum, n_lev, q.lev[q.by_score[j].idx], 0.0)
                n_ins += 1
                j += 1
            coef[rows[b]] -= n_ins - _fw_count(q.fw_cnt, q.lev[b] + 1)
    # correctly ordered pairs: increasing score, query a tie group before inserting it
    if want_correct:
        for i in range(n_lev + 1):
            q.fw_cnt[i] = 0
        i = 0
        while i < m:
            g = i
            while g < m and q.by_score[g].key == q.by_score[i].key:
                n_correct += _fw_count(q.fw_cnt, q.lev[q.by_score[g].idx])
                g += 1
            for j in range(i, g):
                _fw_add(q.fw_cnt, q.fw_sum, n_lev, q.lev[q.by_score[j].idx], 0.0)
            i = g
    hinge_out[0] = hinge
    n_viol_out[0] = n_viol
    n_correct_out[0] = n_correct


def _rank_inputs(scores, targets, query_ptr, order):
    s_a = _array(scores, np.float64, 1, "scores")
    t_a = _array(targets, np.float64, 1, "targets")
    if t_a.shape[0] != s_a.shape[0]:
        raise ValueError(f"targets has {t_a.shape[0]} entries but scores has {s_a.shape[0]}")
    _finite(s_a, "scores")
    _finite(t_a, "targets")
    o_a = _array(order, np.int64, 1, "order")
    ptr = _pointers(query_ptr, o_a.shape[0], "query_ptr", "queries")
    if o_a.shape[0] and (o_a.min() < 0 or o_a.max() >= s_a.shape[0]):
        bad = int(np.flatnonzero((o_a < 0) | (o_a >= s_a.shape[0]))[0])
        raise ValueError(f"order[{bad}] = {o_a[bad]} is not a row in [0, {s_a.shape[0]})")
    max_m = int(np.max(np.diff(ptr))) if ptr.shape[0] > 1 else 0
    return s_a, t_a, ptr, o_a, max(max_m, 1)


cdef class _QueryBuffers:
    """Numpy-owned scratch for the largest query (freed with the object, even after an exception)."""
    cdef object by_score, by_target, s, lev, fw_cnt, fw_sum
    cdef QueryBuf buf

    def __cinit__(self, int64_t m):
        dt = np.dtype([("key", np.float64), ("idx", np.int64)])
        self.by_score = np.empty(m, dtype=dt)
        self.by_target = np.empty(m, dtype=dt)
        self.s = np.empty(m, dtype=np.float64)
        self.lev = np.empty(m, dtype=np.int64)
        self.fw_cnt = np.empty(m + 1, dtype=np.int64)
        self.fw_sum = np.empty(m + 1, dtype=np.float64)
        self.buf.by_score = <KeyIdx*>cnp.PyArray_DATA(self.by_score)
        self.buf.by_target = <KeyIdx*>cnp.PyArray_DATA(self.by_target)
        self.buf.s = <double*>cnp.PyArray_DATA(self.s)
        self.buf.lev = <int64_t*>cnp.PyArray_DATA(self.lev)
        self.buf.fw_cnt = <int64_t*>cnp.PyArray_DATA(self.fw_cnt)
        self.buf.fw_sum = <double*>cnp.PyArray_DATA(self.fw_sum)


def _ranking(scores, targets, query_ptr, order, bint want_coef, bint want_correct):
    s_a, t_a, ptr, o_a, max_m = _rank_inputs(scores, targets, query_ptr, order)
    cdef _QueryBuffers qb = _QueryBuffers(max_m)
    cdef int64_t nq = ptr.shape[0] - 1, qi, a
    hinge_a = np.zeros(nq, dtype=np.float64)
    pairs_a = np.zeros(nq, dtype=np.int64)
    viol_a = np.zeros(nq, dtype=np.int64)
    correct_a = np.zeros(nq, dtype=np.int64)
    coef_a = np.zeros(s_a.shape[0] if want_coef else 1, dtype=np.float64)
    cdef const double[::1] sv = s_a
    cdef const double[::1] tv = t_a
    cdef const int64_t[::1] qp = ptr
    cdef const int64_t[::1] ov = o_a
    cdef double[::1] hv = hinge_a, cv = coef_a
    cdef int64_t[::1] pv = pairs_a, vv = viol_a, nc = correct_a
    if s_a.shape[0] == 0 or o_a.shape[0] == 0:
        return hinge_a, pairs_a, viol_a, correct_a, coef_a
    with nogil:
        for qi in range(nq):
            a = qp[qi]
            _rank_query(&sv[0], &tv[0], &ov[0] + a, qp[qi + 1] - a, &qb.buf, want_coef, want_correct,
                        &cv[0], &hv[qi], &pv[qi], &vv[qi], &nc[qi])
    return hinge_a, pairs_a, viol_a, correct_a, coef_a


def ranking_pair_hinge(scores, targets, query_ptr, order):
    """Per query, sum over preference pairs (t_a > t_b) of max(0, 1 - (s_a - s_b)): float64[n_queries].

    Query q is rows order[query_ptr[q]:query_ptr[q+1]] of scores/targets (queries need not be contiguous).
    O(m log m) per query of m documents.
    """
    return _ranking(scores, targets, query_ptr, order, False, False)[0]


def ranking_pair_stats(scores, targets, query_ptr, order):
    """(hinge_sum float64[nq], n_pairs int64[nq], n_correct int64[nq]) per query.

    n_pairs counts pairs with different targets, n_correct those among them with s_a > s_b strictly
    (a tie in score is not correct): pairwise accuracy is n_correct / n_pairs.
    """
    hinge, pairs, _, correct, _ = _ranking(scores, targets, query_ptr, order, False, True)
    return hinge, pairs, correct


def ranking_pair_coefficients(scores, targets, query_ptr, order):
    """The most violated 1-slack plane of the ranking task: (coef float64[n_rows], hinge float64[nq],
    n_violated int64[nq]).

    Over the violated pairs (t_a > t_b, s_a - s_b < 1): sum (x_a - x_b) = sum_rows coef[row] * x_row
    and the plane's margin is n_violated (pairs want s_a - s_b >= 1); hinge is as ranking_pair_hinge.
    """
    hinge, _, viol, _, coef = _ranking(scores, targets, query_ptr, order, True, False)
    return coef, hinge, viol


def ndcg_at_k(scores, targets, query_ptr, order, int64_t k=10):
    """NDCG@k of every query: float64[n_queries].

    Gain 2^target - 1, discount 1 / log2(position + 2) for positions 0..k-1. Documents tied in score
    share their group's mean gain (the expected DCG over the orders of the tie, McSherry and Najork
    2008; scikit-learn's ndcg_score does the same), so a constant scorer earns no credit from the input
    order. A query whose ideal DCG is not positive (no relevant document, or no document) scores 1.0.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    s_a, t_a, ptr, o_a, max_m = _rank_inputs(scores, targets, query_ptr, order)
    cdef _QueryBuffers qb = _QueryBuffers(max_m)
    cdef QueryBuf* q = &qb.buf
    cdef int64_t nq = ptr.shape[0] - 1, qi, a, m, i, j, p, kk
    disc_a = 1.0 / np.log2(np.arange(min(k, max_m)) + 2.0)
    out = np.ones(nq, dtype=np.float64)
    cdef const double[::1] disc = disc_a
    cdef const double[::1] sv = s_a
    cdef const double[::1] tv = t_a
    cdef const int64_t[::1] qp = ptr
    cdef const int64_t[::1] ov = o_a
    cdef double[::1] o = out
    cdef double dcg, idcg, g, dsum
    if s_a.shape[0] == 0 or o_a.shape[0] == 0:
        return out
    with nogil:
        for qi in range(nq):
            a = qp[qi]
            m = qp[qi + 1] - a
            if m == 0:
                continue
            _load_query(&sv[0], &tv[0], &ov[0] + a, m, q)
            kk = k if k < m else m
            idcg = 0.0
            for p in range(kk):
                idcg += (exp2(q.by_target[m - 1 - p].key) - 1.0) * disc[p]
            if not idcg > 0.0:
                continue
            # positions 0.. in decreasing score: by_score read backwards, tie groups averaged
            dcg = 0.0
            i = 0
            while i < kk:
                j = i
                g = 0.0
                while j < m and q.by_score[m - 1 - j].key == q.by_score[m - 1 - i].key:
                    g += exp2(tv[ov[a + q.by_score[m - 1 - j].idx]]) - 1.0
                    j += 1
                dsum = 0.0
                for p in range(i, j if j < kk else kk):
                    dsum += disc[p]
                dcg += g / (j - i) * dsum
                i = j
            o[qi] = dcg / idcg
    return out


def summed_rows(indptr, indices, data, rows, coef, group_ptr, int64_t n_cols):
    """Each group's rows summed into one sparse row: (indptr, indices, data) of the sums, CSR.

        sum_g = sum_{i in group_ptr[g]:group_ptr[g+1]} coef[i] * X[rows[i]]

    over X = (indptr, indices, data), columns below n_cols only (those past it are the ones a
    model's scores ignore); entries that sum to exactly 0 are dropped, the columns of a sum come
    in increasing order. The ranking task's constraint of a query, sum over its violated pairs of
    x_a - x_b, is one such sum: a cached constraint is then one row of at most n_cols entries, not
    the query's m rows. O(nnz of the rows) with a dense accumulator of n_cols, plus a sort of each
    sum's columns.
    """
    ip = _csr_pointers(indptr, np.asarray(indices).shape[0])
    ix = _array(indices, np.int64, 1, "indices")
    dv = _array(data, np.float64, 1, "data")
    if dv.shape[0] != ix.shape[0]:
        raise ValueError(f"data has {dv.shape[0]} entries, indices {ix.shape[0]}")
    r_a = _array(rows, np.int64, 1, "rows")
    c_a = _array(coef, np.float64, 1, "coef")
    if c_a.shape[0] != r_a.shape[0]:
        raise ValueError(f"coef has {c_a.shape[0]} entries, rows {r_a.shape[0]}")
    n_rows = ip.shape[0] - 1
    if r_a.shape[0] and (r_a.min() < 0 or r_a.max() >= n_rows):
        raise ValueError(f"rows must lie in [0, {n_rows})")
    gp = _pointers(group_ptr, r_a.shape[0], "group_ptr", "groups")
    if n_cols < 0:
        raise ValueError(f"n_cols must be >= 0, got {n_cols}")
    cdef int64_t total = int((ip[r_a + 1] - ip[r_a]).sum()) if r_a.shape[0] else 0
    out_ptr_a = np.zeros(gp.shape[0], dtype=np.int64)
    out_col_a = np.empty(total, dtype=np.int64)
    out_val_a = np.empty(total, dtype=np.float64)
    acc_a = np.zeros(max(n_cols, 1), dtype=np.float64)
    mark_a = np.full(max(n_cols, 1), -1, dtype=np.int64)
    cdef const int64_t[::1] p = ip
    cdef const int64_t[::1] col = ix
    cdef const double[::1] val = dv
    cdef const int64_t[::1] rv = r_a
    cdef const double[::1] cv = c_a
    cdef const int64_t[::1] g = gp
    cdef int64_t[::1] optr = out_ptr_a
    cdef int64_t[::1] ocol = out_col_a
    cdef double[::1] oval = out_val_a
    cdef double[::1] acc = acc_a
    cdef int64_t[::1] mark = mark_a
    cdef int64_t n_groups = gp.shape[0] - 1, k, i, t, j, start, at = 0, u
    cdef double c
    with nogil:
        for k in range(n_groups):
            start = at
            for i in range(g[k], g[k + 1]):
                c = cv[i]
                for t in range(p[rv[i]], p[rv[i] + 1]):
                    j = col[t]
                    if j < 0 or j >= n_cols:
                        continue
                    if mark[j] != k:
                        mark[j] = k
                        acc[j] = 0.0
                        ocol[at] = j
                        at += 1
                    acc[j] += c * val[t]
            if at > start:
                qsort(&ocol[start], at - start, sizeof(int64_t), _cmp_int64)
            u = start
            for t in range(start, at):
                j = ocol[t]
                if acc[j] != 0.0:
                    ocol[u] = j
                    oval[u] = acc[j]
                    u += 1
            at = u
            optr[k + 1] = at
    return out_ptr_a, out_col_a[:at].copy(), out_val_a[:at].copy()
