"""`--task-module`: the commands' glue for user tasks (the work is in svmtrain.tasks.user)."""

import signal
import sys
import time

import click
from click.core import ParameterSource

from svmtrain import interrupt
from svmtrain.cli.options import InputError, user_errors

# train's parameters a user task takes (besides the common ones): the 1-slack and online-dual
# options; every other task, control, budgeted or Dask option is refused when given
_USER_OK = {"train_file", "model_file", "mode", "C", "epsilon", "seed", "max_epochs", "shrinking",
            "trace_file", "quiet", "task_module", "task_options", "latent_rounds",
            "cache_size", "qp_every", "inactive", "threads", "in_out", "sample_start",
            "merge_duplicates", "passes", "chunk", "keep_inactive", "cache_limit", "verify",
            "shuffle_window", "window_looks", "admit_margin", "checkpoint_every"}


def _given(ctx, name):
    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _flag(ctx, name):
    for p in ctx.command.params:
        if p.name == name:
            return p.opts[-1] if p.opts else name
    return name


def check_user_options(ctx, task_module, latent_rounds, mode):
    """Options first (DESIGN: before any data is read)."""
    if task_module is None:
        raise click.BadParameter("--task-option and --latent-rounds need --task-module",
                                 param_hint="--task-module")
    for p in ctx.command.params:
        if p.name not in _USER_OK and _given(ctx, p.name):
            raise click.BadParameter(f"does not apply to a --task-module task",
                                     param_hint=_flag(ctx, p.name))
    if mode == "budgeted":
        raise click.BadParameter("a --task-module task trains in the linear modes (n-slack, "
                                 "1-slack, online-dual)", param_hint="--mode")
    if latent_rounds and mode != "n-slack":
        raise click.BadParameter("latent rounds solve their convex problems in the n-slack mode",
                                 param_hint="--latent-rounds")
    if mode != "online-dual":
        for name in ("passes", "chunk", "keep_inactive", "cache_limit", "verify", "shuffle_window",
                     "window_looks", "admit_margin", "checkpoint_every"):
            if _given(ctx, name):
                raise click.BadParameter(f"applies to --mode online-dual, not {mode}",
                                         param_hint=_flag(ctx, name))


def train_user_command(ctx, train_file, model_file, task_module, task_options, latent_rounds,
                       mode, C, epsilon, seed, max_epochs, shrinking, trace_file, quiet, grouped):
    """train --task-module: check the options (the task-specific, control, budgeted and Dask ones
    are refused: check_user_options), load the task, train (svmtrain.tasks.user.train_user_task),
    write the model."""
    from svmtrain.cli.oneslack_options import ONESLACK_OPTIONS, oneslack_settings
    from svmtrain.model import write_model
    from svmtrain.tasks.user import TaskError, load_task, train_user_task

    check_user_options(ctx, task_module, latent_rounds, mode)
    oneslack = oneslack_settings(mode, {k: grouped[k] for k in ONESLACK_OPTIONS})
    threads = oneslack.pop("threads", 1)
    online = None
    if mode == "online-dual":
        if train_file == "-":
            raise click.BadParameter("a user task reads its file itself: give a file, not -",
                                     param_hint="TRAIN_FILE")
        limit = grouped["cache_limit"]
        online = {"passes": grouped["passes"], "chunk": grouped["chunk"],
                  "keep_rounds": grouped["keep_inactive"],
                  "cache_limit": limit[1] if limit and limit[0] == "constraints" else None,
                  "cache_limit_bytes": limit[1] if limit and limit[0] == "bytes" else None,
                  "shuffle_window": grouped["shuffle_window"],
                  "window_looks": grouped["window_looks"], "admit_margin": grouped["admit_margin"]}
    started = time.perf_counter()
    with user_errors():
        try:
            task = load_task(task_module, list(task_options))
        except TaskError as e:
            raise InputError(str(e)) from None
        trace = open(trace_file, "w") if trace_file else None
        if trace:
            trace.write("# epoch seconds dual primal gap relative_gap exact active visited\n")

        def on_epoch(r):
            if trace:
                trace.write(f"{r.epoch} {r.seconds:.6f} {r.dual!r} {r.primal!r} {r.gap!r} "
                            f"{r.relative_gap!r} {int(r.exact)} {r.active} {r.trace_columns()}\n")
                trace.flush()

        def on_round(r):
            # latent rounds: comment lines, so the numeric lines keep one format
            if trace:
                trace.write(f"# latent round {r.round} objective {r.objective!r} primal "
                            f"{r.primal!r} dual {r.dual!r} relative_gap {r.relative_gap!r} "
                            f"epochs {r.epochs} changed {r.changed} seconds {r.seconds:.6f}\n")
                trace.flush()
            if not quiet:
                click.echo(f"svmtrain: latent round {r.round}: objective {r.objective:.10g}, "
                           f"{r.changed} latent parts changed, convex primal {r.primal:.10g}, "
                           f"relative gap {r.relative_gap:.3g}", err=True)

        def on_chunk(r):
            if trace:
                trace.write(f"# pass {r.pass_} examples {r.examples} cache {r.cache} lower "
                            f"{r.lower!r} upper {r.upper!r} seconds {r.seconds:.6f}\n")
                trace.flush()

        try:
            with interrupt.watch():
                trained = train_user_task(task, train_file, mode=mode, C=C, epsilon=epsilon,
                                          seed=seed, max_epochs=max_epochs, shrinking=shrinking,
                                          threads=threads, latent_rounds=latent_rounds,
                                          on_epoch=on_epoch, on_round=on_round, on_chunk=on_chunk,
                                          online=online, solver_options=oneslack or None)
        except TaskError as e:
            raise InputError(str(e)) from None
        finally:
            if trace:
                trace.close()
        model = trained.model
        write_model(model, model_file)
    result = trained.result
    if interrupt.requested():
        click.echo(f"svmtrain: interrupted ({signal.Signals(interrupt.signal_received()).name}): "
                   f"wrote {model_file} (relative gap {model.relative_gap:.3g})", err=True)
        sys.exit(interrupt.exit_status())
    if model.relative_gap > epsilon:
        click.echo(f"svmtrain: warning: relative gap {model.relative_gap:.3g} is above epsilon "
                   f"{epsilon:g}", err=True)
    if not quiet:
        latent = (f"{len(trained.rounds)} latent rounds ({trained.stopped}), "
                  if trained.rounds else "")
        click.echo(f"svmtrain: {task.name} (user task) {mode}, {model.examples} examples, "
                   f"{model.n_features} weights: {model.epochs} epochs, {latent}"
                   f"{time.perf_counter() - started:.3g} s, primal {model.primal:.10g}, "
                   f"dual {model.dual:.10g}, relative gap {model.relative_gap:.3g}", err=True)
    return result


def model_task(model, model_file, task_module, task_options):
    """predict / verify-bound: the user task's adapter (None for a built-in model), refusing a
    user model without --task-module or with another task (exit 2)."""
    from svmtrain.tasks.user import TaskError, model_adapter
    if task_options and task_module is None:
        raise InputError("--task-option needs --task-module")
    try:
        return model_adapter(model, model_file, task_module, list(task_options or ()))
    except TaskError as e:
        raise InputError(str(e)) from None


task_module_option = click.option(
    "--task-module", "task_module", default=None, metavar="SPEC",
    help="The code of a user-task model (PATH.py:Class or package.module:Class): needed for "
         "such a model, refused for any other; the model must record the same task name and "
         "version.")
task_option_option = click.option(
    "--task-option", "task_options", multiple=True, metavar="KEY=VALUE",
    help="An option for --task-module's class, as in training (repeatable).")
