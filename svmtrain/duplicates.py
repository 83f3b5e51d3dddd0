"""Identical examples merged into one (the 1-slack mode's row tasks, binary and multiclass).

Rows with the same label and the same (indices, values) have the same loss at every w, so their
terms of the primal are one term with the summed cost:

    sum_{i in a class of identical rows} C_i max(0, H_i(w)) = (sum_i C_i) max(0, H_first(w)),

and every 1-slack plane (sum_i C_i x_i,worst, with the same worst offender for identical rows) is
the same sum. Training on the distinct rows with summed costs is the same problem: the same optimum,
the same planes and P(w) up to rounding. The certificate is still priced over the original rows
(`MergedRows.losses`): each row's loss from its class's violation, summed in file order as
verify-bound does, bit for bit.
"""

import numpy as np

from svmtrain._oneslack import distinct_rows, gather_rows
from svmtrain.data import Block
from svmtrain.records import record


@record
class MergedRows:
    """The distinct rows of `original` as a block of their own (`block`, first occurrences in file
    order, each with the summed cost of its class) and the class of every original row."""

    original: Block
    block: Block
    inverse: np.ndarray      # int64 per original row: its row in `block`

    @property
    def n_original(self):
        return self.original.n_rows

    def losses(self, violations, costs):
        """C_i H_i of every original row (file order) from the violations of the distinct rows."""
        return costs * violations[self.inverse]


def merge_identical(block):
    """MergedRows of a block, or None when no two rows are identical. Costs are summed in file
    order; the merged row keeps the first occurrence's line number (for messages)."""
    first, inverse = distinct_rows(block.indptr, block.indices, block.data, block.target)
    if len(first) == block.n_rows:
        return None
    cost = np.bincount(inverse, weights=block.cost, minlength=len(first))
    merged = Block(*gather_rows(block.indptr, block.indices, block.data, first),
                   block.target[first], block.qid[first], cost,
                   block.line[first], block.n_features, 0)
    return MergedRows(block, merged, inverse)
