"""The `controls` group of bench/run.py: the training controls of issue 7 on real data.

- class-weights: `-w 1 3` on a9a against LIBLINEAR -s 3 -w1 3 (the same problem): both solved
  tightly, the relative difference of their primals (to the same weighted objective), and times.
- nonneg: `--nonneg all` on a9a: every weight >= 0, the gap certified by verify-bound, the cost
  against the unconstrained run.
- bias-reg: `-B 1 --bias-reg FACTOR` on a9a for FACTOR 1 .. 0.001: the bias weight, the optimum
  and the solver's time (the conditioning cost of a less regularized bias).
- warm-start: ijcnn1 and a9a (and conll2000's first sentences, cutting planes), train on the
  first 80% with --save-state, then on 100% with --warm-start against 100% from scratch; and 100%
  at C = 1.5 hot-started from the C = 1 state: epochs, passes (work) and train time saved, the
  same optimum (brackets overlap).

Every svmtrain run is the CLI in a fresh process (taskbench.ours: train time from --trace).
"""

import tempfile
from pathlib import Path

from _common import BIN, Table, fr, fs
from taskbench import liblinear, ours, run_child, verify


def _rel(a, b):
    return abs(a - b) / max(abs(a), abs(b))


def _linear_svc(train, weights, tol):
    """scikit-learn's LinearSVC (LIBLINEAR -s 3 inside, no iteration cap that binds) with
    class_weight: best-of-one fit time and the primal of its w under the same weighted objective."""
    import time
    import warnings

    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file
    from sklearn.svm import LinearSVC
    from peers import primal_hinge
    X, y = load_svmlight_file(str(train))
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svc = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0, tol=tol,
                        class_weight=weights, max_iter=10**6, random_state=0).fit(X, y)
    seconds = time.perf_counter() - start
    w = svc.coef_.ravel()
    sign = np.where(y == svc.classes_[1], 1.0, -1.0)
    C_i = np.array([weights.get(v, 1.0) for v in y])
    return seconds, {"primal": primal_hinge(X, w, sign, C_i), "tol": tol,
                     "n_iter": int(np.max(svc.n_iter_)),
                     "converged": not any("converge" in str(c.message) for c in caught)}


def bench_class_weights(data, quick, repeat):
    train = data.plain("a9a/a9a")
    if quick:
        train = data.head(train, 5000)
    table = Table("class-weights", "-w 1 3 on a9a vs LIBLINEAR -s 3 -w1 3 and LinearSVC("
                  "class_weight) (C = 1), all tight",
                  ["run", "train s", "primal", "dual", "rel. gap", "|P - P_ref| / P_ref", "time ratio"])
    t_ll, ll = liblinear(train, 3, 1e-5, repeat, extra=["--class-weight", "1", "3"])
    with tempfile.TemporaryDirectory() as tmp:
        r = ours("binary", train, 5e-5, repeat, tmp, extra=["-w", "1", "3"], max_epochs=50000)
        v = verify(r["model"], train)
    t_svc, svc = _linear_svc(train, {1.0: 3.0, -1.0: 1.0}, 1e-7)
    diff = _rel(r["primal"], svc["primal"])
    table.rows.append([f"LIBLINEAR -e 1e-5{' (iteration cap)' if ll.get('capped') else ''}",
                       fs(t_ll), f"{ll['primal']:.10g}", f"{ll['dual']:.10g}",
                       f"{ll['relative_gap']:.1e}", f"{_rel(ll['primal'], svc['primal']):.1e}",
                       fr(r["train"] / t_ll)])
    table.rows.append([f"LinearSVC tol 1e-7 ({svc['n_iter']} iter.)", fs(t_svc),
                       f"{svc['primal']:.10g}", "", "", "reference", fr(r["train"] / t_svc)])
    table.rows.append(["svmtrain -e 5e-5", fs(r["train"]), f"{r['primal']:.10g}", f"{r['dual']:.10g}",
                       f"{r['relative_gap']:.1e}", f"{diff:.1e}", ""])
    table.notes.append("the primal column: each w priced by the same weighted objective; the "
                       "difference is to LinearSVC(class_weight={1: 3}) solved to tol 1e-7; time "
                       "ratio = svmtrain / that peer")
    table.notes.append(f"verify-bound: {'certified' if v['certified'] else 'NOT certified'} "
                       f"(relative gap {v['relative_gap']:.1e}); agreement target 1e-4: "
                       f"{'met' if diff <= 1e-4 else 'NOT met'}")
    table.records.append({"liblinear": ll, "linear_svc": svc, "ours": r, "verify": v,
                          "relative_primal_difference": diff})
    table.summary.update(relative_primal_difference=diff, certified=v["certified"])
    return table


