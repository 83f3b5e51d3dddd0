"""The `online` group of bench/run.py: the online-dual mode (streamed, Ramanan Alg. 2) against the
batch n-slack mode on the same problem (C = 1, no bias). See bench/README.md, section online.

Every run is the CLI in a fresh process (through taskbench.run_child: wall time, peak RSS):

- batch: `svmtrain train -e 1e-3` (n-slack, the whole file in memory);
- online P: `svmtrain train -m online-dual --passes P --no-verify` (P = 1, 3): its wall time is
  training only; the certificate is then `svmtrain verify-bound --json` (the true P(w), one more
  streamed pass), the relative gap (P - D) / P that verify-bound prints;
- batch to the same gap: n-slack with -e = the one-pass certified gap (time and memory side by side);
- test accuracy of each model (`svmtrain predict --json`).

Memory: kddcup99 (binary) streamed through standard input from a generator process that writes the
file once, and ten times over (4.9 million rows, 0.65 GB; no file is written), peak RSS of each run.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BIN, ROOT, Table, fs, pinned_env
from taskbench import _RSS, _RSS_WRAPPER, predict, run_child

SEED = 1


def split(data, path, k=10):
    """(train, test): the lines of a cached file whose number mod k is not 0 / is 0."""
    path = Path(path)

    def produce(keep_test):
        def write(out):
            with open(path, "rb") as f:
                for i, line in enumerate(f):
                    if (i % k == 0) == keep_test:
                        out.write(line)
        return write
    return (data._write(f"{path.name}.train{k - 1}of{k}", produce(False)),
            data._write(f"{path.name}.test1of{k}", produce(True)))


def shuffled(data, path, seed=0):
    """The lines of a cached file in a random order (fixed seed)."""
    path = Path(path)

    def produce(out):
        import numpy as np
        lines = open(path, "rb").readlines()
        for i in np.random.default_rng(seed).permutation(len(lines)):
            out.write(lines[i])
    return data._write(f"{path.name}.shuffled", produce)


def train(path, model, *args):
    """(wall seconds, peak RSS MB, stderr) of one `svmtrain train` in a fresh process."""
    wall, _out, err, rss = run_child([BIN / "svmtrain", "train", "--seed", SEED, *args, path, model])
    return wall, rss, err


def best(repeat, path, model, *args):
    runs = [train(path, model, *args) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def verify(model, path):
    """verify-bound's figures (--tol 1: the exit status is not the point here)."""
    _w, stdout, _e, _r = run_child([BIN / "svmtrain", "verify-bound", "-q", "--json", "--tol", "1",
                                    model, path])
    return json.loads(stdout)


def _acc(test, model):
    return 100 * predict(test, model)["accuracy"]


