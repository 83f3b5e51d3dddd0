"""The dual coordinate engine against a brute-force QP on tiny problems with shared slacks."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmtrain._engine import DualCD
from svmtrain.engine import ConstraintCache, relative_gap, solve


def random_cache(seed, n_rows=14, n_cols=6, n_groups=5, density=0.6, bias=None, shared_rows=False):
    """One term per constraint (the one-row layout): x_c = scale_c X[row_c]."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_cols, density=density, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    X.sort_indices()
    n = n_rows * 2 if shared_rows else n_rows
    row = np.concatenate([np.arange(n_rows)] * 2) if shared_rows else np.arange(n_rows)
    group = np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, n - n_groups)])
    return ConstraintCache.one_term(
        indptr=X.indptr.astype(np.int64), indices=X.indices.astype(np.int64), data=X.data,
        n_cols=n_cols, row=row, scale=rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 2.0, n),
        margin=rng.uniform(-0.5, 2.0, n), group=group, C_group=rng.uniform(0.1, 3.0, n_groups),
        bias=bias)


def binary_cache(seed, n, n_cols):
    """LIBLINEAR's case: n groups of one, scales +-1, margins 1, one C (the two-kind table)."""
    c = random_cache(seed, n_rows=n, n_cols=n_cols, n_groups=n)
    c.group = np.arange(n)
    c.term_scale = np.sign(c.term_scale)
    c.margin = np.ones(n)
    c.C_group = np.full(n, 0.5)
    return c


def random_store(rng, seed, n_rows, n_cols, density, unit_row):
    """A CSR store, plus (unit_row) a last row with one 1.0 in column 0, as the sequence task has."""
    X = sp.random(n_rows, n_cols, density=density, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    if unit_row:
        X = sp.vstack([X, sp.csr_matrix(([1.0], ([0], [0])), shape=(1, n_cols))]).tocsr()
    X.sort_indices()
    return X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.float64)


def terms_cache(store, n_cols, terms, margin, group, C_group, n_w, bias=None, stride=1):
    """A cache from a list of constraints, each a list of (row, scale, offset, carries_bias) terms."""
    tptr = np.concatenate([[0], np.cumsum([len(t) for t in terms])]).astype(np.int64)
    flat = [term for ts in terms for term in ts]
    col = (lambda i, dtype: np.array([t[i] for t in flat], dtype=dtype).reshape(-1))
    return ConstraintCache(*store, n_cols=n_cols, tptr=tptr, term_row=col(0, np.int64),
                           term_scale=col(1, np.float64), term_offset=col(2, np.int64),
                           term_bias=col(3, bool), margin=np.asarray(margin, np.float64),
                           group=np.asarray(group, np.int64), C_group=np.asarray(C_group, np.float64),
                           n_w=n_w, bias=bias, stride=stride)


def random_terms_cache(seed, n_rows=10, n_cols=5, n_cons=24, n_groups=6, bias=None, max_terms=4):
    """Constraints of 0 to max_terms terms: shared rows, rows repeated in one constraint (at the same
    offset and at overlapping ones), blocks at any offset, the bias on some terms, a unit row placed
    at "transition" columns near the end of w (where offset + n_cols passes n_w), and one constraint
    whose two terms cancel (x_c = 0)."""
    rng = np.random.default_rng(seed)
    store = random_store(rng, seed, n_rows, n_cols, 0.6, unit_row=True)
    unit = n_rows
    width = n_cols + (bias is not None)
    n_w = 3 * width + 4
    terms = []
    for c in range(n_cons):
        ts = []
        for _ in range(rng.integers(0 if c % 11 == 5 else 1, max_terms + 1)):
            kind = rng.random()
            if kind < 0.15:      # a transition count on the unit row
                ts.append((unit, float(rng.integers(-2, 3)), 3 * width + rng.integers(0, 4), False))
            elif kind < 0.3 and ts and ts[0][0] != unit:   # the first row again, at its offset
                ts.append((ts[0][0], rng.normal(), ts[0][2], ts[0][3]))
            else:
                ts.append((rng.integers(0, n_rows), rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0),
                           rng.integers(0, 3 * width - n_cols), bool(rng.random() < 0.5)))
        terms.append(ts)
    r, o = rng.integers(0, n_rows), width
    terms[3] = [(r, 1.0, o, True), (r, -1.0, o, True)]           # x = 0
    group = np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, n_cons - n_groups)])
    return terms_cache(store, n_cols, terms, rng.uniform(-0.5, 2.0, n_cons), group,
                       rng.uniform(0.1, 3.0, n_groups), n_w, bias)


def multiclass_cache(seed, n=10, n_cols=5, K=4, C=0.3, bias=None, feature_major=False, with_y=True):
    """Crammer-Singer: x_ij = phi(x_i, y_i) - phi(x_i, j) for every j, j == y_i included (x = 0,
    l = 0) unless not `with_y` (what the multiclass task emits), one group (slack) per example;
    class block k at offset k * width, or (feature_major) class k at offset k with stride K."""
    rng = np.random.default_rng(seed)
    store = random_store(rng, seed, n, n_cols, 0.7, unit_row=False)
    y = rng.integers(0, K, n)
    width = n_cols + (bias is not None)
    at = 1 if feature_major else width
    pairs = [(i, j) for i in range(n) for j in range(K) if with_y or j != y[i]]
    # the task's order of terms (+ then -), and the other order on some constraints
    terms = [[(i, 1.0, y[i] * at, True), (i, -1.0, j * at, True)][::(-1 if (i + j) % 3 == 0 else 1)]
             for i, j in pairs]
    margin = [float(j != y[i]) for i, j in pairs]
    group = np.array([i for i, _ in pairs], dtype=np.int64)
    return terms_cache(store, n_cols, terms, margin, group, np.full(n, C), K * width, bias,
                       stride=K if feature_major else 1)


