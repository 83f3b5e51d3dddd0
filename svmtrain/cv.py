"""Cross-validation and the path over C: `cross_validate` and `c_path` (svmtrain.api exports both).

Folds. An example is never split: rows for the binary, multiclass and regression tasks, a qid's
lines for ranking and constraints (a line without qid is its own example), a sentence (a run of
one qid) for sequence. Classification folds are stratified as LIBLINEAR's: each class's rows are
shuffled and dealt round-robin, the dealing continuing from class to class, so every fold holds
each class's count / K rows (give or take one) and the folds' sizes differ by at most one. Other
tasks deal their shuffled examples the same way. The shuffle is numpy's PCG64 seeded by `seed`:
the same data and seed give the same folds on every machine. A fold's training rows keep the
file's order (a sentence's lines stay consecutive), and they keep the whole data's feature count,
so every fold's w has one layout and a path's dual state fits each of its C's.

Scores. Each fold is trained through the pipeline (svmtrain.pipeline.run_training: every mode and
control the train command has) and scored with the task's metric on its held-out rows: accuracy
(binary, multiclass), token accuracy (sequence), mean squared error and squared correlation
(regression, as LIBLINEAR -v; lower MSE is better), pairwise accuracy and NDCG@10 (ranking), the
fraction of constraints satisfied (constraints). The mean and the sample standard deviation
(ddof 1) are over the folds. Folds run in `jobs` processes; each fold's model depends on its rows
and the options only, so the figures are the same for any `jobs`.

The path. C's are visited in increasing order, each n-slack run hot-started in memory from the
previous C's dual state (svmtrain.solvers.nslack.HotStart: alpha * C_new / C_old, as --warm-start
scales a state file, with no file written), and every point is trained to the relative gap
epsilon, its certificate reported. Other modes train each C from scratch. The grid is geometric
(`Cs`) or LIBLINEAR -C's automatic start: below C_min = 1 / (n max_i |x_i|^2) every hinge is
active at the optimum (w = C sum_i y_i x_i gives |w.x_i| <= 1), so w only scales with C and the
predictions do not change; the search starts at the power of two below C_min and doubles until the
cross-validation score has not improved for `patience` doublings, or C passes `C_max`. Doublings
count only once the score has moved from the first C's: at the smallest C's a file without a bias
feature often predicts one class everywhere, a flat start that says nothing about larger C's.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import numpy as np

from svmtrain.errors import InputError
from svmtrain.options import Controls, Local, OptionError, Problem
from svmtrain.records import record

__all__ = ["cross_validate", "c_path", "fold_of_rows", "CVResult", "PathPoint", "PathResult",
           "METRICS"]

#: the task's metric: (its name, higher is better, the key of the task metric's summary)
METRICS = {"binary": ("accuracy", True, "accuracy"), "multiclass": ("accuracy", True, "accuracy"),
           "sequence": ("token_accuracy", True, "accuracy"), "regression": ("mse", False, "mse"),
           "ranking": ("pairwise_accuracy", True, "pairwise_accuracy"),
           "constraints": ("fraction_satisfied", True, "fraction_satisfied")}
CLASSIFICATION = ("binary", "multiclass")
C_MAX = 1024.0        # LIBLINEAR -C's largest C
PATIENCE = 5          # doublings without a better score before the automatic search stops


@record(frozen=True)
class CVResult:
    """One C's cross-validation: the metric's value per fold, their mean and standard deviation
    (ddof 1), each fold's whole summary (`details`: e.g. squared_correlation for regression) and
    certificate (`gaps`: the relative duality gap each fold's model reached)."""

    metric: str
    C: float
    folds: tuple
    mean: float
    std: float
    details: tuple = ()
    gaps: tuple = ()
    certified: bool = True
    seconds: float = 0.0

    def as_json(self):
        return {"folds": list(self.folds), "mean": self.mean, "std": self.std,
                "metric": self.metric, "C": self.C, "details": list(self.details),
                "relative_gaps": list(self.gaps), "certified": self.certified}


@record(frozen=True)
class PathPoint:
    """One C of a path: the certificate of its model on the whole data (`primal`, `dual`,
    `relative_gap`; without folds), or its cross-validation (`cv`), and the training cost."""

    C: float
    relative_gap: float
    certified: bool
    epochs: int
    seconds: float
    primal: Optional[float] = None
    dual: Optional[float] = None
    cv: Optional[CVResult] = None


@record
class PathResult:
    """A path over C: its points in increasing C, the best (with folds), the model at the best C
    trained on all the data (when asked), and the metric the points were scored by."""

    points: list
    metric: Optional[str] = None
    best: Optional[PathPoint] = None
    model: object = None
    warm: bool = True

    @property
    def seconds(self):
        return sum(p.seconds for p in self.points)

    def as_json(self):
        out = {"C": [p.C for p in self.points], "metric": self.metric,
               "relative_gap": [p.relative_gap for p in self.points],
               "certified": [p.certified for p in self.points],
               "epochs": [p.epochs for p in self.points], "warm": self.warm}
        if self.metric is not None:
            out.update(mean=[p.cv.mean for p in self.points], std=[p.cv.std for p in self.points],
                       folds=[list(p.cv.folds) for p in self.points],
                       best_C=self.best.C if self.best else None)
        else:
            out.update(primal=[p.primal for p in self.points], dual=[p.dual for p in self.points])
        return out


# -- folds ----------------------------------------------------------------------------------------

def example_of_rows(block, task):
    """An example number per row: the row (row tasks), the run of one qid (sequence), the qid
    (ranking, constraints; a line without qid its own example)."""
    n = block.n_rows
    if task in ("binary", "multiclass", "regression"):
        return np.arange(n, dtype=np.int64)
    qid = block.qid
    if task == "sequence":
        starts = np.ones(n, bool)
        starts[1:] = qid[1:] != qid[:-1]
        return np.cumsum(starts) - 1
    key = np.where(qid >= 0, qid, -1 - np.arange(n, dtype=np.int64))
    return np.unique(key, return_inverse=True)[1].astype(np.int64)


def fold_of_rows(block, task, folds, seed):
    """The fold (0 .. folds-1) of every row (see the module notes). InputError when there are
    fewer examples than folds."""
    example = example_of_rows(block, task)
    n_examples = int(example.max()) + 1 if len(example) else 0
    if n_examples < folds:
        raise InputError(f"{folds} folds need at least {folds} examples; the data has "
                         f"{n_examples}")
    rng = np.random.default_rng(seed)
    fold_of_example = np.empty(n_examples, np.int64)
    if task in CLASSIFICATION:
        labels, cls = np.unique(block.target, return_inverse=True)
        dealt = 0
        for c in range(len(labels)):
            members = np.flatnonzero(cls == c)
            members = members[rng.permutation(len(members))]
            fold_of_example[members] = (dealt + np.arange(len(members))) % folds
            dealt += len(members)
    else:
        order = rng.permutation(n_examples)
        fold_of_example[order] = np.arange(n_examples) % folds
    return fold_of_example[example]


def _rows(block, rows):
    from svmtrain.data import Block, take_rows
    indptr, indices, data = take_rows(block, rows)
    return Block(indptr, indices, data, block.target[rows], block.qid[rows], block.cost[rows],
                 block.line[rows], block.n_features, 0)


# -- the work of one fold (in this process or a worker) ------------------------------------------

_data = {}        # the loaded data of this process: block, name, fold per row, split blocks


def _set_data(block, name, fold):
    _data.clear()
    _data.update(block=block, name=name, fold=fold, split={})


def _split(k):
    """(training source, held-out block) of fold k; k None: all the rows, nothing held out."""
    from svmtrain.data import MemorySource
    if k not in _data["split"]:
        block, fold = _data["block"], _data["fold"]
        if k is None:
            train, test = block, None
        else:
            train = _rows(block, np.flatnonzero(fold != k))
            test = _rows(block, np.flatnonzero(fold == k))
        _data["split"][k] = (MemorySource([train], name=_data["name"]), test)
    return _data["split"][k]


def _train_fold(job):
    """One (fold, C): train, score the held-out rows; returns (summary or None, figures, the
    n-slack dual state to continue from)."""
    from svmtrain.api import scorer
    from svmtrain.pipeline import TrainingRun, run_training
    k, problem, mode, controls, where, hot_start, keep = job
    source, test = _split(k)
    warnings = []
    model, stats = run_training(TrainingRun(source=source, problem=problem, mode=mode,
                                            controls=controls, where=where, hot_start=hot_start,
                                            keep_dual_state=keep, on_warning=warnings.append))
    if stats.interrupted:
        raise KeyboardInterrupt
    summary = None
    if test is not None:
        task, predict = scorer(model)
        metric = task.new_metric()
        labels, _values = predict(test)
        metric.add(labels, test)
        summary = metric.summary()
    figures = {"relative_gap": model.relative_gap, "primal": model.primal, "dual": model.dual,
               "epochs": stats.epochs, "seconds": stats.seconds, "warnings": warnings,
               "certified": stats.converged and model.relative_gap <= problem.epsilon}
    return summary, figures, stats.dual_state


class _Runner:
    """Runs (fold, C) jobs here (jobs=1) or in a pool of processes each holding the data."""

    def __init__(self, block, name, fold, jobs):
        self.pool = None
        _set_data(block, name, fold)
        if jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            # fork where there is one: the workers inherit the data instead of receiving a copy,
            # and a caller's script needs no `if __name__ == "__main__"` guard (spawn re-runs it)
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self.pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_set_data,
                                            initargs=(block, name, fold))

    def map(self, jobs):
        if self.pool is None:
            return [_train_fold(j) for j in jobs]
        return list(self.pool.map(_train_fold, jobs))

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


