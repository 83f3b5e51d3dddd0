"""The training pipeline: one run of any mode, local or on Dask, from option records to a Model.

`run_training(TrainingRun)` reads the data (or streams it), builds the task, wraps it with the
training controls, calls the mode's solver, prices the certificate, builds the Model (`build_model`:
the one place a trained Model is constructed) and writes it (and any dual state) when asked. What a
front end shows comes back as a `RunStats`: the figures, the warnings and the one-line summary the
CLI prints. Nothing here prints or exits; errors are DataError, ModelError, OptionError or
InputError, all of them bad input.
"""

from __future__ import annotations

import os
import time
from dataclasses import field
from typing import Callable, Optional

from svmtrain import interrupt
from svmtrain.errors import InputError
from svmtrain.objective import relative_gap
from svmtrain.options import (Budgeted, Controls, Dask, Local, OneSlack, OnlineDual, OptionError,
                              Problem, check_run)
from svmtrain.records import record

#: one line per epoch; the 1-slack, Dask, online-dual and budgeted traces have their own columns
TRACE_HEADERS = {
    "n-slack": "# epoch seconds dual primal gap relative_gap exact active visited",
    "1-slack": "# iteration seconds dual primal gap relative_gap exact working_set oracle_passes "
               "cache_hits scored examples",
    "dask": "# round seconds dual primal gap relative_gap exact active",
    "online-dual": "# pass examples cache lower upper relative_gap seconds solves epochs bytes",
    "budgeted": "# epoch seconds primal dual gap relative_gap merges support_vectors validation "
                "kernel_values",
}


@record
class RunStats:
    """What a training run did: the mode that ran, its counters, time, the trace records (one per
    epoch, iteration, round or chunk), whether it converged or was interrupted, the warnings, and
    the summary line (the CLI prints it after "svmtrain: ")."""

    mode: str
    epochs: int = 0
    rounds: int = 0
    seconds: float = 0.0
    converged: bool = True
    interrupted: bool = False
    trace: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    summary: str = ""
    state_file: Optional[str] = None      # the dual state written (--save-state, or left by an interrupt)
    signal: Optional[int] = None          # the signal that interrupted the run
    passes: Optional[int] = None          # online-dual: the passes completed
    chosen_because: Optional[str] = None  # why --mode auto chose the mode (None: it was given)
    late_warnings: list = field(default_factory=list)   # shown after the summary, not during the run
    dual_state: object = None             # n-slack: its final dual state in memory (a HotStart)
    certifying: bool = False              # online-dual: interrupted in the certificate's pass


@record
class TrainingRun:
    """One call of the pipeline: the data, the records and where the results go."""

    source: object                        # a path ("-": standard input) or a data.MemorySource
    problem: Problem
    mode: object
    chosen_because: Optional[str] = None   # --mode auto's reason, reported in the summary
    controls: Controls = Controls()
    where: object = Local()
    model_file: Optional[str] = None      # written (atomically) when given, with its checkpoints
    model_format: str = "svmtrain"
    trace_file: Optional[str] = None
    show_progress: bool = False
    on_epoch: Optional[Callable] = None   # called with each trace record
    on_warning: Optional[Callable] = None  # called with each warning as it happens
    hot_start: object = None              # n-slack: an earlier run's HotStart on the same rows
    keep_dual_state: bool = False         # n-slack: keep the final HotStart in stats.dual_state


def state_mode(path):
    """The mode of a --warm-start state file and, for an online-dual state, its arrays."""
    from svmtrain.solvers.online_state import StateError, read_state
    try:
        arrays = read_state(path)
    except StateError as e:
        raise InputError(f"{path}: {e}") from None
    mode = str(arrays["mode"])
    if mode not in ("n-slack", "1-slack", "online-dual"):
        raise InputError(f"{path}: the state is from the {mode} mode; the n-slack, 1-slack and "
                         f"online-dual modes resume")
    return mode, (arrays if mode == "online-dual" else None)


def resolve_mode(mode, controls: Controls, task=None, source=None, where=None):
    """The mode record to run and why. A --warm-start state decides the mode when none is given
    (and must agree with one that is); "auto" or None chooses by the task and the input's size
    (svmtrain.auto). Returns (mode record, the online-dual state arrays or None, the reason the
    mode was chosen, or None when it was given)."""
    from svmtrain.options import MODE_RECORDS, mode_record
    arrays = None
    given = mode if mode is not None and mode != "auto" else None
    if controls.warm_start is not None:
        name, arrays = state_mode(controls.warm_start)
        if given is not None and mode_record(given).name != name:
            raise OptionError(f"{controls.warm_start} is a {name} state, and --mode is "
                              f"{mode_record(given).name}", "--warm-start")
        if given is None:
            return MODE_RECORDS[name](), arrays, "the --warm-start state's mode"
    if given is None:
        from svmtrain.auto import choose_mode
        name, reason = choose_mode(task, source, dask=isinstance(where, Dask))
        return MODE_RECORDS[name](), arrays, reason
    return mode_record(given), arrays, None


