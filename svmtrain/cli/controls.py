"""The training-control options of `svmtrain train` (svmtrain.controls does the work)."""

import math
import os

import click
import numpy as np

from svmtrain.cli.options import InputError, positive


def _positive_pairs(ctx, param, value):
    for label, weight in value:
        if not (math.isfinite(label) and weight > 0 and math.isfinite(weight)):
            raise click.BadParameter(f"-w {label:g} {weight:g}: the weight must be a positive "
                                     f"number and the label finite")
    return value


def _state_path(ctx, param, value):
    """--warm-start MODEL_FILE means the state left next to it (MODEL_FILE.state.npz)."""
    import zipfile
    beside = f"{value}.state.npz" if value is not None else None
    if beside and os.path.isfile(beside) and not (os.path.isfile(value) and zipfile.is_zipfile(value)):
        return beside
    return value


def _nonneg_spec(ctx, param, value):
    """The syntax here; the index base (--zero-based or not) is checked in read_controls."""
    if value is not None:
        from svmtrain.controls import parse_nonneg
        try:
            parse_nonneg(value, zero_based=None)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return value


_OPTIONS = [
    click.option("-w", "class_weight_pairs", type=(float, float), multiple=True,
                 metavar="LABEL WEIGHT", callback=_positive_pairs,
                 help="Class weight (LIBLINEAR's -wi; repeatable): the C of LABEL's examples is "
                      "WEIGHT * C. Binary and multiclass."),
    click.option("--class-weight", "class_weight", type=click.Choice(("balanced",)), default=None,
                 help="balanced: class c's weight is n / (k n_c) (n examples, k classes, n_c in "
                      "class c; scikit-learn's rule); -w weights multiply it."),
    click.option("--weights", "weights_file", type=click.Path(dir_okay=False), default=None,
                 help="Example weights, one positive number per line for each example's line "
                      "(LIBLINEAR's weights file): C_i = weight_i * C, times any cost: token. "
                      "Ranking and sequence: the lines of a query / sentence must agree."),
    click.option("--bias-reg", "bias_reg", type=float, default=None, callback=positive("the factor"),
                 metavar="FACTOR",
                 help="With -B: regularize the bias weights by FACTOR * 1/2 b^2 instead of 1/2 b^2 "
                      "(Ramanan A.1 and sec. 6). FACTOR -> 0 tends to an unregularized bias, but "
                      "the rescaled bias feature B/sqrt(FACTOR) grows and convergence slows."),
    click.option("--nonneg", "nonneg", type=str, default=None, metavar="SPEC",
                 callback=_nonneg_spec,
                 help="Constrain weights to be >= 0 (Ramanan sec. 5): feature indices and ranges "
                      "as in the data ('1-10,15'), 'all' (every feature) and 'bias'; for "
                      "multiclass and sequence, in every class / tag block."),
    click.option("--prior", "prior_model", type=click.Path(dir_okay=False), default=None,
                 metavar="MODEL",
                 help="Regularize towards MODEL's weights w0: 1/2 |w - w0|^2 (Ramanan sec. 6). "
                      "MODEL must be of the same task (and labels)."),
    click.option("--reg-scale", "reg_scale_file", type=click.Path(dir_okay=False), default=None,
                 metavar="FILE",
                 help="Per-feature regularization: lines 'index:r' give 1/2 r (w_index - w0)^2 "
                      "(r > 0; features not listed: r = 1)."),
    click.option("--save-state", "save_state_file", type=click.Path(dir_okay=False), default=None,
                 metavar="FILE",
                 help="Also write the dual state to FILE (.npz) for --warm-start: n-slack the "
                      "alphas of the listed constraints and the shrinking thresholds, or (cutting "
                      "planes: sequence, multiclass past the listing limit) its cache of "
                      "constraints as terms over the data rows with their alphas; 1-slack its "
                      "planes and their duals; online-dual its resume state."),
    click.option("--warm-start", "warm_start_file", type=click.Path(dir_okay=False), default=None,
                 metavar="STATE", callback=_state_path,
                 help="Hot-start from a --save-state file, whose mode decides the mode: known "
                      "constraints start at their alpha (times C_new/C_old, clipped to the new "
                      "bounds), new examples at 0, and the first epoch sets aside what the old "
                      "run had shrunk; a cutting-plane cache is rebuilt over the same rows (more "
                      "may follow them; labels and options must agree); 1-slack restarts from its "
                      "planes (scaled by C_new/C_old); online-dual resumes where it stopped. A "
                      "model file stands for the MODEL_FILE.state.npz beside it."),
]