# -- the library functions ------------------------------------------------------------------------

def _prepare(data, problem, mode, controls, folds, jobs, where=None):
    """Checked records and the loaded data: (problem, mode, controls, where, block, name)."""
    from svmtrain import data as data_layer
    from svmtrain.api import as_source
    from svmtrain.options import check_run
    from svmtrain.pipeline import resolve_mode
    problem = Problem() if problem is None else problem
    controls = Controls() if controls is None else controls
    mode, _, _ = resolve_mode(mode, controls, problem.task, data if isinstance(data, str) else None)
    if not isinstance(problem, Problem):
        raise OptionError(f"problem must be a Problem, got {type(problem).__name__}")
    if not isinstance(controls, Controls):
        raise OptionError(f"controls must be Controls, got {type(controls).__name__}")
    if folds is not None and not (isinstance(folds, int) and not isinstance(folds, bool)
                                  and folds >= 2):
        raise OptionError(f"the number of folds must be an integer >= 2, got {folds!r}", "-v")
    if not (isinstance(jobs, int) and not isinstance(jobs, bool) and 1 <= jobs <= 256):
        raise OptionError(f"the number of jobs must be an integer in [1, 256], got {jobs!r}",
                          "--jobs")
    where = Local() if where is None else where
    if not isinstance(where, Local):
        raise OptionError("cross-validation and the C path run in local processes: give --jobs, "
                          "not --workers or --scheduler", getattr(where, "flag", None))
    check_run(problem, mode, controls, where)
    for flag, value in (("--weights", controls.example_weights),
                        ("--save-state", controls.save_state),
                        ("--warm-start", controls.warm_start)):
        if value:
            raise OptionError("is a file per line or per run; cross-validation splits the lines "
                              "and trains many models: leave it out", flag)
    source = as_source(data, zero_based=problem.zero_based)
    name = "<stdin>" if source == "-" else str(source)
    block = data_layer.load_source(source, zero_based=problem.zero_based)
    data_layer.check_training_rows(block, name, problem.zero_based)
    return problem, mode, controls, where, block, name


