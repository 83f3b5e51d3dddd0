"""`svmtrain train --mode online-dual`: its options and the run (svmtrain.solvers.online does the work).

Also `--warm-start STATE`, which reads a resume state (.npz) and dispatches on its `mode`.
"""

import contextlib
import json
import math
import os
import re
import signal
import sys
import time

import click
from click.core import ParameterSource

from svmtrain import interrupt
from svmtrain.cli.options import InputError, positive, show_progress
from svmtrain.cli.controls import read_controls
from svmtrain.controls import BlockPreparer, ControlError, ControlledTask, Controls
from svmtrain.solvers.online import (DEFAULT_ADMIT_MARGIN, DEFAULT_KEEP_INACTIVE, DEFAULT_SHUFFLE_WINDOW,
                                     DEFAULT_STRUCTURED_LOOKS, DEFAULT_WINDOW_LOOKS, DEFAULT_WINDOW_ROWS)

# option name -> flag, for "applies to --mode online-dual" messages
_ONLINE_ONLY = {"passes": "--passes", "chunk": "--chunk", "keep_inactive": "--keep-inactive",
                "cache_limit": "--cache-limit", "labels": "--labels", "verify": "--verify/--no-verify",
                "checkpoint_every": "--checkpoint-every",
                "shuffle_window": "--shuffle-window", "window_looks": "--window-looks",
                "window_rows": "--window-rows",
                "admit_margin": "--admit-margin"}
ONLINE_OPTIONS = tuple(_ONLINE_ONLY)     # the parameters online_options adds to train


