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
from svmtrain.data import (DataError, distinct, index_dtype, narrow_row_arrays, repeated_run,
                           value_dtype)
from svmtrain.tasks.base import (Constraints, Geometry, LabelledTask, Problem, finite_scores,
                                 group_costs)
from svmtrain.tasks.multiclass import AccuracyMetric

ORACLE_TOKENS = 16384          # tokens of whole sentences per loss-augmented Viterbi call


def _sentence_chunks(seq_ptr):
    """(first, stop) sentence ranges of about ORACLE_TOKENS tokens (one sentence at least)."""
    n_seq = len(seq_ptr) - 1
    a = 0
    while a < n_seq:
        b = int(np.searchsorted(seq_ptr, seq_ptr[a] + ORACLE_TOKENS, side="right")) - 1
        b = min(max(b, a + 1), n_seq)
        yield a, b
        a = b


def labelling_key(tags):
    """A deterministic 63-bit fingerprint of a labelling (Python's hash() is salted per process)."""
    raw = np.ascontiguousarray(tags, dtype=np.int64).tobytes()
    return (zlib.crc32(raw) << 31) ^ zlib.adler32(raw)


def labelling_keys(tags, seq_ptr):
    """labelling_key of every sentence's tags (seq_ptr: the sentences' row pointers), as int64:
    the checksums run over slices of one byte buffer, with no array made per sentence."""
    raw = memoryview(np.ascontiguousarray(tags, dtype=np.int64)).cast("B")
    crc32, adler32 = zlib.crc32, zlib.adler32
    bounds = (8 * np.asarray(seq_ptr, dtype=np.int64)).tolist()
    return np.fromiter(((crc32(raw[a:b]) << 31) ^ adler32(raw[a:b])
                        for a, b in zip(bounds[:-1], bounds[1:])), dtype=np.int64,
                       count=len(bounds) - 1)


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
    compact_values = True       # its store, oracle, engine and plane builder read byte and float32 values
    examples_are = "sentences"
    default_loss = "hamming"
    label_noun, labels_noun = "tag", "tags"
    #: n-slack cutting planes drop a cached labelling once its alpha has been 0 for this many
    #: rounds (the solver's default is 50). A labelling's constraint holds two terms per mistaken
    #: token and its transition counts, and the early ones (w near 0: nearly every token wrong) are
    #: the largest and soon idle for good: on 3,000 sentences of UD English EWT at C 0.1, after 15
    #: rounds 14% of the 39k cached constraints had alpha > 0, holding 9% of their 1.7M terms. At 2
    #: the run to -e 1e-3 takes the same 44 rounds and CPU time as at 5 (25 s), with 30k constraints
    #: cached at the end against 80k at 50, and a peak RSS of 159 MB against 328 MB; a dropped
    #: labelling that is violated again is simply added again.
    inactive_rounds = 2
    online_keep_inactive = 2

    @classmethod
    def from_training_data(cls, block, path, options=None):
        options = options or {}
        tags = distinct(block.target)
        if len(tags) < 1:
            raise DataError(path, None, "the sequence task needs at least one tagged token")
        return cls(tags, options.get("loss"), options.get("rescaling"))

    def n_weights(self, geometry):
        return self.K * geometry.width + (self.K + 1) * self.K

    def model_weights(self, w, geometry):
        """The solvers' w (feature-major emissions) with the emissions as K class-major blocks,
        transposed into the one array returned (a transposed copy, then the two joined, held two
        copies of w next to the solver's at the end of a run: 32 MB on UD English EWT)."""
        w = np.asarray(w, dtype=np.float64)
        E = self.K * geometry.width
        out = np.empty_like(w)
        self.class_major(w[:E], out=out[:E])
        out[E:] = w[E:]
        return out

    def solver_weights(self, model_w):
        """The model's w (K emission blocks, then transitions) with feature-major emissions."""
        w = np.asarray(model_w, dtype=np.float64).ravel()
        E = len(w) - (self.K + 1) * self.K
        out = np.empty(len(w))        # (the emissions transposed into it: one copy of w, not two)
        self.feature_major(w[:E], out=out[:E])
        out[E:] = w[E:]
        return out

    def costs(self, block, C):
        return C * sentence_costs(block, "")

    def problem(self, block, path, C, geometry):
        """The row store is the block's rows and one extra "unit row" (a single 1.0 in column 0):
        transition counts are terms on it. Appending copies the rows, so the block's arrays are
        then made views of the store's (the same values): the rows are held once, not twice, at
        the peak of a training run. The store keeps int32 columns (a training file's columns are
        below MAX_FEATURES), which the engine, the oracle and the plane builder read in place: on
        UD English EWT's 3.1M nonzeros 12 MB less for the rows and no 12 MB copy in each engine."""
        # each of the reader's arrays is let go once its copy is made, the widest first: its
        # float64 values and int64 columns (16 bytes a non-zero) held beside the store's copies
        # were the peak of a conll2000 n-slack run (145.9 -> 126.2 MB; UD English EWT 114.0 ->
        # 112.2 MB; the same models)
        nnz = len(block.indices)
        data = np.empty(nnz + 1, value_dtype(block.data, self.compact_values))
        data[:nnz] = block.data
        data[nnz] = 1.0
        block.data = data[:-1]
        indices = np.empty(nnz + 1, index_dtype(max(geometry.n_cols, 1)))
        indices[:nnz] = block.indices
        indices[nnz] = 0
        block.indices = indices[:-1]
        indptr = np.append(block.indptr, block.indptr[-1] + 1)
        block.indptr = indptr[:-1]
        problem = Problem(indptr, indices, data, max(geometry.n_cols, 1), self.n_weights(geometry),
                          geometry.bias, C * sentence_costs(block, path), path, stride=self.K)
        # every oracle pass reads the tokens' tags, sentences and lines: held through training in
        # the narrowest exact types (UD English EWT: 6.5 MB as read, 2 MB so)
        narrow_row_arrays(block, self.compact_values)
        return problem

    def _parts(self, w, block, geometry, path):
        """The emission scores E (tokens x K), a token whose scores overflow refused at its line
        (finite_scores), and the transitions T ((K + 1) x K)."""
        W = geometry.width
        E = block_scores(block.indptr, block.indices, block.data, np.ascontiguousarray(w),
                         geometry.n_cols, self.K, 0.0 if geometry.bias is None else float(geometry.bias),
                         geometry.bias is not None, True)
        finite_scores(E, block, path, "token")
        T = np.ascontiguousarray(w[self.K * W:].reshape(self.K + 1, self.K))
        return E, T

    def _worst(self, w, block, path, geometry):
        """Loss-augmented Viterbi over the block, ORACLE_TOKENS tokens of whole sentences at a
        time: the emission scores of the whole block (tokens x K doubles, 28 MB on UD English
        EWT) were the peak of an n-slack round; the sentences are independent, so the result is
        the same."""
        seq_ptr = sentences(block, path)
        y = self.label_index(block, path)
        n_seq = len(seq_ptr) - 1
        tags = np.empty(block.n_rows, np.int64)
        value, delta = np.empty(n_seq), np.empty(n_seq)
        kind, rescaling = 0 if self.loss == "hamming" else 1, 1 if self.rescaling == "slack" else 0
        for a, b in _sentence_chunks(seq_ptr):
            lo, hi = int(seq_ptr[a]), int(seq_ptr[b])
            E, T = self._parts(w, block.rows(lo, hi), geometry, path)
            tags[lo:hi], value[a:b], delta[a:b] = viterbi_loss_augmented(
                E, T, seq_ptr[a:b + 1] - lo, y[lo:hi], kind, rescaling)
        return seq_ptr, y, tags, value, delta

    def worst_offenders(self, w, problem, block):
        """The worst offenders as constraints, built ORACLE_TOKENS tokens at a time (the
        temporaries of building them for a whole block were the peak of an n-slack round)."""
        geometry = Geometry(problem.n_cols, problem.bias)
        seq_ptr, y, yhat, value, delta = self._worst(w, block, problem.path, geometry)
        parts = []
        for a, b in _sentence_chunks(seq_ptr):
            lo, hi = int(seq_ptr[a]), int(seq_ptr[b])
            parts.append(self._constraints(seq_ptr[a:b + 1] - lo, y[lo:hi], yhat[lo:hi], delta[a:b],
                                           geometry.width, block.n_rows, first_row=lo, first_sentence=a))
        return value, Constraints.concat(parts) if len(parts) != 1 else parts[0]

    def _constraints(self, seq_ptr, y, yhat, delta, W, unit_row, first_row=0, first_sentence=0):
        """psi(y) - psi(yhat) per sentence as terms, scaled by Delta under slack rescaling; the
        sentences' rows are numbered from first_row, the sentences (groups) from first_sentence."""
        K = self.K
        n_seq = len(seq_ptr) - 1
        sent = np.repeat(np.arange(n_seq), np.diff(seq_ptr))
        scale = delta if self.rescaling == "slack" else np.ones(n_seq)
        # emissions: tokens tagged differently, +row in the true tag's block, -row in the other's
        tok = np.flatnonzero(y != yhat)
        e_sent = np.repeat(sent[tok], 2)
        e_row = np.repeat(tok + first_row, 2)
        e_scale = np.empty(2 * len(tok))
        e_scale[0::2], e_scale[1::2] = 1.0, -1.0
        e_offset = np.empty(2 * len(tok), np.int64)
        e_offset[0::2], e_offset[1::2] = y[tok], yhat[tok]     # feature-major: stride K
        # transitions: count differences of (previous, current) pairs, previous = START (K) first
        first = np.zeros(len(y), bool)
        first[seq_ptr[:-1]] = True
        prev_true = np.where(first, K, np.roll(y, 1))
        prev_hat = np.where(first, K, np.roll(yhat, 1))
        # a token whose pair is the same in both labellings adds +1 and -1 to one count: only
        # the others are sorted (a sentence's few mistakes, not its every token; the same counts)
        moved = (prev_true != prev_hat) | (y != yhat)
        pair_true = (sent * (K + 1) * K + prev_true * K + y)[moved]
        pair_hat = (sent * (K + 1) * K + prev_hat * K + yhat)[moved]
        m = len(pair_true)
        ids, inverse = np.unique(np.concatenate([pair_true, pair_hat]), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate([np.ones(m), -np.ones(m)]),
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
        key = labelling_keys(yhat, seq_ptr)
        # rows and offsets as int32 when they fit (they do for any file a model can be trained
        # on), the scales (+-1, a count, times Delta) float32 when each is one exactly: the
        # cache's terms cost 13 bytes, not 25 (UD English EWT: 1-2 million of them)
        index = index_dtype(max(unit_row, K * W + (K + 1) * K))
        term_scale = term_scale.astype(value_dtype(term_scale, self.compact_values, bytes_too=False),
                                       copy=False)
        return Constraints(tptr, term_row.astype(index), term_scale, term_offset.astype(index),
                           term_bias, margin.astype(np.float64),
                           first_sentence + np.arange(n_seq, dtype=np.int64), key)

    def evicted_codes(self, cons, rel):
        """A constraint as its labelling's mistakes: position * K + predicted tag for every
        token tagged other than its true tag (its emission term of negative scale, the row at the
        predicted tag's block: offset = the tag). 8 bytes a mistaken token, where its terms take
        26 and the transitions' about as much again."""
        lengths = np.diff(cons.tptr)
        mistaken = np.asarray(cons.term_bias, bool) & (cons.term_scale < 0)
        owner = np.repeat(np.arange(cons.size), lengths)[mistaken]
        cptr = np.zeros(cons.size + 1, np.int64)
        np.cumsum(np.bincount(owner, minlength=cons.size), out=cptr[1:])
        tags = np.asarray(cons.term_offset, np.int64)[mistaken]
        codes = np.asarray(rel, np.int64)[mistaken] * self.K + tags
        return cptr, codes

    def constraints_from_codes(self, problem, block, examples, cptr, codes):
        """The sentences `examples` of the block under the labellings coded by evicted_codes:
        _constraints over their tokens, the rows then renamed to the block's (the unit row is the
        problem's, after the block's rows)."""
        seq_ptr = sentences(block, problem.path)
        examples = np.asarray(examples, np.int64)
        first, stop = seq_ptr[examples], seq_ptr[examples + 1]
        n = stop - first
        rows = np.repeat(first - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        local_ptr = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
        y = self.label_index(block, problem.path)[rows]
        yhat = y.copy()
        owner = np.repeat(np.arange(len(examples)), np.diff(cptr))
        pos, tag = np.divmod(np.asarray(codes, np.int64), self.K)
        if np.any(pos >= n[owner]) or np.any(pos < 0):
            raise DataError(problem.path, None, "a sentence has fewer tokens than when it was read "
                                                "before: the file changed during training")
        yhat[local_ptr[owner] + pos] = tag
        wrong = np.bincount(np.repeat(np.arange(len(examples)), n), weights=y != yhat,
                            minlength=len(examples))
        delta = wrong if self.loss == "hamming" else (wrong > 0).astype(np.float64)
        W = Geometry(problem.n_cols, problem.bias).width
        cons = self._constraints(local_ptr, y, yhat, delta, W, len(rows))
        term_row = np.asarray(cons.term_row, np.int64)
        unit = term_row == len(rows)
        term_row = np.where(unit, block.n_rows, rows[np.where(unit, 0, term_row)])
        index = index_dtype(max(block.n_rows, self.K * W + (self.K + 1) * self.K))
        cons.term_row = term_row.astype(index)
        cons.group = examples
        return cons

    def violations(self, w, block, path, geometry):
        sentence_costs(block, path)   # a sentence's lines agree on their cost (errors name the file)
        return self._worst(w, block, path, geometry)[3]

    def predict(self, w, block, geometry, path):
        seq_ptr = sentences(block, path)
        E, T = self._parts(w, block, geometry, path)
        tags, _ = viterbi(E, T, seq_ptr)
        return self.labels[tags], E

    def new_metric(self):
        return TokenAccuracy()


class TokenAccuracy(AccuracyMetric):
    def line(self):
        s = self.summary()
        return "Token accuracy = %g%% (%d/%d)" % (100.0 * s["accuracy"], s["correct"], s["total"])
