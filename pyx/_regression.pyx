"""Epsilon-insensitive regression without constraint records (the n-slack mode's listing).

The regression task lists two one-sided constraints per example i (row x_i, target y_i, cost C_i,
tube half-width p), sharing its slack:

    x_i1 =  x_i, l_i1 =  y_i - p,    x_i2 = -x_i, l_i2 = -y_i - p,    a_i1, a_i2 >= 0,  a_i1 + a_i2 <= C_i

(a --prior shifts both margins by -+ w0.x_i; l_i1 + l_i2 = -2p <= 0 either way). At an optimum at
most one of a_i1, a_i2 is positive (both positive would pay 2 p a for nothing), so the example is
one variable beta_i = a_i1 - a_i2 in [-C_i, C_i], w = sum_i beta_i x_i, and the dual is

    D(beta) = sum_i (l_i1 max(beta_i, 0) + l_i2 max(-beta_i, 0)) - 1/2 ||w||^2,

which is LIBLINEAR's -s 13 (solve_l2r_l1l2_svr with L1 loss, Ho and Lin 2012, sec. 3) for
l_i1 = y_i - p, l_i2 = -y_i - p. Where the engine visits the two constraints as a group of its own
(a product with w for each, and its group bookkeeping: 4 times LIBLINEAR's time an epoch on
cadata), a visit here is one product, a Newton step on beta_i and one axpy:

    G+ = w.x_i - l_i1,  G- = w.x_i + l_i2  (LIBLINEAR's G + p and G - p),  H = ||x_i||^2,
    d = -G+/H if G+ < H beta_i;  -G-/H if G- > H beta_i;  -beta_i otherwise,
    beta_i <- clip(beta_i + d, -C_i, C_i).

(D is concave and piecewise quadratic in beta_i, with its kink at 0: the three cases are the
maximiser on beta_i > 0, on beta_i < 0, and the kink.) Its projected gradient, the violation, is
|G+| or |G-| inside the box, the outward part at a bound, and at 0 the distance of 0 from
[G-, G+]. Shrinking is LIBLINEAR's: an example at 0 with G+ > M and G- < -M, or at a bound with
its gradient pointing further out than M, leaves the active set, where M is the previous epoch's
largest violation; engine.solve unshrinks as it does for LIBLINEAR -s 4's whole examples
(`shrinks_whole_examples`). The class offers the engine's interface (epoch, approximate_bounds,
exact_bounds, recompute_w, unshrink, w, alpha in the listed order).
"""

from libc.math cimport INFINITY, fabs
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, free

from _sparse cimport (buffer_address, int32_columns, prefetch, shuffle, row_axpy, row_dot,
                      zeros_as_numpy)

from svmtrain import _numpy as np    # (numpy on first use: from_rows never reads it)


cdef struct Example:
    int64_t start        # its row is indices/data[start : start + nnz]
    double l1            # l_i1, the margin of x_i1 = x_i
    double l2            # l_i2, the margin of x_i2 = -x_i
    double C             # C_i
    double H             # ||x_i||^2, with the bias feature
    double beta          # a_i1 - a_i2
    int64_t nnz


cdef inline double _linear_term(const Example* e, double b) noexcept nogil:
    """The example's part of the dual's linear term: l_i1 a_i1 + l_i2 a_i2 at beta_i = b."""
    return e.l1 * b if b > 0.0 else (-e.l2 * b if b < 0.0 else 0.0)


cdef struct Tally:
    int64_t steps        # coordinates that moved
    int64_t shrunk       # examples that left the active set
    double violation     # the largest projected gradient
    double loss          # sum over the examples that stay active of C_i max(0, |y_i - w.x_i| - p)