def strided_terms_cache(seed, n_rows=10, n_cols=5, K=3, n_cons=24, n_groups=6, bias=None, max_terms=4):
    """The sequence task's feature-major layout (stride K): emission terms at offsets 0..K-1 (the
    bias on some), terms at offsets K..2K-1 that overlap the others' columns, rows repeated in one
    constraint, and a unit row at "transition" columns K * width + 0..3 after the emissions."""
    rng = np.random.default_rng(seed)
    store = random_store(rng, seed, n_rows, n_cols, 0.6, unit_row=True)
    unit = n_rows
    width = n_cols + (bias is not None)
    n_w = K * width + 4
    terms = []
    for c in range(n_cons):
        ts = []
        for _ in range(rng.integers(0 if c % 11 == 5 else 1, max_terms + 1)):
            kind = rng.random()
            if kind < 0.2:
                ts.append((unit, float(rng.integers(-2, 3)), K * width + rng.integers(0, 4), False))
            elif kind < 0.3 and ts and ts[0][0] != unit:
                ts.append((ts[0][0], rng.normal(), ts[0][2], ts[0][3]))
            else:
                o = int(rng.integers(0, 2 * K))
                ts.append((rng.integers(0, n_rows), rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0),
                           o, bool(o < K and rng.random() < 0.5)))
        terms.append(ts)
    group = np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, n_cons - n_groups)])
    return terms_cache(store, n_cols, terms, rng.uniform(-0.5, 2.0, n_cons), group,
                       rng.uniform(0.1, 3.0, n_groups), n_w, bias, stride=K)


def dense_constraints(c):
    """The constraint vectors x_c as the rows of a dense matrix (n_constraints x n_w)."""
    A = np.zeros((c.n_constraints, c.n_w))
    for k in range(c.n_constraints):
        for t in range(c.tptr[k], c.tptr[k + 1]):
            r, s, o = c.term_row[t], c.term_scale[t], c.term_offset[t]
            lo, hi = c.indptr[r], c.indptr[r + 1]
            np.add.at(A[k], o + c.stride * c.indices[lo:hi], s * c.data[lo:hi])
            if c.bias is not None and c.term_bias[t]:
                A[k, o + c.stride * c.n_cols] += s * c.bias
    return A


def project_capped_simplices(V, cap):
    """Row by row, the Euclidean projection onto {a >= 0, sum(a) <= cap}; rows padded with -inf."""
    A = np.maximum(V, 0.0)
    over = A.sum(axis=1) > cap
    if np.any(over):
        U = -np.sort(-V[over], axis=1)
        css = np.cumsum(np.where(np.isfinite(U), U, 0.0), axis=1) - cap[over, None]
        j = np.arange(1, U.shape[1] + 1)
        k = (U - css / j > 0).cumsum(axis=1).argmax(axis=1)     # the last index where it holds
        theta = css[np.arange(len(k)), k] / (k + 1)
        A[over] = np.maximum(V[over] - theta[:, None], 0.0)
    return A


def brute_force(c, iterations=20000):
    """max_a -1/2 ||A'a||^2 + l.a  s.t. a >= 0, sum of each group <= C_g, by accelerated projected
    gradient (FISTA): an algorithm independent of the engine's coordinate steps."""
    A = dense_constraints(c)
    K = A @ A.T
    L = max(np.linalg.eigvalsh(K).max(), 1e-12)
    # the groups as the rows of a padded matrix, to project them all at once
    order = np.argsort(c.group, kind="stable")
    size = np.bincount(c.group, minlength=len(c.C_group))
    slot = np.arange(len(order)) - np.repeat(np.cumsum(size) - size, size)
    cells = (c.group[order], slot)

    def project(v):
        V = np.full((len(size), max(size.max(initial=0), 1)), -np.inf)
        V[cells] = v[order]
        out = np.empty_like(v)
        out[order] = project_capped_simplices(V, c.C_group)[cells]
        return out

    a = y = np.zeros(A.shape[0])
    t = 1.0
    for _ in range(iterations):
        a_next = project(y + (c.margin - K @ y) / L)
        t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
        y = a_next + (t - 1) / t_next * (a_next - a)
        a, t = a_next, t_next
    return -0.5 * a @ K @ a + c.margin @ a, A


def primal(c, w):
    A = dense_constraints(c)
    g = c.margin - A @ w
    loss = sum(c.C_group[k] * max(0.0, g[c.group == k].max(initial=0.0)) for k in range(len(c.C_group)))
    return 0.5 * w @ w + loss


def make_cache(kind, seed):
    if kind.startswith("terms"):
        return random_terms_cache(seed, bias=1.5 if kind == "terms_bias" else None)
    if kind.startswith("strided"):
        return strided_terms_cache(seed, bias=1.5 if kind == "strided_bias" else None)
    if kind.startswith("cs_multiclass"):       # the exact Crammer-Singer visit
        return multiclass_cache(seed, bias=1.5 if kind.endswith("bias") else None, with_y=False,
                                feature_major=kind.startswith("cs_multiclass_fm"))
    if kind.startswith("fm_multiclass"):
        return multiclass_cache(seed, bias=1.5 if kind == "fm_multiclass_bias" else None,
                                feature_major=True)
    if kind.startswith("multiclass"):
        return multiclass_cache(seed, bias=1.5 if kind == "multiclass_bias" else None)
    return random_cache(seed, bias=1.5 if kind == "bias" else None, shared_rows=kind == "shared_rows")


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("kind", ["plain", "bias", "shared_rows", "terms", "terms_bias", "multiclass",
                                  "multiclass_bias", "strided", "strided_bias", "fm_multiclass",
                                  "fm_multiclass_bias", "cs_multiclass_bias", "cs_multiclass_fm"])
def test_engine_reaches_the_brute_force_optimum(seed, kind):
    c = make_cache(kind, seed)
    opt, A = brute_force(c)
    sol = solve(c, epsilon=1e-10, max_epochs=20000, seed=seed)
    assert sol.converged
    # the certificate brackets the optimum, and both ends are tight
    assert sol.dual == pytest.approx(opt, rel=1e-7, abs=1e-9)
    assert sol.primal - sol.dual <= 1e-8 * max(1.0, abs(opt))
    # the reported figures are those of the returned w and alpha
    assert np.allclose(sol.w, A.T @ sol.alpha, atol=1e-12)
    assert sol.primal == pytest.approx(primal(c, sol.w), rel=1e-12, abs=1e-12)
    # feasibility
    assert np.all(sol.alpha >= 0)
    sums = np.bincount(c.group, weights=sol.alpha, minlength=len(c.C_group))
    assert np.all(sums <= c.C_group * (1 + 1e-12))