def _cache_limit(ctx, param, value):
    """N constraints, or a size in bytes with a unit: 512MB, 2GB, 100KB (powers of 1024)."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kKmMgG][bB])?\s*", value)
    if not m:
        raise click.BadParameter(f"expected a number of constraints (e.g. 100000) or a size "
                                 f"(e.g. 512MB, 2GB), got {value!r}")
    number, unit = float(m.group(1)), (m.group(2) or "").upper()
    if unit:
        size = int(number * {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[unit])
        if size < 1 << 10:
            raise click.BadParameter(f"a cache of {value} cannot hold a constraint; give at least 1KB")
        return ("bytes", size)
    if not number.is_integer() or number < 1:
        raise click.BadParameter(f"the number of cached constraints must be a positive integer, got {value}")
    return ("constraints", int(number))


def _labels(ctx, param, value):
    if value is None:
        return None
    try:
        labels = [float(x) for x in value.replace(",", " ").split()]
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, got {value!r}") from None
    if not labels or not all(math.isfinite(x) for x in labels) or len(set(labels)) != len(labels):
        raise click.BadParameter(f"expected distinct finite numbers, got {value!r}")
    return labels


def online_options(f):
    """The options of the online-dual mode, grouped (its resume state is read and written through
    --warm-start and --save-state, shared with the n-slack mode's dual state)."""
    options = [
        click.option("--passes", type=click.IntRange(1), default=1, show_default=True,
                     help="online-dual: passes over the file (an example keeps its slack across "
                          "passes); stops early when a pass adds no constraint."),
        click.option("--chunk", type=click.IntRange(1), default=1000, show_default=True,
                     help="online-dual: examples per chunk, the unit of the explore-or-optimise "
                          "decision."),
        click.option("--shuffle-window", "shuffle_window", type=click.IntRange(0),
                     default=DEFAULT_SHUFFLE_WINDOW, show_default=True, metavar="N",
                     help="online-dual: read N examples at a time and visit them in a random order "
                          "(fixed by --seed and the pass; memory: N examples), so that runs of one "
                          "label or drift in the file do not steer w; 0: file order. Ranking "
                          "streams a query at a time, in file order."),
        click.option("--window-rows", "window_rows", type=click.IntRange(1),
                     default=DEFAULT_WINDOW_ROWS, show_default=True, metavar="R",
                     help="online-dual: a shuffle window also closes at R rows (whole examples), so "
                          "that its memory is bounded however long the examples are."),
        click.option("--window-looks", "window_looks", type=click.IntRange(0),
                     default=None, metavar="K",
                     help="online-dual: before a shuffle window is let go, check its examples "
                          "against the current w again (they are in memory; the file is still read "
                          "once), up to K times, until a look adds no constraint (multiclass and "
                          "sequence: or raises the upper bound by at most -e of it)  [default: "
                          f"{DEFAULT_WINDOW_LOOKS}; multiclass and sequence {DEFAULT_STRUCTURED_LOOKS}]"),
        click.option("--admit-margin", "admit_margin", type=click.FloatRange(0, 100),
                     default=DEFAULT_ADMIT_MARGIN, show_default=True, metavar="M",
                     help="online-dual: also cache an example that is within M of violating its "
                          "constraint (in the loss's units: the binary margin is 1), with alpha = 0, "
                          "so that re-optimisations see it; 0: only violated ones (Alg. 2)."),
        click.option("--keep-inactive", "keep_inactive", type=click.IntRange(0),
                     default=DEFAULT_KEEP_INACTIVE, show_default=True,
                     help="online-dual: keep a constraint whose alpha is 0 for this many "
                          "re-optimisations before pruning it (0: prune at once)."),
        click.option("--cache-limit", "cache_limit", type=str, default=None, callback=_cache_limit,
                     metavar="N|SIZE",
                     help="online-dual: bound the cache hard, in constraints (100000) or bytes "
                          "(512MB, 2GB); evicts alpha = 0 constraints first, then the oldest  "
                          "[default: no bound]"),
        click.option("--labels", type=str, default=None, callback=_labels, metavar="L1,L2,...",
                     help="online-dual, binary/multiclass/sequence: the labels (e.g. 1,-1), instead "
                          "of a reading pass to find them; needed with standard input."),
        click.option("--verify/--no-verify", "verify", default=None,
                     help="online-dual: certify the model with one more pass (verify-bound's) and "
                          "record the true primal  [default: verify, except standard input, and "
                          "ranking and constraints, whose pass loads the file]"),
        click.option("--checkpoint-every", "checkpoint_every", type=float, default=None,
                     metavar="SECONDS",
                     callback=positive("the period", " of seconds"),
                     help="online-dual: write the model and the resume state every this many "
                          "seconds (as on SIGINT / SIGTERM)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def check_online_options(ctx, train_file, task, mode, online):
    """Validate the online options against the mode (before any data is read); returns the mode,
    which a --warm-start state decides. Reads the state file (kept in online['_state'])."""
    explicit_mode = ctx.get_parameter_source("mode") != ParameterSource.DEFAULT
    online["_state"] = None
    if online["warm_start"] is not None:
        from svmtrain.solvers.online import StateError, read_state
        try:
            arrays = read_state(online["warm_start"])
        except StateError as e:
            raise InputError(f"{online['warm_start']}: {e}") from None
        state_mode = str(arrays["mode"])
        if state_mode not in ("n-slack", "1-slack", "online-dual"):
            raise InputError(f"{online['warm_start']}: the state is from the {state_mode} mode; "
                             f"the n-slack, 1-slack and online-dual modes resume")
        if explicit_mode and state_mode != mode:
            raise click.BadParameter(f"{online['warm_start']} is a {state_mode} state, and --mode "
                                     f"is {mode}", param_hint="--warm-start")
        mode = state_mode
        if state_mode == "online-dual":   # an n-slack state is the controls' (svmtrain.state)
            online["_state"] = arrays
    if mode != "online-dual":
        for name, flag in _ONLINE_ONLY.items():
            if ctx.get_parameter_source(name) != ParameterSource.DEFAULT:
                raise click.BadParameter(f"applies to --mode online-dual, not {mode}", param_hint=flag)
        return mode
    if train_file == "-":
        if online["passes"] > 1:
            raise click.BadParameter("standard input can be read only once: one pass",
                                     param_hint="--passes")
        if online["verify"]:
            raise click.BadParameter("standard input can be read only once: verify with "
                                     "`svmtrain verify-bound` on a copy of the data",
                                     param_hint="--verify")
    if online["labels"] is not None and task not in ("binary", "multiclass", "sequence"):
        raise click.BadParameter(f"the {task} task has no labels", param_hint="--labels")
    if online["labels"] is not None and task == "binary" and len(online["labels"]) != 2:
        raise click.BadParameter("the binary task has 2 labels", param_hint="--labels")
    return mode


class StreamedControlledTask(ControlledTask):
    """The controls' ControlledTask over a streamed file: it also prepares every block the solver
    reads (costs, feature scaling: the controls' BlockPreparer, once per pass from the file's start)
    and lays the prior out for the geometry, which grows as features arrive."""

    def __init__(self, task, controls, original_bias, path, prior_path):
        super().__init__(task, controls, original_bias)
        self.path, self.prior_path = path, prior_path

    def prepare_pass(self, blocks):
        """The pass's blocks with the controls applied, checked against the weights file."""
        preparer = BlockPreparer(self.c, self.path)
        for block in blocks:
            yield preparer(block, self.task.grouping)
        preparer.finish()

    def geometry_changed(self, geometry):
        """w0 (--prior) in the layout of the current features."""
        if self.c.prior_model is not None:
            from svmtrain.cli.controls import _prior_weights
            self.c.prior = _prior_weights(self.c.prior_model, self.task, geometry, self.prior_path)
            self._layout = None
        try:
            self.layout(geometry)
        except ControlError as e:
            raise InputError(str(e)) from None


def _controlled(task, controls, c, path, bias, counts):
    """The task the solver sees: the plain one, or StreamedControlledTask when a control is on."""
    from svmtrain.controls import resolve_class_weights
    try:
        weights = resolve_class_weights(c["class_weight_pairs"], False, task, None, path)
    except ControlError as e:
        raise InputError(str(e)) from None
    if counts:          # --class-weight balanced: n / (k n_c), from the label pass's counts
        weights = weights or {float(x): 1.0 for x in task.labels}
        n, k = sum(counts.values()), len(counts)
        for label, n_c in counts.items():
            weights[float(label)] *= n / (k * n_c)
    controls.class_weights = weights
    if not (weights or controls.example_weights is not None or controls.reparametrized
            or controls.prior_model is not None or controls.nonneg):
        return task
    return StreamedControlledTask(task, controls, bias, path, c["prior_model"])


def train_online(train_file, model_file, task_name, C, epsilon, bias, seed, max_epochs, options,
                 shrinking, trace_file, model_format, zero_based, quiet, online, control_options=None):
    from svmtrain.model import Model, write_liblinear, write_model
    from svmtrain.solvers import SOLVERS
    from svmtrain.solvers.online import (OnlineOptions, StateError, load_state, problem_fields,
                                         save_state, streaming_task)
    from svmtrain.solvers.online import steady_malloc
    from svmtrain.tasks import task_class

    if model_format == "liblinear" and zero_based:
        raise InputError("--format liblinear cannot record zero-based feature indices")
    if model_format == "liblinear" and task_name != "binary":
        raise InputError(f"--format liblinear is for the binary task (LIBLINEAR's format has no "
                         f"place for a {task_name} model's certificate); use --format svmtrain")
    started = time.perf_counter()
    steady_malloc()                    # memory bounded by the cache, not by the stream's length
    arrays = online["_state"]
    labels = online["labels"]
    if labels is None and arrays is not None and "problem_labels" in arrays and arrays["problem_labels"].size:
        labels = arrays["problem_labels"].tolist()     # the state's labels: no reading pass
    c = dict(control_options or {}, warm_start_file=None, save_state_file=None)  # states: ours
    controls = read_controls(task_name, zero_based, c) if control_options else Controls()
    counts = {} if c.get("class_weight") == "balanced" else None
    with _bar(train_file, quiet, "labels") as progress:
        task = streaming_task(task_class(task_name), train_file, options, labels, zero_based, progress,
                              counts=counts)
    solver_task = _controlled(task, controls, c, train_file, bias, counts) if control_options else task
    limit = online["cache_limit"]
    opt = OnlineOptions(C=C, bias=controls.hat_bias(bias), epsilon=epsilon, seed=seed, passes=online["passes"],
                        chunk=online["chunk"], keep_rounds=online["keep_inactive"],
                        cache_limit=limit[1] if limit and limit[0] == "constraints" else None,
                        cache_limit_bytes=limit[1] if limit and limit[0] == "bytes" else None,
                        max_epochs=max_epochs, shrinking=shrinking, zero_based=zero_based,
                        checkpoint_every=online["checkpoint_every"],
                        shuffle_window=online["shuffle_window"],
                        window_looks=online["window_looks"], window_rows=online["window_rows"],
                        admit_margin=online["admit_margin"])
    fields = problem_fields(task_name, task, opt)
    fields["controls"] = json.dumps(controls.model_fields(), sort_keys=True, default=str)
    if arrays is not None:
        try:
            arrays = load_state(arrays, fields)
        except StateError as e:
            raise InputError(f"{online['warm_start']}: cannot resume: {e}") from None
    # by default certify with one more pass, where that pass streams too: not from standard input
    # (read once), nor for ranking and constraints, whose primal needs the whole file in memory
    verify = online["verify"] if online["verify"] is not None else (
        train_file != "-" and task.grouping != "whole")
    state_path = online["save_state"] or f"{model_file}.state.npz"
    try:
        solver = SOLVERS["online-dual"](solver_task, train_file, opt, arrays)
    except StateError as e:
        raise InputError(f"{online['warm_start']}: cannot resume: {e}") from None

    def model_w(result):
        """The model's w: the solver's w_hat mapped back (w0 + R^-1 w_hat) under --prior,
        --reg-scale, --bias-reg; the solver's w otherwise."""
        if solver_task is task or not controls.reparametrized:
            return result.w
        return solver_task.to_model(result.w, result.geometry)

    def write(result, primal, examples):
        model = Model(task=task_name, mode="online-dual", C=C, bias=bias,
                      n_features=result.geometry.n_cols, index_base=0 if zero_based else 1,
                      w=task.model_weights(model_w(result), result.geometry), epsilon=epsilon,
                      dual=result.dual, primal=max(primal, result.dual),
                      relative_gap=_rel(max(primal, result.dual), result.dual), examples=examples,
                      seed=seed, epochs=result.epochs, **task.model_fields(),
                      **controls.model_fields())
        (write_liblinear if model_format == "liblinear" else write_model)(model, model_file)

    wrote_checkpoint = []

    def checkpoint(result):
        write(result, result.upper, result.examples)
        save_state(state_path, result.state, fields)
        wrote_checkpoint.append(True)

    trace = open(trace_file, "w") if trace_file else None
    if trace:
        trace.write("# pass examples cache lower upper relative_gap seconds solves epochs bytes\n")
    bars = []

    def on_chunk(r):
        if trace:
            trace.write(f"{r.pass_} {r.examples} {r.cache} {r.lower!r} {r.upper!r} "
                        f"{_rel(r.upper, r.lower)!r} {r.seconds:.6f} {r.solves} {r.epochs} {r.nbytes}\n")
            trace.flush()
        if bars and bars[-1] is not None:
            bars[-1].set_postfix_str(f"cache {r.cache}, gap {_rel(r.upper, r.lower):.1e}", refresh=False)

    @contextlib.contextmanager
    def pass_bar(p):
        with _bar(train_file, quiet, f"pass {p + 1}/{opt.passes}", keep=bars) as progress:
            yield progress

    primal = examples = None
    try:
        with interrupt.watch():
            result = solver.run(pass_bar, on_chunk, checkpoint)
            if verify and not result.interrupted:
                w_priced = result.w
                if solver_task is not task and controls.reparametrized:
                    # price the w the model will hold (w_hat rebuilt from it, as verify-bound will)
                    w_model = task.solver_weights(task.model_weights(model_w(result), result.geometry))
                    w_priced = solver_task.to_hat(w_model, result.geometry)
                primal, examples = _verify_pass(solver_task, w_priced, result.geometry, C,
                                                train_file, zero_based, quiet)
    finally:
        if trace:
            trace.close()
    interrupted = result.interrupted or interrupt.requested()
    if interrupted or primal is None:
        primal, examples = (result.upper, result.examples)
    certified = not interrupted and (verify or result.certified)
    write(result, primal, examples)
    if interrupted:
        save_state(state_path, result.state, fields)
        click.echo(f"svmtrain: interrupted ({signal.Signals(interrupt.signal_received()).name}) in "
                   f"pass {result.passes + 1}: wrote {model_file} and the resume state {state_path} "
                   f"(continue with --warm-start {state_path})", err=True)
        sys.exit(interrupt.exit_status())
    if online["save_state"]:
        save_state(state_path, result.state, fields)
    elif (wrote_checkpoint or online["warm_start"] == state_path) and os.path.exists(state_path):
        os.remove(state_path)          # a checkpoint superseded by the finished model
    rel = _rel(max(primal, result.dual), result.dual)
    if not quiet:
        how = ("certified by a pass over the data" if verify else
               "certified: the last pass added no constraint" if result.certified else
               "of the cached problem, NOT certified: run svmtrain verify-bound")
        click.echo(f"svmtrain: {task_name} online-dual, {examples} {task.examples_are}, "
                   f"{result.geometry.n_cols} features: {_n(result.passes, 'pass', 'passes')}, {result.solves} "
                   f"re-optimisations, {result.epochs} epochs, {result.cache} constraints cached, "
                   f"{time.perf_counter() - started:.3g} s, primal {primal:.10g}, dual "
                   f"{result.dual:.10g}, relative gap {rel:.3g} ({how})", err=True)
    if certified and rel > epsilon and not quiet:
        click.echo(f"svmtrain: warning: relative gap {rel:.3g} is above epsilon {epsilon:g} after "
                   f"{_n(result.passes, 'pass', 'passes')}: more --passes close it", err=True)


def _verify_pass(task, w, geometry, C, path, zero_based, quiet):
    """verify-bound's pass (svmtrain.objective): the true P(w) and the example count; None, None
    when a signal stops it. A controlled task prices its own problem (its blocks prepared)."""
    from svmtrain import data, objective
    acc = objective.PrimalAccumulator(task, w, geometry, C, path)
    with _bar(path, quiet, "verifying") as progress:
        blocks = data.iter_blocks(path, zero_based=zero_based, progress=progress)
        prepare = getattr(task, "prepare_pass", None)
        if prepare is not None:
            blocks = prepare(blocks)
        for block in data.whole_examples(blocks, task.grouping):
            acc.add(block)
            if interrupt.requested():
                return None, None
    value = acc.value()
    return value.primal, value.examples


def _n(k, one, many):
    return f"{k} {one if k == 1 else many}"


def _rel(primal, dual):
    from svmtrain.engine import relative_gap
    return relative_gap(primal, dual)


@contextlib.contextmanager
def _bar(path, quiet, desc, keep=None):
    """A tqdm bar over the bytes read, when stderr is a terminal; yields the reader's callback."""
    if not show_progress(quiet):
        if keep is not None:
            keep.append(None)
        yield None
        return
    from tqdm import tqdm
    total = None
    if path != "-":
        with contextlib.suppress(OSError):
            with open(path, "rb") as f:
                compressed = f.read(6)[:2] in (b"\x1f\x8b", b"BZ", b"\xfd7")
            total = None if compressed else os.path.getsize(path)
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, leave=False, file=sys.stderr) as bar:
        if keep is not None:
            keep.append(bar)
        yield bar.update
