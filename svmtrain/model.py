"""The model: a dataclass and its plain-text reader/writer (ours, version 1, and LIBLINEAR's).

Our format is self-describing, versioned and line-oriented; one ``key value...`` per line, then the
weights, then ``end``:

    svmtrain_model 1
    task binary
    mode n-slack
    solver dcd
    C 1
    bias none                  (or a float: the value of the appended constant feature)
    features 123
    index_base 1
    labels 1 -1                (binary: decision value > 0 predicts the first)
    epsilon 0.01
    dual 11324.17...           (D(alpha): lower bound on the optimum)
    primal 11325.02...         (P(w): upper bound)
    relative_gap 7.5e-05
    examples 32561
    seed 1
    epochs 14
    weights dense 124          (one float per line, row-major; a 2-D shape is spelled 10x124)
    ...                        or: weights sparse K, then K lines `index:value`, flat 0-based
    end                        index, strictly increasing; chosen when 2 * nnz < size

Floats are written with ``repr`` (shortest round-trip string), so every value reads back bit for
bit; NaN and inf are refused on both sides. Reading is strict (unknown, duplicate or missing keys,
junk after ``end``, a missing final newline -- a truncated file never reads as a model) and never
executes anything. Every problem is a :class:`ModelError` naming the file, the line and the reason.

The header is table-driven: a key is one entry of ``HEADER_KEYS`` (name, attribute, value kind), and
a task is one entry of ``_TASKS`` (its label check and weight shape), so later tasks add keys
(``classes``, ``loss``) and 2-D weights without touching the reader or writer.

Budgeted kernel models (``mode budgeted``) add the keys ``kernel`` (rbf), ``gamma``, ``budget``,
``merge_search`` (table or golden) and ``merge_precision`` (and ``averaged W`` when BSCA's model is
the mean of its last W iterates), have no ``bias`` (``bias none``) and, instead of the weights, their support
vectors (one set per class for one-vs-rest multiclass, else one), in svmlight syntax after the
coefficient, like LIBSVM's ``SV`` section (indices in the model's ``index_base``)::

    support_vectors 2 500 487      (the number of sets, then the size of each)
    0.7316 3:1 11:0.5 ...          (beta, then index:value with increasing indices)
    ...
    alphas 2 1200 1187             (the training coefficients a != 0 of each set, for D(a))
    17:32.0                        (example number, 1-based in file order : a)
    ...
    end

LIBLINEAR's format (``save_model`` in linear.cpp, 2.47+) is read and written exactly: binary
classifiers only for now (``nr_class 2``, one weight per row, ``%.17g `` values).
"""
from __future__ import annotations

import io
import math
import re
import sys
from dataclasses import fields
from numbers import Integral, Real
from typing import Callable, NamedTuple, Optional

import numpy as np

from .atomic import atomic_output
from .records import record

__all__ = [
    "Model",
    "ModelError",
    "read_model",
    "parse_model",
    "write_model",
    "format_model",
    "write_liblinear",
    "format_liblinear",
    "MAGIC",
    "VERSION",
    "MODES",
    "LIBLINEAR_SOLVERS",
]

MAGIC = "svmtrain_model"
VERSION = 1
#: Modes whose models are a plain weight vector, then the kernel modes (support vectors instead).
MODES = ("n-slack", "1-slack", "online-dual", "budgeted")
KERNEL_MODES = ("budgeted",)
KERNELS = ("rbf",)
MERGE_SEARCHES = ("table", "golden")


class ModelError(ValueError):
    """A model file (or a model about to be written) is invalid.

    str(e) is ``"{path}:{line}: {reason}"``, or ``"{path}: {reason}"`` when no line applies.
    """

    def __init__(self, path, line: Optional[int], reason: str):
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):  # picklable, so it can cross process boundaries (Dask workers)
        return (type(self), (self.path, self.line, self.reason))


class _Bad(Exception):
    """Internal: a reason without a place; turned into a ModelError where the line is known."""


@record(eq=False)
class Model:
    """A trained linear model plus the certificate it was trained to (dual <= OPT <= primal).

    Fields left None are unknown: models read from LIBLINEAR files carry no C, duality gap or
    training counters. :func:`write_model` requires them all.
    Equality is exact: two models are equal when every field is, and ``w`` bit for bit.
    """

    task: str
    mode: str
    C: Optional[float]
    bias: Optional[float]
    n_features: int
    index_base: int
    labels: list
    w: np.ndarray
    epsilon: Optional[float]
    dual: Optional[float]
    primal: Optional[float]
    relative_gap: Optional[float]
    examples: Optional[int]
    seed: Optional[int]
    epochs: Optional[int]
    solver: str = "dcd"
    p: Optional[float] = None            # regression: width of the insensitive zone
    loss: Optional[str] = None           # multiclass, sequence: the task loss Delta
    rescaling: Optional[str] = None      # multiclass, sequence: margin or slack rescaling
    format: str = "svmtrain"
    liblinear_solver: Optional[str] = None
    kernel: Optional[str] = None         # kernel modes: the kernel, its gamma, the SV budget
    gamma: Optional[float] = None
    budget: Optional[int] = None
    merge_search: Optional[str] = None   # how the merge's h was found: table or golden
    merge_precision: Optional[float] = None
    averaged: Optional[int] = None       # BSCA: the model is the mean of the last this-many iterates
    # kernel modes: one set per class (one-vs-rest) or one: (beta, indptr, indices, data) with
    # 0-based columns, w then empty
    support_vectors: Optional[list] = None
    # kernel modes: per set, (0-based example numbers, values) of the training coefficients a != 0
    alphas: Optional[list] = None
    # training controls (svmtrain.controls); None when not used
    class_weights: Optional[dict] = None     # label -> weight: C of its examples is weight * C
    example_weights: Optional[str] = None    # the --weights file (one weight per example)
    example_weights_crc32: Optional[int] = None   # of its values (float64): a changed file is refused
    bias_reg: Optional[float] = None         # regularization factor of the bias weights
    nonneg: Optional[str] = None             # weights constrained >= 0 (feature ranges, all, bias)
    reg_scale: Optional[dict] = None         # 0-based feature -> r: 1/2 r (w - w0)^2 regularizer
    prior: Optional[dict] = None             # flat index into w -> w0 (the prior mean)
    # user tasks (task "user"): the StructuredTask's name and version; the file names no code
    task_name: Optional[str] = None
    task_version: Optional[str] = None

    def __post_init__(self):
        self.w = np.asarray(self.w, dtype=np.float64)
        self.labels = [float(x) for x in self.labels]

    #: the training run's figures (svmtrain.pipeline.RunStats) for a model just trained; None
    #: for one read from a file (not a field: it is neither written nor compared)
    stats = None

    @property
    def certificate(self):
        """D <= OPT <= P, as recorded: a svmtrain.api.Certificate, or None for a LIBLINEAR model."""
        from svmtrain.api import Certificate
        if self.dual is None or self.primal is None:
            return None
        return Certificate(primal=self.primal, dual=self.dual, relative_gap=self.relative_gap,
                           examples=self.examples)

    def save(self, path, format: str = "svmtrain") -> None:
        """Write the model (atomically; "-" is standard output) as svmtrain or LIBLINEAR text."""
        if format not in ("svmtrain", "liblinear"):
            raise ValueError(f"format must be svmtrain or liblinear, got {format!r}")
        (write_liblinear if format == "liblinear" else write_model)(self, path)

    @classmethod
    def load(cls, path) -> "Model":
        """Read a model file, ours or LIBLINEAR's (nothing in it is executed)."""
        return read_model(path)

    def _scores(self, X):
        from svmtrain.api import scorer
        from svmtrain.data import block_from_arrays
        X = X if hasattr(X, "shape") else np.asarray(X, dtype=np.float64)
        block = block_from_arrays(X, np.zeros(X.shape[0]))
        _, predict_block = scorer(self)
        return predict_block(block)

    def decision_function(self, X) -> np.ndarray:
        """Decision values of the rows of X (scipy sparse or 2-d numpy, 0-based columns): w.x
        (+ bias) for binary and regression, one column per class for multiclass."""
        return np.asarray(self._scores(X)[1])

    def predict(self, X) -> np.ndarray:
        """Predicted labels (targets, for regression) of the rows of X."""
        return np.asarray(self._scores(X)[0])

    @property
    def n_weights(self) -> int:
        """Columns of w: the feature columns plus the bias column when there is one."""
        return self.n_features + (self.bias is not None)

    def __eq__(self, other):
        if not isinstance(other, Model):
            return NotImplemented
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name == "w":
                if a.shape != b.shape or not np.array_equal(_bits(a), _bits(b)):
                    return False
            elif f.name in ("support_vectors", "alphas"):
                if (a is None) != (b is None) or (a is not None and not _same_sv_sets(a, b)):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _same_sv_sets(a, b) -> bool:
    if len(a) != len(b):
        return False
    for sa, sb in zip(a, b):
        for x, y in zip(sa, sb):
            x, y = np.asarray(x), np.asarray(y)
            if x.shape != y.shape or not np.array_equal(x.view(np.int64), y.view(np.int64)):
                return False
    return True


