"""Past one machine: verify-bound, predict, n-slack and 1-slack training on a Dask cluster
(dask.distributed).

Dask is optional (`pip install svmtrain[dask]`); nothing here imports it before a command asks for
a cluster (`--workers N`: a LocalCluster of N one-thread processes; `--scheduler ADDRESS` or
DASK_SCHEDULER_ADDRESS: an existing cluster).

Partitions are byte ranges of a plain file (svmtrain.data.iter_blocks' offset/length), cut where an
example starts: a range owns the lines whose first byte lies inside it, and a boundary is moved
forward past the rows of an example that started before it (a run of rows with one qid for
sequence files). A compressed file, standard input and tasks whose examples are spread over the
file (ranking queries) are one partition.

What is guaranteed:
- verify-bound: each partition returns its examples' positive losses C_i max(0, l_ij - w.x_ij) in
  file order, and the client adds them with the same compensated sum (`hinge_sum`) the
  single-process pass uses, in file order: the primal is the single-process figure bit for bit,
  whatever the number of partitions or workers.
- predict: the output lines are those of the single-process run, in file order; the metric is
  accumulated in file order (a regression metric's float sums may differ in the last bits, as they
  do between block sizes).
- train -m 1-slack (every task but constraints; ranking with each query in one run): the planes
  and the QP on the client, the oracle on the workers' partitions (below); bit for bit
  reproducible for a given number of workers.
- train (n-slack, listable constraints: binary, regression, multiclass): CoCoA+ over one partition
  per worker thread (Ma, Smith, Jaggi et al. 2015). Its model depends on the number of partitions
  (within epsilon of the same optimum) and is bit for bit reproducible for a given number of
  workers and seed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import replace
from typing import Optional

import numpy as np

from svmtrain import data, objective
from svmtrain.records import record

PARTITION_BYTES = 64 << 20   # verify-bound / predict: the size of a partition (not of the cluster)
LOCAL_EPOCHS = 2             # CoCoA+: engine epochs on each partition per round
LOCAL_VIOLATION = 0.0        # CoCoA+: a local solve ends early below this projected gradient
INSTALL_HINT = "pip install 'svmtrain[dask]'"
CONNECT_TIMEOUT = "30s"      # joining a scheduler; also how long a lost one is waited for


class DaskMissing(RuntimeError):
    """Dask is not installed: the message says how to get it."""


class NotListable(ValueError):
    """Training input CoCoA+ cannot take: cutting-plane tasks (it needs the constraints listed),
    standard input (the workers read the file)."""


class ClusterError(RuntimeError):
    """The cluster failed the run (workers lost beyond Dask's retries, or unreachable)."""


def check_available(flag: str, local_workers: bool = False) -> None:
    """Before any data is read: Dask must be importable for `flag`. `local_workers`: the command
    will start a LocalCluster, whose worker processes' fork server is started now
    (`start_fork_server`), while this process imports Dask."""
    import importlib.util
    if local_workers and importlib.util.find_spec("distributed") is not None:
        start_fork_server()
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DaskMissing(f"{flag} runs on Dask, which is not installed: {INSTALL_HINT}") from None
    # leaving Python, its last garbage collections walk the objects of Dask's modules: 0.2 s of
    # a 2 s `train --workers 2` (five interleaved runs each, medians 1.98 s against 2.18 s).
    # They are all alive until the end: exclude them (and the rest) from those collections
    global _freeze_at_exit
    if not _freeze_at_exit:
        import atexit
        import gc
        atexit.register(gc.freeze)
        _freeze_at_exit = True


_freeze_at_exit = False


#: what the LocalCluster's fork server imports once for every worker process: Dask and the
#: modules of the workers' tasks (the main module too, which each worker process runs again)
WORKER_PRELOAD = ("distributed", "svmtrain.distributed", "svmtrain.solvers.oneslack",
                  "svmtrain.cli")


def start_fork_server() -> None:
    """Start the fork server the LocalCluster's worker processes fork from (Session.client), with
    WORKER_PRELOAD imported there once: it imports them while this process imports Dask and starts
    the scheduler, and each worker process starts with them instead of importing them on its
    first task. Measured (`train -e 1e-3 --workers 2` on kddcup99 binary, the whole command, four
    interleaved runs, load average 3 on 2 cores): median 3.98 s against 4.30 s when Dask started
    the fork server itself, with Dask alone preloaded, once its import was done. A running fork
    server is kept (the pool of a second LocalCluster in the same process forks from it)."""
    import multiprocessing
    from multiprocessing import forkserver
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(WORKER_PRELOAD))
    forkserver.ensure_running()


