"""The budgeted mode: RBF-kernel SVMs with at most B support vectors (BSCA, or BSGD to compare).

Binary (labels mapped to +1/-1 by the binary task), no bias term (as the paper: the RBF kernel's
feature space does not need one, and without it the dual has no equality constraint, so single
coordinate steps are exact); C per example as everywhere (C times the example's `cost:`):

    P(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i <w, phi(x_i)>)
    D(a) = sum_i a_i - 1/2 sum_ij a_i a_j y_i y_j k(x_i, x_j),  0 <= a_i <= C_i

Multiclass is one-vs-rest: K such problems (class k against the others), one budget each, in one
model; P and D are the sums over the K problems, so D <= OPT <= P holds for the sum. Regression is
epsilon-SVR (a_i in [-C_i, C_i], D(a) = sum y_i a_i - p sum |a_i| - 1/2 a^T K a).

The certificate. The model w~ = sum_j beta_j phi(x~_j) is a point of the feature space, so its primal
P(w~) -- 1/2 beta^T K beta plus the loss of f~ on every example, one pass -- is an upper bound on the
optimum of the *unbudgeted* kernel SVM. The training coefficients a are feasible for the dual box,
so D(a), computed with the exact kernel over the examples with a_i != 0, is a lower bound on it
(weak duality; D of the budgeted expansion instead would not be). BSCA's a are its own; BSGD's are
the coefficients Pegasos implies, a_i = n C_i (violations of i) / T, inside the box after whole
epochs. The gap P(w~) - D(a) bounds how far the budgeted model is from the best kernel SVM.
The output of BSCA (averaging, the default). At C = 32 with gamma = 2^-7 every two a9a rows have
k >= 0.8: the kernel has a large near-constant part, so each coordinate step shifts f~ at every
point by about 0.8 delta, and the last iterate of an epoch carries the noise of its last steps:
its test accuracy swung between 60% and 84% from seed to seed and epoch to epoch, also without a
budget (exact kernel, no merging) and with the AUC the same for every seed. The mean of the
epoch's iterates does not: SDCA's averaging output (Shalev-Shwartz & Zhang 2013, the option for
Lipschitz losses such as the hinge) returns a_bar = the mean of the iterates of the last epoch's
last W steps and w(a_bar); W = B by default (`window`): the averaged coefficients are kept on the
iterate's SVs, and a merge, chosen for the iterate, moves them by a projection; within B steps at
most B merges happen (one turnover of the budget). On a9a's test file, averaging whole epochs
gave 74.5-82.8%, W = 10000 steps 82.8-84.3%, W = B = 500 83.8-84.4% (seeds 1-3, 1-2 epochs). a_bar is in the box (a mean of feasible points), so D(a_bar) is a lower bound as before
(and D(a_bar) >= the mean of the D(a^(s)), D being concave); the averaged model w~_bar is a point of
the feature space, so P(w~_bar) is an upper bound. The iterates, and so the next epoch, are plain
BSCA's; `average=False` returns the last iterate instead (the paper's Alg. 2 as printed).
Shrinking (BSCA, the default; `shrink=None` turns it off): from the second epoch on, an example
whose a_i is at a bound with a zero step by a margin of DEFAULT_SHRINK (a_i = 0 and y f~ >= 2,
a_i = C_i and y f~ <= 0) is skipped, its margin -- the O(B) cost of a visit -- not computed, for 1,
2, 4, then at most 8 epochs while it stays so (bsca_epoch). Skipped examples keep their a_i, so the
certificate is unchanged. `step_tol` skips steps |delta a_i| below it (default 0: every step).
D costs O(m^2) kernel evaluations over the m examples with a_i != 0: it is computed once at the end
(and per epoch only with --trace). The model records D and the non-zero a (by example number), so
verify-bound recomputes both P(w~) and D(a) from the data: `dual_of_rows` is the one code path.
"""

import time
from dataclasses import field

import numpy as np

