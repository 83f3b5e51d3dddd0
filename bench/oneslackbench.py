"""The `oneslack` group of bench/run.py: the 1-slack mode against the n-slack mode and LIBLINEAR
(agreement of the optimum, scaling with n, speed at the same gap, threads). See bench/README.md,
section 1-slack.

Every run is the CLI in a fresh process, as in the `tasks` group (taskbench.run_child): train time
is the solver clock at the last trace line, figures from the summary line and the model.
"""

import os
import re
import tempfile
from pathlib import Path

import numpy as np

from _common import BIN, Table, fr, fs
from taskbench import _head_sentences, liblinear, run_child

SEED = 1
_SUMMARY = re.compile(r"(\d+) epochs, (?:(\d+) iterations \((\d+) oracle passes = \d+ oracle calls, "
                      r"(\d+) cache hits\), (\d+) planes in the working set, "
                      r"(?:\d+ iterations on the sample first, )?"
                      r"(?:(\d+) distinct examples trained on \(identical ones merged\), )?"
                      r"|(\d+) cutting-plane "
                      r"rounds, (\d+) constraints cached, )?(\S+) s, primal (\S+), dual (\S+), "
                      r"relative gap (\S+)")


def train(path, task, mode, eps, repeat, tmp, *, extra=(), max_epochs=20000):
    """`svmtrain train --mode MODE` in fresh processes: best solver time and the summary figures."""
    model, trace = Path(tmp) / f"{task}.{mode}.model", Path(tmp) / f"{task}.{mode}.trace"
    argv = [BIN / "svmtrain", "train", "-t", task, "--mode", mode, "-e", repr(eps), "--seed", SEED,
            "--trace", trace, "--max-epochs", max_epochs, *extra, path, model]
    times, walls = [], []
    for _ in range(repeat):
        model.unlink(missing_ok=True)
        wall, _o, stderr, rss = run_child(argv)
        last = [ln for ln in trace.read_text().splitlines() if not ln.startswith("#")][-1]
        times.append(float(last.split()[1]))
        walls.append(wall)
    found = _SUMMARY.search(stderr)
    if not found:
        raise RuntimeError(f"no summary line from svmtrain train:\n{stderr[-2000:]}")
    (epochs, iters, passes, hits, planes, distinct, rounds, cached, _s, P, D,
     gap) = found.groups()
    return {"mode": mode, "epsilon": eps, "train": min(times), "times": times, "wall": min(walls),
            "peak_rss_mb": rss, "epochs": int(epochs), "iterations": int(iters or rounds or 1),
            "oracle_passes": int(passes) if passes else None,
            "cache_hits": int(hits) if hits else None,
            "working_set": int(planes) if planes else (int(cached) if cached else None),
            "distinct_examples": int(distinct) if distinct else None,
            "primal": float(P), "dual": float(D), "relative_gap": float(gap),
            "converged": "warning: relative gap" not in stderr, "model": str(model),
            "summary": found.group(0)}


def _gap(x):
    return f"{x:.1e}"


def _load():
    """The 1-minute load average now (the machine is shared: a second thread needs a free core)."""
    return f"{os.getloadavg()[0]:.1f}"


def _sets(data, quick):
    """(label, task, path, extra args, epsilon) of the agreement benchmark."""
    conll = data.cache / "conll2000.train.svm"
    if not conll.exists():
        d = data.cache / "conll2000.dict"
        # the features this group's figures were measured with (before --column-window 2
        # --column-ngrams 2 became the default): the cached file keeps its name
        run_child([BIN / "svmtools", "conll2svm", "--column-window", "1", "--column-ngrams", "1",
                   "--new-dictionary", d, data.source("conll2000/train.txt"), conll])
    sets = [("a9a", "binary", data.plain("a9a/a9a"), ["-B", "1"], 1e-3),
            ("pendigits /100", "multiclass", data.scaled("pendigits/pendigits", "pendigits.s100",
                                                         by=100), ["-B", "1"], 1e-3),
            ("cpusmall [-1,1]", "regression", data.scaled("cpusmall/cpusmall", "cpusmall.scaled",
                                                          features=(-1, 1), target=(-1, 1)), [], 1e-3),
            ("ohsumed", "ranking", data.plain("ohsumed/train.txt"), [], 1e-3),
            ("conll2000", "sequence", conll, ["-c", "0.1"], 1e-2)]
    if quick:
        sets = [(label, task, data.head(path, 2000) if task != "sequence"
                 else _head_sentences(conll, data.cache / "conll2000.train.head300", 300), extra, eps)
                for label, task, path, extra, eps in sets]
    return sets