# ---------------------------------------------------------------------------------------------
# Scalar syntax, shared by both formats

_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INT_RE = re.compile(r"[+-]?\d+")
_NAME_RE = re.compile(r"[A-Za-z0-9_.+-]+")
_NONFINITE = {"nan", "inf", "infinity"}


def _parse_float(tok: str) -> float:
    if _FLOAT_RE.fullmatch(tok):
        x = float(tok)
        if math.isfinite(x):
            return x
        raise _Bad(f"value {tok} overflows a double")
    if tok.lower().lstrip("+-") in _NONFINITE:
        raise _Bad(f"non-finite value {tok!r} (NaN and inf never appear in a valid model)")
    raise _Bad(f"not a number: {tok!r}")


def _parse_int(tok: str) -> int:
    if not _INT_RE.fullmatch(tok):
        raise _Bad(f"not an integer: {tok!r}")
    if len(tok.lstrip("+-")) > 18:
        raise _Bad(f"integer out of range: {tok[:40]}")
    return int(tok)


def _single(tokens: list) -> str:
    if len(tokens) != 1:
        raise _Bad(f"expected 1 value, found {len(tokens)}")
    return tokens[0]


def _fmt_float(x) -> str:
    return repr(float(x))


def _fmt_label(x) -> str:
    """Integral labels as integers (`1 -1`), others (and -0.0) exactly, with repr."""
    x = float(x)
    negative_zero = x == 0 and math.copysign(1.0, x) < 0
    if x.is_integer() and abs(x) < 2.0**53 and not negative_zero:
        return str(int(x))
    return repr(x)


# ---------------------------------------------------------------------------------------------
# Value kinds: how one header value is read from tokens, checked, and written.
# read() does syntax then check(); the writer calls check() then fmt(). check() returns the value
# normalised (float / int / str) or raises _Bad with the reason.


class _Kind(NamedTuple):
    read: Callable[[list], object]
    check: Callable[[object], object]
    fmt: Callable[[object], str]


def _real_kind(lo: Optional[float] = None, strict: bool = False) -> _Kind:
    def check(x):
        if isinstance(x, bool) or not isinstance(x, Real):
            raise _Bad(f"not a number: {x!r}")
        x = float(x)
        if not math.isfinite(x):
            raise _Bad(f"non-finite value {x!r} (NaN and inf never appear in a valid model)")
        if lo is not None and (x <= lo if strict else x < lo):
            raise _Bad(f"{x!r} must be {'>' if strict else '>='} {lo:g}")
        return x

    return _Kind(lambda t: check(_parse_float(_single(t))), check, _fmt_float)


def _int_kind(lo: Optional[int] = None, choices: Optional[tuple] = None) -> _Kind:
    def check(x):
        if isinstance(x, bool) or not isinstance(x, Integral):
            raise _Bad(f"not an integer: {x!r}")
        x = int(x)
        if lo is not None and x < lo:
            raise _Bad(f"{x} must be >= {lo}")
        if choices is not None and x not in choices:
            raise _Bad(f"{x} must be one of {', '.join(map(str, choices))}")
        return x

    return _Kind(lambda t: check(_parse_int(_single(t))), check, lambda x: str(int(x)))


def _word_kind(choices: Callable[[], tuple], what: str) -> _Kind:
    def check(x):
        known = choices()
        if not isinstance(x, str) or x not in known:
            raise _Bad(f"unknown {what} {x!r} (known: {', '.join(known)})")
        return x

    return _Kind(lambda t: check(_single(t)), check, str)


def _check_name(x):
    if not isinstance(x, str) or not _NAME_RE.fullmatch(x):
        raise _Bad(f"not a name (letters, digits, '_.+-'): {x!r}")
    return x


def _read_bias(tokens):
    tok = _single(tokens)
    return None if tok == "none" else _check_bias(_parse_float(tok))


def _check_bias(x):
    return None if x is None else _real_kind().check(x)


def _read_labels(tokens):
    if not tokens:
        raise _Bad("expected at least 1 value, found 0")
    return _check_labels([_parse_float(t) for t in tokens])


def _check_labels(xs):
    if isinstance(xs, (str, bytes)) or not hasattr(xs, "__iter__"):
        raise _Bad(f"not a list of labels: {xs!r}")
    xs = [_real_kind().check(x) for x in xs]
    if len(set(xs)) != len(xs):
        raise _Bad(f"repeated label in {' '.join(map(_fmt_label, xs))}")
    return xs


