"""Training controls (issue 7): class and example weights, bias regularization, non-negativity,
flexible regularization (prior mean, per-feature scale). Ramanan (paper 001) sec. 5, sec. 6 and
Appendix A.1, re-derived.

Costs. Every task's C_i is C times the example's cost (`Task.costs`: the `cost:` token); the data
path multiplies that cost, in place, by the example's line in `--weights FILE` and by its class
weight (`-w LABEL WEIGHT`, or `--class-weight balanced`: n / (k n_c), scikit-learn's rule, n rows,
k classes, n_c rows of class c). Slack rescaling of A.1 (x_ij and l_ij scaled by C_i) is the same
problem as this bound C_i on the group's alphas.

Flexible regularization (eq. 33-35). The objective is

    P(w) = 1/2 sum_k r_k (w_k - w0_k)^2 + sum_i C_i max(0, max_j (l_ij - w . x_ij))

with r_k from `--reg-scale` (feature k's line; 1 elsewhere), `--bias-reg FACTOR` (r of every bias
weight) and w0 from `--prior MODEL` (0 elsewhere). With R = diag(sqrt(r)) and the substitution
w_hat = R (w - w0), x_hat = R^-1 x, l_hat = l - w0 . x it is the plain problem in w_hat:
1/2 ||w_hat||^2 and w_hat . x_hat = (w - w0) . x. The data path scales the feature values in place
(x_hat_j = x_j / sqrt(r_j), the bias value B / sqrt(r_bias)): no copy. The margins are shifted
through eq. 35, w0 . x = (R w0) . x_hat, so the tasks' oracles, run on x_hat with w_hat + R w0, see
the original scores w . x. The model stores w = w0 + R^-1 w_hat and the (r, w0) it was trained
with; verify-bound rebuilds w_hat from them and prices the same objective by the same code.

Non-negativity (sec. 5). With w_k >= 0 for k in N the Lagrangian gains -beta . w, beta >= 0, so
w = v + beta with v = sum a_c x_c; maximising the dual over beta for fixed alpha gives
beta_k = max(0, -v_k), i.e. w_k = max(v_k, 0), and the dual value
D(a) = -1/2 ||w||^2 + sum l a  (beta_k w_k = 0 and beta . lb = 0 for the bound 0): the certificate
formula is unchanged with the clipped w. The engine (pyx/_engine.pyx) alternates a coordinate step
with beta fixed and beta's exact step on the columns that moved. In the reparametrized problem the
bound on w_hat_k is -sqrt(r_k) w0_k: it stays 0 when the prior is 0 on the constrained weights,
which is required.
"""

from typing import Optional

import numpy as np

from svmtrain.data import MAX_FEATURES, DataError
from svmtrain.records import record
from svmtrain.tasks.base import LabelledTask, format_label


class ControlError(ValueError):
    """A control that cannot apply to this task or data (an option error: exit 2)."""


# -- reading the control files -------------------------------------------------------------------

def _numbers_file(path):
    """Lines of a small text file (opened here so that errors name it)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(path, None, f"cannot read: {e.strerror or e}") from None
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(path, raw.count(b"\n", 0, e.start) + 1, "not a text file") from None


def _positive_float(tok, path, line, what):
    try:
        x = float(tok)
    except ValueError:
        raise DataError(path, line, f"{what} {tok[:40]!r} is not a number") from None
    if not (x > 0 and np.isfinite(x)):
        raise DataError(path, line, f"{what} {tok[:40]} must be a positive finite number")
    return x


def read_example_weights(path):
    """LIBLINEAR's weights file: one positive number per line, line i for example i."""
    values = []
    for n, text in enumerate(_numbers_file(path), 1):
        tok = text.split()
        if len(tok) != 1:
            raise DataError(path, n, "expected one weight per line" if tok else "empty line")
        values.append(_positive_float(tok[0], path, n, "weight"))
    if not values:
        raise DataError(path, None, "no weights")
    return np.asarray(values)


def weights_crc32(weights):
    """The fingerprint a model keeps of its example weights (their float64 values)."""
    import zlib
    return zlib.crc32(np.ascontiguousarray(weights, dtype=np.float64).tobytes())