def test_one_constraint_groups_match_liblinear_problem():
    """Binary SVM as groups of one: the optimum of LIBLINEAR's -s 3 dual (box constraints)."""
    c = random_cache(3, n_rows=30, n_groups=30)
    c.group = np.arange(30)
    c.C_group = np.full(30, 0.7)
    opt, _ = brute_force(c)
    sol = solve(c, epsilon=1e-12, max_epochs=20000, seed=0)
    assert sol.dual == pytest.approx(opt, rel=1e-9)


def test_same_seed_same_bits_and_seeds_differ_in_path():
    c = random_cache(5, n_rows=40, n_groups=12)
    a = solve(c, epsilon=1e-6, max_epochs=1000, seed=7)
    b = solve(c, epsilon=1e-6, max_epochs=1000, seed=7)
    assert a.w.tobytes() == b.w.tobytes() and a.alpha.tobytes() == b.alpha.tobytes()
    other = solve(c, epsilon=1e-6, max_epochs=1000, seed=8)
    assert other.w.tobytes() != a.w.tobytes()          # a different order of steps
    assert other.dual == pytest.approx(a.dual, rel=1e-5)


def test_hot_start_from_the_optimum_stops_at_once_and_projects_infeasible_alphas():
    c = random_cache(9)
    sol = solve(c, epsilon=1e-9, max_epochs=20000, seed=1)
    again = solve(c, epsilon=1e-9, max_epochs=20000, seed=1, alpha=sol.alpha)
    assert again.epochs <= 2 and again.dual == pytest.approx(sol.dual, rel=1e-12)
    # scale C down: the hot start must be made feasible, then converge to the new optimum
    c.C_group = c.C_group * 0.3
    opt, _ = brute_force(c)
    hot = solve(c, epsilon=1e-10, max_epochs=20000, seed=1, alpha=sol.alpha * 5)
    assert hot.converged and hot.dual == pytest.approx(opt, rel=1e-7)


def test_shrinking_does_not_change_the_optimum():
    c = random_cache(11, n_rows=60, n_cols=8, n_groups=25)
    with_s = solve(c, epsilon=1e-10, max_epochs=50000, seed=2, shrinking=True)
    without = solve(c, epsilon=1e-10, max_epochs=50000, seed=2, shrinking=False)
    assert with_s.dual == pytest.approx(without.dual, rel=1e-9)


def test_degenerate_problems():
    # zero rows (x_c = 0) and no columns at all: the dual is linear, alphas go to the bounds
    c = ConstraintCache.one_term(indptr=np.zeros(4, np.int64), indices=np.zeros(0, np.int64),
                                 data=np.zeros(0), n_cols=0, row=np.arange(3), scale=np.ones(3),
                                 margin=np.array([1.0, -1.0, 0.5]), group=np.array([0, 1, 1]),
                                 C_group=np.array([2.0, 1.0]))
    sol = solve(c, epsilon=1e-12, max_epochs=100, seed=1)
    assert sol.converged
    assert sol.dual == pytest.approx(2.0 * 1.0 + 1.0 * 0.5)
    assert sol.primal == pytest.approx(sol.dual)
    # the same with terms: no terms at all, terms that cancel, and a term on an empty row
    store = (np.array([0, 1, 1]), np.array([1]), np.array([2.0]))
    c = terms_cache(store, 2, [[], [(0, 1.0, 1, True), (0, -1.0, 1, True)], [(1, 3.0, 0, True)]],
                    [1.0, -1.0, 0.5], [0, 1, 1], [2.0, 1.0], n_w=4, bias=0.5)
    c.bias = None
    sol = solve(c, epsilon=1e-12, max_epochs=100, seed=1)
    assert sol.converged and sol.dual == pytest.approx(2.5) and sol.primal == pytest.approx(2.5)
    assert sol.w.shape == (4,) and not sol.w.any()
    # an empty cache
    empty = ConstraintCache.one_term(indptr=np.zeros(1, np.int64), indices=np.zeros(0, np.int64),
                                     data=np.zeros(0), n_cols=3, row=np.zeros(0, np.int64),
                                     scale=np.zeros(0), margin=np.zeros(0), group=np.zeros(0, np.int64),
                                     C_group=np.zeros(0))
    sol = solve(empty, epsilon=1e-3, max_epochs=5, seed=1)
    assert sol.converged and sol.primal == 0.0 and sol.dual == 0.0 and sol.w.shape == (3,)


def engine_args(c):
    return dict(indptr=c.indptr, indices=c.indices, data=c.data, tptr=c.tptr, term_row=c.term_row,
                term_scale=c.term_scale, term_offset=c.term_offset, term_bias=c.term_bias,
                margin=c.margin, group=c.group, C_group=c.C_group, n_cols=c.n_cols, n_w=c.n_w,
                bias=c.bias or 0.0, has_bias=c.bias is not None, stride=c.stride)


@pytest.mark.parametrize("make", [lambda: random_cache(1), lambda: random_terms_cache(1, bias=1.0)])
def test_the_edge_rejects_inconsistent_arrays(make):
    c = make()
    ok = engine_args(c)
    DualCD(**ok)

    def rejects(match, **change):
        with pytest.raises(ValueError, match=match):
            DualCD(**{**ok, **change})

    rejects("column index", n_cols=2)
    rejects("group", group=c.group + 100)
    rejects("finite", margin=np.full_like(c.margin, np.nan))
    rejects("finite", term_scale=np.full(c.n_terms, np.inf))
    rejects("2\\*\\*31 - 1 columns", n_cols=2**31)       # the engine keeps int32 column indices
    rejects("term pointer", tptr=c.tptr[::-1].copy())
    rejects("tptr\\[-1\\] terms", term_row=c.term_row[:-1])
    rejects("tptr\\[-1\\] terms", term_bias=np.ones(c.n_terms + 1, bool))
    rejects("row outside", term_row=np.full(c.n_terms, len(c.indptr) - 1))
    rejects("negative", term_offset=np.full(c.n_terms, -1))
    rejects("one entry per constraint", margin=c.margin[:-1])
    # every column a term touches must lie in w: rows by their last column, the bias at n_cols
    last = np.array([c.indices[c.indptr[r]:c.indptr[r + 1]].max(initial=-1) for r in range(len(c.indptr) - 1)])
    reach = np.where(c.term_bias & (c.bias is not None), c.term_offset + c.n_cols,
                     c.term_offset + last[c.term_row]).max()
    DualCD(**{**ok, "n_w": int(reach) + 1})
    rejects("n_w", n_w=int(reach))
    rejects("n_w", term_offset=np.full(c.n_terms, c.n_w + 5))


