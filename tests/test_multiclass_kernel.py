"""The record-free Crammer-Singer kernel (svmtrain._multiclass) against the engine on the same listed
constraints: the n-slack mode hands the multiclass task's listing to it instead of the engine."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmtrain.data import Block
from svmtrain.engine import ConstraintCache, solve
from svmtrain.solvers.nslack import _cache
from svmtrain.tasks.base import Geometry
from svmtrain.tasks.multiclass import CrammerSingerCache, Multiclass


def problem(seed, n=60, n_cols=7, K=5, bias=None, empty_rows=0, zero_cost=0):
    """A random multiclass block (labels any integers), its task, problem and listing; the first
    `empty_rows` rows have no nonzeros, the next `zero_cost` examples cost 0."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, n_cols, density=0.5, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    X = X.tolil()
    X[:empty_rows] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    X.sort_indices()
    labels = np.array([-3.0, 2.0, 5.0, 7.0, 11.0, 20.0])[:K]
    target = labels[rng.integers(0, K, n)]
    cost = rng.uniform(0.2, 2.0, n)
    cost[empty_rows:empty_rows + zero_cost] = 0.0
    block = Block(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, target,
                  np.full(n, -1, np.int64), cost, np.arange(1, n + 1), n_cols, 0)
    task = Multiclass.from_training_data(block, "p")
    prob = task.problem(block, "p", 0.8, Geometry(n_cols, bias))
    return task, prob, task.all_constraints(prob, block)


def dense(prob, listing):
    """The listed constraints as dense rows x_c (through the term arrays, the engine's view)."""
    c = ConstraintCache.from_problem(prob, listing)
    out = np.zeros((c.n_constraints, c.n_w))
    X = sp.csr_matrix((c.data, c.indices, c.indptr), shape=(len(c.indptr) - 1, c.n_cols)).toarray()
    for k in range(c.n_constraints):
        for t in range(c.tptr[k], c.tptr[k + 1]):
            cols = c.term_offset[t] + c.stride * np.arange(c.n_cols)
            out[k, cols] += c.term_scale[t] * X[c.term_row[t]]
            if c.bias is not None and c.term_bias[t]:
                out[k, c.term_offset[t] + c.stride * c.n_cols] += c.term_scale[t] * c.bias
    return out


@pytest.mark.parametrize("bias", [None, 1.5])
@pytest.mark.parametrize("shrinking", [True, False])
def test_kernel_reaches_the_engines_optimum(bias, shrinking):
    """Same listing, same optimum: the kernel's dual, alphas (in the listing's order) and w agree
    with the engine's, w = sum alpha_c x_c over the dense constraints, alphas are feasible."""
    task, prob, listing = problem(4, bias=bias, empty_rows=3, zero_cost=4)
    listing.margin = np.random.default_rng(1).uniform(-0.5, 2.0, listing.size)  # as --prior shifts
    kernel = _cache(prob, listing)
    assert isinstance(kernel, CrammerSingerCache)
    a = solve(kernel, epsilon=1e-12, max_epochs=50000, seed=3, shrinking=shrinking)
    b = solve(ConstraintCache.from_problem(prob, listing), epsilon=1e-12, max_epochs=50000, seed=3,
              shrinking=shrinking)
    assert a.converged and b.converged
    assert a.dual == pytest.approx(b.dual, rel=1e-9)
    assert a.primal - a.dual <= 1e-9 * a.primal
    np.testing.assert_allclose(a.alpha, b.alpha, atol=1e-6)
    np.testing.assert_allclose(a.w, dense(prob, listing).T @ a.alpha, atol=1e-10)
    assert np.all(a.alpha >= 0)
    sums = np.bincount(listing.group, weights=a.alpha, minlength=len(prob.C))
    assert np.all(sums <= prob.C * (1 + 1e-12))
    assert np.all(sums[prob.C == 0] == 0)


def test_hot_start_and_determinism():
    """A hot start (projected onto the bounds first) is kept where optimal: from the optimum, an
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
    over = cache.engine(first.alpha * 10)   # infeasible: scaled back onto sum <= C_i
    sums = np.bincount(listing.group, weights=over.alpha, minlength=len(prob.C))
    assert np.all(sums <= prob.C * (1 + 1e-12))


def test_listing_builds_term_arrays_only_when_asked():
    """The n-slack mode never makes the term records; group and key are the listing's order."""
    task, prob, listing = problem(2, K=4)
    solve(_cache(prob, listing), epsilon=1e-6, max_epochs=1000, seed=1)
    assert listing._made is None
    y = listing.y
    expect = [(i, j) for i in range(len(y)) for j in range(4) if j != y[i]]
    assert list(zip(listing.group.tolist(), listing.key.tolist())) == expect
    assert listing._made is None
    assert listing.tptr[-1] == 2 * listing.size and listing._made is not None


def test_nonneg_takes_the_engine():
    """Non-negative weights clip w: the exact subproblem does not hold, the engine's visit does."""
    task, prob, listing = problem(3)
    prob.nonneg = np.ones(prob.n_w, bool)
    assert isinstance(_cache(prob, listing), ConstraintCache)
