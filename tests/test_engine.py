"""The dual coordinate engine against a brute-force QP on tiny problems with shared slacks."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from svmtrain._engine import DualCD
from svmtrain.engine import ConstraintCache, relative_gap, solve


def random_cache(seed, n_rows=14, n_cols=6, n_groups=5, density=0.6, bias=None, shared_rows=False):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_cols, density=density, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    X.sort_indices()
    n = n_rows * 2 if shared_rows else n_rows
    row = np.concatenate([np.arange(n_rows)] * 2) if shared_rows else np.arange(n_rows)
    group = np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, n - n_groups)])
    return ConstraintCache(
        indptr=X.indptr.astype(np.int64), indices=X.indices.astype(np.int64), data=X.data,
        n_cols=n_cols, row=row, scale=rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 2.0, n),
        margin=rng.uniform(-0.5, 2.0, n), group=group, C_group=rng.uniform(0.1, 3.0, n_groups),
        bias=bias)


def dense_constraints(c):
    X = sp.csr_matrix((c.data, c.indices, c.indptr), shape=(len(c.indptr) - 1, c.n_cols)).toarray()
    if c.bias is not None:
        X = np.hstack([X, np.full((X.shape[0], 1), c.bias)])
    return X[c.row] * c.scale[:, None]


def project_capped_simplex(v, cap):
    """Euclidean projection onto {a >= 0, sum(a) <= cap}."""
    a = np.maximum(v, 0.0)
    if a.sum() <= cap:
        return a
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - cap
    k = np.nonzero(u - css / np.arange(1, len(u) + 1) > 0)[0][-1]
    return np.maximum(v - css[k] / (k + 1), 0.0)


def brute_force(c, iterations=20000):
    """max_a -1/2 ||A'a||^2 + l.a  s.t. a >= 0, sum of each group <= C_g, by accelerated projected
    gradient (FISTA): an algorithm independent of the engine's coordinate steps."""
    A = dense_constraints(c)
    K = A @ A.T
    L = max(np.linalg.eigvalsh(K).max(), 1e-12)
    members = [np.nonzero(c.group == g)[0] for g in range(len(c.C_group))]

    def project(v):
        out = np.empty_like(v)
        for g, idx in enumerate(members):
            out[idx] = project_capped_simplex(v[idx], c.C_group[g])
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


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("kind", ["plain", "bias", "shared_rows"])
def test_engine_reaches_the_brute_force_optimum(seed, kind):
    c = random_cache(seed, bias=1.5 if kind == "bias" else None, shared_rows=kind == "shared_rows")
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
    c = ConstraintCache(indptr=np.zeros(4, np.int64), indices=np.zeros(0, np.int64),
                        data=np.zeros(0), n_cols=0, row=np.arange(3), scale=np.ones(3),
                        margin=np.array([1.0, -1.0, 0.5]), group=np.array([0, 1, 1]),
                        C_group=np.array([2.0, 1.0]))
    sol = solve(c, epsilon=1e-12, max_epochs=100, seed=1)
    assert sol.converged
    assert sol.dual == pytest.approx(2.0 * 1.0 + 1.0 * 0.5)
    assert sol.primal == pytest.approx(sol.dual)
    # an empty cache
    empty = ConstraintCache(indptr=np.zeros(1, np.int64), indices=np.zeros(0, np.int64),
                            data=np.zeros(0), n_cols=3, row=np.zeros(0, np.int64),
                            scale=np.zeros(0), margin=np.zeros(0), group=np.zeros(0, np.int64),
                            C_group=np.zeros(0))
    sol = solve(empty, epsilon=1e-3, max_epochs=5, seed=1)
    assert sol.converged and sol.primal == 0.0 and sol.dual == 0.0 and sol.w.shape == (3,)


def test_the_edge_rejects_inconsistent_arrays():
    c = random_cache(1)
    args = [c.indptr, c.indices, c.data, c.row, c.scale, c.margin, c.group, c.C_group]
    with pytest.raises(ValueError, match="column index"):
        DualCD(*args, n_cols=2)
    bad = list(args)
    bad[6] = c.group + 100
    with pytest.raises(ValueError, match="group"):
        DualCD(*bad, n_cols=c.n_cols)
    bad = list(args)
    bad[5] = np.full_like(c.margin, np.nan)
    with pytest.raises(ValueError, match="finite"):
        DualCD(*bad, n_cols=c.n_cols)
    # the engine keeps int32 column indices
    with pytest.raises(ValueError, match="2\\*\\*31 - 1 columns"):
        DualCD(*args, n_cols=2**31)


@pytest.mark.parametrize("kind", ["binary", "groups"])
def test_approximate_bounds_keep_up_with_the_steps(kind):
    """approximate_bounds() is O(1): ||w||^2 and sum l_c a_c are updated by each step (single and pair),
    so its dual must match the one computed afresh from alpha and w, shrinking or not."""
    if kind == "binary":   # LIBLINEAR's case: groups of one, scale +-1, one C (the two-kind table)
        c = random_cache(4, n_rows=80, n_cols=10, n_groups=80)
        c.group = np.arange(80)
        c.scale = np.sign(c.scale)
        c.margin = np.ones(80)
        c.C_group = np.full(80, 0.5)
    else:
        c = random_cache(4, n_rows=60, n_cols=8, n_groups=12, shared_rows=True)
    e = DualCD(c.indptr, c.indices, c.data, c.row, c.scale, c.margin, c.group, c.C_group,
               n_cols=c.n_cols, seed=3)
    for epoch in range(40):
        _, _, active = e.epoch()
        assert active == e.n_active_constraints() <= e.n_constraints
        _, dual = e.approximate_bounds()
        fresh = -0.5 * e.w @ e.w + c.margin @ e.alpha
        assert dual == pytest.approx(fresh, rel=1e-10, abs=1e-12)
        if epoch == 20:
            e.unshrink()
            assert e.all_active


def test_relative_gap():
    assert relative_gap(10.0, 9.0) == pytest.approx(0.1)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(5.0, 6.0) == 0.0
