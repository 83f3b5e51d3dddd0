"""The option records of a training run: one frozen record per concern, checked once, here.

LIBLINEAR's `struct parameter` split along the lines svmtrain's options fall into:

- `Problem`: what is solved (task, C, the tolerance epsilon, bias, the task's loss, seed);
- a mode record: how it is solved (`NSlack`, `OneSlack`, `OnlineDual`, `Budgeted`), each with
  its own options and defaults;
- `Controls`: the training controls (costs, weights, regularization, warm start and saved state);
- where it runs: `Local` (threads) or `Dask` (a local cluster, a scheduler or a client).

`check_run` validates the records together (the checks that need two of them) before any data
is read. Every message is the one `svmtrain train` prints; `OptionError.flag` names the command
line flag, so the CLI can say which option was wrong while the library stays free of click.
"""

from __future__ import annotations

import math
from dataclasses import field, fields, replace
from typing import Optional, Union

from svmtrain.errors import OptionError
from svmtrain.records import record

__all__ = ["OptionError", "Problem", "NSlack", "OneSlack", "OnlineDual", "Budgeted", "Controls",
           "Local", "Dask", "TASKS", "MODES", "LINEAR_MODES", "check_run", "mode_name",
           "mode_record"]

TASKS = ("binary", "multiclass", "regression", "ranking", "sequence", "constraints")
MODES = ("n-slack", "1-slack", "online-dual", "budgeted")
LINEAR_MODES = ("n-slack", "1-slack", "online-dual")
BUDGETED_TASKS = ("binary", "multiclass", "regression")
#: 1-slack on Dask: the tasks whose examples are whole inside byte ranges
DASK_ONESLACK_TASKS = ("binary", "multiclass", "regression", "sequence", "ranking")
DASK_NSLACK_TASKS = ("binary", "regression", "multiclass")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_positive(value, name: str, flag: Optional[str] = None, unit: str = ""):
    if value is not None and not (_finite(value) and value > 0):
        raise OptionError(f"{name} must be a positive number{unit}, got {value}", flag)


def check_nonnegative(value, name: str, flag: Optional[str] = None):
    if value is not None and not (_finite(value) and value >= 0):
        raise OptionError(f"{name} must be a non-negative number, got {value}", flag)


def check_epsilon(value, flag: str = "-e"):
    if not (_finite(value) and 0 < value < 1):
        raise OptionError(f"the relative duality gap tolerance must be in (0, 1), got {value}", flag)


def check_bias(value, flag: str = "-B"):
    if value is not None and not _finite(value):
        raise OptionError(f"bias must be finite, got {value}", flag)


def _int_in(value, lo, hi, flag, what):
    if not (isinstance(value, int) and not isinstance(value, bool) and lo <= value
            and (hi is None or value <= hi)):
        span = f"at least {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise OptionError(f"{what} must be an integer {span}, got {value!r}", flag)


def _choice(value, choices, flag, what):
    if value not in choices:
        raise OptionError(f"{what} must be one of {', '.join(choices)}, got {value!r}", flag)


# which task each task-specific option belongs to: given for another task, it is an error, not
# something silently ignored
_TASK_OPTIONS = {"p": ("-p", ("regression",)), "loss": ("--loss", ("multiclass", "sequence")),
                 "rescaling": ("--rescaling", ("multiclass", "sequence"))}