@pytest.mark.parametrize("make", [lambda: random_cache(2), lambda: random_terms_cache(2, bias=1.0),
                                  lambda: strided_terms_cache(2)])
def test_int32_columns_are_read_in_place_with_the_same_result(make):
    """A row store that keeps int32 columns (online-dual's) gives the solve of int64 columns, bit
    for bit; its columns are checked against n_cols all the same."""
    c = make()
    wide = solve(c, epsilon=1e-9, max_epochs=5000, seed=4)
    c.indices = c.indices.astype(np.int32)
    narrow = solve(c, epsilon=1e-9, max_epochs=5000, seed=4)
    assert narrow.w.tobytes() == wide.w.tobytes() and narrow.alpha.tobytes() == wide.alpha.tobytes()
    args = engine_args(c)
    with pytest.raises(ValueError, match="column index"):
        DualCD(**{**args, "n_cols": int(c.indices.max())})
    bad = c.indices.copy()
    bad[0] = -1
    with pytest.raises(ValueError, match="column index"):
        DualCD(**{**args, "indices": bad})


@pytest.mark.parametrize("make", [lambda: random_terms_cache(3, bias=1.0), lambda: strided_terms_cache(3),
                                  lambda: multiclass_cache(5, n=12, n_cols=4, K=4, C=0.2, bias=1.5)])
def test_int32_term_rows_and_offsets_give_the_int64_solve(make):
    """A cache that keeps its terms' rows and offsets as int32 (the sequence task's) is read in
    place and solved as the int64 one, bit for bit, shared-row groups included; its rows are still
    checked against the store."""
    c = make()
    wide = solve(c, epsilon=1e-9, max_epochs=5000, seed=4)
    for rows, offsets in ((np.int32, np.int32), (np.int32, np.int64), (np.int64, np.int32)):
        c.term_row, c.term_offset = c.term_row.astype(rows), np.asarray(c.term_offset).astype(offsets)
        narrow = solve(c, epsilon=1e-9, max_epochs=5000, seed=4)
        assert narrow.w.tobytes() == wide.w.tobytes() and narrow.alpha.tobytes() == wide.alpha.tobytes()
    bad = c.term_row.copy()
    bad[0] = len(c.indptr) - 1
    with pytest.raises(ValueError, match="outside the store"):
        DualCD(**{**engine_args(c), "term_row": bad})


@pytest.mark.parametrize("make", [lambda: random_cache(5), lambda: random_terms_cache(5, bias=1.0),
                                  lambda: strided_terms_cache(5),
                                  lambda: multiclass_cache(6, n=12, n_cols=4, K=4, C=0.2, bias=1.5)])
