"""The `tasks` group of bench/run.py: svmtrain's structured tasks against LIBLINEAR where it has the
same problem (multiclass = -s 4, regression = -s 13, ranking = -s 3 on the pairs), and on their own
where it has not (sequence). See bench/README.md, section tasks.

Every svmtrain run is the CLI in a fresh process (`svmtrain train -t TASK -e EPS --trace T`): its
train time is the solver's clock at its last epoch (--trace; reading the file is not in it), its
figures are the model's (primal, dual, gap) and those of `svmtrain predict --json` /
`verify-bound --json`. Every LIBLINEAR run is `bench/peers.py liblinear` in a fresh process, the
clock around `train()` only. The peak RSS of a child is read from os.wait4's rusage.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BIN, PEERS, ROOT, Table, fr, fs, pinned_env

C = 1.0
SEED = 1
_OBJECTIVE = re.compile(r"Objective value = (\S+)")
_ITER = re.compile(r"#iter = (\d+)")
_SUMMARY = re.compile(r"(\d+) epochs, (?:(\d+) cutting-plane rounds, (\d+) constraints cached, )?"
                      r"(\S+) s, primal (\S+), dual (\S+), relative gap (\S+)")


# -- running children --------------------------------------------------------------------------------

# A child's ru_maxrss starts at the RSS of the process that forked it (Linux counts the parent's
# pages until exec), and this process holds data sets: so a tiny `python -S` forks the measured
# command and reports its rusage (its own ~10 MB is the floor of every figure).
_RSS_WRAPPER = ("import os, sys\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    os.execv(sys.argv[1], sys.argv[1:])\n"
                "_, status, usage = os.wait4(pid, 0)\n"
                "sys.stderr.write('\\n@@maxrss-kb %d\\n' % usage.ru_maxrss)\n"
                "sys.exit(os.waitstatus_to_exitcode(status))\n")
_RSS = re.compile(r"\n@@maxrss-kb (\d+)\n$")


def run_child(argv):
    """(wall seconds, stdout, stderr, peak RSS in MB) of a child process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-S", "-c", _RSS_WRAPPER] + [str(a) for a in argv],
                              env=pinned_env(), cwd=ROOT, stdout=out, stderr=err)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    found = _RSS.search(stderr)
    rss = int(found.group(1)) / 1024.0 if found else float("nan")
    stderr = stderr[:found.start()] if found else stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n{stderr[-2000:]}")
    return wall, stdout, stderr, rss


def liblinear(path, solver, eps, repeat, *, test=None, p=None, pairs=False, extra=()):
    """LIBLINEAR -s SOLVER in fresh processes: best train time, and the last run's figures:
    D (its 'Objective value = -D' line), P (numpy), relative gap (P - D) / P, iterations."""
    times, out = [], None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            result = Path(tmp) / "out.json"
            argv = [sys.executable, PEERS, "liblinear", path, result, "-s", solver, "--eps", repr(eps),
                    "--C", repr(C)] + (["--test", test] if test else []) + \
                (["--p", repr(p)] if p is not None else []) + (["--pairs"] if pairs else []) + \
                list(extra)
            _wall, stdout, _stderr, rss = run_child(argv)
            out = json.loads(result.read_text())
        times.append(out["seconds"])
        found = _OBJECTIVE.search(stdout)
        if not found:
            raise RuntimeError(f"no 'Objective value' in LIBLINEAR's output:\n{stdout[-2000:]}")
        out["dual"] = -float(found.group(1))
        out["iterations"] = int(_ITER.search(stdout).group(1))
        out["capped"] = "reaching max number of iterations" in stdout
        out["peak_rss_mb"] = rss
    out["relative_gap"] = (out["primal"] - out["dual"]) / out["primal"]
    out["times"] = times
    return min(times), out