def _pairs_kind(key_kind: str, value_lo: Optional[float]) -> _Kind:
    """`key:value key:value ...` on one line: labels (float keys) or 0-based indices (int keys),
    each key once, values finite (and > value_lo when given); a dict."""
    as_key = _parse_int if key_kind == "index" else _parse_float
    value = _real_kind(lo=value_lo, strict=True) if value_lo is not None else _real_kind()

    def check(d):
        if not isinstance(d, dict) or not d:
            raise _Bad(f"not a non-empty table: {d!r}")
        out = {}
        for k, v in d.items():
            if key_kind == "index":
                k = _int_kind(lo=0).check(k)
            else:
                k = _real_kind().check(k)
            out[k] = value.check(v)
        return dict(sorted(out.items()))

    def read(tokens):
        if not tokens:
            raise _Bad("expected at least one key:value")
        d = {}
        for tok in tokens:
            k, sep, v = tok.partition(":")
            if not sep:
                raise _Bad(f"expected key:value, found {tok[:40]!r}")
            k = as_key(k)
            if k in d:
                raise _Bad(f"{tok.partition(':')[0]} given twice")
            d[k] = _parse_float(v)
        return check(d)

    def fmt(d):
        show = _fmt_label if key_kind == "label" else str
        return " ".join(f"{show(k)}:{v!r}" for k, v in d.items())

    return _Kind(read, check, fmt)


def _check_path(x):
    if not isinstance(x, str) or not x or x != x.strip() or "\n" in x:
        raise _Bad(f"not a file name: {x!r}")
    return x


def _check_spec(x):
    if not isinstance(x, str) or not re.fullmatch(r"[0-9a-z,-]+", x):
        raise _Bad(f"not a feature list (N, N-M, all, bias; comma-separated): {x!r}")
    return x


_REAL = _real_kind()
_COUNT = _int_kind(lo=0)
_BIAS = _Kind(_read_bias, _check_bias, lambda x: "none" if x is None else _fmt_float(x))
_LABELS = _Kind(_read_labels, _check_labels, lambda xs: " ".join(map(_fmt_label, xs)))


# ---------------------------------------------------------------------------------------------
# Tasks: what each one requires of the labels and the shape of w. One entry per task.


def _binary_labels(labels):
    if len(labels) != 2:
        raise _Bad(f"a binary model has 2 labels, found {len(labels)}")


def _multiclass_labels(labels):
    if len(labels) < 2:
        raise _Bad(f"a multiclass model has at least 2 classes, found {len(labels)}")


def _tags(labels):
    if len(labels) < 1:
        raise _Bad("a sequence model has at least 1 tag")


def _width(values) -> int:
    return values["n_features"] + (values["bias"] is not None)


def _vector_shape(values) -> tuple:
    return (_width(values),)


def _class_matrix_shape(values) -> tuple:
    """K class vectors of features (+ bias), one row each."""
    return (len(values["labels"]), _width(values))


def _sequence_shape(values) -> tuple:
    """K emission blocks of features (+ bias), then the (K+1) x K transitions (row K: start)."""
    k = len(values["labels"])
    return (k * _width(values) + (k + 1) * k,)


class _Task(NamedTuple):
    check_labels: Optional[Callable[[list], None]]   # None: the task records no labels
    weight_shape: Callable[[dict], tuple]  # from the header's values (attribute names)
    keys: tuple = ()                       # task-specific header keys it requires


_TASKS = {
    "binary": _Task(_binary_labels, _vector_shape),
    "multiclass": _Task(_multiclass_labels, _class_matrix_shape, ("loss", "rescaling")),
    "regression": _Task(None, _vector_shape, ("p",)),
    "ranking": _Task(None, _vector_shape),
    "sequence": _Task(_tags, _sequence_shape, ("loss", "rescaling")),
    "constraints": _Task(None, _vector_shape),
    # a user's StructuredTask (svmtrain.tasks.user): w is its joint feature's weights, `features`
    # long; the task is named, never imported (predict and verify-bound need --task-module)
    "user": _Task(None, _vector_shape, ("task_name", "task_version")),
}
LOSSES = ("zero-one", "hamming")
RESCALINGS = ("margin", "slack")


# ---------------------------------------------------------------------------------------------
# The header: keys in the order they are written. To add a key, add a line here (and a Model field).


class _Key(NamedTuple):
    name: str  # as spelled in the file
    attr: str  # Model attribute
    kind: _Kind


HEADER_KEYS = (
    _Key("task", "task", _word_kind(lambda: tuple(_TASKS), "task")),
    _Key("mode", "mode", _word_kind(lambda: MODES, "mode")),
    _Key("solver", "solver", _Kind(lambda t: _check_name(_single(t)), _check_name, str)),
    _Key("C", "C", _real_kind(lo=0.0, strict=True)),
    _Key("bias", "bias", _BIAS),
    _Key("features", "n_features", _COUNT),
    _Key("index_base", "index_base", _int_kind(choices=(0, 1))),
    _Key("labels", "labels", _LABELS),
    _Key("epsilon", "epsilon", _real_kind(lo=0.0)),
    _Key("dual", "dual", _REAL),
    _Key("primal", "primal", _REAL),
    _Key("relative_gap", "relative_gap", _REAL),
    _Key("examples", "examples", _COUNT),
    _Key("seed", "seed", _int_kind()),
    _Key("epochs", "epochs", _COUNT),
    _Key("p", "p", _real_kind(lo=0.0)),
    _Key("loss", "loss", _word_kind(lambda: LOSSES, "loss")),
    _Key("rescaling", "rescaling", _word_kind(lambda: RESCALINGS, "rescaling")),
    _Key("task_name", "task_name", _Kind(lambda t: _check_name(_single(t)), _check_name, str)),
    _Key("task_version", "task_version", _Kind(lambda t: _check_name(_single(t)), _check_name, str)),
    _Key("kernel", "kernel", _word_kind(lambda: KERNELS, "kernel")),
    _Key("gamma", "gamma", _real_kind(lo=0.0, strict=True)),
    _Key("budget", "budget", _int_kind(lo=1)),
    _Key("merge_search", "merge_search", _word_kind(lambda: MERGE_SEARCHES, "merge search")),
    _Key("merge_precision", "merge_precision", _real_kind(lo=0.0, strict=True)),
    _Key("averaged", "averaged", _int_kind(lo=1)),
    # training controls: written only when used
    _Key("class_weights", "class_weights", _pairs_kind("label", 0.0)),
    _Key("example_weights", "example_weights", _Kind(lambda t: _check_path(" ".join(t)), _check_path, str)),
    _Key("example_weights_crc32", "example_weights_crc32", _int_kind(lo=0)),
    _Key("bias_reg", "bias_reg", _real_kind(lo=0.0, strict=True)),
    _Key("nonneg", "nonneg", _Kind(lambda t: _check_spec(_single(t)), _check_spec, str)),
    _Key("reg_scale", "reg_scale", _pairs_kind("index", 0.0)),
    _Key("prior", "prior", _pairs_kind("index", None)),
)
#: keys a model has only when the option was used (any task)
_OPTIONAL_KEYS = frozenset(("averaged", "class_weights", "example_weights", "example_weights_crc32",
                            "bias_reg", "nonneg", "reg_scale", "prior"))
