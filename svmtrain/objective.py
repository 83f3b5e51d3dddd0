"""The primal objective, in the one code path used by training reports and by verify-bound.

    P(w) = 1/2 ||w||^2 + sum_i C_i max(0, max_j (l_ij - w . x_ij))

The loss is summed example by example in file order with a compensation carried across blocks, so
the value does not depend on how the data was cut into blocks: `verify-bound` streaming a file
reproduces the figure that training recorded, bit for bit. Examples that span several rows (a
sentence, a query) are put back together across block boundaries first. ||w||^2 and sum l alpha
are added in index order (svmtrain._linear.dot), not by BLAS, whose order depends on the machine:
the figures are the same wherever they are computed, `train`'s lean path (svmtrain.lean_train,
which imports no numpy, hence numpy's import here only where arrays are made) included.
"""

import math

from svmtrain._linear import dot, hinge_sum


class PrimalValue:
    """P(w) = regularizer + loss, over `examples` examples. (A plain class, not a record: this
    module is imported by `train`'s lean path, where svmtrain.records' dataclasses would cost
    12 ms.)"""

    __slots__ = ("primal", "regularizer", "loss", "examples")

    def __init__(self, primal, regularizer, loss, examples):
        self.primal, self.regularizer, self.loss, self.examples = primal, regularizer, loss, examples

    def __eq__(self, other):
        return (isinstance(other, PrimalValue)
                and (self.primal, self.regularizer, self.loss, self.examples)
                == (other.primal, other.regularizer, other.loss, other.examples))

    def __repr__(self):
        return (f"PrimalValue(primal={self.primal!r}, regularizer={self.regularizer!r}, "
                f"loss={self.loss!r}, examples={self.examples!r})")


class PrimalAccumulator:
    """Sums the loss over blocks of whole examples (see svmtrain.data.whole_examples)."""

    def __init__(self, task, w, geometry, C, path):
        self.task, self.w, self.geometry, self.C, self.path = task, w, geometry, C, path
        import numpy as np
        self.acc = np.zeros(2)
        self.examples = 0

    def add(self, block):
        import numpy as np
        v = self.task.violations(self.w, block, self.path, self.geometry)   # validates the rows first
        v = self.task.costs(block, self.C) * v
        hinge_sum(np.ascontiguousarray(v, dtype=np.float64), self.acc)
        self.examples += len(v)

    def add_losses(self, losses, examples):
        """Losses C_i max(0, H_i) computed elsewhere (a partition of the file, in file order): the
        same sum as `add` over those examples (add skips the non-positive ones)."""
        import numpy as np
        hinge_sum(np.ascontiguousarray(losses, dtype=np.float64), self.acc)
        self.examples += int(examples)

    def value(self):
        return primal_value(self.w, self.acc, self.examples)


def _vector(a):
    """A buffer of doubles for _linear.dot: a numpy array flattened (contiguous), a buffer as it
    is."""
    if hasattr(a, "ravel"):
        import numpy as np
        return np.ascontiguousarray(a, dtype=np.float64).ravel()
    return a


def regularizer(w):
    """1/2 ||w||^2, in index order."""
    w = _vector(w)
    return 0.5 * dot(w, w)


def primal_value(w, acc, examples):
    """P(w) from the compensated loss sum acc = [sum, compensation] over `examples` examples."""
    reg = regularizer(w)
    loss = float(acc[0] + acc[1])
    return PrimalValue(reg + loss, reg, loss, examples)


def primal(task, w, geometry, C, blocks, path):
    from svmtrain.data import whole_examples
    acc = PrimalAccumulator(task, w, geometry, C, path)
    for block in whole_examples(blocks, task.grouping, path):
        acc.add(block)
        del block                   # not held while the next block is read
    return acc.value()


def dual(w, margin, alpha):
    """D(alpha) = -1/2 ||w(alpha)||^2 + sum l alpha, with the same ||w||^2 as `primal`."""
    w = _vector(w)
    return -0.5 * dot(w, w) + dot(_vector(margin), _vector(alpha))


def relative_gap(primal, dual):
    """(P - D) / P, the stopping quantity; 0 when both are 0 (nothing to learn)."""
    gap = primal - dual
    if primal > 0.0:
        return max(gap, 0.0) / primal
    return 0.0 if gap <= 0.0 else math.inf