@record(frozen=True)
class Problem:
    """What is solved: P(w) = 1/2 |w|^2 + C sum_i loss_i(w), to a relative duality gap epsilon.

    task: binary, multiclass, regression, ranking, sequence or constraints. bias: the value of a
    constant feature appended to every row (LIBLINEAR's -B; regularized), None for none. p:
    regression's insensitive zone (default 0.1). loss, rescaling: multiclass and sequence (defaults
    zero-one / hamming, margin). seed: the order of coordinate steps (recorded in the model).
    zero_based: the data's feature indices start at 0 (recorded in the model).

    task may also be your own task, a svmtrain.StructuredTask instance (docs/own-task.md);
    latent_rounds: with a task that defines latent(x, y, w), at most this many CCCP rounds
    (latent structural SVM, n-slack).
    """

    task: str = "binary"
    C: float = 1.0
    epsilon: float = 1e-3
    bias: Optional[float] = None
    p: Optional[float] = None
    loss: Optional[str] = None
    rescaling: Optional[str] = None
    seed: int = 1
    zero_based: bool = False
    latent_rounds: int = 0

    def __post_init__(self):
        if self.bias is not None and _finite(self.bias) and self.bias < 0:
            object.__setattr__(self, "bias", None)      # LIBLINEAR: a negative bias means none
        if self.bias is not None and _finite(self.bias):
            object.__setattr__(self, "bias", float(self.bias))
        if _finite(self.C):
            object.__setattr__(self, "C", float(self.C))

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        _int_in(self.latent_rounds, 0, None, "--latent-rounds", "the number of latent rounds")
        if self.user_task:
            for name, flag in (("bias", "-B"), ("p", "-p"), ("loss", "--loss"),
                               ("rescaling", "--rescaling")):
                if getattr(self, name) is not None:
                    raise OptionError("does not apply to a --task-module task", flag)
            if self.zero_based:
                raise OptionError("does not apply to a --task-module task", "--zero-based")
            check_positive(self.C, "C", "-c")
            check_epsilon(self.epsilon)
            _int_in(self.seed, 0, 2**63 - 1, "--seed", "the seed")
            return self
        if self.latent_rounds:
            raise OptionError("latent rounds need a task with latent(x, y, w): --task-module",
                              "--latent-rounds")
        _choice(self.task, TASKS, "--task", "the task")
        check_positive(self.C, "C", "-c")
        check_epsilon(self.epsilon)
        check_bias(self.bias)
        check_nonnegative(self.p, "p", "-p")
        if self.loss is not None:
            _choice(self.loss, ("zero-one", "hamming"), "--loss", "the loss")
        if self.rescaling is not None:
            _choice(self.rescaling, ("margin", "slack"), "--rescaling", "the rescaling")
        _int_in(self.seed, 0, 2**63 - 1, "--seed", "the seed")
        for name, (flag, tasks) in _TASK_OPTIONS.items():
            if getattr(self, name) is not None and self.task not in tasks:
                raise OptionError(f"applies to the {' and '.join(tasks)} task"
                                  f"{'s' if len(tasks) > 1 else ''}, not to {self.task}", flag)
        if self.task == "multiclass" and self.loss == "hamming":
            raise OptionError("the multiclass task's loss is zero-one", "--loss")
        if self.task == "ranking" and self.bias is not None:
            raise OptionError("a bias feature cancels in every ranking pair (x_a - x_b): "
                              "leave it out", "-B")
        return self

    @property
    def user_task(self) -> bool:
        """Whether the task is the user's own (a StructuredTask), not a built-in task name."""
        return not isinstance(self.task, str)

    @property
    def task_name(self) -> str:
        """The task as model files record it: its name, or "user" for the user's own."""
        return "user" if self.user_task else self.task

    def task_options(self) -> dict:
        """The options the task classes read (svmtrain.tasks)."""
        return {"p": 0.1 if self.p is None else self.p, "loss": self.loss,
                "rescaling": self.rescaling or "margin"}


@record(frozen=True)
class NSlack:
    """Dual coordinate descent over every example's constraints, each example with its own slack
    (listed, or grown by cutting planes): Ramanan Alg. 1 inside Joachims Alg. 1/2."""

    max_epochs: int = 1000
    shrinking: bool = True
    name = "n-slack"

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        _int_in(self.max_epochs, 1, None, "--max-epochs", "the epoch limit")
        return self


@record(frozen=True)
class OneSlack:
    """The 1-slack cutting-plane algorithm (Joachims Alg. 3/4): one aggregated plane per oracle
    pass, a small QP over the working set. See `svmtrain train --help` for each option."""

    max_epochs: int = 1000
    shrinking: bool = True
    cache_size: int = 0
    qp_every: int = 1
    drop_inactive: int = 50
    in_out: float = 0.1
    sample_start: int = 10
    merge_duplicates: Optional[bool] = None      # None: merge (on Dask, within each partition)
    name = "1-slack"

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        _int_in(self.max_epochs, 1, None, "--max-epochs", "the epoch limit")
        _int_in(self.cache_size, 0, None, "-f", "the cache size")
        _int_in(self.qp_every, 1, None, "--qp-every", "the QP period")
        _int_in(self.drop_inactive, 0, None, "--drop-inactive", "the inactivity limit")
        if not (_finite(self.in_out) and 0 <= self.in_out <= 1):
            raise OptionError(f"the in-out step must be in [0, 1], got {self.in_out}", "--in-out")
        _int_in(self.sample_start, 0, None, "--sample-start", "the sampling stride")
        return self

    def solver_options(self) -> dict:
        """The keyword arguments of svmtrain.solvers.oneslack.train_oneslack."""
        return {"cache_size": self.cache_size, "qp_every": self.qp_every,
                "inactive": self.drop_inactive, "in_out": self.in_out,
                "sample_start": self.sample_start,
                "merge_duplicates": self.merge_duplicates is not False}


