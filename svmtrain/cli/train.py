"""svmtrain train: learn a model from a data file and record its certificate."""

import math
import os
import signal
import sys
import time

import click

from svmtrain import interrupt
from svmtrain.cli.budgeted import (BUDGETED_OPTIONS, budgeted_options, check_budgeted_options,
                                   train_budgeted_command)
from svmtrain.cli.dask import (DASK_OPTIONS, check_dask_options, control_flag, dask_options,
                               dask_session, train_on_dask, train_oneslack_on_dask)
from svmtrain.cli.controls import (STATE_OPTIONS, ControlledRun, check_control_options,
                                   control_options, read_controls)
from svmtrain.cli.oneslack_options import (ONESLACK_OPTIONS, TRACE_HEADERS, oneslack_options,
                                           oneslack_settings)
from svmtrain.cli.online import ONLINE_OPTIONS, check_online_options, online_options, train_online
from svmtrain.cli.options import (InputError, byte_progress, data_path, positive, quiet_option,
                                  show_progress, user_errors, zero_based_option)
from svmtrain.solvers import LINEAR_MODES

TASKS = ("binary", "multiclass", "regression", "ranking", "sequence", "constraints")
MODES = ("n-slack", "1-slack", "online-dual", "budgeted")
DEFAULT_EPSILON = 1e-3


def _epsilon(ctx, param, value):
    if not (0 < value < 1):
        raise click.BadParameter(f"the relative duality gap tolerance must be in (0, 1), got {value}")
    return value


def _nonnegative(name):
    def check(ctx, param, value):
        if value is not None and not (value >= 0 and math.isfinite(value)):
            raise click.BadParameter(f"{name} must be a non-negative number, got {value}")
        return value
    return check


# which task each task-specific option belongs to: given for another task, it is an error, not
# something silently ignored
_TASK_OPTIONS = {"p": ("-p", ("regression",)), "loss": ("--loss", ("multiclass", "sequence")),
                 "rescaling": ("--rescaling", ("multiclass", "sequence"))}


def _check_task_options(task, *, bias, **given):
    for name, value in given.items():
        flag, tasks = _TASK_OPTIONS[name]
        if value is not None and task not in tasks:
            raise click.BadParameter(f"applies to the {' and '.join(tasks)} task"
                                     f"{'s' if len(tasks) > 1 else ''}, not to {task}", param_hint=flag)
    if task == "multiclass" and given["loss"] == "hamming":
        raise click.BadParameter("the multiclass task's loss is zero-one", param_hint="--loss")
    if task == "ranking" and bias is not None:
        raise click.BadParameter("a bias feature cancels in every ranking pair (x_a - x_b): "
                                 "leave it out", param_hint="-B")


def _check_controls_in_mode(mode, controls):
    """Which mode honours which control: every linear mode the weights, scales, prior and
    non-negativity; budgeted none."""
    if mode not in LINEAR_MODES and any(v for k, v in controls.items() if k not in STATE_OPTIONS):
        raise click.BadParameter(f"the training controls apply to the {', '.join(LINEAR_MODES)} "
                                 f"modes, not to {mode}", param_hint="--mode")


def _bias(ctx, param, value):
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"bias must be finite, got {value}")
    return None if value is None or value < 0 else value


@click.command()
@data_path(name="train_file")
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=False))
@click.option("-t", "--task", type=click.Choice(TASKS), default="binary", show_default=True,
              help="What to learn.")
@click.option("-m", "--mode", type=click.Choice(MODES), default="n-slack", show_default=True,
              help="How to solve it: n-slack is dual coordinate descent over the constraints of "
                   "every example (all listed, or grown by cutting planes), each example with its "
                   "own slack; 1-slack adds one aggregated plane (every example's worst offender) "
                   "per iteration and solves a small QP over those planes (same objective and C); "
                   "online-dual streams the file (memory bounded by a cache of hard constraints, "
                   "not by the data; Ramanan Alg. 2); budgeted is an RBF-kernel SVM with at most "
                   "--budget support vectors (BSCA; binary, one-vs-rest multiclass, regression; "
                   "no bias).")
@click.option("-c", "C", type=float, default=1.0, show_default=True, callback=positive("C"),
              help="Cost of a unit of slack: P(w) = 1/2|w|^2 + C sum_i loss_i (LIBLINEAR's -c).")
