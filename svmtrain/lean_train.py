"""`svmtrain train` of a binary, multiclass or regression model without numpy or click: what a
parameter search pays.

A process that imports numpy cannot start in less time than that import takes (about 0.08 s of
the 0.12 s LIBLINEAR's `train` needs for a9a). So the console script (svmtrain.__main__) first
offers a train command line to `run` here. It takes it when the command is of the plain form

    svmtrain train [-t binary|multiclass|regression] [-m auto|n-slack] [-c C] [-e EPSILON]
                   [-B BIAS] [-p P] [--seed N] [--max-epochs N] [--shrinking|--no-shrinking]
                   [--zero-based] [--format svmtrain|liblinear] [-q|--quiet] TRAIN_FILE MODEL_FILE

(an option's value as the next word, or after `=` for the long ones; -p for regression only),
TRAIN_FILE a regular file, plain or gzip/bzip2/xz-compressed, of at most LEAN_BYTES of text, of
at least one row, with two labels (binary) or two to MOST_CLASSES (multiclass), no `qid:` or
`cost:` and rows whose squared norms are finite, and `--mode auto` choosing n-slack for it (as
svmtrain.auto does for such a file). Then the run is the full path's, step for step, on the same
code where it matters: the reader's C parser (`Parser.take_buffers`, the column indices stored
as int32s as they are parsed, which the kernels read as they are: a copy beside the int64s was a
tenth to a fifth of the process's peak, a9a 23.7 -> 19.8 MB, ijcnn1 30 -> 23.9 MB, reuters_lasvm
18.7 -> 16.0 MB); the kernel the task's listing goes to, built from those buffers: the engine
over one constraint per row (`DualCD.from_rows`, the layout DualCD gives Binary.all_constraints'
cache), the Crammer-Singer kernel over every (i, j) (`CrammerSingerCD.from_rows`, the one
Multiclass.all_constraints' listing builds) or LIBLINEAR -s 13's one variable an example
(`SVRDualCD.from_rows`, Regression.all_constraints' TubeListing); the engine's stopping policy
(svmtrain.stopping.run_epochs); and the certificate's sums (svmtrain._linear.binary_hinge_sum,
multiclass_hinge_sum and tube_loss_sum, the losses the tasks' violations and
objective.PrimalAccumulator add up, and svmtrain.objective's ||w||^2 and dual). The model file,
its certificate and the summary line are the full path's, byte for byte (tests/test_lean_train.py
compares the two on the shared data and on every option taken here); so is a binary model in
LIBLINEAR's format (`--format liblinear`, model.format_liblinear's text).

Anything else, and anything unexpected on the way (a data line the full path would refuse, a
model file that cannot be written), is not judged here: `run` returns None, having written
nothing, and the command runs through click and svmtrain.api, which train it or say what is
wrong. What the lean path does not show: the full path's progress bars, which a run this short
would not draw (tqdm waits 0.1 s before its first refresh). A SIGINT or SIGTERM stops the run
after its current epoch, as on the full path; the model is then written and, since the state the
full path leaves beside it (MODEL_FILE.state.npz) needs numpy, written by the full path's code.
"""

import math
import os
import struct
import sys
import time

from svmtrain.lean_predict import _NotHere, label_text

#: the most text (after decompression) trained here: a file this size trains in about a second,
#: where start-up no longer dominates. Below svmtrain.auto.LARGE_BYTES: auto's choice is n-slack
LEAN_BYTES = 16 << 20

#: flag -> (field, value)
_FLAGS = {"-q": ("quiet", True), "--quiet": ("quiet", True), "--shrinking": ("shrinking", True),
          "--no-shrinking": ("shrinking", False), "--zero-based": ("zero_based", True)}


def _positive(text):
    x = _number(text)
    return x if x is not None and x > 0 else None


def _epsilon(text):
    x = _number(text)
    return x if x is not None and 0 < x < 1 else None


