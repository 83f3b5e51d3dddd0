"""The Dask options of train, predict and verify-bound (--workers, --scheduler); the logic is in
svmtrain.distributed, which imports Dask only when one of them is given."""

import contextlib
import sys
import time

import click
import numpy as np

from svmtrain.cli.options import InputError

DASK_OPTIONS = ("workers", "scheduler")
#: 1-slack on Dask: the tasks whose examples are whole inside byte ranges (a ranking file's queries
#: must each be one run of lines: checked when the data is read)
ONESLACK_TASKS = ("binary", "multiclass", "regression", "sequence", "ranking")
_CONTROL_FLAGS = {"class_weight_pairs": "-w", "prior_model": "--prior"}


def control_flag(name):
    """The flag of a training-control parameter (for the refusals on Dask)."""
    return _CONTROL_FLAGS.get(name, "--" + name.removesuffix("_file").replace("_", "-"))


def dask_options(f):
    f = click.option("--scheduler", metavar="ADDRESS", envvar="DASK_SCHEDULER_ADDRESS", default=None,
                     help="Run on the Dask cluster of this scheduler (e.g. tcp://node1:8786; "
                          "environment: DASK_SCHEDULER_ADDRESS). Needs svmtrain[dask].")(f)
    f = click.option("--workers", type=click.IntRange(1), default=None,
                     help="Run on a local Dask cluster of this many one-thread worker processes "
                          "(default: in this process, without Dask). Needs svmtrain[dask].")(f)
    return f


def check_dask_options(workers, scheduler, *, mode=None, task=None, refuse=()):
    """Validate before any data is read; exit status 2 with a hint when Dask is missing."""
    from svmtrain import distributed
    if not workers and not scheduler:
        return
    flag = "--workers" if workers else "--scheduler"
    if workers and scheduler:
        raise click.BadParameter("give --workers (a local cluster) or --scheduler (an existing "
                                 "one), not both", param_hint="--workers")
    if mode is not None and mode not in ("n-slack", "1-slack"):
        raise click.BadParameter(f"on Dask, train runs the n-slack mode (CoCoA+) and the 1-slack "
                                 f"mode, not {mode}", param_hint=flag)
    if mode == "1-slack" and task is not None and task not in ONESLACK_TASKS:
        raise click.BadParameter(f"on Dask, 1-slack training is for the {', '.join(ONESLACK_TASKS)} "
                                 f"tasks (whose examples can be cut into byte ranges), not {task}",
                                 param_hint=flag)
    if mode != "1-slack" and task is not None and task not in ("binary", "regression", "multiclass"):
        raise click.BadParameter(f"on Dask, n-slack training (CoCoA+) is for the binary, "
                                 f"regression and multiclass tasks, not {task}", param_hint=flag)
    for name in refuse:
        if name == "--threads":
            raise click.BadParameter("on Dask the per-example loop runs on the workers, one thread "
                                     "each: leave out --threads (give more workers)",
                                     param_hint="--threads")
        raise click.BadParameter(f"{name} does not run on Dask yet: leave out {flag}", param_hint=flag)
    try:
        distributed.check_available(flag)
    except distributed.DaskMissing as e:
        raise InputError(str(e)) from None


@contextlib.contextmanager
def dask_session(workers, scheduler):
    """svmtrain.distributed.session with its errors in the CLI's terms: input problems exit 2, a
    cluster that fails the run exits 1 with one line."""
    from svmtrain import distributed
    try:
        with distributed.session(workers, scheduler) as s:
            yield s
    except distributed.NotListable as e:
        raise InputError(str(e)) from None
    except distributed.ClusterError as e:
        raise click.ClickException(str(e)) from None


def _write_model(model_file, model_format, task, task_name, mode, result, *, C, bias, epsilon, seed,
                 zero_based):
    """The linear model a Dask run trained, in the chosen format (as train writes it)."""
    from svmtrain.model import Model, write_liblinear, write_model
    model = Model(task=task_name, mode=mode, C=C, bias=bias, n_features=result.geometry.n_cols,
                  index_base=0 if zero_based else 1, w=task.model_weights(result.w, result.geometry),
                  epsilon=epsilon, dual=result.dual, primal=result.primal,
                  relative_gap=result.relative_gap, examples=result.examples, seed=seed,
                  epochs=result.epochs, **task.model_fields())
    (write_liblinear if model_format == "liblinear" else write_model)(model, model_file)