def read_reg_scale(path, zero_based=False):
    """`index:value` per line: feature index (as in the data files) -> r > 0. 0-based dict."""
    base = 0 if zero_based else 1
    scale = {}
    for n, text in enumerate(_numbers_file(path), 1):
        tok = text.split("#", 1)[0].split()
        if not tok:
            continue
        if len(tok) != 1 or ":" not in tok[0]:
            raise DataError(path, n, f"expected 'index:value', found {text.strip()[:40]!r}")
        idx, val = tok[0].split(":", 1)
        if not (idx.isascii() and idx.isdigit()) or int(idx) < base:
            raise DataError(path, n, f"bad feature index {idx[:20]!r} (indices start at {base})")
        j = int(idx) - base
        if j >= MAX_FEATURES:
            raise DataError(path, n, f"feature index {idx[:30]} is above the largest a model can "
                                     f"have, {MAX_FEATURES - 1 + base}")
        if j in scale:
            raise DataError(path, n, f"feature {idx} given twice")
        scale[j] = _positive_float(val, path, n, "scale")
    return scale


def parse_nonneg(spec, zero_based=False):
    """`1-10,15`, `all` (every feature weight) and `bias`, comma-separated, as data-file indices.
    Returns (ranges as 0-based [lo, hi] pairs, with_all, with_bias); ValueError when malformed.
    zero_based=None checks the syntax only (indices from 0 accepted, nothing said of the base)."""
    syntax_only = zero_based is None
    base = 0 if zero_based or syntax_only else 1
    ranges, every, bias = [], False, False
    for part in spec.split(","):
        part = part.strip()
        if part == "all":
            every = True
        elif part == "bias":
            bias = True
        else:
            lo, _, hi = part.partition("-")
            hi = hi or lo
            if not (lo.isascii() and hi.isascii() and lo.isdigit() and hi.isdigit()) \
                    or int(lo) < base or int(hi) < int(lo):
                where = "" if syntax_only else f", indices from {base}"
                raise ValueError(f"bad range {part!r}: expected N, N-M (N <= M{where}), 'all' or "
                                 f"'bias'")
            ranges.append((int(lo) - base, int(hi) - base))
    return ranges, every, bias


# -- what a model records ------------------------------------------------------------------------

@record
class Controls:
    """The controls of one training run, as the model file records them."""

    class_weights: Optional[dict] = None     # label -> weight
    example_weights: Optional[np.ndarray] = None
    weights_path: Optional[str] = None
    bias_reg: Optional[float] = None
    nonneg: Optional[str] = None             # the spec as given
    reg_scale: Optional[dict] = None         # 0-based feature -> r
    prior: Optional[np.ndarray] = None       # w0 in the model's layout (shape of model.w)
    zero_based: bool = False
    prior_model: object = None               # the --prior Model, until w0 is laid out
    state: object = None                     # the --warm-start State (svmtrain.state)

    @property
    def reparametrized(self):
        return self.bias_reg is not None or bool(self.reg_scale) or self.prior is not None

    def model_fields(self):
        return {"class_weights": self.class_weights, "example_weights": self.weights_path,
                "example_weights_crc32": (None if self.example_weights is None
                                          else weights_crc32(self.example_weights)),
                "bias_reg": self.bias_reg, "nonneg": self.nonneg,
                "reg_scale": self.reg_scale or None,
                "prior": None if self.prior is None else _nonzeros(self.prior)}

    def hat_bias(self, bias):
        """The bias feature's value in the reparametrized data: B / sqrt(r_bias)."""
        if bias is None or self.bias_reg is None:
            return bias
        return bias / np.sqrt(self.bias_reg)


def _nonzeros(w):
    """A dense w0 as the model file's table {flat index: value} (bit patterns: -0.0 is kept)."""
    flat = np.ascontiguousarray(w, dtype=np.float64).ravel()
    nz = np.flatnonzero(flat.view(np.int64))
    return dict(zip(nz.tolist(), flat[nz].tolist())) or None


def resolve_class_weights(pairs, balanced, task, block, path):
    """label -> weight from `-w` pairs and `--class-weight balanced` (the pairs multiply)."""
    if not pairs and not balanced:
        return None
    labels = getattr(task, "labels", None)
    if task.name not in ("binary", "multiclass"):
        raise ControlError(f"class weights apply to the binary and multiclass tasks, not to {task.name}")
    labels = [float(x) for x in labels]
    weights = {x: 1.0 for x in labels}
    if balanced:
        values, counts = np.unique(block.target, return_counts=True)
        n, k = block.n_rows, len(values)
        for v, c in zip(values.tolist(), counts.tolist()):
            weights[float(v)] = n / (k * c)
    for label, weight in pairs:
        if float(label) not in weights:
            raise ControlError(f"-w {format_label(label)}: not one of the training labels "
                               f"({', '.join(format_label(x) for x in labels)})")
        weights[float(label)] *= float(weight)
    return weights


