"""Multiclass classification, Crammer and Singer's joint formulation (Ramanan A.2; Joachims sec. 5).

w = (w_1, ..., w_K), one block of `width` weights per class; psi(x, k) puts x in block k, so

    x_ij = psi(x_i, y_i) - psi(x_i, j)  (two terms on the same data row: no copy),
    l_ij = Delta(y_i, j)                margin rescaling, or
    x_ij = Delta(y_i, j) (psi(x_i, y_i) - psi(x_i, j)),  l_ij = Delta(y_i, j)   slack rescaling,

for j != y_i, and P(w) = 1/2 ||w||^2 + sum_i C_i max(0, max_j (Delta(y_i, j) - w_{y_i}.x_i + w_j.x_i)).
With the 0/1 loss both rescalings are the same problem. Labels are any values, sorted and mapped
to 0..K-1; the model records them.

The solvers keep w feature-major (LIBLINEAR's layout: the K weights of feature j at
w[j * K : j * K + K], the bias weights last), so that the K scores of a row take one pass over its
nonzeros with K contiguous weights each: class k's term is at offset k with stride K. The model file
keeps the class-major K x width matrix; model_weights and solver_weights convert.
"""

import numpy as np

from svmtrain._oracles import block_scores, multiclass_predict, multiclass_worst
from svmtrain.data import DataError, distinct
from svmtrain.tasks.base import Constraints, Geometry, LabelledTask, Problem, describe_labels

# Listing every (i, j) measured faster than cutting planes on pendigits (K = 10), on sector
# (K = 105: 22.7 s against 33 s to a gap of 1e-3) and on all of kddcup99 scaled to [0, 1]
# (494,020 x 22 = 10.9 M constraints: 16 s and 2.8 GB peak against 59 s and 1.1 GB to a gap of
# 5.9e-3, with the engine's term records). The n-slack mode's Crammer-Singer kernel
# (ClassListing.cache) needs about 30 bytes per constraint (kddcup99: 531 MB peak, reading
# included), but the paths that make the term records (--nonneg, the online-dual and Dask
# modes, dual states) still cost about 250, so the cutting planes take over past this many.
LIST_ALL_UP_TO = 12_000_000


class Multiclass(LabelledTask):
    name = "multiclass"
    label_noun, labels_noun = "label", "classes"
    # the oracle is one pass of K scores per row: re-pricing f cached offenders per example costs
    # more (1-slack on pendigits /100: 3.9 s without the cache, 10.1 s with -f 5; kddcup99, 20k
    # rows: 11 s against 26 s)
    cache_offenders = False

    def __init__(self, labels, loss=None, rescaling=None):
        super().__init__(labels, loss, rescaling)
        if self.loss != "zero-one":
            raise ValueError("the multiclass task's loss is zero-one")
        self.delta = 1.0 - np.eye(self.K)

    @classmethod
    def from_training_data(cls, block, path, options=None):
        options = options or {}
        if options.get("loss") not in (None, "zero-one"):
            raise DataError(path, None, f"the multiclass task has the zero-one loss, not {options['loss']}")
        values = distinct(block.target)
        if len(values) < 2:
            raise DataError(path, None, f"the multiclass task needs at least two classes, found "
                                        f"{len(values)} ({describe_labels(values)})")
        return cls(values, "zero-one", options.get("rescaling"))

    def n_weights(self, geometry):
        return self.K * geometry.width

    def model_weights(self, w, geometry):
        """The feature-major solver w as the model's K x width (class-major) matrix: a view in
        column-major memory, not a copy (sector's 5.8M weights would be held twice at the end of
        training); the model writer and solver_weights read it as it is."""
        return np.asarray(w, dtype=np.float64).reshape(geometry.width, self.K).T

    def solver_weights(self, model_w):
        """The model's K x width matrix as the feature-major w of the solvers and kernels."""
        return self.feature_major(model_w)

    def problem(self, block, path, C, geometry):
        return Problem(block.indptr, block.indices, block.data, geometry.n_cols,
                       self.n_weights(geometry), geometry.bias, self.costs(block, C), path,
                       stride=self.K)

    def _constraints(self, rows, y, j):
        """x = s (psi(x_i, y_i) - psi(x_i, j)) with s = Delta (slack rescaling) or 1; class k's
        term at offset k (feature-major: stride K)."""
        m = len(rows)
        delta = self.delta[y, j]
        tptr = np.arange(0, 2 * m + 1, 2, dtype=np.int64)
        term_row = np.repeat(rows, 2)
        term_scale = np.empty(2 * m)
        if self.rescaling == "slack":
            term_scale[0::2] = delta
            np.negative(delta, out=term_scale[1::2])
        else:
            term_scale[0::2], term_scale[1::2] = 1.0, -1.0
        term_offset = np.empty(2 * m, np.int64)
        term_offset[0::2], term_offset[1::2] = y, j
        return Constraints(tptr, term_row, term_scale, term_offset, np.ones(2 * m, bool),
                           np.asarray(delta, np.float64), np.asarray(rows, np.int64),
                           np.asarray(j, np.int64))

    def all_constraints(self, problem, block):
        if block.n_rows * (self.K - 1) > LIST_ALL_UP_TO:
            return None
        y = np.asarray(self.label_index(block, problem.path), np.int64)
        return ClassListing(self, y)

    def scores(self, w, block, geometry):
        return block_scores(block.indptr, block.indices, block.data, np.ascontiguousarray(w),
                            geometry.n_cols, self.K, 0.0 if geometry.bias is None else float(geometry.bias),
                            geometry.bias is not None, True)

    def _worst(self, w, block, path, geometry):
        y = self.label_index(block, path)
        j, value, _ = multiclass_worst(self.scores(w, block, geometry), y, self.delta,
                                       1 if self.rescaling == "slack" else 0)
        return y, j, value

    def worst_offenders(self, w, problem, block):
        geometry = Geometry(problem.n_cols, problem.bias)
        y, j, value = self._worst(w, block, problem.path, geometry)
        rows = np.arange(block.n_rows, dtype=np.int64)
        return value, self._constraints(rows, y, j)

    def violations(self, w, block, path, geometry):
        return self._worst(w, block, path, geometry)[2]

    def predict(self, w, block, geometry, path):
        S = self.scores(w, block, geometry)
        return self.labels[multiclass_predict(S)], S

    def new_metric(self):
        return AccuracyMetric()