def control_options(f):
    for option in reversed(_OPTIONS):
        f = option(f)
    return f


# the dual-state options: the controls' (n-slack) and the online-dual mode's resume state
STATE_OPTIONS = ("save_state_file", "warm_start_file")


def check_control_options(task, bias, model_format, c, mode="n-slack"):
    """Option-level checks (before any file is read)."""
    if (c["class_weight_pairs"] or c["class_weight"]) and task not in ("binary", "multiclass"):
        raise click.BadParameter(f"class weights apply to the binary and multiclass tasks, not to "
                                 f"{task}", param_hint="-w / --class-weight")
    if c["bias_reg"] is not None and bias is None:
        raise click.BadParameter("needs a bias feature (-B VALUE)", param_hint="--bias-reg")
    used = [name for name, key in (("--bias-reg", "bias_reg"), ("--nonneg", "nonneg"),
                                   ("--prior", "prior_model"), ("--reg-scale", "reg_scale_file"),
                                   ("-w", "class_weight_pairs"), ("--class-weight", "class_weight"),
                                   ("--weights", "weights_file"))
            if c[key]]
    if model_format == "liblinear" and used:
        raise click.BadParameter(f"{', '.join(used)}: LIBLINEAR's model format cannot record "
                                 f"them; use --format svmtrain", param_hint="--format")


def read_controls(task_name, zero_based, c):
    """The control files, read and checked before the data (errors name the file and line)."""
    from svmtrain.controls import (Controls, parse_nonneg, read_example_weights, read_reg_scale)
    from svmtrain.model import read_model
    controls = Controls(bias_reg=c["bias_reg"], nonneg=c["nonneg"], zero_based=zero_based)
    if c["nonneg"]:
        try:
            parse_nonneg(c["nonneg"], zero_based)
        except ValueError as e:
            raise InputError(f"--nonneg: {e}") from None
    state = c["save_state_file"]
    if state and not os.path.isdir(os.path.dirname(os.path.abspath(state))):
        raise InputError(f"--save-state {state}: no such directory")
    if c["warm_start_file"]:
        from svmtrain.state import StateError, load_state
        try:
            controls.state = load_state(c["warm_start_file"])
        except StateError as e:
            raise InputError(str(e)) from None
    if c["weights_file"]:
        controls.example_weights = read_example_weights(c["weights_file"])
        controls.weights_path = c["weights_file"]
    if c["reg_scale_file"]:
        controls.reg_scale = read_reg_scale(c["reg_scale_file"], zero_based)
    if c["prior_model"]:
        prior = read_model(c["prior_model"])
        if prior.task != task_name:
            raise InputError(f"{c['prior_model']}: a {prior.task} model cannot be the prior of a "
                             f"{task_name} model")
        controls.prior_model = prior
    return controls


def _prior_weights(prior, task, geometry, path):
    """The prior model's w0 in this model's layout: its columns that this data has (a weight of a
    feature the data lacks stays w0 at the optimum and costs nothing), its bias if both have one."""
    if list(prior.labels) != [float(x) for x in getattr(task, "labels", [])] and prior.labels:
        raise InputError(f"{path}: the prior's labels differ from the training data's")
    if (prior.bias is None) != (geometry.bias is None):
        raise InputError(f"{path}: the prior has {'no ' if prior.bias is None else 'a '}bias "
                         f"feature and this training {'has' if geometry.bias is not None else 'has not'}"
                         f"; give the same -B")
    src = np.asarray(prior.w, dtype=np.float64)
    W_new, W_old = geometry.width, prior.n_weights
    n = min(geometry.n_cols, prior.n_features)
    shape_new = (task.n_weights(geometry),)
    out = np.zeros(shape_new)
    blocks = getattr(task, "K", 1) if src.ndim == 2 or task.name == "sequence" else 1
    flat = src.ravel()
    for k in range(blocks):
        out[k * W_new:k * W_new + n] = flat[k * W_old:k * W_old + n]
        if geometry.bias is not None:
            out[k * W_new + geometry.n_cols] = flat[k * W_old + prior.n_features]
    if task.name == "sequence":          # transitions after the emission blocks
        t = (task.K + 1) * task.K
        out[-t:] = flat[-t:]
    return out.reshape(np.shape(task.model_weights(np.zeros(shape_new), geometry)))