def bench_agreement(data, quick, repeat):
    table = Table("oneslack-agreement", "1-slack and n-slack on the same problem (C=1): the primal "
                  "each reaches", ["data", "task", "-e", "n-slack P", "gap", "s", "1-slack P", "gap",
                                   "iter", "oracle", "cache", "planes", "s", "|dP|/P", "1s/ns"])
    with tempfile.TemporaryDirectory() as tmp:
        for label, task, path, extra, eps in _sets(data, quick):
            n = train(path, task, "n-slack", eps, 1, tmp, extra=extra)
            o = train(path, task, "1-slack", eps, 1, tmp, extra=extra)
            diff = abs(o["primal"] - n["primal"]) / max(o["primal"], n["primal"])
            table.rows.append([label, task, f"{eps:g}", f"{n['primal']:.8g}", _gap(n["relative_gap"]),
                               fs(n["train"]), f"{o['primal']:.8g}", _gap(o["relative_gap"]),
                               o["iterations"], o["oracle_passes"], o["cache_hits"],
                               o["working_set"], fs(o["train"]), _gap(diff),
                               fr(o["train"] / n["train"])])
            table.records.append({"data": label, "task": task, "epsilon": eps, "nslack": n,
                                  "oneslack": o, "relative_primal_difference": diff})
    table.notes += [
        "svmtrain train -t TASK --mode MODE -e E (defaults otherwise: -f 0, --in-out 0.1, one thread), one run "
        "each; s = solver clock. |dP|/P must be within E (both primals are within E of the optimum).",
        "pendigits: features / 100; cpusmall: features and target min-max scaled to [-1, 1]; "
        "conll2000: svmtools conll2svm --column-window 1 --column-ngrams 1 (the earlier default "
        "features), 8,936 sentences, -c 0.1 -e 1e-2.",
    ]
    return table


def _slope(ns, ts):
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def _shuffled(data, path):
    """The lines of a file in a fixed random order (seed 1): its first n lines are a sample of n
    rows (kddcup99's own first 50k rows hold a single class)."""
    path = Path(path)

    def produce(out):
        with open(path, "rb") as f:
            lines = f.readlines()
        for i in np.random.default_rng(1).permutation(len(lines)):
            out.write(lines[i])
    return data._write(f"{path.name}.shuffled", produce)


def bench_scaling(data, quick, repeat):
    binary = _shuffled(data, data.kddcup99_binary()[0])
    multi = _shuffled(data, data.scaled("kddcup99/kddcup99", "kddcup99.minmax", features=(0, 1)))
    sizes = [50_000, 100_000, 200_000, None] if not quick else [5_000, 20_000]
    table = Table("oneslack-scaling", "1-slack on kddcup99 (n rows drawn at random): time, iterations and "
                  "working set against n, -e 1e-3, C=1", ["task", "n", "iterations", "oracle",
                                                          "cache", "planes", "gap", "s"])
    with tempfile.TemporaryDirectory() as tmp:
        for task, path in (("binary", binary), ("multiclass", multi)):
            ns, ts = [], []
            for size in sizes:
                p = data.head(path, size) if size else path
                r = train(p, task, "1-slack", 1e-3, 1, tmp)
                rows = size or sum(1 for _ in open(path, "rb"))
                ns.append(rows)
                ts.append(r["train"])
                table.rows.append([task, f"{rows:,}", r["iterations"], r["oracle_passes"],
                                   r["cache_hits"], r["working_set"], _gap(r["relative_gap"]),
                                   fs(r["train"])])
                table.records.append({"task": task, "n": rows, "oneslack": r})
            slope = _slope(ns, ts)
            table.rows.append([task, "log-log slope", "", "", "", "", "", f"{slope:.2f}"])
            table.summary[f"{task}_slope"] = slope
    table.notes += [
        "binary: kddcup99's largest class against the rest, features scaled to [0, 1] (bench "
        "kddcup99.binary); multiclass: 23 classes, features min-max scaled to [0, 1]. One run each; "
        "slope = least-squares slope of log(time) on log(n) (1 = linear).",
    ]
    return table


