"""The binary task on real data against LIBLINEAR -s 3 (scikit-learn's LinearSVC, hinge, dual)."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import load_svmlight_file
from sklearn.svm import LinearSVC

from svmtrain.cli import main
from svmtrain.model import read_model

DATASETS = {
    "a9a": ("a9a/a9a.xz", "a9a/a9a.t.xz", 123),
    "ijcnn1": ("ijcnn1/ijcnn1.xz", "ijcnn1/ijcnn1.t.xz", 22),
    "reuters": ("reuters_lasvm/reuters.trn.xz", "reuters_lasvm/reuters.tst.xz", 8315),
}


def liblinear_reference(train, test, n_features):
    """LIBLINEAR -s 3, C=1, no bias, at a tight tolerance: its primal and test accuracy."""
    X, y = load_svmlight_file(str(train), n_features=n_features)
    Xt, yt = load_svmlight_file(str(test), n_features=n_features)
    for M in (X, Xt):  # LinearSVC accepts 32-bit sparse indices only
        M.indices, M.indptr = M.indices.astype(np.int32), M.indptr.astype(np.int32)
    clf = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0, tol=1e-7, max_iter=200000)
    clf.fit(X, y)
    w = clf.coef_.ravel()
    sign = np.where(y == clf.classes_[1], 1.0, -1.0)
    primal = 0.5 * w @ w + np.maximum(0.0, 1.0 - sign * (X @ w)).sum()
    return primal, float(np.mean(clf.predict(Xt) == yt))


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_binary_optimum_and_accuracy_match_liblinear(name, shared, tmp_path):
    train_rel, test_rel, n_features = DATASETS[name]
    train, test = shared(train_rel), shared(test_rel)
    ref_primal, ref_accuracy = liblinear_reference(train, test, n_features)

    runner = CliRunner()
    model_path = tmp_path / "m"
    r = runner.invoke(main, ["train", "-q", "-c", "1", "-e", "1e-4", str(train), str(model_path)])
    assert r.exit_code == 0, r.output
    model = read_model(model_path)

    r = runner.invoke(main, ["verify-bound", "--json", str(model_path), str(train)])
    assert r.exit_code == 0, r.output
    bound = json.loads(r.stdout)
    # verify-bound's one streaming pass reproduces the model's own figures exactly
    assert bound["primal"] == model.primal and bound["dual"] == model.dual
    assert bound["examples"] == model.examples
    # our primal is within 1e-4 of the optimum, and our dual never exceeds LIBLINEAR's primal
    assert abs(bound["primal"] - ref_primal) <= 1e-4 * ref_primal
    assert bound["dual"] <= ref_primal * (1 + 1e-12)

    r = runner.invoke(main, ["predict", "--json", str(test), str(model_path), str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    accuracy = json.loads(r.stdout)["accuracy"]
    assert abs(accuracy - ref_accuracy) <= 0.001
