"""The `cv` group of bench/run.py: cross-validation and the path over C (svmtrain.cv).

- cv-a9a: 5-fold cross-validation on a9a at C = 1 (n-slack, -e 1e-3, no bias), for five fold
  seeds, against the accuracy of the model trained on all of a9a on the shared test set a9a.t:
  the CV mean should lie within about one standard deviation of it; and --jobs 2's figures are
  --jobs 1's.
- c-path: the path over C = 2^-6 .. 2^6 (13 points, -e 1e-3) on ijcnn1 and a9a, trained on the
  whole file, each point hot-started from the previous one (svmtrain.api.c_path) against the
  same points trained from scratch (warm=False), in one process, best of `repeat`: total solver
  seconds (data read once per path, not timed per point), epochs, and every point's certificate.
  The warm path must certify every point; warm/cold < 1 is the saving.
"""

import time

from _common import Table, fs

SEED = 1
SEEDS = (1, 2, 3, 4, 5)
GRID = [2.0 ** k for k in range(-6, 7)]


def bench_cv_a9a(data, quick, repeat):
    import svmtrain
    train, test = data.plain("a9a/a9a"), data.plain("a9a/a9a.t")
    if quick:
        train, test = data.head(train, 5000), data.head(test, 5000)
    problem = svmtrain.Problem(C=1.0, seed=SEED)
    model = svmtrain.train(str(train), problem)
    acc = svmtrain.predict(model, str(test)).metrics["accuracy"]
    table = Table("cv-a9a", "5-fold cross-validation at C = 1 against the test set",
                  ["fold seed", "fold accuracies %", "mean %", "std %", "test %",
                   "|mean - test| / std", "s"])
    within = []
    for seed in SEEDS[:2] if quick else SEEDS:
        t0 = time.perf_counter()
        cv = svmtrain.cross_validate(str(train), problem, folds=5, seed=seed, jobs=1)
        seconds = time.perf_counter() - t0
        distance = abs(cv.mean - acc) / cv.std if cv.std > 0 else float("inf")
        within.append(distance <= 1.0)
        table.rows.append([seed, " ".join(f"{100 * v:.2f}" for v in cv.folds),
                           f"{100 * cv.mean:.3f}", f"{100 * cv.std:.3f}", f"{100 * acc:.3f}",
                           f"{distance:.2f}", fs(seconds)])
        table.records.append({"data": "a9a", "fold_seed": seed, "folds": list(cv.folds),
                              "mean": cv.mean, "std": cv.std, "test_accuracy": acc,
                              "distance_in_std": distance, "seconds": seconds})
    two = svmtrain.cross_validate(str(train), problem, folds=5, seed=SEEDS[0], jobs=2)
    same = two.folds == tuple(table.records[0]["folds"])
    table.summary = {"within_one_std": within, "jobs_identical": same}
    table.notes += ["a9a" + (" (first 5000 lines)" if quick else "") + ", n-slack, -e 1e-3, no "
                    "bias; std is the sample standard deviation over the 5 folds (ddof 1); test % "
                    "is the model trained on all of a9a, predicted on a9a.t.",
                    f"--jobs 2 gives the same fold figures as --jobs 1 (fold seed {SEEDS[0]}): "
                    f"{same}."]
    return table


def bench_c_path(data, quick, repeat):
    import svmtrain
    sets = [("ijcnn1", data.plain("ijcnn1/ijcnn1")), ("a9a", data.plain("a9a/a9a"))]
    if quick:
        sets = [(name, data.head(path, 3000)) for name, path in sets]
    table = Table("c-path", "C = 2^-6 .. 2^6: warm-started path against cold starts",
                  ["data", "points", "warm s", "cold s", "warm/cold", "warm epochs",
                   "cold epochs", "certified warm", "certified cold", "max rel gap"])
    ratios = []
    for name, path in sets:
        problem = svmtrain.Problem(epsilon=1e-3, seed=SEED)
        runs = {}
        for warm in (True, False):
            best = None
            for _ in range(repeat):
                result = svmtrain.c_path(str(path), problem, Cs=GRID, warm=warm)
                if best is None or result.seconds < best.seconds:
                    best = result
            runs[warm] = best
        w, c = runs[True], runs[False]
        ratio = w.seconds / c.seconds
        ratios.append(ratio)
        table.rows.append([name + (" (3000)" if quick else ""), len(GRID), fs(w.seconds),
                           fs(c.seconds), f"{ratio:.2f}", sum(p.epochs for p in w.points),
                           sum(p.epochs for p in c.points),
                           f"{sum(p.certified for p in w.points)}/{len(GRID)}",
                           f"{sum(p.certified for p in c.points)}/{len(GRID)}",
                           f"{max(p.relative_gap for p in w.points):.1e}"])
        for label, r in (("warm", w), ("cold", c)):
            table.records.append({"data": name, "run": label, "seconds": r.seconds,
                                  "points": [{"C": p.C, "seconds": p.seconds, "epochs": p.epochs,
                                              "primal": p.primal, "dual": p.dual,
                                              "relative_gap": p.relative_gap,
                                              "certified": p.certified} for p in r.points]})
    table.summary = {"warm_over_cold": ratios}
    table.notes += ["seconds: the training runs' own time (svmtrain.pipeline's RunStats.seconds: "
                    "task, constraints, solver and certificate), summed over the 13 points; the "
                    "file is read once per path. Best of --repeat. n-slack, -e 1e-3, no bias.",
                    "warm: each C starts from the previous C's alphas times C_new / C_old "
                    "(svmtrain.solvers.nslack.HotStart); cold: from alpha = 0."]
    return table


BENCHMARKS = {"cv-a9a": bench_cv_a9a, "c-path": bench_c_path}
