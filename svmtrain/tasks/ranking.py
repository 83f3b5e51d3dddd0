"""Ranking: pairwise preferences inside each query (SVM-rank's problem, Joachims 2002).

For every pair of documents (a, b) of one query with target_a > target_b, the constraint

    x_ab = x_a - x_b   (two terms, no copy),   l_ab = 1,   one slack per pair

(SVM-rank's n-slack formulation: a slack per pair, each with cost C times the query's `cost:`), so
P(w) = 1/2 ||w||^2 + sum_q C_q sum_{(a,b) in q} max(0, 1 - w.(x_a - x_b)). The primal is priced
per query in O(m log m) without listing pairs. Queries are named by `qid:` and need not be sorted
or contiguous; a bias feature cancels in every pair and is not used. Predictions are scores.
"""

import numpy as np

from svmtrain._oracles import ndcg_at_k, ranking_pair_coefficients, ranking_pair_stats
from svmtrain.data import DataError
from svmtrain.tasks.base import Constraints, Geometry, PredictsScores, Problem, Task, group_costs


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
        a, b, q, order, query_ptr = self.pairs(block, path)
        query_cost = query_costs(block, path)
        return Problem(block.indptr, block.indices, block.data, geometry.n_cols,
                       self.n_weights(geometry), geometry.bias, C * query_cost[q], path,
                       C_example=C * query_cost)

    def all_constraints(self, problem, block):
        a, b, _, _, _ = self.pairs(block, problem.path)
        m = len(a)
        term_row = np.empty(2 * m, np.int64)
        term_row[0::2], term_row[1::2] = a, b
        term_scale = np.tile([1.0, -1.0], m)
        return Constraints(np.arange(0, 2 * m + 1, 2, dtype=np.int64), term_row, term_scale,
                           np.zeros(2 * m, np.int64), np.zeros(2 * m, bool), np.ones(m),
                           np.arange(m, dtype=np.int64), np.zeros(m, np.int64))

    def worst_offenders(self, w, problem, block):
        raise NotImplementedError("the ranking task lists its pairs (n-slack per pair)")

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
        hinge, _, _ = ranking_pair_stats(geometry.scores(w, block), block.target, query_ptr, order)
        return hinge

    def predict(self, w, block, geometry, path):
        queries(block, path)   # every line needs its qid, for the metric
        return super().predict(w, block, geometry, path)

    def new_metric(self):
        return RankingMetric()


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