from svmtrain._budget import (Expansion, bsca_epoch, bsgd_epoch, ensure_merge_table, kernel_quadratic,
                             row_sqnorms)
from svmtrain._linear import hinge_sum
from svmtrain.data import distinct, take_rows
from svmtrain.objective import relative_gap
from svmtrain.records import record

OPTIMIZERS = ("bsca", "bsgd")   # the CLI says --optimizer bsca|sgd
MERGE_SEARCHES = ("table", "golden")   # precomputed (Glasmachers & Qaadan 2018) or golden section
DEFAULT_MERGE_PRECISION = 0.01
DEFAULT_EPOCHS = 5
DEFAULT_BUDGET = 500
# BSCA's shrinking (see bsca_epoch): an example at a bound whose zero step has this much room rests
# for 1, 2, 4, 8 epochs. Chosen on held-out training data (80/20 splits of a9a and ijcnn1, seeds
# 1-3): 0.5 cost 0.3 points of 5-epoch accuracy on a9a, 1.0 none on either.
DEFAULT_SHRINK = 1.0
DEFAULT_STEP_TOL = 0.0   # Alg. 2 takes every non-zero step


@record
class BudgetedEpoch:
    """One line of --trace: cumulative training seconds (evaluation excluded), the objectives,
    merges in the epoch, validation metric (accuracy, or MSE for regression; None without data)."""
    epoch: int
    seconds: float
    primal: float
    dual: float
    merges: int
    support_vectors: int
    validation: object = None
    margins: int = 0           # margins f~(x_i) computed in the epoch (BSCA's shrinking skips some)
    # kernel values k(x, x~_j) computed in the epoch, summed over the sets: the margins' (the SVs
    # held at each) and the merges' fresh kernel rows (bsca_epoch), a machine-independent cost
    kernel_values: int = 0


@record
class BudgetedResult:
    support_vectors: list          # per set: (beta, indptr, indices, data)
    primal: float
    dual: float
    relative_gap: float
    examples: int
    epochs: int
    n_features: int
    gamma: float
    merges: int
    seconds: float
    history: list = field(default_factory=list)
    alphas: list = field(default_factory=list)   # per set: (example numbers, a) of the non-zeros


def targets(task, block, path):
    """(Y, regression): Y is n x S, one column per set of support vectors: +1/-1 for the binary task
    and for each class of one-vs-rest multiclass, the targets for regression."""
    if task.name == "binary":
        return task.signs(block, path)[:, None], False
    if task.name == "multiclass":
        k = task.label_index(block, path)
        return np.where(k[:, None] == np.arange(task.K)[None, :], 1.0, -1.0), False
    if task.name == "regression":
        return np.asarray(block.target, dtype=np.float64)[:, None], True
    raise ValueError(f"the budgeted mode has no {task.name} task")


def expansions(model):
    """The model's support vector sets as Expansion objects (kernel evaluations in Cython)."""
    return [Expansion.from_arrays(model.n_features, model.gamma, *sv) for sv in model.support_vectors]


def decision_values(exps, block):
    """n x S decision values f~_k(x_i)."""
    if not exps:
        return np.zeros((block.n_rows, 0))
    return np.column_stack([e.decision_values(block.indptr, block.indices, block.data) for e in exps])


class KernelPrimal:
    """P(w~) = sum_k 1/2 beta_k^T K beta_k + sum_i C_i sum_k loss_ik, the loss summed example by
    example (then set by set) with carried compensation: streamed blocks give the training figure."""

    def __init__(self, task, exps, C, p, path):
        self.task, self.exps, self.C, self.p, self.path = task, exps, C, p, path
        self.acc = np.zeros(2)
        self.examples = 0

    def add(self, block):
        Y, regression = targets(self.task, block, self.path)   # validates the labels first
        F = decision_values(self.exps, block)
        v = (np.abs(Y - F) - self.p) if regression else (1.0 - Y * F)
        v = self.task.costs(block, self.C)[:, None] * v
        hinge_sum(np.ascontiguousarray(v.ravel(), dtype=np.float64), self.acc)
        self.examples += block.n_rows

    def value(self):
        from svmtrain.objective import PrimalValue
        regularizer = 0.5 * float(sum(e.quadratic() for e in self.exps))
        loss = float(self.acc[0] + self.acc[1])
        return PrimalValue(regularizer + loss, regularizer, loss, self.examples)