def build_model(problem: Problem, mode: str, *, n_features, w, dual, primal, relative_gap,
                examples, epochs, **fields):
    """The trained Model: every mode's, built here only."""
    from svmtrain.model import Model
    return Model(task=problem.task_name, mode=mode, C=problem.C, bias=problem.bias,
                 n_features=n_features, index_base=0 if problem.zero_based else 1, w=w,
                 epsilon=problem.epsilon, dual=dual, primal=primal, relative_gap=relative_gap,
                 examples=examples, seed=problem.seed, epochs=epochs, **fields)


def write_model_file(model, path, model_format="svmtrain"):
    from svmtrain.model import write_liblinear, write_model
    (write_liblinear if model_format == "liblinear" else write_model)(model, path)


class _Trace:
    """The --trace file (opened once the data is good) and the records kept for RunStats."""

    def __init__(self, run: TrainingRun, stats: RunStats, header: str):
        self.file = open(run.trace_file, "w") if run.trace_file else None
        self.stats, self.callback = stats, run.on_epoch
        if self.file:
            self.file.write(header + "\n")

    def add(self, record, line=None):
        """`line`: the record's trace-file line, a function of it (formatted only for a file)."""
        self.stats.trace.append(record)
        if self.file and line is not None:
            self.file.write(line(record) + "\n")
            self.file.flush()
        if self.callback is not None:
            self.callback(record)

    def close(self):
        if self.file:
            self.file.close()


def _epoch_line(r):
    extra = f" {r.trace_columns()}" if hasattr(r, "trace_columns") else ""
    return (f"{r.epoch} {r.seconds:.6f} {r.dual!r} {r.primal!r} {r.gap!r} {r.relative_gap!r} "
            f"{int(r.exact)} {r.active}{extra}")


def run_training(run: TrainingRun):
    """Train: (Model, RunStats). Options are checked before any data is read."""
    stats = RunStats(mode=run.mode.name)
    warnings = stats.warnings

    def warn(message):
        warnings.append(message)
        if run.on_warning is not None:
            run.on_warning(message)

    reads_stdin = run.source == "-" or getattr(run.source, "once", False)
    check_run(run.problem, run.mode, run.controls, run.where, model_format=run.model_format,
              reads_stdin=reads_stdin)
    if isinstance(run.where, Dask):
        if not isinstance(run.source, str) or hasattr(run.source, "iter_blocks"):
            raise OptionError("on Dask the workers read the data: give a file, not arrays",
                              run.where.flag)
        from svmtrain import distributed
        try:
            distributed.check_available(run.where.flag, bool(run.where.workers))
        except distributed.DaskMissing as e:
            raise InputError(str(e)) from None
    started = time.perf_counter()
    if run.problem.user_task:
        model = _train_user(run, stats, warn)
    elif isinstance(run.where, Dask):
        model = _train_on_dask(run, stats)
    elif isinstance(run.mode, Budgeted):
        model = _train_budgeted(run, stats)
    elif isinstance(run.mode, OnlineDual):
        model = _train_online(run, stats, warn)
    else:
        model = _train_batch(run, stats, warn)
    stats.seconds = time.perf_counter() - started
    if stats.summary:
        stats.summary = stats.summary.replace("{seconds}", f"{stats.seconds:.3g}")
        if run.chosen_because and run.mode.name != "n-slack":
            # n-slack is what svmtrain always ran: said only when auto departs from it
            stats.summary += f" (--mode auto: {run.mode.name} for {run.chosen_because})"
    stats.chosen_because = run.chosen_because
    model.stats = stats
    return model, stats


def _summary(problem, mode_label, examples, noun, n_features, schedule, model):
    return (f"{problem.task} {mode_label}, {examples} {noun}, {n_features} features: {schedule}"
            f"{{seconds}} s, primal {model.primal:.10g}, dual {model.dual:.10g}, relative gap "
            f"{model.relative_gap:.3g}")


def _not_converged(stats, problem, relative, passes, hint=True):
    extra = ("; a gap this large usually means features on very different scales: scale them "
             "(e.g. to [0, 1]) and train again" if hint and relative > 0.5 else "")
    return (f"relative gap {relative:.3g} is above epsilon {problem.epsilon:g} after {passes} "
            f"(--max-epochs){extra}")


# -- n-slack and 1-slack, in memory ---------------------------------------------------------------

