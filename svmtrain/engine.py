"""The engine's stopping policy: dual coordinate epochs until the relative duality gap is met.

The kernel (`svmtrain._engine.DualCD`) does the arithmetic; this module decides when to look at the
exact bounds, when to undo shrinking and what to record. Every solver schedule (n-slack, 1-slack,
online-dual) calls `solve` on a `ConstraintCache`; `solve`'s policy is svmtrain.stopping's
`run_epochs`, which `train`'s lean path (svmtrain.lean_train) runs on an engine built from the
reader's buffers.
"""

from __future__ import annotations

import math
import time
from dataclasses import field
from typing import Callable, Optional

from svmtrain._engine import DualCD
from svmtrain.objective import relative_gap   # (the solvers take it from here too)
from svmtrain.records import record
from svmtrain.stopping import run_epochs


@record
class ConstraintCache:
    """Constraints with margins l_c, in groups g sharing one slack (C_g); each constraint is a short sum
    of shifted, scaled rows of a CSR store X (indptr, indices, data) of n_cols columns:

        x_c = sum_{t in [tptr[c], tptr[c+1])}  term_scale[t] * shift(X[term_row[t]], term_offset[t])
                                               (+ term_scale[t] * bias * e_{term_offset[t] + n_cols}
                                                  when bias is not None and term_bias[t])

    shift(x, o) puts column j of x at column o + stride * j of w (the bias feature at
    o + stride * n_cols), which has n_w entries: every column a term touches must lie below n_w.
    `bias`, when not None, is the value of LIBLINEAR's implicit constant feature. With stride 1
    (class-major) tasks place class block k at offset k * (n_cols + (bias is not None)), its bias
    weight at k * width + n_cols; with stride K (feature-major: the K weights of a feature are
    contiguous) class k is at offset k. The engine knows only offsets and the stride.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray          # float64, or float32 or uint8 (svmtrain.data.value_dtype)
    n_cols: int
    tptr: np.ndarray          # int64, n_constraints + 1
    term_row: np.ndarray      # int64 (or int32) per term
    term_scale: np.ndarray    # float64 (or float32) per term
    term_offset: np.ndarray   # int64 (or int32) per term
    term_bias: np.ndarray     # bool per term: does the term carry the bias feature
    margin: np.ndarray
    group: np.ndarray
    C_group: np.ndarray
    n_w: int
    bias: Optional[float] = None
    stride: int = 1
    nonneg: Optional[np.ndarray] = None   # per column of w: constrained to be >= 0 (Ramanan sec. 5)
    alpha0: Optional[np.ndarray] = None   # the hot start `solve` takes when given none
    shrink0: Optional[tuple] = None       # with it, the shrinking thresholds to start from (M_dec,
                                          # M_inc of the run it continues; None: none, shrink later)
    sqnorm: Optional[np.ndarray] = None   # ||x_c||^2 known from an earlier engine (nan: unknown)

    @classmethod
    def one_term(cls, indptr, indices, data, n_cols, row, scale, margin, group, C_group, bias=None):
        """x_c = scale_c * X[row_c] (+ the bias feature), unshifted: binary, regression, raw
        constraints. Costs one int64 per constraint over the row and scale arrays (no copies of them
        when they are int64 / float64 already): the offsets and bias flags are broadcast views."""
        import numpy as np
        row = np.asarray(row, dtype=np.int64)
        n = row.shape[0]
        return cls(indptr, indices, data, int(n_cols), np.arange(n + 1, dtype=np.int64), row,
                   np.asarray(scale, dtype=np.float64), np.broadcast_to(np.int64(0), (n,)),
                   np.broadcast_to(np.bool_(bias is not None), (n,)), margin, group, C_group,
                   int(n_cols) + (bias is not None), bias)

    @classmethod
    def from_problem(cls, problem, cons):
        """The cache of constraints `cons` (svmtrain.tasks.base.Constraints) over a task's Problem:
        its row store, C_i, layout and non-negativity mask; `cons.alpha0` as the hot start. Every
        solver builds its caches here, so the training controls reach every mode."""
        return cls(indptr=problem.indptr, indices=problem.indices, data=problem.data,
                   n_cols=problem.n_cols, tptr=cons.tptr, term_row=cons.term_row,
                   term_scale=cons.term_scale, term_offset=cons.term_offset,
                   term_bias=cons.term_bias, margin=cons.margin, group=cons.group,
                   C_group=problem.C, n_w=problem.n_w, bias=problem.bias, stride=problem.stride,
                   nonneg=problem.nonneg, alpha0=cons.alpha0, shrink0=cons.shrink0)

    @property
    def n_constraints(self):
        return len(self.tptr) - 1

    @property
    def n_terms(self):
        return int(self.tptr[-1])

    def engine(self, alpha=None, *, seed=1, shrinking=True, w_buffer=None):
        """The engine over this cache (hot-started from `alpha` when given; `w_buffer`: an
        array the caller is done with, which the engine may take as its w, see DualCD)."""
        return DualCD(self.indptr, self.indices, self.data, self.tptr, self.term_row, self.term_scale,
                      self.term_offset, self.term_bias, self.margin, self.group, self.C_group, alpha,
                      n_cols=self.n_cols, n_w=self.n_w, bias=self.bias or 0.0,
                      has_bias=self.bias is not None, seed=seed, shrinking=shrinking,
                      stride=self.stride, nonneg=self.nonneg, sqnorm=self.sqnorm,
                      w_buffer=w_buffer)


@record
class EpochRecord:
    """One line of the trace (VLFeat's VlSvmStatistics, in spirit)."""

    epoch: int
    seconds: float
    dual: float
    primal: float
    relative_gap: float
    exact: bool          # primal is the exact bound (else Ramanan's eq. 23 estimate)
    active: int          # active constraints after shrinking
    violation: float     # largest projected gradient seen in the epoch
    visited: int = 0     # constraints visited in the epoch (a cutting-plane round: by its re-solve)
                         # -- the work: with shrinking, an epoch may be a sliver of a pass

    @property
    def gap(self):
        return self.primal - self.dual

    def trace_columns(self):
        return str(self.visited)


@record
class Solution:
    w: np.ndarray
    alpha: np.ndarray
    dual: float
    primal: float          # exact primal of the cached problem at w
    relative_gap: float
    epochs: int
    seconds: float
    converged: bool
    records: list = field(default_factory=list)
    interrupted: bool = False    # stopped early by SIGINT / SIGTERM (svmtrain.interrupt)
    thresholds: tuple = (math.inf, math.inf)   # the shrinking thresholds at the end (a state keeps
                                               # them for the hot start that continues this run)
    visits: int = 0              # constraints visited over all epochs
    gradients: Optional[np.ndarray] = None   # with `rounds`: g_c at w, and ||x_c||^2, per constraint
    sqnorm: Optional[np.ndarray] = None


def solve(cache: ConstraintCache, *, epsilon: float, max_epochs: int, seed: int,
          alpha: Optional[np.ndarray] = None, shrinking: bool = True, exact_every: int = 10,
          on_epoch: Optional[Callable[[EpochRecord], None]] = None, rounds: bool = False,
          w_buffer: Optional[np.ndarray] = None) -> Solution:
    """Maximise the dual over the cache until (P - D) / P <= epsilon on the exact bounds.

    The cheap bound of Ramanan's eq. 23 decides when to compute the exact one (also when no
    coordinate violates optimality, and periodically: every `exact_every` epochs once the epochs
    since the last check have visited as many constraints as the cache holds); a failed exact check
    with shrunk constraints makes them all active again, as LIBLINEAR does before it stops, when
    the estimate looked done or when the shrunk constraints hold half the gap or more (the estimate
    keeps their stale terms and need never look done: a9a's first 5000 rows with -w 1 3 at -e 1e-5
    stalled at 7e-5 for 20000 epochs before; now 4152). That second unshrink keeps the thresholds,
    so the next epoch sets aside again what is still far from moving.
    A stop request (svmtrain.interrupt) ends the run after the current epoch, with exact bounds.

    Problems of Crammer-Singer examples follow LIBLINEAR's -s 4 instead: examples shrink whole, so
    the active set is also unshrunk whenever its violation falls below a threshold (a quarter of the
    first epoch's, halved at each unshrink), after any failed check, and w is recomputed only for a
    check that the incremental w passes.

    `rounds`: the caller re-solves a grown cache round after round (cutting planes, online-dual):
    the solution also carries each constraint's gradient at the w returned, which the exact check
    that ended the run computed (every run ends on one at its final w), and its squared norm, for
    the next round's cache (`ConstraintCache.sqnorm`). Both were a pass over the cache's terms a
    round, the norms the larger part of building the engine. Such a caller also hands over the w
    it is done with (`w_buffer`), which the engine may take for its own: w is then not held twice.
    """
    start = time.perf_counter()
    shrink0 = None
    if alpha is None:
        alpha = cache.alpha0
        if cache.shrink0 is not None and shrinking:
            # a hot start continues a run: its first epoch sets aside what that run had set aside
            # (checked like any shrinking: a failed exact check brings it back)
            shrink0 = cache.shrink0
    engine = cache.engine(alpha, seed=seed, shrinking=shrinking, w_buffer=w_buffer)
    if shrink0 is not None:
        engine.shrinking_thresholds = shrink0
    if rounds:
        engine.keep_gradients()
    run = run_epochs(engine, epsilon=epsilon, max_epochs=max_epochs, exact_every=exact_every,
                     on_epoch=on_epoch, start=start, record=EpochRecord)
    # the engine ends here: its own w is handed over, not copied (a second copy of w was the peak
    # of training sector multiclass); engine.alpha is a copy in the caller's order
    return Solution(w=engine.final_w(), alpha=engine.alpha, dual=run.dual, primal=run.primal,
                    relative_gap=relative_gap(run.primal, run.dual), epochs=run.epochs,
                    seconds=time.perf_counter() - start, converged=run.converged,
                    records=run.records, interrupted=run.interrupted,
                    thresholds=engine.shrinking_thresholds, visits=run.visits,
                    gradients=engine.gradients if rounds else None,
                    sqnorm=engine.sqnorms if rounds else None)
