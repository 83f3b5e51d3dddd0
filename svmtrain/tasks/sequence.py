"""Sequence tagging with a first-order HMM (SVM-hmm's problem; Joachims et al. sec. 5.3).

One token per line; `qid:` names the sentence (its lines are consecutive); the target is the tag.
psi(x, y) = the token features placed in their tag's block (emissions) + the counts of tag
transitions (p -> c, with p = START for the first token). w = (K emission blocks of `width`,
then the (K+1) x K transition weights). For a sentence i and a labelling y != y_i:

    x_iy = psi(x_i, y_i) - psi(x_i, y)    (terms: +-token rows at two tag blocks where the tags
                                           differ, and transition-count differences on a unit row)
    l_iy = Delta(y_i, y)                  (Hamming: tokens tagged differently; or zero-one)

with slack rescaling scaling x_iy by Delta. Viterbi predicts; loss-augmented Viterbi finds the worst
offender, whose value is exact: the primal of every cutting-plane round is exact.

The solvers keep the emissions feature-major (the K weights of feature j at w[j * K : j * K + K],
tag k's terms at offset k with stride K) and the transitions after them, at K * width + p * K + c,
where the unit row's column 0 lands with that stride. The model file keeps K class-major emission
blocks of width, then the transitions; model_weights and solver_weights convert.
"""

import zlib

import numpy as np

from svmtrain._oracles import block_scores, viterbi, viterbi_loss_augmented
from svmtrain.data import DataError, repeated_run
from svmtrain.tasks.base import Constraints, Geometry, LabelledTask, Problem, group_costs
from svmtrain.tasks.multiclass import AccuracyMetric


def labelling_key(tags):
    """A deterministic 63-bit fingerprint of a labelling (Python's hash() is salted per process)."""
    raw = np.ascontiguousarray(tags, dtype=np.int64).tobytes()
    return (zlib.crc32(raw) << 31) ^ zlib.adler32(raw)


def sentences(block, path):
    """seq_ptr (n_sentences + 1) of the runs of equal qid; every line needs a qid, and a sentence's
    lines must be consecutive."""
    qid = block.qid
    if np.any(qid < 0):
        i = int(np.argmax(qid < 0))
        raise DataError(path, int(block.line[i]), "the sequence task needs qid:N on every line "
                                                  "(N names the sentence)")
    starts = np.concatenate(([0], np.flatnonzero(qid[1:] != qid[:-1]) + 1))
    i = repeated_run(qid, starts)
    if i is not None:
        raise DataError(path, int(block.line[i]), f"qid {int(qid[i])} appears again after other "
                                                  "sentences: a sentence's lines must be consecutive")
    return np.concatenate((starts, [block.n_rows])).astype(np.int64)


def sentence_costs(block, path):
    """Each sentence's cost; its lines must agree."""
    seq_ptr = sentences(block, path)
    inverse = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    return group_costs(block, seq_ptr[:-1], inverse, path, "sentence")