def bench_online(data, quick, repeat):
    kdd_bin, _info = data.kddcup99_binary()
    kdd_multi = data.scaled("kddcup99/kddcup99", "kddcup99.minmax.every5", features=(0, 1), every=5)
    sets = [("a9a", "binary", data.plain("a9a/a9a"), data.plain("a9a/a9a.t")),
            ("ijcnn1", "binary", data.plain("ijcnn1/ijcnn1"), data.plain("ijcnn1/ijcnn1.t")),
            ("reuters_lasvm", "binary", data.plain("reuters_lasvm/reuters.trn"),
             data.plain("reuters_lasvm/reuters.tst")),
            ("kddcup99 binary 9/10", "binary", *split(data, kdd_bin)),
            ("kddcup99 multiclass [0,1] 1/5, 9/10", "multiclass", *split(data, kdd_multi))]
    # the same training files with their lines shuffled (ijcnn1 and kddcup99 come in runs)
    sets += [(label + ", shuffled", task, shuffled(data, tr), te) for label, task, tr, te in sets[1:]
             if "reuters" not in label]
    variants = [("online 1 pass", ["--passes", "1"]), ("online 3 passes", ["--passes", "3"]),
                ("online 1 pass, window 10000", ["--passes", "1", "--shuffle-window", "10000"]),
                ("online 1 pass, Alg. 2 as published", ["--passes", "1", "--shuffle-window", "0",
                                                        "--keep-inactive", "0", "--admit-margin", "0"])]
    if quick:
        sets = [(label, task, data.head(tr, 20000), te) for label, task, tr, te in sets[:2]]
    table = Table("online", "online-dual (streamed) vs n-slack (batch): certified relative gap, time, "
                  "peak RSS, test accuracy (C=1, no bias, -e 1e-3)",
                  ["data", "run", "certified gap", "s", "RSS MB", "test acc", "batch s at that gap",
                   "batch RSS MB", "online/batch s"])
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "m"
        for label, task, tr, te in sets:
            reps = 1 if "kddcup99" in label else repeat
            if "shuffled" not in label:      # shuffled: the same batch problem, its row is above
                t_b, rss_b, _ = best(reps, tr, model, "-t", task, "-e", "1e-3", "--max-epochs", "20000")
                v = verify(model, tr)
                acc_b = _acc(te, model)
                table.rows.append([label, "batch n-slack -e 1e-3", f"{v['relative_gap']:.1e}", fs(t_b),
                                   f"{rss_b:.0f}", f"{acc_b:.2f}", "", "", ""])
                table.records.append({"data": label, "run": "batch", "seconds": t_b, "rss_mb": rss_b,
                                      "verify": v, "test_accuracy": acc_b})
            for name, extra in (variants[:1] if "shuffled" in label else variants):
                t_o, rss_o, err = best(reps, tr, model, "-t", task, "-m", "online-dual", "--no-verify",
                                       *extra)
                v = verify(model, tr)
                acc = _acc(te, model)
                gap = v["relative_gap"]
                same = ["", "", ""]
                record = {"data": label, "run": name, "seconds": t_o, "rss_mb": rss_o, "verify": v,
                          "test_accuracy": acc, "summary": err.strip().splitlines()[-1]}
                if name == "online 1 pass" and 1e-6 < gap < 0.5:
                    t_s, rss_s, _ = best(reps, tr, model, "-t", task, "-e", repr(gap), "--max-epochs", "20000")
                    same = [fs(t_s), f"{rss_s:.0f}", f"{t_o / t_s:.2f}"]
                    record.update(batch_same_gap_seconds=t_s, batch_same_gap_rss_mb=rss_s)
                table.rows.append([label, name, f"{gap:.1e}", fs(t_o), f"{rss_o:.0f}", f"{acc:.2f}", *same])
                table.records.append(record)
        if not quick:
            table.rows += memory_rows(kdd_bin, table.records)
    table.notes += [
        "certified gap = verify-bound's (P(w) - D) / P on the training file: P from one streamed pass, "
        "D = the dual value the model records (a true lower bound). Online runs use --no-verify, so "
        "their time is training only (the label scan included: binary and multiclass read the file "
        "once for their labels).",
        "online runs use the defaults (--shuffle-window 100000 --window-looks 3 --admit-margin 0.3 "
        "--keep-inactive 200) "
        "unless named: window 10000 = --shuffle-window 10000 (smaller than every file here: a9a, "
        "ijcnn1 and reuters fit in one default window); Alg. 2 as published = --shuffle-window 0 "
        "--keep-inactive 0 --admit-margin 0 (file order, violated examples only, pruned at once).",
        "batch s at that gap: n-slack with -e set to the online one-pass certified gap (not when that "
        "gap is 0.5 or more). online/batch s < 1: the online pass is faster.",
        "kddcup99: no test set is shared, so every 10th line is held out (9/10 train, 1/10 test); the "
        "multiclass file is min-max scaled to [0, 1], every 5th row (as the tasks group); one run each. "
        "Its rows are grouped by attack type (runs of up to 193,127 equal labels), which is what one "
        "pass finds hard: see README.",
        "shuffled: the training file's lines in a random order (fixed seed), the same problem: what "
        "the shuffle window approximates with bounded memory.",
        "memory rows: kddcup99 binary (all rows) through standard input from a generator process "
        "(the file written 1 or 10 times into the pipe), `train -m online-dual --labels -1,1 -`.",
    ]
    return table


def memory_rows(path, records):
    rows = []
    for k in (1, 10):
        wall, rss, err = _stdin_run(path, k)
        rows.append([f"kddcup99 binary x{k} via stdin", "online 1 pass", "-", fs(wall), f"{rss:.0f}",
                     "-", "", "", ""])
        records.append({"data": f"kddcup99 binary x{k} stdin", "run": "online 1 pass", "seconds": wall,
                        "rss_mb": rss, "summary": err.strip().splitlines()[-1]})
    growth = records[-1]["rss_mb"] / records[-2]["rss_mb"] - 1
    rows.append(["kddcup99 x10 / x1 peak RSS", "", "", "", f"{100 * growth:+.1f}%", "", "", "", ""])
    return rows


