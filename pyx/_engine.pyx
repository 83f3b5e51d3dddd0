"""Dual coordinate descent over a cache of constraints with shared slacks.

The problem (DESIGN.md "One problem, one engine"; Ramanan eq. 2 with C kept explicit):

    max_a  D(a) = -1/2 ||w(a)||^2 + sum_c l_c a_c,        w(a) = sum_c a_c x_c
    s.t.   a_c >= 0,   A_g = sum_{c in g} a_c <= C_g        for every group g

    P(w)  = 1/2 ||w||^2 + sum_g C_g max(0, max_{c in g} (l_c - w.x_c)),   D(a) <= OPT <= P(w(a))

A constraint is x_c = scale_c * X[row_c] (plus LIBLINEAR's implicit bias feature), so a task lists its
constraints without copying the data: binary uses scale = y_i, regression +1 and -1 on the same row.

Steps (Ramanan Alg. 1, re-derived; papers/README lists the slips in the printed eq. 12-15), with the
gradient g_c = l_c - w.x_c and Q_c = ||x_c||^2:

    single:  a_c += d,   d = clip(g_c / Q_c, -a_c, C_g - A_g)
    pair:    a_j += d, a_k -= d,   d = clip((g_j - g_k) / ||x_j - x_k||^2, -a_j, a_k)

The pair step is taken when the group is at its bound and j wants to grow; k is the group's support
constraint (a_k > 0) with the smallest gradient. For a group of one constraint this is exactly
LIBLINEAR's dual coordinate descent for the L1-loss SVM (Hsieh et al. 2008, Alg. 1).

Shrinking follows LIBLINEAR (Hsieh et al. 2008, sec. 3.2): a constraint at a = 0 whose gradient is
below -M, M being the largest violation seen in the previous epoch, leaves the active set; so does a
one-constraint group at its bound whose gradient is above M. The caller decides when to stop, on the
duality gap: `exact_bounds` evaluates P over every constraint, shrunk or not, with the current w.
"""

import numpy as np
cimport numpy as cnp
from libc.math cimport INFINITY, fabs
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc

from _sparse cimport rand_below, row_axpy, row_dot, row_row_dot, row_sqnorm

cnp.import_array()


# One cache line per constraint and per group: the epoch visits them in random order, and scattered
# parallel arrays would cost a cache miss per field.
cdef struct Constraint:
    int64_t row          # its base row in the CSR store
    int64_t id           # its position in the caller's arrays
    double scale         # x_c = scale * X[row]
    double margin        # l_c
    double q             # ||x_c||^2
    double alpha

cdef struct Group:
    int64_t start        # its constraints are cons[start : start + size], the active ones first
    int64_t size
    int64_t active
    double C
    double last_loss     # C_g max(0, max_c g_c) at its last visit: Ramanan's eq. 23 estimate