class Sequence(LabelledTask):
    name = "sequence"
    grouping = "consecutive"
    examples_are = "sentences"
    default_loss = "hamming"
    label_noun, labels_noun = "tag", "tags"

    @classmethod
    def from_training_data(cls, block, path, options=None):
        options = options or {}
        tags = np.unique(block.target)
        if len(tags) < 1:
            raise DataError(path, None, "the sequence task needs at least one tagged token")
        return cls(tags, options.get("loss"), options.get("rescaling"))

    def n_weights(self, geometry):
        return self.K * geometry.width + (self.K + 1) * self.K

    def model_weights(self, w, geometry):
        """The solvers' w (feature-major emissions) with the emissions as K class-major blocks."""
        w = np.asarray(w, dtype=np.float64)
        E = self.K * geometry.width
        return np.concatenate([self.class_major(w[:E]), w[E:]])

    def solver_weights(self, model_w):
        """The model's w (K emission blocks, then transitions) with feature-major emissions."""
        w = np.asarray(model_w, dtype=np.float64).ravel()
        E = len(w) - (self.K + 1) * self.K
        return np.concatenate([self.feature_major(w[:E]), w[E:]])

    def costs(self, block, C):
        return C * sentence_costs(block, "")

    def problem(self, block, path, C, geometry):
        seq_ptr = sentences(block, path)
        # one extra "unit row" (a single 1.0 in column 0): transition counts are terms on it
        indptr = np.append(block.indptr, block.indptr[-1] + 1)
        indices = np.append(block.indices, 0)
        data = np.append(block.data, 1.0)
        return Problem(indptr, indices, data, max(geometry.n_cols, 1), self.n_weights(geometry),
                       geometry.bias, C * sentence_costs(block, path), path, stride=self.K)

    def _parts(self, w, block, geometry):
        W = geometry.width
        E = block_scores(block.indptr, block.indices, block.data, np.ascontiguousarray(w),
                         geometry.n_cols, self.K, 0.0 if geometry.bias is None else float(geometry.bias),
                         geometry.bias is not None, True)
        T = np.ascontiguousarray(w[self.K * W:].reshape(self.K + 1, self.K))
        return E, T

    def _worst(self, w, block, path, geometry):
        seq_ptr = sentences(block, path)
        y = self.label_index(block, path)
        E, T = self._parts(w, block, geometry)
        tags, value, delta = viterbi_loss_augmented(E, T, seq_ptr, y, 0 if self.loss == "hamming" else 1,
                                                     1 if self.rescaling == "slack" else 0)
        return seq_ptr, y, tags, value, delta

    def worst_offenders(self, w, problem, block):
        geometry = Geometry(problem.n_cols, problem.bias)
        seq_ptr, y, yhat, value, delta = self._worst(w, block, problem.path, geometry)
        return value, self._constraints(seq_ptr, y, yhat, delta, geometry.width, block.n_rows)

    def _constraints(self, seq_ptr, y, yhat, delta, W, unit_row):
        """psi(y) - psi(yhat) per sentence as terms, scaled by Delta under slack rescaling."""
        K = self.K
        n_seq = len(seq_ptr) - 1
        sent = np.repeat(np.arange(n_seq), np.diff(seq_ptr))
        scale = delta if self.rescaling == "slack" else np.ones(n_seq)
        # emissions: tokens tagged differently, +row in the true tag's block, -row in the other's
        tok = np.flatnonzero(y != yhat)
        e_sent = np.repeat(sent[tok], 2)
        e_row = np.repeat(tok, 2)
        e_scale = np.empty(2 * len(tok))
        e_scale[0::2], e_scale[1::2] = 1.0, -1.0
        e_offset = np.empty(2 * len(tok), np.int64)
        e_offset[0::2], e_offset[1::2] = y[tok], yhat[tok]     # feature-major: stride K
        # transitions: count differences of (previous, current) pairs, previous = START (K) first
        first = np.zeros(len(y), bool)
        first[seq_ptr[:-1]] = True
        prev_true = np.where(first, K, np.roll(y, 1))
        prev_hat = np.where(first, K, np.roll(yhat, 1))
        pair_true = sent * (K + 1) * K + prev_true * K + y
        pair_hat = sent * (K + 1) * K + prev_hat * K + yhat
        ids, inverse = np.unique(np.concatenate([pair_true, pair_hat]), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate([np.ones(len(y)), -np.ones(len(y))]),
                             minlength=len(ids))
        nz = counts != 0
        t_sent = ids[nz] // ((K + 1) * K)
        t_pair = ids[nz] % ((K + 1) * K)
        # all terms, ordered by sentence (a stable sort keeps emissions before transitions)
        t_all_sent = np.concatenate([e_sent, t_sent])
        order = np.argsort(t_all_sent, kind="stable")
        term_row = np.concatenate([e_row, np.full(len(t_sent), unit_row)])[order]
        term_scale = (np.concatenate([e_scale, counts[nz]]) * scale[t_all_sent])[order]
        term_offset = np.concatenate([e_offset, K * W + t_pair])[order]
        term_bias = np.concatenate([np.ones(len(e_row), bool), np.zeros(len(t_sent), bool)])[order]
        tptr = np.concatenate(([0], np.cumsum(np.bincount(t_all_sent, minlength=n_seq)))).astype(np.int64)
        margin = delta   # l = Delta under both rescalings; slack rescaling scales x by Delta
        key = np.array([labelling_key(yhat[a:b]) for a, b in zip(seq_ptr[:-1], seq_ptr[1:])],
                       dtype=np.int64)
        return Constraints(tptr, term_row.astype(np.int64), term_scale, term_offset.astype(np.int64),
                           term_bias, margin.astype(np.float64), np.arange(n_seq, dtype=np.int64), key)

    def violations(self, w, block, path, geometry):
        sentence_costs(block, path)   # a sentence's lines agree on their cost (errors name the file)
        return self._worst(w, block, path, geometry)[3]

    def predict(self, w, block, geometry, path):
        seq_ptr = sentences(block, path)
        E, T = self._parts(w, block, geometry)
        tags, _ = viterbi(E, T, seq_ptr)
        return self.labels[tags], E

    def format_scores(self, values):
        return " ".join(repr(float(v)) for v in values)

    def new_metric(self):
        return TokenAccuracy()


class TokenAccuracy(AccuracyMetric):
    def line(self):
        s = self.summary()
        return "Token accuracy = %g%% (%d/%d)" % (100.0 * s["accuracy"], s["correct"], s["total"])
