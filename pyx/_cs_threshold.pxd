# The threshold of one Crammer-Singer example's subproblem (Keerthi et al. 2008; LIBLINEAR's
# solve_sub_problem), shared by the engine's general visit and the record-free multiclass kernel.

from libc.stdint cimport int64_t
from libc.stdlib cimport qsort


cdef inline int _cmp_descending(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], y = (<const double*>b)[0]
    return (x < y) - (x > y)


cdef inline double cs_threshold(double* D, int64_t m, double R, double C) noexcept nogil:
    """D[0 .. m]: D_y = B_y + R C, then the m classes' B_j; sorted here into descending order.
    Returns beta, from which the new point is u_j = max(0, (B_j - beta) / R)."""
    cdef int64_t r, q
    cdef double u, beta
    if m < 16:                                   # few classes: insertion sort
        for r in range(1, m + 1):
            u = D[r]
            q = r - 1
            while q >= 0 and D[q] < u:
                D[q + 1] = D[q]
                q -= 1
            D[q + 1] = u
    else:
        qsort(D, m + 1, sizeof(double), _cmp_descending)
    beta = D[0] - R * C
    r = 1
    while r < m + 1 and beta < r * D[r]:
        beta += D[r]
        r += 1
    return beta / r