def _cv_result(problem, outs):
    name, _, key = METRICS[problem.task]
    values = tuple(float(s[key]) for s, _, _ in outs)
    figures = [f for _, f, _ in outs]
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return CVResult(metric=name, C=problem.C, folds=values, mean=float(np.mean(values)), std=std,
                    details=tuple(s for s, _, _ in outs),
                    gaps=tuple(f["relative_gap"] for f in figures),
                    certified=all(f["certified"] for f in figures),
                    seconds=sum(f["seconds"] for f in figures))


def _warn_once(outs, on_warning, seen):
    for _, figures, _ in outs:
        for w in figures["warnings"]:
            if on_warning is not None and w not in seen:
                seen.add(w)
                on_warning(w)


def cross_validate(data, problem: Optional[Problem] = None, mode=None,
                   controls: Optional[Controls] = None, *, folds=5, seed=1, jobs=1, where=None,
                   on_warning=None):
    """K-fold cross-validation of one training setup (`svmtrain cv -v K`).

    data, problem, mode, controls: as svmtrain.api.train (Controls without per-line files or
    state files). folds: K >= 2; seed: the shuffle of the folds (the solver's order is
    problem.seed); jobs: processes running folds at once (the same result for any number).
    Returns a CVResult: the task's metric per fold, mean, standard deviation.
    """
    problem, mode, controls, where, block, name = _prepare(data, problem, mode, controls, folds,
                                                           jobs, where)
    _check_seed(seed)
    runner = _Runner(block, name, fold_of_rows(block, problem.task, folds, seed), jobs)
    try:
        outs = runner.map([(k, problem, mode, controls, where, None, False)
                           for k in range(folds)])
    finally:
        runner.close()
    _warn_once(outs, on_warning, set())
    return _cv_result(problem, outs)


