"""`modes`: every linear mode and `--mode auto` on the shared sets, whole `svmtrain train` runs.

Each set is trained by n-slack, 1-slack, online-dual and auto at the same C and -e, interleaved
(`--repeat` rounds, best of each), so that auto's choice can be judged against the fastest
explicit mode of the same run: the table svmtrain.auto's rule is written from. "chosen / best" is
the explicit run of the mode auto chose against the fastest (what the choice cost, without the
noise between two runs of one mode); "auto / best" the auto run itself.
"""

import os

from _common import BIN, Table, best_of, fr, fs, run_timed

#: the explicit modes timed against auto (BENCH_MODES=n-slack,1-slack leaves online-dual out,
#: which is never the fastest on data that fits in memory and costs the most time here)
EXPLICIT = tuple(os.environ.get("BENCH_MODES", "n-slack,1-slack,online-dual").split(","))
MODES = EXPLICIT + ("auto",)


def _sets(data, quick):
    sets = [
        ("a9a", "binary", "1", data.plain("a9a/a9a")),
        ("ijcnn1", "binary", "1", data.plain("ijcnn1/ijcnn1")),
        ("reuters_lasvm", "binary", "1", data.plain("reuters_lasvm/reuters.trn")),
        ("pendigits /100", "multiclass", "1",
         data.scaled("pendigits/pendigits", "pendigits.s100", by=100)),
        ("sector", "multiclass", "1", data.plain("sector/sector.scale")),
        ("cpusmall [-1,1]", "regression", "1",
         data.scaled("cpusmall/cpusmall", "cpusmall.s11", features=(-1, 1), target=(-1, 1))),
        ("ohsumed", "ranking", "0.01", data.plain("ohsumed/train.txt")),
        ("conll2000 (-e 1e-2)", "sequence", "0.1", None),
        ("kddcup99 binary [0,1]", "binary", "1", data.kddcup99_binary()[0]),
    ]
    conll = _conll(data)
    sets = [(n, t, c, conll if p is None else p) for n, t, c, p in sets]
    if quick:
        sets = [(n, t, c, data.head(p, 2000)) for n, t, c, p in sets if t != "sequence"]
    return sets


def _conll(data):
    """conll2000's training file in svmlight form (svmtools conll2svm, its default features)."""
    import subprocess
    out = data.cache / "modes.conll2000.train.svm"
    if not out.exists():
        tmp, dictionary = out.with_name(".modes.conll2000.tmp"), out.with_name("modes.conll2000.dict")
        if dictionary.exists():
            dictionary.unlink()
        subprocess.run([BIN / "svmtools", "conll2svm", "-q", "--new-dictionary", dictionary,
                        data.source("conll2000/train.txt"), tmp], check=True)
        tmp.rename(out)
    return out


def bench_modes(data, quick, repeat):
    table = Table("modes", "whole `svmtrain train` runs per mode; auto against the fastest",
                  ["set", "task", *MODES, "auto chose", "chosen / best", "auto / best"])
    for name, task, C, path in _sets(data, quick):
        eps = "1e-2" if task == "sequence" else "1e-3"
        times, chosen = {m: float("inf") for m in MODES}, None
        for _ in range(repeat):              # interleaved: a slow moment costs every mode alike
            for mode in MODES:
                argv = [BIN / "svmtrain", "train", "-t", task, "-c", C, "-e", eps, "-m", mode,
                        path, data.cache / f"modes.{mode}.model"]
                seconds, _, (_, proc) = best_of(1, lambda: run_timed(argv))
                times[mode] = min(times[mode], seconds)
                if mode == "auto":
                    summary = proc.stderr.strip().splitlines()[-1]
                    chosen = summary.split(f"{task} ", 1)[1].split(",", 1)[0]
        fastest = min(times[m] for m in EXPLICIT)
        # the choice's cost, free of run-to-run noise: auto's run is the chosen mode's run, so its
        # explicit time against the fastest's says what choosing it cost
        chosen_time = times.get(chosen.split(" on ")[0], times["auto"])
        table.rows.append([name, task, *(fs(times[m]) for m in MODES), chosen,
                           fr(chosen_time / fastest), fr(times["auto"] / fastest)])
        table.records.append({"set": name, "task": task, "C": C, "seconds": times,
                              "auto_chose": chosen})
    table.notes.append("best of --repeat whole-process runs (start-up included), interleaved, "
                       "-e 1e-3 (sequence 1e-2); the rule: svmtrain/auto.py")
    return table


BENCHMARKS = {"modes": bench_modes}