def ours(task, path, eps, repeat, tmp, *, extra=(), max_epochs=None):
    """`svmtrain train -t TASK -e EPS` in fresh processes: best train time (the --trace clock at
    the last epoch), best wall time, and the last run's summary, model file and peak RSS."""
    model, trace = Path(tmp) / f"{task}.model", Path(tmp) / f"{task}.trace"
    mode = [] if "-m" in extra else ["-m", "n-slack"]     # these tables are n-slack's figures
    argv = [BIN / "svmtrain", "train", "-t", task, "-e", repr(eps), "--seed", SEED, "--trace", trace,
            *mode, *extra] + (["--max-epochs", max_epochs] if max_epochs else []) + [path, model]
    trains, walls, rss = [], [], []
    for _ in range(repeat):
        model.unlink(missing_ok=True)
        wall, _stdout, stderr, peak = run_child(argv)
        last = [ln for ln in trace.read_text().splitlines() if not ln.startswith("#")][-1]
        trains.append(float(last.split()[1]))
        walls.append(wall)
        rss.append(peak)
    found = _SUMMARY.search(stderr)
    if not found:
        raise RuntimeError(f"no summary line from svmtrain train:\n{stderr[-2000:]}")
    epochs, rounds, cached, _s, P, D, gap = found.groups()
    return {"task": task, "epsilon": eps, "train_seconds": trains, "wall_seconds": walls,
            "train": min(trains), "wall": min(walls), "peak_rss_mb": max(rss), "epochs": int(epochs),
            "rounds": int(rounds) if rounds else 1, "constraints": int(cached) if cached else None,
            "primal": float(P), "dual": float(D), "relative_gap": float(gap),
            "converged": "warning: relative gap" not in stderr, "model": str(model),
            "summary": found.group(0)}


def predict(test, model):
    _w, stdout, _e, _r = run_child([BIN / "svmtrain", "predict", "-q", "--json", test, model,
                                    os.devnull])
    return json.loads(stdout)


def verify(model, train):
    _w, stdout, _e, _r = run_child([BIN / "svmtrain", "verify-bound", "-q", "--json", model, train])
    return json.loads(stdout)


def _gap(x):
    return f"{x:.1e}"


# -- multiclass --------------------------------------------------------------------------------------

def bench_multiclass(data, quick, repeat):
    """Crammer-Singer vs LIBLINEAR -s 4 at the same relative duality gap."""
    sets = [("pendigits /100", data.scaled("pendigits/pendigits", "pendigits.s100", by=100),
             data.scaled("pendigits/pendigits.t", "pendigits.t.s100", by=100), repeat),
            ("sector", data.plain("sector/sector.scale"), data.plain("sector/sector.t.scale"), repeat),
            ("kddcup99 [0,1] 1/5", data.scaled("kddcup99/kddcup99", "kddcup99.minmax.every5",
                                              features=(0, 1), every=5), None, 1)]
    ll_eps = [0.1, 0.01]
    if quick:
        sets = [sets[0], ("kddcup99 [0,1] 1/50", data.scaled(
            "kddcup99/kddcup99", "kddcup99.minmax.every50", features=(0, 1), every=50), None, 1)]
        ll_eps = [0.1]
    table = Table("multiclass", "Crammer-Singer: time to LIBLINEAR -s 4's relative duality gap "
                  "(C=1, no bias)", ["data", "LL -e", "LL iter", "LL gap", "LL s", "ours gap",
                                     "epochs", "ours s", "ours/LL", "LL test acc", "ours test acc"])
    with tempfile.TemporaryDirectory() as tmp:
        for label, train, test, reps in sets:
            for e in ll_eps:
                t_ll, ll = liblinear(train, 4, e, reps, test=test)
                r = ours("multiclass", train, ll["relative_gap"], reps, tmp, max_epochs=20000)
                acc = predict(test, r["model"])["accuracy"] if test else None
                ll_acc = ll.get("test_accuracy")
                table.rows.append([label, f"{e:g}", f"{ll['iterations']}{' (cap)' if ll['capped'] else ''}",
                                   _gap(ll["relative_gap"]), fs(t_ll), _gap(r["relative_gap"]),
                                   f"{r['epochs']}{'' if r['converged'] else ' (max)'}", fs(r["train"]),
                                   fr(r["train"] / t_ll),
                                   f"{100 * ll_acc:.2f}" if ll_acc is not None else "-",
                                   f"{100 * acc:.2f}" if acc is not None else "-"])
                table.records.append({"data": label, "train": train, "test": test, "repeat": reps,
                                      "liblinear_eps": e, "liblinear": ll, "ours": r,
                                      "ours_test_accuracy": acc, "ratio": r["train"] / t_ll})
    table.notes += [
        "LL = LIBLINEAR -s 4 -c 1 -B -1 -e E (MCSVM_CS; a fresh process per run, clock around train() "
        "only). Its C code prints the dual as 'Objective value = -D' (checked in linear.cpp, "
        "Solver_MCSVM_CS::Solve); P of its K x d weights is computed in numpy, LL gap = (P - D) / P.",
        "ours = svmtrain train -t multiclass -e (LL gap) (CLI, fresh process); ours s = its solver "
        "clock at the last epoch (reading excluded, building the constraints included). ours/LL < 1: "
        "svmtrain is faster.",
        "pendigits: features divided by 100 (they are integers 0..100). kddcup99: features min-max "
        "scaled to [0, 1], every 5th row (98,804 of 494,020: on all rows svmtrain needed ~3 min, "
        "see README); no test set, so no test accuracy.",
    ]
    if repeat > 1:
        table.notes.append(f"pendigits and sector: best of {repeat} runs; kddcup99: one run each.")
    return table