def train_on_dask(s, train_file, model_file, task_name, C, epsilon, bias, seed, max_epochs, options,
                  shrinking, trace_file, model_format, zero_based, quiet):
    """train --workers / --scheduler: n-slack by CoCoA+; writes the model as train does."""
    from svmtrain import distributed, interrupt
    from svmtrain.tasks import task_class

    if model_format == "liblinear" and (zero_based or task_name != "binary"):
        raise InputError("--format liblinear is for one-based binary models; use --format svmtrain")
    started = time.perf_counter()
    trace = open(trace_file, "w") if trace_file else None
    if trace:
        trace.write("# round seconds dual primal gap relative_gap exact active\n")

    def on_epoch(r):
        if trace:
            trace.write(f"{r.epoch} {r.seconds:.6f} {r.dual!r} {r.primal!r} {r.gap!r} "
                        f"{r.relative_gap!r} {int(r.exact)} {r.active}\n")
            trace.flush()

    try:
        with interrupt.watch():
            task, result = distributed.train_cocoa(
                s, task_class(task_name), train_file, zero_based=zero_based, options=options, C=C,
                bias=bias, epsilon=epsilon, max_epochs=max_epochs, seed=seed, shrinking=shrinking,
                on_epoch=on_epoch)
    finally:
        if trace:
            trace.close()
    _write_model(model_file, model_format, task, task_name, "n-slack", result, C=C, bias=bias,
                 epsilon=epsilon, seed=seed, zero_based=zero_based)
    if result.interrupted:
        click.echo(f"svmtrain: interrupted: wrote {model_file} (relative gap "
                   f"{result.relative_gap:.3g})", err=True)
        sys.exit(interrupt.exit_status())
    if not result.converged:
        click.echo(f"svmtrain: warning: {result.note}", err=True)
    if not quiet:
        click.echo(f"svmtrain: {task_name} n-slack on Dask (CoCoA+, {result.partitions} partitions), "
                   f"{result.examples} {task.examples_are}, {result.geometry.n_cols} features: "
                   f"{result.rounds} rounds, {time.perf_counter() - started:.3g} s, primal "
                   f"{result.primal:.10g}, dual {result.dual:.10g}, relative gap "
                   f"{result.relative_gap:.3g}", err=True)


def train_oneslack_on_dask(s, train_file, model_file, task_name, C, epsilon, bias, seed, max_epochs,
                           options, trace_file, model_format, zero_based, quiet, solver_options):
    """train --mode 1-slack --workers / --scheduler: the planes on this process, the per-example
    work on the workers. --save-state / --warm-start as without Dask; an interrupt, or a cluster
    that fails the run, leaves MODEL_FILE.state.npz (no model) to resume from with --warm-start."""
    from svmtrain import distributed, interrupt
    from svmtrain.cli.oneslack_options import TRACE_HEADERS
    from svmtrain.solvers.oneslack import read_state, save_state
    from svmtrain.tasks import task_class

    if model_format == "liblinear" and (zero_based or task_name != "binary"):
        raise InputError("--format liblinear is for one-based binary models; use --format svmtrain")
    state_files = solver_options.pop("state_files")
    solver_options.pop("threads")
    solver_options.pop("merge_duplicates")      # the workers keep their rows as read

    def start_state(task, n_w):
        path = state_files["warm_start_file"]
        try:
            return read_state(path, task_name, n_w, C) if path else None
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: {e}") from None

    started = time.perf_counter()
    trace = open(trace_file, "w") if trace_file else None
    if trace:
        trace.write(TRACE_HEADERS["1-slack"] + "\n")

    def on_epoch(r):
        if trace:
            trace.write(f"{r.epoch} {r.seconds:.6f} {r.dual!r} {r.primal!r} {r.gap!r} "
                        f"{r.relative_gap!r} {int(r.exact)} {r.active} {r.trace_columns()}\n")
            trace.flush()

    left = f"{model_file}.state.npz"
    try:
        with interrupt.watch():
            task, result, K = distributed.train_oneslack(
                s, task_class(task_name), train_file, zero_based=zero_based, options=options, C=C,
                bias=bias, start_state=start_state, epsilon=epsilon, max_epochs=max_epochs,
                seed=seed, on_epoch=on_epoch, **solver_options)
    except Exception as e:
        planes = getattr(e, "planes", None)
        if not (distributed.cluster_failure(e) and planes is not None and len(planes[2])):
            raise
        # the working set lives here, not on the lost workers: keep it to resume from
        save_state(left, _Planes(planes, e.n_w), task=task_name, C=C)
        raise distributed.ClusterError(
            f"the Dask cluster lost the workers of this run ({type(e).__name__}: {e}); no model "
            f"was written; the working set of {len(planes[2])} planes is in {left}: "
            f"--warm-start {model_file} resumes from it") from None
    finally:
        if trace:
            trace.close()
    _write_model(model_file, model_format, task, task_name, "1-slack", result, C=C, bias=bias,
                 epsilon=epsilon, seed=seed, zero_based=zero_based)
    state = state_files["save_state_file"] or (left if result.interrupted else None)
    if state:
        save_state(state, result, task=task_name, C=C)
    if result.interrupted:
        click.echo(f"svmtrain: interrupted: wrote {model_file} and {state} (relative gap "
                   f"{result.relative_gap:.3g})", err=True)
        sys.exit(interrupt.exit_status())
    if not result.converged:
        click.echo(f"svmtrain: warning: relative gap {result.relative_gap:.3g} is above epsilon "
                   f"{epsilon:g} after {result.rounds} iterations (--max-epochs)", err=True)
    if not quiet:
        click.echo(f"svmtrain: {task_name} 1-slack on Dask ({K} partitions), {result.examples} "
                   f"{task.examples_are}, {result.geometry.n_cols} features: {result.schedule()}"
                   f"{time.perf_counter() - started:.3g} s, primal {result.primal:.10g}, dual "
                   f"{result.dual:.10g}, relative gap {result.relative_gap:.3g}", err=True)


class _Planes:
    """A working set where save_state expects a result (its .planes and .w's length)."""

    def __init__(self, planes, n_w):
        self.planes = planes
        self.w = np.zeros(n_w)
