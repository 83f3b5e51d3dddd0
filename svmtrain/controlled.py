"""A training run with its controls (svmtrain.controls does the mathematics): the control files
read before the data, the wrapped task the solvers see, and the model's w and certificate after.

Shared by every linear mode: `ControlledRun` for the in-memory modes, `StreamedControlledTask`
for online-dual, which prepares each streamed block the same way.
"""

import os

import numpy as np

from svmtrain.controls import BlockPreparer, ControlError, ControlledTask, Controls
from svmtrain.errors import InputError


def read_controls(task_name, zero_based, c):
    """The control files, read and checked before the data (errors name the file and line)."""
    from svmtrain.controls import parse_nonneg, read_example_weights, read_reg_scale
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


def prior_weights(prior, task, geometry, path):
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
        from svmtrain.controls import resolve_class_weights
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
            controls.prior = prior_weights(controls.prior_model, task,
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

    def finish(self, result, warn):
        """The solver's w_hat back to the model's w; the certificate priced at the stored w."""
        for warning in (self.warning, getattr(self.task, "warning", None)):
            if warning:
                warn(warning)
        if not self.active or not self.controls.reparametrized:
            return
        from svmtrain import objective
        from svmtrain.objective import relative_gap
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
            self.c.prior = prior_weights(self.c.prior_model, self.task, geometry, self.prior_path)
            self._layout = None
        try:
            self.layout(geometry)
        except ControlError as e:
            raise InputError(str(e)) from None


def streamed_task(task, controls, c, path, bias, counts):
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
