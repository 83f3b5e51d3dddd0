# The first-order HMM's Viterbi, backward then forward (svmtrain._oracles' section 3 says how and
# why): shared by the oracles and predict's numpy-free path (svmtrain._reader.tag_parsed), so that
# both tag a sentence by the same expressions in the same order, to the last bit.
#
# E: L x K emission scores (row-major), T: (K + 1) x K transitions (row K is START), beta: L x K.

from libc.stdint cimport int64_t


cdef inline int64_t _argmax_next(const double* T, const double* nxt, int64_t prev, int64_t K,
                                 double* best) noexcept nogil:
    """argmax_c T[prev, c] + nxt[c] (smallest c on ties); its value in best[0]."""
    cdef int64_t c, bc = 0
    cdef const double* Tp = T + prev * K
    cdef double b = Tp[0] + nxt[0], v
    for c in range(1, K):
        v = Tp[c] + nxt[c]
        if v > b:
            b = v
            bc = c
    best[0] = b
    return bc


cdef inline void _backward(const double* E, const double* T, const int64_t* y, int64_t L,
                           int64_t K, double* beta) noexcept nogil:
    """beta[t*K + k] = E'[t, k] + max_c T[k, c] + beta[t+1, c];  E' = E + [k != y_t] when y != NULL."""
    cdef int64_t t, k
    cdef double m
    for k in range(K):
        beta[(L - 1) * K + k] = E[(L - 1) * K + k] + (1.0 if (y != NULL and k != y[L - 1]) else 0.0)
    for t in range(L - 2, -1, -1):
        for k in range(K):
            _argmax_next(T, beta + (t + 1) * K, k, K, &m)
            beta[t * K + k] = E[t * K + k] + (1.0 if (y != NULL and k != y[t]) else 0.0) + m


cdef inline void _decode(const double* T, const double* beta, int64_t L, int64_t K,
                         int64_t* out) noexcept nogil:
    cdef int64_t t
    cdef double m
    out[0] = _argmax_next(T, beta, K, K, &m)
    for t in range(1, L):
        out[t] = _argmax_next(T, beta + t * K, out[t - 1], K, &m)