def test_compact_values_and_scales_give_the_float64_solve(make):
    """A store whose values are float32s or bytes exactly, and terms whose scales are float32s
    (the sequence task keeps them so: svmtrain.data.value_dtype), are read in place and solved as
    float64 ones, bit for bit: one-row, terms, strided and shared-row (Crammer-Singer) layouts."""
    c = make()
    for narrowest in (np.float32, np.uint8):
        # values the narrow type holds exactly
        c.data = np.abs(np.round(c.data * 4)) if narrowest == np.uint8 else c.data
        c.data = c.data.astype(narrowest).astype(np.float64)
        c.term_scale = np.asarray(c.term_scale).astype(np.float32).astype(np.float64)
        wide = solve(c, epsilon=1e-9, max_epochs=5000, seed=4)
        values, scales = c.data, c.term_scale
        for narrow_values, narrow_scales in ((True, False), (False, True), (True, True)):
            c.data = values.astype(narrowest) if narrow_values else values
            c.term_scale = scales.astype(np.float32) if narrow_scales else scales
            narrow = solve(c, epsilon=1e-9, max_epochs=5000, seed=4)
            assert narrow.w.tobytes() == wide.w.tobytes() and narrow.alpha.tobytes() == wide.alpha.tobytes()
            assert narrow.epochs == wide.epochs
        assert wide.w.any()
        c.data = values
    bad = values.astype(np.float32)
    bad[0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        DualCD(**{**engine_args(c), "data": bad})


def test_touched_columns_decide_n_w():
    """A unit row (one entry in column 0) may sit at the last column of w, although offset + n_cols
    passes n_w: only the columns a term touches must fit, and the bias column only for terms with it."""
    store = (np.array([0, 2, 3]), np.array([0, 3, 0]), np.array([1.0, 2.0, 1.0]))   # row 1: unit row
    n_cols, width = 4, 5                       # with the bias: two blocks of width 5, then 2 columns
    c = terms_cache(store, n_cols, [[(0, 1.0, 0, True), (0, -1.0, width, True), (1, 2.0, 11, False)]],
                    [1.0], [0], [1.0], n_w=12, bias=1.0)
    sol = solve(c, epsilon=1e-12, max_epochs=100, seed=1)
    x = dense_constraints(c)[0]
    assert x.tolist() == [1, 0, 0, 2, 1, -1, 0, 0, -2, -1, 0, 2]
    assert sol.w == pytest.approx(sol.alpha[0] * x, abs=1e-15)
    with pytest.raises(ValueError, match="n_w"):   # the unit row's bias column would be 15
        DualCD(**{**engine_args(c), "term_bias": np.ones(3, bool)})


def test_the_terms_layout_computes_what_the_one_row_layout_does():
    """A one-term cache whose terms do not carry the bias (but a bias is set) takes the terms layout;
    it is the same problem as without the bias, and the steps must be the same, bit for bit."""
    c = random_cache(6, n_rows=40, n_groups=12, shared_rows=True)
    t = ConstraintCache(c.indptr, c.indices, c.data, c.n_cols, c.tptr, c.term_row, c.term_scale,
                        c.term_offset, np.zeros(c.n_terms, bool), c.margin, c.group, c.C_group,
                        n_w=c.n_cols + 1, bias=2.0)
    for shrinking in (True, False):
        a = solve(c, epsilon=1e-9, max_epochs=5000, seed=3, shrinking=shrinking)
        b = solve(t, epsilon=1e-9, max_epochs=5000, seed=3, shrinking=shrinking)
        assert b.w[-1] == 0.0 and b.w[:-1].tobytes() == a.w.tobytes()
        assert b.alpha.tobytes() == a.alpha.tobytes() and b.epochs == a.epochs


def test_multiclass_pair_steps_reach_the_optimum_at_the_bound():
    """Crammer-Singer with a small C: examples' groups sit at their bound with several support
    constraints, which only pair steps reach (a single step cannot move mass inside a full group)."""
    c = multiclass_cache(7, n=16, K=5, C=0.05, bias=1.0)
    opt, A = brute_force(c)
    sol = solve(c, epsilon=1e-11, max_epochs=50000, seed=1)
    assert sol.converged and sol.dual == pytest.approx(opt, rel=1e-8)
    sums = np.bincount(c.group, weights=sol.alpha)
    support = np.bincount(c.group, weights=sol.alpha > 1e-9 * 0.05)
    assert np.any((sums >= 0.05 * (1 - 1e-12)) & (support >= 2))
    assert np.allclose(sol.w, A.T @ sol.alpha, atol=1e-12)


def test_terms_determinism_hot_start_and_shrinking():
    c = random_terms_cache(12, n_rows=20, n_cons=80, n_groups=15, bias=1.0)
    a = solve(c, epsilon=1e-10, max_epochs=50000, seed=7)
    b = solve(c, epsilon=1e-10, max_epochs=50000, seed=7)
    assert a.converged and a.w.tobytes() == b.w.tobytes() and a.alpha.tobytes() == b.alpha.tobytes()
    without = solve(c, epsilon=1e-10, max_epochs=50000, seed=7, shrinking=False)
    assert without.dual == pytest.approx(a.dual, rel=1e-9)
    # a hot start from the optimum stops at once (at a gap the approximate bound can see)
    again = solve(c, epsilon=1e-9, max_epochs=50000, seed=1, alpha=a.alpha)
    assert again.epochs <= 2 and again.dual == pytest.approx(a.dual, rel=1e-12)


@pytest.mark.parametrize("kind", ["binary", "groups", "terms", "multiclass"])
def test_approximate_bounds_keep_up_with_the_steps(kind):
    """approximate_bounds() is O(1): ||w||^2 and sum l_c a_c are updated by each step (single and pair),
    so its dual must match the one computed afresh from alpha and w, shrinking or not."""
    if kind == "binary":
        c = binary_cache(4, 80, 10)
    elif kind == "groups":
        c = random_cache(4, n_rows=60, n_cols=8, n_groups=12, shared_rows=True)
    elif kind == "terms":
        c = random_terms_cache(4, n_rows=20, n_cons=80, n_groups=15, bias=1.0)
    else:
        c = multiclass_cache(4, n=30, K=4, C=0.1, bias=1.0)
    e = c.engine(seed=3)
    for epoch in range(40):
        _, _, active = e.epoch()
        assert active == e.n_active_constraints() <= e.n_constraints
        _, dual = e.approximate_bounds()
        fresh = -0.5 * e.w @ e.w + c.margin @ e.alpha
        assert dual == pytest.approx(fresh, rel=1e-10, abs=1e-12)
        if epoch == 20:
            e.unshrink()
            assert e.all_active


@pytest.mark.parametrize("kind", ["binary", "groups", "terms"])
def test_shrunk_gap_is_what_the_shrunk_constraints_hold(kind):
    """shrunk_gap() against its definition over the engine's shrunk set, taken densely: a group
    out of the active set holds C_g max(0, max_c g_c) - sum_c a_c g_c, an active one with shrunk
    constraints the rise of C_g max(0, max_c g_c) they cause; 0 once all are active again."""
    if kind == "binary":
        c = binary_cache(6, 200, 10)
    elif kind == "groups":
        c = random_cache(6, n_rows=120, n_cols=8, n_groups=30, shared_rows=True)
    else:
        c = random_terms_cache(6, n_rows=30, n_cons=150, n_groups=40, bias=1.0)
    A = dense_constraints(c)
    e = c.engine(seed=5)
    e.epoch()
    # thresholds that set much aside, so that w then moves with some of the set aside wrongly
    e.shrinking_thresholds = (1e-3, 1e-3)
    checked = 0
    for epoch in range(12):
        e.epoch()
        e.recompute_w()
        shrunk, alpha = e.shrunk, e.alpha
        g = c.margin - A @ e.w
        held = 0.0
        for k in np.unique(c.group[shrunk]):
            mine = c.group == k
            top = max(0.0, g[mine].max())
            if shrunk[mine].all():
                held += c.C_group[k] * top - alpha[mine] @ g[mine]
            else:
                held += c.C_group[k] * (top - max(0.0, g[mine & ~shrunk].max(initial=0.0)))
        assert e.shrunk_gap() == pytest.approx(held, rel=1e-9, abs=1e-12)
        assert e.n_active_constraints() == e.n_constraints - shrunk.sum()
        checked += bool(shrunk.any())
    assert checked >= 6
    e.unshrink()
    assert not e.shrunk.any() and e.shrunk_gap() == 0.0


def test_relative_gap():
    assert relative_gap(10.0, 9.0) == pytest.approx(0.1)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(5.0, 6.0) == 0.0


def test_shared_row_groups_take_the_fast_path_and_reach_the_optimum():
    """Groups whose terms all place one row (with one bias flag) at offsets that do not overlap are
    visited from the row's products with w: Crammer-Singer with the bias, cancelling constraints
    (j == y_i: x = 0, l = 0), scaled terms (slack rescaling), and a constraint repeating its row at one
    offset. Groups that mix rows, bias flags or overlapping offsets keep the general visit."""
    c = multiclass_cache(21, n=12, n_cols=4, K=4, C=0.2, bias=1.5)
    width, n_w = 5, 4 * 5
    terms = [[(i, 1.0, 0, True), (i, -1.0, width, True)] for i in range(12)]   # ids 0..11
    terms += [[(i, 0.7, width, True), (i, 0.6, width, True), (i, -2.0, 3 * width, True)]
              for i in range(12)]                                              # one offset twice
    base = multiclass_cache(21, n=12, n_cols=4, K=4, C=0.2, bias=1.5)
    tb = [ts for k in range(base.n_constraints)
          for ts in [[(int(base.term_row[t]), float(base.term_scale[t]) * (1 + 0.25 * (k % 3)),
                       int(base.term_offset[t]), True) for t in range(base.tptr[k], base.tptr[k + 1])]]]
    margin = list(base.margin * (1 + 0.25 * (np.arange(base.n_constraints) % 3))) + [0.8] * 24
    group = list(base.group) + [i for i in range(12)] * 2
    # not shared-row: group 12 mixes rows, 13 mixes bias flags, 14 overlaps its offsets
    extra = [[(0, 1.0, 0, True), (1, -1.0, width, True)], [(2, 1.0, 0, True)],
             [(3, 1.0, 0, True), (3, -1.0, width, False)], [(3, 1.0, 0, True)],
             [(5, 1.0, 0, True), (5, -1.0, 2, True)], [(6, 1.0, width, True)]]
    c = terms_cache((base.indptr, base.indices, base.data), 4, tb + terms + extra,
                    margin + [1.0, 0.5, 1.0, 0.5, 1.0, 0.5], group + [12, 12, 13, 13, 14, 14],
                    [0.2] * 12 + [0.5] * 3, n_w, bias=1.5)
    assert c.engine().n_shared_groups == 12
    assert 0.0 in c.margin and np.any(~dense_constraints(c).any(axis=1))     # cancelling constraints
    opt, A = brute_force(c, iterations=40000)
    for shrinking in (True, False):
        sol = solve(c, epsilon=1e-11, max_epochs=50000, seed=4, shrinking=shrinking)
        assert sol.converged and sol.dual == pytest.approx(opt, rel=1e-8)
        assert np.allclose(sol.w, A.T @ sol.alpha, atol=1e-12)
        assert sol.primal == pytest.approx(primal(c, sol.w), rel=1e-12, abs=1e-12)
        sums = np.bincount(c.group, weights=sol.alpha)
        assert np.all(sol.alpha >= 0) and np.all(sums <= c.C_group * (1 + 1e-12))
    # the shared-row groups' offsets and each of their terms' slot among them
    from svmtrain._engine import _shared_row_groups
    e = c.engine()
    gsize = np.bincount(c.group, minlength=len(c.C_group)).astype(np.int64)
    shared, slot, offsets, start, n_off, rows, _ = _shared_row_groups(
        c.indptr, c.indices.astype(np.int32), c.tptr, c.term_row, np.asarray(c.term_offset),
        c.term_bias, c.group, gsize, 4, True, 1, np.argsort(c.group, kind="stable"))
    assert shared.sum() == e.n_shared_groups == 12 and len(slot) == c.n_terms
    for g in np.flatnonzero(shared):
        own = offsets[start[g]:start[g] + n_off[g]]
        terms = np.concatenate([np.arange(c.tptr[k], c.tptr[k + 1]) for k in np.flatnonzero(c.group == g)])
        assert np.array_equal(own, np.unique(c.term_offset[terms]))
        assert np.array_equal(own[slot[terms]], c.term_offset[terms])
    # without a shared-row group nothing the size of the terms is made (a sequence cache)
    alone = c.group >= 12
    none = _shared_row_groups(c.indptr, c.indices.astype(np.int32), c.tptr, c.term_row,
                              np.asarray(c.term_offset), c.term_bias, np.where(alone, c.group, 12),
                              np.bincount(np.where(alone, c.group, 12), minlength=15).astype(np.int64),
                              4, True, 1, None)
    assert not none[0].any() and len(none[1]) == 0 and len(none[2]) == 0
    # the bias flag matters only with a bias: without one, group 13 is shared-row as well
    c.bias = None
    assert c.engine().n_shared_groups == 13


def test_shared_row_determinism():
    c = multiclass_cache(8, n=40, n_cols=6, K=6, C=0.1, bias=1.0)
    assert c.engine().n_shared_groups == 40
    a = solve(c, epsilon=1e-9, max_epochs=50000, seed=5)
    b = solve(c, epsilon=1e-9, max_epochs=50000, seed=5)
    assert a.converged and a.epochs == b.epochs
    assert a.w.tobytes() == b.w.tobytes() and a.alpha.tobytes() == b.alpha.tobytes()
    e, f = c.engine(seed=2), c.engine(seed=2)
    for _ in range(30):
        assert e.epoch() == f.epoch() and e.approximate_bounds() == f.approximate_bounds()
    assert e.w.tobytes() == f.w.tobytes() and e.rng_state == f.rng_state


@pytest.mark.parametrize("bias", [None, 1.5])
def test_feature_major_multiclass_is_the_class_major_problem_permuted(bias):
    """Stride K with class k at offset k (the shared-row one-pass visit) solves the class-major
    problem: the same alphas, and w with the K weights of each feature together."""
    K, n_cols = 4, 5
    cm = multiclass_cache(6, n=30, n_cols=n_cols, K=K, C=0.4, bias=bias)
    fm = multiclass_cache(6, n=30, n_cols=n_cols, K=K, C=0.4, bias=bias, feature_major=True)
    assert fm.engine().n_shared_groups == cm.engine().n_shared_groups == 30
    width = n_cols + (bias is not None)
    perm = np.arange(K * width).reshape(K, width).T.ravel()     # fm position -> cm position
    assert np.array_equal(dense_constraints(fm), dense_constraints(cm)[:, perm])
    a = solve(cm, epsilon=1e-11, max_epochs=50000, seed=3)
    b = solve(fm, epsilon=1e-11, max_epochs=50000, seed=3)
    assert a.converged and b.converged
    assert b.dual == pytest.approx(a.dual, rel=1e-9)
    assert np.allclose(b.alpha, a.alpha, atol=1e-7)
    assert np.allclose(b.w, a.w[perm], atol=1e-7)
    assert np.allclose(b.w, dense_constraints(fm).T @ b.alpha, atol=1e-12)


def test_stride_reach_is_checked_at_the_edge():
    """With a stride, a term touches offset + stride * (its row's last column), and the bias
    column offset + stride * n_cols: both must lie below n_w."""
    store = (np.array([0, 2, 3]), np.array([0, 3, 0]), np.array([1.0, 2.0, 1.0]))   # row 1: unit row
    K, n_cols = 3, 4
    ok = terms_cache(store, n_cols, [[(0, 1.0, 2, False), (1, 1.0, 11, False)]], [1.0], [0], [1.0],
                     n_w=12, stride=K)               # 2 + 3 * 3 = 11, the unit row at 11
    sol = solve(ok, epsilon=1e-12, max_epochs=100, seed=1)
    x = dense_constraints(ok)[0]
    assert x.tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3]
    assert sol.w == pytest.approx(sol.alpha[0] * x, abs=1e-15)
    args = engine_args(ok)
    with pytest.raises(ValueError, match="n_w"):     # 3 + 3 * 3 = 12
        DualCD(**{**args, "term_offset": np.array([3, 11])})
    with pytest.raises(ValueError, match="n_w"):     # the bias column 2 + 3 * 4 = 14
        DualCD(**{**args, "term_bias": np.array([True, False]), "has_bias": True, "bias": 1.0})
    DualCD(**{**args, "term_bias": np.array([True, False]), "has_bias": True, "bias": 1.0, "n_w": 15})
    with pytest.raises(ValueError, match="stride"):
        DualCD(**{**args, "stride": 0})


