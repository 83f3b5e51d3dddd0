"""Linear scoring over CSR blocks: the per-nonzero work of predict, verify-bound and the primal.

    score_i = w . x_i  (+ w[bias_col] * bias when the model has a bias feature)

Columns at or beyond `n_cols` are ignored, as LIBLINEAR ignores features a model has not seen.
"""

from libc.math cimport INFINITY, fabs
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

from _sparse cimport column_t, offset_t, row_t, scale_t, value_t

from svmtrain import _numpy as np    # (numpy on first use: svmtrain/_numpy.py)


cdef inline double _score(const int64_t* indptr, const column_t* indices, const double* data,
                          const double* w, int64_t i, int64_t n_cols, double bias,
                          bint has_bias) noexcept nogil:
    """w . x_i (+ w[n_cols] * bias), columns at or beyond n_cols ignored."""
    cdef double s = 0.0
    cdef int64_t p, j
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        if 0 <= j < n_cols:
            s += w[j] * data[p]
    if has_bias:
        s += w[n_cols] * bias
    return s


cdef inline void _add_positive(double v, double* total, double* comp) noexcept nogil:
    """total += v when v > 0, with Neumaier's compensation in comp."""
    cdef double t
    if v > 0.0:
        t = total[0] + v
        if total[0] >= v:
            comp[0] += (total[0] - t) + v
        else:
            comp[0] += (v - t) + total[0]
        total[0] = t


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
    cdef int64_t i
    cdef const column_t* ind = &indices[0] if indices.shape[0] else NULL
    cdef const double* val = &data[0] if data.shape[0] else NULL
    cdef const double* wp = &w[0] if w.shape[0] else NULL
    with nogil:
        for i in range(n):
            scores[i] = _score(&indptr[0], ind, val, wp, i, n_cols, bias, has_bias)
    return out


