"""The task contract: what a solver may ask of a task.

Every linear task is an instance of one problem (DESIGN.md, Ramanan eq. 2 with C explicit):

    P(w) = 1/2 ||w||^2 + sum_i C_i max(0, max_j (l_ij - w . x_ij))

A task says what the examples i, the constraints (x_ij, l_ij) and the costs C_i are for its data.
"""

from abc import ABC, abstractmethod

import numpy as np

from svmtrain._linear import csr_scores


class Task(ABC):
    """One task bound to its label set (learned from training data or read from a model)."""

    name = ""

    # -- set-up ----------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def from_training_data(cls, block, path):
        """Learn the task's label set from the training rows; DataError on unusable labels."""

    @classmethod
    @abstractmethod
    def from_model(cls, model):
        """The task a model was trained for."""

    @abstractmethod
    def model_labels(self):
        """The labels recorded in the model file."""

    # -- what the solvers use --------------------------------------------------------------------
    @abstractmethod
    def constraints(self, block, path, C):
        """Every constraint of every example: (row, scale, margin, group, C_group), with
        x_ij = scale * X[row] (see svmtrain.engine.ConstraintCache)."""

    @abstractmethod
    def violations(self, w, block, path, geometry):
        """Per example, max_j (l_ij - w . x_ij): the worst offender's violation (may be < 0)."""

    def costs(self, block, C):
        """C_i: C times the example's `cost:` (1 when absent)."""
        return C * block.cost

    # -- what predict uses -----------------------------------------------------------------------
    @abstractmethod
    def predict(self, w, block, geometry):
        """(predictions, decision values) for the rows of a block."""

    @abstractmethod
    def new_metric(self):
        """An accumulator with .add(predictions, block), .summary() -> dict and .line() -> str."""


class Geometry:
    """How a weight vector meets data: its feature columns and LIBLINEAR's bias feature."""

    __slots__ = ("n_cols", "bias")

    def __init__(self, n_cols, bias=None):
        self.n_cols = int(n_cols)
        self.bias = bias

    def scores(self, w, block):
        """w . x for every row; features beyond the model's columns are ignored (as LIBLINEAR)."""
        return csr_scores(block.indptr, block.indices, block.data, np.ascontiguousarray(w),
                          self.n_cols, 0.0 if self.bias is None else float(self.bias),
                          self.bias is not None)