# -- the data path -------------------------------------------------------------------------------

class BlockPreparer:
    """Applies the controls to blocks as they come from the reader, in file order, in place:
    costs times weights, feature values divided by sqrt(r)."""

    def __init__(self, controls, data_path):
        self.c = controls
        self.data_path = data_path
        self.rows = 0
        self.inv_sqrt = None
        if controls.reg_scale:
            top = max(controls.reg_scale) + 1
            self.inv_sqrt = np.ones(top)
            for j, r in controls.reg_scale.items():
                self.inv_sqrt[j] = 1.0 / np.sqrt(r)

    def __call__(self, block, grouping="row"):
        c = self.c
        n = block.n_rows
        if c.example_weights is not None:
            if self.rows + n > len(c.example_weights):
                missing = int(block.line[len(c.example_weights) - self.rows])
                raise DataError(c.weights_path, len(c.example_weights) + 1,
                                f"has {len(c.example_weights)} weights but {self.data_path} has "
                                f"more examples (line {missing} has none)")
            w = c.example_weights[self.rows:self.rows + n]
            if grouping != "row":
                self._check_groups(block, w)
            block.cost *= w
        if c.class_weights:
            table = np.array(sorted(c.class_weights.items()))
            k = np.minimum(np.searchsorted(table[:, 0], block.target), len(table) - 1)
            known = table[k, 0] == block.target
            block.cost *= np.where(known, table[k, 1], 1.0)   # unknown labels: the task reports them
        if self.inv_sqrt is not None and block.nnz:
            idx = block.indices
            inside = idx < len(self.inv_sqrt)
            block.data[inside] *= self.inv_sqrt[idx[inside]]
        self.rows += n
        return block

    def _check_groups(self, block, w):
        """A query's / sentence's lines share one weight (its slack has one cost)."""
        qid = block.qid
        if not len(qid):
            return
        _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
        bad = np.flatnonzero(w != w[first][inverse])
        if len(bad):
            i = int(bad[0])
            raise DataError(self.c.weights_path, self.rows + i + 1,
                            f"weight {w[i]:g} differs from the weight {w[first[inverse[i]]]:g} of "
                            f"the first line of qid {int(qid[i])} ({self.data_path} line "
                            f"{int(block.line[i])}): one query or sequence, one weight")

    def finish(self):
        """After the last block: the weights file and the data have as many lines."""
        c = self.c
        if c.example_weights is not None and self.rows != len(c.example_weights):
            raise DataError(c.weights_path, self.rows + 1,
                            f"has {len(c.example_weights)} weights, {self.data_path} has "
                            f"{self.rows} examples")


# -- the solvers' view ---------------------------------------------------------------------------

def column_of_weights(task, geometry):
    """For each entry of the model's (flat) w: its feature column, n_cols for a bias weight, -1
    for weights on no feature (sequence transitions)."""
    W = geometry.width
    blocks = task.K if isinstance(task, LabelledTask) else 1
    n_w = task.n_weights(geometry)
    pos = np.arange(n_w)
    return np.where(pos < blocks * W, pos % max(W, 1), -1)   # (W is 0 before a stream shows a column)