def _train_batch(run: TrainingRun, stats: RunStats, warn):
    from svmtrain import data
    from svmtrain.controlled import ControlledRun, read_controls
    from svmtrain.progress import byte_bar, epoch_bar
    from svmtrain.solvers import SOLVERS
    from svmtrain.tasks import task_class

    p, mode, name = run.problem, run.mode, run.mode.name
    if p.task == "sequence" and name == "n-slack":
        # The cutting-plane rounds allocate and free tables of many sizes (the oracle's, the grown
        # cache's, the engine's): with glibc's own mmap threshold the freed heap is never given
        # back. UD English EWT UPOS, C 0.1, models bit for bit the same: peak RSS 395 MB with
        # glibc's adjustment, 313 MB at 4 MB, 283 MB at 128 KB, for 1.0 / 3.5 / 7.3 s of system
        # time (of about 37 s). Since the cache and the rows shrank (2026-11-25, 2 runs each):
        # 139.6 MB at 4 MB, 133.5 at 512 KB, 130.8 at 256 KB, 129.3 at 128 KB, for 1.2-1.5 /
        # 2.1-2.4 / 3.2-3.3 / 3.7-4.2 s of system time (of 40-45 s; the wall times within the
        # noise): 256 KB. 1-slack, and the other tasks, hold what their peak needs (kddcup99
        # binary, sector: within 3% either way).
        from svmtrain.memory import ROUNDS_MMAP_THRESHOLD, fix_mmap_threshold
        fix_mmap_threshold(ROUNDS_MMAP_THRESHOLD)
    c = run.controls.as_dict()
    solver_options = {}
    state_files = None
    if isinstance(mode, OneSlack):   # its state is its working set of planes, not the controls' alphas
        solver_options = mode.solver_options()
        solver_options["threads"] = run.where.threads or 1
        state_files = {k: c[k] for k in ("save_state_file", "warm_start_file")}
        c.update(save_state_file=None, warm_start_file=None)
    elif run.hot_start is not None:
        solver_options["hot_start"] = run.hot_start
    controls = read_controls(p.task, p.zero_based, c)     # control files, before the data
    saved = state_files and state_files["save_state_file"]
    if saved and not os.path.isdir(os.path.dirname(os.path.abspath(saved))):
        # before the model is written: a state that cannot be written would leave the model alone
        raise InputError(f"--save-state {saved}: no such directory")
    with byte_bar(run.source, run.show_progress, "reading") as progress:
        block = data.load_source(run.source, zero_based=p.zero_based, progress=progress)
    data.check_training_rows(block, run.source, p.zero_based)
    # at least one feature column, as online-dual widens to: the sequence task's transition terms
    # live on a unit row in column 0, so featureless data still needs that column
    block.n_features = max(block.n_features, 1)
    task = task_class(p.task).from_training_data(block, run.source, p.task_options())
    if getattr(task, "K", 1) > 1:      # one weight block per label: the width the kernels index
        data.check_features(block, run.source, p.zero_based, task.K, task.labels_noun)
    controlled = ControlledRun(task, controls, c, block, run.source, p.bias, p.C)
    if state_files and state_files["warm_start_file"]:
        from svmtrain.solvers.oneslack import read_state
        from svmtrain.tasks.base import Geometry
        n_w = controlled.task.n_weights(Geometry(block.n_features, controlled.solver_bias))
        try:
            solver_options["start"] = read_state(state_files["warm_start_file"], p.task, n_w, p.C)
        except (OSError, ValueError) as e:
            raise InputError(f"{state_files['warm_start_file']}: {e}") from None

    trace = _Trace(run, stats, TRACE_HEADERS[name])
    bar = epoch_bar(run.show_progress, mode.max_epochs)

    def on_epoch(r):
        trace.add(r, _epoch_line)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"gap {r.relative_gap:.2e}")

    try:
        with interrupt.watch():   # SIGINT / SIGTERM: stop after the current epoch, write the model
            result = SOLVERS[name](controlled.task, block, run.source, C=p.C,
                                   bias=controlled.solver_bias, epsilon=p.epsilon,
                                   max_epochs=mode.max_epochs, seed=p.seed,
                                   shrinking=mode.shrinking, on_epoch=on_epoch, **solver_options)
        controlled.finish(result, warn)
    finally:
        if bar is not None:
            bar.close()
        trace.close()

    left = run.model_file if result.interrupted else None
    wanted = state_files["save_state_file"] if state_files is not None else c.get("save_state_file")
    if not (wanted or left or (name == "n-slack" and run.keep_dual_state)):
        # no state asked for: the model needs only w, so the cache and the rows go before its
        # weights are laid out and written (the end of a UD English EWT n-slack run, its peak)
        result.cache = result.listed = None
        controlled.block = block = None
    model = build_model(p, name, n_features=result.geometry.n_cols,
                        w=task.model_weights(result.w, result.geometry), dual=result.dual,
                        primal=result.primal, relative_gap=result.relative_gap,
                        examples=result.examples, epochs=result.epochs, **task.model_fields(),
                        **controls.model_fields())
    if run.model_file is not None:
        write_model_file(model, run.model_file, run.model_format)
    # --save-state; an interrupted run also leaves MODEL_FILE.state.npz to --warm-start from
    if state_files is not None:
        state = state_files["save_state_file"] or (f"{left}.state.npz" if left else None)
        if state:
            from svmtrain.solvers.oneslack import save_state
            save_state(state, result, task=p.task, C=p.C)
    else:
        state = controlled.save_state(result, left)
    stats.state_file = state
    if name == "n-slack" and run.keep_dual_state:
        from svmtrain.solvers.nslack import HotStart
        stats.dual_state = HotStart.of(result, p.C)
    stats.epochs, stats.rounds = result.epochs, result.rounds
    stats.converged, stats.interrupted = result.converged, result.interrupted
    if result.interrupted:
        stats.signal = interrupt.signal_received()
    elif not result.converged:
        passes = f"{result.rounds} rounds" if result.rounds > 1 else f"{result.epochs} epochs"
        warn(_not_converged(stats, p, result.relative_gap, passes))
    schedule = (f"{result.rounds} cutting-plane rounds, {result.constraints} constraints cached, "
                if result.rounds > 1 else "")
    if hasattr(result, "schedule"):
        schedule = result.schedule()
    stats.summary = _summary(p, name, result.examples, task.examples_are, result.geometry.n_cols,
                             f"{result.epochs} epochs, {schedule}", model)
    return model


