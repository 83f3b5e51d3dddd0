"""Ranking: pairwise preferences inside each query (SVM-rank's problem, Joachims 2002).

For every pair of documents (a, b) of one query with target_a > target_b, the constraint

    x_ab = x_a - x_b   (two terms, no copy),   l_ab = 1,   one slack per pair

(SVM-rank's n-slack formulation: a slack per pair, each with cost C times the query's `cost:`), so
P(w) = 1/2 ||w||^2 + sum_q C_q sum_{(a,b) in q} max(0, 1 - w.(x_a - x_b)). The primal is priced
per query in O(m log m) without listing pairs. Queries are named by `qid:` and need not be sorted
or contiguous; a bias feature cancels in every pair and is not used. Predictions are scores.

n-slack lists the pairs (`all_constraints`), 1-slack sums them into its plane without listing
(`aggregated_offender`); online-dual treats a query as one example whose constraints are sets of
its pairs (`worst_offenders`), the same primal with one slack per query.
"""

import zlib

import numpy as np

from svmtrain._oracles import ndcg_at_k, ranking_pair_coefficients, ranking_pair_stats, summed_rows
from svmtrain.data import DataError
from svmtrain.tasks.base import (Constraints, Geometry, PredictsScores, Problem, Task, finite_scores,
                                 group_costs)


def queries(block, path):
    """(order, query_ptr): rows order[query_ptr[q]:query_ptr[q+1]] form query q, queries in order
    of first appearance; every line needs a qid."""
    qid = block.qid
    if np.any(qid < 0):
        i = int(np.argmax(qid < 0))
        raise DataError(path, int(block.line[i]), "the ranking task needs qid:N on every line")
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    q = rank[inverse]
    order = np.argsort(q, kind="stable").astype(np.int64)
    query_ptr = np.concatenate(([0], np.cumsum(np.bincount(q, minlength=len(first))))).astype(np.int64)
    return order, query_ptr


def query_costs(block, path):
    """Each query's cost (queries in order of first appearance); its lines must agree."""
    order, query_ptr = queries(block, path)
    first = order[query_ptr[:-1]]
    inverse = np.empty(block.n_rows, np.int64)
    inverse[order] = np.repeat(np.arange(len(first)), np.diff(query_ptr))
    return group_costs(block, first, inverse, path, "query")