# -- regression --------------------------------------------------------------------------------------

def bench_regression(data, quick, repeat):
    """epsilon-SVR vs LIBLINEAR -s 13 at the same relative duality gap."""
    sets = [("cpusmall", data.scaled("cpusmall/cpusmall", "cpusmall.scaled", features=(-1, 1),
                                     target=(-1, 1))),
            ("cadata", data.scaled("cadata/cadata", "cadata.scaled", features=(-1, 1),
                                   target=(-1, 1)))]
    ll_eps = [0.1, 0.01] if not quick else [0.1]
    p = 0.1
    table = Table("regression", "epsilon-SVR (-p 0.1): time to LIBLINEAR -s 13's relative duality "
                  "gap (C=1, no bias)", ["data", "LL -e", "LL iter", "LL P", "LL gap", "LL s",
                                         "ours P", "ours gap", "epochs", "ours s", "ours/LL"])
    with tempfile.TemporaryDirectory() as tmp:
        for label, train in sets:
            for e in ll_eps:
                t_ll, ll = liblinear(train, 13, e, repeat, p=p)
                r = ours("regression", train, ll["relative_gap"], repeat, tmp, extra=["-p", repr(p)],
                         max_epochs=20000)
                table.rows.append([label, f"{e:g}", f"{ll['iterations']}{' (cap)' if ll['capped'] else ''}",
                                   f"{ll['primal']:.6g}", _gap(ll["relative_gap"]), fs(t_ll),
                                   f"{r['primal']:.6g}", _gap(r["relative_gap"]),
                                   f"{r['epochs']}{'' if r['converged'] else ' (max)'}", fs(r["train"]),
                                   fr(r["train"] / t_ll)])
                table.records.append({"data": label, "train": train, "liblinear_eps": e,
                                      "liblinear": ll, "ours": r, "ratio": r["train"] / t_ll})
    table.notes += [
        "LL = LIBLINEAR -s 13 -c 1 -p 0.1 -B -1 -e E (L2R_L1LOSS_SVR_DUAL); its dual from "
        "'Objective value = -D', P = 1/2|w|^2 + C sum max(0, |y - w.x| - p) in numpy.",
        "ours = svmtrain train -t regression -p 0.1 -e (LL gap); times as in multiclass.",
        "Features and targets min-max scaled to [-1, 1] (svm-scale -l -1 -u 1 -y -1 1).",
    ]
    return table