# -- online-dual ----------------------------------------------------------------------------------

def _train_online(run: TrainingRun, stats: RunStats, warn):
    from svmtrain import objective
    from svmtrain.controlled import read_controls, streamed_task
    from svmtrain.controls import Controls as ControlState
    from svmtrain.progress import byte_bar
    from svmtrain.solvers import SOLVERS
    from svmtrain.memory import STREAM_MMAP_THRESHOLD, fix_mmap_threshold, online_mmap_threshold
    from svmtrain.solvers.online import OnlineOptions, structured
    from svmtrain.solvers.online_reading import streaming_task
    from svmtrain.solvers.online_state import StateError, load_state, problem_fields, save_state
    from svmtrain.tasks import task_class
    import contextlib
    import json

    p, mode, path = run.problem, run.mode, run.source
    if mode.checkpoint_every is not None and run.model_file is None:
        raise OptionError("checkpoints are written beside the model: give a model file",
                          "--checkpoint-every")
    fix_mmap_threshold(STREAM_MMAP_THRESHOLD)    # memory bounded by the cache, not the stream
    _, arrays, _ = resolve_mode(mode, run.controls, p.task, path)
    labels = list(mode.labels) if mode.labels is not None else None
    if labels is None and arrays is not None and "problem_labels" in arrays and arrays["problem_labels"].size:
        labels = arrays["problem_labels"].tolist()     # the state's labels: no reading pass
    c = dict(run.controls.as_dict(), warm_start_file=None, save_state_file=None)  # states: ours
    shaped = bool(run.controls.shaping)
    controls = read_controls(p.task, p.zero_based, c) if shaped else ControlState()
    counts = {} if c.get("class_weight") == "balanced" else None
    with byte_bar(path, run.show_progress, "labels") as progress:
        task = streaming_task(task_class(p.task), path, p.task_options(), labels, p.zero_based,
                              progress, counts=counts)
    solver_task = streamed_task(task, controls, c, path, p.bias, counts) if shaped else task
    limit = mode.cache_bound()
    # a structured task's windows are cutting-plane rounds, as sequence n-slack's (svmtrain.memory)
    fix_mmap_threshold(online_mmap_threshold(task.name, structured(task)))
    opt = OnlineOptions(C=p.C, bias=controls.hat_bias(p.bias), epsilon=p.epsilon, seed=p.seed,
                        passes=mode.passes, chunk=mode.chunk,
                        keep_rounds=mode.keep_inactive,
                        cache_limit=limit[1] if limit and limit[0] == "constraints" else None,
                        cache_limit_bytes=limit[1] if limit and limit[0] == "bytes" else None,
                        window_bound=_window_bound(limit, mode, task),
                        max_epochs=mode.max_epochs, shrinking=mode.shrinking,
                        zero_based=p.zero_based, checkpoint_every=mode.checkpoint_every,
                        shuffle_window=mode.solver_value("shuffle_window"),
                        window_rows=mode.solver_value("window_rows"),
                        window_looks=mode.window_looks,     # None: the solver's, by the task
                        admit_margin=mode.solver_value("admit_margin"),
                        # what the last pass evicts comes back only in a run that continues this
                        # one with more passes, from the state --save-state writes
                        keep_evicted=bool(run.controls.save_state))
    fields = problem_fields(p.task, task, opt)
    fields["controls"] = json.dumps(controls.model_fields(), sort_keys=True, default=str)
    warm = run.controls.warm_start
    if arrays is not None:
        try:
            arrays = load_state(arrays, fields)
        except StateError as e:
            raise InputError(f"{warm}: cannot resume: {e}") from None
    # by default certify with one more pass, where that pass streams too: not from standard input
    # (read once), nor for ranking and constraints, whose primal needs the whole file in memory
    once = path == "-" or getattr(path, "once", False)
    verify = mode.verify if mode.verify is not None else (not once and task.grouping != "whole")
    state_path = run.controls.save_state or (f"{run.model_file}.state.npz" if run.model_file
                                             else None)
    try:
        solver = SOLVERS["online-dual"](solver_task, path, opt, arrays)
    except StateError as e:
        raise InputError(f"{warm}: cannot resume: {e}") from None

    def model_w(result):
        """The model's w: the solver's w_hat mapped back (w0 + R^-1 w_hat) under --prior,
        --reg-scale, --bias-reg; the solver's w otherwise."""
        if solver_task is task or not controls.reparametrized:
            return result.w
        return solver_task.to_model(result.w, result.geometry)

    def make(result, primal, examples):
        primal = max(primal, result.dual)
        return build_model(p, "online-dual", n_features=result.geometry.n_cols,
                           w=task.model_weights(model_w(result), result.geometry),
                           dual=result.dual, primal=primal,
                           relative_gap=relative_gap(primal, result.dual), examples=examples,
                           epochs=result.epochs, **task.model_fields(), **controls.model_fields())

    wrote_checkpoint = []

    def checkpoint(result):
        write_model_file(make(result, result.upper, result.examples), run.model_file,
                         run.model_format)
        save_state(state_path, result.state, fields)
        wrote_checkpoint.append(True)

    trace = _Trace(run, stats, TRACE_HEADERS["online-dual"])
    bars = []

    def on_chunk(r):
        rel = relative_gap(r.upper, r.lower)
        trace.add(r, lambda r: f"{r.pass_} {r.examples} {r.cache} {r.lower!r} {r.upper!r} "
                               f"{rel!r} {r.seconds:.6f} {r.solves} {r.epochs} {r.nbytes}")
        if bars and bars[-1] is not None:
            bars[-1].set_postfix_str(f"cache {r.cache}, gap {rel:.1e}", refresh=False)

    @contextlib.contextmanager
    def pass_bar(k):
        with byte_bar(path, run.show_progress, f"pass {k + 1}/{opt.passes}", keep=bars) as progress:
            yield progress

    primal = examples = None
    try:
        with interrupt.watch():
            result = solver.run(pass_bar, on_chunk, checkpoint if run.model_file else None)
            if verify and not result.interrupted:
                if not run.controls.save_state:
                    # the certificate's pass needs w alone: the cache is not held through it
                    # (it was 35 MB of the 118 MB heap peak of a one-pass UD English EWT run)
                    solver.release()
                w_priced = result.w
                if solver_task is not task and controls.reparametrized:
                    # price the w the model will hold (w_hat rebuilt from it, as verify-bound will)
                    w_model = task.solver_weights(task.model_weights(model_w(result), result.geometry))
                    w_priced = solver_task.to_hat(w_model, result.geometry)
                acc = objective.PrimalAccumulator(solver_task, w_priced, result.geometry, p.C, path)
                if _accumulate(acc, solver_task, path, p.zero_based, run.show_progress):
                    value = acc.value()
                    primal, examples = value.primal, value.examples
    finally:
        trace.close()

    def drop_superseded_checkpoint():
        if (wrote_checkpoint or warm == state_path) and state_path and os.path.exists(state_path):
            os.remove(state_path)      # a checkpoint superseded by the finished model

    interrupted = result.interrupted or interrupt.requested()
    # stopped in the certificate's pass, the training is complete: the model is written with the
    # cached problem's bounds, and a resume state has nothing to add unless --save-state asks for
    # it (the cache is let go before that pass otherwise)
    certifying = interrupted and verify and not result.interrupted
    keeps_state = bool(run.controls.save_state) or (interrupted and not certifying)
    if not keeps_state:
        solver.release()               # no resume state will be written: the model's turn
    if interrupted or primal is None:
        primal, examples = (result.upper, result.examples)
    certified = not interrupted and (verify or result.certified)
    model = make(result, primal, examples)
    if run.model_file is not None:
        write_model_file(model, run.model_file, run.model_format)
    stats.epochs, stats.rounds, stats.interrupted = result.epochs, result.passes, interrupted
    stats.passes = result.passes
    if interrupted:
        stats.signal = interrupt.signal_received()
        stats.certifying = certifying
        if not keeps_state:
            drop_superseded_checkpoint()
        elif state_path:
            save_state(state_path, result.state, fields)
            stats.state_file = state_path
        return model
    if run.controls.save_state:
        save_state(state_path, result.state, fields)
        stats.state_file = state_path
    else:
        drop_superseded_checkpoint()
    rel = model.relative_gap
    stats.converged = certified and rel <= p.epsilon
    how = ("certified by a pass over the data" if verify else
           "certified: the last pass added no constraint" if result.certified else
           "of the cached problem, NOT certified: run svmtrain verify-bound")
    stats.summary = (f"{p.task} online-dual, {examples} {task.examples_are}, "
                     f"{result.geometry.n_cols} features: {_n(result.passes, 'pass', 'passes')}, "
                     f"{result.solves} re-optimisations, {result.epochs} epochs, {result.cache} "
                     f"constraints cached (at most {_size(result.cache_peak_bytes)}), "
                     f"{_evictions(result)}{{seconds}} s, primal {model.primal:.10g}, dual "
                     f"{result.dual:.10g}, relative gap {rel:.3g} ({how})")
    if certified and rel > p.epsilon:   # after the summary, whose figures it refers to
        stats.warnings.append(f"relative gap {rel:.3g} is above epsilon {p.epsilon:g} after "
                              f"{_n(result.passes, 'pass', 'passes')}: more --passes close it")
        stats.late_warnings.append(stats.warnings[-1])
    return model


