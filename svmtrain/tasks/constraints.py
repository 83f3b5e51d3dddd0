"""The general problem written directly (Ramanan eq. 2): each line is one constraint x_ij with its
margin l_ij as the target; lines with the same qid share one slack (a line without a qid has its
own). Hard-negative mining, latent and multiple-instance pipelines write this.

    P(w) = 1/2 ||w||^2 + sum_g C_g max(0, max_{lines of g} (l - w.x))

C_g is C times the group's `cost:` (every line of a group must give the same cost, or none).
Predictions are the scores w.x, one per line.
"""

import numpy as np

from svmtrain.data import DataError
from svmtrain.tasks.base import Constraints, Geometry, PredictsScores, Problem, Task


def slack_groups(block, path):
    """Group index per line (groups numbered in order of first appearance) and each group's cost."""
    qid = block.qid
    key = np.where(qid >= 0, qid, -1 - np.arange(len(qid)))    # no qid: a group of its own
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")                    # rank groups by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    group = rank[inverse]
    cost = block.cost[np.sort(first)]
    disagree = np.flatnonzero(block.cost != cost[group])
    if len(disagree):
        i = int(disagree[0])
        raise DataError(path, int(block.line[i]),
                        f"cost {block.cost[i]:g} differs from the cost {cost[group[i]]:g} of the "
                        f"first line of qid {int(qid[i])}: one slack, one cost")
    return group.astype(np.int64), cost


class RawConstraints(PredictsScores, Task):
    name = "constraints"
    grouping = "whole"
    examples_are = "slack groups"
    keyed_examples = True

    def example_keys(self, block, path):
        """A group's qid, or -(its line number) for a line without one (its own group)."""
        group, _ = slack_groups(block, path)
        _, first = np.unique(group, return_index=True)
        qid = block.qid[first]
        return np.where(qid >= 0, qid, -block.line[first]).astype(np.int64)

    def costs(self, block, C):
        return C * slack_groups(block, "")[1]

    def problem(self, block, path, C, geometry):
        _, cost = slack_groups(block, path)
        return Problem(block.indptr, block.indices, block.data, geometry.n_cols,
                       self.n_weights(geometry), geometry.bias, C * cost, path)

    def all_constraints(self, problem, block):
        group, _ = slack_groups(block, problem.path)
        n = block.n_rows
        return Constraints.one_term(np.arange(n), np.ones(n), block.target, group, key=np.arange(n))

    def worst_offenders(self, w, problem, block):
        return (self.violations(w, block, problem.path, Geometry(problem.n_cols, problem.bias)),
                self.all_constraints(problem, block))

    def violations(self, w, block, path, geometry):
        group, cost = slack_groups(block, path)
        worst = np.full(len(cost), -np.inf)
        np.maximum.at(worst, group, block.target - geometry.scores(w, block))
        return worst

    def new_metric(self):
        return ConstraintMetric()


class ConstraintMetric:
    """How many lines the model satisfies (w.x >= margin) and their mean violation."""

    def __init__(self):
        self.total = self.satisfied = 0
        self.violation = 0.0

    def add(self, scores, block):
        v = np.maximum(0.0, block.target - scores)
        self.total += len(v)
        self.satisfied += int(np.sum(v == 0.0))
        self.violation += float(v.sum())

    def summary(self):
        return {"satisfied": self.satisfied, "total": self.total,
                "fraction_satisfied": self.satisfied / self.total if self.total else 0.0,
                "mean_violation": self.violation / self.total if self.total else 0.0}

    def line(self):
        s = self.summary()
        return ("Satisfied = %g%% (%d/%d) of the constraints w.x >= margin; mean violation %g"
                % (100 * s["fraction_satisfied"], s["satisfied"], s["total"], s["mean_violation"]))