@record
class _Rows:
    """CSR arrays in the shape take_rows reads."""
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


def dual_of_rows(csr, n_cols, Y, alpha, regression, p, gamma):
    """D(a) with the exact kernel over the rows with some a_i != 0 (csr: their CSR arrays, Y and
    alpha: their m x S targets and coefficients): the linear term minus 1/2 a^T Q a, set by set."""
    coef = alpha if regression else alpha * Y
    quad = kernel_quadratic(*csr, np.arange(len(alpha), dtype=np.int64),
                            np.ascontiguousarray(coef, dtype=np.float64), n_cols, gamma)
    if regression:
        linear = np.sum(Y * alpha, axis=0) - p * np.sum(np.abs(alpha), axis=0)
    else:
        linear = np.sum(alpha, axis=0)
    return float(np.sum(linear - 0.5 * quad))


def exact_dual(block, Y, alpha, regression, p, gamma):
    """D(a) of an n x S alpha over a whole block (see dual_of_rows)."""
    rows = np.flatnonzero(np.any(alpha != 0.0, axis=1))
    return dual_of_rows(take_rows(block, rows), block.n_features, Y[rows], alpha[rows], regression,
                        p, gamma)


def sparse_alphas(alpha):
    """The model's form of an n x S alpha: per set, (example numbers, values) of its non-zeros."""
    out = []
    for k in range(alpha.shape[1]):
        rows = np.flatnonzero(alpha[:, k])
        out.append((rows.astype(np.int64), alpha[rows, k].copy()))
    return out


class KernelDual:
    """verify-bound's D(a): collects, over the streamed blocks, the rows of the examples with a
    stored a_i != 0, then computes D with the exact kernel (dual_of_rows, as training did)."""

    def __init__(self, task, model, path):
        self.task, self.path, self.model = task, path, model
        sets = model.alphas
        self.rows = distinct(np.concatenate([r for r, _ in sets])) if sets else np.zeros(0, np.int64)
        self.alpha = np.zeros((len(self.rows), len(sets)))
        for k, (r, v) in enumerate(sets):
            self.alpha[np.searchsorted(self.rows, r), k] = v
        self.parts, self.seen = [], 0

    def add(self, block):
        lo, hi = np.searchsorted(self.rows, [self.seen, self.seen + block.n_rows])
        if hi > lo:
            local = self.rows[lo:hi] - self.seen
            Y, _ = targets(self.task, block, self.path)
            self.parts.append((take_rows(block, local), Y[local], block.cost[local],
                               block.line[local], block.n_features))
        self.seen += block.n_rows

    def value(self):
        """(D, problem): problem is None, or why D is not a bound for this data."""
        if len(self.rows) and self.rows[-1] >= self.seen:
            return None, (f"the model's coefficients refer to example {self.rows[-1] + 1}, the data "
                          f"has {self.seen}: not the training data")
        cat = np.concatenate
        offsets = np.cumsum([0] + [c[0][-1] for c, *_ in self.parts[:-1]])
        indptr = cat([[0]] + [c[0][1:] + o for (c, *_), o in zip(self.parts, offsets)]).astype(np.int64)
        csr = (indptr, cat([c[1] for c, *_ in self.parts] or [np.zeros(0, np.int64)]),
               cat([c[2] for c, *_ in self.parts] or [np.zeros(0)]))
        S = self.alpha.shape[1]
        Y = cat([y for _, y, *_ in self.parts]) if self.parts else np.zeros((0, S))
        cost = cat([c for _, _, c, *_ in self.parts]) if self.parts else np.zeros(0)
        n_cols = max([self.model.n_features] + [nc for *_, nc in self.parts])
        regression = self.task.name == "regression"
        C = self.model.C * cost[:, None]
        lower = -C if regression else 0.0
        bad = np.flatnonzero(np.any((self.alpha < lower) | (self.alpha > C), axis=1))
        if bad.size:
            line = cat([ln for _, _, _, ln, _ in self.parts])[bad[0]]
            return None, (f"the coefficient of example {self.rows[bad[0]] + 1} (line {line}) is outside "
                          f"its box [{'-C_i' if regression else '0'}, C_i]: not the training data")
        D = dual_of_rows(csr, n_cols, Y, self.alpha, regression, self.model.p or 0.0, self.model.gamma)
        return D, None