@click.option("-e", "--epsilon", type=float, default=DEFAULT_EPSILON, show_default=True,
              callback=_epsilon, help="Stop when the relative duality gap (P-D)/P is at most this.")
@click.option("-B", "--bias", type=float, default=None, callback=_bias,
              help="Append a constant feature of this value (LIBLINEAR's -B; it is regularized). "
                   "Negative or absent: no bias feature.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True,
              help="Seed of the random order of coordinate steps (recorded in the model).")
@click.option("--max-epochs", type=click.IntRange(1), default=1000, show_default=True,
              help="Stop after this many passes even if the gap is not met (with a warning); with "
                   "cutting planes, the number of oracle rounds (each re-solve is capped too).")
@click.option("-p", "p", type=float, default=None, callback=_nonnegative("p"),
              help="Regression: width of the insensitive zone, |y - w.x| <= p costs nothing "
                   "(LIBLINEAR's -p)  [default: 0.1]")
@click.option("--loss", type=click.Choice(("zero-one", "hamming")), default=None,
              help="Multiclass and sequence: the loss Delta(y, y') of a wrong prediction "
                   "[default: zero-one for multiclass, hamming (per token) for sequence].")
@click.option("--rescaling", type=click.Choice(("margin", "slack")), default=None,
              help="Multiclass and sequence: margin rescaling (w.dpsi >= Delta - xi) or slack "
                   "rescaling (w.dpsi >= 1 - xi / Delta), Joachims et al. Alg. 1 and 2  "
                   "[default: margin]")
@click.option("--shrinking/--no-shrinking", default=True, show_default=True,
              help="Set aside constraints that are not expected to move (LIBLINEAR's shrinking).")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write one line per epoch: epoch, seconds, dual, primal, gap, relative gap.")
@click.option("--format", "model_format", type=click.Choice(("svmtrain", "liblinear")),
              default="svmtrain", show_default=True,
              help="Model file format; liblinear writes what LIBLINEAR's train would.")
@click.option("--task-module", "task_module", default=None, metavar="SPEC",
              help="Train your own task: PATH.py:Class or package.module:Class, a subclass of "
                   "svmtrain.StructuredTask (docs/own-task.md); replaces -t. The model records "
                   "the task's name and version, never its code.")
@click.option("--task-option", "task_options", multiple=True, metavar="KEY=VALUE",
              help="An option for --task-module's class (repeatable; values are strings).")
@click.option("--latent-rounds", "latent_rounds", type=click.IntRange(0), default=0,
              show_default=True,
              help="With --task-module whose task defines latent(x, y, w): at most this many "
                   "CCCP rounds (impute the latent part, solve the convex problem hot-started; "
                   "n-slack); 0: no latent rounds.")