class ControlledRun:
    """One training run with its controls: the wrapped task, the prepared block, the bias value the
    solvers see, and what happens after the solver returns."""

    def __init__(self, task, controls, c, block, path, bias, C):
        from svmtrain.controls import BlockPreparer, ControlError, ControlledTask, resolve_class_weights
        from svmtrain.tasks.base import Geometry
        self.c, self.controls, self.block, self.path, self.C = c, controls, block, path, C
        self.inner = task
        self.warning = None
        try:
            controls.class_weights = resolve_class_weights(c["class_weight_pairs"],
                                                           c["class_weight"] == "balanced",
                                                           task, block, path)
        except ControlError as e:
            raise InputError(str(e)) from None
        if controls.prior_model is not None:
            controls.prior = _prior_weights(controls.prior_model, task,
                                            Geometry(block.n_features, bias), c["prior_model"])
        self.active = bool(controls.class_weights or controls.example_weights is not None
                           or controls.reparametrized or controls.nonneg or c["warm_start_file"]
                           or c["save_state_file"])
        self.solver_bias = controls.hat_bias(bias)
        self.task = task
        if not self.active:
            return
        preparer = BlockPreparer(controls, path)
        preparer(block, task.grouping)
        preparer.finish()
        self.task = ControlledTask(task, controls, bias)
        try:
            self.task.layout(Geometry(block.n_features, self.solver_bias))
        except ControlError as e:
            raise InputError(str(e)) from None
        if controls.state is not None:
            from svmtrain.state import StateError
            try:
                self.warning = controls.state.check(task.name, block)
            except StateError as e:
                raise InputError(str(e)) from None
            self.task.hot_start = controls.state.hot_start(C)
            self.task.state, self.task.C = controls.state, C     # a cutting-plane cache's

    def finish(self, result):
        """The solver's w_hat back to the model's w; the certificate priced at the stored w."""
        for warning in (self.warning, getattr(self.task, "warning", None)):
            if warning:
                click.echo(f"svmtrain: warning: {warning}", err=True)
        if not self.active or not self.controls.reparametrized:
            return
        from svmtrain import objective
        from svmtrain.engine import relative_gap
        geometry = result.geometry
        w = self.task.to_model(result.w, geometry)
        # price the w the model will hold (w_hat rebuilt from it, as verify-bound will)
        w_model = self.inner.solver_weights(self.inner.model_weights(w, geometry))
        priced = objective.primal(self.task, self.task.to_hat(w_model, geometry), geometry, self.C,
                                  [self.block], self.path)
        result.w = w
        result.primal = priced.primal
        result.relative_gap = relative_gap(result.primal, result.dual)

    def save_state(self, result, model_file=None):
        """Write the dual state to --save-state, or (an interrupted run) to MODEL_FILE.state.npz:
        the alphas of the listed constraints, or the cutting-plane cache (its constraints' terms
        and alphas). Returns its path, or None when there is none."""
        path = self.c["save_state_file"] or (f"{model_file}.state.npz" if model_file else None)
        cache = getattr(result, "cache", None)
        if path is None or (result.listed is None and cache is None):
            return None
        from svmtrain.state import save_state
        if result.listed is not None:
            save_state(path, task=self.inner.name, C=self.C, examples=result.examples,
                       block=self.block, constraints=result.listed, alpha=result.alpha,
                       thresholds=result.thresholds)
        else:     # the support only: a constraint at 0 adds nothing to w or D, only work
            support = np.asarray(result.alpha) > 0
            save_state(path, task=self.inner.name, C=self.C, examples=result.examples,
                       block=self.block, constraints=cache.select(support),
                       alpha=np.asarray(result.alpha)[support],
                       cache_layout=self.task.cache_layout(result.geometry))
        return path

