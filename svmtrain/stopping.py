"""The engine's stopping policy: when to look at the exact bounds, when to undo shrinking, when
to stop (svmtrain.engine.solve's docstring gives the rule and the measurements behind it).

It imports neither numpy nor svmtrain.records (dataclasses and inspect: 12 ms of a process):
`train`'s lean path (svmtrain.lean_train) runs it on an engine built from the reader's buffers,
and the per-epoch records are the caller's class.
"""

import math
import time

from svmtrain import interrupt
from svmtrain.objective import relative_gap


class EpochRun:
    """What run_epochs did: the epochs, the exact bounds at the w it ends with, whether it
    converged or was interrupted, the constraints it visited and its epochs' records."""

    __slots__ = ("epochs", "primal", "dual", "converged", "interrupted", "visits", "records")

    def __init__(self, epochs, primal, dual, converged, interrupted, visits, records):
        self.epochs, self.primal, self.dual = epochs, primal, dual
        self.converged, self.interrupted = converged, interrupted
        self.visits, self.records = visits, records


def run_epochs(engine, *, epsilon, max_epochs, exact_every=10, on_epoch=None, start=None,
               record=None):
    """svmtrain.engine.solve's stopping policy (its docstring says what it decides) on an engine
    (a DualCD, or a kernel of its interface): epochs until the exact relative gap is at most
    epsilon, or max_epochs; it ends with w recomputed and exact bounds. `record`: the class of an
    epoch's record (svmtrain.engine.EpochRecord), made each epoch and handed to `on_epoch`;
    None keeps none."""
    start = time.perf_counter() if start is None else start
    records = []
    ended_exact = False              # the last epoch ended on an exact check
    converged = interrupted = False
    epoch = 0
    primal = dual = math.nan
    visits = last_exact = 0      # constraints visited, and the epoch, since the last exact check
    total_visits = 0
    # Crammer-Singer examples shrink as LIBLINEAR's -s 4 does, whole examples at once (as do the
    # examples of svmtrain._regression's kernel, LIBLINEAR -s 13's), so the estimate of eq. 23
    # keeps their stale terms: as in LIBLINEAR, the active set is taken to have converged when its
    # violation falls below a threshold that halves at each unshrink.
    crammer_singer = (engine.n_crammer_singer_groups > 0
                      or getattr(engine, "shrinks_whole_examples", False))
    unshrink_below = math.inf
    for epoch in range(1, max_epochs + 1):
        visited = engine.n_active_constraints()
        visits += visited
        total_visits += visited
        _steps, violation, active = engine.epoch()
        primal, dual = engine.approximate_bounds()
        exact = False
        if crammer_singer and epoch == 1:
            unshrink_below = 0.25 * violation
        elif crammer_singer and violation <= unshrink_below and not engine.all_active:
            # LIBLINEAR's unshrink (no check: the estimate catches up in the epochs that follow)
            engine.unshrink()
            unshrink_below = 0.5 * min(unshrink_below, violation)
        # one-constraint groups (binary, raw constraints): the gap from its terms, which has no
        # stale ones (eq. 23's keeps each shrunk constraint's loss of the epoch it left, far off
        # once w has moved: kddcup99's first 50000 binary rows at -e 1e-3 looked undone for 990
        # epochs over 12 active constraints after the gap was 4e-7)
        gap = engine.approximate_gap()
        looks_done = (violation <= 1e-12 or (relative_gap(primal, dual) <= epsilon if math.isnan(gap)
                                             else relative_gap(dual + gap, dual) <= epsilon))
        # An exact check costs about one sequential pass over every constraint: take it every
        # `exact_every` epochs, but not before the shrunk epochs have done a pass's worth of work.
        # (Crammer-Singer: the check also unshrinks, whose epoch is another pass: three passes.)
        due = (epoch - last_exact >= exact_every
               and visits >= (3 if crammer_singer else 1) * engine.n_constraints)
        if looks_done or due or epoch == max_epochs:
            visits, last_exact = 0, epoch
            if crammer_singer:
                # recompute_w costs another pass: only once the bounds at the incremental w pass
                primal, dual = engine.exact_bounds()
                if relative_gap(primal, dual) <= epsilon or epoch == max_epochs:
                    engine.recompute_w()
                    primal, dual = engine.exact_bounds()
            else:
                engine.recompute_w()
                primal, dual = engine.exact_bounds()
            exact = True
            if relative_gap(primal, dual) <= epsilon:
                converged = True
            elif crammer_singer and not engine.all_active:
                # LIBLINEAR -s 4's unshrink
                engine.unshrink()
                unshrink_below = 0.5 * min(unshrink_below, violation)
            elif not engine.all_active and (looks_done
                                            or engine.shrunk_gap() >= 0.5 * (primal - dual)):
                # the active set has converged but the whole problem has not (LIBLINEAR's
                # unshrink), or most of the gap lies in shrunk constraints, where no step on the
                # active set can close it (eq. 23's estimate, stale for them, need never look
                # done). The thresholds stay: the next epoch sets aside again what is still far
                # from moving, and keeps what the check found
                kept = engine.shrinking_thresholds
                engine.unshrink()
                engine.shrinking_thresholds = kept
        ended_exact = exact
        if record is not None:
            r = record(epoch, time.perf_counter() - start, dual, primal,
                       relative_gap(primal, dual), exact, active, violation, visited)
            records.append(r)
            if on_epoch is not None:
                on_epoch(r)
        if converged:
            break
        if interrupt.requested():
            interrupted = True
            break
    if not ended_exact:
        engine.recompute_w()
        primal, dual = engine.exact_bounds()
    return EpochRun(epoch, primal, dual, converged, interrupted, total_visits, records)