@control_options
@oneslack_options
@online_options
@budgeted_options
@dask_options
@zero_based_option
@quiet_option
def train(train_file, model_file, task, mode, C, epsilon, bias, seed, max_epochs, p, loss,
          rescaling, shrinking, trace_file, model_format, zero_based, quiet, **grouped):
    """Learn a model from TRAIN_FILE and write it to MODEL_FILE.

    The model records the dual value D (a lower bound on the optimum) and the primal P(w) (an upper
    bound); `svmtrain verify-bound` re-checks P with one pass over the data.
    """
    task_module = grouped.pop("task_module")
    task_options = grouped.pop("task_options")
    latent_rounds = grouped.pop("latent_rounds")
    if task_module is not None or task_options or latent_rounds:
        from svmtrain.cli.user import train_user_command
        train_user_command(click.get_current_context(), train_file, model_file, task_module,
                           task_options, latent_rounds, mode, C, epsilon, seed, max_epochs,
                           shrinking, trace_file, quiet, grouped)
        return
    _check_task_options(task, p=p, loss=loss, rescaling=rescaling, bias=bias)
    budgeted = {name: grouped.pop(name) for name in BUDGETED_OPTIONS}
    dask = {name: grouped.pop(name) for name in DASK_OPTIONS}
    online = {name: grouped.pop(name) for name in ONLINE_OPTIONS}
    oneslack = {name: grouped.pop(name) for name in ONESLACK_OPTIONS}
    controls = grouped           # with --save-state / --warm-start, which every resumable mode reads
    online.update(save_state=controls["save_state_file"], warm_start=controls["warm_start_file"])
    mode = check_online_options(click.get_current_context(), train_file, task, mode, online)
    check_budgeted_options(mode, task, budgeted, bias=bias, loss=loss, rescaling=rescaling,
                           model_format=model_format)
    solver_options = oneslack_settings(mode, oneslack)
    if mode == "1-slack":        # its state is its working set of planes, not the controls' alphas
        solver_options["state_files"] = {k: controls[k] for k in STATE_OPTIONS}
        controls.update(dict.fromkeys(STATE_OPTIONS))
    check_control_options(task, bias, model_format, controls, mode)
    _check_controls_in_mode(mode, controls)
    options = {"p": 0.1 if p is None else p, "loss": loss, "rescaling": rescaling or "margin"}
    check_dask_options(**dask, mode=mode, task=task,
                       refuse=[control_flag(k) for k, v in controls.items() if v]   # not on Dask yet
                       + (["--threads"] if oneslack["threads"] is not None else [])
                       + (["--merge-duplicates"] if oneslack["merge_duplicates"] else []))
    if dask["workers"] or dask["scheduler"]:
        with user_errors(), dask_session(**dask) as s:
            if mode == "1-slack":
                train_oneslack_on_dask(s, train_file, model_file, task, C, epsilon, bias, seed,
                                       max_epochs, options, trace_file, model_format, zero_based,
                                       quiet, solver_options)
            else:
                train_on_dask(s, train_file, model_file, task, C, epsilon, bias, seed, max_epochs,
                              options, shrinking, trace_file, model_format, zero_based, quiet)
        return
    if mode == "budgeted":
        with user_errors():
            train_budgeted_command(train_file, model_file, task, C, epsilon, seed, options,
                                   trace_file, zero_based, quiet, **budgeted)
        return
    if mode == "online-dual":     # a streaming solver: no data.load
        with user_errors():
            train_online(train_file, model_file, task, C, epsilon, bias, seed, max_epochs, options,
                         shrinking, trace_file, model_format, zero_based, quiet, online, controls)
        return
    with user_errors():
        _train(train_file, model_file, task, mode, C, epsilon, bias, seed, max_epochs, options,
               shrinking, trace_file, model_format, zero_based, quiet, controls, solver_options)


