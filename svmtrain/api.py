"""svmtrain as a library: `train`, `predict` and `verify_bound`, the functions every front end calls.

    import svmtrain
    model = svmtrain.train("data/heart_scale", svmtrain.Problem(task="binary", C=1.0))
    model.certificate            # Certificate(primal, dual, relative_gap, examples)
    model.save("heart.model")
    svmtrain.verify_bound(model, "data/heart_scale").certified
    svmtrain.cross_validate("data/heart_scale", svmtrain.Problem(C=1.0), folds=5).mean
    svmtrain.c_path("data/heart_scale", folds=5).best.C      # LIBLINEAR -C's search

Data is a path (plain, .gz/.bz2/.xz, or "-" for standard input), in-memory arrays `(X, y)` or
`(X, y, qid)` (X a scipy sparse matrix or a 2-d numpy array, columns 0-based), or an iterable of
`(X, y[, qid])` chunks (or `data.Block`s) for the streaming mode, `OnlineDual`. Options are the
frozen records of `svmtrain.options`. On arrays, training gives the model the command line gives
on the file the arrays were read from, bit for bit.
"""

from __future__ import annotations

import functools
import math
import os
from typing import TYPE_CHECKING, Optional

import numpy as np

from svmtrain import BLAS_THREAD_VARIABLES
from svmtrain.errors import InputError, OptionError
from svmtrain.records import record

if TYPE_CHECKING:
    from svmtrain.options import Controls, Problem

# The option records are imported where a function takes them: `predict` reads a model and a
# data file and needs none of them (creating their eight frozen dataclasses is 5 ms of start-up).
_OPTION_RECORDS = ("Problem", "NSlack", "OneSlack", "OnlineDual", "Budgeted", "Controls", "Local",
                   "Dask")

__all__ = ["train", "predict", "verify_bound", "cross_validate", "c_path", "Certificate", "Predictions", "Verification",
           "as_source", "Problem", "NSlack", "OneSlack", "OnlineDual", "Budgeted", "Controls",
           "Local", "Dask"]


def __getattr__(name):
    """svmtrain.api.Problem and the other option records, as `__all__` promises, on first use."""
    if name in _OPTION_RECORDS:
        from svmtrain import options
        return getattr(options, name)
    raise AttributeError(f"module 'svmtrain.api' has no attribute {name!r}")


def _on_dask(where):
    """Whether `where` is Dask(...) (None and Local() run here); anything else is an OptionError."""
    if where is None:
        return False
    from svmtrain.options import Dask, Local
    if not isinstance(where, (Local, Dask)):
        raise OptionError(f"where must be Local() or Dask(...), got {type(where).__name__}")
    return isinstance(where, Dask)


def _one_blas_thread(function):
    """numpy's BLAS on one thread while `function` runs, as the command line has it, unless the
    user set a count (BLAS_THREAD_VARIABLES): numpy's dot products (||w||^2 in a certificate, the
    1-slack QP) round differently on 2 threads (the last bits of ||w||^2 over 100,000 weights),
    and a model must be the same bit for bit from Python as from the command line, on any
    machine. Python cannot set the variables after numpy is imported: threadpoolctl limits the
    loaded BLAS itself."""
    @functools.wraps(function)
    def on_one_thread(*args, **kwargs):
        if any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
            return function(*args, **kwargs)
        from threadpoolctl import threadpool_limits
        with threadpool_limits(limits=1, user_api="blas"):
            return function(*args, **kwargs)
    return on_one_thread


@record(frozen=True)
class Certificate:
    """D <= OPT <= P: the dual (a lower bound on the optimum), the primal P(w) of the model (an
    upper bound), their relative gap (P - D) / P, and the examples the bounds are over."""

    primal: float
    dual: float
    relative_gap: float
    examples: int

    @property
    def gap(self):
        return self.primal - self.dual


@record(frozen=True)
class Verification(Certificate):
    """verify_bound's answer: the primal recomputed by one pass over the data, the model's dual,
    and whether the gap is within `tolerance` (never when the primal is below the dual: then the
    data is not the model's training data)."""

    tolerance: float = 0.0
    certified: bool = False
    consistent: bool = True
    warnings: tuple = ()