def _check_seed(seed):
    if not (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**63):
        raise OptionError(f"the seed must be an integer in [0, 2^63), got {seed!r}", "--fold-seed")


def geometric_grid(C_min, C_max, steps):
    """`steps` values from C_min to C_max, evenly spaced in log C."""
    for flag, value in (("--C-min", C_min), ("--C-max", C_max)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise OptionError(f"must be a positive number, got {value!r}", flag)
    if not (isinstance(steps, int) and steps >= 1):
        raise OptionError(f"must be an integer >= 1, got {steps!r}", "--C-steps")
    if C_max < C_min:
        raise OptionError(f"C_max {C_max:g} is below C_min {C_min:g}", "--C-max")
    if steps == 1:
        return [float(C_min)]
    # 12 significant digits: a grid of 0.01 .. 10 is 0.01, 0.1, 1, 10, not 0.09999999999999998
    return [float(f"{C_min * (C_max / C_min) ** (i / (steps - 1)):.12g}") for i in range(steps)]


def smallest_useful_C(block, task, bias):
    """The power of two at or below 1 / (n max_i |x_i|^2) (see the module notes)."""
    rows = np.repeat(np.arange(block.n_rows), np.diff(block.indptr))
    sq = np.bincount(rows, weights=block.data * block.data, minlength=block.n_rows)
    sq = sq + (bias * bias if bias is not None else 0.0)
    n = int(example_of_rows(block, task).max()) + 1 if block.n_rows else 1
    top = float(sq.max()) if len(sq) else 0.0
    if not top > 0:
        return 1.0
    return float(2.0 ** math.floor(math.log2(1.0 / (n * top))))


def c_path(data, problem: Optional[Problem] = None, mode=None, controls: Optional[Controls] = None,
           *, Cs=None, folds=None, seed=1, jobs=1, where=None, start=None, C_max=C_MAX,
           patience=PATIENCE, warm=True, model_file=None, model_format="svmtrain", on_point=None,
           on_warning=None):
    """Train along a path of C's, each warm-started from the last (`svmtrain cv --C-path`).

    Cs: the C's (sorted ascending; e.g. geometric_grid(2**-6, 2**6, 13)), or None for LIBLINEAR
    -C's automatic search (needs folds): from `start` (default smallest_useful_C), doubling
    until the mean score has not improved for `patience` doublings or C exceeds C_max.
    folds: K to score each C by K-fold cross-validation (the folds' paths run in `jobs`
    processes), None to train on all the data and report each point's certificate.
    warm=False trains every point from scratch (the same optima, within their gaps).
    model_file: write the model at the best C (trained on all the data) there, also returned as
    PathResult.model. on_point(PathPoint) is called as points finish. problem.C is ignored.
    """
    problem, mode, controls, where, block, name = _prepare(data, problem, mode, controls, folds,
                                                           jobs, where)
    _check_seed(seed)
    if Cs is None and folds is None:
        raise OptionError("the automatic search scores C by cross-validation: give folds, or "
                          "a grid of C's", "--C-path")
    if Cs is not None:
        Cs = sorted(float(c) for c in Cs)
        if not Cs or not all(math.isfinite(c) and c > 0 for c in Cs):
            raise OptionError(f"the C's must be positive numbers, got {Cs!r}", "--C-path")
    if model_file is not None and folds is None:
        raise OptionError("the best C is chosen by cross-validation: give folds", "--model")
    auto = Cs is None
    if auto:
        if start is None:
            start = smallest_useful_C(block, problem.task, problem.bias)
        elif not (isinstance(start, (int, float)) and math.isfinite(start) and start > 0):
            raise OptionError(f"must be a positive number, got {start!r}", "--C-min")
        if not (isinstance(C_max, (int, float)) and C_max >= start):
            raise OptionError(f"{C_max!r} is below the first C {start:g}", "--C-max")
        Cs = [start * 2.0 ** i for i in range(int(math.floor(math.log2(C_max / start))) + 1)]
    keys = list(range(folds)) if folds is not None else [None]
    fold = (fold_of_rows(block, problem.task, folds, seed) if folds is not None
            else np.zeros(block.n_rows, np.int64))
    n_slack = mode.name == "n-slack"
    states = {k: None for k in keys}
    result = PathResult(points=[], metric=METRICS[problem.task][0] if folds else None, warm=warm)
    higher = METRICS[problem.task][1]
    seen, since_best = set(), 0
    runner = _Runner(block, name, fold, jobs)
    try:
        for C in Cs:
            p = replace(problem, C=C)
            keep = warm and n_slack
            outs = runner.map([(k, p, mode, controls, where, states[k] if keep else None, keep)
                               for k in keys])
            _warn_once(outs, on_warning, seen)
            for k, (_, _, state) in zip(keys, outs):
                states[k] = state
            figures = [f for _, f, _ in outs]
            point = PathPoint(C=C, relative_gap=max(f["relative_gap"] for f in figures),
                              certified=all(f["certified"] for f in figures),
                              epochs=sum(f["epochs"] for f in figures),
                              seconds=sum(f["seconds"] for f in figures))
            if folds is None:
                point = replace(point, primal=figures[0]["primal"], dual=figures[0]["dual"])
            else:
                point = replace(point, cv=_cv_result(p, outs))
                better = (result.best is None or (point.cv.mean > result.best.cv.mean if higher
                                                  else point.cv.mean < result.best.cv.mean))
                if better:
                    result.best, since_best = point, 0
                elif point.cv.mean != result.points[0].cv.mean:
                    since_best += 1       # counted once the score has moved: a flat start (every
                    # prediction the majority class at tiny C's) is not a plateau to stop on
            result.points.append(point)
            if on_point is not None:
                on_point(point)
            if auto and since_best >= patience:
                break
    finally:
        runner.close()
    if model_file is not None:
        from svmtrain.data import MemorySource
        from svmtrain.pipeline import TrainingRun, run_training, write_model_file
        model, stats = run_training(TrainingRun(
            source=MemorySource([block], name=name), problem=replace(problem, C=result.best.C),
            mode=mode, controls=controls, where=where, on_warning=on_warning))
        if stats.interrupted:         # a model cut short is not the best C's: write nothing
            raise KeyboardInterrupt
        write_model_file(model, model_file, model_format)
        result.model = model
    return result