def _train(train_file, model_file, task_name, mode, C, epsilon, bias, seed, max_epochs, options,
           shrinking, trace_file, model_format, zero_based, quiet, control_options, solver_options):
    from svmtrain import data
    from svmtrain.model import Model, write_liblinear, write_model
    from svmtrain.solvers import SOLVERS
    from svmtrain.tasks import task_class

    if model_format == "liblinear" and zero_based:
        raise InputError("--format liblinear cannot record zero-based feature indices")
    if model_format == "liblinear" and task_name != "binary":
        raise InputError(f"--format liblinear is for the binary task (LIBLINEAR's format has no "
                         f"place for a {task_name} model's certificate); use --format svmtrain")
    controls = read_controls(task_name, zero_based, control_options)   # control files, before the data
    state_files = solver_options.pop("state_files", None)        # 1-slack's working set
    saved = state_files and state_files["save_state_file"]
    if saved and not os.path.isdir(os.path.dirname(os.path.abspath(saved))):
        # before the model is written: a state that cannot be written would leave the model alone
        raise InputError(f"--save-state {saved}: no such directory")
    started = time.perf_counter()
    with byte_progress(train_file, quiet, "reading") as progress:
        block = data.load(train_file, zero_based=zero_based, progress=progress)
    data.check_training_rows(block, train_file, zero_based)
    # at least one feature column, as online-dual widens to: the sequence task's transition terms
    # live on a unit row in column 0, so featureless data still needs that column
    block.n_features = max(block.n_features, 1)
    task = task_class(task_name).from_training_data(block, train_file, options)
    if getattr(task, "K", 1) > 1:      # one weight block per label: the width the kernels index
        data.check_features(block, train_file, zero_based, task.K, task.labels_noun)
    run = ControlledRun(task, controls, control_options, block, train_file, bias, C)
    if state_files and state_files["warm_start_file"]:
        from svmtrain.solvers.oneslack import read_state
        from svmtrain.tasks.base import Geometry
        n_w = run.task.n_weights(Geometry(block.n_features, run.solver_bias))
        try:
            solver_options["start"] = read_state(state_files["warm_start_file"], task_name, n_w, C)
        except (OSError, ValueError) as e:
            raise InputError(f"{state_files['warm_start_file']}: {e}") from None

    trace = open(trace_file, "w") if trace_file else None   # opened only once the data is good
    epoch_bar = None
    if show_progress(quiet):
        from tqdm import tqdm
        epoch_bar = tqdm(total=max_epochs, unit="epoch", desc="training", leave=False, file=sys.stderr)
    if trace:
        trace.write(TRACE_HEADERS.get(mode, "# epoch seconds dual primal gap relative_gap exact "
                                            "active visited") + "\n")

    def on_epoch(r):
        if trace:
            extra = f" {r.trace_columns()}" if hasattr(r, "trace_columns") else ""
            trace.write(f"{r.epoch} {r.seconds:.6f} {r.dual!r} {r.primal!r} {r.gap!r} "
                        f"{r.relative_gap!r} {int(r.exact)} {r.active}{extra}\n")
            trace.flush()
        if epoch_bar is not None:
            epoch_bar.update(1)
            epoch_bar.set_postfix_str(f"gap {r.relative_gap:.2e}")

    try:
        with interrupt.watch():   # SIGINT / SIGTERM: stop after the current epoch, write the model
            result = SOLVERS[mode](run.task, block, train_file, C=C, bias=run.solver_bias,
                                   epsilon=epsilon, max_epochs=max_epochs, seed=seed,
                                   shrinking=shrinking, on_epoch=on_epoch, **solver_options)
        run.finish(result)
    finally:
        if epoch_bar is not None:
            epoch_bar.close()
        if trace:
            trace.close()

    model = Model(task=task_name, mode=mode, C=C, bias=bias, n_features=result.geometry.n_cols,
                  index_base=0 if zero_based else 1, w=task.model_weights(result.w, result.geometry),
                  epsilon=epsilon, dual=result.dual, primal=result.primal,
                  relative_gap=result.relative_gap, examples=result.examples, seed=seed,
                  epochs=result.epochs, **task.model_fields(), **controls.model_fields())
    if model_format == "liblinear":
        write_liblinear(model, model_file)
    else:
        write_model(model, model_file)
    # --save-state; an interrupted run also leaves MODEL_FILE.state.npz to --warm-start from
    if state_files is not None:
        state = state_files["save_state_file"] or (f"{model_file}.state.npz"
                                                   if result.interrupted else None)
        if state:
            from svmtrain.solvers.oneslack import save_state
            save_state(state, result, task=task_name, C=C)
    else:
        state = run.save_state(result, model_file if result.interrupted else None)
    if result.interrupted:
        kept = f" and {state}" if state else ""
        click.echo(f"svmtrain: interrupted ({signal.Signals(interrupt.signal_received()).name}): "
                   f"wrote {model_file}{kept} (relative gap {result.relative_gap:.3g})", err=True)
        sys.exit(interrupt.exit_status())
    if not result.converged:
        passes = f"{result.rounds} rounds" if result.rounds > 1 else f"{result.epochs} epochs"
        hint = ("; a gap this large usually means features on very different scales: scale them "
                "(e.g. to [0, 1]) and train again" if result.relative_gap > 0.5 else "")
        click.echo(f"svmtrain: warning: relative gap {result.relative_gap:.3g} is above epsilon "
                   f"{epsilon:g} after {passes} (--max-epochs){hint}", err=True)
    if not quiet:
        rounds = (f"{result.rounds} cutting-plane rounds, {result.constraints} constraints cached, "
                  if result.rounds > 1 else "")
        if hasattr(result, "schedule"):
            rounds = result.schedule()
        click.echo(f"svmtrain: {task_name} {mode}, {result.examples} {task.examples_are}, "
                   f"{result.geometry.n_cols} features: {result.epochs} epochs, {rounds}"
                   f"{time.perf_counter() - started:.3g} s, primal {result.primal:.10g}, "
                   f"dual {result.dual:.10g}, relative gap {result.relative_gap:.3g}", err=True)