@record
class Predictions:
    """predict's answer: the predicted labels (or targets), the decision values (None when they
    were written to a file instead), and the task's metrics (`metrics`, and `line` in LIBLINEAR's
    words: "Accuracy = 84.9702% (13834/16281)")."""

    labels: Optional[np.ndarray]
    values: Optional[np.ndarray]
    metrics: dict
    line: str


def as_source(data, *, zero_based=False):
    """A path, or a data.MemorySource standing for arrays or chunks (see the module notes)."""
    import os
    from svmtrain import data as data_layer
    if isinstance(data, (str, os.PathLike)):
        return data if data == "-" else os.fspath(data)
    if isinstance(data, data_layer.Block):
        return data_layer.MemorySource([data])
    if isinstance(data, tuple) and len(data) in (2, 3) and _matrix_like(data[0]):
        return data_layer.MemorySource([data_layer.block_from_arrays(*data)])
    if hasattr(data, "__iter__"):
        once = iter(data) is data                     # an iterator: read once, like stdin
        return data_layer.MemorySource(_chunks(data) if once else list(_chunks(data)), once=once)
    raise TypeError(f"data must be a path, (X, y), (X, y, qid) or an iterable of chunks, got "
                    f"{type(data).__name__}")


def _matrix_like(x):
    return hasattr(x, "shape") and len(getattr(x, "shape", ())) == 2


def _chunks(items):
    from svmtrain import data as data_layer
    row = 1
    for item in items:
        block = item if isinstance(item, data_layer.Block) else data_layer.block_from_arrays(
            *item, first_row=row)
        row += block.n_rows
        yield block


@_one_blas_thread
def train(data, problem: Optional[Problem] = None, mode=None, controls: Optional[Controls] = None,
          where=None, *, model_file=None, model_format="svmtrain", trace=None, on_epoch=None,
          progress=False, on_warning=None, mode_reason=None):
    """Train a model: `svmtrain train` as a function.

    problem: a Problem (task, C, epsilon, bias, ...; default Problem()); its task may be your
    own StructuredTask, and the data then a path its read_examples reads or a list of (x, y). mode: NSlack(),
    OneSlack(), OnlineDual(), Budgeted(), a mode name, or "auto" / None (the default): the mode
    of the controls' warm_start state, else the fastest for the task and the data's size
    (svmtrain.auto; model.stats.chosen_because says why). controls: Controls() for costs, weights, regularization and dual
    states. where: Local(threads=...) or Dask(workers=..., scheduler=..., client=...).
    model_file: also write the model there (atomically; online-dual's checkpoints and an
    interrupted run's state go beside it), in model_format "svmtrain" or "liblinear". trace: a
    path for one line per epoch. on_epoch(record) is called as training goes; on_warning(text)
    with each warning (they are also kept in model.stats.warnings). progress: tqdm bars on stderr.
    mode_reason: why `mode` was chosen, for a front end that resolved "auto" itself
    (svmtrain.pipeline.resolve_mode).

    Returns the Model, its certificate in `model.certificate`, the run's figures in `model.stats`.
    Raises OptionError, DataError, ModelError or InputError on bad input.
    """
    from svmtrain.options import Controls, Local, Problem
    from svmtrain.pipeline import TrainingRun, resolve_mode, run_training
    problem = Problem() if problem is None else problem
    controls = Controls() if controls is None else controls
    if not isinstance(problem, Problem):
        raise OptionError(f"problem must be a Problem, got {type(problem).__name__}")
    if not isinstance(controls, Controls):
        raise OptionError(f"controls must be Controls, got {type(controls).__name__}")
    _on_dask(where)                  # (refuses a where that is neither Local() nor Dask(...))
    where = Local() if where is None else where
    if problem.user_task and not isinstance(data, (str, os.PathLike)):
        from svmtrain.data import MemorySource       # the task's own (x, y) examples
        source = MemorySource([], name="<examples>")
        source.examples = list(data)
    else:
        source = as_source(data, zero_based=problem.zero_based)
    mode, _, reason = resolve_mode(mode, controls, problem.task, source, where)
    reason = reason or mode_reason
    model, _ = run_training(TrainingRun(source=source, problem=problem, mode=mode,
                                        chosen_because=reason,
                                        controls=controls, where=where, model_file=model_file,
                                        model_format=model_format, trace_file=trace,
                                        show_progress=progress, on_epoch=on_epoch,
                                        on_warning=on_warning))
    return model


