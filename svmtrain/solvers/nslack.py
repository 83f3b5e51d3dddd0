"""The n-slack mode: every constraint of every example in the engine's cache, one slack per example.

Where a task can list all its constraints (binary: one per example) this is LIBLINEAR's dual
coordinate descent; the cutting-plane loop for tasks that cannot list them comes with those tasks.
"""

from dataclasses import dataclass

from svmtrain import objective
from svmtrain.engine import ConstraintCache, relative_gap, solve
from svmtrain.tasks.base import Geometry


@dataclass
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


def train_nslack(task, block, path, *, C, bias, epsilon, max_epochs, seed, shrinking=True,
                 on_epoch=None):
    geometry = Geometry(block.n_features, bias)
    row, scale, margin, group, C_group = task.constraints(block, path, C)
    cache = ConstraintCache(block.indptr, block.indices, block.data, geometry.n_cols,
                            row, scale, margin, group, C_group, bias)
    sol = solve(cache, epsilon=epsilon, max_epochs=max_epochs, seed=seed, shrinking=shrinking,
                on_epoch=on_epoch)
    # The certificate: P from the task's own pass over the data (the code verify-bound runs),
    # D from the alphas, both with the same ||w||^2.
    P = objective.primal(task, sol.w, geometry, C, [block], path).primal
    D = objective.dual(sol.w, margin, sol.alpha)
    return TrainResult(sol.w, sol.alpha, D, P, relative_gap(P, D), sol.epochs, sol.seconds,
                       sol.converged, geometry, block.n_rows)
