"""Crammer and Singer's multiclass problem without constraint records (the n-slack mode's listing).

The problem is the engine's (svmtrain._engine) for the multiclass task's listed constraints: example i
(row x_i, class y_i, cost C_i) has one constraint per class j != y_i,

    x_ij = psi(x_i, y_i) - psi(x_i, j),   margin l_ij,   alpha_ij >= 0,   A_i = sum_j alpha_ij <= C_i,

and w = sum_ij alpha_ij x_ij is kept feature-major (the K weights of feature f at w[f K : f K + K], the
bias feature's after the last column): w_{y_i} gains A_i x_i and w_j loses alpha_ij x_i. Where the
engine holds each constraint as two 32-byte term records plus its own state (about 120 bytes), this
kernel holds, per example, its K alphas and margins and a list of its active classes, and reads the
row itself (LIBLINEAR's Solver_MCSVM_CS layout): building it is a few passes over n x K arrays, and a
visit reads the example's K weights of each of its features in one pass.

A visit solves the example's subproblem exactly by one sort (Crammer and Singer 2001, sec. 6; Keerthi
et al. 2008, sec. 4), as the engine's _visit_cs does, whose docstring derives it; shrinking is
LIBLINEAR's -s 4 (a class at alpha 0 whose gradient is below every movable one's leaves the example's
list; the example leaves the epoch when at most one variable is left free). The class offers the
engine's interface (epoch, approximate_bounds, exact_bounds, recompute_w, unshrink, w, alpha in the
listed order), so svmtrain.engine.solve drives it with the stopping policy of Crammer-Singer groups.
"""

from libc.math cimport INFINITY
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc

from _cs_threshold cimport cs_threshold
from _sparse cimport buffer_address, int32_columns, prefetch, row_sqnorm, shuffle, zeros_as_numpy

from svmtrain import _numpy as np    # (numpy on first use: svmtrain/_numpy.py)


# What a visit reads of its example, in one 48-byte record (one cache line, not one per array).
cdef struct Example:
    int64_t start        # its row is indices/data[start : start + nnz]
    double C             # C_i
    double R             # ||x_i||^2, with the bias feature
    double A             # sum_j alpha_ij
    int32_t nnz
    int32_t y            # its class
    int32_t nact         # its active classes, cls[i (K - 1) : i (K - 1) + nact]
    int32_t _pad


cdef inline double _lm(const double* mg, int64_t j) noexcept nogil:
    """l_ij from the example's margins, or 1 when every margin is 1 (none stored)."""
    return 1.0 if mg == NULL else mg[j]


cdef struct Tally:
    int64_t steps        # coordinates that moved
    int64_t shrunk       # constraints that left the active set
    double violation     # the largest violation of an example (LIBLINEAR's max G - min G)
    double loss          # sum over the examples that stay active of C_i max(0, max_j g_ij)