def bench_speed(data, quick, repeat):
    binary, _info = data.kddcup99_binary()
    multi = data.scaled("kddcup99/kddcup99", "kddcup99.minmax.every5", features=(0, 1), every=5)
    # all 494k rows: the large set of the multiclass comparison (the fifth above is a mid-size one)
    multi_all = data.scaled("kddcup99/kddcup99", "kddcup99.minmax", features=(0, 1))
    if quick:
        binary, multi = data.head(binary, 20_000), data.head(multi, 20_000)
        multi_all = data.head(multi_all, 40_000)
    table = Table("oneslack-speed", "time to the same relative gap (C=1, no bias): 1-slack "
                  "against LIBLINEAR and our n-slack", ["data", "peer", "peer gap", "peer s",
                                                        "1-slack gap", "iter", "1-slack s",
                                                        "1-slack/peer", "load"])
    with tempfile.TemporaryDirectory() as tmp:
        for label, task, path, solver in (("kddcup99 binary", "binary", binary, 3),
                                          ("a9a", "binary", data.plain("a9a/a9a"), 3),
                                          ("kddcup99 [0,1] 1/5", "multiclass", multi, 4),
                                          ("kddcup99 [0,1] all", "multiclass", multi_all, 4)):
            load = _load()
            t_ll, ll = liblinear(path, solver, 0.1, repeat)
            target = max(ll["relative_gap"], 1e-6)
            o = train(path, task, "1-slack", target, repeat, tmp)
            # the plain cutting-plane algorithm (no in-out query points), for comparison
            plain = train(path, task, "1-slack", target, repeat, tmp, extra=["--in-out", "0"])
            table.rows.append([label, f"LIBLINEAR -s {solver} -e 0.1", _gap(ll["relative_gap"]),
                               fs(t_ll), _gap(o["relative_gap"]), o["iterations"], fs(o["train"]),
                               fr(o["train"] / t_ll), load])
            table.rows.append([label, "1-slack --in-out 0", _gap(plain["relative_gap"]),
                               fs(plain["train"]), _gap(o["relative_gap"]), o["iterations"],
                               fs(o["train"]), fr(o["train"] / plain["train"]), ""])
            # the gain of training on the distinct examples, apart
            whole = train(path, task, "1-slack", target, repeat, tmp,
                          extra=["--no-merge-duplicates"])
            table.rows.append([label, "1-slack --no-merge-duplicates", _gap(whole["relative_gap"]),
                               fs(whole["train"]), _gap(o["relative_gap"]), o["iterations"],
                               fs(o["train"]), fr(o["train"] / whole["train"]), ""])
            record = {"data": label, "liblinear": ll, "oneslack": o, "plain": plain,
                      "unmerged": whole, "ratio_liblinear": o["train"] / t_ll,
                      "ratio_plain": o["train"] / plain["train"],
                      "ratio_unmerged": o["train"] / whole["train"],
                      "ratio_liblinear_unmerged": whole["train"] / t_ll, "load_before": load}
            two = train(path, task, "1-slack", target, repeat, tmp, extra=["--threads", "2"])
            table.rows.append([label, "LIBLINEAR (1-slack --threads 2)", _gap(ll["relative_gap"]),
                               fs(t_ll), _gap(two["relative_gap"]), two["iterations"],
                               fs(two["train"]), fr(two["train"] / t_ll), ""])
            record.update(two_threads=two, ratio_liblinear_two_threads=two["train"] / t_ll)
            if task == "binary":
                n = train(path, task, "n-slack", target, repeat, tmp)
                table.rows.append([label, "svmtrain n-slack", _gap(n["relative_gap"]), fs(n["train"]),
                                   _gap(o["relative_gap"]), o["iterations"], fs(o["train"]),
                                   fr(o["train"] / n["train"]), ""])
                record.update(nslack=n, ratio_nslack=o["train"] / n["train"])
            record["load_after"] = _load()
            table.rows[-1][-1] = record["load_after"]
            table.records.append(record)
    table.notes += [
        "LIBLINEAR at its default -e 0.1, fresh process, clock around train(); its relative gap "
        "(P - D) / P is the target of svmtrain -e. Best of the repeats for every time. The row "
        "'1-slack --in-out 0' is the plain cutting-plane algorithm (peer s = its time, iter = "
        "in-out's); '1-slack --no-merge-duplicates' trains on every row instead of the distinct "
        "examples (peer s = its time: its ratio to LIBLINEAR is peer s / LIBLINEAR's); "
        "'(1-slack --threads 2)': the same 1-slack run with two threads against the "
        "one-thread LIBLINEAR. load = 1-minute load average before the first and after the last run of a "
        "data set (2 cores, shared).",
    ]
    return table