@pytest.mark.parametrize("bias", [None, 1.5])
@pytest.mark.parametrize("make", [strided_terms_cache, random_terms_cache])
def test_term_dots_honours_the_stride(make, bias):
    """The cutting planes' w . x_c (svmtrain._linear.term_dots) against the dense constraints."""
    from svmtrain._linear import term_dots
    c = make(7, bias=bias)
    w = np.random.default_rng(2).normal(size=c.n_w)
    got = term_dots(c.indptr, c.indices, c.data, c.n_cols, c.tptr, c.term_row, c.term_scale,
                    c.term_offset, c.term_bias, w, c.bias or 0.0, c.bias is not None, c.stride)
    np.testing.assert_allclose(got, dense_constraints(c) @ w, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="beyond w"):
        term_dots(c.indptr, c.indices, c.data, c.n_cols, c.tptr, c.term_row, c.term_scale,
                  c.term_offset, c.term_bias, w[:-5], c.bias or 0.0, c.bias is not None, c.stride)



@pytest.mark.parametrize("seed", range(8))
def test_crammer_singer_visit_solves_the_example_exactly(seed):
    """One visit of a Crammer-Singer group solves its example's subproblem exactly (the sort-based
    solution, not pair steps): from any feasible hot start (inside, on the bound, at zero), with
    any margins, one epoch over a one-example problem reaches the optimum of an independent QP
    solver and a zero duality gap; another epoch makes no step."""
    rng = np.random.default_rng(seed)
    K = [3, 5, 8, 20][seed % 4]              # 20: past the insertion sort, the library sort
    c = multiclass_cache(seed, n=1, n_cols=6, K=K, C=0.7, bias=1.5 if seed % 2 else None,
                         feature_major=seed % 4 >= 2, with_y=False)
    c.margin = rng.uniform(-0.5, 2.0, c.n_constraints)
    assert c.engine().n_crammer_singer_groups == 1
    opt, A = brute_force(c, iterations=40000)
    alpha = rng.uniform(0.0, 1.0, c.n_constraints) * (rng.random(c.n_constraints) < 0.7)
    alpha *= [0.0, 0.4, 1.0][seed % 3] * 0.7 / max(alpha.sum(), 1e-12)
    e = c.engine(alpha=alpha, shrinking=False)
    steps, _violation, _active = e.epoch()
    P, D = e.exact_bounds()
    assert D == pytest.approx(opt, rel=1e-9, abs=1e-12)
    assert P - D <= 1e-9 * max(1.0, abs(D))
    assert np.all(e.alpha >= 0) and e.alpha.sum() <= 0.7 * (1 + 1e-12)
    assert np.allclose(e.w, A.T @ e.alpha, atol=1e-12)
    assert e.epoch()[0] == 0


