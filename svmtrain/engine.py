"""The engine's stopping policy: dual coordinate epochs until the relative duality gap is met.

The kernel (`svmtrain._engine.DualCD`) does the arithmetic; this module decides when to look at the
exact bounds, when to undo shrinking and what to record. Every solver schedule (n-slack, 1-slack,
online-dual) calls `solve` on a `ConstraintCache`.
"""

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from svmtrain._engine import DualCD


@dataclass
class ConstraintCache:
    """Constraints x_c = scale_c * X[row_c] with margins l_c, in groups g sharing one slack (C_g).

    X is a CSR store (indptr, indices, data) of n_cols columns; `bias`, when not None, is the value of
    LIBLINEAR's implicit constant feature, whose weight is the last entry of w.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_cols: int
    row: np.ndarray
    scale: np.ndarray
    margin: np.ndarray
    group: np.ndarray
    C_group: np.ndarray
    bias: Optional[float] = None

    @property
    def n_constraints(self):
        return len(self.row)


@dataclass
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

    @property
    def gap(self):
        return self.primal - self.dual


@dataclass
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


def relative_gap(primal, dual):
    """(P - D) / P, the stopping quantity; 0 when both are 0 (nothing to learn)."""
    gap = primal - dual
    if primal > 0.0:
        return max(gap, 0.0) / primal
    return 0.0 if gap <= 0.0 else math.inf


def solve(cache: ConstraintCache, *, epsilon: float, max_epochs: int, seed: int,
          alpha: Optional[np.ndarray] = None, shrinking: bool = True, exact_every: int = 10,
          on_epoch: Optional[Callable[[EpochRecord], None]] = None) -> Solution:
    """Maximise the dual over the cache until (P - D) / P <= epsilon on the exact bounds.

    The cheap bound of Ramanan's eq. 23 decides when to compute the exact one (also when no
    coordinate violates optimality, and periodically: every `exact_every` epochs once the epochs
    since the last check have visited as many constraints as the cache holds); a failed exact check
    with shrunk constraints makes them all active again, as LIBLINEAR does before it stops.
    """
    start = time.perf_counter()
    engine = DualCD(cache.indptr, cache.indices, cache.data, cache.row, cache.scale,
                    cache.margin, cache.group, cache.C_group, alpha,
                    n_cols=cache.n_cols, bias=cache.bias or 0.0, has_bias=cache.bias is not None,
                    seed=seed, shrinking=shrinking)
    records = []
    converged = False
    epoch = 0
    primal = dual = math.nan
    visits = last_exact = 0      # constraints visited, and the epoch, since the last exact check
    for epoch in range(1, max_epochs + 1):
        visits += engine.n_active_constraints()
        _steps, violation, active = engine.epoch()
        primal, dual = engine.approximate_bounds()
        exact = False
        looks_done = relative_gap(primal, dual) <= epsilon or violation <= 1e-12
        # An exact check costs about one sequential pass over every constraint: take it every
        # `exact_every` epochs, but not before the shrunk epochs have done a pass's worth of work.
        due = epoch - last_exact >= exact_every and visits >= engine.n_constraints
        if looks_done or due or epoch == max_epochs:
            visits, last_exact = 0, epoch
            engine.recompute_w()
            primal, dual = engine.exact_bounds()
            exact = True
            if relative_gap(primal, dual) <= epsilon:
                converged = True
            elif looks_done and not engine.all_active:
                # the active set has converged but the whole problem has not: LIBLINEAR's unshrink
                engine.unshrink()
        record = EpochRecord(epoch, time.perf_counter() - start, dual, primal,
                             relative_gap(primal, dual), exact, active, violation)
        records.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if converged:
            break
    if not records or not records[-1].exact:
        engine.recompute_w()
        primal, dual = engine.exact_bounds()
    return Solution(w=engine.w.copy(), alpha=engine.alpha.copy(), dual=dual, primal=primal,
                    relative_gap=relative_gap(primal, dual), epochs=epoch,
                    seconds=time.perf_counter() - start, converged=converged, records=records)