class ClassListing(Constraints):
    """Every constraint (i, j), j != y_i, example by example, classes ascending. The margins (and a
    hot start) are arrays; the term arrays, about 90 bytes a constraint, are made on first use only:
    the n-slack mode hands the listing to a Crammer-Singer kernel that reads rows and labels
    instead (`cache`), which is also what makes it cheap on kddcup99 (2 M constraints)."""

    def __init__(self, task, y):
        self.task, self.y = task, y
        self.margin = np.ones(len(y) * (task.K - 1))   # Delta(y_i, j) = 1 for j != y_i
        self.alpha0 = None
        self._pairs = self._made = None

    def _classes(self):
        """(example, class) of each constraint."""
        if self._pairs is None:
            n, K = len(self.y), self.task.K
            rows = np.repeat(np.arange(n, dtype=np.int64), K - 1)
            j = np.tile(np.arange(K - 1, dtype=np.int64), n)
            j += j >= self.y[rows]              # the K - 1 classes other than y_i, ascending
            self._pairs = rows, j
        return self._pairs

    def _terms(self):
        if self._made is None:
            rows, j = self._classes()
            self._made = self.task._constraints(rows, self.y[rows], j)
        return self._made

    tptr = property(lambda self: self._terms().tptr)
    term_row = property(lambda self: self._terms().term_row)
    term_scale = property(lambda self: self._terms().term_scale)
    term_offset = property(lambda self: self._terms().term_offset)
    term_bias = property(lambda self: self._terms().term_bias)
    group = property(lambda self: self._classes()[0])
    key = property(lambda self: self._classes()[1])

    def cache(self, problem):
        """The Crammer-Singer kernel's cache of these constraints (svmtrain.engine.solve drives it
        as a ConstraintCache); None with non-negative weights, which the engine's general visit
        handles (the exact subproblem assumes w = sum alpha x, unclipped)."""
        if problem.nonneg is not None and np.any(problem.nonneg):
            return None
        if len(problem.indptr) != len(self.y) + 1 or problem.stride != self.task.K:
            return None
        return CrammerSingerCache(problem, self)


class CrammerSingerCache:
    """What svmtrain.engine.solve asks of a cache, for the record-free kernel."""

    def __init__(self, problem, listing):
        self.problem, self.listing = problem, listing
        self.alpha0 = listing.alpha0
        self.shrink0 = None          # -s 4's whole-example shrinking has no thresholds to carry

    def engine(self, alpha=None, *, seed=1, shrinking=True, w_buffer=None):
        # (w_buffer: listed constraints are solved once, nothing is re-solved to hand w over)
        from svmtrain._multiclass import CrammerSingerCD
        p, lst = self.problem, self.listing
        return CrammerSingerCD(p.indptr, p.indices, p.data, lst.y, p.C, lst.margin, alpha,
                               n_cols=p.n_cols, n_classes=lst.task.K,
                               bias=0.0 if p.bias is None else float(p.bias),
                               has_bias=p.bias is not None, seed=seed, shrinking=shrinking)


class AccuracyMetric:
    def __init__(self):
        self.correct = self.total = 0

    def add(self, predictions, block):
        self.correct += int(np.sum(predictions == block.target))
        self.total += block.n_rows

    def summary(self):
        return {"accuracy": self.correct / self.total if self.total else 0.0,
                "correct": self.correct, "total": self.total}

    def line(self):
        s = self.summary()
        return "Accuracy = %g%% (%d/%d)" % (100.0 * s["accuracy"], s["correct"], s["total"])