def _nonnegative(text):
    x = _number(text)
    return x if x is not None and x >= 0 else None


def _bias(text):
    x = _number(text)
    return None if x is None else (x if x >= 0 else "none")


def _number(text):
    """click's float (Python's float), finite; else None."""
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _integer(lo, hi):
    def convert(text):
        try:
            n = int(text)              # click's int
        except ValueError:
            return None
        return n if lo <= n <= hi else None
    return convert


def _word(*choices):
    def convert(text):
        return text if text in choices else None
    return convert


#: option -> (field, converter); a converter returns None for a value the full path must judge
_VALUES = {"-t": ("task", _word("binary", "multiclass", "regression")),
           "--task": ("task", _word("binary", "multiclass", "regression")),
           "-p": ("p", _nonnegative),
           "-m": ("mode", _word("auto", "n-slack")), "--mode": ("mode", _word("auto", "n-slack")),
           "-c": ("C", _positive), "-e": ("epsilon", _epsilon), "--epsilon": ("epsilon", _epsilon),
           "-B": ("bias", _bias), "--bias": ("bias", _bias),
           "--seed": ("seed", _integer(0, 2**63 - 1)),
           "--format": ("model_format", _word("svmtrain", "liblinear")),
           "--max-epochs": ("max_epochs", _integer(1, sys.maxsize))}


def _command(args):
    """(train file, model file, options) of a plain train command line, else None."""
    o = {"task": "binary", "mode": "auto", "C": 1.0, "epsilon": 1e-3, "bias": "none", "seed": 1,
         "max_epochs": 1000, "shrinking": True, "zero_based": False, "quiet": False,
         "model_format": "svmtrain", "p": None}
    positional = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in _FLAGS:
            name, value = _FLAGS[a]
            o[name] = value
            continue
        if not a.startswith("-") or a == "-":
            positional.append(a)
            continue
        flag, eq, value = a.partition("=")
        if flag not in _VALUES or (eq and not flag.startswith("--")):
            return None        # --help, --trace, -c1, --, ...: click's
        if not eq:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        name, convert = _VALUES[flag]
        value = convert(value)
        if value is None:
            return None        # the full path says what is wrong with it
        o[name] = value
    if len(positional) != 2 or "-" in positional:
        return None
    if o["p"] is not None and o["task"] != "regression":
        return None            # (the full path: -p is regression's)
    if o["p"] is None:
        o["p"] = 0.1           # (svmtrain.options' default)
    # the environment can ask for Dask (train's --scheduler reads it)
    if os.environ.get("DASK_SCHEDULER_ADDRESS"):
        return None
    return positional[0], positional[1], o


def run(args):
    """Train as `svmtrain train ARGS` would; the exit status, or None when the full path must
    run the command (nothing has been written then)."""
    parsed = _command(args)
    if parsed is None:
        return None
    path, model_path, o = parsed
    try:
        kind = None if os.path.isdir(model_path) else _kind_for_auto(path)
        if kind is None:
            return None
        return _train(path, kind, model_path, o)
    except KeyboardInterrupt:
        print("svmtrain: interrupted; no model was written", file=sys.stderr)
        return 130
    except Exception:
        # _NotHere, or what the full path names better (a file that cannot be read or written,
        # memory): nothing was written, and the full path says what is wrong or does it its way
        return None


def _kind_for_auto(path):
    """The file's kind (lean_predict._input_kind: plain, gzip, bz2, xz) when `--mode auto`
    chooses n-slack for its text (its size estimated for a compressed file, as svmtrain.auto
    estimates it) and the text is at most LEAN_BYTES, else None."""
    from svmtrain import auto
    from svmtrain.lean_predict import _input_kind
    kind = _input_kind(path, LEAN_BYTES)
    if kind is None:
        return None
    size = os.path.getsize(path) * auto.COMPRESSION.get(kind, 1)
    memory = auto.available_memory()
    if memory is not None and size * auto.MEMORY_PER_BYTE > memory / 2:
        return None                    # online-dual
    if size > auto.LARGE_BYTES:
        return None                    # 1-slack
    return kind


