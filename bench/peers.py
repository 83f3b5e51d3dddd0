"""The peers, each run in a fresh process by bench/run.py (never imported by it).

    python bench/peers.py liblinear TRAIN OUT.json --eps E [--C 1] [--test TEST] [-s 3|4|13] [--p P]
                                                   [--pairs]
    python bench/peers.py sklearn   TRAIN OUT.json --tol T [--C 1] [--max-iter 1000]
    python bench/peers.py svc       TRAIN OUT.json --C C --gamma G --test TEST

liblinear: LIBLINEAR -s 3 (L2-regularized L1-loss SVC, dual CD, no bias) through the official
Python binding. The data is read (with svmtrain's reader) and converted to LIBLINEAR's problem before
the clock starts; the clock covers `train(prob, param)` only. LIBLINEAR's C code prints
"Objective value = -D" and "optimization finished, #iter = N" on the C-level stdout: this process
leaves its stdout to LIBLINEAR alone and the parent reads it. OUT.json gets the time, P(w) computed
here in numpy, the model's first label (the +1 class of w) and, with --test, the test accuracy.
A fresh process per run also means a fresh rand() state, so repeated runs give the same model.
Other solvers (bench/run.py's `tasks` group): -s 4 (Crammer-Singer multiclass; P(w) of the K x d
weights, test accuracy by argmax) and -s 13 (L1-loss SVR, dual; P(w) with the -p insensitive zone).
With --pairs, TRAIN is a ranking file (qid:) and the problem given to -s 3 is its pairs: x_a - x_b
for every pair of one query with target_a > target_b, alternately labelled +1 and -1 (the -1 ones
written x_b - x_a), which is exactly svmtrain's ranking problem (one slack per pair); building the
pairs is outside the clock. Its C code prints the dual of every one of these solvers as
"Objective value = -D".

sklearn: end to end as a user would run it, `load_svmlight_file` + LinearSVC(loss='hinge',
dual=True, fit_intercept=False, random_state=0) fit. The parent times the whole process; OUT.json gets w, the
positive class, n_iter_ and the times of the two steps.

svc: the full (unbudgeted) RBF-kernel SVM, scikit-learn's SVC (LIBSVM; with a bias, its default
tolerance 1e-3, a 1 GB kernel cache), the ceiling of the `budgeted` group. The data is read with
svmtrain's reader before the clock, which covers `fit` only; OUT.json gets the time, the number of
support vectors and the test accuracy.

CRFsuite, the sequence peer, has its own child, bench/crfpeer.py: this module's numpy and scipy
would add 40 MB to the peak memory measured as the peer's.
"""

import argparse
import json
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402


def primal_hinge(X, w, y, C):
    """P(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i w . x_i) (C a number or one per row), w cut or
    padded to X's columns."""
    v = np.zeros(X.shape[1])
    k = min(len(w), len(v))
    v[:k] = w[:k]
    margins = y * (X @ v)
    return 0.5 * float(w @ w) + float(np.sum(C * np.maximum(0.0, 1.0 - margins)))


def _csr(path, n_cols=None):
    from svmtrain import data
    b = data.load(path)
    n = max(b.n_features, n_cols or 0)
    X = sp.csr_matrix((b.data, b.indices.astype(np.int32), b.indptr.astype(np.int64)),
                      shape=(b.n_rows, n))
    return X, b.target


def primal_cs(X, W, y_index, C):
    """Crammer-Singer: 1/2 ||W||^2 + C sum_i max(0, max_{k != y_i} (1 + w_k.x_i - w_{y_i}.x_i))."""
    S = np.asarray(X @ W.T)                     # n x K scores
    rows = np.arange(S.shape[0])
    own = S[rows, y_index]
    S = S + 1.0
    S[rows, y_index] = -np.inf
    loss = np.maximum(0.0, S.max(axis=1) - own)
    return 0.5 * float(np.sum(W * W)) + C * float(loss.sum())


def primal_svr(X, w, y, C, p):
    """epsilon-SVR, L1 loss: 1/2 ||w||^2 + C sum_i max(0, |y_i - w.x_i| - p)."""
    v = np.zeros(X.shape[1])
    k = min(len(w), len(v))
    v[:k] = w[:k]
    return 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, np.abs(y - X @ v) - p)))


def ranking_pairs(path):
    """The pairs of a ranking file as a CSR matrix and +-1 labels (see the module docstring)."""
    from svmtrain import data
    b = data.load(path)
    X = sp.csr_matrix((b.data, b.indices.astype(np.int32), b.indptr.astype(np.int64)),
                      shape=(b.n_rows, b.n_features))
    heads, tails = [], []
    for q in np.unique(b.qid):
        rows = np.flatnonzero(b.qid == q)
        t = b.target[rows]
        a, c = np.nonzero(t[:, None] > t[None, :])
        heads.append(rows[a])
        tails.append(rows[c])
    heads, tails = np.concatenate(heads), np.concatenate(tails)
    sign = np.where(np.arange(len(heads)) % 2 == 0, 1.0, -1.0)
    D = (X[heads] - X[tails]).tocsr()
    D = sp.diags(sign) @ D
    D = D.tocsr()
    D.eliminate_zeros()
    return D, sign


