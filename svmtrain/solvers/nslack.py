"""The n-slack mode: one slack per example, solved by the engine over a cache of constraints.

Where a task can list every constraint (binary, regression, ranking pairs, raw constraints, and
multiclass with few classes) the cache holds them all and one engine run solves the problem: for
binary this is LIBLINEAR's dual coordinate descent. Otherwise the cache is grown by cutting planes
(Joachims, Finley, Yu 2009, Alg. 1 margin / Alg. 2 slack rescaling, with their batch updates):

    repeat
        for every example: its worst offender under w (the task's loss-augmented inference); this
            pass also gives the exact primal P(w)
        stop when (P - D) / P <= epsilon  (D: the cache's dual value, a lower bound on OPT)
        add each worst offender violated by more than its example's slack in the cache
        drop constraints whose alpha has been 0 for `inactive_rounds` rounds (the task's own
            `inactive_rounds` when it has one: see svmtrain.tasks.sequence)
        re-solve the cache with the engine, hot-started, to a tolerance tightened as P - D shrinks
"""

import dataclasses
import time
from dataclasses import field

import numpy as np

from svmtrain import interrupt, objective
from svmtrain.data import index_dtype
from svmtrain.engine import ConstraintCache, EpochRecord, relative_gap, solve
from svmtrain.records import record
from svmtrain.tasks.base import Constraints, Geometry


@record
class TrainResult:
    w: object
    alpha: object
    dual: float
    primal: float
    relative_gap: float
    epochs: int
    seconds: float
    converged: bool
    geometry: Geometry
    examples: int
    rounds: int = 0
    constraints: int = 0
    records: list = field(default_factory=list)
    interrupted: bool = False      # stopped early by SIGINT / SIGTERM: a valid model, not converged
    listed: object = None          # the listed constraints (alpha's order), which a dual state keeps
    thresholds: tuple = (np.inf, np.inf)   # the engine's shrinking thresholds at the end (the state's)
    cache: object = None           # the cutting-plane cache (alpha's order), which a dual state keeps


def _cache(problem, cons):
    # a task may list its constraints for a kernel of its own (multiclass: Crammer-Singer's,
    # record-free), which solve() drives as it drives the engine
    own = getattr(cons, "cache", None)
    cache = own(problem) if own is not None else None
    return cache if cache is not None else ConstraintCache.from_problem(problem, cons)


# Each round re-solves the cache for at most this many epochs: the next oracle pass gives better
# constraints than a tighter solve of the current ones (Joachims et al. sec. 4, "managing the accuracy
# of the QP sub-problem"). On conll2000 at epsilon 1e-2: 60 rounds / 590 epochs against 30 / 1624
# uncapped, in the same time, with 95.00% token accuracy against 94.99%.
INNER_EPOCHS = 10


@record
class HotStart:
    """The dual state an n-slack run ends with, kept in memory to start the next run on the same
    rows, task and controls at another C (a path over C, svmtrain.cv): the in-process form of a
    --save-state file, with no file and no matching of constraints by key, since the problem
    lists the same constraints in the same order (only C_i changes).

    The next run starts at alpha * C_new / C_old, as --warm-start does: feasible for the new box
    (sum_j alpha_ij <= C_i scales with C), and w(alpha) scales with it, so the start is the old
    optimum's direction at the new C's scale. A cutting-plane run passes its cache, rebuilt over
    the same rows; a listed run its shrinking thresholds (every constraint is known: the case the
    state's hot start keeps them for)."""

    C: float
    alpha: np.ndarray
    thresholds: tuple = (np.inf, np.inf)
    cache: object = None           # the cutting-plane cache (Constraints), alpha's order

    @classmethod
    def of(cls, result, C):
        return cls(C, np.asarray(result.alpha, np.float64), result.thresholds,
                   getattr(result, "cache", None))

    def listed_start(self, cons, C):
        """(alpha0, shrink0) for the listed constraints of the new problem."""
        if self.cache is not None or len(self.alpha) != cons.size:
            raise ValueError(f"a hot start of {len(self.alpha)} listed constraints cannot start a "
                             f"problem of {cons.size}")
        return self.alpha * (C / self.C), self.thresholds

    def start_cache(self, problem, C):
        """The cutting-plane cache with alpha0 = alpha * C / C_old (None: nothing cached)."""
        if self.cache is None or not self.cache.size:
            return None
        from svmtrain.engine import ConstraintCache
        cons = self.cache.select(np.ones(self.cache.size, bool))
        cons.alpha0 = self.alpha * (C / self.C)
        # the engine's projection onto the new box is the start (a changed C_i clips)
        cons.alpha0 = ConstraintCache.from_problem(problem, cons).engine(cons.alpha0).alpha
        return cons


