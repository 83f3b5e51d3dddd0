"""The scikit-learn estimators: scikit-learn's own checks, pipelines and grid search, LinearSVC."""

import os

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from svmtrain.sklearn import BudgetedRBFClassifier, SVMClassifier, SVMRanker, SVMRegressor

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")

# checks that cannot apply, by name, with the reason: none so far (each estimator passes all of
# scikit-learn's checks; the ones scikit-learn itself skips, e.g. for sample weights, are skipped)
SKIPPED = {}


def _expected_failed(estimator):
    return SKIPPED.get(type(estimator).__name__, {})


@parametrize_with_checks([SVMClassifier(), SVMRegressor(), SVMRanker(),
                          BudgetedRBFClassifier(budget=50)],
                         expected_failed_checks=_expected_failed)
def test_sklearn_checks(estimator, check):
    check(estimator)


def _a9a():
    """a9a (its sample in data/ without the shared data), with int32 indices: scikit-learn's
    loader gives int64 ones, which its own LinearSVC refuses."""
    import scipy.sparse as sp
    path = os.path.join(SHARED, "a9a", "a9a.xz")
    if os.path.exists(path):
        import lzma
        with lzma.open(path) as f:
            X, y = load_svmlight_file(f, n_features=123)
    else:
        X, y = load_svmlight_file(os.path.join(DATA, "a9a.train.sample"), n_features=123)
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                         shape=X.shape), y


def _hinge_primal(coef, X, y, C):
    margins = 1 - y * (X @ coef)
    return 0.5 * coef @ coef + C * np.maximum(margins, 0).sum()


def test_grid_search_in_a_pipeline_on_a9a():
    X, y = _a9a()
    search = GridSearchCV(Pipeline([("scale", MaxAbsScaler()), ("svm", SVMClassifier())]),
                          {"svm__C": [0.03, 1.0]}, cv=3)
    search.fit(X, y)
    assert search.best_params_["svm__C"] in (0.03, 1.0)
    assert search.best_score_ > 0.8
    fitted = search.best_estimator_.named_steps["svm"]
    assert fitted.relative_gap_ <= fitted.tol


def test_primal_matches_linearsvc():
    from sklearn.svm import LinearSVC
    X, y = _a9a()
    ours = SVMClassifier(C=1.0, tol=1e-5).fit(X, y)
    theirs = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0, tol=1e-6,
                       max_iter=200000).fit(X, y)
    p_ours = _hinge_primal(ours.coef_.ravel(), X, np.where(y == ours.classes_[1], 1, -1), 1.0)
    p_theirs = _hinge_primal(theirs.coef_.ravel(), X, np.where(y == theirs.classes_[1], 1, -1), 1.0)
    assert ours.primal_ == pytest.approx(p_ours, rel=1e-9)
    assert abs(p_ours - p_theirs) <= 1e-4 * p_theirs


def test_multiclass_is_crammer_singer():
    X, y = load_svmlight_file(os.path.join(DATA, "pendigits_scale.train.sample"))
    clf = SVMClassifier().fit(X, y)
    assert clf.coef_.shape == (10, X.shape[1]) and list(clf.classes_) == list(range(10))
    assert clf.model_.task == "multiclass" and clf.relative_gap_ <= 1e-3
    assert np.array_equal(clf.predict(X), clf.classes_[np.argmax(clf.decision_function(X), 1)])


def test_ranker_groups_by_qid():
    X, y, q = load_svmlight_file(os.path.join(DATA, "ohsumed.train.sample"), query_id=True)
    order = np.random.default_rng(0).permutation(len(y))    # rows of a query need not be together
    ranker = SVMRanker(C=0.1).fit(X[order], y[order], qid=q[order])
    same = SVMRanker(C=0.1).fit(X, y, qid=q)
    # the same problem (another order of coordinate steps): their [dual, primal] intervals meet
    assert max(ranker.dual_, same.dual_) <= min(ranker.primal_, same.primal_)
    assert ranker.score(X, y, qid=q) > 0.6