def _user_adapter(model, name, task):
    """The user task's adapter for a model (None for a built-in one); a user model without its
    task, or with another, is an InputError."""
    from svmtrain.tasks.user import TaskError, model_adapter
    try:
        return model_adapter(model, name, task=task)
    except TaskError as e:
        raise InputError(str(e)) from None


def scorer(model, task=None, name="<model>"):
    """(task, a function (block, name) -> (labels, decision values)) for a trained or loaded
    model, `name` the data's as errors name it; `task`: the StructuredTask of a user-task model."""
    from svmtrain.tasks import task_class
    from svmtrain.tasks.base import Geometry
    user = _user_adapter(model, name, task) if model.task == "user" or task is not None else None
    if user is not None:
        w = user.solver_weights(model.w)
        geometry = Geometry(model.n_features, None)
        return user, lambda block, name="<examples>": user.predict(w, block, geometry, name)
    task = task_class(model.task).from_model(model)
    if model.mode == "budgeted":
        # kernel models: decision values are the expansions sum_j beta_j k(x, x~_j)
        from svmtrain.solvers.budgeted import expansions, predict_values
        exps = expansions(model)
        return task, lambda block, name="<arrays>": predict_values(task, exps, block)
    geometry = Geometry(model.n_features, model.bias)
    w = task.solver_weights(model.w)
    return task, lambda block, name="<arrays>": task.predict(w, block, geometry, name)


def _model(model):
    from svmtrain.model import Model, read_model
    if isinstance(model, Model):
        return model
    return read_model(model)


@_one_blas_thread
def predict(model, data, *, output=None, scores=False, where=None, progress=False, task=None):
    """Predict `data` with `model` (a Model or a model file, ours or LIBLINEAR's).

    Returns Predictions: labels and decision values as arrays, and the task's metric. With
    `output` (a path, "-" for standard output) the predictions are written there line by line
    (decision values when `scores`), atomically, and not kept in memory. `task`: the
    StructuredTask of a model of your own task (its file never names code to import).
    """
    import sys
    from svmtrain import data as data_layer
    from svmtrain.atomic import atomic_output
    from svmtrain.progress import byte_bar
    name = model if isinstance(model, str) else "<model>"
    model = _model(model)
    dask = _on_dask(where)
    source = as_source(data)
    task, predict_block = scorer(model, task, name)
    user = getattr(task, "iter_blocks", None)      # a user task reads its own file
    zero_based = model.index_base == 0
    metric = task.new_metric()
    if dask:
        where.check()
        if model.mode == "budgeted" or user is not None:
            raise InputError("predict on Dask is for the built-in linear models: leave out "
                             "--workers")
        if hasattr(source, "iter_blocks"):
            raise OptionError("on Dask the workers read the data: give a file, not arrays",
                              where.flag)
        from svmtrain import distributed
        from svmtrain.tasks.base import Geometry
        try:
            distributed.check_available(where.flag, bool(where.workers))
        except distributed.DaskMissing as e:
            raise InputError(str(e)) from None
        on_workers = task.solver_weights(model.w), Geometry(model.n_features, model.bias)
    # the scorer holds w in the solvers' layout (a sequence model's is a copy): a model read here
    # is let go before the data are read (UD English EWT: 73.5 -> 62.7 MB)
    del model
    labels_out, values_out = [], []
    show = progress and output not in (None, "-")

    def run(out):
        if dask:
            from svmtrain import distributed
            path = source        # distributed.worker_path makes it absolute for the workers
            with distributed.session(where.workers, where.scheduler, client=where.client) as s:
                distributed.predict(s, task, *on_workers, path, zero_based, scores, out, metric)
            return
        with byte_bar(source, show, "predicting") as bar:
            # blocks of STREAM_BLOCK input bytes: predictions need no more (the model is the peak)
            blocks = (user(source) if user is not None else
                      data_layer.stream(source, zero_based=zero_based, progress=bar))
            for block in data_layer.whole_examples(blocks, task.grouping, source):
                labels, values = predict_block(block, source)
                metric.add(labels, block)
                if out is not None:
                    out.write(task.format_lines(values if scores else labels, scores))
                else:
                    labels_out.append(np.asarray(labels))
                    values_out.append(np.asarray(values))

    if output is not None:
        if output == "-":
            run(sys.stdout)
            sys.stdout.flush()
        else:
            with atomic_output(output, "w", durable=False) as out:
                run(out)
        labels = values = None
    else:
        if dask:
            raise OptionError("predict on Dask writes its predictions to a file: give output",
                              where.flag)
        run(None)
        labels = np.concatenate(labels_out) if labels_out else np.zeros(0)
        values = np.concatenate(values_out) if values_out else np.zeros(0)
    return Predictions(labels, values, metric.summary(), metric.line())