def _window_bound(limit, mode, task):
    """Whether online-dual bounds its cache by the window: asked for (--cache-limit window), or by
    default for a structured task (multiclass, sequence, ranking). A binary or regression example
    is one constraint on one row: the bound saved nothing there and froze the earlier windows'
    support vectors for the pass (one pass, C 1, bound against none: ijcnn1 in windows of 10,000
    certified 0.433 against 0.0082, a9a 0.0125 against 9.9e-4; kddcup99 binary in its 5 windows
    8.1e-4 against 7.1e-4 at 73.1 against 73.2 MB). `limit`: mode.cache_bound()."""
    from svmtrain.solvers.online import structured
    return (bool(limit) and limit[0] == "window"
            and (mode.cache_limit is not None or structured(task)))


def _evictions(result):
    """What a cache limit evicted, for the summary line: support vectors that come back in the
    pass they left, again and again, tell a bound below what a window needs (docs/modes.md)."""
    if not result.evicted:
        return ""
    return (f"{result.evicted} support vectors evicted and {result.returned} brought back "
            f"by the cache limit, ")


def _accumulate(acc, task, path, zero_based, show):
    """verify-bound's pass into `acc`; False when a signal stops it."""
    from svmtrain import data
    from svmtrain.progress import byte_bar
    with byte_bar(path, show, "verifying") as progress:
        blocks = data.stream(path, zero_based=zero_based, progress=progress)
        prepare = getattr(task, "prepare_pass", None)
        if prepare is not None:
            blocks = prepare(blocks)
        for block in data.whole_examples(blocks, task.grouping, path):
            acc.add(block)
            del block               # not held while the next block is read
            if interrupt.requested():
                return False
    return True