class Session:
    """A cluster connection, made on first use (options and input files are checked first)."""

    def __init__(self, workers: Optional[int], scheduler: Optional[str], client=None):
        self.workers, self.scheduler = workers, scheduler
        self.partition_bytes = PARTITION_BYTES   # verify-bound / predict partitions
        self._client = self._cluster = None
        self._client, self._own_client = client, client is None

    @property
    def client(self):
        if self._client is None:
            import logging
            from distributed import Client, LocalCluster
            try:
                if self.scheduler:
                    self._client = Client(self.scheduler, timeout=CONNECT_TIMEOUT)
                else:
                    import dask
                    # one thread per process: the kernels release the GIL, one core each. The
                    # processes fork from a fork server that has imported Dask and the workers'
                    # modules once (start_fork_server, started by check_available): measured on
                    # this machine (loaded), start + close 0.1 + 1.4 s instead of spawn's 2.4 +
                    # 0.7 s, a fixed cost every --workers command pays. No dashboard: nothing
                    # here shows it
                    method = {"distributed.worker.multiprocessing-method": "forkserver"}
                    start_fork_server()       # (already running after check_available)
                    with dask.config.set(method):
                        self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                                     processes=True, dashboard_address=None,
                                                     silence_logs=logging.ERROR)
                    self._client = Client(self._cluster)
            except OSError as e:   # unreachable scheduler (asyncio / comm timeouts are OSErrors)
                where = self.scheduler or "a LocalCluster"
                raise ClusterError(f"cannot connect to the Dask scheduler {where}: {e}") from None
        return self._client

    @property
    def n_threads(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def close(self):
        if self._client is not None and self._own_client:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None


@contextlib.contextmanager
def session(workers: Optional[int], scheduler: Optional[str], client=None):
    """A Session, or None when none is given (the embedded default, no Dask imported). A caller's
    `client` (a distributed.Client) is used as it is and left open."""
    if not workers and not scheduler and client is None:
        yield None
        return
    s = Session(workers, scheduler, client)
    try:
        with _cluster_errors():
            yield s
    finally:
        s.close()


@contextlib.contextmanager
def _cluster_errors():
    """Worker losses Dask could not absorb become one ClusterError (data errors pass through)."""
    try:
        yield
    except ImportError:
        raise
    except Exception as e:
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError
        if isinstance(e, (KilledWorker, FutureCancelledError)):
            raise ClusterError(f"the Dask cluster lost the workers of this run ({type(e).__name__}: "
                               f"{e}); nothing was written") from None
        raise


# -- partitions ------------------------------------------------------------------------------------

def _is_plain(path: str) -> bool:
    if path == "-":
        return False
    try:
        with open(path, "rb") as f:
            if not f.seekable():
                return False
            return data._sniff(f.read(6)) is None
    except OSError:
        return False   # the reader will name the problem


def partitions(path: str, grouping: str, *, count: Optional[int] = None,
               size: int = PARTITION_BYTES) -> list:
    """Byte ranges (offset, length) of whole examples covering the file in order; [None] (the whole
    stream) for stdin, compressed files and grouping "whole". `count` ranges of about equal size,
    else ranges of about `size` bytes."""
    if grouping == "whole" or not _is_plain(path):
        return [None]
    total = os.path.getsize(path)
    if count is not None:
        size = max(1, -(-total // max(1, count)))
    cuts = [0]
    with open(path, "rb") as f:
        for nominal in range(size, total, size):
            cut = _example_start(f, max(nominal, cuts[-1]), grouping)
            if cuts[-1] < cut < total:
                cuts.append(cut)
    cuts.append(total)
    return [(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])]


def _line_start(f, pos: int) -> int:
    """The first line start at or after pos."""
    if pos == 0:
        return 0
    f.seek(pos - 1)
    if f.read(1) == b"\n":
        return pos
    f.readline()
    return f.tell()


def _qid(line: bytes):
    """A data line's qid (None without one); `...` for a blank or comment-only line (no row)."""
    body = line.split(b"#", 1)[0].split()
    if not body:
        return ...
    if len(body) > 1 and body[1].startswith(b"qid:"):
        text = body[1][4:]
        try:
            return int(text)
        except ValueError:
            return text   # the reader reports it; any cut is fine then
    return None


def _previous_row_qid(f, start: int):
    """The qid of the last data row before `start` (a line start); `...` when there is none."""
    end = start
    chunk = 1 << 16
    tail = b""
    while end > 0:
        begin = max(0, end - chunk)
        f.seek(begin)
        tail = f.read(end - begin) + tail
        end = begin
        lines = tail.split(b"\n")
        # lines[0] may be partial unless we reached the file's start
        for line in reversed(lines[1:] if begin > 0 else lines):
            q = _qid(line)
            if q is not ...:
                return q
        tail = lines[0] if begin > 0 else b""
    return ...


def _example_start(f, pos: int, grouping: str) -> int:
    """The first byte at or after pos where an example starts (a line start; for "consecutive",
    the first row whose qid differs from the previous row's)."""
    start = _line_start(f, pos)
    if grouping == "row":
        return start
    previous = _previous_row_qid(f, start)
    f.seek(start)
    offset = start
    for line in iter(f.readline, b""):
        q = _qid(line)
        if q is not ... and (previous is ... or q != previous):
            return offset
        if q is not ...:
            previous = q
        offset += len(line)
    return offset


def _read(path, zero_based, span):
    """The rows of a partition. Lines are numbered from the range's start (counting the lines
    before it would read the file up to there: quadratic over the partitions); `_file_lines`
    puts the file's numbers back into an error."""
    offset, length = span if span is not None else (0, None)
    return data.iter_blocks(path, zero_based=zero_based, offset=offset, length=length,
                            count_lines=False)


@contextlib.contextmanager
def _file_lines(path, span):
    try:
        yield
    except data.DataError as e:
        if e.line is None or span is None or span[0] == 0:
            raise
        raise data.DataError(e.path, e.line + data.lines_before(path, span[0]), e.reason) from None


def worker_path(path: str) -> str:
    """The name the workers are given for a file the client names `path`: absolute, since a worker
    may run in another directory than the client (a `dask worker` started elsewhere, a batch
    job's node); standard input stays "-" (the client reads it). The workers must see the file at
    that name (a shared file system on a cluster)."""
    if path == "-":
        return path
    return os.path.abspath(os.path.expanduser(path))


@contextlib.contextmanager
def _named_as_given(given: str, sent: str):
    """A data error raised on a worker names the file as the user gave it, not as it was sent."""
    try:
        yield
    except data.DataError as e:
        if e.path != sent or sent == given:
            raise
        raise data.DataError(given, e.line, e.reason) from None
    except NotListable as e:
        text = str(e)
        if sent == given or not text.startswith(sent + ":"):
            raise
        raise NotListable(given + text[len(sent):]) from None


# -- verify-bound ----------------------------------------------------------------------------------

def _partition_losses(task, w, geometry, C, path, zero_based, span):
    """(the positive losses C_i max(0, H_i) in file order, the number of examples)."""
    kept, n = [], 0
    with _file_lines(path, span):
        for block in data.whole_examples(_read(path, zero_based, span), task.grouping, path):
            v = task.costs(block, C) * task.violations(w, block, path, geometry)
            kept.append(v[v > 0.0])
            n += len(v)
    return (np.concatenate(kept) if kept else np.zeros(0)), n


def accumulate_primal(s: Session, acc, zero_based: bool) -> None:
    """verify-bound's pass on the cluster, into `acc` (an objective.PrimalAccumulator): the same
    figures as acc.add over the file's blocks (adding zeros leaves a compensated sum unchanged)."""
    if acc.path == "-":                # the workers cannot read our standard input: one local pass
        acc.add_losses(*_partition_losses(acc.task, acc.w, acc.geometry, acc.C, "-", zero_based, None))
        return
    sent = worker_path(acc.path)
    spans = partitions(sent, acc.task.grouping, size=s.partition_bytes)
    futures = [s.client.submit(_partition_losses, acc.task, acc.w, acc.geometry, acc.C, sent,
                               zero_based, span, pure=False) for span in spans]
    with _named_as_given(acc.path, sent):
        for future in futures:             # file order
            losses, n = future.result()
            acc.add_losses(losses, n)
            future.release()


# -- predict ---------------------------------------------------------------------------------------

def _metric_rows(block):
    """The rows without their features: what a metric reads (targets, qids, costs, lines)."""
    empty = np.zeros(block.n_rows + 1, np.int64)
    return data.Block(empty, np.zeros(0, np.int64), np.zeros(0), block.target, block.qid,
                      block.cost, block.line, 0, 0)


def _partition_predictions(task, w, geometry, path, zero_based, span, scores):
    text, rows = [], []
    with _file_lines(path, span):
        for block in data.whole_examples(_read(path, zero_based, span), task.grouping, path):
            labels, values = task.predict(w, block, geometry, path)
            text.append(task.format_lines(values if scores else labels, scores))
            rows.append((labels, _metric_rows(block)))
    return "".join(text), rows


def predict(s: Session, task, w, geometry, path, zero_based, scores, out, metric) -> None:
    """predict's pass on the cluster: output lines written in file order."""
    sent = worker_path(path)
    if path == "-":                    # the workers cannot read our standard input: one local pass
        results = [_partition_predictions(task, w, geometry, path, zero_based, None, scores)]
    else:
        spans = partitions(sent, task.grouping, size=s.partition_bytes)
        results = [s.client.submit(_partition_predictions, task, w, geometry, sent, zero_based,
                                   span, scores, pure=False) for span in spans]
    with _named_as_given(path, sent):
        for future in results:
            text, rows = future.result() if hasattr(future, "result") else future
            out.write(text)
            for labels, block in rows:
                metric.add(labels, block)
            if hasattr(future, "release"):
                future.release()


# -- training: CoCoA+ ------------------------------------------------------------------------------
#
# The n-slack dual (DESIGN.md) with the examples split into K partitions, alpha = (a_1, ..., a_K),
# w = sum_k w_k, w_k = A_k a_k. Each round every partition k solves the CoCoA+ local subproblem
# with sigma' = K (Ma, Smith, Jaggi et al. 2015) for a step Delta_k of its block:
#
#     max_Delta  l_k . Delta - w . A_k Delta - sigma'/2 ||A_k Delta||^2,   0 <= a_k + Delta per group <= C
#
# In beta = sigma' (a_k + Delta) this is, up to a constant and the factor 1/sigma', the engine's
# own dual over partition k with bounds sigma' C and w started at w - sigma' w_k + A_k beta:
#
#     max_beta  l_k . beta - 1/2 ||A_k beta + (w - sigma' w_k)||^2,   0 <= beta per group <= sigma' C
#
# so the engine runs on the partition's cache hot-started at beta = sigma' a_k with its w shifted
# by w - sigma' w_k (DualCD.shift_w), for up to `local_epochs` epochs with shrinking: the local
# subproblem solved, not one or two passes of steps at it. Then, on the client, the steps are
# aggregated by an exact line search on the global dual along Delta = (Delta_1, ..., Delta_K):
#
#     D(alpha + t Delta) = -1/2 ||w + t dw||^2 + l . alpha + t l . Delta,   dw = sum_k A_k Delta_k
#     t* = (l . Delta - w . dw) / ||dw||^2,  clipped to [0, t_max]
#
# (t_max: the largest step that keeps every group inside its box, at most sigma'). t = 1 is
# CoCoA+'s "adding" aggregation, whose sum of local improvements bounds the global one from below
# (Lemma 3 with sigma' = gamma K), so the line search never does worse and the dual never
# decreases. It matters because sigma' = K is the worst case, partitions that duplicate each other:
# random halves of a real file are between that and orthogonal, where the best step is near K.
# Measured on kddcup99 binary [0, 1], 2 workers (bench/README.md, `dask`): 2 local epochs and
# t = 1 left a relative gap of 0.019 after 1,000 rounds; solved local problems and the line search
# reach 1e-3 in tens of rounds.
# The certificate is the exact gap of each round's w(alpha): D = -1/2 ||w||^2 + sum_k l_k . a_k and
# P summed as verify-bound does.

@record
class _Partition:
    block: object
    problem: object
    cache: object          # the listed constraints (engine.ConstraintCache)


def _load(path, zero_based, span):
    offset, length = span if span is not None else (0, None)
    block = data.load(path, zero_based=zero_based, offset=offset, length=length)
    data.check_training_rows(block, path, zero_based)    # as the local trainers check theirs
    _register_sizes()
    return block


def _label_rows(block, labelled):
    """n_rows, n_features, and the first row of each distinct target (what fixes a label set; for
    a task without labels, regression, just the first row)."""
    if not labelled:
        return block.n_rows, block.n_features, block.rows(0, min(1, block.n_rows))
    _values, first = np.unique(block.target, return_index=True)
    rows = data.concat_blocks([block.rows(int(i), int(i) + 1) for i in np.sort(first)])
    return block.n_rows, block.n_features, rows


def _setup(block, task, path, C, geometry):
    from svmtrain.engine import ConstraintCache
    problem = task.problem(block, path, C, geometry)
    listed = task.all_constraints(problem, block)
    if listed is None:
        return None
    return _Partition(block, problem, ConstraintCache.from_problem(problem, listed))


def _round_seed(seed: int, round_: int, k: int) -> int:
    """A distinct engine seed per partition and round (Dask would also merge identical tasks)."""
    return int(np.random.SeedSequence([seed, round_, k]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _local_round(part, state, w, task, geometry, C, path, sigma, seed, shrinking, local):
    """Price w on the partition (its positive losses, for P(w)), then solve its CoCoA+ local
    subproblem. state: (a_k, w_k), None at the start (a_k = 0). Returns (step, report): step =
    (a_k, w_k, Delta_k, A_k Delta_k) for `_take_step`, report = (losses, examples, A_k Delta_k,
    l_k . Delta_k, the largest feasible multiple of Delta_k)."""
    n_cons = part.cache.n_constraints
    alpha, w_k = state if state is not None else (np.zeros(n_cons), np.zeros(len(w)))
    losses, n = _partition_losses_block(task, w, geometry, C, path, part.block)
    cache = replace(part.cache, C_group=sigma * part.cache.C_group)
    engine = cache.engine(sigma * alpha, seed=seed, shrinking=shrinking)
    engine.shift_w(np.ascontiguousarray(w - sigma * w_k))
    local_epochs, local_violation = local
    for _ in range(local_epochs):
        _steps, violation, _active = engine.epoch()
        if violation <= local_violation:
            break
    engine.recompute_w()               # A_k beta, the offset dropped
    delta = _feasible(engine.alpha / sigma, part.cache) - alpha
    dw = engine.w / sigma - w_k
    step = (alpha, w_k, delta, dw)
    return step, (losses, n, dw, float(np.dot(part.cache.margin, delta)),
                  _max_step(alpha, delta, part.cache))


def _max_step(alpha, delta, cache):
    """The largest t with alpha + t delta inside the boxes: every a >= 0, every group sum <= C."""
    t = np.inf
    down = delta < 0
    if np.any(down):
        t = min(t, float(np.min(alpha[down] / -delta[down])))
    total = np.bincount(cache.group, weights=alpha, minlength=len(cache.C_group))
    rise = np.bincount(cache.group, weights=delta, minlength=len(cache.C_group))
    up = rise > 0
    if np.any(up):
        t = min(t, float(np.min((cache.C_group[up] - total[up]) / rise[up])))
    # alpha + delta is feasible by construction: a figure below 1 is a group at its bound by a
    # rounding (which would stall the run at t = 0); _take_step clips such roundings
    return max(t, 1.0)


def _take_step(part, step, t):
    """The partition's state after the round: (a_k + t Delta_k, w_k + t A_k Delta_k)."""
    alpha, w_k, delta, dw = step
    return _feasible(alpha + t * delta, part.cache), w_k + t * dw


def line_search(w, dw, l_delta, t_max):
    """The step t in [0, t_max] that maximises the dual along the aggregated direction:
    D(t) = -1/2 ||w + t dw||^2 + const + t l_delta, a concave quadratic."""
    curvature = float(np.dot(dw, dw))
    slope = l_delta - float(np.dot(w, dw))
    if curvature <= 0.0:
        return t_max if slope > 0 else 0.0
    return min(max(slope / curvature, 0.0), t_max)


def _feasible(alpha, cache):
    """beta / sigma' can exceed C by a rounding: scale such groups back into the box."""
    alpha = np.maximum(alpha, 0.0)
    total = np.bincount(cache.group, weights=alpha, minlength=len(cache.C_group))
    over = total > cache.C_group
    if np.any(over):
        factor = np.ones_like(total)
        factor[over] = cache.C_group[over] / total[over]
        alpha = alpha * factor[cache.group]
    return alpha


def _partition_losses_block(task, w, geometry, C, path, block):
    v = task.costs(block, C) * task.violations(w, block, path, geometry)
    return v[v > 0.0], len(v)


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


@record
class CocoaResult:
    w: np.ndarray
    dual: float
    primal: float
    relative_gap: float
    epochs: int            # rounds
    seconds: float
    converged: bool
    geometry: object
    examples: int
    rounds: int
    constraints: int
    partitions: int
    interrupted: bool = False
    #: why a run that stopped at max_epochs rounds is above epsilon, and what would get it there
    #: (empty when it converged)
    note: str = ""


def why_not_converged(records, epsilon, max_epochs, window=20):
    """The message for a CoCoA+ run stopped by max_epochs above epsilon: its gap, and the rate at
    which the gap shrank over the last `window` rounds, extrapolated to the rounds epsilon needs
    (CoCoA+ converges linearly on these smooth-enough problems, so the last rate is the best
    guess of the rest)."""
    import math
    last = records[-1]
    head = (f"relative gap {last.relative_gap:.3g} is above epsilon {epsilon:g} after "
            f"{last.epoch} CoCoA+ rounds (--max-epochs {max_epochs})")
    gaps = [r.relative_gap for r in records if math.isfinite(r.relative_gap) and r.relative_gap > 0]
    m = min(window, len(gaps) - 1)
    if m < 1:
        return f"{head}: too few rounds to measure its progress; give more --max-epochs"
    rate = (gaps[-1] / gaps[-1 - m]) ** (1.0 / m)
    if not rate < 1.0 - 1e-12:
        return (f"{head}: the gap did not shrink over the last {m} rounds (the partitions' local "
                f"steps cancel out); train without --workers / --scheduler, or with -m 1-slack")
    more = max(1, math.ceil(math.log(epsilon / gaps[-1]) / math.log(rate)))
    return (f"{head}: the gap shrank by {100 * (1 - rate):.2g}% a round over the last {m} rounds, "
            f"which needs about {more} more rounds: give --max-epochs {last.epoch + more} or more "
            f"(or -m 1-slack, whose rounds are one oracle pass each)")


def train_cocoa(s: Session, task_class, path, *, zero_based, options, C, bias, epsilon,
                max_epochs, seed, shrinking=True, on_epoch=None, partitions_count=None,
                local_epochs=LOCAL_EPOCHS, local_violation=LOCAL_VIOLATION):
    """n-slack training on the cluster (CoCoA+). Returns (task, CocoaResult).

    `local_epochs`: at most this many engine epochs on each partition per round (fewer when the
    local subproblem is solved: see LOCAL_EPOCHS)."""
    sent = worker_path(path)
    with _named_as_given(path, sent):
        return _train_cocoa(s, task_class, sent, zero_based=zero_based, options=options, C=C,
                            bias=bias, epsilon=epsilon, max_epochs=max_epochs, seed=seed,
                            shrinking=shrinking, on_epoch=on_epoch,
                            partitions_count=partitions_count,
                            local=(local_epochs, local_violation))


def _train_cocoa(s, task_class, path, *, zero_based, options, C, bias, epsilon, max_epochs, seed,
                 shrinking, on_epoch, partitions_count, local):
    import time
    from svmtrain import interrupt
    from svmtrain._linear import hinge_sum
    from svmtrain.engine import EpochRecord, relative_gap
    from svmtrain.tasks.base import Geometry

    started = time.perf_counter()
    if path == "-":
        raise NotListable("-: training on Dask reads the file on the workers, which cannot read "
                          "this standard input: give a file name (on a cluster, on a shared file "
                          "system)")
    client = s.client
    K = partitions_count or s.n_threads
    spans = partitions(path, "row", count=K)
    slots = _slots(client)
    blocks = [client.submit(_load, path, zero_based, span, pure=False,
                            workers=[slots[k % len(slots)]], allow_other_workers=True)
              for k, span in enumerate(spans)]
    labelled = task_class.name != "regression"
    infos = [client.submit(_label_rows, b, labelled, pure=False).result() for b in blocks]
    examples = sum(i[0] for i in infos)
    n_features = max(i[1] for i in infos)
    task = task_class.from_training_data(data.concat_blocks([i[2] for i in infos]), path, options)
    geometry = Geometry(n_features, bias)
    parts = [client.submit(_setup, b, task, path, C, geometry, pure=False, **where)
             for b, where in zip(blocks, _placements(client, blocks))]
    if any(client.submit(lambda p: p is None, p, pure=False).result() for p in parts):
        raise NotListable(f"{path}: n-slack on Dask (CoCoA+) needs constraints that can be listed "
                          f"(binary, regression, multiclass with few classes); this "
                          f"{task.name} problem needs cutting planes: train without --workers")
    K = len(parts)
    sigma = float(K)                   # sigma' = gamma K with gamma = 1
    n_w = task.n_weights(geometry)
    w = np.zeros(n_w)
    D, linear, states = 0.0, 0.0, [None] * K
    records = []
    converged = False
    P = rel = np.inf
    round_ = 0
    constraints = sum(client.submit(lambda p: p.cache.n_constraints, p, pure=False).result()
                      for p in parts)
    for round_ in range(1, max_epochs + 1):
        # w travels inside the tasks, not scattered: scattered data could not be recomputed
        # after a worker loss, a task's arguments can
        where = _placements(client, parts)
        outs = [client.submit(_local_round, parts[k], states[k], w, task, geometry, C, path,
                              sigma, _round_seed(seed, round_, k), shrinking, local,
                              pure=False, **where[k])
                for k in range(K)]
        steps = [client.submit(_first, o, pure=False, **where[k]) for k, o in enumerate(outs)]
        reports = [client.submit(_second, o, pure=False, **where[k]) for k, o in enumerate(outs)]
        acc = np.zeros(2)
        dw = np.zeros(n_w)
        l_delta, t_max = 0.0, sigma
        for r in reports:              # partition order: the sums do not depend on timing
            losses, _n, dw_k, l_delta_k, t_max_k = r.result()
            hinge_sum(np.ascontiguousarray(losses), acc)
            dw += dw_k
            l_delta += l_delta_k
            t_max = min(t_max, t_max_k)
        del outs, reports
        # the certificate of this round's w (alpha of the previous round)
        regularizer = objective.regularizer(w)      # (in index order, as every certificate)
        P = regularizer + float(acc[0] + acc[1])
        rel = relative_gap(P, D)
        record = EpochRecord(round_, time.perf_counter() - started, D, P, rel, True, constraints, 0.0)
        records.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if rel <= epsilon or interrupt.requested() or round_ == max_epochs:
            converged = rel <= epsilon
            break
        t = line_search(w, dw, l_delta, t_max)
        states = [client.submit(_take_step, parts[k], steps[k], t, pure=False, **where[k])
                  for k in range(K)]
        del steps
        w = w + t * dw
        linear += t * l_delta
        D = -objective.regularizer(w) + linear
    interrupted = interrupt.requested()
    note = "" if converged or interrupted else why_not_converged(records, epsilon, max_epochs)
    return task, CocoaResult(w, D, P, rel, round_, time.perf_counter() - started, converged,
                             geometry, examples, round_, constraints, K, interrupted=interrupted,
                             note=note)


# -- training: 1-slack -----------------------------------------------------------------------------
#
# The 1-slack loop (svmtrain.solvers.oneslack.train_oneslack) runs on the client: the working set of
# planes, its Gram matrix and the small QP. Its per-example work runs where the data is: the file is
# cut into one partition of whole examples per worker thread, each worker loads its byte range once
# and keeps the partition as a shard (rows, Problem, offender cache) in its memory for the whole run.
# Each iteration w goes to every worker once, every shard returns its part of the plane
# (oneslack's `_screened_oracle` / `_from_oracle` / `_from_cache`, the very functions the embedded
# run calls on its shards), and the client adds the parts in partition order: the model is bit for
# bit the same for a given number of partitions, whatever the timing.
#
# The per-iteration calls are not tasks: each shard is held by a Dask actor on its worker
# (`_ShardHost`), which the client calls directly, without the scheduler. A round of two tasks
# (submit, the scheduler, the workers, gather) took 20-28 ms on this machine (2 cores, shared)
# whatever the work, an actor call to both workers 6-7 ms (kddcup99 binary, 2 workers: its 29
# iterations, oracle passes included, 0.48 s against 0.6-0.77 s as rounds of tasks). The shards
# stay tasks' results, so a shard lost with its worker is rebuilt by Dask from its byte range on
# another worker (its task's lineage) and a new actor holds it; its offender cache and screening
# state then start empty, which changes which planes the run takes, not what it converges to or
# its certificate.

#: a lost worker's shards are rebuilt and the round repeated at most this many times in a row
HOST_REBUILDS = 3

_scratches = threading.local()   # per worker thread: the dense buffers a shard sums its plane into


def _scratch(n_w):
    from svmtrain.solvers.oneslack import _Scratch
    s = getattr(_scratches, "buffers", None)
    if s is None or len(s.dense) != n_w:
        s = _scratches.buffers = _Scratch(n_w)
    return s


def _shard_bytes(shard):
    # the problem's arrays are mostly the block's
    return _array_bytes(shard.block) + _array_bytes(shard.cache) + shard.age.nbytes


def _array_bytes(owner):
    return sum(v.nbytes for v in vars(owner).values() if isinstance(v, np.ndarray))


def _register_sizes():
    """Tell Dask what blocks and shards weigh (its default, sys.getsizeof, sees a few bytes), so that
    the scheduler runs their tasks where they are rather than moving them."""
    from dask.sizeof import sizeof
    from svmtrain.solvers.oneslack import _Shard
    sizeof.register(_Shard)(_shard_bytes)
    sizeof.register(data.Block)(_array_bytes)
    sizeof.register(_Partition)(_partition_bytes)


def _slots(client):
    """One worker address per worker thread, in a fixed order: partition k goes to slot k."""
    workers = sorted(client.scheduler_info()["workers"].items())
    return [addr for addr, info in workers for _ in range(max(1, info.get("nthreads", 1)))]


def _partition_bytes(part):
    return _array_bytes(part.block) + _array_bytes(part.cache)


def _placements(client, futures):
    """Per future, where the tasks that use it should run: on the worker that holds it (one
    scheduler query). Left to itself, the scheduler sometimes sent a task to another worker and
    moved the data there (1-slack on kddcup99 x30, 2 workers, when its rounds were tasks: 8.8 s
    transfers of a shard at random iterations, in 7 of 9 runs). The restriction is loose: a lost
    worker's data is rebuilt, and its tasks run, elsewhere."""
    holders = client.who_has(futures)
    return [{"workers": list(holders[f.key]), "allow_other_workers": True}
            if holders.get(f.key) else {} for f in futures]


def _open_shard(block, task, path, C, geometry, merge=True):
    """A partition's shard (on its worker): its Problem and an empty offender cache. Binary and
    multiclass train on the partition's distinct rows, identical ones merged with their costs
    summed (svmtrain.duplicates, as local 1-slack does: the same problem); the shard keeps the
    original rows' costs and classes, so that `_shard_losses` prices every original row in file
    order, as verify-bound does. kddcup99 binary's two halves have 2-3x fewer distinct rows."""
    from svmtrain.duplicates import merge_identical
    from svmtrain.solvers.oneslack import _Shard, _merges
    _register_sizes()
    merged = merge_identical(block) if merge and _merges(task) else None
    if merged is None:
        return _Shard(block, task.problem(block, path, C, geometry))
    shard = _Shard(merged.block, task.problem(merged.block, path, C, geometry))
    shard.original_costs, shard.inverse = task.costs(block, C), merged.inverse
    shard.original_cost = block.cost          # the file's cost: per row, for the sample start
    return shard


def _shard_sample(shard, k):
    """Every k-th row of the partition (of its original rows: identical rows as often as the
    file has them), each cost times k: the partition's part of the sample start's rows."""
    from svmtrain.solvers.oneslack import _every_kth
    inverse = getattr(shard, "inverse", None)
    if inverse is None:
        return _every_kth(shard.block, k)
    b, rows = shard.block, inverse[::k]
    return data.Block(*data.take_rows(b, rows), b.target[rows], b.qid[rows],
                      shard.original_cost[::k] * k, b.line[rows], b.n_features, 0)


def _trained_rows(shard):
    """(rows trained on, the partition's rows) of a shard."""
    inverse = getattr(shard, "inverse", None)
    return shard.block.n_rows, shard.block.n_rows if inverse is None else len(inverse)


def _with_scratch(shard, fn, n_w, *args):
    return fn(shard, _scratch(n_w), *args)


class _ShardHost:
    """A Dask actor on a shard's worker, holding the shard (the result of its `_open_shard` task):
    `call(fn, *args)` is fn(shard, *args) there, one direct request from the client. It runs in
    the worker's thread pool, the one its tasks run in: Dask runs an actor's methods in one
    thread per worker, which would take the calls of a worker's shards (one per thread) one at a
    time."""

    def __init__(self, shard):
        self.shard = shard

    async def call(self, fn, *args):
        import asyncio
        import functools
        from distributed import get_worker
        pool = get_worker().executors["default"]
        return await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(fn, self.shard, *args))


def _host_lost(e: BaseException) -> bool:
    """Whether an actor call failed because its worker went (not because of what it ran)."""
    if isinstance(e, OSError):        # the connection to the worker broke (CommClosedError)
        return True
    return isinstance(e, RuntimeError) and str(e).startswith("Worker holding Actor was lost")


def _shard_losses(shard, task, w, geometry, C, path):
    inverse = getattr(shard, "inverse", None)
    if inverse is None:
        return _partition_losses_block(task, w, geometry, C, path, shard.block)
    # each original row's loss from its distinct row's violation (the same value, bit for bit)
    v = shard.original_costs * task.violations(w, shard.block, path, geometry)[inverse]
    return v[v > 0.0], len(v)


def _qids(block):
    return np.unique(block.qid)


class DaskShards:
    """oneslack's shard executor on a cluster (the interface of oneslack.LocalShards): one shard per
    worker thread, kept in the workers' memory across iterations."""

    def __init__(self, s: Session, task_class, path, *, zero_based, options, C, bias,
                 partitions_count=None, merge_duplicates=True, sample_k=0):
        """`sample_k`: the stride of the sample start the run will ask for (`sample`), 0 for
        none: when the sample start applies, every shard's part of it is made as the shard opens
        and comes back with the shard's row counts, in the same round trip."""
        from svmtrain.solvers.oneslack import _samples
        from svmtrain.tasks.base import Geometry
        if path == "-":
            raise NotListable("-: training on Dask reads the file on the workers, which cannot "
                              "read this standard input: give a file name (on a cluster, on a "
                              "shared file system)")
        grouping = task_class.grouping
        if grouping == "whole":
            if task_class.name != "ranking":
                raise NotListable(f"{path}: the {task_class.name} task's examples may lie "
                                  f"anywhere in the file: 1-slack on Dask cannot cut it into "
                                  f"partitions; train without --workers / --scheduler")
            grouping = "consecutive"     # a query's lines must be one run: checked below
        client = self.client = s.client
        self.path, self.C = path, C
        slots = _slots(client)
        K = partitions_count or len(slots)
        spans = partitions(path, grouping, count=K)
        self.blocks = [client.submit(_load, path, zero_based, span, pure=False,
                                     workers=[slots[k % len(slots)]], allow_other_workers=True)
                       for k, span in enumerate(spans)]
        labelled = task_class.name not in ("regression", "ranking")
        infos = client.gather([client.submit(_label_rows, b, labelled, pure=False)
                               for b in self.blocks])
        if task_class.name == "ranking":
            self._check_queries_in_runs(path)
        n_features = max(i[1] for i in infos)
        self.task = task_class.from_training_data(data.concat_blocks([i[2] for i in infos]), path,
                                                  options)
        self.geometry = Geometry(n_features, bias)
        self.n_w = self.task.n_weights(self.geometry)
        self.nonneg = None
        self.shards = [client.submit(_open_shard, b, self.task, path, C, self.geometry,
                                     merge_duplicates, pure=False,
                                     workers=[slots[k % len(slots)]], allow_other_workers=True)
                       for k, b in enumerate(self.blocks)]
        # the shards' hosts (their actors); the rows trained on, when some partition merged
        # identical ones (else 0, as LocalShards); a data error raised opening a shard, named by
        # file and line, is raised here
        n_parts = len(self.shards)
        self._host_futures = [client.submit(_ShardHost, f, actor=True, pure=False,
                                            workers=[slots[k % len(slots)]],
                                            allow_other_workers=True)
                              for k, f in enumerate(self.shards)]
        asked = self._host_futures + [client.submit(_trained_rows, f, pure=False)
                                      for f in self.shards]
        self._sample = None
        if _samples(self.task, sum(i[0] for i in infos), sample_k):
            asked += [client.submit(_shard_sample, f, sample_k, pure=False) for f in self.shards]
        answers = client.gather(asked)
        self._hosts, rows = answers[:n_parts], answers[n_parts:2 * n_parts]
        if len(answers) > 2 * n_parts:
            self._sample = sample_k, data.concat_blocks(answers[2 * n_parts:])
        self.n_rows = sum(n for _, n in rows)
        trained = sum(n for n, _ in rows)
        self.distinct_examples = trained if trained != self.n_rows else 0
        # the shards hold the blocks; the scheduler keeps the load tasks to rebuild a lost shard
        for f in self.blocks:
            f.release()
        self.blocks = []

    def _check_queries_in_runs(self, path):
        seen = {}
        for k, q in enumerate(self.client.gather([self.client.submit(_qids, b, pure=False)
                                                  for b in self.blocks])):
            for qid in q.tolist():
                if qid in seen:
                    raise NotListable(f"{path}: query qid:{qid:g} has lines in two parts of the "
                                      f"file: 1-slack ranking on Dask needs each query's lines "
                                      f"together (sort the file by qid), or train without "
                                      f"--workers / --scheduler")
                seen[qid] = k

    pool, n_threads = None, 1      # nothing of the client's own is run in threads
    screens_itself = True          # each partition's screening policy runs on its worker

    @property
    def partitions(self):
        return len(self.shards)

    def __len__(self):
        return len(self.shards)

    def run(self, fn, args):
        """fn(shard, scratch, *args) on every shard where it lives. The results in partition
        order."""
        return self._call_hosts(_with_scratch, fn, self.n_w, *args)

    def _call_hosts(self, fn, *args):
        """fn(shard, *args) on every shard by its host, in parallel; the results in partition
        order. A host lost with its worker: every shard gets a new host (Dask rebuilds a lost
        shard first) and the round is repeated."""
        for attempt in range(HOST_REBUILDS + 1):
            try:
                calls = [host.call(fn, *args) for host in self._hosts]
                return [c.result() for c in calls]
            except Exception as e:
                if not _host_lost(e):
                    raise
                if attempt == HOST_REBUILDS:
                    raise ClusterError(f"the Dask cluster kept losing the workers of this run "
                                       f"({e})") from None
                self._rehost(e)
        raise AssertionError("unreachable")

    def _rehost(self, lost):
        """New hosts for the shards, placed by the scheduler where each shard is (or is rebuilt);
        ClusterError when the cluster cannot make them (its scheduler is gone)."""
        client = self.client
        for f in self._host_futures:
            f.release()
        try:
            self._host_futures = [client.submit(_ShardHost, f, actor=True, pure=False)
                                  for f in self.shards]
            self._hosts = client.gather(self._host_futures)
        except Exception as e:
            raise ClusterError(f"the Dask cluster lost the workers of this run ({lost}; "
                               f"{type(e).__name__}: {e})") from None

    def sample(self, k):
        """Every k-th row of each partition, costs times k, gathered here: the rows of the sample
        start (svmtrain.solvers.oneslack), which runs in this process; made as the shards
        opened when `sample_k` was k."""
        if self._sample is not None and self._sample[0] == k:
            sample, self._sample = self._sample[1], None
            return sample
        return data.concat_blocks(self._call_hosts(_shard_sample, k))

    def price(self, w):
        """P(w) and the number of examples, summed as verify-bound sums them (file order)."""
        from svmtrain.objective import PrimalAccumulator
        acc = PrimalAccumulator(self.task, w, self.geometry, self.C, self.path)
        for losses, n in self._call_hosts(_shard_losses, self.task, w, self.geometry, self.C,
                                          self.path):
            acc.add_losses(losses, n)
        return acc.value()

    def close(self):
        """Release the hosts and the shards (the workers drop them; the session closes the
        cluster)."""
        self._hosts = []
        for f in self._host_futures + self.shards + self.blocks:
            f.release()
        self._host_futures, self.shards, self.blocks = [], [], []


def cluster_failure(e: BaseException) -> bool:
    """Whether e is Dask giving up on the run's tasks (workers lost beyond its retries)."""
    try:
        from distributed import KilledWorker
        from distributed import client
    except ImportError:
        return False
    # one future cancelled, or several (gathering a round's futures after the cluster went; the
    # plural class is newer)
    cancelled = tuple(getattr(client, name) for name in ("FutureCancelledError",
                                                         "FuturesCancelledError")
                      if hasattr(client, name))
    return isinstance(e, (KilledWorker, ClusterError) + cancelled)


def train_oneslack(s: Session, task_class, path, *, zero_based, options, C, bias, start_state=None,
                   partitions_count=None, **solver_options):
    """1-slack training on the cluster. Returns (task, OneSlackResult, partitions).
    start_state(task, n_w): the working set to begin from (read_state); None without a warm
    start."""
    from svmtrain.solvers.oneslack import DEFAULT_SAMPLE_START, train_oneslack as oneslack
    sent = worker_path(path)
    with _named_as_given(path, sent):
        shards = DaskShards(s, task_class, sent, zero_based=zero_based, options=options, C=C,
                            bias=bias, partitions_count=partitions_count,
                            merge_duplicates=solver_options.get("merge_duplicates", True),
                            sample_k=0 if start_state is not None else solver_options.get(
                                "sample_start", DEFAULT_SAMPLE_START))
        if start_state is not None:
            solver_options["start"] = start_state(shards.task, shards.n_w)
        K = shards.partitions
        result = oneslack(shards.task, None, sent, C=C, bias=bias, shards=shards, **solver_options)
    return shards.task, result, K
