"""Adversarial inputs for every command, run by hand (not collected by pytest):

    PYTHONPATH=$PWD /work/main/.venv/bin/python tests/fuzz_cli.py [-j 2] [-k SUBSTRING]

Each case runs the CLI in a subprocess (memory capped, so an allocation from a huge index fails
instead of swapping) and is judged by the project's rule for bad input: no signal (a negative
return code is a crash), no traceback, exit status 2 when the input is bad (with the file and line
in the message when a line is at fault), and no output file or temporary left behind on failure.
The cases worth keeping run fast in tests/test_robustness.py.
"""
import argparse
import bz2
import concurrent.futures
import gzip
import lzma
import os
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "data")
PY = sys.executable
MEMORY_CAP = 3 << 30

#: what the console scripts run (svmtrain's entry answers --help, --version and predict's common
#: case before click is imported: the lean path is fuzzed with the rest)
CLI = {"svmtrain": "import sys; from svmtrain.__main__ import run; sys.exit(run())",
       "svmtools": "from svmtools.cli import main; main()"}


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run(prog, args, cwd, stdin=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run([PY, "-c", CLI[prog], *args], cwd=cwd, env=env, input=stdin,
                       capture_output=True, timeout=timeout, preexec_fn=_limit)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def _head(name, n):
    with open(os.path.join(DATA, name), "rb") as f:
        return b"".join(f.readlines()[:n])


def base_files():
    """A small valid file per task."""
    heart = open(os.path.join(DATA, "heart_scale"), "rb").read().splitlines()[:30]
    cons = b"".join(b"1 qid:%d " % (i // 2 + 1) + b" ".join(line.split()[1:]) + b"\n"
                    for i, line in enumerate(heart))
    return {"binary": _head("a9a.train.sample", 60), "multiclass": _head("pendigits_scale.train.sample", 60),
            "regression": _head("cpusmall_scale.train.sample", 60), "ranking": _head("ohsumed.train.sample", 80),
            "sequence": _head("conll2000.train.svm", 120), "constraints": cons}


COMBOS = [(t, m) for m in ("n-slack", "1-slack", "online-dual") for t in
          ("binary", "multiclass", "regression", "ranking", "sequence", "constraints")] + \
         [(t, "budgeted") for t in ("binary", "multiclass", "regression")]

BAD_LINE = 5   # the line a line mutation breaks (1-based)


def _features_at(line):
    """(prefix tokens, feature tokens) of a line."""
    toks = line.split()
    i = 1
    while i < len(toks) and (toks[i].startswith(b"qid:") or toks[i].startswith(b"cost:")):
        i += 1
    return toks[:i], toks[i:]


def _set_feature(at, index=None, value=None):
    """A line mutation: the feature at position `at` (0 or -1) gets `index` and/or `value`."""
    def f(line):
        head, feats = _features_at(line)
        idx, val = feats[at].split(b":", 1)
        feats[at] = (idx if index is None else index) + b":" + (val if value is None else value)
        return b" ".join(head + feats)
    return f


def _swap(line):
    head, feats = _features_at(line)
    return b" ".join(head + [feats[1], feats[0]] + feats[2:])


def _dup(line):
    head, feats = _features_at(line)
    return b" ".join(head + [feats[0], feats[0]] + feats[1:])


def _no_target(line):
    return b" ".join(line.split()[1:])


def _set_target(t):
    return lambda line: b" ".join([t] + line.split()[1:])


def _set_head(tok):
    """Put a qid:/cost: token right after the target (replacing one of its kind)."""
    kind = tok.split(b":")[0] + b":"
    def f(line):
        toks = [t for t in line.split() if not t.startswith(kind)]
        return b" ".join(toks[:1] + [tok] + toks[1:])
    return f


# mutations of line BAD_LINE that make it malformed: (name, function)
BAD_LINES = [
    ("value nan", _set_feature(0, value=b"nan")), ("value inf", _set_feature(0, value=b"inf")),
    ("value 1e999", _set_feature(0, value=b"1e999")), ("value 0x1", _set_feature(0, value=b"0x1")),
    ("value empty", _set_feature(0, value=b"")), ("value -", _set_feature(0, value=b"-")),
    ("index 0", _set_feature(0, index=b"0")), ("index -1", _set_feature(0, index=b"-1")),
    ("index 2^64", _set_feature(0, index=b"18446744073709551616")),
    ("index 2^63", _set_feature(0, index=b"9223372036854775808")),
    ("index huge", _set_feature(0, index=b"1" * 40)), ("index 1.5", _set_feature(0, index=b"1.5")),
    ("unsorted", _swap), ("duplicate", _dup), ("missing target", _no_target),
    ("target nan", _set_target(b"nan")), ("target inf", _set_target(b"-inf")),
    ("target junk", _set_target(b"abc")),
    ("qid -1", _set_head(b"qid:-1")), ("qid abc", _set_head(b"qid:abc")),
    ("qid 2^63", _set_head(b"qid:9223372036854775808")), ("qid empty", _set_head(b"qid:")),
    ("cost -1", _set_head(b"cost:-1")), ("cost nan", _set_head(b"cost:nan")),
    ("cost 0", _set_head(b"cost:0")), ("cost inf", _set_head(b"cost:inf")),
    ("nul byte", lambda line: line[:5] + b"\x00" + line[5:]),
    ("non-utf8 token", lambda line: line + b" \xff\xfe:1"),
    ("junk token", lambda line: line + b" hello"),
]


def mutate_line(content, fn):
    lines = content.split(b"\n")
    lines[BAD_LINE - 1] = fn(lines[BAD_LINE - 1])
    return b"\n".join(lines)


def _target_all(content, t):
    return b"\n".join(b" ".join([t] + l.split()[1:]) if l.strip() else l for l in content.split(b"\n"))


# whole-file variants that are valid or degenerate: the run may succeed or refuse (exit 2), never crash
def odd_files(task, content):
    lines = [l for l in content.split(b"\n") if l.strip()]
    first = lines[0]
    out = {
        "comments and blank lines": b"# header\n\n" + b"\n".join(l + b"  # note \xff" for l in lines) + b"\n",
        "crlf": b"\r\n".join(lines) + b"\r\n",
        "no final newline": b"\n".join(lines),
        "one example": first + b"\n",
        "only comments": b"# nothing\n# here\n",
        "empty file": b"",
        "all-zero rows": b"\n".join(l.split()[0] + b" " + b" ".join(t for t in l.split()[1:]
                                                                     if t.startswith((b"qid:", b"cost:")))
                                    for l in lines) + b"\n",
        "no features at all": b"\n".join(l.split()[0] for l in lines) + b"\n",
        "huge values 1e300": b"\n".join(_set_feature(0, value=b"1e300")(l) for l in lines) + b"\n",
        "huge values 1e200 all": b"\n".join(b" ".join(t.split(b":")[0] + b":1e200" if b":" in t and not
                                                     t.startswith((b"qid", b"cost")) else t
                                                     for t in l.split()) for l in lines) + b"\n",
        # every feature at 1e308: a row's scores overflow to inf (and to nan where a weight's
        # sign alternates): decision values, Viterbi, the metrics and the primal must take them
        "overflowing values 1e308 all": b"\n".join(b" ".join(t.split(b":")[0] + b":1e308" if b":" in t and not
                                                            t.startswith((b"qid", b"cost")) else t
                                                            for t in l.split()) for l in lines) + b"\n",
        "overflowing values +-1e308": b"\n".join(b" ".join(t.split(b":")[0] + (b":1e308" if k % 2 else b":-1e308")
                                                          if b":" in t and not t.startswith((b"qid", b"cost")) else t
                                                          for k, t in enumerate(l.split())) for l in lines) + b"\n",
        "tiny values 1e-320": b"\n".join(_set_feature(0, value=b"1e-320")(l) for l in lines) + b"\n",
        "huge target 1e300": _target_all(b"\n".join(lines), b"1e300") if task in ("regression", "constraints")
        else b"\n".join([b"1e300 " + b" ".join(lines[0].split()[1:])] + lines[1:]),
        "negative targets": _target_all(b"\n".join(lines), b"-3"),
        "cost tiny": b"\n".join(_set_head(b"cost:1e-300")(l) for l in lines) + b"\n",
        "cost huge": b"\n".join(_set_head(b"cost:1e300")(l) for l in lines) + b"\n",
    }
    # the last feature of line 4 at an index past what a model can hold, or barely inside
    for name, index in (("2^62", b"4611686018427387904"), ("1e12", b"1000000000000"),
                        ("2^31", b"2147483648"), ("3e8", b"300000000")):
        out[f"big index {name}"] = b"\n".join(lines[:3] + [_set_feature(-1, index=index)(lines[3])]
                                              + lines[4:]) + b"\n"
    if task in ("binary", "multiclass", "sequence", "ranking"):
        out["one class"] = _target_all(b"\n".join(lines), b"1") + b"\n"
    if task in ("binary", "multiclass"):
        out["non-integer labels"] = _target_all(b"\n".join(lines[:30]), b"0.5") + b"\n" + \
            _target_all(b"\n".join(lines[30:]), b"2.5") + b"\n"
    if task in ("ranking", "sequence", "constraints"):
        out["no qid"] = b"\n".join(b" ".join(t for t in l.split() if not t.startswith(b"qid:")) for l in lines) + b"\n"
        out["each line its own qid"] = b"\n".join(_set_head(b"qid:%d" % i)(l) for i, l in enumerate(lines)) + b"\n"
        out["qid 0"] = b"\n".join(_set_head(b"qid:0")(l) for l in lines) + b"\n"
    if task == "sequence":
        out["sentences of length 1"] = b"\n".join(_set_head(b"qid:%d" % i)(l) for i, l in enumerate(lines)) + b"\n"
        out["tag 0"] = _target_all(b"\n".join(lines), b"0") + b"\n"
        out["tag -1"] = b"\n".join([_set_target(b"-1")(lines[0])] + lines[1:]) + b"\n"
        out["tag 1.5"] = b"\n".join([_set_target(b"1.5")(lines[0])] + lines[1:]) + b"\n"
        out["tag 1e9"] = b"\n".join([_set_target(b"1000000000")(lines[0])] + lines[1:]) + b"\n"
        out["sentence split"] = b"\n".join(lines[:2] + [_set_head(b"qid:999")(lines[2])] + lines[3:]) + b"\n"
    if task == "multiclass":
        out["label 1e18"] = b"\n".join([_set_target(b"1e18")(lines[0])] + lines[1:]) + b"\n"
        out["label -0"] = b"\n".join([_set_target(b"-0")(lines[0]), _set_target(b"0")(lines[1])] + lines[2:]) + b"\n"
    return out


def compressed(content):
    xz = lzma.compress(content)
    gz = gzip.compress(content)
    bz = bz2.compress(content)
    return {"xz": xz, "gz": gz, "bz2": bz, "truncated xz": xz[: len(xz) // 2],
            "truncated gz": gz[: len(gz) // 2], "truncated bz2": bz[: len(bz) // 2],
            "xz magic only": xz[:6], "gz garbage": b"\x1f\x8b" + os.urandom(200)}


class Case:
    def __init__(self, name, prog, args, files, expect, line=None, stdin=None, outputs=()):
        self.name, self.prog, self.args, self.files = name, prog, args, files
        self.expect, self.line, self.stdin, self.outputs = expect, line, stdin, outputs

    def run(self, models):
        d = tempfile.mkdtemp(prefix="fuzz-")
        try:
            for name, content in self.files.items():
                if content is None:
                    os.mkdir(os.path.join(d, name))
                else:
                    with open(os.path.join(d, name), "wb") as f:
                        f.write(content)
            for name, src in models.items():
                if any(name == a for a in self.args):
                    shutil.copy(src, os.path.join(d, name))
            os.mkdir(os.path.join(d, "out"))
            before = set(os.listdir(d))
            try:
                rc, out, err = run(self.prog, self.args, d, self.stdin)
            except subprocess.TimeoutExpired:
                return ["timeout"], None, ""
            problems = []
            if rc < 0:
                problems.append(f"killed by signal {-rc}")
            if "Traceback" in err:
                problems.append("traceback")
            if self.expect is not None and rc not in self.expect:
                problems.append(f"exit {rc}, expected {self.expect}")
            if rc == 2 and self.line is not None and f":{self.line}:" not in err:
                problems.append(f"message without line {self.line}")
            left = sorted(set(os.listdir(d)) - before) + ["out/" + x for x in os.listdir(os.path.join(d, "out"))]
            if rc not in (0, 1):
                if left:
                    problems.append(f"left behind {left}")
            elif [x for x in left if ".tmp-" in x]:
                problems.append(f"temporary left {left}")
            return problems, rc, err
        finally:
            shutil.rmtree(d, ignore_errors=True)


def train_args(task, mode, data, model="out/m"):
    extra = {"budgeted": ["--budget", "20", "--epochs", "2"], "online-dual": ["--chunk", "17"],
             "1-slack": []}.get(mode, [])
    return ["train", "-q", "-t", task, "-m", mode, *extra, data, model]


def build_models(workdir, bases):
    """One good model (and 1-slack/n-slack states) per (task, mode), trained on the base files."""
    models = {}
    for task, content in bases.items():
        with open(os.path.join(workdir, f"{task}.svm"), "wb") as f:
            f.write(content)
    for task, mode in COMBOS:
        path = os.path.join(workdir, f"{task}.{mode}.model")
        args = train_args(task, mode, f"{task}.svm", path)
        if mode in ("n-slack", "1-slack"):
            args[1:1] = ["--save-state", path + ".npz"]
        rc, _, err = run("svmtrain", args, workdir)
        if rc != 0:
            print(f"cannot train the base model {task} {mode}: {err}", file=sys.stderr)
            continue
        models[f"{task}.{mode}.model"] = path
        if os.path.exists(path + ".npz"):
            models[f"{task}.{mode}.model.npz"] = path + ".npz"
    return models


def cases(bases, models):
    out = []
    for task, mode in COMBOS:
        base = bases[task]
        model = f"{task}.{mode}.model"
        for name, fn in BAD_LINES:
            if task in ("ranking", "sequence", "constraints") and name.startswith("qid") is False and False:
                pass
            bad = mutate_line(base, fn)
            tag = f"{task}/{mode}/{name}"
            out.append(Case(f"train {tag}", "svmtrain", train_args(task, mode, "d.svm"), {"d.svm": bad}, {2}, BAD_LINE))
            if model in models and mode in ("n-slack", "budgeted"):   # predict/verify read data alike in every mode
                out.append(Case(f"predict {tag}", "svmtrain", ["predict", "d.svm", model, "out/p"], {"d.svm": bad}, {2}, BAD_LINE))
                out.append(Case(f"verify {tag}", "svmtrain", ["verify-bound", "-q", model, "d.svm"], {"d.svm": bad}, {2}, BAD_LINE))
        for name, content in odd_files(task, base).items():
            tag = f"{task}/{mode}/{name}"
            out.append(Case(f"train {tag}", "svmtrain", train_args(task, mode, "d.svm"), {"d.svm": content}, {0, 2}))
            if model in models:
                out.append(Case(f"predict {tag}", "svmtrain", ["predict", "d.svm", model, "out/p"], {"d.svm": content}, {0, 2}))
                out.append(Case(f"verify {tag}", "svmtrain", ["verify-bound", "-q", model, "d.svm"], {"d.svm": content}, {0, 1, 2}))
        for name, content in compressed(base).items():
            tag = f"{task}/{mode}/{name}"
            ok = {0} if name in ("xz", "gz", "bz2") else {2}
            out.append(Case(f"train {tag}", "svmtrain", train_args(task, mode, "d.svm"), {"d.svm": content}, ok))
            if model in models:
                out.append(Case(f"predict {tag}", "svmtrain", ["predict", "d.svm", model, "out/p"], {"d.svm": content}, ok))
        for name, files, data in (("directory", {"d.svm": None}, "d.svm"), ("missing file", {}, "nothere.svm"),
                                  ("/dev/null", {}, "/dev/null")):
            tag = f"{task}/{mode}/{name}"
            exp = {0, 2} if name == "/dev/null" else {2}
            out.append(Case(f"train {tag}", "svmtrain", train_args(task, mode, data), files, exp))
            if model in models:
                out.append(Case(f"predict {tag}", "svmtrain", ["predict", data, model, "out/p"], files, exp))
                out.append(Case(f"verify {tag}", "svmtrain", ["verify-bound", "-q", model, data], files, {0, 1, 2}
                                if name == "/dev/null" else {2}))
        # standard input
        out.append(Case(f"train {task}/{mode}/stdin garbage", "svmtrain", train_args(task, mode, "-"), {}, {2},
                        stdin=b"1 1:1\n\x1f\x8b garbage\n"))
        # model files: truncated, edited, of another task or mode
        if model in models:
            text = open(models[model], "rb").read()
            for name, content in model_mutations(text).items():
                tag = f"{task}/{mode}/model {name}"
                out.append(Case(f"predict {tag}", "svmtrain", ["predict", "d.svm", "m.model", "out/p"],
                                {"d.svm": base, "m.model": content}, {0, 2}))
                out.append(Case(f"verify {tag}", "svmtrain", ["verify-bound", "-q", "m.model", "d.svm"],
                                {"d.svm": base, "m.model": content}, {0, 1, 2}))
            for other_task, other_mode in COMBOS:
                other = f"{other_task}.{other_mode}.model"
                if other in models and other != model:
                    tag = f"{task}/{mode} data, {other_task}/{other_mode} model"
                    out.append(Case(f"predict {tag}", "svmtrain", ["predict", "d.svm", other, "out/p"],
                                    {"d.svm": base}, {0, 2}))
                    out.append(Case(f"verify {tag}", "svmtrain", ["verify-bound", "-q", other, "d.svm"],
                                    {"d.svm": base}, {0, 1, 2}))
        # warm starts
        if mode in ("n-slack", "1-slack"):
            for name, content in (("text file", b"hello\n"), ("garbage npz", b"PK\x03\x04" + os.urandom(100)),
                                  ("empty", b""), ("model file", open(models[model], "rb").read() if model in models else b"x")):
                out.append(Case(f"train {task}/{mode}/warm-start {name}", "svmtrain",
                                ["train", "-q", "-t", task, "-m", mode, "--warm-start", "s.npz", "d.svm", "out/m"],
                                {"d.svm": base, "s.npz": content}, {2}))
            state = f"{model}.npz"
            if state in models:
                data = open(models[state], "rb").read()
                for name, content in (("truncated state", data[: len(data) // 2]),
                                      ("bit-flipped state", data[:len(data) // 3] + bytes([data[len(data) // 3] ^ 0xff])
                                       + data[len(data) // 3 + 1:])):
                    out.append(Case(f"train {task}/{mode}/warm-start {name}", "svmtrain",
                                    ["train", "-q", "-t", task, "-m", mode, "--warm-start", "s.npz", "d.svm", "out/m"],
                                    {"d.svm": base, "s.npz": content}, {0, 2}))
                for other_task, other_mode in COMBOS:
                    other = f"{other_task}.{other_mode}.model.npz"
                    if other in models and other != state:
                        out.append(Case(f"train {task}/{mode} warm-start from {other}", "svmtrain",
                                        ["train", "-q", "-t", task, "-m", mode, "--warm-start", other, "d.svm", "out/m"],
                                        {"d.svm": base}, {0, 2}))
    # svmtools check on every bad line of every task
    for task, base in bases.items():
        for name, fn in BAD_LINES:
            out.append(Case(f"check {task}/{name}", "svmtools", ["check", "d.svm"], {"d.svm": mutate_line(base, fn)},
                            {2}, BAD_LINE))
        for name, content in {**odd_files(task, base), **compressed(base)}.items():
            out.append(Case(f"check {task}/{name}", "svmtools", ["check", "d.svm"], {"d.svm": content},
                            {0} if not name.startswith(("truncated", "xz magic", "gz garbage")) else {2}))
    out += option_cases(bases)
    return out


def model_mutations(text):
    lines = text.split(b"\n")
    header_end = next((i for i, l in enumerate(lines) if l.strip() in (b"w", b"weights", b"SV", b"sv")), len(lines) // 2)
    out = {"empty": b"", "truncated half": text[: len(text) // 2], "header only": b"\n".join(lines[:header_end]),
           "binary junk": os.urandom(300), "non-utf8": text.replace(b"\n", b"\xff\n", 1),
           "nul": text[:10] + b"\x00" + text[10:]}
    for i, l in enumerate(lines[:header_end]):
        parts = l.split(None, 1)
        if len(parts) != 2:
            continue
        key = parts[0]
        for v in (b"nan", b"-1", b"0", b"1e999", b"abc", b"99999999999999999999", b""):
            m = list(lines)
            m[i] = key + b" " + v
            out[f"{key.decode(errors='replace')}={v.decode()}"] = b"\n".join(m)
    # weights edited
    for v in (b"nan", b"inf", b"abc"):
        m = list(lines)
        j = min(header_end + 1, len(m) - 2)
        m[j] = v
        out[f"weight line {v.decode()}"] = b"\n".join(m)
    return out


def option_cases(bases):
    b = bases["binary"]
    mc = bases["multiclass"]
    out = []
    def T(name, args, files=None, expect={2}, data="d.svm", task_data=b):
        out.append(Case(f"options {name}", "svmtrain", ["train", "-q", *args, data, "out/m"],
                        {"d.svm": task_data, **(files or {})}, expect))
    for opt in ("-c", "-e", "-B", "-p", "--bias-reg", "--admit-margin", "--merge-precision", "-g", "--in-out"):
        for v in ("0", "-1", "nan", "inf", "-inf", "1e999", "abc", ""):
            extra = {"-p": ["-t", "regression"], "--bias-reg": ["-B", "1"], "--admit-margin": ["-m", "online-dual"],
                     "--merge-precision": ["-m", "budgeted", "--merge-search", "golden"],
                     "-g": ["-m", "budgeted"], "--in-out": ["-m", "1-slack"]}.get(opt, [])
            T(f"{opt} {v!r}", extra + [opt, v], task_data=bases["regression"] if opt == "-p" else b,
              expect={0, 2})
    for opt, mode in (("--budget", "budgeted"), ("--epochs", "budgeted"), ("--threads", "1-slack"),
                      ("--passes", "online-dual"), ("--chunk", "online-dual"), ("--max-epochs", "n-slack"),
                      ("--shuffle-window", "online-dual"), ("--window-looks", "online-dual"),
                      ("--keep-inactive", "online-dual"), ("--cache-limit", "online-dual"),
                      ("-f", "1-slack"), ("--qp-every", "1-slack"), ("--drop-inactive", "1-slack"),
                      ("--checkpoint-every", "online-dual"), ("--seed", "n-slack")):
        for v in ("0", "-1", "nan", "1e999", "abc", "99999999999999999999999", "1", "2", "0.5"):
            T(f"{opt} {v}", ["-m", mode, opt, v], expect={0, 2})
    for spec in ("5-1", "0", "a", "", "1-", "-3", "1,,2", "999999999999999999999", "1-9999999999", "all,bias",
                 "bias", "nan"):
        T(f"--nonneg {spec!r}", ["--nonneg", spec], expect={0, 2})
        T(f"--nonneg {spec!r} multiclass", ["-t", "multiclass", "--nonneg", spec], expect={0, 2}, task_data=mc)
    for w in (["-w", "7", "2"], ["-w", "1", "0"], ["-w", "1", "-1"], ["-w", "1", "nan"], ["-w", "x", "1"],
              ["-w", "1", "inf"], ["-w", "1", "2", "-w", "1", "3"]):
        T(f"{' '.join(w)}", w, expect={0, 2})
        T(f"{' '.join(w)} online", ["-m", "online-dual"] + w, expect={0, 2})
        T(f"{' '.join(w)} 1-slack", ["-m", "1-slack"] + w, expect={0, 2})
    for name, content in (("bad line", b"1:2\nabc\n"), ("r=0", b"1:0\n"), ("r=-1", b"1:-1\n"), ("nan", b"1:nan\n"),
                          ("index 0", b"0:1\n"), ("dup", b"1:2\n1:3\n"), ("empty", b""), ("comment", b"# x\n"),
                          ("huge index", b"99999999999999999999999:2\n"), ("big index", b"1000000000000:2\n"),
                          ("non-utf8", b"\xff:1\n"), ("nul", b"1:\x002\n"), ("inf", b"1:inf\n"), ("1e-320", b"1:1e-320\n"),
                          ("1e300", b"1:1e300\n")):
        T(f"--reg-scale {name}", ["--reg-scale", "r.txt"], {"r.txt": content}, expect={0, 2})
        T(f"--reg-scale {name} online", ["-m", "online-dual", "--reg-scale", "r.txt"], {"r.txt": content}, expect={0, 2})
    for name, content in (("bad", b"1\nabc\n"), ("zero", b"0\n" * 60), ("neg", b"-1\n" * 60), ("nan", b"nan\n" * 60),
                          ("short", b"1\n"), ("long", b"1\n" * 100), ("empty", b""), ("inf", b"inf\n" * 60),
                          ("1e-320", b"1e-320\n" * 60), ("1e300", b"1e300\n" * 60), ("nul", b"1\x00\n" * 60),
                          ("crlf", b"1\r\n" * 60)):
        T(f"--weights {name}", ["--weights", "w.txt"], {"w.txt": content}, expect={0, 2})
        T(f"--weights {name} online", ["-m", "online-dual", "--weights", "w.txt"], {"w.txt": content}, expect={0, 2})
        T(f"--weights {name} 1-slack", ["-m", "1-slack", "--weights", "w.txt"], {"w.txt": content}, expect={0, 2})
    for name, content in (("text", b"hello\n"), ("empty", b""), ("nul", b"\x00" * 100)):
        T(f"--prior {name}", ["--prior", "p.model"], {"p.model": content}, expect={2})
    T("--prior directory", ["--prior", "pdir"], {"pdir": None}, expect={2})
    T("--prior missing", ["--prior", "nothere"], expect={2})
    T("--labels bad", ["-m", "online-dual", "--labels", "1,x"], expect={2})
    T("--labels one", ["-m", "online-dual", "--labels", "1"], expect={2})
    T("--labels wrong", ["-m", "online-dual", "--labels", "5,7"], expect={2})
    T("--labels nan", ["-m", "online-dual", "--labels", "nan,1"], expect={2})
    T("--labels mc missing", ["-m", "online-dual", "-t", "multiclass", "--labels", "1,2"], expect={2}, task_data=mc)
    T("--validation missing", ["-m", "budgeted", "--validation", "nothere"], expect={2})
    T("--validation bad", ["-m", "budgeted", "--validation", "v.svm"], {"v.svm": b"1 1:1\nx\n"}, expect={2})
    T("--validation other labels", ["-m", "budgeted", "--validation", "v.svm"], {"v.svm": b"5 1:1\n7 2:1\n"}, expect={2})
    # outputs in places that cannot be written
    for name, model in (("missing dir", "nodir/m"), ("dir as model", "out"),
                        ("empty name", "")):   # never a device path: as root that replaced /dev/full
        for mode in ("n-slack", "1-slack", "online-dual", "budgeted"):
            out.append(Case(f"options {mode} model in {name}", "svmtrain", ["train", "-q", "-m", mode, "d.svm", model],
                            {"d.svm": b}, {2}))
    out.append(Case("options trace in missing dir", "svmtrain", ["train", "-q", "--trace", "nodir/t", "d.svm", "out/m"], {"d.svm": b}, {2}))
    out.append(Case("options trace in missing dir 1-slack", "svmtrain", ["train", "-q", "-m", "1-slack", "--trace", "nodir/t", "d.svm", "out/m"], {"d.svm": b}, {2}))
    out.append(Case("options trace in missing dir online", "svmtrain", ["train", "-q", "-m", "online-dual", "--trace", "nodir/t", "d.svm", "out/m"], {"d.svm": b}, {2}))
    out.append(Case("options trace in missing dir budgeted", "svmtrain", ["train", "-q", "-m", "budgeted", "--trace", "nodir/t", "d.svm", "out/m"], {"d.svm": b}, {2}))
    out.append(Case("options save-state in missing dir", "svmtrain", ["train", "-q", "--save-state", "nodir/s", "d.svm", "out/m"], {"d.svm": b}, {2}))
    out.append(Case("options save-state in missing dir 1-slack", "svmtrain", ["train", "-q", "-m", "1-slack", "--save-state", "nodir/s", "d.svm", "out/m"], {"d.svm": b}, {2}))
    out.append(Case("options predict output missing dir", "svmtrain", ["predict", "d.svm", "binary.n-slack.model", "nodir/p"], {"d.svm": b}, {2}))
    out.append(Case("options predict --tol nan", "svmtrain", ["verify-bound", "--tol", "nan", "binary.n-slack.model", "d.svm"], {"d.svm": b}, {2}))
    out.append(Case("options predict model missing", "svmtrain", ["predict", "d.svm", "nothere", "out/p"], {"d.svm": b}, {2}))
    out.append(Case("options predict model dir", "svmtrain", ["predict", "d.svm", "mdir", "out/p"], {"d.svm": b, "mdir": None}, {2}))
    out.append(Case("options verify model /dev/null", "svmtrain", ["verify-bound", "/dev/null", "d.svm"], {"d.svm": b}, {2}))
    # svmtools conll
    for name, content in (("empty", b""), ("one column", b"word\n\n"), ("nul", b"a B\x00 C\n\n"), ("non-utf8", b"\xff NN B-NP\n\n"),
                          ("ragged", b"a NN B-NP\nb NN\n\n"), ("only blank", b"\n\n\n")):
        out.append(Case(f"conll2svm {name}", "svmtools", ["conll2svm", "--new-dictionary", "out/d", "c.txt", "out/s"],
                        {"c.txt": content}, {0, 2}))
        out.append(Case(f"conll2svm dict {name}", "svmtools", ["conll2svm", "--dictionary", "dict", "c.txt", "out/s"],
                        {"c.txt": b"a NN B-NP\n\n", "dict": content}, {2}))
        out.append(Case(f"svm2conll {name}", "svmtools", ["svm2conll", "--dictionary", "dict", "c.txt", "p.txt", "out/o"],
                        {"c.txt": b"a NN B-NP\nb NN I-NP\n\n", "dict": open(os.path.join(DATA, "conll2000.dict"), "rb").read(),
                         "p.txt": content}, {0, 2}))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-k", default="", help="run the cases whose name has one of these comma-separated substrings")
    ap.add_argument("--skip", default="", help="leave out the cases whose name has one of these")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="fuzz-models-")
    bases = base_files()
    models = build_models(work, bases)
    for name in ("binary.n-slack.model",):
        assert name in models
    wanted = args.k.split(",")      # any of these substrings
    skip = [k for k in args.skip.split(",") if k]
    todo = [c for c in cases(bases, models) if any(k in c.name for k in wanted)
            and not any(k in c.name for k in skip)]
    print(f"{len(todo)} cases", file=sys.stderr)
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(args.j) as ex:
        for case, (problems, rc, err) in zip(todo, ex.map(lambda c: c.run(models), todo)):
            if problems:
                bad += 1
                last = err.strip().splitlines()[-1] if err.strip() else ""
                print(f"FAIL {case.name}: {'; '.join(problems)} | {last[:300]}", flush=True)
    print(f"{bad} of {len(todo)} cases failed", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