def _online_default(name):
    from svmtrain.solvers import online
    return getattr(online, name)


@record(frozen=True)
class OnlineDual:
    """The out-of-core solver (Ramanan Alg. 2): passes over a stream, a cache of hard
    constraints, explore-or-optimise by the duality gap. None means the solver's default.

    cache_limit: a bound on the cache in constraints (int) or bytes (a string like "512MB");
        "window": on a file of several windows, what the largest window's constraints needed,
        evicting only earlier windows' support vectors; "none": no bound. None (the default):
        "window" for multiclass, sequence and ranking, "none" for binary and regression (one
        row per support vector: the bound saves nothing and costs the one-pass certificate).
    labels: the labels, to spare a reading pass (needed for a stream read once).
    verify: certify with one more pass (default: when the data can be read again and streams).
    """

    passes: int = 1
    chunk: int = 1000
    shuffle_window: Optional[int] = None
    window_rows: Optional[int] = None
    window_looks: Optional[int] = None
    admit_margin: Optional[float] = None
    keep_inactive: Optional[int] = None
    cache_limit: Union[int, str, None] = None
    labels: Optional[tuple] = None
    verify: Optional[bool] = None
    checkpoint_every: Optional[float] = None
    max_epochs: int = 1000
    shrinking: bool = True
    name = "online-dual"

    def __post_init__(self):
        if self.labels is not None and not isinstance(self.labels, tuple):
            object.__setattr__(self, "labels", tuple(self.labels))

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        _int_in(self.passes, 1, None, "--passes", "the number of passes")
        _int_in(self.chunk, 1, None, "--chunk", "the chunk size")
        if self.window_rows is not None:
            _int_in(self.window_rows, 1, None, "--window-rows", "the window's rows")
        for name, flag in (("shuffle_window", "--shuffle-window"), ("window_looks", "--window-looks"),
                           ("keep_inactive", "--keep-inactive")):
            if getattr(self, name) is not None:
                _int_in(getattr(self, name), 0, None, flag, name.replace("_", " "))
        if self.admit_margin is not None and not (_finite(self.admit_margin)
                                                  and 0 <= self.admit_margin <= 100):
            raise OptionError(f"the admission margin must be in [0, 100], got {self.admit_margin}",
                              "--admit-margin")
        self.cache_bound()
        if self.labels is not None:
            if (not self.labels or not all(_finite(x) for x in self.labels)
                    or len(set(self.labels)) != len(self.labels)):
                raise OptionError(f"expected distinct finite numbers, got {list(self.labels)}",
                                  "--labels")
        check_positive(self.checkpoint_every, "the period", "--checkpoint-every", " of seconds")
        _int_in(self.max_epochs, 1, None, "--max-epochs", "the epoch limit")
        return self

    def cache_bound(self):
        """("constraints", N), ("bytes", N) or None, from cache_limit."""
        return parse_cache_limit(self.cache_limit)

    def solver_value(self, name):
        """An option's value, the solver's default when None."""
        value = getattr(self, name)
        defaults = {"shuffle_window": "DEFAULT_SHUFFLE_WINDOW", "window_rows": "DEFAULT_WINDOW_ROWS",
                    "admit_margin": "DEFAULT_ADMIT_MARGIN"}
        return _online_default(defaults[name]) if value is None else value


