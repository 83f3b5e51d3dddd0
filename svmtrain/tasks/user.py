"""User tasks: loading a StructuredTask, and the adapter that makes it a built-in Task.

The solvers know one contract (svmtrain.tasks.base: Task, Problem, Constraints: a constraint is a
short sum of scaled rows of a row store). `UserTask` fulfils it for any StructuredTask, so n-slack,
1-slack and online-dual run a user task through their ordinary paths (SOLVERS[mode](task, block,
...)); the built-in tasks keep their fast paths and the solvers never ask which kind they have.

How examples reach the solvers. A solver moves *blocks* of rows (svmtrain.data.Block): cut, sliced,
concatenated, shuffled. A user task's block has one featureless row per example whose target is the
example's ordinal in the file; the adapter looks the (x, y) up by ordinal: in a list (in-memory
modes) or in a window of the most recent examples of the stream (online-dual, predict and
verify-bound: memory bounded by the window, not the file).

How constraints reach the engine. Each Problem owns a growing row store; an oracle pass appends,
for example i and its worst offender y', the row x_iy' = psi(x_i, y_i) - psi(x_i, y') (shared
features cancel: a parse differs from the gold tree in a few arcs), once per distinct (i, row): the
constraint key is a hash of the row, so a cutting-plane loop never caches one twice. 1-slack asks
`aggregated_offender` instead: one row per iteration, the plane itself.

The oracle runs in fixed chunks of ORACLE_CHUNK examples counted from the start of the file, in
this thread, a thread pool, or worker processes (holds_gil); each example's H_i is a function of
its own oracle answer, so P(w) is the same bits whichever the executor, and training and
verify-bound agree.
"""

import hashlib
import importlib
import importlib.util
import os
import sys

import numpy as np

from svmtrain.errors import InputError

from svmtrain.data import Block, DataError
from svmtrain.records import record
from svmtrain.tasks.base import Constraints, Problem, Task
from svmtrain.tasks.protocol import REQUIRED, StructuredTask, missing_methods

#: examples per oracle call (batch_loss_augmented_inference), counted from the file's start
ORACLE_CHUNK = 256
#: examples per block when a file is streamed (a multiple of ORACLE_CHUNK)
BLOCK_EXAMPLES = 16 * ORACLE_CHUNK
#: the model file's `task` for every user task (its own name and version are recorded beside it)
MODEL_TASK = "user"


class TaskError(InputError):
    """A task that cannot be loaded or used: a bad --task-module / --task-option, or user code that
    broke the protocol. The CLI prints it and exits 2."""


# ---------------------------------------------------------------------------------------------
# Loading


def parse_task_options(pairs):
    """KEY=VALUE strings (--task-option, repeatable) as a dict of strings."""
    options = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise TaskError(f"--task-option {pair!r}: expected KEY=VALUE with KEY a Python "
                            f"identifier")
        if key in options:
            raise TaskError(f"--task-option {key} given twice")
        options[key] = value
    return options