def test_crammer_singer_groups_are_recognised_and_shrink_like_liblinear():
    """The task's constraints (no j == y_i), in either order of terms, take the exact visit; a group
    with a cancelling constraint or a scaled term does not. Examples leave the active
    set (LIBLINEAR's -s 4 shrinking) and the optimum is the same with and without shrinking."""
    c = multiclass_cache(3, n=40, n_cols=6, K=5, C=0.5, bias=1.0, with_y=False)
    assert c.engine().n_crammer_singer_groups == 40
    assert multiclass_cache(3, n=40, n_cols=6, K=5, C=0.5).engine().n_crammer_singer_groups == 0
    scaled = multiclass_cache(3, n=40, n_cols=6, K=5, C=0.5, with_y=False)
    scaled.term_scale = scaled.term_scale * np.where(scaled.term_row == 0, 2.0, 1.0)
    assert scaled.engine().n_crammer_singer_groups == 39
    opt, _ = brute_force(c, iterations=40000)
    e = c.engine(seed=3)
    for _ in range(30):
        e.epoch()
    assert e.n_active_constraints() < c.n_constraints          # whole examples and classes shrunk
    with_s = solve(c, epsilon=1e-11, max_epochs=50000, seed=3, shrinking=True)
    without = solve(c, epsilon=1e-11, max_epochs=50000, seed=3, shrinking=False)
    assert with_s.converged and without.converged
    assert with_s.dual == pytest.approx(opt, rel=1e-8) and without.dual == pytest.approx(opt, rel=1e-8)
    # examples of cost 0 stay at 0 and the others reach the optimum, with and without shrinking
    c.C_group = np.where(np.arange(40) % 4 == 0, 0.0, 0.5)
    opt, _ = brute_force(c, iterations=40000)
    for shrinking in (True, False):
        sol = solve(c, epsilon=1e-11, max_epochs=50000, seed=3, shrinking=shrinking)
        assert sol.converged and sol.dual == pytest.approx(opt, rel=1e-8)
        assert np.all(sol.alpha[c.C_group[c.group] == 0.0] == 0.0)