_KEYS = {k.name: k for k in HEADER_KEYS}
_TASK_KEYS = frozenset(("labels", "p", "loss", "rescaling", "task_name", "task_version"))   # present only where a task uses them
_KERNEL_KEYS = ("kernel", "gamma", "budget", "merge_search", "merge_precision")  # only in kernel modes
_KERNEL_TASKS = ("binary", "multiclass", "regression")  # budgeted: multiclass is one-vs-rest


def _keys_of(task_name: str, mode: Optional[str] = None) -> list:
    """The header keys a model of this task (and mode) has, in file order."""
    task = _TASKS[task_name]
    used = set(task.keys) | ({"labels"} if task.check_labels is not None else set())
    if mode in KERNEL_MODES:
        # one-vs-rest binary SVMs: no Crammer-Singer loss or rescaling
        used = (used - {"loss", "rescaling"}) | set(_KERNEL_KEYS)
    return [k for k in HEADER_KEYS if (k.name not in _TASK_KEYS or k.name in used)
            and (k.name not in _KERNEL_KEYS or k.name in used)]


def _required(keys) -> list:
    return [k for k in keys if k.name not in _OPTIONAL_KEYS]


# ---------------------------------------------------------------------------------------------
# Reading


class _Source:
    """A model file, read line by line as the parser asks (errors name the line, 1-based).

    The weights body (`weights_body`), millions of lines in a sector or sequence model, is parsed
    straight from the bytes read and never held as lines: held as a list of lines, reading sector's
    62 MB model peaked at 371 MB and took 7 s. A file is read in pieces of CHUNK bytes, so the
    body costs the weights' array, not the file. Lines end at '\\n'; a '\\r' before it is dropped.
    """

    CHUNK = 1 << 20

    def __init__(self, stream, path: str):
        self.path = path
        self._stream = stream
        self._buf = b""
        self._pos = 0                 # where the next unread line starts in _buf
        self._eof = False
        self._held = []               # the lines read, as text, but not those of the body
        self._body_at = self._body_len = 0
        self.final_newline = True

    @classmethod
    def of_text(cls, text: str, path: str) -> "_Source":
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ModelError(path, text.count("\n", 0, e.start) + 1, "not a text file (invalid "
                             "UTF-8), not a model") from None
        return cls(io.BytesIO(data), path)

    def _more(self) -> bool:
        """Read another piece of the file; False at its end."""
        if self._eof:
            return False
        try:
            piece = self._stream.read(self.CHUNK)
        except OSError as e:
            raise ModelError(self.path, None, f"cannot read model: {e.strerror or e}") from e
        if not piece:
            self._eof = True
            return False
        self._buf = self._buf[self._pos:] + piece
        self._pos = 0
        return True

    def _raw_line(self) -> Optional[bytes]:
        """The next line's bytes, or None at the end of the file."""
        while True:
            j = self._buf.find(b"\n", self._pos)
            if j >= 0:
                line, self._pos = self._buf[self._pos:j], j + 1
                return line[:-1] if line.endswith(b"\r") else line
            if not self._more():
                if self._pos >= len(self._buf):
                    return None
                line, self._pos = self._buf[self._pos:], len(self._buf)
                self.final_newline = False
                return line

    def _index(self, i: int) -> int:
        if self._body_len and i >= self._body_at:
            if i < self._body_at + self._body_len:
                raise IndexError(f"line {i + 1} is in the weights body, not held")
            return i - self._body_len
        return i

    def has(self, i: int) -> bool:
        """Whether the file has a line `i` (0-based), reading up to it."""
        k = self._index(i)
        while len(self._held) <= k:
            raw = self._raw_line()
            if raw is None:
                return False
            try:
                self._held.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise self.error(self._body_len + len(self._held),
                                 "not a text file (invalid UTF-8), not a model") from None
        return True

    def line(self, i: int) -> str:
        """Line `i` (0-based); the caller has checked `has(i)`."""
        if not self.has(i):
            raise self.error(i, "unexpected end of file")
        return self._held[self._index(i)]

    @property
    def lines(self) -> list:
        """Every line (the formats without a weights body: kernel models, LIBLINEAR's)."""
        assert not self._body_len, "a model with a weights body is read with has() / line()"
        while self.has(len(self._held)):
            pass
        return self._held

    def error(self, index: int, reason: str) -> ModelError:
        """index is 0-based; index == the number of lines means end of file."""
        return ModelError(self.path, index + 1, reason)

    def check_end_of_file(self, index: int, after: str) -> None:
        """Nothing may follow line `index - 1`, and the file must end with a newline."""
        if self.has(index):
            raise self.error(index, f"unexpected content after {after}: {self.line(index)[:40]!r}")
        if not self.final_newline:
            raise self.error(index - 1, "missing newline at end of file (truncated?)")

    def weights_body(self, start: int, n: int, w: np.ndarray, *, sparse: bool, rows: int = 1,
                     stop: Optional[str] = "end", what: str = "weights") -> None:
        """Lines start .. start+n-1, the next unread ones: one weight each, into the flat `w`
        (dense: in order; sparse: `index:value`, indices increasing); with `rows` > 1, the file's
        row-major rows x width matrix is stored transposed (column-major) in `w`. The lines of
        the simple form are parsed in C (`_reader.weight_lines`); any other is judged here, line
        by line, as the format's grammar says. Truncation (the `stop` line or the end of the file before n lines)
        is reported first, wherever the body is also wrong."""
        from svmtrain._reader import weight_lines
        assert self._index(start) == len(self._held) and not self._body_len
        done, at = 0, -1
        while done < n:
            k, self._pos, at, stopped = weight_lines(self._buf, self._pos, self._eof, n - done,
                                                     sparse, w, at, rows)
            done += k
            if self._eof and self._buf and self._pos == len(self._buf) and not self._buf.endswith(b"\n"):
                self.final_newline = False     # its last line, parsed above, has no newline
            if done == n:
                break
            if stopped:
                raw = self._raw_line()
                at = self._weight_line(start + done, raw, n, done, sparse, rows, w, at, stop, what)
                done += 1
            elif not self._more() and self._pos >= len(self._buf):
                raise self.error(start + done, f"truncated: expected {n} {what}, found {done}")
        self._body_at, self._body_len = start, n

    def _weight_line(self, i, raw, n, done, sparse, rows, w, at, stop, what):
        """One line of the body that is not of the simple form: its weight's `at`, or the error."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and text != stop:
            reason, index, token = None, at + 1, None
            if not sparse:
                tokens = text.split()
                if len(tokens) == 1:
                    token = tokens[0]
                else:
                    reason = f"weight: expected 1 value, found {len(tokens)}"
            else:
                m = _SPARSE_RE.fullmatch(text)
                if not m:
                    reason = f"expected 'index:value', found {text[:40]!r}"
                else:
                    index, token = int(m.group(1)), m.group(2)
                    if index >= w.size:
                        reason = f"weight index {index} out of range 0..{w.size - 1}"
                    elif index <= at:
                        reason = f"weight index {index} not increasing (previous {at})"
            if reason is None:
                try:
                    value = _parse_float(token)
                except _Bad as e:
                    reason = f"weight: {e}"
                else:
                    width = w.size // rows
                    w[(index % width) * rows + index // width] = value
                    return index
        # wrong: unless the body is cut short by `stop` or the end of the file, which says more
        for j in range(done, n):
            line = raw if j == done else self._raw_line()
            if line is None or line.decode("utf-8", "replace") == stop:
                raise self.error(i - done + j, f"truncated: expected {n} {what}, found {j}")
        if text is None:
            raise self.error(i, "not a text file (invalid UTF-8), not a model")
        raise self.error(i, reason)


def _read_dense(src: _Source, spec: list, at: int, shape: tuple) -> tuple:
    """`weights dense 124` (or `10x124`): prod(shape) lines, one float each, row-major."""
    tok = _single(spec)
    parts = tok.split("x")
    if not all(_INT_RE.fullmatch(p) and not p.startswith(("+", "-")) for p in parts):
        raise _Bad(f"bad weight shape {tok!r}")
    declared = tuple(int(p) for p in parts)
    if declared != shape:
        if len(shape) == 1 and len(declared) == 1:
            raise _Bad(f"weight count {declared[0]} does not match features + bias = {shape[0]}")
        raise _Bad(f"weight shape {tok} does not match the header's {_fmt_shape(shape)}")
    n = math.prod(shape)
    w = _weights_array(n)
    src.weights_body(at + 1, n, w, sparse=False, rows=_rows(shape))
    return _shaped(w, shape), at + 1 + n


def _weights_array(size: int) -> np.ndarray:
    try:
        return np.zeros(size)
    except MemoryError:
        raise _Bad(f"{size} weights do not fit in memory") from None


# A K x width matrix of weights (multiclass) is read into column-major memory: the feature-major
# layout the solvers and kernels use (Multiclass.solver_weights is then a view, not a copy), so
# predicting with sector's 5.8M weights holds them once, not twice. The values, the shape and the
# file are the same either way.
def _rows(shape: tuple) -> int:
    return shape[0] if len(shape) == 2 else 1


def _shaped(w: np.ndarray, shape: tuple) -> np.ndarray:
    return w.reshape(shape[::-1]).T if len(shape) == 2 else w.reshape(shape)


_SPARSE_RE = re.compile(r"\s*(\d+):(\S+)\s*")


def _read_sparse(src: _Source, spec: list, at: int, shape: tuple) -> tuple:
    """`weights sparse K`: K lines `index:value`, flat 0-based index into the row-major w."""
    k = _parse_int(_single(spec))
    size = math.prod(shape)
    if not 0 <= k <= size:
        raise _Bad(f"sparse weight count {k} is not in 0..{size} (features + bias)")
    w = _weights_array(size)
    src.weights_body(at + 1, k, w, sparse=True, rows=_rows(shape))
    return _shaped(w, shape), at + 1 + k


def _check_body_length(src: _Source, start: int, n: int, what: str, stop: Optional[str] = "end") -> None:
    """Truncation: fewer than n lines before the `stop` line or the end of the file."""
    block = src.lines[start : start + n]
    found = block.index(stop) if stop in block else len(block)
    if found < n:
        raise src.error(start + found, f"truncated: expected {n} {what}, found {found}")


_LAYOUTS = {"dense": _read_dense, "sparse": _read_sparse}


def _fmt_shape(shape: tuple) -> str:
    return "x".join(map(str, shape))


def _parse_ours(src: _Source) -> Model:
    tokens = src.line(0).split()
    if len(tokens) != 2:
        raise src.error(0, f"expected '{MAGIC} {VERSION}'")
    if tokens[1] != str(VERSION):
        if _INT_RE.fullmatch(tokens[1]):
            raise src.error(0, f"unsupported model format version {tokens[1]} "
                               f"(this svmtrain reads version {VERSION})")
        raise src.error(0, f"bad model format version {tokens[1]!r}")

    values: dict = {}
    where: dict = {}  # key name -> 0-based line
    i = 1
    while True:
        if not src.has(i):
            missing = [k.name for k in _required(HEADER_KEYS)
                       if k.name not in where and k.name not in _KERNEL_KEYS] + ["weights"]
            raise src.error(i, f"truncated: missing {', '.join(missing)}")
        tokens = src.line(i).split()
        if not tokens:
            raise src.error(i, "empty line")
        name = tokens[0]
        if name in ("weights", "support_vectors"):
            break
        key = _KEYS.get(name)
        if key is None:
            raise src.error(i, f"unknown key {name[:40]!r}")
        if name in where:
            raise src.error(i, f"duplicate key {name!r} (first on line {where[name] + 1})")
        try:
            values[key.attr] = key.kind.read(tokens[1:])
        except _Bad as e:
            raise src.error(i, f"{name}: {e}") from None
        where[name] = i
        i += 1

    if "task" not in where:
        raise src.error(i, "missing key task")
    expected = _keys_of(values["task"], values.get("mode"))
    missing = [k.name for k in _required(expected) if k.name not in where]
    if missing:
        raise src.error(i, f"missing key{'s' * (len(missing) > 1)} {', '.join(missing)}")
    for name in where.keys() - {k.name for k in expected}:
        raise src.error(where[name], f"key {name!r} is not used by the {values['task']} task"
                                     + (f" in mode {values['mode']}" if name in _KERNEL_KEYS + ("loss", "rescaling") else ""))
    task = _TASKS[values["task"]]
    values.setdefault("labels", [])
    if task.check_labels is not None:
        try:
            task.check_labels(values["labels"])
        except _Bad as e:
            raise src.error(where["labels"], f"labels: {e}") from None

    if values["mode"] in KERNEL_MODES:
        return _parse_kernel_body(src, i, tokens, values, where)
    if name != "weights":
        raise src.error(i, f"a {values['mode']} model has weights, not support vectors")
    weights_at = i
    if len(tokens) < 2 or tokens[1] not in _LAYOUTS:
        found = tokens[1][:20] if len(tokens) > 1 else "nothing"
        raise src.error(i, f"weights: expected 'dense N' or 'sparse K', found {found!r}")
    try:
        w, i = _LAYOUTS[tokens[1]](src, tokens[2:], weights_at, task.weight_shape(values))
    except _Bad as e:
        raise src.error(weights_at, f"weights: {e}") from None

    if values.get("prior") and max(values["prior"]) >= w.size:
        raise src.error(where["prior"], f"prior: index {max(values['prior'])} is past the "
                                        f"{w.size} weights")

    if not src.has(i):
        raise src.error(i, "truncated: missing 'end'")
    if src.line(i).strip() != "end":
        raise src.error(i, f"expected 'end' after the weights, found {src.line(i)[:40]!r}")
    src.check_end_of_file(i + 1, "'end'")
    return Model(w=w, format="svmtrain", liblinear_solver=None, **values)


def _parse_kernel_body(src: _Source, i: int, tokens: list, values: dict, where: dict) -> Model:
    """The support vector sets of a kernel model, from line i (`support_vectors S n_1 .. n_S`)."""
    mode, task = values["mode"], values["task"]
    if task not in _KERNEL_TASKS:
        raise src.error(where["task"], f"mode {mode} models are for the {', '.join(_KERNEL_TASKS)} tasks")
    if values["bias"] is not None:
        raise src.error(where["bias"], f"mode {mode} models have no bias (bias none)")
    if tokens[0] != "support_vectors":
        raise src.error(i, f"a {mode} model has support vectors, not weights")
    sets = len(values["labels"]) if task == "multiclass" else 1
    try:
        sizes = [_COUNT.read([t]) for t in tokens[1:]]
        if not sizes or sizes[0] != sets or len(sizes) != sets + 1:
            raise _Bad(f"expected the number of sets ({sets}) and the size of each")
        budget = values["budget"]
        for size in sizes[1:]:
            if size > budget:
                raise _Bad(f"{size} support vectors exceed the budget {budget}")
    except _Bad as e:
        raise src.error(i, f"support_vectors: {e}") from None
    base, n_features = values["index_base"], values["n_features"]
    svs = []
    line = i + 1
    for size in sizes[1:]:
        _check_body_length(src, line, size, "support vectors")
        beta = np.empty(size)
        indptr = np.zeros(size + 1, dtype=np.int64)
        indices, data = [], []
        for k in range(size):
            parts = src.lines[line].split()
            if parts and parts[0] in ("alphas", "end"):
                raise src.error(line, f"truncated: expected {size} support vectors, found {k}")
            try:
                if not parts:
                    raise _Bad("empty line, expected 'beta index:value ...'")
                beta[k] = _parse_float(parts[0])
                previous = -1
                for tok in parts[1:]:
                    m = _SV_FEATURE_RE.fullmatch(tok)
                    if not m:
                        raise _Bad(f"expected 'index:value', found {tok[:40]!r}")
                    if len(m.group(1)) > 18:
                        raise _Bad(f"feature index out of range: {m.group(1)[:40]}")
                    col = int(m.group(1)) - base
                    if not 0 <= col < n_features:
                        raise _Bad(f"feature index {m.group(1)} outside {base}..{n_features - 1 + base} "
                                   f"(features {n_features}, index_base {base})")
                    if col <= previous:
                        raise _Bad(f"feature index {m.group(1)} not increasing")
                    previous = col
                    indices.append(col)
                    data.append(_parse_float(m.group(2)))
            except _Bad as e:
                raise src.error(line, f"support vector: {e}") from None
            indptr[k + 1] = len(indices)
            line += 1
        svs.append((beta, indptr, np.array(indices, dtype=np.int64), np.array(data, dtype=np.float64)))
    alphas, line = _parse_alphas(src, line, sets, values["examples"])
    if line == len(src.lines):
        raise src.error(line, "truncated: missing 'end'")
    if src.lines[line].strip() != "end":
        raise src.error(line, f"expected 'end' after the alphas, found {src.lines[line][:40]!r}")
    src.check_end_of_file(line + 1, "'end'")
    return Model(w=np.zeros(0), format="svmtrain", liblinear_solver=None, support_vectors=svs,
                 alphas=alphas, **values)


def _parse_alphas(src: _Source, line: int, sets: int, examples: int):
    """`alphas S k_1 .. k_S`, then per set k_s lines `example:a` (1-based, increasing)."""
    if line == len(src.lines):
        raise src.error(line, "truncated: missing 'alphas'")
    tokens = src.lines[line].split()
    try:
        if not tokens or tokens[0] != "alphas":
            raise _Bad(f"expected 'alphas' after the support vectors, found {src.lines[line][:40]!r}")
        sizes = [_COUNT.read([t]) for t in tokens[1:]]
        if not sizes or sizes[0] != sets or len(sizes) != sets + 1:
            raise _Bad(f"expected the number of sets ({sets}) and the size of each")
        for size in sizes[1:]:
            if size > examples:
                raise _Bad(f"{size} coefficients for {examples} examples")
    except _Bad as e:
        raise src.error(line, f"alphas: {e}") from None
    line += 1
    out = []
    for size in sizes[1:]:
        _check_body_length(src, line, size, "alphas")
        rows, values = np.empty(size, dtype=np.int64), np.empty(size)
        previous = 0
        for k in range(size):
            m = _SPARSE_RE.fullmatch(src.lines[line])
            try:
                if not m:
                    raise _Bad(f"expected 'example:value', found {src.lines[line][:40]!r}")
                number = _parse_int(m.group(1))
                if not previous < number <= examples:
                    raise _Bad(f"example {number} not increasing or outside 1..{examples}")
                values[k] = _parse_float(m.group(2))
                if values[k] == 0.0:
                    raise _Bad("a zero coefficient is never listed")
            except _Bad as e:
                raise src.error(line, f"alpha: {e}") from None
            rows[k], previous = number - 1, number
            line += 1
        out.append((rows, values))
    return out, line


_SV_FEATURE_RE = re.compile(r"(\d+):(\S+)")


def _kernel_body(model: Model, values: dict) -> list:
    """The support vector section of a kernel model (validated: raises _Bad)."""
    if values["task"] not in _KERNEL_TASKS:
        raise _Bad(f"mode {values['mode']} models are for the {', '.join(_KERNEL_TASKS)} tasks")
    if values["bias"] is not None:
        raise _Bad(f"mode {values['mode']} models have no bias")
    sets = model.support_vectors
    expected = len(values["labels"]) if values["task"] == "multiclass" else 1
    if sets is None or len(sets) != expected:
        raise _Bad(f"expected {expected} support vector set(s), found {0 if sets is None else len(sets)}")
    base, n_features = values["index_base"], values["n_features"]
    lines = [f"support_vectors {expected} " + " ".join(str(len(s[0])) for s in sets)]
    for beta, indptr, indices, data in sets:
        beta, indptr = np.asarray(beta, dtype=np.float64), np.asarray(indptr, dtype=np.int64)
        indices, data = np.asarray(indices, dtype=np.int64), np.asarray(data, dtype=np.float64)
        if len(beta) > values["budget"]:
            raise _Bad(f"{len(beta)} support vectors exceed the budget {values['budget']}")
        if not (np.isfinite(beta).all() and np.isfinite(data).all()):
            raise _Bad("refusing to write a non-finite support vector or coefficient")
        if len(indices) and (indices.min() < 0 or indices.max() >= n_features):
            raise _Bad("a support vector column is outside the model's features")
        for k in range(len(beta)):
            a, b = indptr[k], indptr[k + 1]
            if np.any(np.diff(indices[a:b]) <= 0):
                raise _Bad("support vector columns must be strictly increasing")
            lines.append(" ".join([repr(float(beta[k]))] + [
                f"{j + base}:{x!r}" for j, x in zip(indices[a:b].tolist(), data[a:b].tolist())]))
    alphas = model.alphas
    if alphas is None or len(alphas) != expected:
        raise _Bad(f"expected {expected} set(s) of alphas, found {0 if alphas is None else len(alphas)}")
    lines.append(f"alphas {expected} " + " ".join(str(len(r)) for r, _ in alphas))
    for rows, coefficients in alphas:
        rows, coefficients = np.asarray(rows, dtype=np.int64), np.asarray(coefficients, dtype=np.float64)
        if len(rows) != len(coefficients) or np.any(np.diff(rows) <= 0) or (
                len(rows) and not 0 <= rows[0] <= rows[-1] < values["examples"]):
            raise _Bad("alphas: example numbers must be increasing, within the examples")
        if not np.isfinite(coefficients).all() or np.any(coefficients == 0.0):
            raise _Bad("alphas: values must be finite and non-zero")
        lines.extend(f"{r + 1}:{v!r}" for r, v in zip(rows.tolist(), coefficients.tolist()))
    return lines


def parse_model(text: str, path: str = "<string>") -> Model:
    """Parse a model file's text (either format); `path` is only used in error messages."""
    return _parse(_Source.of_text(text, path))