def load_task_class(spec):
    """The class named by "PATH.py:Class" or "package.module:Class"; TaskError when the file,
    module or class is missing or the class does not implement the protocol."""
    module_name, sep, class_name = str(spec).rpartition(":")
    if not sep or not module_name or not class_name:
        raise TaskError(f"--task-module {spec!r}: expected PATH.py:Class or package.module:Class")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise TaskError(f"--task-module {spec}: no such file {module_name}")
        # a stable module name (registered in sys.modules: worker processes and pickle find it)
        name = "svmtrain_user_task_" + hashlib.blake2b(path.encode(), digest_size=6).hexdigest()
        module = sys.modules.get(name)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            try:
                loader_spec.loader.exec_module(module)
            except BaseException as e:
                del sys.modules[name]
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise TaskError(f"--task-module {spec}: importing {module_name} failed: "
                                f"{type(e).__name__}: {e}") from None
    else:
        # as `python -m` does: a package in the current directory is importable
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            raise TaskError(f"--task-module {spec}: no module named {e.name!r}") from None
        except Exception as e:
            raise TaskError(f"--task-module {spec}: importing {module_name} failed: "
                            f"{type(e).__name__}: {e}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise TaskError(f"--task-module {spec}: {module_name} has no class {class_name}")
    if not isinstance(cls, type):
        raise TaskError(f"--task-module {spec}: {class_name} is not a class")
    missing = missing_methods(cls)
    if missing:
        raise TaskError(f"--task-module {spec}: {class_name} does not implement the task protocol "
                        f"(svmtrain.StructuredTask): missing {', '.join(missing)}")
    return cls


def load_task(spec, options=None):
    """An instance of the task class `spec` names, built with `options` (a dict of strings, or
    KEY=VALUE strings); TaskError for anything wrong, with the reason."""
    if options is None or isinstance(options, dict):
        options = dict(options or {})
    else:
        options = parse_task_options(options)
    cls = load_task_class(spec)
    try:
        task = cls(**options)
    except (TypeError, ValueError) as e:
        raise TaskError(f"--task-module {spec}: bad --task-option: {e}") from None
    check_task_identity(task, spec)
    return task


def check_task_identity(task, where="task"):
    """The name and version a model records: non-empty words (letters, digits, '_.+-')."""
    import re
    for attr in ("name", "version"):
        value = getattr(task, attr, None)
        if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", value):
            raise TaskError(f"{where}: the task's {attr} must be a word of letters, digits and "
                            f"'_.+-' (it is recorded in the model), got {value!r}")


def check_model_task(model, task, model_path, spec=None):
    """Refuse (TaskError) a model that the given task (None: no --task-module) did not train."""
    if model.task != MODEL_TASK:
        if task is not None:
            raise TaskError(f"{model_path}: a built-in {model.task} model: leave out --task-module")
        return
    recorded = f"{model.task_name} version {model.task_version}"
    if task is None:
        raise TaskError(f"{model_path}: the model is of the user task {recorded}: name its code "
                        f"with --task-module PATH.py:Class (model files never import code)")
    if (task.name, str(task.version)) != (model.task_name, model.task_version):
        raise TaskError(f"{model_path}: the model is of the user task {recorded}, but "
                        f"{spec or 'the given task'} is {task.name} version {task.version}")
    if task.size_joint_feature is not None and int(task.size_joint_feature) != model.n_features:
        raise TaskError(f"{model_path}: the model has {model.n_features} weights, the task's "
                        f"joint feature has {task.size_joint_feature} (options differ?)")


# ---------------------------------------------------------------------------------------------
# Examples as blocks


def example_block(first, n, size):
    """n featureless rows standing for the examples first .. first + n - 1 (target: ordinal)."""
    ordinals = np.arange(first, first + n, dtype=np.int64)
    return Block(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                 ordinals.astype(np.float64), np.full(n, -1, np.int64), np.ones(n), ordinals + 1,
                 int(size), 0)


class _Window(dict):
    """ordinal -> (x, y) for the most recent `retain` examples of a stream."""

    def __init__(self, retain):
        super().__init__()
        self.retain = retain

    def add(self, first, examples):
        for k, ex in enumerate(examples):
            self[first + k] = ex
        stale = first + len(examples) - self.retain
        for k in [k for k in self if k < stale]:
            del self[k]


# ---------------------------------------------------------------------------------------------
# The oracle


def _psi(task, x, y):
    size = task.size_joint_feature
    try:
        idx, val = task.joint_feature(x, y)
    except Exception as e:
        raise TaskError(f"task {task.name}: joint_feature raised {type(e).__name__}: {e}") from None
    idx = np.asarray(idx, dtype=np.int64).ravel()
    val = np.asarray(val, dtype=np.float64).ravel()
    if idx.shape != val.shape:
        raise TaskError(f"task {task.name}: joint_feature returned {len(idx)} indices and "
                        f"{len(val)} values")
    if len(idx) and (idx.min() < 0 or idx.max() >= size):
        raise TaskError(f"task {task.name}: joint_feature returned index "
                        f"{int(idx.max() if idx.max() >= size else idx.min())} outside "
                        f"[0, size_joint_feature = {size})")
    if not np.all(np.isfinite(val)):
        raise TaskError(f"task {task.name}: joint_feature returned a non-finite value")
    return idx, val


def difference(task, x, y, y_hat):
    """psi(x, y) - psi(x, y_hat) as (sorted unique indices, values), exact zeros dropped."""
    i1, v1 = _psi(task, x, y)
    i2, v2 = _psi(task, x, y_hat)
    idx, inverse = np.unique(np.concatenate([i1, i2]), return_inverse=True)
    val = np.bincount(inverse, weights=np.concatenate([v1, -v2]), minlength=len(idx))
    keep = val != 0.0
    return idx[keep], val[keep]


def _loss(task, y, y_hat):
    try:
        value = float(task.loss(y, y_hat))
    except Exception as e:
        raise TaskError(f"task {task.name}: loss raised {type(e).__name__}: {e}") from None
    if not (value >= 0 and np.isfinite(value)):
        raise TaskError(f"task {task.name}: loss returned {value!r} (it must be finite and >= 0)")
    return value


def same_label(a, b):
    """a == b for labels of any kind (numbers, tuples, numpy arrays); False when undecidable."""
    if a is b:
        return True
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        return bool(a == b)
    except Exception:
        return False


@record
class OracleAnswers:
    """One chunk's worst offenders: y_hat, the loss, H_i = loss - w.(psi(y_i) - psi(y_hat)) and
    the difference rows (CSR)."""

    y_hat: list
    loss: np.ndarray
    H: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray


def oracle_chunk(task, xs, ys, w):
    """The worst offenders of a chunk of examples under w, with their difference rows: the task's
    Python calls per example (joint_feature twice, loss), the rest one vectorised pass per chunk."""
    try:
        y_hat = list(task.batch_loss_augmented_inference(xs, ys, w))
    except TaskError:
        raise
    except Exception as e:
        raise TaskError(f"task {task.name}: loss_augmented_inference raised "
                        f"{type(e).__name__}: {e}") from None
    n = len(xs)
    if len(y_hat) != n:
        raise TaskError(f"task {task.name}: batch_loss_augmented_inference returned {len(y_hat)} "
                        f"answers for {n} examples")
    # an answer equal to the ground truth (most, near the optimum) has loss 0 and an empty row:
    # no joint features computed for it
    same = [same_label(y, p) for y, p in zip(ys, y_hat)]
    loss = np.array([0.0 if e else _loss(task, y, p) for y, p, e in zip(ys, y_hat, same)],
                    dtype=np.float64)
    parts_i, parts_v, lengths = [], [], np.zeros(2 * n, np.int64)
    try:
        for k in range(n):
            if same[k]:
                continue
            for side, label in ((0, ys[k]), (1, y_hat[k])):
                idx, val = task.joint_feature(xs[k], label)
                idx = np.asarray(idx, dtype=np.int64).ravel()
                val = np.asarray(val, dtype=np.float64).ravel()
                if idx.shape != val.shape:
                    raise TaskError(f"task {task.name}: joint_feature returned {len(idx)} "
                                    f"indices and {len(val)} values")
                parts_i.append(idx)
                parts_v.append(-val if side else val)
                lengths[2 * k + side] = len(idx)
    except TaskError:
        raise
    except Exception as e:
        raise TaskError(f"task {task.name}: joint_feature raised {type(e).__name__}: {e}") from None
    idx = np.concatenate(parts_i) if n else np.zeros(0, np.int64)
    val = np.concatenate(parts_v) if n else np.zeros(0)
    size = int(task.size_joint_feature)
    if len(idx) and (idx.min() < 0 or idx.max() >= size):
        bad = int(idx.max() if idx.max() >= size else idx.min())
        raise TaskError(f"task {task.name}: joint_feature returned index {bad} outside "
                        f"[0, size_joint_feature = {size})")
    if not np.all(np.isfinite(val)):
        raise TaskError(f"task {task.name}: joint_feature returned a non-finite value")
    # psi(y_k) - psi(y_hat_k) for every k at once: (example, index) keys, sorted and summed
    example = np.repeat(np.repeat(np.arange(n, dtype=np.int64), 2), lengths)
    keys, inverse = np.unique(example * size + idx, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=val, minlength=len(keys))
    keep = sums != 0.0
    keys, sums = keys[keep], sums[keep]
    row = keys // size
    indices = keys - row * size
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    # H_k = loss_k - w . row_k, each row summed left to right on its own (reduceat: the same
    # bits wherever the row lies in the chunk, so P(w) does not depend on the chunking)
    products = w[indices] * sums
    dots = np.zeros(n)
    filled = indptr[1:] > indptr[:-1]
    if len(products):
        dots[filled] = np.add.reduceat(products, indptr[:-1][filled])
    H = loss - dots
    return OracleAnswers(y_hat, loss, H, indptr, indices, sums)


# worker processes (holds_gil): the adapter and w's shared buffer, inherited through fork
_WORKER = {}


def _process_chunk(start, stop, ys):
    adapter, shared = _WORKER["adapter"], _WORKER["w"]
    w = np.frombuffer(shared, dtype=np.float64)
    xs = [adapter.examples[k][0] for k in range(start, stop)]
    if ys is None:
        ys = [adapter.truth(k) for k in range(start, stop)]
    return oracle_chunk(adapter.task, xs, ys, w)


class OracleExecutor:
    """Runs the oracle over chunks of examples: here, in threads, or in forked processes (a task
    that holds the GIL, examples in memory). Results come back in chunk order."""

    def __init__(self, adapter, workers=1):
        self.adapter = adapter
        self.workers = max(1, int(workers or 1))
        self.pool = None
        self.processes = False
        self._shared = None

    def _start(self):
        if self.pool is not None or self.workers == 1:
            return
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
        in_memory = isinstance(self.adapter.examples, list)
        if self.adapter.task.holds_gil and in_memory and "fork" in mp.get_all_start_methods():
            ctx = mp.get_context("fork")
            self._shared = ctx.RawArray("d", int(self.adapter.task.size_joint_feature))
            _WORKER.update(adapter=self.adapter, w=self._shared)
            self.pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
            self.processes = True
        else:
            self.pool = ThreadPoolExecutor(self.workers)

    def run(self, ordinals, w):
        """OracleAnswers per chunk of `ordinals` (consecutive runs cut at multiples of
        ORACLE_CHUNK from the file's start)."""
        ordinals = np.asarray(ordinals, np.int64)
        cuts = _chunk_cuts(ordinals)
        if not cuts:
            return []
        self._start()
        ad = self.adapter
        if self.pool is None:
            return [self._here(ordinals[a:b], w) for a, b in cuts]
        if not self.processes:
            return list(self.pool.map(lambda ab: self._here(ordinals[ab[0]:ab[1]], w), cuts))
        np.frombuffer(self._shared, dtype=np.float64)[:] = w
        futures = []
        for a, b in cuts:
            lo, hi = int(ordinals[a]), int(ordinals[b - 1]) + 1
            if hi - lo != b - a:          # not a consecutive run: not from the file's order
                futures.append(None)
                continue
            ys = [ad.truth(k) for k in range(lo, hi)] if ad.imputed else None
            futures.append(self.pool.submit(_process_chunk, lo, hi, ys))
        return [self._here(ordinals[a:b], w) if f is None else f.result()
                for f, (a, b) in zip(futures, cuts)]

    def _here(self, ordinals, w):
        ad = self.adapter
        xs, ys = ad.lookup(ordinals)
        return oracle_chunk(ad.task, xs, ys, w)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
            _WORKER.clear()


def _chunk_cuts(ordinals):
    """[a, b) ranges of positions: a new chunk where the ordinal's chunk number changes or the run
    of consecutive ordinals breaks (a shuffled online-dual chunk: one chunk per run)."""
    n = len(ordinals)
    if n == 0:
        return []
    new = np.ones(n, bool)
    new[1:] = ((ordinals[1:] // ORACLE_CHUNK != ordinals[:-1] // ORACLE_CHUNK)
               | (ordinals[1:] != ordinals[:-1] + 1))
    starts = np.flatnonzero(new)
    # shuffled order: runs of one example each; batch them ORACLE_CHUNK at a time instead
    if len(starts) > n // 2 and n > 1:
        starts = np.arange(0, n, ORACLE_CHUNK)
    ends = np.append(starts[1:], n)
    return list(zip(starts.tolist(), ends.tolist()))


# ---------------------------------------------------------------------------------------------
# The row store of a Problem


class GrowingStore:
    """CSR rows appended by the oracle passes (arrays grow by doubling), each row remembered with
    its (example, offender label) and deduplicated per example by its content."""

    def __init__(self):
        self.indptr = np.zeros(16, np.int64)
        self.indices = np.zeros(1024, np.int64)
        self.data = np.zeros(1024)
        self.n_rows, self.nnz = 1, 0    # row 0: the empty row, of every answer equal to the truth
        self.seen = {}          # (ordinal, key) -> row
        self.labels = [(-1, None)]      # row -> (ordinal, y_hat)

    def add(self, ordinal, idx, val, y_hat):
        """The row of this example's difference (an existing one when the same), and its key."""
        if len(idx) == 0:
            return 0, 0
        key = row_key(idx, val)
        row = self.seen.get((ordinal, key))
        if row is not None:
            return row, key
        n, m = self.n_rows, self.nnz
        if n + 2 > len(self.indptr):
            self.indptr = np.concatenate([self.indptr, np.zeros(len(self.indptr), np.int64)])
        if m + len(idx) > len(self.indices):
            grow = max(len(self.indices), len(idx))
            self.indices = np.concatenate([self.indices, np.zeros(grow, np.int64)])
            self.data = np.concatenate([self.data, np.zeros(grow)])
        self.indices[m:m + len(idx)] = idx
        self.data[m:m + len(idx)] = val
        self.indptr[n + 1] = m + len(idx)
        self.n_rows, self.nnz = n + 1, m + len(idx)
        self.seen[(ordinal, key)] = n
        self.labels.append((ordinal, y_hat))
        return n, key

    def publish(self, problem):
        problem.indptr = self.indptr[:self.n_rows + 1]
        problem.indices = self.indices[:self.nnz]
        problem.data = self.data[:self.nnz]


def row_key(idx, val):
    """A 63-bit content hash of a sparse row (the same row, the same key, in every run)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.ascontiguousarray(idx, np.int64).tobytes())
    h.update(np.ascontiguousarray(val, np.float64).tobytes())
    return int.from_bytes(h.digest(), "little") >> 1


# ---------------------------------------------------------------------------------------------
# The adapter


class UserTask(Task):
    """A StructuredTask seen by the solvers as a Task (module docstring)."""

    name = MODEL_TASK
    grouping = "row"
    examples_are = "examples"
    keyed_examples = False
    cache_offenders = False

    def __init__(self, task, examples=None, workers=1):
        self.task = task
        self.examples = examples if examples is not None else _Window(BLOCK_EXAMPLES)
        self.imputed = {}               # ordinal -> the ground truth with its latent part imputed
        self.impute_with = None         # a w to impute ground truths with (latent models' pricing)
        self.start = None               # (constraints' (ordinal, y_hat), alpha): a hot start
        self.last_problem = None
        self.executor = OracleExecutor(self, workers)

    # -- examples --------------------------------------------------------------------------------
    @property
    def size(self):
        return int(self.task.size_joint_feature)

    def truth(self, k):
        """Example k's ground truth: imputed by the latent rounds, or under `impute_with` (the
        model's w, when pricing or scoring a latent model), or as read."""
        y = self.imputed.get(k)
        if y is not None:
            return y
        x, y = self.examples[k]
        if self.impute_with is not None:
            try:
                return self.task.latent(x, y, self.impute_with)
            except Exception as e:
                raise TaskError(f"task {self.task.name}: latent raised {type(e).__name__}: "
                                f"{e}") from None
        return y

    def lookup(self, ordinals):
        xs, ys = [], []
        try:
            for k in np.asarray(ordinals, np.int64).tolist():
                xs.append(self.examples[k][0])
                ys.append(self.truth(k))
        except (KeyError, IndexError):   # a solver that kept a block past the stream's window
            raise AssertionError(f"example {k} is no longer held (streaming window)") from None
        return xs, ys

    def iter_blocks(self, path, retain=None):
        """Blocks of BLOCK_EXAMPLES examples read with the task's read_examples, the examples
        held in a window of the most recent `retain` (at least two blocks)."""
        window = _Window(max(int(retain or 0), 2 * BLOCK_EXAMPLES))
        self.examples = window
        first = 0
        pending = []
        for ex in read_examples(self.task, path):
            pending.append(ex)
            if len(pending) == BLOCK_EXAMPLES:
                window.add(first, pending)
                yield example_block(first, len(pending), self.size)
                first += len(pending)
                pending = []
        if pending:
            window.add(first, pending)
            yield example_block(first, len(pending), self.size)

    # -- the Task contract -----------------------------------------------------------------------
    def model_fields(self):
        return {"labels": [], "task_name": self.task.name, "task_version": str(self.task.version)}

    def n_weights(self, geometry):
        return self.size

    def problem(self, block, path, C, geometry):
        n = block.n_rows
        store = GrowingStore()
        problem = Problem(store.indptr[:2], store.indices[:0], store.data[:0], self.size,
                          self.size, None, C * block.cost, path)
        problem.store = store
        problem.ordinals = block.target.astype(np.int64)
        assert len(problem.ordinals) == n
        self.last_problem = problem
        return problem

    def _answers(self, w, block):
        w = np.ascontiguousarray(w, dtype=np.float64)
        return self.executor.run(block.target.astype(np.int64), w)

    def worst_offenders(self, w, problem, block):
        ordinals = block.target.astype(np.int64)
        answers = self._answers(w, block)
        H = np.concatenate([a.H for a in answers]) if answers else np.zeros(0)
        margin = np.concatenate([a.loss for a in answers]) if answers else np.zeros(0)
        rows = np.zeros(len(H), np.int64)
        keys = np.zeros(len(H), np.int64)
        store = problem.store
        at = 0
        for a in answers:
            # empty rows (answers equal to the truth) stay on the store's row 0, key 0
            for k in np.flatnonzero(np.diff(a.indptr)).tolist():
                lo, hi = a.indptr[k], a.indptr[k + 1]
                rows[at + k], keys[at + k] = store.add(int(ordinals[at + k]), a.indices[lo:hi],
                                                       a.values[lo:hi], a.y_hat[k])
            at += len(a.H)
        store.publish(problem)
        n = len(H)
        cons = Constraints.one_term(rows, np.ones(n), margin, np.arange(n), key=keys, bias=False)
        return H, cons

    def aggregated_offender(self, w, problem, block):
        """1-slack's plane in one row: sum_i C_i (psi(y_i) - psi(y_i')) over the violated i, with
        margin sum_i C_i loss_i; the loss term sum_i C_i max(0, H_i)."""
        answers = self._answers(w, block)
        C = problem.C
        dense = np.zeros(self.size)
        loss = margin = 0.0
        at = 0
        for a in answers:
            n = len(a.H)
            c = C[at:at + n]
            hit = a.H > 0
            loss += float(np.dot(c, np.maximum(a.H, 0.0)))
            margin += float(np.dot(c[hit], a.loss[hit]))
            rows = np.repeat(np.arange(n), np.diff(a.indptr))
            weight = np.where(hit, c, 0.0)[rows]
            np.add.at(dense, a.indices, weight * a.values)
            at += n
        cols = np.flatnonzero(dense)
        problem.indptr = np.array([0, len(cols)], np.int64)
        problem.indices = cols.astype(np.int64)
        problem.data = dense[cols]
        plane = Constraints.one_term([0], [1.0], [margin], [0], bias=False)
        return loss, plane

    def start_cache(self, problem, block):
        """The n-slack hot start of a latent round: the previous round's cached offenders
        (ordinal, y_hat) against this round's ground truths, with their alphas (feasible: the same
        examples share the same slack bounds)."""
        if self.start is None:
            return None
        pairs, alpha = self.start
        self.start = None
        position = {int(k): i for i, k in enumerate(problem.ordinals.tolist())}
        rows, keys, margin, group, keep = [], [], [], [], []
        for c, (ordinal, y_hat) in enumerate(pairs):
            i = position.get(ordinal)
            if i is None:
                continue
            x = self.examples[ordinal][0]
            y = self.truth(ordinal)
            idx, val = difference(self.task, x, y, y_hat)
            row, key = problem.store.add(ordinal, idx, val, y_hat)
            rows.append(row)
            keys.append(key)
            margin.append(_loss(self.task, y, y_hat))
            group.append(i)
            keep.append(c)
        problem.store.publish(problem)
        cons = Constraints.one_term(rows, np.ones(len(rows)), margin, group, key=keys, bias=False)
        cons.alpha0 = np.minimum(np.asarray(alpha, np.float64)[keep], problem.C[group]) \
            if keep else np.zeros(0)
        # a group whose alphas now sum past C_i (cannot happen for one run's cache; kept safe)
        sums = np.zeros(len(problem.C))
        np.add.at(sums, cons.group, cons.alpha0)
        over = sums > problem.C
        if np.any(over):
            scale = np.where(over, problem.C / np.where(sums > 0, sums, 1.0), 1.0)
            cons.alpha0 = cons.alpha0 * scale[cons.group]
        return cons

    def violations(self, w, block, path, geometry):
        answers = self._answers(w, block)
        return np.concatenate([a.H for a in answers]) if answers else np.zeros(0)

    def predict(self, w, block, geometry, path):
        xs, _ = self.lookup(block.target.astype(np.int64))
        w = np.ascontiguousarray(w, dtype=np.float64)
        try:
            y_hat = list(self.task.batch_inference(xs, w))
        except TaskError:
            raise
        except Exception as e:
            raise TaskError(f"task {self.task.name}: inference raised {type(e).__name__}: {e}") from None
        scores = []
        for x, y in zip(xs, y_hat):
            idx, val = _psi(self.task, x, y)
            scores.append(float(np.dot(w[idx], val)))
        return y_hat, scores

    def new_metric(self):
        return UserMetric(self)

    def format_prediction(self, value):
        return str(self.task.format_label(value)).replace("\n", " ")

    def format_scores(self, values):
        return repr(float(values))

    def close(self):
        self.executor.close()


class UserMetric:
    """Collects the examples' labels and predictions; the task's `score` summarises them."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.ys, self.y_hats = [], []

    def add(self, predictions, block):
        self.ys.extend(self.adapter.lookup(block.target.astype(np.int64))[1])
        self.y_hats.extend(predictions)

    def summary(self):
        try:
            name, value = self.adapter.task.score(self.ys, self.y_hats)
        except Exception as e:
            raise TaskError(f"task {self.adapter.task.name}: score raised "
                            f"{type(e).__name__}: {e}") from None
        return {str(name): float(value), "total": len(self.ys)}

    def line(self):
        s = self.summary()
        name = next(k for k in s if k != "total")
        return f"{name} = {s[name]:.6g} ({s['total']} examples)"


# ---------------------------------------------------------------------------------------------
# Training, predicting, certifying: what the commands (and svmtrain.api) call


@record
class UserTraining:
    """What training a user task gives: the model's fields (weights, certificate, the task's name
    and version: svmtrain.pipeline.build_model makes the Model), the solver's result, and the
    latent rounds (empty without --latent-rounds)."""

    fields: dict
    result: object
    rounds: list
    stopped: str = ""


def train_user_task(task, path, *, mode="n-slack", C=1.0, epsilon=1e-3, seed=1, max_epochs=1000,
                    shrinking=True, threads=1, latent_rounds=0, on_epoch=None, on_round=None,
                    on_chunk=None, online=None, solver_options=None, examples=None):
    """Train `task` (a StructuredTask) on the file `path` (or on `examples`, a list of (x, y), in
    the in-memory modes) in a linear mode; returns UserTraining.

    The user task is just another Task here: n-slack and 1-slack run SOLVERS[mode](UserTask, block,
    ...), online-dual streams through OnlineDual with the task reading its own file, and
    `latent_rounds` > 0 runs CCCP (svmtrain.solvers.latent) over n-slack solves. `threads`:
    workers of the oracle in the in-memory modes (processes when task.holds_gil). `online`: fields
    of svmtrain.solvers.online.OnlineOptions (passes, chunk, shuffle_window, ...)."""
    from svmtrain.solvers import LINEAR_MODES, SOLVERS
    from svmtrain.tasks.base import Geometry
    from svmtrain.objective import relative_gap
    from svmtrain import objective

    if mode not in LINEAR_MODES:
        raise TaskError(f"a user task trains in the linear modes ({', '.join(LINEAR_MODES)}), "
                        f"not {mode}")
    check_task_identity(task)
    if latent_rounds and getattr(task, "latent", None) is None:
        raise TaskError(f"--latent-rounds: the task {task.name} defines no latent(x, y, w)")
    if latent_rounds and mode != "n-slack":
        raise TaskError(f"--latent-rounds runs its convex rounds in the n-slack mode, not {mode}")
    rounds, stopped = [], ""
    if mode == "online-dual":
        from svmtrain.solvers.online import OnlineDual, OnlineOptions
        check_size(task)
        adapter = UserTask(task)
        opt = OnlineOptions(C=C, bias=None, epsilon=epsilon, seed=seed, max_epochs=max_epochs,
                            shrinking=shrinking, **(online or {}))
        try:
            result = OnlineDual(adapter, path, opt).run(on_chunk=on_chunk)
            # the certificate: one more pass prices the whole problem's P(w) (verify-bound's
            # sum); an interrupted run records the cached problem's bound, as the built-in one
            priced = None if result.interrupted else objective.primal(
                adapter, result.w, Geometry(adapter.size, None), C, adapter.iter_blocks(path),
                path)
        finally:
            adapter.close()
        w, D, epochs = result.w, result.dual, result.epochs
        examples_n = result.examples if priced is None else priced.examples
        P = max(result.upper if priced is None else priced.primal, D)
    else:
        if examples is None:
            examples = load_examples(task, path)
        else:
            examples = list(examples)
            task.initialize(examples)
            check_size(task)
        adapter = UserTask(task, examples, workers=threads)
        block = example_block(0, len(examples), adapter.size)
        try:
            if latent_rounds:
                from svmtrain.solvers.latent import train_latent
                latent = train_latent(adapter, block, path, rounds=latent_rounds, C=C,
                                      epsilon=epsilon, max_epochs=max_epochs, seed=seed,
                                      shrinking=shrinking, on_epoch=on_epoch, on_round=on_round)
                result, rounds, stopped = latent.result, latent.rounds, latent.stopped
            else:
                result = SOLVERS[mode](adapter, block, path, C=C, bias=None, epsilon=epsilon,
                                       max_epochs=max_epochs, seed=seed, shrinking=shrinking,
                                       on_epoch=on_epoch, **(solver_options or {}))
        finally:
            adapter.close()
        w, D, P, examples_n, epochs = (result.w, result.dual, result.primal, result.examples,
                                       result.epochs)
    fields = dict(n_features=int(task.size_joint_feature), w=np.asarray(w, np.float64).copy(),
                  dual=D, primal=P, relative_gap=relative_gap(P, D), examples=int(examples_n),
                  epochs=int(epochs), labels=[], task_name=task.name,
                  task_version=str(task.version))
    return UserTraining(fields, result, rounds, stopped)


def model_adapter(model, model_path, spec=None, options=None, task=None):
    """The adapter for predicting with or certifying a model: None for a built-in model (and no
    --task-module); TaskError for a user model without --task-module or with another task. A
    latent task's ground truths are then imputed under the model's w. `task`: a StructuredTask
    instance instead of a spec to load."""
    if task is None:
        task = load_task(spec, options) if spec else None
    check_model_task(model, task, model_path, spec)
    if task is None:
        return None
    if task.size_joint_feature is None:
        task.size_joint_feature = model.n_features
    check_size(task)
    adapter = UserTask(task)
    if getattr(task, "latent", None) is not None:
        adapter.impute_with = np.ascontiguousarray(model.w, dtype=np.float64)
    return adapter


def read_examples(task, path):
    """The task's examples of `path`, its exceptions turned into DataError (file named)."""
    try:
        it = iter(task.read_examples(path))
    except OSError:
        raise
    except Exception as e:
        raise DataError(path, None, f"{type(e).__name__}: {e}") from None
    while True:
        try:
            ex = next(it)
        except StopIteration:
            return
        except OSError:
            raise
        except Exception as e:
            raise DataError(path, None, f"{type(e).__name__}: {e}") from None
        if not (isinstance(ex, tuple) and len(ex) == 2):
            raise TaskError(f"task {task.name}: read_examples must yield (x, y) pairs, got "
                            f"{type(ex).__name__}")
        yield ex


def load_examples(task, path):
    """All examples of `path` in memory, and the task initialised on them."""
    examples = list(read_examples(task, path))
    if not examples:
        raise DataError(path, None, "no examples")
    try:
        task.initialize(examples)
    except Exception as e:
        raise TaskError(f"task {task.name}: initialize raised {type(e).__name__}: {e}") from None
    check_size(task)
    return examples


def check_size(task):
    size = task.size_joint_feature
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise TaskError(f"task {task.name}: size_joint_feature must be a positive int (set it in "
                        f"__init__ or initialize), got {size!r}")


__all__ = ["MODEL_TASK", "REQUIRED", "StructuredTask", "TaskError", "UserTask", "UserTraining",
           "check_model_task", "load_examples", "load_task", "load_task_class", "model_adapter",
           "parse_task_options", "train_user_task"]
