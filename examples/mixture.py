"""A latent mixture-of-templates classifier (DPM's mixture components; Yu & Joachims' latent SVM).

Each class c holds M linear templates (each with a bias weight); the label is y = (c, m), the
template m latent: training imputes it (CCCP, `--latent-rounds`), prediction maximises over it.

    psi(x, (c, m)) = (x, 1) placed in block c * M + m      (K * M blocks of features + 1 weights)
    loss((c, m), (c', m')) = 0 if c == c' else 1           (the template is not scored)
    worst offender: argmax_(c', m') loss + w_c'm' . (x, 1)
    latent(x, (c, .), w) = (c, argmax_m w_cm . (x, 1)); at w = 0 (the first round) the template
        whose k-means center (of class c's training examples) is nearest to x

    svmtrain train --task-module examples/mixture.py:Mixture --latent-rounds 10 \\
        --task-option classes=0,1,2,3,4,5,6,7,8,9 --task-option features=16 \\
        --task-option templates=4 pendigits.train model.txt

Options (strings): classes, features (required), templates (M, default 4), seed (k-means, 0).
"""

import numpy as np

import svmtrain
from svmtrain.data import DataError, iter_blocks


class Mixture(svmtrain.StructuredTask):
    name = "mixture-of-templates"
    version = "1"
    holds_gil = True

    def __init__(self, classes=None, features=None, templates="4", seed="0"):
        if classes is None or features is None:
            raise ValueError("give classes=L1,L2,... and features=N")
        try:
            self.classes = [float(c) for c in classes.split(",")]
            self.features, self.M, self.seed = int(features), int(templates), int(seed)
        except ValueError:
            raise ValueError("classes must be numbers separated by commas; features, templates "
                             "and seed integers") from None
        if len(set(self.classes)) < 2 or self.features < 1 or self.M < 1:
            raise ValueError("at least two classes, one feature and one template are needed")
        self.K = len(self.classes)
        self.index = {c: k for k, c in enumerate(self.classes)}
        self.width = self.features + 1
        self.size_joint_feature = self.K * self.M * self.width
        self.centers = None

    # -- data --------------------------------------------------------------------------------------
    def read_examples(self, path):
        for block in iter_blocks(path):
            for r in range(block.n_rows):
                label = float(block.target[r])
                if label not in self.index:
                    raise DataError(path, int(block.line[r]), f"label {label:g} is not one of "
                                    f"the classes")
                a, b = block.indptr[r], block.indptr[r + 1]
                x = np.zeros(self.width)
                cols = block.indices[a:b]
                keep = cols < self.features
                x[cols[keep]] = block.data[a:b][keep]
                x[self.features] = 1.0                       # the templates' bias feature
                yield x, (self.index[label], None)

    def initialize(self, examples):
        """k-means (k-means++ seeding, fixed seed) of each class's examples: the first imputation."""
        rng = np.random.default_rng(self.seed)
        X = np.array([x for x, _ in examples])
        c = np.array([y[0] for _, y in examples])
        self.centers = np.zeros((self.K, self.M, self.width))
        for k in range(self.K):
            P = X[c == k]
            if len(P) == 0:
                continue
            self.centers[k] = _kmeans(P, self.M, rng)

    # -- the model ---------------------------------------------------------------------------------
    def joint_feature(self, x, y):
        c, m = y
        start = (c * self.M + (m or 0)) * self.width
        return np.arange(start, start + self.width), x

    def loss(self, y, y_hat):
        return 0.0 if y[0] == y_hat[0] else 1.0

    def _scores(self, X, w):
        """(n, K * M) template scores."""
        return X @ w.reshape(self.K * self.M, self.width).T

    def batch_loss_augmented_inference(self, xs, ys, w):
        S = self._scores(np.asarray(xs), w).reshape(len(xs), self.K, self.M)
        S += 1.0
        S[np.arange(len(xs)), [y[0] for y in ys], :] -= 1.0
        best = S.reshape(len(xs), -1).argmax(axis=1)
        return [(int(b) // self.M, int(b) % self.M) for b in best]

    def batch_inference(self, xs, w):
        best = self._scores(np.asarray(xs), w).argmax(axis=1)
        return [(int(b) // self.M, int(b) % self.M) for b in best]

    def loss_augmented_inference(self, x, y, w):
        return self.batch_loss_augmented_inference([x], [y], w)[0]

    def inference(self, x, w):
        return self.batch_inference([x], w)[0]

    def latent(self, x, y, w):
        c = y[0]
        if not np.any(w):
            if self.centers is None:
                return (c, 0)
            return (c, int(np.argmin(((self.centers[c] - x) ** 2).sum(axis=1))))
        block = w.reshape(self.K, self.M, self.width)[c]
        return (c, int(np.argmax(block @ x)))

    def score(self, ys, y_hats):
        right = sum(y[0] == p[0] for y, p in zip(ys, y_hats))
        return "accuracy", right / len(ys) if ys else 0.0

    def format_label(self, y):
        return f"{self.classes[y[0]]:g}"


def _kmeans(P, M, rng, iterations=25):
    """Lloyd's algorithm from k-means++ seeds; M centers (repeats when P has fewer points)."""
    centers = [P[rng.integers(len(P))]]
    while len(centers) < M:
        d = np.min([((P - c) ** 2).sum(axis=1) for c in centers], axis=0)
        if d.sum() <= 0:
            centers.append(centers[-1])
            continue
        centers.append(P[rng.choice(len(P), p=d / d.sum())])
    centers = np.array(centers)
    for _ in range(iterations):
        nearest = np.argmin(((P[:, None, :] - centers[None]) ** 2).sum(axis=2), axis=1)
        for m in range(M):
            if np.any(nearest == m):
                centers[m] = P[nearest == m].mean(axis=0)
    return centers
