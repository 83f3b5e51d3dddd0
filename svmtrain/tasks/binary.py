"""Binary classification: the L1-loss SVM that LIBLINEAR -s 3 and SVM-light solve.

    x_i1 = y_i x_i,   l_i1 = 1,   one constraint per example,   y_i = +1 for labels[0], -1 otherwise

so P(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i w . x_i). Labels are any two values; the larger is
the positive class (decision value > 0), as +1/-1 and 1/0 data expect.
"""

import numpy as np

from svmtrain.data import DataError
from svmtrain.tasks.base import Constraints, Geometry, Problem, Task, describe_labels, format_label


class Binary(Task):
    name = "binary"

    def __init__(self, labels):
        self.labels = [float(x) for x in labels]   # [positive, negative]

    @classmethod
    def from_training_data(cls, block, path, options=None):
        values, first = np.unique(block.target, return_index=True)
        if len(values) == 2:
            return cls([values[1], values[0]])
        if len(values) < 2:
            found = f"all examples are labelled {format_label(values[0])}" if len(values) else "no examples"
            raise DataError(path, None, f"the binary task needs two labels; {found}")
        third = np.sort(first)[2]
        raise DataError(path, int(block.line[third]),
                        f"the binary task needs two labels, found {len(values)} "
                        f"({describe_labels(values)}); use --task multiclass")

    @classmethod
    def from_model(cls, model):
        return cls(model.labels)

    def model_fields(self):
        return {"labels": list(self.labels)}

    def signs(self, block, path):
        """y_i = +1 / -1; a label the model does not know is an input error."""
        y = np.where(block.target == self.labels[0], 1.0, -1.0)
        unknown = (block.target != self.labels[0]) & (block.target != self.labels[1])
        if np.any(unknown):
            i = int(np.argmax(unknown))
            raise DataError(path, int(block.line[i]),
                            f"label {format_label(block.target[i])} is not one of the model's labels "
                            f"{format_label(self.labels[0])}, {format_label(self.labels[1])}")
        return y

    def problem(self, block, path, C, geometry):
        return Problem(block.indptr, block.indices, block.data, geometry.n_cols,
                       self.n_weights(geometry), geometry.bias, self.costs(block, C), path)

    def all_constraints(self, problem, block):
        # example i is constraint i on row i: one array for the rows and the groups (8 bytes an
        # example: kddcup99 binary's n-slack peak 203.2 -> 199.0 MB)
        rows = np.arange(block.n_rows)
        return Constraints.one_term(rows, self.signs(block, problem.path), np.ones(block.n_rows),
                                    rows)

    def worst_offenders(self, w, problem, block):
        return (self.violations(w, block, problem.path, Geometry(problem.n_cols, problem.bias)),
                self.all_constraints(problem, block))

    def violations(self, w, block, path, geometry):
        return 1.0 - self.signs(block, path) * geometry.scores(w, block)

    def predict(self, w, block, geometry, path):
        scores = geometry.scores(w, block)
        return np.where(scores > 0, self.labels[0], self.labels[1]), scores

    def new_metric(self):
        return BinaryMetric(self.labels)


class BinaryMetric:
    """Accuracy in LIBLINEAR's words, plus the confusion counts of the positive class."""

    def __init__(self, labels):
        self.positive = labels[0]
        self.tp = self.fp = self.tn = self.fn = self.other = 0

    def add(self, predictions, block):
        truth_pos = block.target == self.positive
        pred_pos = predictions == self.positive
        self.tp += int(np.sum(truth_pos & pred_pos))
        self.fn += int(np.sum(truth_pos & ~pred_pos))
        self.fp += int(np.sum(~truth_pos & pred_pos))
        negatives = ~truth_pos & ~pred_pos
        self.tn += int(np.sum(negatives & (predictions == block.target)))
        self.other += int(np.sum(negatives & (predictions != block.target)))  # labels it never saw

    def summary(self):
        total = self.tp + self.fp + self.tn + self.fn + self.other
        correct = self.tp + self.tn
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"accuracy": correct / total if total else 0.0, "correct": correct, "total": total,
                "precision": precision, "recall": recall, "f1": f1}

    def line(self):
        s = self.summary()
        return "Accuracy = %g%% (%d/%d)" % (100.0 * s["accuracy"], s["correct"], s["total"])