cdef class CrammerSingerCD:
    """The state: rows, labels, costs, margins, alphas (n x K), w, the active examples and classes."""

    cdef object _keep
    cdef const int32_t* indices
    cdef const double* data
    cdef Example* ex
    cdef double* margin          # n x K, l_ij (0 at j = y_i, never read); NULL when all are 1
    cdef double* alpha_          # n x K, alpha_ij (0 at j = y_i)
    cdef int32_t* cls            # n x (K - 1): the classes j != y_i, the active ones first
    cdef int64_t* order          # the active examples are order[:n_active]
    cdef uint8_t* out            # scratch of exact_bounds: is the example out of the active set
    cdef double* sv              # a visit's row products w_k . x_i (K)
    cdef double* ds              # a visit's D values (K)
    cdef double* dv              # a visit's coefficient per class (K)
    cdef int32_t* dk             # ... and the classes that moved
    cdef double[::1] w_
    cdef double* w
    cdef int64_t n, K, n_cols, n_w, bias_col, n_active, n_active_cons
    cdef double bias
    cdef bint shrinking
    cdef uint64_t rng
    cdef double est_loss, shrunk_loss, est_ww, est_la

    def __cinit__(self):
        self.ex = NULL
        self.margin = self.alpha_ = NULL
        self.cls = NULL
        self.order = NULL
        self.out = NULL
        self.sv = self.ds = self.dv = NULL
        self.dk = NULL

    def __dealloc__(self):
        free(self.ex)
        free(self.margin)
        free(self.alpha_)
        free(self.cls)
        free(self.order)
        free(self.out)
        free(self.sv)
        free(self.ds)
        free(self.dv)
        free(self.dk)

    def __init__(self, indptr, indices, data, y, C, margin, alpha=None, *, int64_t n_cols,
                 int64_t n_classes, double bias=0.0, bint has_bias=False, uint64_t seed=1,
                 bint shrinking=True):
        """Rows (CSR, n_cols columns), class indices y in [0, K), costs C_i, and the margins and hot
        start of the listed constraints (n (K - 1) each, example by example, classes j != y_i
        ascending: the multiclass task's listing order)."""
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        data = np.ascontiguousarray(data, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.int32)
        C = np.ascontiguousarray(C, dtype=np.float64)
        cdef int64_t n = y.shape[0], K = n_classes, i, j, k, c, p, r
        if K < 2:
            raise ValueError("Crammer-Singer needs at least two classes")
        if indptr.shape[0] != n + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) \
                or indptr[n] != len(indices) or data.shape[0] != len(indices):
            raise ValueError("indptr, indices and data are not a CSR store of one row per example")
        if C.shape[0] != n or np.any(~np.isfinite(C)) or np.any(C < 0):
            raise ValueError("C_i must be finite and >= 0, one per example")
        if n and (y.min() < 0 or y.max() >= K):
            raise ValueError("a class index is outside [0, K)")
        if n and np.max(np.diff(indptr)) > INT32_MAX:
            raise ValueError("the kernel takes at most 2**31 - 1 nonzeros per row")
        if n_cols < 0 or K * (n_cols + 1) > INT32_MAX:
            raise ValueError("the kernel takes at most 2**31 - 1 weights")
        indices32 = np.asarray(indices, dtype=np.int64)
        if indices32.shape[0] and (indices32.min() < 0 or indices32.max() >= n_cols):
            raise ValueError("a column index is outside [0, n_cols)")
        indices32 = np.ascontiguousarray(indices32, dtype=np.int32)
        if not np.all(np.isfinite(data)):
            raise ValueError("the rows must be finite")
        m = n * (K - 1)
        margin = np.ascontiguousarray(margin, dtype=np.float64)
        if margin.shape[0] != m or not np.all(np.isfinite(margin)):
            raise ValueError("margin must hold n (K - 1) finite values")
        if alpha is not None:
            alpha = np.array(alpha, dtype=np.float64, copy=True)
            if alpha.shape[0] != m or not np.all(np.isfinite(alpha)):
                raise ValueError("alpha must be finite and one per constraint")
            # hot start: project onto the feasible set (a changed C may have made it infeasible)
            np.clip(alpha, 0.0, None, out=alpha)
            a2 = alpha.reshape(n, K - 1)
            sums = a2.sum(axis=1)
            over = sums > C
            if np.any(over):
                factor = np.where(over, C / np.where(sums > 0, sums, 1.0), 1.0)
                a2[:] = np.minimum(a2 * factor[:, None], C[:, None])
        self._keep = (indices32, data)
        self.indices = <const int32_t*> buffer_address(indices32)
        self.data = <const double*> buffer_address(data)
        self._lay_out(n, K, n_cols, bias, has_bias, seed, shrinking,
                      bool(np.all(margin == 1.0)))
        cdef const double[::1] mg = margin
        cdef const double[::1] al = alpha if alpha is not None else np.zeros(1)
        cdef const int64_t[::1] ip = indptr
        cdef const int32_t[::1] yv = y
        cdef const double[::1] Cv = C
        cdef bint hot = alpha is not None
        cdef double s
        with nogil:
            c = 0
            for i in range(n):
                self.ex[i].y = yv[i]
                self.ex[i].C = Cv[i]
                self.ex[i].start = ip[i]
                self.ex[i].nnz = <int32_t>(ip[i + 1] - ip[i])
                self.ex[i]._pad = 0
                r = 0
                s = 0.0
                for j in range(K):
                    if j == yv[i]:
                        continue
                    if self.margin != NULL:
                        self.margin[i * K + j] = mg[c]
                    if hot:
                        self.alpha_[i * K + j] = al[c]
                        s += al[c]
                    self.cls[i * (K - 1) + r] = <int32_t>j
                    r += 1
                    c += 1
                self.ex[i].A = s
                self.ex[i].R = row_sqnorm(self.data, ip[i], ip[i + 1], bias, self.bias_col)
        self.est_loss = 0.0
        self.shrunk_loss = 0.0
        self.unshrink()
        self.recompute_w()

    cdef int _lay_out(self, int64_t n, int64_t K, int64_t n_cols, double bias, bint has_bias,
                      uint64_t seed, bint shrinking, bint unit) except -1:
        """The shape of the state (n examples, K classes, the bias column, w of K x width
        weights, feature-major, allocated as numpy allocates) and its arrays (alpha all 0;
        margins only when not all 1)."""
        self.n, self.K, self.n_cols = n, K, n_cols
        self.bias = bias
        self.bias_col = K * n_cols if has_bias else -1
        self.n_w = K * (n_cols + (1 if has_bias else 0))
        self.shrinking = shrinking
        self.rng = seed
        self.w_ = zeros_as_numpy(max(self.n_w, 1))
        self.w = &self.w_[0]
        self.ex = <Example*> malloc(max(n, 1) * sizeof(Example))
        if not unit:
            self.margin = <double*> calloc(max(n * K, 1), sizeof(double))
        self.alpha_ = <double*> calloc(max(n * K, 1), sizeof(double))
        self.cls = <int32_t*> malloc(max(n * (K - 1), 1) * sizeof(int32_t))
        self.order = <int64_t*> malloc(max(n, 1) * sizeof(int64_t))
        self.out = <uint8_t*> malloc(max(n, 1) * sizeof(uint8_t))
        self.sv = <double*> malloc(K * sizeof(double))
        self.ds = <double*> malloc((K + 1) * sizeof(double))
        self.dv = <double*> malloc(K * sizeof(double))
        self.dk = <int32_t*> malloc(K * sizeof(int32_t))
        if (self.ex == NULL or (self.margin == NULL and not unit) or self.alpha_ == NULL
                or self.cls == NULL or self.order == NULL or self.out == NULL
                or self.sv == NULL or self.ds == NULL or self.dv == NULL or self.dk == NULL):
            raise MemoryError("cannot allocate the Crammer-Singer state")
        return 0

    @staticmethod
    def from_rows(indptr, indices, data, y, double C, *, int64_t n_cols, int64_t n_classes,
                  double bias=0.0, bint has_bias=False, uint64_t seed=1, bint shrinking=True):
        """The kernel of every constraint (i, j), j != y_i, l_ij = 1, C_i = C, built from plain
        buffers (indptr, indices and the class indices y int64, data float64) without numpy:
        `train`'s lean path (svmtrain.lean_train). The state is the one __init__ lays out from
        the multiclass task's listing of those rows (unit margins, no hot start), field for
        field, so its epochs take the same steps (tests/test_lean_train.py compares the models)."""
        cdef const int64_t[::1] ip = indptr, yv = y
        cdef const double[::1] data_v = data
        cdef int64_t n = yv.shape[0], K = n_classes, nnz = len(indices), i, j, r
        cdef CrammerSingerCD self = CrammerSingerCD.__new__(CrammerSingerCD)
        cdef int32_t* i32
        if K < 2:
            raise ValueError("Crammer-Singer needs at least two classes")
        if ip.shape[0] != n + 1 or ip[0] != 0 or ip[n] != nnz or data_v.shape[0] != nnz:
            raise ValueError("indptr, indices and data are not a CSR store of one row per example")
        if not (C >= 0.0 and C < INFINITY):
            raise ValueError("C_i must be finite and >= 0, one per example")
        if n_cols < 0 or K * (n_cols + 1) > INT32_MAX:
            raise ValueError("the kernel takes at most 2**31 - 1 weights")
        for i in range(n):
            if ip[i + 1] < ip[i] or ip[i + 1] - ip[i] > INT32_MAX:
                raise ValueError("indptr is not a CSR row pointer")
            if yv[i] < 0 or yv[i] >= K:
                raise ValueError("a class index is outside [0, K)")
        indices32 = int32_columns(indices, n_cols, &i32)
        self._keep = (indices32, data)
        self.indices = i32
        self.data = &data_v[0] if nnz else NULL
        self._lay_out(n, K, n_cols, bias, has_bias, seed, shrinking, True)
        for i in range(n):
            self.ex[i].y = <int32_t>yv[i]
            self.ex[i].C = C
            self.ex[i].start = ip[i]
            self.ex[i].nnz = <int32_t>(ip[i + 1] - ip[i])
            self.ex[i]._pad = 0
            r = 0
            for j in range(K):
                if j != yv[i]:
                    self.cls[i * (K - 1) + r] = <int32_t>j
                    r += 1
            self.ex[i].A = 0.0
            self.ex[i].R = row_sqnorm(self.data, ip[i], ip[i + 1], bias, self.bias_col)
            if not (self.ex[i].R < INFINITY):
                raise ValueError("from_rows: a row's squared norm overflows")
        self.est_loss = 0.0
        self.shrunk_loss = 0.0
        self.unshrink()
        self.recompute_w()
        return self

    def alpha_buffer(self):
        """`alpha` as a buffer of doubles (a copy; no numpy)."""
        out = memoryview(bytearray(8 * max(self.n * (self.K - 1), 1))).cast("d")
        self._alpha_into(out)
        return out[:self.n * (self.K - 1)]

    def w_buffer(self):
        """final_w() as a buffer of doubles (no numpy)."""
        return memoryview(self.w_)[:self.n_w]

    cdef void _alpha_into(self, double[::1] o) noexcept:
        cdef int64_t i, j, c = 0, K = self.K
        with nogil:
            for i in range(self.n):
                for j in range(K):
                    if j != self.ex[i].y:
                        o[c] = self.alpha_[i * K + j]
                        c += 1

    # -- w(alpha) ------------------------------------------------------------------------------

    cdef void _add_row(self, int64_t i, int64_t nk, const int32_t* ks, const double* cs) noexcept nogil:
        """w_{ks[a]} += cs[a] x_i for a < nk, in one pass over the row."""
        cdef int64_t p, a, K = self.K
        cdef double* wp
        cdef double v
        for p in range(self.ex[i].start, self.ex[i].start + self.ex[i].nnz):
            wp = self.w + K * self.indices[p]
            v = self.data[p]
            for a in range(nk):
                wp[ks[a]] += cs[a] * v
        if self.bias_col >= 0:
            wp = self.w + self.bias_col
            for a in range(nk):
                wp[ks[a]] += cs[a] * self.bias

    cdef void _all_scores(self, int64_t i, double* sv) noexcept nogil:
        """sv[k] = w_k . x_i for every class, in one pass over the row (K contiguous weights)."""
        cdef int64_t p, k, K = self.K
        cdef const double* wp
        cdef double v
        for k in range(K):
            sv[k] = 0.0
        for p in range(self.ex[i].start, self.ex[i].start + self.ex[i].nnz):
            wp = self.w + K * self.indices[p]
            v = self.data[p]
            for k in range(K):
                sv[k] += wp[k] * v
        if self.bias_col >= 0:
            wp = self.w + self.bias_col
            for k in range(K):
                sv[k] += wp[k] * self.bias

    def recompute_w(self):
        """Set w = sum alpha_ij x_ij afresh (removes the drift of incremental updates)."""
        cdef int64_t i, j, nk, K = self.K
        cdef double a
        with nogil:
            for j in range(self.w_.shape[0]):
                self.w[j] = 0.0
            for i in range(self.n):
                if self.ex[i].A == 0.0:
                    continue
                nk = 0
                for j in range(K):
                    a = self.alpha_[i * K + j]
                    if j == self.ex[i].y:
                        a = -self.ex[i].A
                    if a != 0.0:
                        self.dk[nk] = <int32_t>j
                        self.dv[nk] = -a
                        nk += 1
                self._add_row(i, nk, self.dk, self.dv)
            self._norm_and_margin_sum()

    cdef void _norm_and_margin_sum(self) noexcept nogil:
        cdef double ww = 0.0, la = 0.0
        cdef int64_t j
        for j in range(self.n_w):
            ww += self.w[j] * self.w[j]
        for j in range(self.n * self.K):
            la += (1.0 if self.margin == NULL else self.margin[j]) * self.alpha_[j]
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
                self._prefetch(s)
                v = self._visit(i, &t)
                if v < 0.0:          # the example left the active set: the last active one moves in
                    self.n_active -= 1
                    self.order[s] = self.order[self.n_active]
                    self.order[self.n_active] = i
                    continue
                if v > t.violation:
                    t.violation = v
                s += 1
            self.n_active_cons -= t.shrunk
            self.est_loss = t.loss
        return t.steps, t.violation, self.n_active_cons

    cdef inline void _prefetch_example(self, int64_t j) noexcept nogil:
        cdef int64_t K = self.K
        prefetch(&self.ex[j])
        prefetch(self.alpha_ + j * K)
        prefetch(self.alpha_ + j * K + K - 1)
        prefetch(self.cls + j * (K - 1))

    cdef inline void _prefetch_row(self, int64_t j) noexcept nogil:
        cdef Example* e = &self.ex[j]
        prefetch(self.indices + e.start)
        prefetch(self.data + e.start)
        prefetch(self.data + e.start + e.nnz - 1)

    cdef inline void _prefetch(self, int64_t s) noexcept nogil:
        """Visits are random accesses, bound by memory latency: ask early for what the next visits
        read. The next one is order[s + 1], or order[n_active - 1] when this one leaves the active
        set (it moves into place s): the records, alphas and class lists of both, and of
        order[s + 2]; the rows of the first two (their records asked for a visit ago)."""
        cdef int64_t last = self.n_active - 1
        if s + 2 <= last:
            self._prefetch_example(self.order[s + 2])
        if s + 1 <= last:
            self._prefetch_row(self.order[s + 1])
        if s + 1 < last:
            self._prefetch_row(self.order[last])
            self._prefetch_example(self.order[last - 1])

    cdef double _visit(self, int64_t i, Tally* t) noexcept nogil:
        """Example i's subproblem over its active classes, solved exactly (see _engine._visit_cs for
        the derivation); its violation, or -1 when it leaves the active set.

        With R = ||x_i||^2, S_k = w_k . x_i and A = sum_j alpha_ij: g_j = l_ij - S_y + S_j; the new
        point is alpha_j = max(0, (S_j + l_ij + R alpha_j - beta) / R), beta from the sorted
        D = (S_y - R A + R C, S_j + l_ij + R alpha_j ...)."""
        cdef Example* e = &self.ex[i]
        cdef int64_t K = self.K, m = e.nact, r, q, p, nk = 0, steps = 0
        cdef int32_t yi = e.y
        cdef int32_t* cl = self.cls + i * (K - 1)
        cdef double* al = self.alpha_ + i * K
        cdef const double* mg = NULL if self.margin == NULL else self.margin + i * K
        cdef double* sv = self.sv
        cdef double* Ds = self.ds
        cdef double Cg = e.C, R = e.R, A = e.A, Sy, G, a, u, d, beta
        cdef double gmax = -INFINITY, gsup = INFINITY, glow, violation, ww = 0.0, la = 0.0
        cdef double delta = 0.0, v
        cdef const double* wp
        cdef bint at_bound
        if R <= 0.0:
            return self._visit_empty(i, t)
        # the row products at y and the active classes: all K in one contiguous pass when most
        # classes are active, else gathered (LIBLINEAR's way)
        if 2 * (m + 1) >= K:
            self._all_scores(i, sv)
        else:
            sv[yi] = 0.0
            for r in range(m):
                sv[cl[r]] = 0.0
            for p in range(e.start, e.start + e.nnz):
                wp = self.w + K * self.indices[p]
                v = self.data[p]
                sv[yi] += wp[yi] * v
                for r in range(m):
                    sv[cl[r]] += wp[cl[r]] * v
            if self.bias_col >= 0:
                wp = self.w + self.bias_col
                sv[yi] += wp[yi] * self.bias
                for r in range(m):
                    sv[cl[r]] += wp[cl[r]] * self.bias
        Sy = sv[yi]
        at_bound = A >= Cg * (1.0 - 1e-12)
        for r in range(m):
            G = _lm(mg, cl[r]) - Sy + sv[cl[r]]
            if G > gmax:
                gmax = G
            if al[cl[r]] > 0.0 and G < gsup:
                gsup = G
        # LIBLINEAR's violation max G - min_{below its bound} G, relative to G_y
        glow = gsup if (at_bound or gsup < 0.0) else 0.0
        violation = (gmax if gmax > 0.0 else 0.0) - glow
        if violation < 0.0:                          # C_i = 0: nothing can move (glow is +inf)
            violation = 0.0
        if self.shrinking:
            # a class at 0 whose gradient is below every movable one's stays at 0 (be_shrunk)
            r = 0
            while r < m:
                q = cl[r]
                if al[q] <= 0.0 and _lm(mg, q) - Sy + sv[q] < glow:
                    m -= 1
                    cl[r] = cl[m]
                    cl[m] = <int32_t>q
                    continue
                r += 1
            t.shrunk += e.nact - m
            # the example is fixed when at most one variable is left: none besides y, or y at its
            # bound C with no wish to grow (0 < glow) and one class
            if m == 0 or (at_bound and glow > 0.0 and m <= 1):
                t.shrunk += m
                e.nact = 0
                self.shrunk_loss += Cg * gmax if gmax > 0.0 else 0.0
                return -1.0
            e.nact = <int32_t>m
        t.loss += Cg * gmax if gmax > 0.0 else 0.0
        if violation <= 1e-12:
            return violation
        # D_y = B_y + R C, D_j = B_j; beta from the sorted D (LIBLINEAR's solve_sub_problem)
        Ds[0] = Sy - R * A + R * Cg
        for r in range(m):
            q = cl[r]
            Ds[r + 1] = sv[q] + _lm(mg, q) + R * al[q]
        beta = cs_threshold(Ds, m, R, Cg)
        for r in range(m):
            q = cl[r]
            a = al[q]
            u = (sv[q] + _lm(mg, q) + R * a - beta) / R
            if u < 0.0:
                u = 0.0
            d = u - a
            if d != 0.0:
                # dual terms: ||w||^2 gains -2 d S_j + R d^2 at class j; l.a gains l d
                ww += d * (-2.0 * sv[q] + R * d)
                la += d * _lm(mg, q)
                self.dk[nk] = <int32_t>q
                self.dv[nk] = -d
                nk += 1
                delta += d
                al[q] = u
                steps += 1
        if steps:
            ww += delta * (2.0 * Sy + R * delta)
            e.A = A + delta
            self.dk[nk] = yi
            self.dv[nk] = delta
            nk += 1
            self.est_ww += ww
            self.est_la += la
            t.steps += steps
            self._add_row(i, nk, self.dk, self.dv)
        return violation

    cdef double _visit_empty(self, int64_t i, Tally* t) noexcept nogil:
        """x_i = 0: the dual is linear in the example's alphas, so C_i goes to its largest positive
        margin (nothing if none is); w does not move. The example then leaves the active set."""
        cdef Example* e = &self.ex[i]
        cdef int64_t K = self.K, j, best = -1, m = e.nact
        cdef double* al = self.alpha_ + i * K
        cdef const double* mg = NULL if self.margin == NULL else self.margin + i * K
        cdef double gmax = 0.0, la = 0.0
        for j in range(K):
            if j != e.y and _lm(mg, j) > gmax:
                gmax = _lm(mg, j)
                best = j
        for j in range(K):
            if j != e.y:
                la -= _lm(mg, j) * al[j]
                al[j] = 0.0
        e.A = 0.0
        if best >= 0 and e.C > 0.0:
            al[best] = e.C
            e.A = e.C
            la += gmax * e.C
            t.steps += 1
        self.est_la += la
        self.shrunk_loss += e.C * gmax      # its loss term, whatever alpha
        t.shrunk += m
        e.nact = 0
        return -1.0

    # -- bounds --------------------------------------------------------------------------------

    def exact_bounds(self):
        """(primal, dual) at the current w over every constraint, shrunk or not; also sets the
        estimate's terms of the examples out of the active set to these exact ones (the engine's
        exact_bounds for Crammer-Singer groups)."""
        cdef double loss = 0.0, out_loss = 0.0, gmax, G, Sy
        cdef int64_t i, j, K = self.K
        with nogil:
            for i in range(self.n):
                self.out[i] = 0
            for i in range(self.n_active, self.n):
                self.out[self.order[i]] = 1
            for i in range(self.n):
                self._all_scores(i, self.sv)
                Sy = self.sv[self.ex[i].y]
                gmax = 0.0
                for j in range(K):
                    if j != self.ex[i].y:
                        G = (1.0 if self.margin == NULL else self.margin[i * K + j]) - Sy + self.sv[j]
                        if G > gmax:
                            gmax = G
                loss += self.ex[i].C * gmax
                if self.out[i]:
                    out_loss += self.ex[i].C * gmax
            self._norm_and_margin_sum()
            self.shrunk_loss = out_loss
        return 0.5 * self.est_ww + loss, -0.5 * self.est_ww + self.est_la

    def approximate_bounds(self):
        """(primal', dual): Ramanan's eq. 23 estimate from the last visits, as the engine's."""
        return (0.5 * self.est_ww + self.est_loss + self.shrunk_loss,
                -0.5 * self.est_ww + self.est_la)

    # -- active set ----------------------------------------------------------------------------

    def unshrink(self):
        """Every example and class active again."""
        cdef int64_t i
        with nogil:
            for i in range(self.n):
                self.order[i] = i
                self.ex[i].nact = <int32_t>(self.K - 1)
        self.n_active = self.n
        self.n_active_cons = self.n * (self.K - 1)
        self.est_loss += self.shrunk_loss
        self.shrunk_loss = 0.0

    def approximate_gap(self):
        """nan: the gap-term estimate is for one-constraint groups; engine.solve uses eq. 23's."""
        return float("nan")

    @property
    def shrinking_thresholds(self):
        """(inf, inf): examples shrink whole by LIBLINEAR -s 4's rule, not by thresholds a state
        could carry over."""
        return (INFINITY, INFINITY)

    @property
    def n_crammer_singer_groups(self):
        return self.n

    @property
    def n_active_groups(self):
        return self.n_active

    cpdef int64_t n_active_constraints(self):
        return self.n_active_cons

    @property
    def n_constraints(self):
        return self.n * (self.K - 1)

    @property
    def all_active(self):
        return self.n_active_cons == self.n * (self.K - 1)

    @property
    def alpha(self):
        """The alphas in the listed order (example by example, classes j != y_i ascending)."""
        out = np.empty(self.n * (self.K - 1), dtype=np.float64)
        if out.shape[0]:
            self._alpha_into(out)
        return out

    @property
    def w(self):
        """w = sum alpha_ij x_ij, feature-major (a copy)."""
        return np.array(self.w_[:self.n_w], copy=True)

    def final_w(self):
        """w itself, not a copy, for a caller done with this solver (as DualCD.final_w)."""
        return np.asarray(self.w_[:self.n_w])

    @property
    def rng_state(self):
        return self.rng