@_one_blas_thread
def verify_bound(model, data, *, tol=None, example_weights=None, where=None, progress=False,
                 task=None):
    """Certify `model` on its training data: the true primal P(w) by one streaming pass, against
    the dual D the model records. Returns a Verification (certified when (P-D)/P <= tol, by
    default the model's epsilon). example_weights: the weights file of a model trained with
    Controls(example_weights=...), when not the file the model names. `task`: the StructuredTask
    of a model of your own task: P(w) from its own oracle over its own reading of the data."""
    from svmtrain import data as data_layer, objective
    from svmtrain.controls import ControlError, certified_objective
    from svmtrain.objective import relative_gap
    from svmtrain.progress import byte_bar
    from svmtrain.tasks import task_class
    name = model if isinstance(model, str) else "<model>"
    model = _model(model)
    dask = _on_dask(where)
    if tol is not None and not (isinstance(tol, (int, float)) and tol >= 0 and math.isfinite(tol)):
        raise OptionError(f"must be a non-negative number, got {tol}", "--tol")
    if model.dual is None or model.C is None:
        raise InputError(f"{name}: a {model.format} model records no dual value or C; "
                         "verify-bound needs a model written by svmtrain")
    tol = model.epsilon if tol is None else tol
    source = as_source(data)
    user = _user_adapter(model, name, task) if model.task == "user" or task is not None else None
    if user is not None and (dask or example_weights is not None):
        raise InputError("verify-bound of a user task runs here, without --workers or --weights")
    task = user if user is not None else task_class(model.task).from_model(model)
    dual_acc = prepare = None
    if user is not None:          # P(w) from the task's own oracle, over its own reading
        from svmtrain.tasks.base import Geometry
        acc = objective.PrimalAccumulator(user, user.solver_weights(model.w),
                                          Geometry(model.n_features, None), model.C, source)
    elif model.mode == "budgeted":   # P(w~) of the kernel expansion, D(a) from the stored a (exact kernel)
        from svmtrain.solvers.budgeted import KernelDual, KernelPrimal, expansions
        acc = KernelPrimal(task, expansions(model), model.C, model.p or 0.0, source)
        dual_acc = KernelDual(task, model, source)
    else:
        # the objective the model was trained to (its controls: weights, scales, prior, nonneg)
        try:
            task, w, geometry, prepare = certified_objective(model, task, source, example_weights)
        except ControlError as e:
            raise InputError(f"{name}: {e}") from None
        acc = objective.PrimalAccumulator(task, w, geometry, model.C, source)
    # what is left to read of the model: its weights are in acc (for a sequence model, a copy in
    # the solvers' layout), so a model read here is let go before the data are
    zero_based, recorded_dual, recorded_examples = model.index_base == 0, model.dual, model.examples
    del model
    if dask:
        where.check()
        if dual_acc is not None or prepare is not None:
            raise InputError(f"{name}: verify-bound on Dask is for linear models trained without "
                             "controls (weights, scales, prior, nonneg) so far: leave out --workers")
        from svmtrain import distributed
        try:
            distributed.check_available(where.flag, bool(where.workers))
        except distributed.DaskMissing as e:
            raise InputError(str(e)) from None
        with distributed.session(where.workers, where.scheduler, client=where.client) as s:
            distributed.accumulate_primal(s, acc, zero_based)
    else:
        with byte_bar(source, progress, "verifying") as bar:
            blocks = (user.iter_blocks(source) if user is not None else
                      data_layer.stream(source, zero_based=zero_based, progress=bar))
            if prepare is not None:
                blocks = (prepare(b, task.grouping) for b in blocks)
            for block in data_layer.whole_examples(blocks, task.grouping, source):
                acc.add(block)
                if dual_acc is not None:
                    dual_acc.add(block)
        if prepare is not None:
            prepare.finish()
    P = acc.value()
    D = recorded_dual
    warnings = []
    if dual_acc is not None:
        D, problem = dual_acc.value()
        if problem is not None:
            raise InputError(f"{source}: {problem}")
        if D != recorded_dual:
            warnings.append(f"D recomputed from the model's coefficients is {D!r}, the model "
                            f"records {recorded_dual!r}")
    gap = P.primal - D
    # P below D is impossible for the data the dual belongs to (weak duality): the file is not the
    # model's training data, or the model was edited. Never certify that; show the signed figure.
    consistent = gap >= -1e-12 * max(abs(P.primal), abs(D), 1.0)
    rel = relative_gap(P.primal, D) if consistent else gap / max(abs(P.primal), abs(D))
    if recorded_examples is not None and P.examples != recorded_examples:
        warnings.append(f"{source} has {P.examples} examples, the model was trained on "
                        f"{recorded_examples}: the dual bound is for the training data")
    return Verification(primal=P.primal, dual=D, relative_gap=rel, examples=P.examples,
                        tolerance=tol, certified=consistent and rel <= tol, consistent=consistent,
                        warnings=tuple(warnings))


