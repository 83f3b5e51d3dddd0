"""Epsilon-insensitive support vector regression (LIBLINEAR -s 13, Ramanan A.6).

Two one-sided constraints per example, sharing its slack (they are never violated together, so
sharing is the same problem as LIBLINEAR's two alphas in a box):

    x_i1 =  x_i, l_i1 =  y_i - p        (w.x_i >= y_i - p - xi_i)
    x_i2 = -x_i, l_i2 = -y_i - p        (w.x_i <= y_i + p + xi_i)

so P(w) = 1/2 ||w||^2 + sum_i C_i max(0, |y_i - w.x_i| - p); p is LIBLINEAR's -p (default 0.1).
"""

import numpy as np

from svmtrain.tasks.base import Constraints, Geometry, PredictsScores, Problem, Task


class Regression(PredictsScores, Task):
    name = "regression"

    def __init__(self, p):
        self.p = float(p)

    @classmethod
    def from_training_data(cls, block, path, options=None):
        return cls((options or {}).get("p", 0.1))

    @classmethod
    def from_model(cls, model):
        return cls(model.p)

    def model_fields(self):
        return {"labels": [], "p": self.p}

    def problem(self, block, path, C, geometry):
        return Problem(block.indptr, block.indices, block.data, geometry.n_cols,
                       self.n_weights(geometry), geometry.bias, self.costs(block, C), path)

    def all_constraints(self, problem, block):
        n = block.n_rows
        rows = np.repeat(np.arange(n), 2)
        scale = np.tile([1.0, -1.0], n)
        margin = np.empty(2 * n)
        margin[0::2] = block.target - self.p
        margin[1::2] = -block.target - self.p
        return TubeListing.one_term(rows, scale, margin, rows, key=np.tile([0, 1], n))

    def worst_offenders(self, w, problem, block):
        return (self.violations(w, block, problem.path, Geometry(problem.n_cols, problem.bias)),
                self.all_constraints(problem, block))

    def violations(self, w, block, path, geometry):
        return np.abs(block.target - geometry.scores(w, block)) - self.p

    def new_metric(self):
        return RegressionMetric()


class TubeListing(Constraints):
    """Regression's listed constraints: for each example i, x_i1 = x_i then x_i2 = -x_i, whose
    margins a --prior may have shifted. The n-slack mode hands them to a kernel of their own
    (svmtrain._regression.SVRDualCD, LIBLINEAR -s 13's one variable an example) through `cache`."""

    def cache(self, problem):
        """The kernel's cache of these constraints (svmtrain.engine.solve drives it as a
        ConstraintCache); None where the engine's general visit must solve them: non-negative
        weights (the kernel's w is sum beta_i x_i, unclipped), another row layout."""
        if problem.nonneg is not None and np.any(problem.nonneg):
            return None
        if len(problem.indptr) != len(self.margin) // 2 + 1 or problem.stride != 1:
            return None
        return TubeCache(problem, self)


class TubeCache:
    """What svmtrain.engine.solve asks of a cache, for the record-free kernel."""

    def __init__(self, problem, listing):
        self.problem, self.listing = problem, listing
        self.alpha0 = listing.alpha0
        self.shrink0 = None          # whole examples shrink by the last epoch's violation

    def engine(self, alpha=None, *, seed=1, shrinking=True, w_buffer=None):
        # (w_buffer: listed constraints are solved once, nothing is re-solved to hand w over)
        from svmtrain._regression import SVRDualCD
        p = self.problem
        return SVRDualCD(p.indptr, p.indices, p.data, self.listing.margin, p.C, alpha,
                         n_cols=p.n_cols, bias=0.0 if p.bias is None else float(p.bias),
                         has_bias=p.bias is not None, seed=seed, shrinking=shrinking)


class RegressionMetric:
    """Mean squared and absolute error and the squared correlation, as LIBLINEAR reports them: from
    sums over the rows in file order, one row at a time (_reader.RegressionSums, which predict's
    lean path adds to in the same loop), so the line does not depend on how the rows were cut into
    blocks."""

    def __init__(self):
        from svmtrain._reader import RegressionSums
        self._sums = RegressionSums()

    def add(self, predictions, block):
        self._sums.add(np.ascontiguousarray(block.target, dtype=np.float64),
                       np.ascontiguousarray(predictions, dtype=np.float64))

    def summary(self):
        mse, mae, r2 = self._sums.figures()
        return {"mse": mse, "mae": mae, "squared_correlation": r2, "total": self._sums.n}

    def line(self):
        s = self.summary()
        return ("Mean squared error = %g (regression)\nMean absolute error = %g (regression)\n"
                "Squared correlation coefficient = %g (regression)"
                % (s["mse"], s["mae"], s["squared_correlation"]))