# -- ranking -----------------------------------------------------------------------------------------

def bench_ranking(data, quick, repeat):
    """Pairwise ranking on ohsumed, and LIBLINEAR -s 3 on the same pairs (the same problem)."""
    train, vali = data.plain("ohsumed/train.txt"), data.plain("ohsumed/vali.txt")
    eps_list = [1e-3] if quick else [1e-2, 1e-3]
    reps = 1                     # each run takes seconds; the pairs make LIBLINEAR's a large file
    table = Table("ranking", "pairwise ranking (one slack per pair, C=1) on ohsumed; vali metrics",
                  ["run", "iter/epochs", "primal", "gap", "certified gap", "train s", "wall s",
                   "peak MB", "pair acc", "NDCG@10", "ours/LL"])
    with tempfile.TemporaryDirectory() as tmp:
        t_ll, ll = liblinear(train, 3, 0.1, reps, pairs=True)
        table.rows.append(["LL -s 3 -e 0.1 on pairs",
                           f"{ll['iterations']}{' (cap)' if ll['capped'] else ''}",
                           f"{ll['primal']:.7g}", _gap(ll["relative_gap"]), "", fs(t_ll), "",
                           f"{ll['peak_rss_mb']:.0f}", "", "", ""])
        targets = [("= LL gap", ll["relative_gap"])] + [(f"-e {e:g}", e) for e in eps_list]
        for name, eps in targets:
            r = ours("ranking", train, eps, reps, tmp)
            cert = verify(r["model"], train)
            m = predict(vali, r["model"])
            table.rows.append([f"ours {name}" + (" (default)" if eps == 1e-3 else ""),
                               f"{r['epochs']}{'' if r['converged'] else ' (max)'}",
                               f"{r['primal']:.7g}", _gap(r["relative_gap"]),
                               _gap(cert["relative_gap"]) + ("" if cert["certified"] else " (not)"),
                               fs(r["train"]), fs(r["wall"]), f"{r['peak_rss_mb']:.0f}",
                               f"{100 * m['pairwise_accuracy']:.2f}", f"{m['ndcg@10']:.4f}",
                               fr(r["train"] / t_ll) if name == "= LL gap" else ""])
            table.records.append({"run": name, "epsilon": eps, "ours": r, "verify": cert,
                                  "vali": m, **({"liblinear": ll, "ratio": r["train"] / t_ll}
                                                if name == "= LL gap" else {})})
    table.notes += [
        f"ohsumed Fold 1: train {ll['rows']:,} pairs from 62 queries (9,177 documents), vali 21 "
        "queries; pair acc = pairs of vali ordered right, NDCG@10 = mean over vali queries.",
        "LL = LIBLINEAR -s 3 -c 1 -B -1 on the pairs x_a - x_b (alternately labelled +1/-1 by "
        "flipping the sign): exactly svmtrain's ranking problem, so its gap (P - D) / P is on the "
        "same scale; building the pairs is outside its clock, train s is train() alone.",
        "ours: svmtrain train -t ranking; certified gap = verify-bound (P recomputed from the model "
        "file in one pass); train s = the solver clock, wall s = the whole process; one run each.",
    ]
    return table


# -- sequence ----------------------------------------------------------------------------------------

# C for conll2000, chosen on a held-out part of the training file (its last 1,000 sentences,
# trained on the first 7,936 at -e 1e-2 with the default features): token accuracy 96.51% at
# C = 0.1, 96.35% at 0.3, 95.86% at 1 (the default C overfits these features).
SEQUENCE_C = 0.1