def test_kind_table_past_a_handful_is_np_uniques():
    """Past 16 distinct (scale, margin, C) triples the engine's table comes from a sort on the
    three columns: the same rows (bit patterns: -0.0 is its own kind) and inverse as np.unique's."""
    from svmtrain._engine import _kind_table
    rng = np.random.default_rng(1)
    for n in (5, 17, 1000):
        scale, margin, C = rng.integers(-2, 3, n) * 0.5, rng.integers(0, 40, n) * 1.0, np.full(n, 0.1)
        margin[::7], C[::3] = -0.0, 0.2
        rows, inverse = _kind_table(scale, margin, C)
        bits = np.stack([a.view(np.int64) for a in (scale, margin, C)], axis=1)
        assert np.array_equal(rows[inverse].view(np.int64), bits)
        if n > 16:
            ref_rows, ref_inverse = np.unique(bits, axis=0, return_inverse=True)
            assert np.array_equal(rows.view(np.int64), ref_rows)
            assert np.array_equal(inverse, ref_inverse.ravel())


@pytest.mark.parametrize("kind", ["plain", "terms_bias", "strided", "shared_rows", "multiclass"])
def test_known_sqnorms_and_kept_gradients_change_nothing(kind):
    """A cutting-plane round hands the next engine the norms it computed and takes the gradients
    from the check that ended its run: the same steps, and the gradients of the w it returns."""
    from svmtrain._linear import term_dots
    c = make_cache(kind, 3)
    first = solve(c, epsilon=1e-6, max_epochs=200, seed=4, rounds=True)
    dots = term_dots(c.indptr, c.indices, c.data, c.n_cols, c.tptr, c.term_row, c.term_scale,
                     np.ascontiguousarray(c.term_offset), np.ascontiguousarray(c.term_bias),
                     first.w, c.bias or 0.0, c.bias is not None, c.stride)
    np.testing.assert_allclose(first.gradients, c.margin - dots, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first.sqnorm, np.sum(dense_constraints(c) ** 2, axis=1), rtol=1e-12,
                               atol=1e-12)
    # known norms (one left unknown) give the same run, bit for bit
    known = first.sqnorm.copy()
    known[0] = np.nan
    c.sqnorm = known
    again = solve(c, epsilon=1e-6, max_epochs=200, seed=4, rounds=True)
    assert again.w.tobytes() == first.w.tobytes() and again.alpha.tobytes() == first.alpha.tobytes()
    assert again.sqnorm.tobytes() == first.sqnorm.tobytes()
    c.sqnorm = np.full(c.n_constraints, -1.0)
    with pytest.raises(ValueError, match="sqnorm"):
        c.engine()
    c.sqnorm = np.zeros(c.n_constraints + 1)
    with pytest.raises(ValueError, match="sqnorm"):
        c.engine()
    c.sqnorm = None
    with pytest.raises(ValueError, match="keep_gradients"):
        c.engine().gradients


def test_a_w_buffer_handed_over_becomes_w_and_changes_nothing():
    """A re-solving caller hands over the w it is done with: the engine takes it for its own w
    (overwritten with w(alpha)) and the run is the same bit for bit; an array that does not fit
    (wrong length, read-only) is left alone."""
    c = random_terms_cache(5, bias=1.0)
    plain = solve(c, epsilon=1e-8, max_epochs=500, seed=2)
    buf = np.full(c.n_w, 7.0)
    taken = solve(c, epsilon=1e-8, max_epochs=500, seed=2, w_buffer=buf)
    assert np.shares_memory(taken.w, buf)
    assert taken.w.tobytes() == plain.w.tobytes() and taken.alpha.tobytes() == plain.alpha.tobytes()
    short = np.zeros(c.n_w - 1)
    frozen = np.zeros(c.n_w)
    frozen.setflags(write=False)
    for other in (short, frozen):
        sol = solve(c, epsilon=1e-8, max_epochs=500, seed=2, w_buffer=other)
        assert not np.shares_memory(sol.w, other) and sol.w.tobytes() == plain.w.tobytes()
    assert not short.any() and not frozen.any()


@pytest.mark.parametrize("stride", [1, 3])
def test_norms_and_pair_steps_of_long_constraints_sum_their_columns_exactly(stride):
    """||x_c||^2 and x_j . x_k of constraints with many terms, as the sequence task's long sentences
    have: hundreds of terms piled on a few columns (every column summed before it is squared), and
    as many distinct columns as the engine's table is sized for (twice the entries of the largest
    constraint), against the dense vectors; then the optimum, which the pair steps reach through
    x_j . x_k."""
    rng = np.random.default_rng(stride)
    n_rows, n_cols = 60, 40
    store = random_store(rng, 11, n_rows, n_cols, 0.5, unit_row=False)
    n_w = stride * n_cols * 6 + 1
    spots = 6 * n_cols if stride == 1 else 6       # offsets a term may take
    piled = [(int(rng.integers(0, 3)), float(rng.choice([-1.0, 1.0])), int(rng.integers(0, 2)), True)
             for _ in range(400)]                   # 400 terms on the columns of 3 rows
    spread = [(r, float(rng.normal()), int(rng.integers(0, spots - n_cols if stride == 1 else spots)),
               True) for r in range(n_rows)]        # every row, at offsets all over w
    short = [[(int(rng.integers(0, n_rows)), 1.0, int(rng.integers(0, spots - n_cols if stride == 1
                                                                      else spots)), False)]
             for _ in range(6)]
    terms = [piled, spread, piled[:7] + spread[:9]] + short
    n = len(terms)
    group = np.array([0, 0, 0] + [1 + i % 3 for i in range(n - 3)], dtype=np.int64)
    c = terms_cache(store, n_cols, terms, rng.uniform(0.5, 2.0, n), group,
                    rng.uniform(0.5, 2.0, 4), n_w, bias=0.7, stride=stride)
    A = dense_constraints(c)
    engine = c.engine()
    np.testing.assert_allclose(engine.sqnorms, np.einsum("ij,ij->i", A, A), rtol=1e-12, atol=1e-12)
    opt, _ = brute_force(c)
    sol = solve(c, epsilon=1e-10, max_epochs=20000, seed=1)
    assert sol.dual == pytest.approx(opt, rel=1e-7, abs=1e-9)
    assert sol.primal - sol.dual <= 1e-8 * max(1.0, abs(opt))