def _n(k, one, many):
    return f"{k} {one if k == 1 else many}"


def _size(nbytes):
    """Bytes for a person: 4 significant digits in KB, MB or GB (powers of 1024), never 1e+03."""
    for unit, scale in (("KB", 1 << 10), ("MB", 1 << 20)):
        if nbytes < 1000 * scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes / (1 << 30):.4g} GB"


# -- budgeted -------------------------------------------------------------------------------------

def _train_budgeted(run: TrainingRun, stats: RunStats):
    from svmtrain import data
    from svmtrain.progress import byte_bar, epoch_bar
    from svmtrain.solvers import budgeted as solver
    from svmtrain.tasks import task_class

    p, mode = run.problem, run.mode
    optimizer = mode.solver_name
    average = True if mode.average is None else mode.average
    shrink = solver.DEFAULT_SHRINK if mode.shrink is None or mode.shrink else None
    step_tolerance = solver.DEFAULT_STEP_TOL if mode.step_tolerance is None else mode.step_tolerance
    with byte_bar(run.source, run.show_progress, "reading") as progress:
        block = data.load_source(run.source, zero_based=p.zero_based, progress=progress)
    data.check_training_rows(block, run.source, p.zero_based)   # |x|^2 = inf: every kernel nan
    task = task_class(p.task).from_training_data(block, run.source, p.task_options())
    held_out = None
    if mode.validation is not None:
        held_out = data.load(mode.validation, zero_based=p.zero_based)
        data.check_norms(held_out, mode.validation)
        solver.targets(task, held_out, mode.validation)   # its labels must be the model's
    if block.n_features == 0 and mode.gamma is None:
        raise InputError(f"{run.source}: no features: give -g/--gamma")

    trace = _Trace(run, stats, TRACE_HEADERS["budgeted"])
    bar = epoch_bar(run.show_progress, mode.epochs)

    def on_epoch(r):
        v = "-" if r.validation is None else repr(r.validation)
        trace.add(r, lambda r: f"{r.epoch} {r.seconds:.6f} {r.primal!r} {r.dual!r} "
                               f"{r.primal - r.dual!r} {solver.relative_gap(r.primal, r.dual)!r} "
                               f"{r.merges} {r.support_vectors} {v} {r.kernel_values}")
        if bar is not None:
            bar.update(1)

    wanted = trace.file is not None or bar is not None or run.on_epoch is not None
    try:
        result = solver.train_budgeted(task, block, run.source, C=p.C, gamma=mode.gamma,
                                       budget=mode.budget, epochs=mode.epochs, optimizer=optimizer,
                                       merge_precision=mode.merge_precision,
                                       merge_search=mode.merge_search, seed=p.seed,
                                       p=p.task_options()["p"], average=average, shrink=shrink,
                                       step_tol=step_tolerance, validation=held_out,
                                       on_epoch=on_epoch if wanted else None,
                                       # the objectives cost O(m^2) kernel evaluations: per epoch
                                       # for a trace only, not for a progress bar
                                       epoch_objectives=trace.file is not None or run.on_epoch is not None)
    finally:
        if bar is not None:
            bar.close()
        trace.close()

    fields = task.model_fields()
    fields.pop("loss", None)
    fields.pop("rescaling", None)
    model = build_model(p, "budgeted", n_features=result.n_features, w=[], dual=result.dual,
                        primal=result.primal, relative_gap=result.relative_gap,
                        examples=result.examples, epochs=result.epochs, solver=optimizer,
                        kernel="rbf", gamma=result.gamma, budget=mode.budget,
                        merge_search=mode.merge_search, merge_precision=mode.merge_precision,
                        averaged=mode.budget if average and optimizer == "bsca" else None,
                        support_vectors=result.support_vectors, alphas=result.alphas, **fields)
    if run.model_file is not None:
        write_model_file(model, run.model_file)
    stats.epochs = result.epochs
    n_sv = sum(len(sv[0]) for sv in result.support_vectors)
    stats.summary = (f"{p.task} budgeted ({optimizer}), {result.examples} examples, "
                     f"{result.n_features} features, gamma {result.gamma:.6g}, budget {mode.budget}: "
                     f"{result.epochs} epochs, {n_sv} support vectors, {result.merges} merges, "
                     f"{{seconds}} s, primal {result.primal:.10g}, dual {result.dual:.10g}, "
                     f"relative gap {result.relative_gap:.3g}")
    return model


