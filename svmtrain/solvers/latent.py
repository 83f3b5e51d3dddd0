"""Latent structural SVMs by CCCP (Yu & Joachims 2009; Felzenszwalb et al.'s latent SVM).

A task with a latent part h in its labels y = (s, h) (the template of a mixture, a part placement)
has the non-convex objective

    f(w) = 1/2 |w|^2 + sum_i C_i [ max_(s',h') (Delta(s_i, s') + w.psi(x_i, s', h'))
                                   - max_h w.psi(x_i, s_i, h) ]

CCCP bounds the concave part by its value at the current w_t: impute h_i = argmax_h w_t.psi(x_i,
s_i, h) (`task.latent`), then the convex problem P_t (the problem every mode solves, with the
imputed ground truths) is an upper bound on f that touches it at w_t:

    f(w) <= P_t(w),   f(w_t) = P_t(w_t)

so solving P_t to w_(t+1) gives f(w_(t+1)) <= P_t(w_(t+1)) <= P_t(w_t) = f(w_t) when the solve is
exact. Each round's convex problem is solved by the n-slack mode to the relative gap epsilon and
certified as usual; its hot start is the previous round's cache, each cached offender (i, y')
re-expressed against the new ground truth with its alpha (a feasible point: the slack groups and
their bounds are the same). Because a solve to epsilon is not exact, a round may still raise f by
up to about epsilon P: the loop keeps the best w and stops as soon as f does not decrease by more
than `tol` f, so the objective of the kept rounds never increases.
"""

import time
from dataclasses import field

import numpy as np

from svmtrain import objective
from svmtrain.records import record
from svmtrain.solvers.nslack import train_nslack
from svmtrain.tasks.base import Geometry
from svmtrain.tasks.user import same_label


@record
class LatentRound:
    """One CCCP round: f at the round's start (its w, newly imputed), then its convex solve."""

    round: int
    objective: float      # f(w_t) = P_t(w_t): the non-convex objective before this round's solve
    primal: float         # P_t(w_(t+1)) after the solve
    dual: float           # D_t: a lower bound on min P_t
    relative_gap: float
    epochs: int
    seconds: float
    changed: int          # examples whose imputed latent part changed at this round's start


@record
class LatentResult:
    result: object        # the kept round's n-slack TrainResult (w and its certificate)
    rounds: list = field(default_factory=list)
    objective: float = np.inf   # f of the kept w
    stopped: str = ""


def impute(adapter, w):
    """Every example's ground truth with its latent part imputed under w; how many changed."""
    task = adapter.task
    changed = 0
    for k in range(len(adapter.examples)):
        x, y = adapter.examples[k]
        old = adapter.imputed.get(k, y)
        try:
            new = task.latent(x, y, w)
        except Exception as e:
            from svmtrain.tasks.user import TaskError
            raise TaskError(f"task {task.name}: latent raised {type(e).__name__}: {e}") from None
        adapter.imputed[k] = new
        changed += int(not same_label(old, new))
    return changed


def train_latent(adapter, block, path, *, rounds, C, epsilon, max_epochs, seed, shrinking=True,
                 on_epoch=None, on_round=None, tol=None):
    """At most `rounds` CCCP rounds over the in-memory examples of `block` (n-slack solves), then
    one more imputation to price the last w: the kept w is the one of least f seen."""
    tol = epsilon if tol is None else tol
    geometry = Geometry(adapter.size, None)
    w = np.zeros(adapter.size)
    kept = LatentResult(None)
    best_f, best = np.inf, None    # the least f(w) seen and the round result that gave that w
    current = None                 # the last round's result (its w is the w priced next)
    previous = None                # its cache's offenders (ordinal, y') and alphas: the hot start
    for t in range(1, rounds + 2):
        started = time.perf_counter()
        changed = impute(adapter, w)
        # f(w_t): the convex objective of the new imputation at the same w (they touch there)
        f = objective.primal(adapter, w, geometry, C, [block], path).primal
        if f > best_f:
            kept.stopped = (f"round {t}: the objective rose to {f!r} from {best_f!r} (the "
                            f"tolerance of a round's solve): kept the w of round {t - 2}")
            break
        decrease = best_f - f
        best_f, best = f, current
        if t > rounds:
            kept.stopped = f"--latent-rounds {rounds} reached"
            break
        if current is not None and (changed == 0 or decrease <= tol * abs(f)):
            kept.stopped = (f"round {t}: " + ("no latent part changed" if changed == 0 else
                            f"the objective fell by {decrease:.3g}, within the tolerance"))
            break
        if previous is not None:
            adapter.start = previous
        current = train_nslack(adapter, block, path, C=C, bias=None, epsilon=epsilon,
                               max_epochs=max_epochs, seed=seed, shrinking=shrinking,
                               on_epoch=on_epoch)
        problem = adapter.last_problem
        rows = current.cache.term_row if current.cache is not None else np.zeros(0, np.int64)
        previous = ([problem.store.labels[r] for r in rows.tolist()], np.asarray(current.alpha))
        record = LatentRound(t, f, current.primal, current.dual, current.relative_gap,
                             current.epochs, time.perf_counter() - started, changed)
        kept.rounds.append(record)
        if on_round is not None:
            on_round(record)
        w = current.w
        if current.interrupted:
            kept.stopped = "interrupted"
            best = current      # not priced: an interrupted run keeps its last w
            break
    kept.result = best if best is not None else current
    kept.objective = best_f
    return kept