def bench_sequence(data, quick, repeat):
    """HMM tagging on conll2000: conversion, training at two epsilons, token accuracy on test."""
    table = Table("sequence", "HMM tagging (CoNLL-2000 chunking): svmtrain train -t sequence, "
                  "token accuracy on the test set", ["run", "rounds", "constraints", "epochs",
                                                     "primal", "gap", "train s", "wall s",
                                                     "peak MB", "token acc"])
    eps_list = [1e-2] if quick else [1e-3, 1e-2]
    src_train = data.source("conll2000/train.txt")
    src_test = data.source("conll2000/test.txt")
    with tempfile.TemporaryDirectory() as tmp:
        d, tr, te = Path(tmp) / "dict", Path(tmp) / "train.svm", Path(tmp) / "test.svm"
        w1, _o, err1, rss1 = run_child([BIN / "svmtools", "conll2svm", "--new-dictionary", d,
                                        src_train, tr])
        w2, _o, err2, rss2 = run_child([BIN / "svmtools", "conll2svm", "--dictionary", d,
                                        "--unknown-tag-ok", src_test, te])
        table.rows.append(["conll2svm train", "", "", "", "", "", "", fs(w1), f"{rss1:.0f}", ""])
        table.rows.append(["conll2svm test", "", "", "", "", "", "", fs(w2), f"{rss2:.0f}", ""])
        table.records.append({"conll2svm": {"train_wall": w1, "test_wall": w2,
                                            "train_summary": err1.strip(),
                                            "test_summary": err2.strip(),
                                            "peak_rss_mb": [rss1, rss2]}})
        train, test = tr, te
        if quick:
            train = _head_sentences(tr, Path(tmp) / "train.head", 300)
        for eps in eps_list:
            r = ours("sequence", train, eps, 1, tmp, extra=("-c", repr(SEQUENCE_C)))
            m = predict(test, r["model"])
            table.rows.append([f"train -c {SEQUENCE_C:g} -e {eps:g}" + (" (default -e)" if eps == 1e-3 else ""),
                               r["rounds"], r["constraints"] if r["constraints"] is not None else "-",
                               f"{r['epochs']}{'' if r['converged'] else ' (max)'}",
                               f"{r['primal']:.7g}", _gap(r["relative_gap"]), fs(r["train"]),
                               fs(r["wall"]), f"{r['peak_rss_mb']:.0f}",
                               f"{100 * m['accuracy']:.2f}"])
            table.records.append({"epsilon": eps, "ours": r, "test": m})
    table.notes += [
        "conll2svm with its default features (word, lowercase, shape, window 1; affixes 1..3; POS "
        "tags in a window of 2 and their bigrams; bias; binary); the test file through the training "
        "dictionary, unknown tags "
        "written as 0 (2 tokens; they count as errors). Wall times of the converter, from the xz "
        "files.",
        f"train: svmtrain train -t sequence (Hamming loss, margin rescaling, C={SEQUENCE_C:g}, chosen "
        "on a held-out part of the training file: see SEQUENCE_C) by cutting planes; "
        "rounds and constraints cached are those of its summary line; train s = the solver clock "
        "(reading excluded), wall s = the whole process; peak MB = the child's max RSS (wait4). "
        "One run each (minutes), not best of 3.",
        "token acc = svmtrain predict --json on the test set (47,377 tokens); the aim is >= 95%.",
    ]
    if quick:
        table.notes.append("--quick: trained on the first 300 sentences only.")
    return table


def _head_sentences(path, out, n):
    """The lines of the first n sentences (qids) of a sequence file."""
    if out.exists():
        return out
    seen, last = 0, None
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")    # a file found there is complete
    with open(path) as f, open(tmp, "w") as o:
        for line in f:
            qid = line.split(None, 2)[1]
            if qid != last:
                seen += 1
                last = qid
                if seen > n:
                    break
            o.write(line)
    os.replace(tmp, out)
    return out


BENCHMARKS = {"multiclass": bench_multiclass, "regression": bench_regression,
              "ranking": bench_ranking, "sequence": bench_sequence}