def train_budgeted(task, block, path, *, C, gamma=None, budget=DEFAULT_BUDGET, epochs=DEFAULT_EPOCHS,
                   optimizer="bsca", merge_precision=DEFAULT_MERGE_PRECISION, merge_search="table",
                   seed=1, p=0.1, average=True, window=None, step_tol=DEFAULT_STEP_TOL,
                   shrink=DEFAULT_SHRINK,
                   validation=None, on_epoch=None, epoch_objectives=True, **_ignored):
    """Train one budgeted model per set (1, or K one-vs-rest); see the module docstring.

    gamma None: 1 / (number of features). validation: a Block to report a metric on per epoch.
    average (BSCA only): the model and coefficients are the mean over the last epoch's iterates.
    shrink (BSCA only; None: off): the room by which an example at a bound must have a zero step
    to rest for its next epochs; step_tol (BSCA only): steps |delta a_i| below it are not taken.
    Both depart from Alg. 2 as printed, which average=False, shrink=None, step_tol=0 reproduce.
    on_epoch(BudgetedEpoch) after every epoch; the objectives are then computed every epoch, unless
    epoch_objectives is False (primal and dual None in the records: the benchmark's timing runs).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}")
    if merge_search not in MERGE_SEARCHES:
        raise ValueError(f"unknown merge search {merge_search!r}")
    table = merge_search == "table"
    averaged = bool(average) and optimizer == "bsca"
    window = budget if window is None else window   # steps averaged at the end of each epoch
    n, n_cols = block.n_rows, block.n_features
    if gamma is None:
        gamma = 1.0 / max(n_cols, 1)
    Y, regression = targets(task, block, path)
    sets = Y.shape[1]
    cost = np.ascontiguousarray(task.costs(block, C), dtype=np.float64)
    sqnorm = row_sqnorms(block.indptr, block.indices, block.data)
    exps = [Expansion(n_cols, gamma, budget + 1) for _ in range(sets)]
    alpha = np.zeros((n, sets))            # BSCA: a; BSGD: the (signed) violation counts
    state = []
    for k in range(sets):
        state.append({
            "y": np.ascontiguousarray(Y[:, k]),
            "alpha": np.zeros(n),
            "alpha_avg": np.zeros(n) if averaged else None,
            "slot_of": np.full(n, -1, dtype=np.int64),
            "perm": np.arange(n, dtype=np.int64),
            # one splitmix64 stream per set: seed, seed + 1, ... (the generator hashes its state)
            "rng": np.array([(seed + k) % 2**64], dtype=np.uint64),
            "clock": np.zeros(1, dtype=np.int64),
            # BSCA's shrinking: epochs an example still rests, and how many it rests next time
            "skip_left": np.zeros(n, dtype=np.int32),
            "skip_next": np.ones(n, dtype=np.int32),
        })
    history, merges_total, seconds = [], 0, 0.0

    def dual_coefficients():
        for k, st in enumerate(state):
            if optimizer == "bsca":
                alpha[:, k] = st["alpha_avg"] if averaged else st["alpha"]
            else:   # a_i = n C_i (violations of i) / T; exactly C_i when every visit violated
                alpha[:, k] = cost * ((n * st["alpha"]) / max(int(st["clock"][0]), 1))
        return alpha

    def scale(k):
        return 1.0 if optimizer == "bsca" else 1.0 / max(int(state[k]["clock"][0]), 1)

    def export(k):
        """Set k's model as (beta, indptr, indices, data): BSGD's S / T, BSCA's averaged or last
        iterate (SVs whose averaged coefficient is exactly 0 left out)."""
        beta, indptr, indices, data = exps[k].export(scale(k), averaged)
        keep = np.flatnonzero(beta != 0.0)
        if len(keep) == len(beta):
            return beta, indptr, indices, data
        rows = take_rows(_Rows(indptr, indices, data), keep)
        return (beta[keep],) + rows

    def model_expansions():
        if optimizer == "bsca" and not averaged:
            return exps
        return [Expansion.from_arrays(n_cols, gamma, *export(k)) for k in range(sets)]

    def objectives():
        model_exps = model_expansions()
        acc = KernelPrimal(task, model_exps, C, p, path)
        acc.add(block)
        P = acc.value().primal
        D = exact_dual(block, Y, dual_coefficients(), regression, p, gamma)
        return P, D, model_exps

    ensure_merge_table()   # once per process, before the clock: the first epoch of a run timed alike
    P = D = None
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        merges = margins = kernel_values = 0
        for k, (e, st) in enumerate(zip(exps, state)):
            if optimizer == "bsca":
                m, _, _, visits, kernels = bsca_epoch(
                    e, block.indptr, block.indices, block.data, sqnorm, st["y"], cost, st["alpha"],
                    st["slot_of"], st["perm"], st["rng"], budget, merge_precision, regression, p, table,
                    st["alpha_avg"], window, step_tol, st["skip_left"], st["skip_next"],
                    np.inf if shrink is None else shrink)
            else:
                m, _, _, kernels = bsgd_epoch(
                    e, block.indptr, block.indices, block.data, sqnorm, st["y"], cost, st["alpha"],
                    st["slot_of"], st["perm"], st["rng"], st["clock"], budget, merge_precision,
                    regression, p, table)
                visits = n - 1 if epoch == 1 else n   # every step has a margin but the very first
            merges += m
            margins += visits
            kernel_values += kernels
        seconds += time.perf_counter() - started
        merges_total += merges
        if on_epoch is not None:
            if epoch_objectives:
                P, D, model_exps = objectives()
            else:
                model_exps = model_expansions()
            metric = None
            if validation is not None:
                metric = validation_metric(task, model_exps, validation)
            record = BudgetedEpoch(epoch, seconds, P if epoch_objectives else None,
                                   D if epoch_objectives else None, merges, sum(e.n_sv for e in exps), metric,
                                   margins, kernel_values)
            history.append(record)
            on_epoch(record)
    if P is None or not epoch_objectives:
        P, D, _ = objectives()
    svs = [export(k) for k in range(sets)]
    return BudgetedResult(svs, P, D, relative_gap(P, D), n, epochs, n_cols, gamma, merges_total,
                          seconds, history, sparse_alphas(dual_coefficients()))


def predict_values(task, exps, block):
    """(predictions, decision values) of the rows of a block: the sign's label (binary), the class
    of the largest one-vs-rest value (multiclass), the value itself (regression)."""
    F = decision_values(exps, block)
    if task.name == "binary":
        return np.where(F[:, 0] > 0, task.labels[0], task.labels[1]), F[:, 0]
    if task.name == "multiclass":
        return task.labels[np.argmax(F, axis=1)], F
    return F[:, 0], F[:, 0]


def validation_metric(task, exps, block):
    """Accuracy (classification) or mean squared error (regression) on a labelled block."""
    predictions, _ = predict_values(task, exps, block)
    if task.name == "regression":
        return float(np.mean((block.target - predictions) ** 2)) if block.n_rows else 0.0
    return float(np.mean(predictions == block.target)) if block.n_rows else 0.0