@_one_blas_thread
def cross_validate(data, problem: Optional[Problem] = None, mode=None,
                   controls: Optional[Controls] = None, *, folds=5, seed=1, jobs=1, where=None,
                   on_warning=None):
    """K-fold cross-validation (`svmtrain cv -v K`): a CVResult with the task's metric per fold,
    its mean and standard deviation. Folds are stratified by label for classification and never
    split a qid (ranking, constraints) or a sentence (sequence); `seed` shuffles them; `jobs`
    processes train folds at once, with the same result for any number. See svmtrain.cv."""
    from svmtrain import cv
    return cv.cross_validate(data, problem, mode, controls, folds=folds, seed=seed, jobs=jobs,
                             where=where, on_warning=on_warning)


@_one_blas_thread
def c_path(data, problem: Optional[Problem] = None, mode=None, controls: Optional[Controls] = None,
           *, Cs=None, folds=None, seed=1, jobs=1, where=None, start=None, C_max=1024.0,
           patience=5, warm=True, model_file=None, model_format="svmtrain", on_point=None, on_warning=None):
    """A path over C (`svmtrain cv --C-path`): each n-slack point hot-started from the previous
    C's dual state and trained to problem.epsilon, scored by K-fold cross-validation with
    `folds`. Cs: ascending C's, or None for LIBLINEAR -C's automatic start and doubling (needs
    folds). Returns a PathResult (points, best, and the best C's model when model_file is given).
    See svmtrain.cv."""
    from svmtrain import cv
    return cv.c_path(data, problem, mode, controls, Cs=Cs, folds=folds, seed=seed, jobs=jobs,
                     where=where, start=start, C_max=C_max, patience=patience, warm=warm, model_file=model_file,
                     model_format=model_format, on_point=on_point, on_warning=on_warning)