def _parse(src: _Source) -> Model:
    if not src.has(0) or not src.line(0).strip():
        raise src.error(0, "empty first line, not a model" if src.has(0) or not src.final_newline
                        else "empty file, not a model")
    first = src.line(0).split()[0]
    if first == MAGIC:
        return _parse_ours(src)
    if first == "solver_type":
        return _parse_liblinear(src)
    raise src.error(0, f"not a model file: expected '{MAGIC}' or LIBLINEAR's 'solver_type', "
                       f"found {first[:40]!r}")


def read_model(path) -> Model:
    """Read a model file, ours or LIBLINEAR's (told apart by the first line); `-` is stdin."""
    if path == "-":
        return _parse(_Source(sys.stdin.buffer, "<stdin>"))
    name = str(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ModelError(name, None, f"cannot read model: {e.strerror or e}") from e
    with f:
        return _parse(_Source(f, name))


# ---------------------------------------------------------------------------------------------
# Writing


def _checked_weights(model: Model, shape: tuple) -> np.ndarray:
    w = np.asarray(model.w)
    if w.dtype.kind not in "fiu":
        raise _Bad(f"w has dtype {w.dtype}, not a number type")
    w = np.asarray(w, dtype=np.float64)      # any memory order (a read multiclass model's is F)
    if w.shape != shape:
        raise _Bad(f"w has shape {_fmt_shape(w.shape) or '()'}, expected {_fmt_shape(shape)} "
                   f"(features + bias)")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        j = np.unravel_index(bad[0], shape)
        j = j[0] if len(j) == 1 else j
        raise _Bad(f"w[{j}] is {float(w.flat[bad[0]])!r}: refusing to write a non-finite weight")
    return w


def format_model(model: Model, path: str = "<model>") -> str:
    """The text of `model` in our format (version 1). Raises ModelError naming `path` if invalid."""
    return "".join(model_text_chunks(model, path))


#: weights formatted per piece of text by model_text_chunks: the strings of a whole sector or
#: sequence model (millions of weights) at once took 355 MB at the peak of a 486 MB training run
WEIGHTS_PER_CHUNK = 65536


def model_text_chunks(model: Model, path: str = "<model>"):
    """The text of `model` (format_model's, the same bytes) as an iterator of pieces, the
    weights WEIGHTS_PER_CHUNK at a time. The model is validated before the first piece is made:
    ModelError (naming `path`) is raised by this call, not while iterating."""
    lines = [f"{MAGIC} {VERSION}"]
    values = {}
    try:
        if model.task not in _TASKS:
            raise _Bad(f"unknown task {model.task!r}")
        for key in _keys_of(model.task, model.mode if model.mode in KERNEL_MODES else None):
            value = getattr(model, key.attr)
            if value is None and key.name in _OPTIONAL_KEYS:
                continue
            if value is None and key.name != "bias":
                raise _Bad(f"{key.name} is unknown (None); the svmtrain format records it"
                           + (f" (this model was read from a {model.format} file)"
                              if model.format != "svmtrain" else ""))
            try:
                values[key.attr] = value = key.kind.check(value)
            except _Bad as e:
                raise _Bad(f"{key.name}: {e}") from None
            lines.append(f"{key.name} {key.kind.fmt(value)}")
        task = _TASKS[values["task"]]
        values.setdefault("labels", [])
        if task.check_labels is not None:
            try:
                task.check_labels(values["labels"])
            except _Bad as e:
                raise _Bad(f"labels: {e}") from None
        elif model.labels:
            raise _Bad(f"labels: the {model.task} task records no labels")
        if values["mode"] in KERNEL_MODES:
            body = _kernel_body(model, values)
        else:
            w = _checked_weights(model, task.weight_shape(values))
    except _Bad as e:
        raise ModelError(path, None, f"cannot write model: {e}") from None
    if values["mode"] in KERNEL_MODES:
        return iter(["\n".join(lines + body + ["end"]) + "\n"])

    # the file's rows, one at a time: a multiclass w is often a column-major view of the solver's
    # feature-major weights, which a flat copy (and its nonzero index) would double at the peak
    rows = w.reshape(w.shape[0], -1) if w.ndim == 2 else w.reshape(1, -1)
    nnz = sum(np.count_nonzero(_bits(row)) for row in rows)  # bit patterns: -0.0 is kept
    sparse = 2 * nnz < w.size
    if sparse:
        lines.append(f"weights sparse {nnz}")
    else:
        lines.append(f"weights dense {_fmt_shape(w.shape)}")
    return _weight_chunks("\n".join(lines) + "\n", rows, sparse)


def _weight_chunks(head, rows, sparse):
    # each weight is repr(x), `index:repr(x)` when sparse, formatted in C (_reader.weight_text)
    from svmtrain._reader import weight_text

    yield head
    width = rows.shape[1]
    for r, row in enumerate(rows):
        row = np.ascontiguousarray(row, dtype=np.float64)
        if sparse:
            nonzero = np.flatnonzero(_bits(row))
            for a in range(0, nonzero.size, WEIGHTS_PER_CHUNK):
                at = nonzero[a:a + WEIGHTS_PER_CHUNK]
                yield weight_text(row[at], at + np.int64(r * width))
        else:
            for a in range(0, width, WEIGHTS_PER_CHUNK):
                yield weight_text(row[a:a + WEIGHTS_PER_CHUNK])
    yield "end\n"


def write_model(model: Model, path, *, force: bool = True) -> None:
    """Write `model` in our format, atomically (`-` = stdout); validates before touching `path`.
    The weights are formatted and written a chunk at a time (model_text_chunks)."""
    chunks = model_text_chunks(model, str(path))
    with atomic_output(path, "w", force=force) as f:
        for chunk in chunks:
            f.write(chunk)


# ---------------------------------------------------------------------------------------------
# LIBLINEAR (linear.cpp save_model / load_model)

#: solver_type names in LIBLINEAR's table order (indices 8-10 are unused there).
LIBLINEAR_SOLVERS = (
    "L2R_LR", "L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVC", "L2R_L1LOSS_SVC_DUAL", "MCSVM_CS",
    "L1R_L2LOSS_SVC", "L1R_LR", "L2R_LR_DUAL", "L2R_L2LOSS_SVR", "L2R_L2LOSS_SVR_DUAL",
    "L2R_L1LOSS_SVR_DUAL", "ONECLASS_SVM",
)
_LIBLINEAR_BINARY = frozenset(
    ("L2R_LR", "L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVC", "L2R_L1LOSS_SVC_DUAL",
     "L1R_L2LOSS_SVC", "L1R_LR", "L2R_LR_DUAL")
)
_LIBLINEAR_UNSUPPORTED = {
    "MCSVM_CS": "multiclass (Crammer-Singer)",
    "L2R_L2LOSS_SVR": "regression",
    "L2R_L2LOSS_SVR_DUAL": "regression",
    "L2R_L1LOSS_SVR_DUAL": "regression",
    "ONECLASS_SVM": "one-class",
}
_LIBLINEAR_DEFAULT_SOLVER = "L2R_L1LOSS_SVC_DUAL"  # the problem our n-slack binary mode solves
_INT32 = 2**31 - 1


def _ll_solver(tokens):
    name = _single(tokens)
    if name in _LIBLINEAR_BINARY:
        return name
    if name in _LIBLINEAR_UNSUPPORTED:
        raise _Bad(f"{name}: LIBLINEAR {_LIBLINEAR_UNSUPPORTED[name]} models are not supported "
                   f"(binary classifiers only)")
    raise _Bad(f"unknown LIBLINEAR solver {name[:40]!r}")


def _ll_nr_class(tokens):
    n = _parse_int(_single(tokens))
    if n != 2:
        raise _Bad(f"{n} classes: only binary (nr_class 2) LIBLINEAR models are supported")
    return n


def _ll_labels(tokens):
    labels = [_parse_int(t) for t in tokens]
    if len(labels) != 2:
        raise _Bad(f"a binary model has 2 labels, found {len(labels)}")
    return _check_labels(labels)


def _ll_bias(tokens):
    b = _parse_float(_single(tokens))
    return None if b < 0 else b  # LIBLINEAR: bias < 0 means no bias feature


def _ll_rho(tokens):
    raise _Bad("only one-class LIBLINEAR models have rho; they are not supported")


_LIBLINEAR_KEYS = {  # key -> reader; load_model accepts them in any order, until `w`
    "solver_type": _ll_solver,
    "nr_class": _ll_nr_class,
    "label": _ll_labels,
    "nr_feature": lambda t: _COUNT.read(t),
    "bias": _ll_bias,
    "rho": _ll_rho,
}
_LIBLINEAR_REQUIRED = ("solver_type", "nr_class", "label", "nr_feature", "bias")


def _parse_liblinear(src: _Source) -> Model:
    values: dict = {}
    where: dict = {}
    i = 0
    while True:
        if not src.has(i):
            missing = [k for k in _LIBLINEAR_REQUIRED if k not in where] + ["w"]
            raise src.error(i, f"truncated: missing {', '.join(missing)}")
        tokens = src.line(i).split()
        if not tokens:
            raise src.error(i, "empty line")
        name = tokens[0]
        if name == "w":
            if len(tokens) != 1:
                raise src.error(i, "expected 'w' alone on its line")
            break
        reader = _LIBLINEAR_KEYS.get(name)
        if reader is None:
            raise src.error(i, f"unknown LIBLINEAR key {name[:40]!r}")
        if name in where:
            raise src.error(i, f"duplicate key {name!r} (first on line {where[name] + 1})")
        try:
            values[name] = reader(tokens[1:])
        except _Bad as e:
            raise src.error(i, f"{name}: {e}") from None
        where[name] = i
        i += 1
    missing = [k for k in _LIBLINEAR_REQUIRED if k not in where]
    if missing:
        raise src.error(i, f"missing key{'s' * (len(missing) > 1)} {', '.join(missing)}")

    rows = values["nr_feature"] + (values["bias"] is not None)
    start = i + 1
    try:
        w = _weights_array(rows)
    except _Bad as e:
        raise src.error(i, str(e)) from None
    src.weights_body(start, rows, w, sparse=False, stop=None, what="weight rows")  # one per row
    src.check_end_of_file(start + rows, f"the {rows} weight rows")
    return Model(
        task="binary", mode="n-slack", C=None, bias=values["bias"],
        n_features=values["nr_feature"], index_base=1, labels=values["label"], w=w,
        epsilon=None, dual=None, primal=None, relative_gap=None,
        examples=None, seed=None, epochs=None,
        solver="liblinear", format="liblinear", liblinear_solver=values["solver_type"],
    )


def format_liblinear(model: Model, path: str = "<model>") -> str:
    """The text LIBLINEAR's save_model would write for `model` (binary classifiers).

    solver_type is the model's own when it came from LIBLINEAR, else L2R_L1LOSS_SVC_DUAL.
    """
    try:
        if model.task != "binary":
            raise _Bad(f"task {model.task!r}: only binary models can be written for LIBLINEAR")
        if model.mode in KERNEL_MODES:
            raise _Bad(f"mode {model.mode}: LIBLINEAR models are linear, not kernel expansions")
        solver = model.liblinear_solver or _LIBLINEAR_DEFAULT_SOLVER
        if solver not in _LIBLINEAR_BINARY:
            raise _Bad(f"solver_type {solver!r} is not a LIBLINEAR binary classifier")
        if model.index_base != 1:
            raise _Bad(f"index_base {model.index_base}: LIBLINEAR numbers features from 1")
        n_features = _COUNT.check(model.n_features)
        if n_features > _INT32:
            raise _Bad(f"{n_features} features do not fit LIBLINEAR's int")
        bias = _check_bias(model.bias)
        if bias is not None and bias < 0:
            raise _Bad(f"bias {bias!r} < 0 would mean 'no bias' to LIBLINEAR")
        labels = _check_labels(model.labels)
        _binary_labels(labels)
        for x in labels:
            if not x.is_integer() or abs(x) > _INT32:
                raise _Bad(f"label {x!r}: LIBLINEAR model files store labels as integers")
        w = _checked_weights(model, (n_features + (bias is not None),))
    except _Bad as e:
        raise ModelError(path, None, f"cannot write LIBLINEAR model: {e}") from None

    head = [
        f"solver_type {solver}",
        "nr_class 2",
        "label " + " ".join(str(int(x)) for x in labels),
        f"nr_feature {n_features}",
        f"bias {format(-1.0 if bias is None else bias, '.17g')}",
        "w",
    ]
    rows = [format(x, ".17g") + " " for x in w.tolist()]
    return "\n".join(head + rows) + "\n"


def write_liblinear(model: Model, path, *, force: bool = True) -> None:
    """Write `model` as a LIBLINEAR model file, atomically (`-` = stdout)."""
    text = format_liblinear(model, str(path))
    with atomic_output(path, "w", force=force) as f:
        f.write(text)
