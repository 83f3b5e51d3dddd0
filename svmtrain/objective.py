"""The primal objective, in the one code path used by training reports and by verify-bound.

    P(w) = 1/2 ||w||^2 + sum_i C_i max(0, max_j (l_ij - w . x_ij))

The loss is summed example by example in file order with a compensation carried across blocks, so
the value does not depend on how the data was cut into blocks: `verify-bound` streaming a file
reproduces the figure that training recorded, bit for bit. Examples that span several rows (a
sentence, a query) are put back together across block boundaries first.
"""

import math

import numpy as np

from svmtrain._linear import hinge_sum
from svmtrain.data import whole_examples
from svmtrain.records import record


@record
class PrimalValue:
    primal: float
    regularizer: float
    loss: float
    examples: int


class PrimalAccumulator:
    """Sums the loss over blocks of whole examples (see svmtrain.data.whole_examples)."""

    def __init__(self, task, w, geometry, C, path):
        self.task, self.w, self.geometry, self.C, self.path = task, w, geometry, C, path
        self.acc = np.zeros(2)
        self.examples = 0

    def add(self, block):
        v = self.task.violations(self.w, block, self.path, self.geometry)   # validates the rows first
        v = self.task.costs(block, self.C) * v
        hinge_sum(np.ascontiguousarray(v, dtype=np.float64), self.acc)
        self.examples += len(v)

    def add_losses(self, losses, examples):
        """Losses C_i max(0, H_i) computed elsewhere (a partition of the file, in file order): the
        same sum as `add` over those examples (add skips the non-positive ones)."""
        hinge_sum(np.ascontiguousarray(losses, dtype=np.float64), self.acc)
        self.examples += int(examples)

    def value(self):
        regularizer = 0.5 * float(np.dot(self.w.ravel(), self.w.ravel()))
        loss = float(self.acc[0] + self.acc[1])
        return PrimalValue(regularizer + loss, regularizer, loss, self.examples)


def primal(task, w, geometry, C, blocks, path):
    acc = PrimalAccumulator(task, w, geometry, C, path)
    for block in whole_examples(blocks, task.grouping, path):
        acc.add(block)
        del block                   # not held while the next block is read
    return acc.value()


def dual(w, margin, alpha):
    """D(alpha) = -1/2 ||w(alpha)||^2 + sum l alpha, with the same ||w||^2 as `primal`."""
    return -0.5 * float(np.dot(w.ravel(), w.ravel())) + float(np.dot(margin, alpha))


def relative_gap(primal, dual):
    """(P - D) / P, the stopping quantity; 0 when both are 0 (nothing to learn)."""
    gap = primal - dual
    if primal > 0.0:
        return max(gap, 0.0) / primal
    return 0.0 if gap <= 0.0 else math.inf