cdef class SVRDualCD:
    """The state: rows, targets, costs, beta, w, the active examples."""

    cdef object _keep
    cdef const int32_t* indices
    cdef const double* data
    cdef Example* ex
    cdef int64_t* order          # the active examples are order[:n_active]
    cdef uint8_t* out            # scratch of exact_bounds: is the example out of the active set
    cdef double[::1] w_
    cdef double* w
    cdef int64_t n, n_cols, n_w, bias_col, n_active
    cdef double bias, M
    cdef bint shrinking
    cdef uint64_t rng
    cdef double est_loss, shrunk_loss, est_ww, est_la

    def __cinit__(self):
        self.ex = NULL
        self.order = NULL
        self.out = NULL

    def __dealloc__(self):
        free(self.ex)
        free(self.order)
        free(self.out)

    def __init__(self, indptr, indices, data, margin, C, alpha=None, *, int64_t n_cols,
                 double bias=0.0, bint has_bias=False, uint64_t seed=1, bint shrinking=True):
        """Rows (CSR, n_cols columns, one per example), costs C_i, and the margins and hot start of
        the listed constraints (2 n each, example by example: x_i1 = x_i, then x_i2 = -x_i)."""
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        data = np.ascontiguousarray(data, dtype=np.float64)
        margin = np.asarray(margin, dtype=np.float64)
        C = np.ascontiguousarray(C, dtype=np.float64)
        cdef int64_t n = C.shape[0], i
        if indptr.shape[0] != n + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) \
                or indptr[n] != len(indices) or data.shape[0] != len(indices):
            raise ValueError("indptr, indices and data are not a CSR store of one row per example")
        if np.any(~np.isfinite(C)) or np.any(C < 0):
            raise ValueError("C_i must be finite and >= 0, one per example")
        if margin.shape[0] != 2 * n or not np.all(np.isfinite(margin)):
            raise ValueError("margin must hold 2 n finite values")
        l1 = np.ascontiguousarray(margin[0::2])
        l2 = np.ascontiguousarray(margin[1::2])
        if np.any(l1 > -l2):          # (l1 + l2 > 0, without overflowing: -p 1e308)
            raise ValueError("each example's margins must sum to at most 0 (a tube p >= 0)")
        if n_cols < 0 or n_cols + 1 > INT32_MAX:
            raise ValueError("the kernel takes at most 2**31 - 1 weights")
        if not np.all(np.isfinite(data)):
            raise ValueError("the rows must be finite")
        cols = np.asarray(indices)
        if cols.shape[0] and (cols.min() < 0 or cols.max() >= n_cols):
            raise ValueError("a column index is outside [0, n_cols)")
        cols = np.ascontiguousarray(cols, dtype=np.int32)    # (in place when int32 already)
        beta = np.zeros(n)
        if alpha is not None:
            alpha = np.asarray(alpha, dtype=np.float64)
            if alpha.shape[0] != 2 * n or not np.all(np.isfinite(alpha)):
                raise ValueError("alpha must be finite and two per example")
            # hot start: beta = a_i1 - a_i2, projected onto the box (a changed C may have moved it)
            beta = np.clip(np.maximum(alpha[0::2], 0.0) - np.maximum(alpha[1::2], 0.0), -C, C)
        self._keep = (cols, data)
        self._lay_out(<const int32_t*> buffer_address(cols), <const double*> buffer_address(data),
                      n, n_cols, bias, has_bias, seed, shrinking)
        cdef const int64_t[::1] ip = indptr
        cdef const double[::1] l1v = l1, l2v = l2, Cv = C, bv = beta
        with nogil:
            for i in range(n):
                self._set_example(i, ip[i], ip[i + 1], l1v[i], l2v[i], Cv[i], bv[i])
        self.recompute_w()

    @staticmethod
    def from_rows(indptr, indices, data, target, double p, double C, *, int64_t n_cols,
                  double bias=0.0, bint has_bias=False, uint64_t seed=1, bint shrinking=True):
        """The kernel of Regression.all_constraints' listing (l_i1 = y_i - p, l_i2 = -y_i - p,
        every C_i = C, beta = 0) built from plain buffers (indptr int64, indices int32 or int64,
        data and target float64) without numpy, for `train`'s lean path (svmtrain.lean_train): the
        examples __init__ lays out from those arrays, bit for bit, so its epochs take the same
        steps. ValueError where __init__'s caller would refuse the problem or a row's squared
        norm overflows (the lean path then hands the command to the full path)."""
        cdef const int64_t[::1] ip = indptr
        cdef const double[::1] vals = data, y = target
        cdef int64_t n = ip.shape[0] - 1, nnz = len(indices), i
        cdef int32_t* i32
        cdef SVRDualCD self = SVRDualCD.__new__(SVRDualCD)
        if n < 0 or ip[0] != 0 or ip[n] != nnz or vals.shape[0] != nnz or y.shape[0] != n:
            raise ValueError("from_rows: inconsistent arrays")
        for i in range(n):
            if ip[i + 1] < ip[i]:
                raise ValueError("from_rows: indptr is not a valid CSR row pointer")
        if not (C >= 0.0 and C < INFINITY) or not (p >= 0.0 and p < INFINITY):
            raise ValueError("from_rows: C and p must be finite and >= 0")
        if n_cols < 0 or n_cols + 1 > INT32_MAX:
            raise ValueError("the kernel takes at most 2**31 - 1 weights")
        cols = int32_columns(indices, n_cols, &i32)
        self._keep = (cols, data)
        self._lay_out(i32, &vals[0] if nnz else NULL, n, n_cols, bias, has_bias, seed, shrinking)
        for i in range(n):
            # (Regression.all_constraints' margins: target - p and -target - p)
            self._set_example(i, ip[i], ip[i + 1], y[i] - p, -y[i] - p, C, 0.0)
            if not (self.ex[i].H < INFINITY and fabs(self.ex[i].l1) < INFINITY
                    and fabs(self.ex[i].l2) < INFINITY):
                raise ValueError("from_rows: a row's squared norm or a margin overflows")
        self.recompute_w()
        return self

    cdef int _lay_out(self, const int32_t* indices, const double* data, int64_t n, int64_t n_cols,
                      double bias, bint has_bias, uint64_t seed, bint shrinking) except -1:
        """Everything but the examples: the rows, w (0), the generator, every example active."""
        cdef int64_t i
        self.indices = indices
        self.data = data
        self.n, self.n_cols = n, n_cols
        self.bias = bias
        self.bias_col = n_cols if has_bias else -1
        self.n_w = n_cols + (1 if has_bias else 0)
        self.shrinking = shrinking
        self.rng = seed
        self.M = INFINITY
        self.w_ = zeros_as_numpy(max(self.n_w, 1))     # (numpy's huge-page advice, as an array's)
        self.w = &self.w_[0]
        self.ex = <Example*> malloc(max(n, 1) * sizeof(Example))
        self.order = <int64_t*> malloc(max(n, 1) * sizeof(int64_t))
        self.out = <uint8_t*> malloc(max(n, 1) * sizeof(uint8_t))
        if self.ex == NULL or self.order == NULL or self.out == NULL:
            raise MemoryError("cannot allocate the regression state")
        for i in range(n):
            self.order[i] = i
        self.n_active = n
        self.est_loss = self.shrunk_loss = 0.0
        return 0

    cdef inline void _set_example(self, int64_t i, int64_t start, int64_t end, double l1,
                                  double l2, double C, double beta) noexcept nogil:
        cdef int64_t q
        cdef double h = 0.0
        self.ex[i].start = start
        self.ex[i].nnz = end - start
        self.ex[i].l1 = l1
        self.ex[i].l2 = l2
        self.ex[i].C = C
        self.ex[i].beta = beta
        for q in range(start, end):
            h += self.data[q] * self.data[q]
        if self.bias_col >= 0:
            h += self.bias * self.bias
        self.ex[i].H = h

    cdef inline double _dot(self, int64_t i) noexcept nogil:
        return row_dot(self.w, self.indices, self.data, self.ex[i].start,
                       self.ex[i].start + self.ex[i].nnz, self.bias, self.bias_col)

    def recompute_w(self):
        """Set w = sum beta_i x_i afresh (removes the drift of incremental updates)."""
        cdef int64_t i, j
        with nogil:
            for j in range(self.w_.shape[0]):
                self.w[j] = 0.0
            for i in range(self.n):
                if self.ex[i].beta != 0.0:
                    row_axpy(self.ex[i].beta, self.indices, self.data, self.ex[i].start,
                             self.ex[i].start + self.ex[i].nnz, self.bias, self.bias_col, self.w)
            self._norm_and_margin_sum()

    cdef void _norm_and_margin_sum(self) noexcept nogil:
        cdef double ww = 0.0, la = 0.0
        cdef int64_t j
        for j in range(self.n_w):
            ww += self.w[j] * self.w[j]
        for j in range(self.n):
            la += _linear_term(&self.ex[j], self.ex[j].beta)
        self.est_ww = ww
        self.est_la = la

    # -- one epoch -----------------------------------------------------------------------------

    def epoch(self):
        """One pass over the active examples in a fresh random order: (steps, violation, active
        constraints), as the engine's epoch()."""
        cdef Tally t
        cdef int64_t s, i
        cdef double v
        t.steps = 0
        t.shrunk = 0
        t.violation = 0.0
        t.loss = 0.0
        with nogil:
            shuffle(self.order, self.n_active, &self.rng)      # the engine's generator
            s = 0
            while s < self.n_active:
                i = self.order[s]
                if s + 1 < self.n_active:
                    prefetch(&self.ex[self.order[s + 1]])
                if s + 2 < self.n_active:
                    prefetch(self.data + self.ex[self.order[s + 2]].start)
                v = self._visit(i, &t)
                if v < 0.0:          # the example left the active set: the last active one moves in
                    self.n_active -= 1
                    self.order[s] = self.order[self.n_active]
                    self.order[self.n_active] = i
                    continue
                if v > t.violation:
                    t.violation = v
                s += 1
            self.est_loss = t.loss
            if self.shrinking:
                self.M = t.violation
        return t.steps, t.violation, 2 * self.n_active

    cdef double _visit(self, int64_t i, Tally* t) noexcept nogil:
        """The example's Newton step (module docstring); its violation before the step, or -1
        when it leaves the active set."""
        cdef Example* e = &self.ex[i]
        cdef double wx = self._dot(i)
        cdef double Gp = wx - e.l1, Gn = wx + e.l2
        cdef double b = e.beta, U = e.C, H = e.H, violation, d, nb, loss
        cdef double M = self.M
        # its loss at this w: max(0, g_i1, g_i2) = max(0, -G+, G-) (|y - w.x| - p, without a prior)
        loss = Gn if Gn > -Gp else -Gp
        if loss < 0.0:
            loss = 0.0
        if b == 0.0:
            if Gp < 0.0:
                violation = -Gp
            elif Gn > 0.0:
                violation = Gn
            elif self.shrinking and Gp > M and Gn < -M:
                return self._shrink(e, loss, t)
            else:
                violation = 0.0
        elif b >= U:
            if Gp > 0.0:
                violation = Gp
            elif self.shrinking and Gp < -M:
                return self._shrink(e, loss, t)
            else:
                violation = 0.0
        elif b <= -U:
            if Gn < 0.0:
                violation = -Gn
            elif self.shrinking and Gn > M:
                return self._shrink(e, loss, t)
            else:
                violation = 0.0
        elif b > 0.0:
            violation = fabs(Gp)
        else:
            violation = fabs(Gn)
        t.loss += U * loss
        if violation == 0.0:
            return 0.0
        if H <= 0.0:
            # x_i = 0: the dual is linear in beta_i on each side of 0, w does not move
            nb = U if e.l1 > 0.0 else (-U if e.l2 > 0.0 else 0.0)
        else:
            if Gp < H * b:
                d = -Gp / H
            elif Gn > H * b:
                d = -Gn / H
            else:
                d = -b
            nb = b + d
            if nb > U:
                nb = U
            elif nb < -U:
                nb = -U
        d = nb - b
        if d != 0.0:
            e.beta = nb
            row_axpy(d, self.indices, self.data, e.start, e.start + e.nnz, self.bias,
                     self.bias_col, self.w)
            # ||w + d x||^2 and the margin sum, kept current for approximate_bounds
            self.est_ww += d * (2.0 * wx + d * H)
            self.est_la += _linear_term(e, nb) - _linear_term(e, b)
            t.steps += 1
        return violation

    cdef inline double _shrink(self, Example* e, double loss, Tally* t) noexcept nogil:
        self.shrunk_loss += e.C * loss      # its loss term, as of its last visit
        t.shrunk += 1
        return -1.0

    # -- bounds --------------------------------------------------------------------------------

    def exact_bounds(self):
        """(primal, dual) at the current w over every example, shrunk or not; also sets the
        estimate's terms of the examples out of the active set to these exact ones."""
        cdef double loss = 0.0, out_loss = 0.0, r, wx
        cdef int64_t i
        with nogil:
            for i in range(self.n):
                self.out[i] = 0
            for i in range(self.n_active, self.n):
                self.out[self.order[i]] = 1
            for i in range(self.n):
                wx = self._dot(i)
                r = self.ex[i].l1 - wx
                if self.ex[i].l2 + wx > r:
                    r = self.ex[i].l2 + wx
                if r > 0.0:
                    loss += self.ex[i].C * r
                    if self.out[i]:
                        out_loss += self.ex[i].C * r
            self._norm_and_margin_sum()
            self.shrunk_loss = out_loss
        return 0.5 * self.est_ww + loss, -0.5 * self.est_ww + self.est_la

    def approximate_bounds(self):
        """(primal', dual): Ramanan's eq. 23 estimate from the last visits, as the engine's."""
        return (0.5 * self.est_ww + self.est_loss + self.shrunk_loss,
                -0.5 * self.est_ww + self.est_la)

    def approximate_gap(self):
        """nan: engine.solve uses eq. 23's estimate (approximate_bounds)."""
        return float("nan")

    # -- active set ----------------------------------------------------------------------------

    def unshrink(self):
        """Every example active again."""
        cdef int64_t i
        with nogil:
            for i in range(self.n):
                self.order[i] = i
        self.n_active = self.n
        self.M = INFINITY
        self.est_loss += self.shrunk_loss
        self.shrunk_loss = 0.0

    @property
    def shrinks_whole_examples(self):
        """An example leaves and rejoins the active set whole (engine.solve's -s 4 policy)."""
        return True

    @property
    def shrinking_thresholds(self):
        """(inf, inf): examples shrink by the last epoch's violation, not by thresholds a state
        could carry over."""
        return (INFINITY, INFINITY)

    @property
    def n_crammer_singer_groups(self):
        return 0

    @property
    def n_active_groups(self):
        return self.n_active

    cpdef int64_t n_active_constraints(self):
        return 2 * self.n_active

    @property
    def n_constraints(self):
        return 2 * self.n

    @property
    def all_active(self):
        return self.n_active == self.n

    @property
    def alpha(self):
        """The alphas in the listed order (example by example: a_i1 = max(beta_i, 0), then
        a_i2 = max(-beta_i, 0))."""
        return np.frombuffer(self.alpha_buffer(), dtype=np.float64)

    def alpha_buffer(self):
        """`alpha` as a buffer of doubles (no numpy)."""
        out = zeros_as_numpy(2 * self.n)
        cdef double[::1] o = out
        cdef int64_t i
        cdef double b
        with nogil:
            for i in range(self.n):
                b = self.ex[i].beta
                o[2 * i] = b if b > 0.0 else 0.0
                o[2 * i + 1] = -b if b < 0.0 else 0.0
        return out

    @property
    def w(self):
        """w = sum beta_i x_i (a copy)."""
        return np.array(self.w_[:self.n_w], copy=True)

    def final_w(self):
        """w itself, not a copy, for a caller done with this solver (as DualCD.final_w)."""
        return np.asarray(self.w_[:self.n_w])

    def w_buffer(self):
        """final_w() as a buffer of doubles (no numpy), for a caller done with this solver."""
        return memoryview(self.w_)[:self.n_w]

    @property
    def rng_state(self):
        return self.rng