class Ranking(PredictsScores, Task):
    name = "ranking"
    grouping = "whole"
    examples_are = "queries"

    def costs(self, block, C):
        return C * query_costs(block, "")

    def pairs(self, block, path):
        """All preference pairs (a, b) and the query of each."""
        order, query_ptr = queries(block, path)
        a_all, b_all, q_all = [], [], []
        for q in range(len(query_ptr) - 1):
            rows = order[query_ptr[q]:query_ptr[q + 1]]
            t = block.target[rows]
            a, b = np.nonzero(t[:, None] > t[None, :])
            a_all.append(rows[a])
            b_all.append(rows[b])
            q_all.append(np.full(len(a), q, np.int64))
        cat = np.concatenate
        return (cat(a_all) if a_all else np.zeros(0, np.int64), cat(b_all) if b_all else np.zeros(0, np.int64),
                cat(q_all) if q_all else np.zeros(0, np.int64), order, query_ptr)

    def problem(self, block, path, C, geometry):
        """C per pair (the pairs of query q, listed in query order by `pairs`, each cost C_q) from
        each query's pair count: the pairs themselves are not listed here."""
        order, query_ptr = queries(block, path)
        query_cost = query_costs(block, path)
        _, n_pairs, _ = ranking_pair_stats(np.zeros(block.n_rows), block.target, query_ptr, order)
        C_query = C * query_cost
        return Problem(block.indptr, block.indices, block.data, geometry.n_cols,
                       self.n_weights(geometry), geometry.bias, np.repeat(C_query, n_pairs), path,
                       C_example=C_query)

    def all_constraints(self, problem, block):
        a, b, _, _, _ = self.pairs(block, problem.path)
        m = len(a)
        term_row = np.empty(2 * m, np.int64)
        term_row[0::2], term_row[1::2] = a, b
        term_scale = np.tile([1.0, -1.0], m)
        return Constraints(np.arange(0, 2 * m + 1, 2, dtype=np.int64), term_row, term_scale,
                           np.zeros(2 * m, np.int64), np.zeros(2 * m, bool), np.ones(m),
                           np.arange(m, dtype=np.int64), np.zeros(m, np.int64))

    #: online-dual looks at a query many times (the structured schedule): each look under a new w
    #: finds another set of violated pairs, as a sentence gives another labelling
    online_structured = True
    #: ... until a sweep raises UB by at most a quarter of epsilon UB, at most 40 times (the
    #: measurements: svmtrain.solvers.online, its docstring's paragraph on ranking)
    online_raise_share = 0.25
    online_looks = 40

    def worst_offenders(self, w, problem, block):
        """Per query (not per pair: problem.C_example are the costs, the examples are queries),
        H_q = the sum of its pairs' hinge losses, and one constraint: its violated pairs S as one,

            x_qS = sum_{(a,b) in S} (x_a - x_b) = sum_rows coef_row x_row,   l_qS = |S|,

        so that H_q = l_qS - w.x_qS = max over pair subsets S' of (|S'| - w.x_qS'): the query's
        term of P(w), C_q sum_pairs max(0, 1 - w.(x_a - x_b)), is C_q max(0, max_S' ...), one
        slack per query with the same primal as one per pair. Its dual (sum_S alpha_qS <= C_q) is
        the per-pair dual restricted to pair weights sum_{S containing the pair} alpha_qS: D stays a
        lower bound of the per-pair problem, and loses nothing at the optimum (any pair weights in
        [0, C_q] are a sum of nested level sets of total weight max <= C_q).

        online-dual caches a few such constraints per query (one per look) instead of its pairs.
        O(m log m) per query of m documents (`ranking_pair_coefficients`), no pair listed. Each
        x_qS is summed into one row appended to the problem's row store (as sequence appends its
        unit row), its single term on it: a cached constraint then costs at most n_cols entries,
        not the m rows of its query (45 against ~150 x 45 on ohsumed), in the engine's every dot
        product as in the cache. The key tells the sets S of one query apart. n-slack lists the
        pairs (`all_constraints`), 1-slack sums the queries' planes (`aggregated_offender`):
        neither calls this."""
        order, query_ptr = queries(block, problem.path)
        scores = Geometry(problem.n_cols, problem.bias).scores(w, block)
        coef, hinge, n_violated = ranking_pair_coefficients(scores, block.target, query_ptr, order)
        found = np.flatnonzero(n_violated > 0)
        # the rows of each violated query, queries in order (rows of the others have coef 0)
        rows = order[coef[order] != 0]
        query_of_row = np.empty(block.n_rows, np.int64)
        query_of_row[order] = np.repeat(np.arange(len(query_ptr) - 1), np.diff(query_ptr))
        lengths = np.bincount(query_of_row[rows], minlength=len(query_ptr) - 1)[found]
        bounds = np.concatenate(([0], np.cumsum(lengths))).tolist()
        keys = np.array([_set_key(rows[lo:hi], coef[rows[lo:hi]], int(n))
                         for lo, hi, n in zip(bounds[:-1], bounds[1:], n_violated[found].tolist())],
                        np.int64)
        indptr, indices, values = summed_rows(block.indptr, block.indices, block.data, rows,
                                              coef[rows], bounds, problem.n_cols)
        # the sums become rows n_rows.. of the problem's row store (after any rows it has)
        first = len(problem.indptr) - 1
        problem.indptr = np.concatenate((problem.indptr, problem.indptr[-1] + indptr[1:]))
        problem.indices = np.concatenate((problem.indices, indices))
        problem.data = np.concatenate((problem.data, values))
        k = len(found)
        cons = Constraints(np.arange(k + 1, dtype=np.int64), first + np.arange(k, dtype=np.int64),
                           np.ones(k), np.zeros(k, np.int64), np.zeros(k, bool),
                           n_violated[found].astype(np.float64), found.astype(np.int64), keys)
        return hinge, cons

    def aggregated_offender(self, w, problem, block):
        """The most violated 1-slack plane without listing pairs (Joachims 2006, sorting the scores
        of each query: O(m log m)): over the violated pairs, sum C_q (x_a - x_b) as one term per
        document, margin sum C_q (one per violated pair); loss sum_q C_q (its pairs' hinge)."""
        order, query_ptr = queries(block, problem.path)
        scores = Geometry(problem.n_cols, problem.bias).scores(w, block)
        coef, hinge, n_violated = ranking_pair_coefficients(scores, block.target, query_ptr, order)
        C_q = problem.C_example
        row_C = np.empty(block.n_rows)
        row_C[order] = np.repeat(C_q, np.diff(query_ptr))
        coef = coef * row_C
        rows = np.flatnonzero(coef).astype(np.int64)
        m = len(rows)
        plane = Constraints(np.array([0, m], np.int64), rows, coef[rows], np.zeros(m, np.int64),
                            np.zeros(m, bool), np.array([float(np.dot(C_q, n_violated))]),
                            np.zeros(1, np.int64), np.zeros(1, np.int64))
        return float(np.dot(C_q, hinge)), plane

    def violations(self, w, block, path, geometry):
        """Per query, the sum of its pairs' hinge losses (each already >= 0)."""
        query_costs(block, path)      # a query's lines agree on their cost (errors name the file)
        order, query_ptr = queries(block, path)
        scores = finite_scores(geometry.scores(w, block), block, path)
        hinge, _, _ = ranking_pair_stats(scores, block.target, query_ptr, order)
        return hinge

    def predict(self, w, block, geometry, path):
        queries(block, path)   # every line needs its qid, for the metric
        scores, _ = super().predict(w, block, geometry, path)
        finite_scores(scores, block, path)   # (the metric orders each query's pairs by them)
        return scores, scores

    def new_metric(self):
        return RankingMetric()


