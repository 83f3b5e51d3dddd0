"""The options and the command body of `svmtrain train --mode budgeted` (kept apart from train.py)."""

import sys
import time

import click
from click.core import ParameterSource

from svmtrain.cli.options import InputError, byte_progress, positive, show_progress

BUDGETED_TASKS = ("binary", "multiclass", "regression")
# option name -> flag, for "applies to --mode budgeted" errors
BUDGETED_OPTIONS = {"gamma": "-g", "budget": "--budget", "epochs": "--epochs", "optimizer": "--optimizer",
            "merge_precision": "--merge-precision", "merge_search": "--merge-search",
            "average": "--average", "validation": "--validation", "shrink": "--shrink",
            "step_tolerance": "--step-tolerance"}


def _precision(ctx, param, value):
    if value is not None and not (0 < value < 0.5):
        raise click.BadParameter(f"the merge precision must be in (0, 0.5), got {value}")
    return value


def _step_tolerance(ctx, param, value):
    if value is not None and not (0 <= value < float("inf")):
        raise click.BadParameter(f"the step tolerance must be a number >= 0, got {value}")
    return value


def budgeted_options(f):
    """The budgeted mode's options, one group (applied bottom-up, so listed in reverse)."""
    for option in reversed((
        click.option("-g", "--gamma", type=float, default=None, callback=positive("gamma"),
                     help="Budgeted: the RBF kernel's width, k(x, x') = exp(-gamma |x - x'|^2)  "
                          "[default: 1 / number of features, LIBSVM's default]"),
        click.option("--budget", type=click.IntRange(1, 10**7), default=None,
                     help="Budgeted: the most support vectors the model keeps (per class with "
                          "multiclass); beyond it two are merged  [default: 500]"),
        click.option("--epochs", type=click.IntRange(1, 10**6), default=None,
                     help="Budgeted: passes over the data (each a new random order from --seed); "
                          "the mode has no stopping rule (--max-epochs is for the other modes)  "
                          "[default: 5]"),
        click.option("--optimizer", type=click.Choice(("bsca", "sgd")), default=None,
                     help="Budgeted: bsca is dual coordinate ascent (Qaadan et al.), sgd is the "
                          "primal BSGD (Wang et al.; learning rate 1/(lambda t), lambda = 1/(C n)) "
                          "with the same merging  [default: bsca]"),
        click.option("--average/--no-average", default=None,
                     help="Budgeted, BSCA: the model (and its dual coefficients) is the mean of the "
                          "iterates over the last --budget steps of the last epoch (SDCA's "
                          "averaging output, Shalev-Shwartz & Zhang 2013): the last iterate's "
                          "decision values carry the noise of its last steps; --no-average returns "
                          "the last iterate (Qaadan et al.'s Alg. 2 as printed)  [default: average]"),
        click.option("--shrink/--no-shrink", default=None,
                     help="Budgeted, BSCA: from the second epoch on, skip an example whose a_i is at "
                          "a bound with a zero step by a margin of 1 or more (a_i = 0 and y f >= 2, "
                          "or a_i = C_i and y f <= 0) for its next 1, 2, 4, 8 epochs while it stays "
                          "so (LIBLINEAR-style shrinking; a departure from Qaadan et al.'s Alg. 2, "
                          "which visits every example: --no-shrink)  [default: shrink]"),
        click.option("--step-tolerance", type=float, default=None, callback=_step_tolerance,
                     help="Budgeted, BSCA: skip a coordinate step smaller than this in |a_i| (each "
                          "step on an example whose support vector was merged away adds one and "
                          "forces a merge; 0 takes every step, as Alg. 2)  [default: 0]"),
        click.option("--merge-search", type=click.Choice(("table", "golden")), default=None,
                     help="Budgeted: how a merge finds the merged point: table interpolates a "
                          "precomputed table of the best point and its weight degradation "
                          "(Glasmachers & Qaadan 2018), golden runs a golden-section search for "
                          "every candidate partner (Wang et al.)  [default: table]"),
        click.option("--merge-precision", type=float, default=None, callback=_precision,
                     help="Budgeted: with --merge-search golden, the search stops when h is known "
                          "to within this  [default: 0.01]"),
        click.option("--validation", type=click.Path(dir_okay=False), default=None,
                     help="Budgeted: a labelled data file whose accuracy (regression: mean squared "
                          "error) --trace reports after every epoch."),
    )):
        f = option(f)
    return f


def check_budgeted_options(mode, task, given, *, bias, loss, rescaling, model_format):
    """Before any data is read: the budgeted options only with the mode, the mode's limits."""
    if mode != "budgeted":
        for name, value in given.items():
            if value is not None:
                raise click.BadParameter("applies to --mode budgeted only", param_hint=BUDGETED_OPTIONS[name])
        return
    if task not in BUDGETED_TASKS:
        raise click.BadParameter(f"--mode budgeted trains the {', '.join(BUDGETED_TASKS)} tasks, "
                                 f"not {task}", param_hint="--task")
    if bias is not None:
        raise click.BadParameter("the budgeted mode's kernel SVM has no bias term (as the paper; "
                                 "the RBF feature space needs none)", param_hint="-B")
    for flag, value in (("--loss", loss), ("--rescaling", rescaling)):
        if value is not None:
            raise click.BadParameter("the budgeted mode's multiclass is one-vs-rest binary SVMs: "
                                     "no loss or rescaling to choose", param_hint=flag)
    if model_format != "svmtrain":
        raise click.BadParameter("LIBLINEAR model files hold linear models only", param_hint="--format")
    ctx = click.get_current_context()
    if ctx.get_parameter_source("max_epochs") == ParameterSource.COMMANDLINE:
        raise click.BadParameter("the budgeted mode runs a fixed number of passes: give --epochs",
                                 param_hint="--max-epochs")