def _read(path, kind, zero_based):
    """The rows of the file (of `kind`, _kind_for_auto's) as the reader's buffers
    (Parser.take_buffers), the column indices as int32s (the kernels' own) when they fit."""
    from svmtrain import _reader
    from svmtrain.lean_predict import _decompressor, parsed
    parser = _reader.Parser(zero_based, 1, int32_columns=True)
    with open(path, "rb") as raw:
        f = raw if kind == "plain" else _decompressor(kind, raw)
        for _ in parsed(f, kind == "plain", parser, LEAN_BYTES):
            pass
    *arrays, n_features = parser.take_buffers()
    return (*map(memoryview, arrays), n_features)


#: svmtrain.tasks.multiclass.LIST_ALL_UP_TO: past this many constraints n (K - 1) the full path
#: grows them by cutting planes (tests/test_lean_train.py checks that the two agree)
LIST_ALL_UP_TO = 12_000_000
#: the most classes taken here
MOST_CLASSES = 256


def _train(path, kind, model_path, o):
    from svmtrain import _linear, interrupt, objective
    from svmtrain.stopping import run_epochs

    started = time.perf_counter()
    indptr, indices, values, target, qid, cost, _line, n_features = _read(path, kind, o["zero_based"])
    n = len(target)
    if n == 0:
        raise _NotHere                 # (the full path's model of no examples)
    multiclass = o["task"] == "multiclass"
    regression = o["task"] == "regression"
    labels = _labels(target, o["task"])
    if _linear.extremes(qid)[1] >= 0 or _linear.extremes(cost) != (1.0, 1.0):
        raise _NotHere                 # (no qids or costs here)
    del qid, cost                      # (all -1 and all 1: _save_state writes them so)
    K = len(labels) if multiclass else 1
    n_cols = max(n_features, 1)
    # svmtrain.data.check_features (MAX_FEATURES, and K x (features + bias) int32 offsets): the
    # full path says which row is at fault
    if n_cols > (2**31 - 2 if K == 1 else min(2**31 - 2, (2**31 - 1) // K - 1)):
        raise _NotHere
    if multiclass and n * (K - 1) > LIST_ALL_UP_TO:
        raise _NotHere
    liblinear = o["model_format"] == "liblinear"
    if liblinear and (multiclass or regression or o["zero_based"] or n_cols > 2**31 - 1
                      or not all(x.is_integer() and abs(x) <= 2**31 - 1 for x in labels)):
        raise _NotHere                 # (model.format_liblinear says why it cannot)
    bias = o["bias"]
    has_bias = bias != "none"
    b = bias if has_bias else 0.0
    C = o["C"]
    p = o["p"]
    if multiclass:
        from svmtrain._multiclass import CrammerSingerCD
        y = _linear.class_indices(target, memoryview(struct.pack(f"{K}d", *labels)).cast("d"))
        engine = CrammerSingerCD.from_rows(indptr, indices, values, y, C, n_cols=n_cols,
                                           n_classes=K, bias=b, has_bias=has_bias,
                                           seed=o["seed"], shrinking=o["shrinking"])
    elif regression:
        from svmtrain._regression import SVRDualCD
        engine = SVRDualCD.from_rows(indptr, indices, values, target, p, C, n_cols=n_cols, bias=b,
                                     has_bias=has_bias, seed=o["seed"], shrinking=o["shrinking"])
    else:
        from svmtrain._engine import DualCD
        y = _linear.binary_signs(target, labels[0])
        engine = DualCD.from_rows(indptr, indices, values, y, C, n_cols=n_cols, bias=b,
                                  has_bias=has_bias, seed=o["seed"], shrinking=o["shrinking"])
    with interrupt.watch():
        done = run_epochs(engine, epsilon=o["epsilon"], max_epochs=o["max_epochs"])
    w, alpha = engine.w_buffer(), engine.alpha_buffer()
    thresholds = engine.shrinking_thresholds
    del engine
    # the certificate (nslack.train_nslack): P from the task's pass over the rows, D from the
    # alphas, both with the same ||w||^2
    acc = memoryview(bytearray(16)).cast("d")
    if multiclass:
        _linear.multiclass_hinge_sum(indptr, indices, values, y, w, n_cols, K, b, has_bias, C, acc)
    elif regression:
        _linear.tube_loss_sum(indptr, indices, values, target, w, n_cols, b, has_bias, C, p, acc)
    else:
        _linear.binary_hinge_sum(indptr, indices, values, y, w, n_cols, b, has_bias, C, acc)
    P = objective.primal_value(w, acc, n).primal
    margins = (_linear.tube_margins(target, p) if regression
               else memoryview(_ONE * len(alpha)).cast("d"))
    D = objective.dual(w, margins, alpha)
    del margins
    rel = objective.relative_gap(P, D)
    header = {"task": o["task"], "mode": "n-slack", "solver": "dcd", "C": repr(C),
              "bias": repr(bias) if has_bias else "none", "features": str(n_cols),
              "index_base": "0" if o["zero_based"] else "1",
              "labels": " ".join(map(label_text, labels)), "epsilon": repr(o["epsilon"]),
              "dual": repr(D), "primal": repr(P), "relative_gap": repr(rel), "examples": str(n),
              "seed": str(o["seed"]), "epochs": str(done.epochs)}
    if multiclass:
        header.update(loss="zero-one", rescaling="margin")
    if regression:
        del header["labels"]
        header["p"] = repr(p)
    if liblinear:
        _write_liblinear(model_path, labels, n_cols, bias if has_bias else None, w)
    else:
        _write_model(model_path, header, w, K)
    seconds = time.perf_counter() - started
    if done.interrupted:
        rows = (indptr, indices, values, target, _line, n_features)
        state = _save_state(f"{model_path}.state.npz", path, rows, labels, o, alpha, thresholds)
        return _interrupted(model_path, state, rel)
    quiet = o["quiet"]
    if not done.converged and not quiet:
        extra = ("; a gap this large usually means features on very different scales: scale "
                 "them (e.g. to [0, 1]) and train again" if rel > 0.5 else "")
        print(f"svmtrain: warning: relative gap {rel:.3g} is above epsilon {o['epsilon']:g} "
              f"after {done.epochs} epochs (--max-epochs){extra}", file=sys.stderr)
    if not quiet:
        print(f"svmtrain: {o['task']} n-slack, {n} examples, {n_cols} features: {done.epochs} "
              f"epochs, {seconds:.3g} s, primal {P:.10g}, dual {D:.10g}, relative gap {rel:.3g}",
              file=sys.stderr)
    return 0


def _labels(target, task):
    """The task's from_training_data: binary, two labels, the larger positive; multiclass, two
    to MOST_CLASSES, sorted; regression, none (any targets: the parser's are finite). _NotHere
    where the full path must judge."""
    from svmtrain import _linear
    if task == "regression":
        return []
    multiclass = task == "multiclass"
    labels = _linear.distinct_values(target, MOST_CLASSES + 1 if multiclass else 3)
    if (len(labels) < 2 or len(labels) > (MOST_CLASSES if multiclass else 2)
            or any(x == 0.0 and math.copysign(1.0, x) < 0 for x in labels)):
        raise _NotHere                 # (-0.0, told apart from 0.0: np.unique's choice)
    return sorted(labels, reverse=not multiclass)


_ONE = struct.pack("d", 1.0)


#: weights formatted per piece of text (svmtrain.model.WEIGHTS_PER_CHUNK)
_WEIGHTS_PER_CHUNK = 65536


def _write_model(path, header, w, K):
    """model.format_model's text of a binary (K = 1) or multiclass linear model, written
    atomically, a row and WEIGHTS_PER_CHUNK weights at a time. A multiclass w is feature-major
    (the K weights of a column together); the file holds the K x width class-major matrix, a row
    per class."""
    from svmtrain._linear import nonzero_count, nonzero_entries
    from svmtrain._reader import weight_text
    from svmtrain.atomic import atomic_output
    width = len(w) // K
    nnz = nonzero_count(w)
    sparse = 2 * nnz < len(w)
    lines = ["svmtrain_model 1"] + [f"{key} {value}" for key, value in header.items()]
    lines.append(f"weights sparse {nnz}" if sparse else
                 f"weights dense {width}" if K == 1 else f"weights dense {K}x{width}")
    step = _WEIGHTS_PER_CHUNK
    with atomic_output(path, "w") as f:
        f.write("\n".join(lines) + "\n")
        for r in range(K):
            row = w if K == 1 else _contiguous(w[r::K])
            if sparse:
                kept, at = nonzero_entries(row, r * width)
                for a in range(0, len(kept), step):
                    f.write(weight_text(kept[a:a + step], at[a:a + step]))
            else:
                for a in range(0, width, step):
                    f.write(weight_text(row[a:a + step]))
        f.write("end\n")


def _write_liblinear(path, labels, n_cols, bias, w):
    """model.format_liblinear's text of a binary model (LIBLINEAR's save_model), atomically."""
    from svmtrain.atomic import atomic_output
    head = ["solver_type L2R_L1LOSS_SVC_DUAL", "nr_class 2",
            "label " + " ".join(str(int(x)) for x in labels), f"nr_feature {n_cols}",
            f"bias {format(-1.0 if bias is None else bias, '.17g')}", "w"]
    rows = [format(x, ".17g") + " " for x in w]
    with atomic_output(path, "w") as f:
        f.write("\n".join(head + rows) + "\n")


def _contiguous(view):
    """A copy of a strided buffer of doubles, contiguous (weight_text reads it in place)."""
    out = memoryview(bytearray(8 * len(view))).cast("d")
    out[:] = view
    return out


def _save_state(state_path, path, rows, labels, o, alpha, thresholds):
    """The dual state an interrupted run leaves beside its model (controlled.save_state's, by
    the full path's code and so with numpy: the run is over)."""
    import numpy as np
    from svmtrain.data import Block
    from svmtrain.state import save_state
    from svmtrain.tasks.base import Geometry
    from svmtrain.tasks.binary import Binary
    from svmtrain.tasks.multiclass import Multiclass
    from svmtrain.tasks.regression import Regression
    kinds = {"q": np.int64, "i": np.int32, "d": np.float64}
    indptr, indices, values, target, line = (np.frombuffer(r, kinds[memoryview(r).format])
                                             for r in rows[:-1])
    n = len(target)
    block = Block(indptr, indices.astype(np.int64), values, target, np.full(n, -1, np.int64),
                  np.ones(n), line, max(rows[-1], 1), 0)
    task = (Multiclass(labels, "zero-one") if o["task"] == "multiclass" else
            Regression(o["p"]) if o["task"] == "regression" else
            Binary(labels))
    bias = o["bias"] if o["bias"] != "none" else None
    problem = task.problem(block, path, o["C"], Geometry(block.n_features, bias))
    save_state(state_path, task=task.name, C=o["C"], examples=block.n_rows, block=block,
               constraints=task.all_constraints(problem, block),
               alpha=np.frombuffer(alpha, np.float64), thresholds=thresholds)
    return state_path


def _interrupted(model_path, state, rel):
    """What the full path says of an interrupted run (svmtrain.cli.train)."""
    import signal
    from svmtrain import interrupt
    name = signal.Signals(interrupt.signal_received()).name
    print(f"svmtrain: interrupted ({name}): wrote {model_path} and {state} (relative gap "
          f"{rel:.3g})", file=sys.stderr)
    return interrupt.exit_status()
