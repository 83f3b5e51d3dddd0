"""The Dask options of train, predict and verify-bound (--workers, --scheduler); the logic is in
svmtrain.distributed, which imports Dask only when one of them is given."""

import contextlib
import sys
import time

import click

from svmtrain.cli.options import InputError

DASK_OPTIONS = ("workers", "scheduler")


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
    if mode is not None and mode != "n-slack":
        raise click.BadParameter(f"on Dask, train runs the n-slack mode (CoCoA+), not {mode}",
                                 param_hint=flag)
    if task is not None and task not in ("binary", "regression", "multiclass"):
        raise click.BadParameter(f"on Dask, n-slack training (CoCoA+) is for the binary, "
                                 f"regression and multiclass tasks, not {task}", param_hint=flag)
    for name in refuse:
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


def train_on_dask(s, train_file, model_file, task_name, C, epsilon, bias, seed, max_epochs, options,
                  shrinking, trace_file, model_format, zero_based, quiet):
    """train --workers / --scheduler: n-slack by CoCoA+; writes the model as train does."""
    from svmtrain import distributed, interrupt
    from svmtrain.model import Model, write_liblinear, write_model
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
    model = Model(task=task_name, mode="n-slack", C=C, bias=bias, n_features=result.geometry.n_cols,
                  index_base=0 if zero_based else 1, w=task.model_weights(result.w, result.geometry),
                  epsilon=epsilon, dual=result.dual, primal=result.primal,
                  relative_gap=result.relative_gap, examples=result.examples, seed=seed,
                  epochs=result.epochs, **task.model_fields())
    (write_liblinear if model_format == "liblinear" else write_model)(model, model_file)
    if result.interrupted:
        click.echo(f"svmtrain: interrupted: wrote {model_file} (relative gap "
                   f"{result.relative_gap:.3g})", err=True)
        sys.exit(interrupt.exit_status())
    if not result.converged:
        click.echo(f"svmtrain: warning: relative gap {result.relative_gap:.3g} is above epsilon "
                   f"{epsilon:g} after {result.rounds} CoCoA+ rounds (--max-epochs)", err=True)
    if not quiet:
        click.echo(f"svmtrain: {task_name} n-slack on Dask (CoCoA+, {result.partitions} partitions), "
                   f"{result.examples} {task.examples_are}, {result.geometry.n_cols} features: "
                   f"{result.rounds} rounds, {time.perf_counter() - started:.3g} s, primal "
                   f"{result.primal:.10g}, dual {result.dual:.10g}, relative gap "
                   f"{result.relative_gap:.3g}", err=True)