class ControlledTask:
    """A task with the controls on (the solvers see the reparametrized problem of eq. 34 and the
    non-negativity mask); everything else is the wrapped task's."""

    def __init__(self, task, controls, original_bias):
        self.task = task
        self.c = controls
        self.original_bias = original_bias
        self._layout = None
        self.hot_start = None         # listed constraints -> their hot start (alpha0, shrink0),
                                      # from a --warm-start state (svmtrain.state.State.hot_start)
        self.state = None             # a --warm-start state (svmtrain.state.State), for a cache
        self.C = None                 # the C it hot-starts at
        self.warning = None           # what the user should know of the hot start

    def __getattr__(self, name):
        return getattr(self.task, name)

    def layout(self, geometry):
        """(sqrt_r, shift, nonneg) in the solvers' layout: sqrt(r) per weight, R w0, the mask."""
        key = (geometry.n_cols, geometry.bias is not None)
        if self._layout is not None and self._layout[0] == key:
            return self._layout[1]
        task, c = self.task, self.c
        col = column_of_weights(task, geometry)
        r = np.ones(len(col))
        if c.reg_scale:
            for j, value in c.reg_scale.items():
                if j < geometry.n_cols:
                    r[col == j] = value
        if c.bias_reg is not None and geometry.bias is not None:
            r[col == geometry.n_cols] = c.bias_reg
        to_solver = task.solver_weights
        sqrt_r = to_solver(np.sqrt(r))
        w0 = np.zeros(len(col)) if c.prior is None else to_solver(c.prior)
        shift = sqrt_r * w0
        mask = None
        if c.nonneg:
            ranges, every, bias = parse_nonneg(c.nonneg, c.zero_based)
            m = np.zeros(len(col), bool)
            if every:
                m |= (col >= 0) & (col < geometry.n_cols)
            for lo, hi in ranges:
                m |= (col >= lo) & (col <= hi) & (col < geometry.n_cols)
            if bias and geometry.bias is not None:
                m |= col == geometry.n_cols
            mask = to_solver(m.astype(np.float64)) != 0
            if np.any(mask & (w0 != 0)):
                raise ControlError("--nonneg with --prior: the prior must be 0 on the constrained "
                                   "weights (the bound on w - w0 would move)")
        layout = (sqrt_r, shift if np.any(shift) else None, mask)
        self._layout = (key, layout)
        return layout

    def to_model(self, w_hat, geometry):
        """w = w0 + R^-1 w_hat, in the solvers' layout."""
        sqrt_r, _, _ = self.layout(geometry)
        w0 = 0.0 if self.c.prior is None else self.task.solver_weights(self.c.prior)
        return w0 + w_hat / sqrt_r

    def to_hat(self, w, geometry):
        """w_hat = R (w - w0), in the solvers' layout."""
        sqrt_r, _, _ = self.layout(geometry)
        w0 = 0.0 if self.c.prior is None else self.task.solver_weights(self.c.prior)
        return sqrt_r * (w - w0)

    def _shifted(self, w, geometry):
        shift = self.layout(geometry)[1]
        return w if shift is None else w + shift

    def _shift_margins(self, cons, problem):
        from svmtrain._linear import term_dots
        from svmtrain.tasks.base import Geometry
        shift = self.layout(Geometry(problem.n_cols, problem.bias))[1]
        if shift is None or cons is None or not cons.size:
            return cons
        wx0 = term_dots(problem.indptr, problem.indices, problem.data, problem.n_cols, cons.tptr,
                        cons.term_row, cons.term_scale, cons.term_offset, cons.term_bias, shift,
                        0.0 if problem.bias is None else problem.bias, problem.bias is not None,
                        problem.stride)
        cons.margin = cons.margin - wx0
        return cons

    # the Task methods the solvers and the primal use
    def problem(self, block, path, C, geometry):
        problem = self.task.problem(block, path, C, geometry)
        problem.nonneg = self.layout(geometry)[2]
        return problem

    def all_constraints(self, problem, block):
        cons = self._shift_margins(self.task.all_constraints(problem, block), problem)
        if cons is not None and self.hot_start is not None:
            cons.alpha0, cons.shrink0 = self.hot_start(cons)
        return cons

    def cache_layout(self, geometry):
        """What a state needs to rebuild a cutting-plane cache of this task under these controls
        (svmtrain.state.save_state's cache_layout)."""
        from svmtrain.state import layout_crc
        return {"layout": layout_crc(self.task, self.original_bias, self.c),
                "n_cols": geometry.n_cols, "width": geometry.width,
                "labels": np.asarray(getattr(self.task, "labels", []), np.float64)}

    def start_cache(self, problem, block):
        """The cutting-plane cache a --warm-start state holds, rebuilt over this data with its
        hot start as alpha0; None without one. StateError when it cannot be rebuilt."""
        from svmtrain.engine import ConstraintCache
        from svmtrain.state import StateError
        from svmtrain.tasks.base import Geometry
        st = self.state
        if st is not None and st.cache is None and len(st.alpha):
            self.warning = (f"{st.path}: the state holds listed constraints and this run grows "
                            f"them by cutting planes: it started from scratch")
        if st is None or st.cache is None:
            return None
        geometry = Geometry(problem.n_cols, problem.bias)
        if (self.task.grouping != "row" and st.rows < block.n_rows
                and block.qid[st.rows] == block.qid[st.rows - 1]):
            raise StateError(st.path, f"the data continues the state's last example past its "
                                      f"{st.rows} rows: its cached constraints cover part of it")
        layout = self.cache_layout(geometry)
        if problem.stride != max(len(layout["labels"]), 1):
            raise StateError(st.path, f"the {self.task.name} task's weights are not laid out as "
                                      f"cached constraints need")
        cons = st.start_cache(self.C, block, layout["layout"], geometry.n_cols, geometry.width,
                              layout["labels"])
        store_rows = len(problem.indptr) - 1
        if cons.size and (cons.term_row.max() >= store_rows or st.examples > problem.n_examples):
            raise StateError(st.path, "its cached constraints name rows or examples this data "
                                      "does not have")
        try:      # the engine checks every term against w's layout; its projection is the start
            cons.alpha0 = ConstraintCache.from_problem(problem, cons).engine(cons.alpha0).alpha
        except ValueError as e:
            raise StateError(st.path, f"its cached constraints do not fit this problem ({e})") \
                from None
        return cons

    def worst_offenders(self, w, problem, block):
        from svmtrain.tasks.base import Geometry
        H, cons = self.task.worst_offenders(
            self._shifted(w, Geometry(problem.n_cols, problem.bias)), problem, block)
        return H, self._shift_margins(cons, problem)

    def aggregated_offender(self, w, problem, block):
        """1-slack's plane of the wrapped task, its margin shifted as every constraint's (eq. 35:
        the plane is a sum of constraints, C_i x_i with margins C_i l_i)."""
        from svmtrain.tasks.base import Geometry
        found = self.task.aggregated_offender(
            self._shifted(w, Geometry(problem.n_cols, problem.bias)), problem, block)
        if found is None:
            return None
        loss, plane = found
        return loss, self._shift_margins(plane, problem)

    def violations(self, w, block, path, geometry):
        return self.task.violations(self._shifted(w, geometry), block, path, geometry)

    def costs(self, block, C):
        return self.task.costs(block, C)