def bench_nonneg(data, quick, repeat):
    from svmtrain.model import read_model
    train = data.plain("a9a/a9a")
    if quick:
        train = data.head(train, 5000)
    table = Table("nonneg", "--nonneg all on a9a (C = 1, -e 1e-3) against the unconstrained problem",
                  ["run", "train s", "epochs", "primal", "rel. gap", "min w", "w = 0", "certified"])
    with tempfile.TemporaryDirectory() as tmp:
        free = ours("binary", train, 1e-3, repeat, tmp)
        w_free = read_model(free["model"]).w
        v_free = verify(free["model"], train)
        tmp2 = Path(tmp) / "nn"
        tmp2.mkdir()
        nn = ours("binary", train, 1e-3, repeat, tmp2, extra=["--nonneg", "all"])
        w = read_model(nn["model"]).w
        v = verify(nn["model"], train)
    for label, r, ww, vv in (("unconstrained", free, w_free, v_free), ("--nonneg all", nn, w, v)):
        table.rows.append([label, fs(r["train"]), r["epochs"], f"{r['primal']:.10g}",
                           f"{r['relative_gap']:.1e}", f"{ww.min():.3g}", int((ww == 0).sum()),
                           "yes" if vv["certified"] else "NO"])
    table.notes.append(f"time ratio constrained / unconstrained: {fr(nn['train'] / free['train'])}; "
                       f"the constrained optimum is higher by {nn['primal'] / free['primal'] - 1:.1%}")
    table.records.append({"free": free, "nonneg": nn, "verify": v, "min_w": float(w.min())})
    table.summary.update(all_nonnegative=bool(w.min() >= 0), certified=v["certified"])
    return table


def _work(run_dir):
    """Constraints visited over the run (the `visited` column of its trace: an epoch over a shrunk
    set is a sliver of a pass; a cutting-plane round, its re-solve), and the trace's lines."""
    rows = [ln.split() for ln in (Path(run_dir) / "trace").read_text().splitlines()
            if not ln.startswith("#")]
    return sum(int(r[8]) for r in rows), len(rows)


def _sentence_cut(lines, fraction):
    """The line count of the first sentences (qid runs) making up about `fraction` of the lines."""
    qid = [ln.split()[1] for ln in lines]
    cut = int(len(lines) * fraction)
    while 0 < cut < len(lines) and qid[cut] == qid[cut - 1]:
        cut -= 1
    return cut


