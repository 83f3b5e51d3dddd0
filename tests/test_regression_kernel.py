"""The record-free regression kernel (svmtrain._regression) against the engine on the same listed
constraints: the n-slack mode hands the regression task's listing to it instead of the engine."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmtrain._regression import SVRDualCD
from svmtrain.data import Block
from svmtrain.engine import ConstraintCache, solve
from svmtrain.solvers.nslack import _cache
from svmtrain.tasks.base import Geometry
from svmtrain.tasks.regression import Regression, TubeCache


def problem(seed, n=80, n_cols=6, bias=None, p=0.1, empty_rows=0, zero_cost=0):
    """A random regression block, its task, problem and listing; the first `empty_rows` rows have
    no nonzeros, the next `zero_cost` examples cost 0."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, n_cols, density=0.6, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    X = X.tolil()
    X[:empty_rows] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    X.sort_indices()
    target = X @ rng.normal(size=n_cols) + rng.normal(scale=0.3, size=n)
    target[:empty_rows] = rng.normal(scale=2.0, size=empty_rows)
    cost = rng.uniform(0.2, 2.0, n)
    cost[empty_rows:empty_rows + zero_cost] = 0.0
    block = Block(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, target,
                  np.full(n, -1, np.int64), cost, np.arange(1, n + 1), n_cols, 0)
    task = Regression(p)
    prob = task.problem(block, "p", 0.8, Geometry(n_cols, bias))
    return task, prob, task.all_constraints(prob, block)


def dense(prob, listing):
    """The listed constraints as dense rows x_c (through the term arrays, the engine's view)."""
    c = ConstraintCache.from_problem(prob, listing)
    X = sp.csr_matrix((c.data, c.indices, c.indptr), shape=(len(c.indptr) - 1, c.n_cols)).toarray()
    out = np.zeros((c.n_constraints, c.n_w))
    for k in range(c.n_constraints):
        t = c.tptr[k]
        out[k, :c.n_cols] = c.term_scale[t] * X[c.term_row[t]]
        if c.bias is not None:
            out[k, c.n_cols] = c.term_scale[t] * c.bias
    return out


@pytest.mark.parametrize("bias", [None, 1.5])
@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("shifted", [False, True])
def test_kernel_reaches_the_engines_optimum(bias, shrinking, shifted):
    """Same listing, same optimum: the kernel's dual, alphas (in the listing's order) and w agree
    with the engine's; w = sum alpha_c x_c; at most one alpha of an example is positive and their
    sum is within C_i. `shifted`: margins moved by -+ s_i, as --prior moves them."""
    task, prob, listing = problem(4, bias=bias, empty_rows=3, zero_cost=4)
    if shifted:
        s = np.random.default_rng(1).normal(size=listing.size // 2)
        listing.margin = listing.margin - np.repeat(s, 2) * np.tile([1.0, -1.0], len(s))
    kernel = _cache(prob, listing)
    assert isinstance(kernel, TubeCache)
    a = solve(kernel, epsilon=1e-12, max_epochs=50000, seed=3, shrinking=shrinking)
    b = solve(ConstraintCache.from_problem(prob, listing), epsilon=1e-12, max_epochs=50000, seed=3,
              shrinking=shrinking)
    assert a.converged and b.converged
    assert a.dual == pytest.approx(b.dual, rel=1e-9)
    assert a.primal - a.dual <= 1e-9 * a.primal
    np.testing.assert_allclose(a.w, b.w, atol=1e-6)
    np.testing.assert_allclose(a.w, dense(prob, listing).T @ a.alpha, atol=1e-10)
    pairs = a.alpha.reshape(-1, 2)
    assert np.all(pairs >= 0) and np.all(pairs.min(axis=1) == 0)
    assert np.all(pairs.sum(axis=1) <= prob.C * (1 + 1e-12))
    assert np.all(pairs.sum(axis=1)[prob.C == 0] == 0)
    # the bounds the kernel reports are the problem's: P(w) and D(alpha) computed here
    X = dense(prob, listing)[0::2]
    loss = np.maximum(0, np.maximum(listing.margin[0::2] - X @ a.w, listing.margin[1::2] + X @ a.w))
    assert a.primal == pytest.approx(0.5 * a.w @ a.w + prob.C @ loss, rel=1e-12)
    assert a.dual == pytest.approx(listing.margin @ a.alpha - 0.5 * a.w @ a.w, rel=1e-12)


def test_an_empty_row_takes_its_best_bound():
    """x_i = 0: the dual is linear in beta_i, so beta_i goes to C_i sign(y_i) when |y_i| > p."""
    task, prob, listing = problem(6, empty_rows=4)
    sol = solve(_cache(prob, listing), epsilon=1e-10, max_epochs=50000, seed=1)
    y = listing.margin[0:8:2] + task.p
    beta = sol.alpha[0:8:2] - sol.alpha[1:8:2]
    np.testing.assert_allclose(beta, np.where(np.abs(y) > task.p, np.sign(y) * prob.C[:4], 0.0))


def test_hot_start_and_determinism():
    """A hot start (projected onto the box first) is kept where optimal: from the optimum, an
    epoch moves nothing beyond rounding; the same seed gives the same bytes."""
    task, prob, listing = problem(9, bias=1.0)
    cache = _cache(prob, listing)
    first = solve(cache, epsilon=1e-12, max_epochs=50000, seed=5)
    again = solve(cache, epsilon=1e-12, max_epochs=50000, seed=5)
    assert first.w.tobytes() == again.w.tobytes() and first.alpha.tobytes() == again.alpha.tobytes()
    e = cache.engine(first.alpha)
    np.testing.assert_allclose(e.w, first.w, atol=1e-12)
    e.epoch()
    np.testing.assert_allclose(e.alpha, first.alpha, atol=1e-9)
    P, D = e.exact_bounds()
    assert D == pytest.approx(first.dual, rel=1e-11)
    over = cache.engine(first.alpha * 10)   # infeasible: clipped onto |beta_i| <= C_i
    pairs = over.alpha.reshape(-1, 2)
    assert np.all(pairs.sum(axis=1) <= prob.C * (1 + 1e-12))


def test_nonneg_takes_the_engine():
    """Non-negative weights clip w: the kernel's w = sum beta x does not hold, the engine's does."""
    task, prob, listing = problem(3)
    prob.nonneg = np.ones(prob.n_w, bool)
    assert isinstance(_cache(prob, listing), ConstraintCache)


def test_bad_arguments_say_what_is_wrong():
    task, prob, listing = problem(2, n=5)
    args = (prob.indptr, prob.indices, prob.data)
    with pytest.raises(ValueError, match="sum to at most 0"):
        SVRDualCD(*args, -listing.margin, prob.C, n_cols=prob.n_cols)
    with pytest.raises(ValueError, match="2 n finite"):
        SVRDualCD(*args, listing.margin[:-1], prob.C, n_cols=prob.n_cols)
    with pytest.raises(ValueError, match="C_i"):
        SVRDualCD(*args, listing.margin, -prob.C, n_cols=prob.n_cols)
    with pytest.raises(ValueError, match="column index"):
        SVRDualCD(*args, listing.margin, prob.C, n_cols=1)