def parse_cache_limit(value):
    """N constraints (an int, or digits), a size with a unit: 512MB, 2GB, 100KB (powers of 1024),
    "window" (the default, None) or "none". Returns ("constraints", N), ("bytes", N),
    ("window", None) or None (no bound)."""
    import re
    if value is None:
        return ("window", None)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise OptionError(f"the number of cached constraints must be a positive integer, "
                              f"got {value}", "--cache-limit")
        return ("constraints", value)
    word = str(value).strip().lower()
    if word == "window":
        return ("window", None)
    if word == "none":
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kKmMgG][bB])?\s*", str(value))
    if not m:
        raise OptionError(f"expected a number of constraints (e.g. 100000), a size (e.g. 512MB, "
                          f"2GB), 'window' or 'none', got {value!r}", "--cache-limit")
    number, unit = float(m.group(1)), (m.group(2) or "").upper()
    if unit:
        size = int(number * {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[unit])
        if size < 1 << 10:
            raise OptionError(f"a cache of {value} cannot hold a constraint; give at least 1KB",
                              "--cache-limit")
        return ("bytes", size)
    if not number.is_integer() or number < 1:
        raise OptionError(f"the number of cached constraints must be a positive integer, "
                          f"got {value}", "--cache-limit")
    return ("constraints", int(number))


@record(frozen=True)
class Budgeted:
    """An RBF-kernel SVM with at most `budget` support vectors (BSCA, Qaadan et al.; or BSGD).
    None means the solver's default (gamma: 1 / number of features)."""

    gamma: Optional[float] = None
    budget: int = 500
    epochs: int = 5
    optimizer: str = "bsca"
    merge_search: str = "table"
    merge_precision: float = 0.01
    average: Optional[bool] = None
    shrink: Optional[bool] = None
    step_tolerance: Optional[float] = None
    validation: Optional[str] = None
    name = "budgeted"

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        check_positive(self.gamma, "gamma", "-g")
        _int_in(self.budget, 1, 10**7, "--budget", "the budget")
        _int_in(self.epochs, 1, 10**6, "--epochs", "the number of epochs")
        _choice(self.optimizer, ("bsca", "sgd", "bsgd"), "--optimizer", "the optimizer")
        _choice(self.merge_search, ("table", "golden"), "--merge-search", "the merge search")
        if not (_finite(self.merge_precision) and 0 < self.merge_precision < 0.5):
            raise OptionError(f"the merge precision must be in (0, 0.5), got {self.merge_precision}",
                              "--merge-precision")
        if self.step_tolerance is not None and not (_finite(self.step_tolerance)
                                                    and self.step_tolerance >= 0):
            raise OptionError(f"the step tolerance must be a number >= 0, got {self.step_tolerance}",
                              "--step-tolerance")
        if self.solver_name == "bsgd":
            if self.average is not None:
                raise OptionError("applies to --optimizer bsca only", "--average/--no-average")
            for flag, value in (("--shrink/--no-shrink", self.shrink),
                                ("--step-tolerance", self.step_tolerance)):
                if value is not None:
                    raise OptionError("applies to --optimizer bsca only", flag)
        return self

    @property
    def solver_name(self):
        return "bsgd" if self.optimizer in ("sgd", "bsgd") else "bsca"


@record(frozen=True)
class Controls:
    """The training controls of the linear modes (svmtrain.controls does the work).

    class_weights: (label, weight) pairs, LIBLINEAR's -wi; class_weight="balanced": n / (k n_c).
    example_weights: a file with one positive weight per example line. bias_reg: regularize the
    bias weights by this factor. nonneg: weights constrained >= 0 ('1-10,15', 'all', 'bias').
    prior: a model file whose w0 the regularizer pulls towards; reg_scale: a file of 'index:r'
    lines. save_state / warm_start: dual-state files (.npz) to resume from.
    """

    class_weights: tuple = ()
    class_weight: Optional[str] = None
    example_weights: Optional[str] = None
    bias_reg: Optional[float] = None
    nonneg: Optional[str] = None
    prior: Optional[str] = None
    reg_scale: Optional[str] = None
    save_state: Optional[str] = None
    warm_start: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self, "class_weights",
                           tuple((float(a), float(b)) for a, b in self.class_weights))

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        for label, weight in self.class_weights:
            if not (math.isfinite(label) and weight > 0 and math.isfinite(weight)):
                raise OptionError(f"-w {label:g} {weight:g}: the weight must be a positive "
                                  f"number and the label finite", "-w")
        if self.class_weight is not None:
            _choice(self.class_weight, ("balanced",), "--class-weight", "the class weight")
        check_positive(self.bias_reg, "the factor", "--bias-reg")
        if self.nonneg is not None:
            from svmtrain.controls import parse_nonneg
            try:
                parse_nonneg(self.nonneg, zero_based=None)
            except ValueError as e:
                raise OptionError(str(e), "--nonneg") from None
        return self

    @property
    def shaping(self) -> list:
        """The flags of the controls that change the problem (not the state files)."""
        return [flag for flag, key in (("--bias-reg", "bias_reg"), ("--nonneg", "nonneg"),
                                       ("--prior", "prior"), ("--reg-scale", "reg_scale"),
                                       ("-w", "class_weights"), ("--class-weight", "class_weight"),
                                       ("--weights", "example_weights"))
                if getattr(self, key)]

    def as_dict(self) -> dict:
        """The keys svmtrain.controls' readers take."""
        return {"class_weight_pairs": self.class_weights, "class_weight": self.class_weight,
                "weights_file": self.example_weights, "bias_reg": self.bias_reg,
                "nonneg": self.nonneg, "prior_model": self.prior,
                "reg_scale_file": self.reg_scale, "save_state_file": self.save_state,
                "warm_start_file": self.warm_start}