# -- the user's own task (svmtrain.tasks.user) ----------------------------------------------------

def _train_user(run: TrainingRun, stats: RunStats, warn):
    """A StructuredTask in a linear mode (with latent rounds: CCCP over n-slack)."""
    from svmtrain.tasks.user import TaskError, train_user_task

    p, mode, task = run.problem, run.mode, run.problem.task
    trace = _Trace(run, stats, TRACE_HEADERS["n-slack"])

    def on_round(r):
        # latent rounds: comment lines, so the numeric lines keep one format
        trace.add(r, lambda r: f"# latent round {r.round} objective {r.objective!r} "
                               f"primal {r.primal!r} dual {r.dual!r} "
                               f"relative_gap {r.relative_gap!r} epochs {r.epochs} "
                               f"changed {r.changed} seconds {r.seconds:.6f}")

    def on_chunk(r):
        trace.add(r, lambda r: f"# pass {r.pass_} examples {r.examples} cache {r.cache} "
                               f"lower {r.lower!r} upper {r.upper!r} seconds {r.seconds:.6f}")

    online = None
    if isinstance(mode, OnlineDual):
        limit = mode.cache_bound()
        online = {"passes": mode.passes, "chunk": mode.chunk,
                  "keep_rounds": mode.keep_inactive,
                  "cache_limit": limit[1] if limit and limit[0] == "constraints" else None,
                  "cache_limit_bytes": limit[1] if limit and limit[0] == "bytes" else None,
                  "window_bound": bool(limit) and limit[0] == "window",
                  "shuffle_window": mode.solver_value("shuffle_window"),
                  "window_rows": mode.solver_value("window_rows"),
                  "window_looks": mode.window_looks, "admit_margin": mode.solver_value("admit_margin")}
    solver_options = mode.solver_options() if isinstance(mode, OneSlack) else None
    examples = getattr(run.source, "examples", None)
    try:
        with interrupt.watch():
            trained = train_user_task(task, "<examples>" if examples is not None else run.source,
                                      mode=mode.name, C=p.C, epsilon=p.epsilon, seed=p.seed,
                                      max_epochs=mode.max_epochs, shrinking=mode.shrinking,
                                      threads=getattr(run.where, "threads", None) or 1,
                                      latent_rounds=p.latent_rounds,
                                      on_epoch=lambda r: trace.add(r, _epoch_line),
                                      on_round=on_round, on_chunk=on_chunk, online=online,
                                      solver_options=solver_options, examples=examples)
    except TaskError as e:
        raise InputError(str(e)) from None
    finally:
        trace.close()
    model = build_model(p, mode.name, **trained.fields)
    if run.model_file is not None:
        write_model_file(model, run.model_file)
    stats.epochs, stats.rounds = model.epochs, len(trained.rounds)
    stats.interrupted = interrupt.requested()
    stats.converged = model.relative_gap <= p.epsilon
    if stats.interrupted:
        stats.signal = interrupt.signal_received()
    elif not stats.converged:
        warn(f"relative gap {model.relative_gap:.3g} is above epsilon {p.epsilon:g}")
    latent = (f"{len(trained.rounds)} latent rounds ({trained.stopped}), "
              if trained.rounds else "")
    stats.summary = (f"{task.name} (user task) {mode.name}, {model.examples} examples, "
                     f"{model.n_features} weights: {model.epochs} epochs, {latent}{{seconds}} s, "
                     f"primal {model.primal:.10g}, dual {model.dual:.10g}, relative gap "
                     f"{model.relative_gap:.3g}")
    return model


