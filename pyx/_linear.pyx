"""Linear scoring over CSR blocks: the per-nonzero work of predict, verify-bound and the primal.

    score_i = w . x_i  (+ w[bias_col] * bias when the model has a bias feature)

Columns at or beyond `n_cols` are ignored, as LIBLINEAR ignores features a model has not seen.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t

from _sparse cimport column_t, offset_t, row_t, scale_t, value_t

cnp.import_array()


def csr_scores(const int64_t[::1] indptr, const column_t[::1] indices, const double[::1] data,
               const double[::1] w, int64_t n_cols, double bias=0.0, bint has_bias=False):
    """Decision values of every row of a CSR block (its columns int64, or int32 as the n-slack
    solver leaves a one-row problem's block: svmtrain.solvers.nslack)."""
    cdef int64_t n = indptr.shape[0] - 1
    if n < 0:
        raise ValueError("indptr is empty")
    if w.shape[0] < n_cols + (1 if has_bias else 0):
        raise ValueError("w is shorter than the model's columns")
    if indptr[n] > indices.shape[0] or indices.shape[0] != data.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] scores = out
    cdef int64_t i, p, j
    cdef double s
    with nogil:
        for i in range(n):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if 0 <= j < n_cols:
                    s += w[j] * data[p]
            if has_bias:
                s += w[n_cols] * bias
            scores[i] = s
    return out


def hinge_sum(const double[::1] margin_violation, double[::1] acc):
    """acc += sum_i max(0, v_i), with Neumaier's compensation carried in acc = [sum, compensation].

    Carrying the compensation across blocks makes a streamed sum independent of the block size.
    """
    cdef int64_t i
    cdef double s = acc[0], comp = acc[1], v, t
    with nogil:
        for i in range(margin_violation.shape[0]):
            v = margin_violation[i]
            if v > 0.0:
                t = s + v
                if s >= v:
                    comp += (s - t) + v
                else:
                    comp += (v - t) + s
                s = t
    acc[0] = s
    acc[1] = comp



def term_dots(const int64_t[::1] indptr, const column_t[::1] indices, const value_t[::1] data,
              int64_t n_cols, const int64_t[::1] tptr, const row_t[::1] term_row,
              const scale_t[::1] term_scale, const offset_t[::1] term_offset, term_bias,
              const double[::1] w, double bias, bint use_bias, int64_t stride=1):
    """w . x_c for constraints given as terms (svmtrain.tasks.base.Constraints); a term's bias
    flag counts only when the model has a bias feature (use_bias). A term places column j of its
    row at w[offset + stride * j], the bias feature at w[offset + stride * n_cols]."""
    cdef int64_t m = tptr.shape[0] - 1, n_rows = indptr.shape[0] - 1
    flags = np.ascontiguousarray(term_bias, dtype=np.uint8)
    if not use_bias:
        flags = np.zeros_like(flags)
    cdef const unsigned char[::1] has_bias = flags
    cdef int64_t t, c, r, p, o
    if stride < 1:
        raise ValueError("the stride must be >= 1")
    if m < 0 or tptr[0] != 0 or tptr[m] > term_row.shape[0]:
        raise ValueError("inconsistent constraint terms")
    for t in range(tptr[m]):
        r = term_row[t]
        if r < 0 or r >= n_rows:
            raise ValueError("a term names a row outside the store")
        o = term_offset[t]
        # the columns a term touches: its row's columns, and the bias column when it has one
        if o < 0 or (indptr[r + 1] > indptr[r] and o + stride * (min(indices[indptr[r + 1] - 1] + 1, n_cols) - 1) >= w.shape[0]) \
                or (has_bias[t] and o + stride * n_cols >= w.shape[0]):
            raise ValueError("a term reaches beyond w")
    out = np.zeros(m, dtype=np.float64)
    cdef double[::1] res = out
    cdef double s, d
    with nogil:
        for c in range(m):
            s = 0.0
            for t in range(tptr[c], tptr[c + 1]):
                r = term_row[t]
                o = term_offset[t]
                d = 0.0
                for p in range(indptr[r], indptr[r + 1]):
                    if indices[p] < n_cols:
                        d = d + w[o + stride * indices[p]] * data[p]
                if has_bias[t]:
                    d = d + w[o + stride * n_cols] * bias
                s = s + term_scale[t] * d
            res[c] = s
    return out