@record(frozen=True)
class Local:
    """Run in this process; `threads` for 1-slack's per-example oracle loop (every thread count
    gives the same model)."""

    threads: Optional[int] = None

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        if self.threads is not None:
            _int_in(self.threads, 1, 256, "--threads", "the thread count")
        return self


@record(frozen=True)
class Dask:
    """Run on Dask: a local cluster of `workers` one-thread processes, the cluster of
    `scheduler` (an address), or an existing `distributed.Client`."""

    workers: Optional[int] = None
    scheduler: Optional[str] = None
    client: object = field(default=None, compare=False)

    def check(self):
        """Raise OptionError for a value that cannot run; returns the record."""
        given = [x for x in (self.workers, self.scheduler, self.client) if x]
        if len(given) > 1:
            raise OptionError("give --workers (a local cluster) or --scheduler (an existing one), "
                              "not both", "--workers")
        if not given:
            raise OptionError("Dask() needs workers, a scheduler address or a client")
        if self.workers is not None:
            _int_in(self.workers, 1, None, "--workers", "the worker count")
        return self

    @property
    def flag(self):
        return "--workers" if self.workers else "--scheduler"


_CONTROL_FLAGS = {"class_weight_pairs": "-w", "class_weight": "--class-weight",
                  "weights_file": "--weights", "bias_reg": "--bias-reg", "nonneg": "--nonneg",
                  "prior_model": "--prior", "reg_scale_file": "--reg-scale",
                  "save_state_file": "--save-state", "warm_start_file": "--warm-start"}

MODE_RECORDS = {"n-slack": NSlack, "1-slack": OneSlack, "online-dual": OnlineDual,
                "budgeted": Budgeted}


def mode_name(mode) -> str:
    return mode.name


def mode_record(mode):
    """A mode record from a record or a mode name (svmtrain.pipeline.resolve_mode chooses one
    for "auto")."""
    if isinstance(mode, str):
        if mode not in MODE_RECORDS:
            raise OptionError(f"the mode must be one of {', '.join(MODES)}, got {mode!r}", "--mode")
        return MODE_RECORDS[mode]()
    if not isinstance(mode, tuple(MODE_RECORDS.values())):
        raise OptionError(f"mode must be NSlack(), OneSlack(), OnlineDual(), Budgeted() or a mode "
                          f"name, got {mode!r}", "--mode")
    return mode


