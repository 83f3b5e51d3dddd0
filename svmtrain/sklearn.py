"""scikit-learn estimators over svmtrain.api (scikit-learn is an optional extra: `pip install
svmtrain[sklearn]`).

- `SVMClassifier`: the L1-loss linear SVM (binary; LIBLINEAR -s 3 / LinearSVC(loss="hinge")) or,
  with more than two classes, Crammer-Singer's multiclass SVM (LIBLINEAR -s 4);
- `SVMRegressor`: epsilon-insensitive SVR (LIBLINEAR -s 13's L1 loss);
- `SVMRanker`: SVM-rank, pairs within each query (`fit(X, y, qid=...)`);
- `BudgetedRBFClassifier`: an RBF-kernel SVM with at most `budget` support vectors (BSCA).

Each follows scikit-learn's contract (`__init__` stores, `fit` validates and sets attributes ending
in `_`) and exposes the certificate it was trained to: `primal_`, `dual_`, `relative_gap_`.
`tol` is the relative duality gap at which training stops (svmtrain's -e).
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from svmtrain import api
from svmtrain.options import Budgeted, NSlack, OneSlack, OnlineDual, Problem

__all__ = ["SVMClassifier", "SVMRegressor", "SVMRanker", "BudgetedRBFClassifier"]

_MODES = {"n-slack": NSlack, "1-slack": OneSlack, "online-dual": OnlineDual}


class _SparseInput:
    """Every estimator here takes scipy sparse input as it is (CSR, no densifying)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _LabelsFromScores:
    """predict for the classifiers: the sign of the decision value with two classes, the class
    of the largest one with more."""

    def predict(self, X):
        """The predicted labels of the rows of X."""
        values = self.decision_function(X)
        if len(self.classes_) == 2:
            return self.classes_[(values > 0).astype(int)]
        return self.classes_[np.argmax(values, axis=1)]


def _classes(estimator, X, y):
    """X validated, and y as codes into estimator.classes_ (set here): two classes at least."""
    X, y = validate_data(estimator, X, y, accept_sparse="csr", dtype=np.float64)
    check_classification_targets(y)
    estimator.classes_, codes = np.unique(y, return_inverse=True)
    if len(estimator.classes_) < 2:
        raise ValueError(f"the classifier needs samples of at least 2 classes in the data, "
                         f"got 1 class: {estimator.classes_[0]!r}")
    return X, codes


class _LinearSVM(_SparseInput, BaseEstimator):
    """What the linear estimators share: the problem's options, the mode, and fitting."""

    _task = "binary"

    def _mode(self):
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {self.mode!r}")
        return _MODES[self.mode](max_epochs=self.max_iter)

    def _bias(self):
        return self.intercept_scaling if self.fit_intercept else None

    def _train(self, X, y, qid=None, **problem):
        X = X.astype(np.float64, copy=False)
        data = (X, y) if qid is None else (X, y, qid)
        model = api.train(data, Problem(task=self._task, C=float(self.C), epsilon=self.tol,
                                        bias=self._bias(), seed=1 if self.random_state is None else int(self.random_state), **problem),
                          self._mode(), on_warning=lambda message: None)
        self.model_ = model
        self.n_iter_ = model.epochs
        self.primal_, self.dual_ = model.primal, model.dual
        self.relative_gap_ = model.relative_gap
        w = np.atleast_2d(model.w)
        if model.bias is not None:
            self.coef_, self.intercept_ = w[:, :-1] * 1.0, w[:, -1] * model.bias
        else:
            self.coef_, self.intercept_ = w.copy(), np.zeros(w.shape[0])
        return model

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        return self.model_.decision_function(X)


class SVMClassifier(_LabelsFromScores, ClassifierMixin, _LinearSVM):
    """A linear SVM classifier with a certified duality gap.

    Two classes: the L1-loss SVM, P(w) = 1/2|w|^2 + C sum_i max(0, 1 - y_i w.x_i), the problem of
    LinearSVC(loss="hinge", dual=True) and LIBLINEAR -s 3. More: Crammer-Singer's multiclass SVM.
    fit_intercept appends a constant feature of value intercept_scaling, regularized as LIBLINEAR
    does. mode: "n-slack" (dual coordinate descent), "1-slack" or "online-dual".
    """

    def __init__(self, C=1.0, tol=1e-3, fit_intercept=False, intercept_scaling=1.0,
                 mode="n-slack", max_iter=1000, random_state=None):
        self.C, self.tol, self.fit_intercept = C, tol, fit_intercept
        self.intercept_scaling, self.mode = intercept_scaling, mode
        self.max_iter, self.random_state = max_iter, random_state

    def fit(self, X, y):
        """Train on X (sparse or dense) and y; returns self (its certificate in primal_, dual_, relative_gap_)."""
        X, codes = _classes(self, X, y)
        if len(self.classes_) == 2:
            self._task = "binary"          # the larger code (classes_[1]) is the positive class
            self._train(X, np.where(codes == 1, 1.0, -1.0))
        else:
            self._task = "multiclass"
            self._train(X, codes.astype(np.float64))
        return self

    def decision_function(self, X):
        """The decision values of the rows of X (one column per class for multiclass)."""
        values = self._decision(X)
        return values if len(self.classes_) > 2 else values.ravel()