# -- Dask -----------------------------------------------------------------------------------------

def _train_on_dask(run: TrainingRun, stats: RunStats):
    """n-slack by CoCoA+, or 1-slack with the per-example work on the workers."""
    from svmtrain import distributed
    from svmtrain.tasks import task_class

    p, mode, where = run.problem, run.mode, run.where
    path = run.source          # distributed.worker_path makes it absolute for the workers
    oneslack = isinstance(mode, OneSlack)
    trace = _Trace(run, stats, TRACE_HEADERS["1-slack" if oneslack else "dask"])
    left = f"{run.model_file}.state.npz" if run.model_file else None
    with distributed.session(where.workers, where.scheduler, client=where.client) as s:
        try:
            with interrupt.watch():
                if oneslack:
                    task, result, parts = _oneslack_on_dask(s, run, path, trace, left)
                else:
                    task, result = distributed.train_cocoa(
                        s, task_class(p.task), path, zero_based=p.zero_based,
                        options=p.task_options(), C=p.C, bias=p.bias, epsilon=p.epsilon,
                        max_epochs=mode.max_epochs, seed=p.seed, shrinking=mode.shrinking,
                        on_epoch=lambda r: trace.add(r, _epoch_line))
                    parts = result.partitions
        finally:
            trace.close()
    name = "1-slack" if oneslack else "n-slack"
    model = build_model(p, name, n_features=result.geometry.n_cols,
                        w=task.model_weights(result.w, result.geometry), dual=result.dual,
                        primal=result.primal, relative_gap=result.relative_gap,
                        examples=result.examples, epochs=result.epochs, **task.model_fields())
    if run.model_file is not None:
        write_model_file(model, run.model_file, run.model_format)
    stats.epochs, stats.rounds = result.epochs, result.rounds
    stats.converged, stats.interrupted = result.converged, result.interrupted
    if oneslack:
        state = run.controls.save_state or (left if result.interrupted else None)
        if state:
            from svmtrain.solvers.oneslack import save_state
            save_state(state, result, task=p.task, C=p.C)
            stats.state_file = state
    if result.interrupted:
        stats.signal = interrupt.signal_received()
    elif not result.converged:
        what = "iterations" if oneslack else "CoCoA+ rounds"
        # CoCoA+ says why it stopped short: how fast the gap was closing (distributed.py)
        stats.warnings.append(getattr(result, "note", "") or
                              f"relative gap {result.relative_gap:.3g} is above epsilon "
                              f"{p.epsilon:g} after {result.rounds} {what} (--max-epochs)")
        if run.on_warning is not None:
            run.on_warning(stats.warnings[-1])
    if oneslack:
        label, schedule = f"1-slack on Dask ({parts} partitions)", result.schedule()
    else:
        label, schedule = (f"n-slack on Dask (CoCoA+, {parts} partitions)",
                           f"{result.rounds} rounds, ")
    stats.summary = _summary(p, label, result.examples, task.examples_are,
                             result.geometry.n_cols, schedule, model)
    return model


def _oneslack_on_dask(s, run, path, trace, left):
    from svmtrain import distributed
    from svmtrain.solvers.oneslack import read_state, save_state
    from svmtrain.tasks import task_class
    import numpy as np

    p, mode = run.problem, run.mode
    options = mode.solver_options()
    warm = run.controls.warm_start

    def start_state(task, n_w):
        try:
            return read_state(warm, p.task, n_w, p.C) if warm else None
        except (OSError, ValueError) as e:
            raise InputError(f"{warm}: {e}") from None

    try:
        return distributed.train_oneslack(
            s, task_class(p.task), path, zero_based=p.zero_based, options=p.task_options(), C=p.C,
            bias=p.bias, start_state=start_state if warm else None, epsilon=p.epsilon,
            max_epochs=mode.max_epochs,
            seed=p.seed, on_epoch=lambda r: trace.add(r, _epoch_line), **options)
    except Exception as e:
        planes = getattr(e, "planes", None)
        if not (distributed.cluster_failure(e) and planes is not None and len(planes[2])
                and left is not None):
            raise

        class Planes:     # a working set where save_state expects a result
            pass
        held = Planes()
        held.planes, held.w = planes, np.zeros(e.n_w)
        # the working set lives here, not on the lost workers: keep it to resume from
        save_state(left, held, task=p.task, C=p.C)
        raise distributed.ClusterError(
            f"the Dask cluster lost the workers of this run ({type(e).__name__}: {e}); no model "
            f"was written; the working set of {len(planes[2])} planes is in {left}: "
            f"--warm-start {run.model_file} resumes from it") from None