def train_budgeted_command(train_file, model_file, task_name, C, epsilon, seed, options, trace_file,
                           zero_based, quiet, *, gamma, budget, epochs, optimizer, merge_precision,
                           merge_search, average, validation, shrink, step_tolerance):
    from svmtrain import data
    from svmtrain.model import Model, write_model
    from svmtrain.solvers import budgeted as solver
    from svmtrain.tasks import task_class

    budget = solver.DEFAULT_BUDGET if budget is None else budget
    epochs = solver.DEFAULT_EPOCHS if epochs is None else epochs
    optimizer = "bsgd" if optimizer == "sgd" else "bsca"
    if average is not None and optimizer == "bsgd":
        raise InputError("--average/--no-average: applies to --optimizer bsca only")
    average = True if average is None else average
    for flag, value in (("--shrink/--no-shrink", shrink), ("--step-tolerance", step_tolerance)):
        if value is not None and optimizer == "bsgd":
            raise InputError(f"{flag}: applies to --optimizer bsca only")
    shrink = solver.DEFAULT_SHRINK if shrink is None or shrink else None
    step_tolerance = solver.DEFAULT_STEP_TOL if step_tolerance is None else step_tolerance
    merge_precision = solver.DEFAULT_MERGE_PRECISION if merge_precision is None else merge_precision
    merge_search = "table" if merge_search is None else merge_search
    started = time.perf_counter()
    with byte_progress(train_file, quiet, "reading") as progress:
        block = data.load(train_file, zero_based=zero_based, progress=progress)
    data.check_training_rows(block, train_file, zero_based)   # |x|^2 = inf: every kernel nan
    task = task_class(task_name).from_training_data(block, train_file, options)
    held_out = None
    if validation is not None:
        held_out = data.load(validation, zero_based=zero_based)
        data.check_norms(held_out, validation)
        solver.targets(task, held_out, validation)   # its labels must be the model's
    if block.n_features == 0 and gamma is None:
        raise InputError(f"{train_file}: no features: give -g/--gamma")

    trace = open(trace_file, "w") if trace_file else None
    bar = None
    if show_progress(quiet):
        from tqdm import tqdm
        bar = tqdm(total=epochs, unit="epoch", desc="training", leave=False, file=sys.stderr)
    if trace:
        trace.write("# epoch seconds primal dual gap relative_gap merges support_vectors validation "
                    "kernel_values\n")

    def on_epoch(r):
        if trace:
            v = "-" if r.validation is None else repr(r.validation)
            trace.write(f"{r.epoch} {r.seconds:.6f} {r.primal!r} {r.dual!r} {r.primal - r.dual!r} "
                        f"{solver.relative_gap(r.primal, r.dual)!r} {r.merges} {r.support_vectors} {v} "
                        f"{r.kernel_values}\n")
            trace.flush()
        if bar is not None:
            bar.update(1)

    try:
        result = solver.train_budgeted(task, block, train_file, C=C, gamma=gamma, budget=budget,
                                       epochs=epochs, optimizer=optimizer,
                                       merge_precision=merge_precision, merge_search=merge_search,
                                       seed=seed, p=options["p"], average=average,
                                       shrink=shrink, step_tol=step_tolerance,
                                       validation=held_out,
                                       on_epoch=on_epoch if (trace or bar is not None) else None,
                                       # the objectives cost O(m^2) kernel evaluations: per epoch
                                       # for the trace only, not for a progress bar
                                       epoch_objectives=trace is not None)
    finally:
        if bar is not None:
            bar.close()
        if trace:
            trace.close()

    fields = task.model_fields()
    fields.pop("loss", None)
    fields.pop("rescaling", None)
    labels = fields.pop("labels", [])
    model = Model(task=task_name, mode="budgeted", C=C, bias=None, n_features=result.n_features,
                  index_base=0 if zero_based else 1, labels=labels, w=[], epsilon=epsilon,
                  dual=result.dual, primal=result.primal, relative_gap=result.relative_gap,
                  examples=result.examples, seed=seed, epochs=result.epochs, solver=optimizer,
                  kernel="rbf", gamma=result.gamma, budget=budget, merge_search=merge_search,
                  merge_precision=merge_precision,
                  averaged=budget if average and optimizer == "bsca" else None,
                  support_vectors=result.support_vectors, alphas=result.alphas, **fields)
    write_model(model, model_file)
    if not quiet:
        n_sv = sum(len(sv[0]) for sv in result.support_vectors)
        click.echo(f"svmtrain: {task_name} budgeted ({optimizer}), {result.examples} examples, "
                   f"{result.n_features} features, gamma {result.gamma:.6g}, budget {budget}: "
                   f"{result.epochs} epochs, {n_sv} support vectors, {result.merges} merges, "
                   f"{time.perf_counter() - started:.3g} s, primal {result.primal:.10g}, "
                   f"dual {result.dual:.10g}, relative gap {result.relative_gap:.3g}", err=True)