def train_nslack(task, block, path, *, C, bias, epsilon, max_epochs, seed, shrinking=True,
                 on_epoch=None, inactive_rounds=50, hot_start=None):
    """Listing: at most `max_epochs` engine epochs. Cutting planes: at most `max_epochs` rounds
    (oracle passes over the data), each re-solving the cache in at most INNER_EPOCHS epochs.
    hot_start: a HotStart of an earlier run on the same rows, task and controls (another C)."""
    started = time.perf_counter()
    geometry = Geometry(block.n_features, bias)
    problem = task.problem(block, path, C, geometry)
    listed = task.all_constraints(problem, block)
    if listed is not None and hot_start is not None:
        listed.alpha0, listed.shrink0 = hot_start.listed_start(listed, C)
    if listed is not None:
        _narrow_columns(problem, block)
        sol = solve(_cache(problem, listed), epsilon=epsilon, max_epochs=max_epochs, seed=seed,
                    shrinking=shrinking, on_epoch=on_epoch)
        # The certificate: P from the task's own pass over the data (the code verify-bound runs),
        # D from the alphas, both with the same ||w||^2.
        priced = objective.primal(task, sol.w, geometry, C, [block], path)
        P, D = priced.primal, objective.dual(sol.w, listed.margin, sol.alpha)
        return TrainResult(sol.w, sol.alpha, D, P, relative_gap(P, D), sol.epochs,
                           time.perf_counter() - started, sol.converged, geometry,
                           priced.examples, rounds=1, constraints=listed.size,
                           interrupted=sol.interrupted, listed=listed, thresholds=sol.thresholds)
    return _cutting_planes(task, block, path, problem, geometry, C=C, epsilon=epsilon,
                           max_epochs=max_epochs, seed=seed, shrinking=shrinking,
                           on_epoch=on_epoch, inactive_rounds=inactive_rounds, started=started,
                           hot_start=hot_start)


def _narrow_columns(problem, block):
    """The block's column indices as int32, the engine's own type, in place of its int64 ones
    (the problem's are the block's): the engine reads them as they are, where it made an int32
    copy beside them, and the int64 ones go (kddcup99 binary, peak RSS 227.7 -> 186.2 MB; a9a
    47.9 -> 44.4 MB). It is the pipeline's block, not a caller's (data.MemorySource hands out
    records of its own); later readers of it (the certificate's pass: csr_scores) take either."""
    if block.indices.dtype == np.int64 and problem.indices is block.indices \
            and index_dtype(problem.n_cols) == np.int32:
        block.indices = problem.indices = block.indices.astype(np.int32)