def _set_key(rows, coef, count):
    """A 62-bit fingerprint of a query's violated set (its rows, their coefficients, its size)."""
    crc = zlib.crc32(np.ascontiguousarray(rows, np.int64).tobytes())
    crc = zlib.crc32(np.ascontiguousarray(coef, np.float64).tobytes(), crc)
    return ((crc << 30) ^ zlib.adler32(np.int64(count).tobytes() + coef.tobytes())) & ((1 << 62) - 1)


class RankingMetric:
    """Pairwise accuracy (pairs ordered right / all preference pairs) and mean NDCG@10 per query."""

    def __init__(self):
        self.pairs = self.correct = 0
        self.ndcg = []

    def add(self, scores, block):
        order, query_ptr = queries(block, "")
        _, n_pairs, n_correct = ranking_pair_stats(scores, block.target, query_ptr, order)
        self.pairs += int(np.sum(n_pairs))
        self.correct += int(np.sum(n_correct))
        self.ndcg.extend(ndcg_at_k(scores, block.target, query_ptr, order, 10).tolist())

    def summary(self):
        return {"pairwise_accuracy": self.correct / self.pairs if self.pairs else 0.0,
                "pairs": self.pairs, "correct_pairs": self.correct,
                "ndcg@10": float(np.mean(self.ndcg)) if self.ndcg else 0.0, "queries": len(self.ndcg)}

    def line(self):
        s = self.summary()
        return ("Pairwise accuracy = %g%% (%d/%d), NDCG@10 = %g (%d queries)"
                % (100 * s["pairwise_accuracy"], s["correct_pairs"], s["pairs"], s["ndcg@10"],
                   s["queries"]))