cdef inline double clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef class DualCD:
    """The engine's state: constraints, alphas, w, the active set and the generator.

    Build it from a constraint cache (arrays, validated here once), call `epoch()` until the caller's
    stopping rule on `exact_bounds()` is met, and read `w` and `alpha`. `w` is recomputed from the
    alphas on construction (hot start) and by `recompute_w()`, so it never drifts from w(alpha) in
    what is reported.
    """

    # the CSR store (the arrays are kept alive by the Python references)
    cdef object _keep
    cdef const int64_t* indptr
    cdef const int64_t* indices
    cdef const double* data
    cdef double bias
    cdef int64_t bias_col
    # state
    cdef Constraint* cons
    cdef Group* grp
    cdef int64_t n_cons
    cdef int64_t n_groups
    cdef int64_t* groups          # the active groups are groups[:n_active]
    cdef int64_t n_active
    cdef double[::1] w_
    cdef double* w
    cdef int64_t n_w              # n_cols (+1 with the bias feature); w_ has room for at least one
    cdef uint64_t rng
    # Shrinking thresholds (LIBLINEAR's PGmax_old, -PGmin_old): the previous epoch's largest wish to
    # decrease and to increase a coordinate. A constraint at 0 whose gradient is below -M_dec, or a
    # one-constraint group at its bound with a gradient above M_inc, is not expected to move.
    cdef double M_dec
    cdef double M_inc
    cdef double v_dec             # the current epoch's figures
    cdef double v_inc
    cdef bint shrinking

    def __cinit__(self):
        self.cons = NULL
        self.grp = NULL
        self.groups = NULL

    def __dealloc__(self):
        free(self.cons)
        free(self.grp)
        free(self.groups)

    def __init__(self, indptr, indices, data, row, scale, margin, group, C_group, alpha=None, *,
                 int64_t n_cols, double bias=0.0, bint has_bias=False, uint64_t seed=1,
                 bint shrinking=True):
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        indices = np.ascontiguousarray(indices, dtype=np.int64)
        data = np.ascontiguousarray(data, dtype=np.float64)
        row = np.ascontiguousarray(row, dtype=np.int64)
        scale = np.ascontiguousarray(scale, dtype=np.float64)
        margin = np.ascontiguousarray(margin, dtype=np.float64)
        group = np.ascontiguousarray(group, dtype=np.int64)
        C_group = np.ascontiguousarray(C_group, dtype=np.float64)
        n = row.shape[0]
        n_rows = indptr.shape[0] - 1
        n_groups = C_group.shape[0]
        # Validate once at the edge; the kernels below trust these arrays.
        if n_rows < 0 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[n_rows] != indices.shape[0]:
            raise ValueError("indptr is not a valid CSR row pointer")
        if data.shape[0] != indices.shape[0]:
            raise ValueError("indices and data differ in length")
        if indices.shape[0] and (indices.min() < 0 or indices.max() >= n_cols):
            raise ValueError("a column index is outside [0, n_cols)")
        if scale.shape[0] != n or margin.shape[0] != n or group.shape[0] != n:
            raise ValueError("row, scale, margin and group differ in length")
        if n and (row.min() < 0 or row.max() >= n_rows):
            raise ValueError("a constraint names a row outside the store")
        if n and (group.min() < 0 or group.max() >= n_groups):
            raise ValueError("a constraint names a group outside [0, len(C_group))")
        if np.any(~np.isfinite(C_group)) or np.any(C_group < 0):
            raise ValueError("group bounds C_g must be finite and >= 0")
        if not (np.all(np.isfinite(scale)) and np.all(np.isfinite(margin)) and np.all(np.isfinite(data))):
            raise ValueError("constraints must be finite")
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

        self._keep = (indptr, indices, data)
        self.indptr = <const int64_t*> cnp.PyArray_DATA(indptr)
        self.indices = <const int64_t*> cnp.PyArray_DATA(indices)
        self.data = <const double*> cnp.PyArray_DATA(data)
        self.bias = bias
        self.bias_col = n_cols if has_bias else -1
        self.n_w = n_cols + (1 if has_bias else 0)
        self.w_ = np.zeros(max(self.n_w, 1), dtype=np.float64)
        self.w = &self.w_[0]
        self.shrinking = shrinking
        self.rng = seed
        self.M_dec = INFINITY
        self.M_inc = INFINITY

        # Lay the constraints out group by group (stable: the caller's order inside a group).
        gsize = np.bincount(group, minlength=n_groups).astype(np.int64)
        gstart = np.cumsum(gsize) - gsize
        order = np.argsort(group, kind="stable").astype(np.int64)
        self.n_cons = n
        self.n_groups = n_groups
        self.cons = <Constraint*> malloc(max(n, 1) * sizeof(Constraint))
        self.grp = <Group*> malloc(max(n_groups, 1) * sizeof(Group))
        self.groups = <int64_t*> malloc(max(n_groups, 1) * sizeof(int64_t))
        if self.cons == NULL or self.grp == NULL or self.groups == NULL:
            raise MemoryError("cannot allocate the constraint cache")
        cdef int64_t[::1] order_v = order, row_v = row, gsize_v = gsize, gstart_v = gstart
        cdef double[::1] scale_v = scale, margin_v = margin, alpha_v = alpha, C_v = C_group
        cdef int64_t k, c, g, n_c = n, n_g = n_groups
        with nogil:
            for k in range(n_c):
                c = order_v[k]
                self.cons[k].row = row_v[c]
                self.cons[k].id = c
                self.cons[k].scale = scale_v[c]
                self.cons[k].margin = margin_v[c]
                self.cons[k].alpha = alpha_v[c]
                self.cons[k].q = scale_v[c] * scale_v[c] * row_sqnorm(
                    self.data, self.indptr[row_v[c]], self.indptr[row_v[c] + 1], self.bias, self.bias_col)
            for g in range(n_g):
                self.grp[g].start = gstart_v[g]
                self.grp[g].size = gsize_v[g]
                self.grp[g].active = gsize_v[g]
                self.grp[g].C = C_v[g]
                self.grp[g].last_loss = 0.0
        self.unshrink()
        self.recompute_w()

    # -- w(alpha) ------------------------------------------------------------------------------

    def recompute_w(self):
        """Set w = sum_c alpha_c x_c afresh (removes the drift of incremental updates)."""
        cdef int64_t k, j
        with nogil:
            for j in range(self.w_.shape[0]):
                self.w[j] = 0.0
            for k in range(self.n_cons):
                if self.cons[k].alpha != 0.0:
                    self._axpy(k, self.cons[k].alpha)

    cdef inline double _gradient(self, int64_t k) noexcept nogil:
        """g_c = l_c - w.x_c"""
        cdef int64_t r = self.cons[k].row
        return self.cons[k].margin - self.cons[k].scale * row_dot(
            self.w, self.indices, self.data, self.indptr[r], self.indptr[r + 1], self.bias, self.bias_col)

    cdef inline void _axpy(self, int64_t k, double d) noexcept nogil:
        """w += d x_c"""
        cdef int64_t r = self.cons[k].row
        row_axpy(d * self.cons[k].scale, self.indices, self.data, self.indptr[r], self.indptr[r + 1],
                 self.bias, self.bias_col, self.w)

    cdef inline double _cross(self, int64_t j, int64_t k) noexcept nogil:
        """x_j . x_k"""
        cdef int64_t rj = self.cons[j].row, rk = self.cons[k].row
        cdef double s = self.cons[j].scale * self.cons[k].scale
        if rj == rk:
            return s * row_sqnorm(self.data, self.indptr[rj], self.indptr[rj + 1], self.bias, self.bias_col)
        return s * row_row_dot(self.indices, self.data, self.indptr[rj], self.indptr[rj + 1],
                               self.indptr[rk], self.indptr[rk + 1], self.bias, self.bias_col)

    # -- one epoch -----------------------------------------------------------------------------

    def epoch(self):
        """One pass over the active groups in a fresh random order.

        Returns (steps, violation, active_constraints): the number of coordinates that moved, the
        largest violation of the optimality conditions seen (projected gradient), and the size of
        the active set after shrinking.
        """
        cdef int64_t steps = 0
        cdef double violation = 0.0
        with nogil:
            self._epoch(&steps, &violation)
        return steps, violation, self.n_active_constraints()

    cdef void _epoch(self, int64_t* steps_out, double* violation_out) noexcept nogil:
        cdef int64_t i, j, s, g, tmp
        cdef double violation = 0.0
        cdef int64_t steps = 0
        cdef double v
        self.v_dec = 0.0
        self.v_inc = 0.0
        # Fisher-Yates on the active groups, from the engine's own generator.
        for i in range(self.n_active - 1, 0, -1):
            j = rand_below(&self.rng, i + 1)
            tmp = self.groups[i]
            self.groups[i] = self.groups[j]
            self.groups[j] = tmp
        s = 0
        while s < self.n_active:
            g = self.groups[s]
            if self.grp[g].size == 1:
                v = self._visit_single(g, &steps)
            else:
                v = self._visit_group(g, &steps)
            if v < 0.0:
                # the group left the active set: the last active group takes its place
                self.n_active -= 1
                self.groups[s] = self.groups[self.n_active]
                self.groups[self.n_active] = g
                continue
            if v > violation:
                violation = v
            s += 1
        self.M_dec = self.v_dec if self.v_dec > 0.0 else INFINITY
        self.M_inc = self.v_inc if self.v_inc > 0.0 else INFINITY
        steps_out[0] = steps
        violation_out[0] = violation

    cdef double _visit_single(self, int64_t g, int64_t* steps) noexcept nogil:
        """LIBLINEAR's step for a group of one constraint; returns its violation, or -1 if shrunk."""
        cdef int64_t k = self.grp[g].start
        cdef Constraint* c = &self.cons[k]
        cdef double Cg = self.grp[g].C
        cdef double a = c.alpha
        cdef double G = self._gradient(k)
        cdef double pg, new_a
        self.grp[g].last_loss = Cg * G if G > 0.0 else 0.0
        if a <= 0.0:
            if self.shrinking and G < -self.M_dec:
                self.grp[g].active = 0
                return -1.0
            pg = G if G > 0.0 else 0.0
        elif a >= Cg:
            if self.shrinking and G > self.M_inc:
                self.grp[g].active = 0
                return -1.0
            pg = G if G < 0.0 else 0.0
        else:
            pg = G
        if pg > self.v_inc:
            self.v_inc = pg
        elif -pg > self.v_dec:
            self.v_dec = -pg
        if pg != 0.0:
            if c.q > 0.0:
                new_a = clip(a + G / c.q, 0.0, Cg)
            else:  # x_c = 0: the dual is linear in a_c, go to the bound the gradient points at
                new_a = Cg if G > 0.0 else 0.0
            if new_a != a:
                self._axpy(k, new_a - a)
                c.alpha = new_a          # exactly on the bound when clipped: no rounding drift
                steps[0] += 1
        return fabs(pg)

    cdef double _visit_group(self, int64_t g, int64_t* steps) noexcept nogil:
        """Single and pair steps over a group's active constraints; returns the group's violation,
        or -1 when all its constraints were shrunk."""
        cdef Group* gr = &self.grp[g]
        cdef int64_t base = gr.start
        cdef double Cg = gr.C
        cdef double Ag = 0.0, G, Gk, Gbest, a, d, q, room, v, gmax = -INFINITY, violation = 0.0
        cdef int64_t t, u, k, best
        cdef int64_t m = gr.active
        cdef Constraint tmp
        for t in range(base, base + m):
            Ag += self.cons[t].alpha
        t = base
        while t < base + m:
            a = self.cons[t].alpha
            G = self._gradient(t)
            if G > gmax:
                gmax = G
            if a <= 0.0 and self.shrinking and G < -self.M_dec:
                # shrink: swap it behind the group's active constraints, then visit the one moved in
                m -= 1
                tmp = self.cons[t]
                self.cons[t] = self.cons[base + m]
                self.cons[base + m] = tmp
                continue
            room = Cg - Ag
            if room > 1e-12 * Cg or G <= 0.0:
                # single step: a decrease is always feasible, an increase up to the group's room
                v = G if a > 0.0 else (G if G > 0.0 else 0.0)
                if v != 0.0:
                    if room < 0.0:
                        room = 0.0
                    if self.cons[t].q > 0.0:
                        d = clip(G / self.cons[t].q, -a, room)
                    else:
                        d = room if G > 0.0 else -a
                    if d != 0.0:
                        self._axpy(t, d)
                        self.cons[t].alpha = a + d
                        Ag += d
                        steps[0] += 1
            else:
                # the group is at its bound and c wants to grow: take mass from the support
                # constraint with the smallest gradient
                best = -1
                Gbest = INFINITY
                for u in range(base, base + m):
                    if u != t and self.cons[u].alpha > 0.0:
                        Gk = self._gradient(u)
                        if Gk < Gbest:
                            Gbest = Gk
                            best = u
                v = 0.0
                if best >= 0 and G > Gbest:
                    v = G - Gbest
                    q = self.cons[t].q + self.cons[best].q - 2.0 * self._cross(t, best)
                    if q > 1e-12 * (self.cons[t].q + self.cons[best].q):
                        d = clip(v / q, 0.0, self.cons[best].alpha)
                    else:  # x_j == x_k: the dual is linear along the pair direction
                        d = self.cons[best].alpha
                    if d > 0.0:
                        self._axpy(t, d)
                        self._axpy(best, -d)
                        self.cons[t].alpha += d
                        self.cons[best].alpha -= d   # d <= alpha_k, so this stays >= 0
                        steps[0] += 1
            if v > self.v_inc:
                self.v_inc = v
            elif -v > self.v_dec:
                self.v_dec = -v
            v = fabs(v)
            if v > violation:
                violation = v
            t += 1
        gr.active = m
        gr.last_loss = Cg * gmax if gmax > 0.0 else 0.0
        if m == 0:
            return -1.0
        return violation

    # -- bounds --------------------------------------------------------------------------------

    def exact_bounds(self):
        """(primal, dual) at the current w over every constraint, shrunk or not.

        primal = 1/2||w||^2 + sum_g C_g max(0, max_c g_c) is the cached problem's exact upper bound
        (Ramanan eq. 22); dual = -1/2||w||^2 + sum_c l_c a_c its lower bound (eq. 21). Both use the
        w held now; call recompute_w() first for figures to certify.
        """
        cdef double loss = 0.0, gmax, G
        cdef int64_t g, k
        with nogil:
            for g in range(self.n_groups):
                if self.grp[g].size == 0:
                    continue
                gmax = 0.0
                for k in range(self.grp[g].start, self.grp[g].start + self.grp[g].size):
                    G = self._gradient(k)
                    if G > gmax:
                        gmax = G
                loss += self.grp[g].C * gmax
        ww, la = self._norm_and_margin_sum()
        return 0.5 * ww + loss, -0.5 * ww + la

    def approximate_bounds(self):
        """(primal', dual): Ramanan's eq. 23 upper bound from the gradients seen in the last visits.

        Free to compute but not a certificate: w moved while the gradients were taken.
        """
        cdef double loss = 0.0
        cdef int64_t g
        with nogil:
            for g in range(self.n_groups):
                loss += self.grp[g].last_loss
        ww, la = self._norm_and_margin_sum()
        return 0.5 * ww + loss, -0.5 * ww + la

    cdef tuple _norm_and_margin_sum(self):
        cdef double ww = 0.0, la = 0.0
        cdef int64_t j, k
        with nogil:
            for j in range(self.w_.shape[0]):
                ww += self.w[j] * self.w[j]
            for k in range(self.n_cons):
                la += self.cons[k].margin * self.cons[k].alpha
        return ww, la

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
        self.M_dec = INFINITY
        self.M_inc = INFINITY

    cpdef int64_t n_active_constraints(self):
        cdef int64_t s, total = 0
        for s in range(self.n_active):
            total += self.grp[self.groups[s]].active
        return total

    @property
    def n_constraints(self):
        return self.n_cons

    @property
    def all_active(self):
        return self.n_active_constraints() == self.n_cons

    @property
    def alpha(self):
        """The dual variables, in the caller's order (a copy)."""
        out = np.empty(self.n_cons, dtype=np.float64)
        cdef double[::1] o = out
        cdef int64_t k
        for k in range(self.n_cons):
            o[self.cons[k].id] = self.cons[k].alpha
        return out

    @property
    def w(self):
        """w = sum alpha_c x_c (a copy)."""
        return np.array(self.w_[:self.n_w], copy=True)

    @property
    def rng_state(self):
        return self.rng