def check_run(problem: Problem, mode, controls: Controls, where, *, model_format="svmtrain",
              reads_stdin=False):
    """Every option check, the records alone and together, before any data is read."""
    problem.check()
    mode.check()
    controls.check()
    where.check()
    task, name = problem.task_name, mode.name
    if problem.user_task:
        if name not in LINEAR_MODES:
            raise OptionError("a --task-module task trains in the linear modes (n-slack, 1-slack, "
                              "online-dual)", "--mode")
        if problem.latent_rounds and name != "n-slack":
            raise OptionError("latent rounds solve their convex problems in the n-slack mode",
                              "--latent-rounds")
        if isinstance(where, Dask):
            raise OptionError("a --task-module task runs in this process", where.flag)
        if controls.shaping or controls.save_state or controls.warm_start:
            raise OptionError("the training controls do not apply to a --task-module task",
                              "--task-module")
        if model_format != "svmtrain":
            raise OptionError("does not apply to a --task-module task", "--format")
        if isinstance(mode, OnlineDual) and reads_stdin:
            raise OptionError("a user task reads its file itself: give a file, not -", "--mode")
        return
    if isinstance(mode, OnlineDual):
        if reads_stdin and mode.passes > 1:
            raise OptionError("standard input can be read only once: one pass", "--passes")
        if reads_stdin and mode.verify:
            raise OptionError("standard input can be read only once: verify with "
                              "`svmtrain verify-bound` on a copy of the data", "--verify")
        if mode.labels is not None and task not in ("binary", "multiclass", "sequence"):
            raise OptionError(f"the {task} task has no labels", "--labels")
        if mode.labels is not None and task == "binary" and len(mode.labels) != 2:
            raise OptionError("the binary task has 2 labels", "--labels")
    if isinstance(mode, Budgeted):
        if task not in BUDGETED_TASKS:
            raise OptionError(f"--mode budgeted trains the {', '.join(BUDGETED_TASKS)} tasks, "
                              f"not {task}", "--task")
        if problem.bias is not None:
            raise OptionError("the budgeted mode's kernel SVM has no bias term (as the paper; "
                              "the RBF feature space needs none)", "-B")
        for flag, value in (("--loss", problem.loss), ("--rescaling", problem.rescaling)):
            if value is not None:
                raise OptionError("the budgeted mode's multiclass is one-vs-rest binary SVMs: "
                                  "no loss or rescaling to choose", flag)
        if model_format != "svmtrain":
            raise OptionError("LIBLINEAR model files hold linear models only", "--format")
    if isinstance(where, Local) and where.threads is not None and name != "1-slack":
        raise OptionError(f"applies to --mode 1-slack, not to {name}", "--threads")
    # the controls: which task and mode take them
    if (controls.class_weights or controls.class_weight) and task not in ("binary", "multiclass"):
        raise OptionError(f"class weights apply to the binary and multiclass tasks, not to "
                          f"{task}", "-w / --class-weight")
    if controls.bias_reg is not None and problem.bias is None:
        raise OptionError("needs a bias feature (-B VALUE)", "--bias-reg")
    if model_format == "liblinear" and controls.shaping:
        raise OptionError(f"{', '.join(controls.shaping)}: LIBLINEAR's model format cannot record "
                          f"them; use --format svmtrain", "--format")
    if name not in LINEAR_MODES and (controls.shaping or controls.save_state or controls.warm_start):
        raise OptionError(f"the training controls apply to the {', '.join(LINEAR_MODES)} "
                          f"modes, not to {name}", "--mode")
    if isinstance(where, Dask):
        flag = where.flag
        if name not in ("n-slack", "1-slack"):
            raise OptionError(f"on Dask, train runs the n-slack mode (CoCoA+) and the 1-slack "
                              f"mode, not {name}", flag)
        if name == "1-slack" and task not in DASK_ONESLACK_TASKS:
            raise OptionError(f"on Dask, 1-slack training is for the "
                              f"{', '.join(DASK_ONESLACK_TASKS)} tasks (whose examples can be cut "
                              f"into byte ranges), not {task}", flag)
        if name != "1-slack" and task not in DASK_NSLACK_TASKS:
            raise OptionError(f"on Dask, n-slack training (CoCoA+) is for the binary, "
                              f"regression and multiclass tasks, not {task}", flag)
        given = controls.as_dict()
        if name == "1-slack":          # its state is its working set of planes, kept on Dask too
            given.update(save_state_file=None, warm_start_file=None)
        for key, value in given.items():
            if value:
                raise OptionError(f"{_CONTROL_FLAGS[key]} does not run on Dask yet: leave out "
                                  f"{flag}", flag)
    if model_format == "liblinear" and problem.zero_based:
        raise OptionError("--format liblinear cannot record zero-based feature indices")
    if model_format == "liblinear" and task != "binary":
        raise OptionError(f"--format liblinear is for the binary task (LIBLINEAR's format has no "
                          f"place for a {task} model's certificate); use --format svmtrain")


def with_defaults(record, **changes):
    """A copy of a frozen record with some fields changed."""
    return replace(record, **changes)


def record_fields(record) -> dict:
    return {f.name: getattr(record, f.name) for f in fields(record)}