def run_liblinear(args):
    from liblinear import liblinear as ll

    if args.pairs:
        X, target = ranking_pairs(args.train)
    else:
        X, target = _csr(args.train)
    prob = ll.problem(target, X)
    weights = "".join(f" -w{label:g} {weight!r}" for label, weight in args.class_weight)
    param = ll.parameter(f"-s {args.s} -c {args.C!r} -e {args.eps!r} -p {args.p!r} -B -1{weights}")
    ll.liblinear.set_print_string_function(param.print_func)   # NULL: the C default, stdout
    err = ll.liblinear.check_parameter(prob, param)
    if err:
        raise SystemExit(f"liblinear: {err.decode() if isinstance(err, bytes) else err}")
    sys.stdout.flush()
    start = time.perf_counter()
    model_ptr = ll.liblinear.train(prob, param)
    seconds = time.perf_counter() - start
    model = ll.toPyModel(model_ptr)
    n = model.get_nr_feature()
    labels = model.get_labels()
    out = {"seconds": seconds, "n_features": n, "rows": X.shape[0], "nnz": int(X.nnz),
           "has_max_iter": "max_iter" in [f[0] for f in ll.parameter._fields_]}
    if args.s == 4:
        K = model.get_nr_class()
        W = np.array(model.w[:n * K], dtype=np.float64).reshape(n, K).T     # K x n
        Xn = X[:, :n] if X.shape[1] >= n else sp.hstack([X, sp.csr_matrix((X.shape[0], n - X.shape[1]))]).tocsr()
        index = {lab: k for k, lab in enumerate(labels)}
        y_index = np.array([index[v] for v in target])
        out["primal"] = primal_cs(Xn, W, y_index, args.C)
        out["labels"] = list(labels)
        out["train_accuracy"] = float(np.mean(np.asarray(labels)[np.argmax(Xn @ W.T, axis=1)] == target))
        if args.test:
            Xt, tt = _csr(args.test, n)
            pred = np.asarray(labels)[np.argmax(Xt[:, :n] @ W.T, axis=1)]
            out["test_accuracy"] = float(np.mean(pred == tt))
    elif args.s == 13:
        w = np.array(model.w[:n], dtype=np.float64)
        out["primal"] = primal_svr(X, w, target, args.C, args.p)
        out["mse"] = float(np.mean((X[:, :n] @ w - target) ** 2))
    else:
        w = np.array(model.w[:n], dtype=np.float64)
        y = np.where(target == labels[0], 1.0, -1.0)
        C_i = args.C * np.ones(len(y))
        for label, weight in args.class_weight:       # LIBLINEAR -wi: C of class i is weight * C
            C_i[target == label] *= weight
        out["primal"] = primal_hinge(X, w, y, C_i)
        out["positive"] = labels[0]
        if args.test:
            Xt, tt = _csr(args.test, n)
            scores = Xt[:, :n] @ w
            pred = np.where(scores > 0, labels[0], labels[1])
            out["test_accuracy"] = float(np.mean(pred == tt))
    with open(args.out, "w") as f:
        json.dump(out, f)


def run_sklearn(args):
    start = time.perf_counter()
    from sklearn.datasets import load_svmlight_file
    from sklearn.svm import LinearSVC

    X, y = load_svmlight_file(args.train)
    # LinearSVC refuses the int64 indices this loader returns ("Only sparse matrices with 32-bit
    # integer indices are accepted"): narrowing them is part of the user's pipeline.
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    loaded = time.perf_counter()
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=args.C, tol=args.tol,
                        max_iter=args.max_iter, random_state=0).fit(X, y)
    fitted = time.perf_counter()
    w = clf.coef_.ravel()
    np.save(args.out + ".w.npy", w)
    with open(args.out, "w") as f:
        json.dump({"load_seconds": loaded - start, "fit_seconds": fitted - loaded,
                   "n_iter": int(np.max(clf.n_iter_)), "positive": float(clf.classes_[1]),
                   "converged": not any("converge" in str(c.message) for c in caught),
                   "w": args.out + ".w.npy"}, f)


def run_svc(args):
    from sklearn.svm import SVC

    X, y = _csr(args.train)
    start = time.perf_counter()
    clf = SVC(C=args.C, kernel="rbf", gamma=args.gamma, cache_size=1000).fit(X, y)
    seconds = time.perf_counter() - start
    Xt, yt = _csr(args.test, X.shape[1])
    accuracy = float(np.mean(clf.predict(Xt[:, :X.shape[1]]) == yt))
    with open(args.out, "w") as f:
        json.dump({"seconds": seconds, "support_vectors": int(clf.support_.size),
                   "test_accuracy": accuracy}, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="peer", required=True)
    a = sub.add_parser("liblinear")
    a.add_argument("train")
    a.add_argument("out")
    a.add_argument("--eps", type=float, required=True)
    a.add_argument("--C", type=float, default=1.0)
    a.add_argument("--test")
    a.add_argument("-s", type=int, default=3, choices=(3, 4, 13), help="LIBLINEAR's solver")
    a.add_argument("--p", type=float, default=0.1, help="-s 13: the insensitive zone's width")
    a.add_argument("--pairs", action="store_true", help="-s 3 on the pairs of a ranking file")
    a.add_argument("--class-weight", nargs=2, type=float, action="append", default=[],
                   metavar=("LABEL", "WEIGHT"), help="LIBLINEAR's -wLABEL WEIGHT (repeatable)")
    b = sub.add_parser("sklearn")
    b.add_argument("train")
    b.add_argument("out")
    b.add_argument("--tol", type=float, required=True)
    b.add_argument("--C", type=float, default=1.0)
    b.add_argument("--max-iter", type=int, default=1000)
    c = sub.add_parser("svc")
    c.add_argument("train")
    c.add_argument("out")
    c.add_argument("--C", type=float, required=True)
    c.add_argument("--gamma", type=float, required=True)
    c.add_argument("--test", required=True)
    args = ap.parse_args(argv)
    {"liblinear": run_liblinear, "sklearn": run_sklearn, "svc": run_svc}[args.peer](args)


if __name__ == "__main__":
    main()