class SVMRegressor(RegressorMixin, _LinearSVM):
    """Linear epsilon-insensitive support vector regression:
    P(w) = 1/2|w|^2 + C sum_i max(0, |y_i - w.x_i| - epsilon), with a certified gap (tol)."""

    _task = "regression"

    def __init__(self, C=1.0, epsilon=0.1, tol=1e-3, fit_intercept=False, intercept_scaling=1.0,
                 mode="n-slack", max_iter=1000, random_state=None):
        self.C, self.epsilon, self.tol = C, epsilon, tol
        self.fit_intercept, self.intercept_scaling = fit_intercept, intercept_scaling
        self.mode, self.max_iter, self.random_state = mode, max_iter, random_state

    def fit(self, X, y):
        """Train on X (sparse or dense) and y; returns self (its certificate in primal_, dual_, relative_gap_)."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True)
        self._train(X, y, p=float(self.epsilon))
        self.coef_, self.intercept_ = self.coef_.ravel(), float(self.intercept_[0])
        return self

    def predict(self, X):
        """The predicted labels (regression: values; ranking: scores) of the rows of X."""
        return np.asarray(self._decision(X), dtype=np.float64).ravel()


class SVMRanker(RegressorMixin, _LinearSVM):
    """SVM-rank: P(w) = 1/2|w|^2 + C sum_q sum_(a > b in q) max(0, 1 - w.(x_a - x_b)), pairs
    within each query. `fit(X, y, qid=...)` (without qid, one query). predict gives scores;
    `score(X, y, qid=None)` the fraction of pairs of each query put in the right order."""

    _task = "ranking"

    def __init__(self, C=1.0, tol=1e-3, mode="n-slack", max_iter=1000, random_state=None):
        self.C, self.tol, self.mode = C, tol, mode
        self.max_iter, self.random_state = max_iter, random_state

    fit_intercept = False

    def fit(self, X, y, qid=None):
        """Train on X (sparse or dense) and y; returns self (its certificate in primal_, dual_, relative_gap_)."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True)
        qid = np.zeros(len(y), np.int64) if qid is None else np.asarray(qid)
        if len(qid) != len(y):
            raise ValueError(f"qid has {len(qid)} values for {len(y)} samples")
        order = np.argsort(qid, kind="stable")       # a query's rows consecutive, as in files
        self._train(X[order], y[order], qid[order])
        self.coef_, self.intercept_ = self.coef_.ravel(), 0.0
        return self

    def predict(self, X):
        """The predicted labels (regression: values; ranking: scores) of the rows of X."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        return np.asarray(X @ self.coef_, dtype=np.float64).ravel()

    def score(self, X, y, qid=None, sample_weight=None):
        scores, y = self.predict(X), np.asarray(y, dtype=np.float64)
        qid = np.zeros(len(y), np.int64) if qid is None else np.asarray(qid)
        right = pairs = 0
        for q in np.unique(qid):
            s, t = scores[qid == q], y[qid == q]
            higher = t[:, None] > t[None, :]
            pairs += higher.sum()
            right += (higher & (s[:, None] > s[None, :])).sum()
        return float(right / pairs) if pairs else 1.0


class BudgetedRBFClassifier(_LabelsFromScores, ClassifierMixin, _SparseInput, BaseEstimator):
    """An RBF-kernel SVM classifier, k(x, x') = exp(-gamma |x - x'|^2), with at most `budget`
    support vectors (per class; more than two classes: one-vs-rest), trained by BSCA (Qaadan et
    al.) for `epochs` passes. gamma None: 1 / n_features."""

    def __init__(self, C=1.0, gamma=None, budget=500, epochs=5, random_state=None):
        self.C, self.gamma, self.budget = C, gamma, budget
        self.epochs, self.random_state = epochs, random_state

    def fit(self, X, y):
        """Train on X (sparse or dense) and y; returns self (its certificate in primal_, dual_, relative_gap_)."""
        X, codes = _classes(self, X, y)
        binary = len(self.classes_) == 2
        target = np.where(codes == 1, 1.0, -1.0) if binary else codes.astype(np.float64)
        gamma = None if self.gamma is None else float(self.gamma)
        if gamma is None and X.shape[1] == 0:
            gamma = 1.0
        model = api.train((X, target), Problem(task="binary" if binary else "multiclass",
                                               C=float(self.C), seed=1 if self.random_state is None else int(self.random_state)),
                          Budgeted(gamma=gamma, budget=int(self.budget), epochs=int(self.epochs)),
                          on_warning=lambda message: None)
        self.model_, self.n_iter_ = model, model.epochs
        self.primal_, self.dual_, self.relative_gap_ = model.primal, model.dual, model.relative_gap
        self.n_support_ = np.array([len(sv[0]) for sv in model.support_vectors])
        return self

    def decision_function(self, X):
        """The decision values of the rows of X (one column per class for multiclass)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        values = self.model_.decision_function(X)
        return np.asarray(values).ravel() if len(self.classes_) == 2 else values
