"""Crammer-Singer multiclass classification written as a user task (svmtrain.StructuredTask).

The built-in `--task multiclass` solves the same problem with typed kernels; this file is the
worked example of the task protocol and the reference the tests hold the adapter to:

    psi(x, k)   = x placed in block k of w (K blocks of `features` weights)
    loss(y, k)  = 0 if k == y else 1
    worst offender: argmax_k loss(y, k) + w_k . x;   prediction: argmax_k w_k . x

    svmtrain train --task-module examples/multiclass_task.py:CrammerSinger \\
        --task-option classes=0,1,2,3,4,5,6,7,8,9 --task-option features=16 \\
        data/pendigits_scale.train.sample model.txt

Examples are read with svmtrain's own svmlight reader (plain or compressed files, errors naming
the line). x is (0-based column indices, values); y is the class's position in `classes`.
"""

import numpy as np
import scipy.sparse as sp

import svmtrain
from svmtrain.data import DataError, iter_blocks


class CrammerSinger(svmtrain.StructuredTask):
    name = "crammer-singer"
    version = "1"
    holds_gil = True     # the per-example glue is Python (the batched scoring is numpy)

    def __init__(self, classes=None, features=None):
        if classes is None or features is None:
            raise ValueError("give classes=L1,L2,... (the labels) and features=N (the largest "
                             "feature index)")
        try:
            self.classes = [float(c) for c in classes.split(",")]
            self.features = int(features)
        except ValueError:
            raise ValueError(f"classes must be numbers separated by commas and features an "
                             f"integer, got classes={classes!r} features={features!r}") from None
        if len(set(self.classes)) < 2 or self.features < 1:
            raise ValueError("at least two distinct classes and one feature are needed")
        self.K = len(self.classes)
        self.index = {c: k for k, c in enumerate(self.classes)}
        self.size_joint_feature = self.K * self.features

    def read_examples(self, path):
        for block in iter_blocks(path):
            for r in range(block.n_rows):
                label = float(block.target[r])
                if label not in self.index:
                    raise DataError(path, int(block.line[r]), f"label {label:g} is not one of "
                                    f"the classes {','.join(f'{c:g}' for c in self.classes)}")
                a, b = block.indptr[r], block.indptr[r + 1]
                cols = block.indices[a:b]
                keep = cols < self.features          # columns past `features`: no weight
                yield (cols[keep].copy(), block.data[a:b][keep].copy()), self.index[label]

    def joint_feature(self, x, y):
        cols, vals = x
        return y * self.features + cols, vals

    def loss(self, y, y_hat):
        return 0.0 if y == y_hat else 1.0

    def _scores(self, xs, w):
        """The K class scores of every example, one sparse product."""
        lengths = [len(x[0]) for x in xs]
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        X = sp.csr_matrix((np.concatenate([x[1] for x in xs]), np.concatenate([x[0] for x in xs]),
                           indptr), shape=(len(xs), self.features))
        return np.asarray(X @ w.reshape(self.K, self.features).T)

    def loss_augmented_inference(self, x, y, w):
        return self.batch_loss_augmented_inference([x], [y], w)[0]

    def inference(self, x, w):
        return self.batch_inference([x], w)[0]

    def batch_loss_augmented_inference(self, xs, ys, w):
        S = self._scores(xs, w) + 1.0
        S[np.arange(len(xs)), ys] -= 1.0
        return S.argmax(axis=1).tolist()

    def batch_inference(self, xs, w):
        return self._scores(xs, w).argmax(axis=1).tolist()

    def score(self, ys, y_hats):
        return "accuracy", float(np.mean(np.asarray(ys) == np.asarray(y_hats))) if ys else 0.0

    def format_label(self, y):
        return f"{self.classes[y]:g}"