def bench_warm_start(data, quick, repeat):
    """--warm-start against training from scratch: 80% of the rows then all of them (ijcnn1,
    a9a: -e 1e-4, ijcnn1 also at the default 1e-3; conll2000's first sentences with cutting
    planes: -e 1e-2), and C 1 -> 1.5."""
    import shutil
    sets = [("ijcnn1", "binary", data.plain("ijcnn1/ijcnn1"), 1e-4, 10000, 1.0),
            ("ijcnn1 (default -e)", "binary", data.plain("ijcnn1/ijcnn1"), 1e-3, 10000, 1.0),
            ("a9a", "binary", data.plain("a9a/a9a"), 1e-4, 5000, 1.0)]
    conll = data.cache / "conll2000.train.svm"
    if not conll.exists():      # as bench/oneslackbench.py makes it
        run_child([BIN / "svmtools", "conll2svm", "--new-dictionary", data.cache / "conll2000.dict",
                   data.source("conll2000/train.txt"), conll])
    # C = 0.1 as in bench/oneslackbench.py (at C = 1 the first sentences are separable: C = 1.5
    # has the same optimum)
    sets.append(("conll2000 (first 4000 tokens)", "sequence", data.head(conll, 4000), 1e-2, 1500,
                 0.1))
    table = Table("warm-start", "--save-state on 80% of the rows, then --warm-start on all of them; "
                  "and all rows at 1.5 C from the C state: warm against scratch",
                  ["data", "run", "epochs", "rounds", "passes", "train s", "primal", "dual",
                   "rel. gap", "warm / scratch time", "warm / scratch passes"])
    summary = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, task, full, eps, quick_lines, C in sets:
            if quick:
                full = data.head(full, quick_lines)
            lines = full.read_bytes().splitlines(keepends=True)
            cut = (_sentence_cut(lines, 0.8) if task == "sequence" else len(lines) * 4 // 5)
            base = Path(tmp) / task
            shutil.rmtree(base, ignore_errors=True)
            base.mkdir()
            part = base / "part"
            part.write_bytes(b"".join(lines[:cut]))
            s80, s100 = base / "s80.npz", base / "s100.npz"
            n = len(lines)

            def run(name, path, extra):
                d = base / name
                d.mkdir()
                r = ours(task, path, eps, 1 if task == "sequence" else repeat, d,
                         extra=["-c", repr(C), *extra])
                (d / f"{task}.trace").rename(d / "trace")
                r["visits"], r["lines"] = _work(d)
                return r
            runs = [("80%, --save-state", run("80", part, ["--save-state", s80]), None),
                    ("100% from scratch", run("scratch", full, ["--save-state", s100]), None)]
            runs.append(("100% --warm-start (80% state)", run("warm", full, ["--warm-start", s80]),
                         runs[1][1]))
            c15 = ["-c", repr(1.5 * C)]      # the later -c wins
            runs.append((f"C = {1.5 * C:g} from scratch", run("scratch-c", full, c15), None))
            runs.append((f"C = {1.5 * C:g} --warm-start (C = {C:g} state)",
                         run("warm-c", full, [*c15, "--warm-start", s100]), runs[3][1]))
            for name, r, ref in runs:
                rows_here = cut if name.startswith("80%") else n
                table.rows.append([label, name, r["epochs"], r["rounds"] if task == "sequence" else "",
                                   f"{r['visits'] / rows_here:.1f}" if task != "sequence" else
                                   f"{r['visits']}", fs(r["train"]), f"{r['primal']:.10g}",
                                   f"{r['dual']:.10g}", f"{r['relative_gap']:.1e}",
                                   fr(r["train"] / ref["train"]) if ref else "",
                                   fr(r["visits"] / ref["visits"]) if ref else ""])
            warm, scratch, warm_c, scratch_c = runs[2][1], runs[1][1], runs[4][1], runs[3][1]
            same = (warm["dual"] <= scratch["primal"] and scratch["dual"] <= warm["primal"]
                    and warm_c["dual"] <= scratch_c["primal"] and scratch_c["dual"] <= warm_c["primal"])
            table.records.append({"data": label, "runs": {k: r for k, r, _ in runs}, "same_optimum": same})
            summary[label] = {"added_rows_time_ratio": warm["train"] / scratch["train"],
                              "added_rows_work_ratio": warm["visits"] / scratch["visits"],
                              "changed_C_time_ratio": warm_c["train"] / scratch_c["train"],
                              "changed_C_work_ratio": warm_c["visits"] / scratch_c["visits"],
                              "same_optimum": same}
            table.notes.append(f"{label} (-c {C:g}, -e {eps:g}, {cut} of {n} lines): the same optima (brackets "
                               f"[D, P] of warm and scratch overlap): {'yes' if same else 'NO'}")
    table.notes.append("passes = constraints visited / rows (the trace's `visited` column summed; "
                       "sequence: constraints visited in the rounds' re-solves): with shrinking an "
                       "epoch can be a sliver of a pass, so epochs are not the work; a C-change hot "
                       "start sets aside in its first epoch what the old run had shrunk (an "
                       "added-rows one measures its own thresholds), and both runs spend most "
                       "epochs on the few hard constraints left")
    table.summary.update(summary)
    return table


def bench_bias_reg(data, quick, repeat):
    from svmtrain.model import read_model
    train = data.plain("a9a/a9a")
    if quick:
        train = data.head(train, 5000)
    table = Table("bias-reg", "-B 1 --bias-reg FACTOR on a9a (C = 1, -e 1e-3): the bias frees up, "
                  "the solver slows", ["FACTOR", "epochs", "train s", "primal", "bias weight",
                                       "time / FACTOR 1"])
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for factor in ("1", "0.1", "0.01", "0.001"):
            d = Path(tmp) / factor
            d.mkdir()
            r = ours("binary", train, 1e-3, repeat, d, extra=["-B", "1", "--bias-reg", factor],
                     max_epochs=20000)
            r["bias"] = float(read_model(r["model"]).w[-1])
            runs.append((factor, r))
    base = runs[0][1]["train"]
    for factor, r in runs:
        table.rows.append([factor, r["epochs"], fs(r["train"]), f"{r['primal']:.10g}",
                           f"{r['bias']:.4g}", fr(r["train"] / base)])
    table.notes.append("the solver sees the bias feature B / sqrt(FACTOR): smaller factors cost "
                       "less regularization and more epochs")
    table.records.extend(r for _, r in runs)
    return table


BENCHMARKS = {"class-weights": bench_class_weights, "nonneg": bench_nonneg,
              "warm-start": bench_warm_start, "bias-reg": bench_bias_reg}
