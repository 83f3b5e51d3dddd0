"""The `online-ranking` benchmark (bench/run.py --only online-ranking): online-dual ranking, a
query at a time with one slack per query (svmtrain.tasks.ranking.Ranking.worst_offenders),
against n-slack and 1-slack on ohsumed, all in the same run. See bench/README.md, section online.

Every training run is a fresh process; its CPU seconds (user + system, from the kernel's
accounting of the child, less noisy than wall time on a shared machine) and peak RSS are the
child's own. Per run: the certified relative gap (`svmtrain verify-bound`, not timed), the test
file's NDCG@10 (`svmtrain predict`), and for online-dual the cached constraints and cache bytes
against the file's preference pairs (what caching every pair would hold), after passes 1, 2, 3
of one run (bench/onlinebench.py's curve child; its CPU is training only).
"""

import json
import sys
import tempfile
from pathlib import Path

from _common import BIN, ROOT, Table, fr, pinned_env
from taskbench import predict, verify

SEED = 1

#: fork, exec, wait4: the child's own CPU seconds and peak RSS, printed last on stderr
_USAGE_WRAPPER = ("import os, sys\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    os.execv(sys.argv[1], sys.argv[1:])\n"
                  "_, status, usage = os.wait4(pid, 0)\n"
                  "sys.stderr.write('\\n@@usage %r %d\\n' % (usage.ru_utime + usage.ru_stime, "
                  "usage.ru_maxrss))\n"
                  "sys.exit(os.waitstatus_to_exitcode(status))\n")


def cpu_child(argv):
    """(CPU seconds, peak RSS MB, stdout) of one child process; RuntimeError when it fails."""
    import subprocess
    proc = subprocess.run([sys.executable, "-S", "-c", _USAGE_WRAPPER] + [str(a) for a in argv],
                          env=pinned_env(), cwd=ROOT, capture_output=True, text=True)
    head, _, tail = proc.stderr.rpartition("\n@@usage ")
    if proc.returncode != 0 or not tail:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu, rss_kb = tail.split()
    return float(cpu), int(rss_kb) / 1024.0, proc.stdout


def preference_pairs(path):
    """The preference pairs of a ranking file (t_a > t_b inside a query), counted, not listed."""
    import numpy as np
    from svmtrain import data
    from svmtrain._oracles import ranking_pair_stats
    from svmtrain.tasks.ranking import queries
    block = data.concat_blocks(list(data.iter_blocks(path)))
    order, query_ptr = queries(block, str(path))
    _, n_pairs, _ = ranking_pair_stats(np.zeros(block.n_rows), block.target, query_ptr, order)
    return int(n_pairs.sum()), len(query_ptr) - 1


def online_passes(train, test, C, passes, options=None):
    """onlinebench's curve child: one online-dual run, its figures after each pass."""
    import onlinebench
    args = {"task": "ranking", "train": str(train), "test": str(test), "C": C, "passes": passes,
            "stop_gap": 0.0, "options": options or {}}
    cpu, rss, stdout = cpu_child([sys.executable, Path(onlinebench.__file__).resolve(), "curve",
                                  json.dumps(args)])
    return json.loads(stdout), rss


def bench_online_ranking(data, quick, repeat):
    train, test = data.plain("ohsumed/train.txt"), data.plain("ohsumed/vali.txt")
    pairs, n_queries = preference_pairs(train)
    settings = [0.01] if quick else [0.01, 0.62]
    table = Table("online-ranking", "online-dual ranking (one slack per query, a query at a time) "
                  "vs n-slack and 1-slack on ohsumed, same run: certified gap, CPU, peak RSS, cache "
                  "against the pairs, test NDCG@10 (-e 1e-3)",
                  ["C", "run", "certified gap", "CPU s", "CPU / n-slack", "RSS MB", "cache",
                   "cache / pairs", "cache KB", "NDCG@10"])
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "m"
        for C in settings:
            base = None
            for mode in ("n-slack", "1-slack"):
                cpu, rss, _ = cpu_child([BIN / "svmtrain", "train", "-q", "-t", "ranking", "-m", mode,
                                         "-c", repr(C), "--seed", SEED, train, model])
                v = verify(model, train)
                ndcg = predict(test, model)["ndcg@10"]
                base = cpu if base is None else base
                table.rows.append([f"{C:g}", mode, f"{v['relative_gap']:.1e}", f"{cpu:.2f}",
                                   fr(cpu / base), f"{rss:.0f}", "", "", "", f"{ndcg:.4f}"])
                table.records.append({"C": C, "run": mode, "cpu": cpu, "rss_mb": rss, "verify": v,
                                      "ndcg@10": ndcg})
            runs = [("online-dual", {}, 1 if quick else 3)]
            if C > 0.1 and not quick:      # where the defaults need more than one pass
                runs.append(("online-dual --chunk 4 --window-looks 100",
                             {"chunk": 4, "window_looks": 100}, 1))
            for label, options, passes in runs:
                curve, rss = online_passes(train, test, C, passes, options)
                for r in curve:
                    table.rows.append([f"{C:g}", f"{label} after pass {r['pass']}",
                                       f"{r['gap']:.1e}", f"{r['cpu']:.2f}", fr(r["cpu"] / base),
                                       f"{r['rss_mb']:.0f}", str(r["cache"]),
                                       f"1/{pairs / max(r['cache'], 1):.0f}",
                                       f"{r['cache_bytes'] / 1024:.0f}",
                                       f"{r['test']['ndcg@10']:.4f}"])
                table.records.append({"C": C, "run": label, "passes": curve, "rss_mb": rss,
                                      "pairs": pairs, "queries": n_queries})
    table.notes += [
        f"ohsumed Fold 1 train ({n_queries} queries, {pairs} preference pairs), NDCG@10 on its "
        "vali file; --seed 1, no bias. n-slack lists every pair (one slack each); 1-slack sums them "
        "into one plane per iteration; online-dual caches a few constraints per query, each the sum "
        "of the query's violated pairs, in one row of the features (svmtrain.tasks.ranking).",
        "online-dual rows: one run (bench/onlinebench.py curve) certified after each pass by one "
        "streamed pass of verify-bound's code (not timed); CPU = training so far (the child's "
        "CPU, imports included); RSS = the child's peak so far; cache KB = the cache's arrays and "
        "row store.",
    ]
    return table


BENCHMARKS = {"online-ranking": bench_online_ranking}