# -- verify-bound --------------------------------------------------------------------------------

def model_controls(model, weights_path=None):
    """The controls a model was trained with (None when it records none)."""
    if not any(getattr(model, k, None) is not None for k in
               ("class_weights", "example_weights", "bias_reg", "nonneg", "reg_scale", "prior")):
        return None
    prior = None
    if model.prior is not None:
        prior = np.zeros(np.size(model.w))
        for j, v in model.prior.items():
            prior[j] = v
        prior = prior.reshape(np.shape(model.w))
    if model.example_weights is None:
        weights_path = None
    elif weights_path is None:
        weights_path = model.example_weights
    weights = None if weights_path is None else read_example_weights(weights_path)
    if weights is not None and model.example_weights_crc32 is not None \
            and weights_crc32(weights) != model.example_weights_crc32:
        raise DataError(weights_path, None, "these are not the example weights the model was "
                                            "trained with (their checksum differs)")
    return Controls(class_weights=model.class_weights, example_weights=weights,
                    weights_path=weights_path, bias_reg=model.bias_reg,
                    nonneg=model.nonneg, reg_scale=model.reg_scale, prior=prior,
                    zero_based=model.index_base == 0)


def certified_objective(model, task, data_path, weights_path=None):
    """(task, w, geometry, prepare) for pricing the objective a model was trained to: the plain
    task and w, or the controlled task, w_hat = R (w - w0) and the data path's preparer. Raises
    ControlError when the model breaks its own non-negativity constraints."""
    from svmtrain.tasks.base import Geometry
    w = task.solver_weights(model.w)
    controls = model_controls(model, weights_path)
    if controls is None:
        return task, w, Geometry(model.n_features, model.bias), None
    geometry = Geometry(model.n_features, controls.hat_bias(model.bias))
    ctask = ControlledTask(task, controls, model.bias)
    _, _, mask = ctask.layout(geometry)
    if mask is not None and np.any(w[mask] < 0):
        raise ControlError(f"the model has negative weights where it records nonneg "
                           f"{controls.nonneg}: it is not a solution of its own problem")
    return ctask, ctask.to_hat(w, geometry), geometry, BlockPreparer(controls, data_path)