def dot(const double[::1] a, const double[::1] b):
    """sum_j a_j b_j, added in index order: ||w||^2 of the certificate (svmtrain.objective) and
    sum l alpha of the dual, the same bits wherever they are computed (BLAS's ddot, which numpy's
    dot calls, adds in an order of its own that depends on the machine)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError("dot: the vectors differ in length")
    cdef int64_t j
    cdef double s = 0.0
    with nogil:
        for j in range(a.shape[0]):
            s += a[j] * b[j]
    return s


cdef int _score_losses(const int64_t[::1] indptr, const column_t[::1] indices,
                       const double[::1] data, const double[::1] y, const double[::1] w,
                       int64_t n_cols, double bias, bint has_bias, double C, double p, bint tube,
                       double[::1] acc) except -1:
    """acc += sum_i max(0, C v_i), s_i = w.x_i: v_i = 1 - y_i s_i (binary), or |y_i - s_i| - p
    (`tube`: regression)."""
    cdef int64_t n = indptr.shape[0] - 1, i
    cdef double total = acc[0], comp = acc[1], s
    if n < 0 or y.shape[0] != n or indptr[n] > indices.shape[0] or indices.shape[0] != data.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    if w.shape[0] < n_cols + (1 if has_bias else 0):
        raise ValueError("w is shorter than the model's columns")
    cdef const column_t* ind = &indices[0] if indices.shape[0] else NULL
    cdef const double* val = &data[0] if data.shape[0] else NULL
    cdef const double* wp = &w[0] if w.shape[0] else NULL
    with nogil:
        for i in range(n):
            s = _score(&indptr[0], ind, val, wp, i, n_cols, bias, has_bias)
            _add_positive(C * (fabs(y[i] - s) - p if tube else 1.0 - y[i] * s), &total, &comp)
    acc[0] = total
    acc[1] = comp
    return 0


cdef int _losses(indptr, indices, data, y, w, int64_t n_cols, double bias, bint has_bias,
                 double C, double p, bint tube, acc) except -1:
    """_score_losses on the columns as they are, int32 or int64."""
    cdef const int32_t[::1] narrow
    cdef const int64_t[::1] wide
    if memoryview(indices).format == "i":
        narrow = indices
        _score_losses[int32_t](indptr, narrow, data, y, w, n_cols, bias, has_bias, C, p, tube, acc)
    else:
        wide = indices
        _score_losses[int64_t](indptr, wide, data, y, w, n_cols, bias, has_bias, C, p, tube, acc)
    return 0


def binary_hinge_sum(indptr, indices, data, y, w, int64_t n_cols, double bias, bint has_bias,
                     double C, acc):
    """hinge_sum of C (1 - y_i w.x_i) over the rows of a CSR block (y_i = +1 / -1): the loss of
    the binary task's certificate as objective.PrimalAccumulator sums it (Binary.violations:
    1 - y * csr_scores, times the costs, then hinge_sum), the same operations in the same order,
    for `train`'s lean path, which has no numpy arrays to do it with. Buffers: indptr int64,
    indices int32 or int64, data, y, w and acc = [sum, compensation] float64."""
    _losses(indptr, indices, data, y, w, n_cols, bias, has_bias, C, 0.0, False, acc)


def tube_loss_sum(indptr, indices, data, y, w, int64_t n_cols, double bias, bint has_bias,
                  double C, double p, acc):
    """hinge_sum of C (|y_i - w.x_i| - p): the regression task's certificate as
    objective.PrimalAccumulator sums it (Regression.violations: abs(target - csr_scores) - p,
    times the costs, then hinge_sum), for `train`'s lean path; buffers as binary_hinge_sum's."""
    _losses(indptr, indices, data, y, w, n_cols, bias, has_bias, C, p, True, acc)


def tube_margins(const double[::1] target, double p):
    """Regression.all_constraints' margins, example by example y_i - p then -y_i - p, as a
    buffer of doubles (the dual's sum l alpha on the lean path)."""
    from svmtrain._reader import zeros
    out = zeros(2 * target.shape[0])
    cdef double[::1] m = out
    cdef Py_ssize_t i
    for i in range(target.shape[0]):
        m[2 * i] = target[i] - p
        m[2 * i + 1] = -target[i] - p
    return out


cdef int _multiclass_hinge(const int64_t[::1] indptr, const column_t[::1] indices,
                           const double[::1] data, const int64_t[::1] y, const double[::1] w,
                           int64_t n_cols, int64_t K, double bias, bint has_bias, double C,
                           double[::1] acc) except -1:
    cdef int64_t n = indptr.shape[0] - 1, i, p, j, k
    cdef double total = acc[0], comp = acc[1], v, best, sy
    cdef double* S
    if n < 0 or y.shape[0] != n or indptr[n] > indices.shape[0] or indices.shape[0] != data.shape[0]:
        raise ValueError("inconsistent CSR arrays")
    if K < 1 or w.shape[0] < K * (n_cols + (1 if has_bias else 0)):
        raise ValueError("w is shorter than the model's K x width weights")
    for i in range(n):
        if y[i] < 0 or y[i] >= K:
            raise ValueError("a class index is outside [0, K)")
    S = <double*> malloc(K * sizeof(double))
    if S == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            for k in range(K):
                S[k] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if 0 <= j < n_cols:
                    v = data[p]
                    for k in range(K):
                        S[k] += w[j * K + k] * v
            if has_bias:
                for k in range(K):
                    S[k] += w[n_cols * K + k] * bias
            sy = S[y[i]]
            best = -INFINITY
            for k in range(K):
                v = 0.0 if k == y[i] else 1.0 - (sy - S[k])
                if v > best:
                    best = v
            _add_positive(C * best, &total, &comp)
    free(S)
    acc[0] = total
    acc[1] = comp
    return 0


def multiclass_hinge_sum(indptr, indices, data, y, w, int64_t n_cols, int64_t K, double bias,
                         bint has_bias, double C, acc):
    """hinge_sum of C max_j (Delta(y_i, j) - (S_iy - S_ij)) over the rows of a CSR block, the
    0/1 loss (Delta 1 off the diagonal; j = y_i counts 0), w feature-major (the K weights of
    column j at w[j K:]): the multiclass task's certificate as objective.PrimalAccumulator sums
    it (Multiclass.violations: _oracles.block_scores, feature-major, then multiclass_worst, times
    the costs, then hinge_sum), the same operations in the same order, for `train`'s lean path.
    Buffers: indptr and y int64, indices int32 or int64, data, w and acc float64."""
    cdef const int32_t[::1] narrow
    cdef const int64_t[::1] wide
    if memoryview(indices).format == "i":
        narrow = indices
        _multiclass_hinge[int32_t](indptr, narrow, data, y, w, n_cols, K, bias, has_bias, C, acc)
    else:
        wide = indices
        _multiclass_hinge[int64_t](indptr, wide, data, y, w, n_cols, K, bias, has_bias, C, acc)


cdef inline bint _nonzero_bits(double x) noexcept nogil:
    """x's bit pattern is not +0.0 (-0.0 is kept: the model writer's test, model._bits)."""
    cdef int64_t bits
    memcpy(&bits, &x, sizeof(double))
    return bits != 0


def nonzero_count(const double[::1] a):
    """The entries whose bit pattern is not +0.0 (the model writer's sparse-or-dense count)."""
    cdef Py_ssize_t j, n = 0
    with nogil:
        for j in range(a.shape[0]):
            n += _nonzero_bits(a[j])
    return n


def nonzero_entries(const double[::1] a, int64_t offset):
    """(values, indices + offset) of the entries nonzero_count counts, as buffers of doubles and
    int64s (a sparse model's lines, model._weight_chunks')."""
    cdef Py_ssize_t j, k = 0, n = nonzero_count(a)
    values = memoryview(bytearray(8 * max(n, 1))).cast("d")
    index = memoryview(bytearray(8 * max(n, 1))).cast("q")
    cdef double[::1] v = values
    cdef int64_t[::1] ix = index
    with nogil:
        for j in range(a.shape[0]):
            if _nonzero_bits(a[j]):
                v[k] = a[j]
                ix[k] = j + offset
                k += 1
    return values[:n], index[:n]


def class_indices(const double[::1] target, const double[::1] labels):
    """Each row's index among the sorted `labels` (LabelledTask.label_index: searchsorted), as a
    buffer of int64s; ValueError when a target is not among them."""
    out = memoryview(bytearray(8 * max(target.shape[0], 1))).cast("q")
    cdef int64_t[::1] o = out
    cdef Py_ssize_t i, lo, hi, mid, K = labels.shape[0]
    for i in range(target.shape[0]):
        lo, hi = 0, K
        while lo < hi:
            mid = (lo + hi) // 2
            if labels[mid] < target[i]:
                lo = mid + 1
            else:
                hi = mid
        if lo == K or labels[lo] != target[i]:
            raise ValueError("class_indices: a target is not among the labels")
        o[i] = lo
    return out[:target.shape[0]]


def distinct_values(const double[::1] values, Py_ssize_t most):
    """The first `most` distinct values in order of appearance, compared bit for bit (so -0.0 is
    not 0.0): a binary file's two labels and whether there is a third, a multiclass file's
    classes up to a limit (`train`'s lean path)."""
    cdef list out = []
    cdef Py_ssize_t i, k, m = 0
    cdef double* seen = <double*> malloc(max(most, 1) * sizeof(double))
    if seen == NULL:
        raise MemoryError()
    try:
        for i in range(values.shape[0]):
            if m == most:
                break
            for k in range(m):
                if memcmp(&seen[k], &values[i], sizeof(double)) == 0:
                    break
            else:
                seen[m] = values[i]
                m += 1
                out.append(values[i])
    finally:
        free(seen)
    return out


ctypedef fused number:
    int64_t
    double


cdef tuple _lo_hi(const number[::1] values):
    cdef Py_ssize_t i
    cdef number lo = values[0], hi = values[0]
    for i in range(values.shape[0]):
        lo = min(lo, values[i])
        hi = max(hi, values[i])
    return lo, hi


def extremes(values):
    """(min, max) of a non-empty buffer of int64s ('q') or doubles ('d'). (The format is read
    here: a fused def's dispatcher imports numpy.)"""
    cdef const int64_t[::1] q
    cdef const double[::1] d
    view = memoryview(values)
    if len(view) == 0:
        raise ValueError("extremes: no values")
    if view.format == "q":
        q = values
        return _lo_hi(q)
    d = values
    return _lo_hi(d)


def binary_signs(const double[::1] target, double positive):
    """y_i = +1 where target_i == positive, else -1 (Binary.signs), as a buffer of doubles."""
    out = memoryview(bytearray(8 * max(target.shape[0], 1))).cast("d")
    cdef double[::1] y = out
    cdef Py_ssize_t i
    for i in range(target.shape[0]):
        y[i] = 1.0 if target[i] == positive else -1.0
    return out[:target.shape[0]]


def hinge_sum(const double[::1] margin_violation, double[::1] acc):
    """acc += sum_i max(0, v_i), with Neumaier's compensation carried in acc = [sum, compensation].

    Carrying the compensation across blocks makes a streamed sum independent of the block size.
    """
    cdef int64_t i
    cdef double s = acc[0], comp = acc[1]
    with nogil:
        for i in range(margin_violation.shape[0]):
            _add_positive(margin_violation[i], &s, &comp)
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