def _stdin_run(path, k):
    """`svmtrain train -m online-dual -` fed k copies of the file by a generator process."""
    gen = subprocess.Popen([sys.executable, "-c",
                            "import shutil, sys\n"
                            f"for _ in range({k}):\n"
                            f"    with open({str(path)!r}, 'rb') as f:\n"
                            "        shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)\n"],
                           stdout=subprocess.PIPE)
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        argv = [sys.executable, "-S", "-c", _RSS_WRAPPER, BIN / "svmtrain", "train", "-m", "online-dual",
                "--labels", "-1,1", "--seed", SEED, "-", Path(tmp) / "m"]
        proc = subprocess.run([str(a) for a in argv], stdin=gen.stdout, stderr=err, env=pinned_env(),
                              cwd=ROOT)
        wall = time.perf_counter() - start
        gen.stdout.close()
        gen.wait()
        err.seek(0)
        text = err.read()
    found = _RSS.search(text)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"stdin run x{k} exited {proc.returncode}:\n{text[-2000:]}")
    return wall, int(found.group(1)) / 1024.0, text[:found.start()]




# ---------------------------------------------------------------------------------------------
# Structured data (issue 19): online-dual pass by pass against n-slack, in the same run


def _conll_columns(data, name, conllu, columns):
    """A CoNLL-U file cut to the CoNLL columns `word tag` (columns FORM and UPOS), comment lines,
    multiword tokens and empty nodes left out (the format conll2svm reads)."""
    src = data.shared / conllu

    def produce(out):
        import lzma
        with lzma.open(src, "rt", encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    out.write(b"\n")
                    continue
                if line.startswith("#"):
                    continue
                cols = line.split("\t")
                if "-" in cols[0] or "." in cols[0]:
                    continue
                out.write(" ".join(cols[c].replace(" ", "_") for c in columns).encode() + b"\n")
    return data._write(name, produce)


def _xz_copy(data, rel, name):
    """SHARED/rel.xz decompressed under its own name (conll2000's and ohsumed's are both train.txt)."""
    def produce(out):
        import lzma
        import shutil
        with lzma.open(data.shared / f"{rel}.xz", "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)
    return data._write(name, produce)


def _conll2svm(data, stem, train_conll, test_conll):
    """(train, test) svmlight files of a CoNLL pair, conll2svm's default features."""
    d = data.cache / f"{stem}.dict"
    train, test = data.cache / f"{stem}.train.svm", data.cache / f"{stem}.test.svm"
    if not train.exists():
        run_child([BIN / "svmtools", "conll2svm", "-q", "--force", "--new-dictionary", d, train_conll,
                   train])
    if not test.exists():
        run_child([BIN / "svmtools", "conll2svm", "-q", "--dictionary", d, "--unknown-tag-ok",
                   test_conll, test])
    return train, test


def _repeated_sentences(data, path, k):
    """A sequence file written k times over, each copy's qids moved past the last copy's."""
    def produce(out):
        top = 0
        for _ in range(k):
            last = 0
            with open(path, "rb") as f:
                for line in f:
                    label, q, rest = line.split(b" ", 2)
                    n = int(q[4:])
                    last = max(last, n)
                    out.write(b"%s qid:%d %s" % (label, n + top, rest))
            top += last
    return data._write(f"{Path(path).name}.x{k}", produce)


def _children_cpu():
    """CPU seconds of the waited-for child processes so far (user + system)."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def curve(task, train, test, C, passes=3, options=None):
    """One online-dual run pass by pass in a fresh process (curve_child), and its peak RSS."""
    args = {"task": task, "train": str(train), "test": str(test) if test else None, "C": C,
            "passes": passes, "stop_gap": 1e-3, "options": options or {}}
    wall, stdout, _err, rss = run_child([sys.executable, Path(__file__).resolve(), "curve",
                                         json.dumps(args)])
    return json.loads(stdout), rss


def _command_row(table, label, run, task, C, mode_args, train_file, test_file, model, batch=None):
    """One `svmtrain train -t task -c C -e 1e-3 *mode_args` as a user runs it, in a fresh
    process: wall time, CPU and peak RSS of the whole process (online-dual's certifying pass
    included), the gap verify-bound certifies, the test accuracy; its CPU and RSS against
    `batch`, n-slack's record on the same file, when given. The memory the issue compares with
    n-slack's is this process's, not the pass-by-pass runner's. Appends the row; returns the
    record."""
    cpu = _children_cpu()
    t, rss, _ = best(1, train_file, model, "-t", task, "-c", repr(C), "-e", "1e-3", *mode_args)
    cpu = _children_cpu() - cpu
    v = verify(model, train_file)
    acc = 100 * predict(test_file, model)["accuracy"] if test_file else None
    ratios = ((f"{cpu / batch['cpu']:.2f}", f"{rss / batch['rss_mb']:.2f}") if batch else ("1", "1"))
    table.rows.append([label, run, f"{v['relative_gap']:.1e}", fs(t), fs(cpu), ratios[0],
                       f"{rss:.0f}", ratios[1], "-" if acc is None else f"{acc:.2f}", "", ""])
    record = {"data": label, "run": run, "seconds": t, "cpu": cpu, "rss_mb": rss, "verify": v,
              "test_accuracy": acc}
    table.records.append(record)
    return record


def bench_online_structured(data, quick, repeat):
    ud_train = _conll_columns(data, "ud_ewt.train.conll", "ud_english_ewt/en_ewt-ud-train.conllu.xz", (1, 3))
    ud_test = _conll_columns(data, "ud_ewt.test.conll", "ud_english_ewt/en_ewt-ud-test.conllu.xz", (1, 3))
    sets = [("UD English EWT UPOS", "sequence", 0.1, *_conll2svm(data, "ud_ewt", ud_train, ud_test)),
            ("conll2000 chunking", "sequence", 0.1,
             *_conll2svm(data, "conll2000.default", _xz_copy(data, "conll2000/train.txt", "conll2000.train.conll"),
                         _xz_copy(data, "conll2000/test.txt", "conll2000.test.conll"))),
            ("sector", "multiclass", 1.0, data.plain("sector/sector.scale"),
             data.plain("sector/sector.t.scale"))]
    if quick:
        sets = [(label, task, C, data.head(tr, 20000), te) for label, task, C, tr, te in sets[:1]]
    table = Table("online-structured", "online-dual pass by pass vs n-slack (batch), same run: "
                  "certified relative gap, training time, peak RSS, test accuracy (-e 1e-3, no bias)",
                  ["data", "run", "certified gap", "s", "CPU s", "CPU / n-slack", "RSS MB",
                   "RSS / n-slack", "test acc", "cache", "cache MB"])
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "m"
        for label, task, C, tr, te in sets:
            batch = _command_row(table, label, "n-slack -e 1e-3", task, C, ["-m", "n-slack"], tr,
                                 te, model)
            t_b, cpu_b, rss_b = batch["seconds"], batch["cpu"], batch["rss_mb"]
            passes, rss_o = curve(task, tr, te, C)
            for r in passes:
                table.rows.append([label, f"online-dual after pass {r['pass']}", f"{r['gap']:.1e}",
                                   fs(r["seconds"]), fs(r["cpu"]), f"{r['cpu'] / cpu_b:.2f}",
                                   f"{r['rss_mb']:.0f}", f"{r['rss_mb'] / rss_b:.2f}",
                                   f"{100 * r['test']['accuracy']:.2f}", str(r["cache"]),
                                   f"{r['cache_bytes'] / 2 ** 20:.0f}"])
            table.records.append({"data": label, "run": "online-dual", "passes": passes,
                                  "rss_mb": rss_o, "batch_seconds": t_b, "batch_cpu": cpu_b,
                                  "batch_rss_mb": rss_b})
            online_one_pass = ["-m", "online-dual", "--passes", "1"]
            command = _command_row(table, label, "online-dual 1 pass, the command", task, C,
                                   online_one_pass, tr, te, model, batch)
            if label.startswith("UD") and not quick:
                once = command["rss_mb"]
                # both commands on the file 4 times: what the online-dual mode saves once a file
                # is more than one window
                x4_file = _repeated_sentences(data, tr, 4)
                batch4 = _command_row(table, label + " x4", "n-slack -e 1e-3", task, C,
                                      ["-m", "n-slack"], x4_file, None, model)
                x4 = _command_row(table, label + " x4", "online-dual 1 pass, the command", task, C,
                                  online_one_pass, x4_file, None, model, batch4)
                table.rows.append(["UD x4 / x1 peak RSS, online-dual 1 pass", "", "", "", "", "",
                                   f"{100 * (x4['rss_mb'] / once - 1):+.1f}%", "", "", "", ""])
                # the file once in 4 windows: what smaller windows save in memory and cost the
                # certificate (and the widening of w when a window brings new features, which the
                # file written 4 times never does)
                _command_row(table, label, "online-dual 1 pass, 4 windows (--window-rows 55000)",
                             task, C, online_one_pass + ["--window-rows", "55000"], tr, te, model,
                             batch)
                # under a bound: evicted support vectors come back in the later passes
                bounded, _ = curve(task, x4_file, None, C, passes=3,
                                   options={"cache_limit_bytes": 32 << 20})
                for r in bounded:
                    table.rows.append([label + " x4", f"--cache-limit 32MB after pass {r['pass']}",
                                       f"{r['gap']:.1e}", fs(r["seconds"]), fs(r["cpu"]), "-",
                                       f"{r['rss_mb']:.0f}", "-", "-", str(r["cache"]),
                                       f"{r['cache_bytes'] / 2 ** 20:.0f}"])
                table.rows.append(["UD x4 32MB / x1 peak RSS", "", "", "", "", "",
                                   f"{100 * (bounded[-1]['rss_mb'] / passes[0]['rss_mb'] - 1):+.1f}%",
                                   "", "", "", ""])
                table.records.append({"data": label + " x4", "run": "online-dual --cache-limit 32MB",
                                      "passes": bounded})
                # the same command on the file once: flat memory is x4 against it
                once_bounded, _ = curve(task, tr, None, C, passes=1,
                                        options={"cache_limit_bytes": 32 << 20})
                r = once_bounded[0]
                table.rows.append([label, "--cache-limit 32MB after pass 1", f"{r['gap']:.1e}",
                                   fs(r["seconds"]), fs(r["cpu"]), "-", f"{r['rss_mb']:.0f}", "-",
                                   "-", str(r["cache"]), f"{r['cache_bytes'] / 2 ** 20:.0f}"])
                table.rows.append(["UD x4 / x1 peak RSS, both 32MB, 1 pass", "", "", "", "", "",
                                   f"{100 * (bounded[0]['rss_mb'] / r['rss_mb'] - 1):+.1f}%", "",
                                   "", "", ""])
                table.records.append({"data": label, "run": "online-dual --cache-limit 32MB",
                                      "passes": once_bounded})
                # a bound that binds on both (once's unbounded cache peaks at about 26 MB)
                pair = [curve(task, f, None, C, passes=1, options={"cache_limit_bytes": 16 << 20})[0][0]
                        for f in (tr, x4_file)]
                for name, r in zip((label, label + " x4"), pair):
                    table.rows.append([name, "--cache-limit 16MB after pass 1", f"{r['gap']:.1e}",
                                       fs(r["seconds"]), fs(r["cpu"]), "-", f"{r['rss_mb']:.0f}",
                                       "-", "-", str(r["cache"]), f"{r['cache_bytes'] / 2 ** 20:.0f}"])
                    table.records.append({"data": name, "run": "online-dual --cache-limit 16MB",
                                          "passes": [r]})
                table.rows.append(["UD x4 / x1 peak RSS, both 16MB, 1 pass", "", "", "", "", "",
                                   f"{100 * (pair[1]['rss_mb'] / pair[0]['rss_mb'] - 1):+.1f}%", "",
                                   "", "", ""])
    table.notes += [
        "online-dual rows: one run (bench/onlinebench.py curve), its model after each pass certified "
        "by one streamed pass of verify-bound's code (not timed); s = training time so far; CPU s = "
        "the process's CPU seconds so far without the certifying passes (n-slack: the child's, from "
        "getrusage; less noisy than wall time on a shared machine); RSS = the process's peak so far; "
        "cache = constraints, cache MB = the cache's arrays and row store. "
        "The run stops after the pass that certifies 1e-3.",
        "online-dual runs use the defaults (multiclass and sequence: up to 100 looks at a window, "
        "windows of up to 250000 rows: UD, conll2000 and sector are one window each).",
        "online-dual 1 pass, the command: `svmtrain train -m online-dual` in a fresh process as a "
        "user runs it, its certifying pass included (time, CPU, peak RSS), beside n-slack's "
        "command on the same file: the RSS / n-slack column the issue's memory target reads. "
        "x4 rows: both commands on the file written 4 times (4 windows). 4 windows: the command "
        "on the file once, cut into windows of at most 55,000 rows.",
        "UD: CoNLL-U FORM and UPOS columns, conll2svm's default features; C 0.1 for the sequence "
        "sets, C 1 for sector. x4: the UD training file written 4 times (qids renumbered), by both "
        "commands at their defaults (online-dual's: the window bound) and for three passes under "
        "--cache-limit 32MB (cache MB: the cache and "
        "the evicted support vectors kept to come back), beside the file once under the same "
        "bound (which its cache does not reach), and both under --cache-limit 16MB, which binds "
        "on both.",
    ]
    return table


# ---------------------------------------------------------------------------------------------
# Structured data: the pass-by-pass curve of one online-dual run, in a child process


def curve_child(args):
    """In a fresh process (`python bench/onlinebench.py curve JSON`): one online-dual run, pass by
    pass; after each pass the model's certified relative gap (P(w) from one streamed pass, the code
    of verify-bound, not timed) and the test accuracy (not timed). Prints JSON: per pass the
    training seconds so far, the gap, the cache (constraints, bytes) and the process's peak RSS."""
    import resource
    from svmtrain import data, objective
    from svmtrain.memory import STREAM_MMAP_THRESHOLD, fix_mmap_threshold, online_mmap_threshold
    from svmtrain.solvers.online import OnlineDual, OnlineOptions, structured
    from svmtrain.solvers.online_reading import streaming_task
    from svmtrain.tasks import task_class

    # as `svmtrain train -m online-dual` runs (svmtrain.pipeline._train_online): the allocator's
    # policy, and without a cache limit the window bound, its default
    options = dict(args.get("options", {}))
    user_limit = any(options.get(k) is not None for k in ("cache_limit", "cache_limit_bytes"))
    fix_mmap_threshold(STREAM_MMAP_THRESHOLD)
    task = streaming_task(task_class(args["task"]), args["train"], {})
    fix_mmap_threshold(online_mmap_threshold(task.name, structured(task)))
    options.setdefault("window_bound", not user_limit)
    opt = OnlineOptions(C=args["C"], bias=None, epsilon=args.get("epsilon", 1e-3), seed=SEED,
                        passes=1, **options)
    solver = OnlineDual(task, args["train"], opt)
    out, seconds, verify_cpu = [], 0.0, 0.0
    for p in range(1, args["passes"] + 1):
        solver.opt.passes = p
        start = time.perf_counter()
        result = solver.run()
        seconds += time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_SELF)
        rss = usage.ru_maxrss / 1024.0
        cpu = usage.ru_utime + usage.ru_stime - verify_cpu      # training only
        priced = objective.primal(task, result.w, result.geometry, opt.C,
                                  data.iter_blocks(args["train"]), args["train"])
        P, D = priced.primal, result.dual
        record = {"pass": p, "seconds": seconds, "cpu": cpu, "primal": P, "dual": D, "gap": (P - D) / P,
                  "cache": result.cache, "cache_bytes": solver.cache.nbytes + solver.folded.nbytes,
                  "rss_mb": rss,
                  "solves": result.solves, "epochs": result.epochs}
        if args.get("test"):
            metric = task.new_metric()
            for block in data.whole_examples(data.iter_blocks(args["test"]), task.grouping):
                metric.add(task.predict(result.w, block, result.geometry, args["test"])[0], block)
            record["test"] = metric.summary()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        verify_cpu = usage.ru_utime + usage.ru_stime - cpu
        out.append(record)
        print(json.dumps(record), file=sys.stderr, flush=True)
        if record["gap"] <= args.get("stop_gap", 0):
            break
    print(json.dumps(out))


BENCHMARKS = {"online": bench_online, "online-structured": bench_online_structured}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "curve":
        curve_child(json.loads(sys.argv[2]))
    else:
        sys.exit("usage: onlinebench.py curve JSON (bench/run.py --only online runs the group)")