def bench_threads(data, quick, repeat):
    conll = data.cache / "conll2000.train.svm"
    _sets(data, False) if not conll.exists() else None
    conll3000 = _head_sentences(conll, data.cache / "conll2000.train.head3000", 3000)
    sets = [("conll2000 3000 sentences", "sequence", conll3000, ["-c", "0.1"], 1e-2),
            ("sector", "multiclass", data.plain("sector/sector.scale"), [], 1e-2)]
    if quick:
        sets = [("conll2000 300 sentences", "sequence",
                 _head_sentences(conll, data.cache / "conll2000.train.head300", 300), [], 1e-2)]
    table = Table("oneslack-threads", "1-slack with --threads 2 against --threads 1 (2 cores, "
                  "shared machine)", ["data", "task", "-e", "1 thread s", "2 threads s", "speed-up",
                                      "same model", "load"])
    with tempfile.TemporaryDirectory() as tmp:
        for label, task, path, extra, eps in sets:
            runs, loads = {}, []
            for threads in (1, 2):
                sub = Path(tmp) / f"t{threads}"
                sub.mkdir(exist_ok=True)
                loads.append(_load())
                runs[threads] = train(path, task, "1-slack", eps, repeat, sub,
                                      extra=[*extra, "--threads", threads])
            loads.append(_load())
            same = Path(runs[1]["model"]).read_bytes() == Path(runs[2]["model"]).read_bytes()
            table.rows.append([label, task, f"{eps:g}", fs(runs[1]["train"]), fs(runs[2]["train"]),
                               f"{runs[1]['train'] / runs[2]['train']:.2f}x", "yes" if same else "NO",
                               " / ".join(loads)])
            table.records.append({"data": label, "one": runs[1], "two": runs[2], "identical": same,
                                  "load": loads})
    table.notes.append("Best of --repeat runs each; same model = the two model files (of the last "
                       "runs) are byte for byte equal; load = 1-minute load average before the "
                       "1-thread runs, before the 2-thread runs and after (2 cores, shared).")
    return table


BENCHMARKS = {"oneslack-agreement": bench_agreement, "oneslack-scaling": bench_scaling,
              "oneslack-speed": bench_speed, "oneslack-threads": bench_threads}