def _cutting_planes(task, block, path, problem, geometry, *, C, epsilon, max_epochs, seed,
                    shrinking, on_epoch, inactive_rounds, started, hot_start=None):
    n = problem.n_examples
    inactive_rounds = getattr(task, "inactive_rounds", inactive_rounds)
    cache = Constraints.empty()
    alpha = np.zeros(0)
    w = np.zeros(problem.n_w)
    D = 0.0
    # a hot start (--warm-start): the cache of an earlier run, its alphas projected on this
    # problem's bounds; the first oracle pass then prices its w and adds what is still violated
    if hot_start is not None:
        start = hot_start.start_cache(problem, C)
    else:
        start = getattr(task, "start_cache", None)
        start = start(problem, block) if start is not None else None
    if start is not None and start.size:
        # (a copy of the record, not of its arrays: the cache is extended in place below)
        cache, alpha = dataclasses.replace(start), start.alpha0
        engine = _cache(problem, cache).engine(alpha)
        w = engine.w
        D = objective.dual(w, cache.margin, alpha)
    idle = np.zeros(cache.size, np.int64)  # rounds each cached constraint has had alpha == 0
    sqnorm = np.full(cache.size, np.nan)   # ||x_c||^2 once an engine has computed it
    grad = None                            # g_c at w, from the re-solve that gave w
    visited = 0                            # constraints the last re-solve visited
    epochs = 0
    inner_eps = 0.1
    P = rel = np.inf
    converged = False
    records = []
    for round_ in range(1, max_epochs + 1):
        H, worst = task.worst_offenders(w, problem, block)
        P = 0.5 * float(np.dot(w, w)) + float(np.dot(problem.C, np.maximum(H, 0.0)))
        rel = relative_gap(P, D)
        record = EpochRecord(epochs, time.perf_counter() - started, D, P, rel, True, cache.size, 0.0,
                             visited)
        records.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if rel <= epsilon or round_ == max_epochs:
            converged = rel <= epsilon
            break
        # the slack each example already pays in the cache, at this w
        xi = np.zeros(n)
        if cache.size:
            g = grad if grad is not None else _gradients(problem, cache, w)
            np.maximum.at(xi, cache.group, g)
        fresh = _not_cached(cache, worst)
        add = (H > xi + 1e-12 * np.maximum(1.0, np.abs(H))) & fresh
        if not np.any(add):
            # nothing new is violated: the cache's problem is the whole problem at this w; solve
            # it tighter so that D catches up with P
            inner_eps = max(inner_eps / 10, epsilon / 10)
        else:
            engine_cache = None        # (it names the cache's arrays, which extend lets go)
            del H
            cache.extend(worst.retain(add), in_place=True, release=True)   # (pruned in place)
            del worst
            alpha = np.concatenate([alpha, np.zeros(int(add.sum()))])
            idle = np.concatenate([idle, np.zeros(int(add.sum()), np.int64)])
            sqnorm = np.concatenate([sqnorm, np.full(int(add.sum()), np.nan)])
        engine_cache = _cache(problem, cache)
        engine_cache.sqnorm = sqnorm
        sol = solve(engine_cache, epsilon=min(inner_eps, max(rel / 4, epsilon / 10)),
                    max_epochs=min(max_epochs, INNER_EPOCHS), seed=seed + round_, alpha=alpha,
                    shrinking=shrinking, rounds=True, w_buffer=w)      # w is done with
        epochs += sol.epochs
        visited = sol.visits
        w, alpha, sqnorm, grad = sol.w, sol.alpha, sol.sqnorm, sol.gradients
        D = objective.dual(w, cache.margin, alpha)
        if interrupt.requested():
            break
        idle = np.where(alpha > 0, 0, idle + 1)
        stale = idle > inactive_rounds
        if np.any(stale):
            keep = ~stale
            engine_cache = None
            cache, alpha, idle = cache.retain(keep), alpha[keep], idle[keep]
            sqnorm, grad = sqnorm[keep], grad[keep]
    # the certificate of the final w (the last oracle pass priced it exactly)
    priced = objective.primal(task, w, geometry, C, [block], path)
    P = priced.primal
    return TrainResult(w, alpha, D, P, relative_gap(P, D), epochs, time.perf_counter() - started,
                       converged, geometry, priced.examples, rounds=round_,
                       constraints=cache.size, records=records, interrupted=interrupt.requested(),
                       cache=cache)


def _gradients(problem, cons, w):
    """g_c = l_c - w . x_c for cached constraints (one pass over their terms)."""
    from svmtrain._linear import term_dots
    return cons.margin - term_dots(problem.indptr, problem.indices, problem.data, problem.n_cols,
                                   cons.tptr, cons.term_row, cons.term_scale, cons.term_offset,
                                   cons.term_bias, w, 0.0 if problem.bias is None else problem.bias,
                                   problem.bias is not None, problem.stride)


def _not_cached(cache, worst):
    """True for offenders whose (example, key) is not in the cache yet.

    One sort of the cached and the new pairs together (arrays, not a Python set of the cache's
    pairs: with hundreds of thousands of cached constraints the set's tuples cost more memory than
    the constraints' own arrays): a new pair is cached when the pair sorted just before it, cached
    ones first on ties, is equal to it and cached."""
    if not cache.size:
        return np.ones(worst.size, bool)
    m = cache.size
    group = np.concatenate([cache.group, worst.group])
    key = np.concatenate([cache.key, worst.key])
    new = np.arange(m + worst.size) >= m
    order = np.lexsort((new, key, group))
    g, k, is_new = group[order], key[order], new[order]
    # after the sort, a pair's equal cached pair (if any) is in the run of equal pairs before it
    same = np.zeros(len(order), bool)
    same[1:] = (g[1:] == g[:-1]) & (k[1:] == k[:-1])
    run_start = np.maximum.accumulate(np.where(~same, np.arange(len(order)), 0))
    cached_run = ~is_new[run_start]       # the run's first entry is cached: the pair is
    fresh = np.empty(worst.size, bool)
    fresh[order[is_new] - m] = ~cached_run[is_new]
    return fresh
