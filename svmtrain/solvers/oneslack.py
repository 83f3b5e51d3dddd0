"""The 1-slack mode: cutting planes over aggregated constraints (Joachims, Finley, Yu 2009, Alg. 3
margin / Alg. 4 slack rescaling, OP4/OP5 solved in the dual, with their caching and removal of
inactive planes).

The same primal as every mode (DESIGN.md), P(w) = 1/2 |w|^2 + sum_i C_i max(0, max_j (l_ij - w.x_ij)),
written with one slack xi shared by every choice of one constraint per example (j_i = 0 is "none",
x = 0, l = 0):

    min 1/2 |w|^2 + xi   s.t.   w . a(j) >= b(j) - xi  for all (j_1..j_n),   xi >= 0,
    a(j) = sum_i C_i x_{i j_i},   b(j) = sum_i C_i l_{i j_i}.

For a given w the tightest choice takes each example's worst offender when it is violated and
"none" otherwise, so xi = sum_i C_i max(0, H_i) and the optimum and the optimal w are those of the
n-slack problem (Joachims' Theorem 1; their OP4 writes C/n and 1/n where we fold C_i into the plane,
so C means the same in both modes). The dual over a working set of planes a_k, b_k is

    max -1/2 |sum_k beta_k a_k|^2 + sum_k beta_k b_k,   beta_k >= 0,   sum_k beta_k <= 1,

the engine's problem for one group of bound 1: D(beta) <= OPT <= P(w) for every w. Each iteration
asks the oracle at a query point q (below) and uses w(beta), the QP's solution:

    try the caches (tasks whose oracle is costly): every example's best of its f most recently
        used offenders at q; use that plane when its violation at w(beta), b - w(beta).a - xi_ws,
        proves the gap open (> epsilon * P_estimate) and is at least CACHE_FRACTION of the last
        oracle plane's (Joachims et al. sec. 4 test the whole plane against epsilon alone: at a
        relative 1e-3 that ran the cached labels' problem to convergence, 1000 iterations on
        pendigits without closing the gap)
    else the oracle on every example at q (this pass prices P(q) exactly; the best priced w so
        far is the model): stop when (P_best - D) / P_best <= epsilon; the plane of the worst
        offenders; update the caches
    add the plane when it is violated at w(beta) beyond the working set's slack xi_ws; extend the
        Gram matrix of the planes by one row; re-solve the small QP (pair steps,
        `svmtrain._oneslack.plane_qp`); drop planes whose beta has been 0 for `inactive` iterations

In-out query points (`in_out` = mu > 0, the default): the plain algorithm asks at q = w(beta),
which jumps far from the optimum while the working set is a poor model of the loss (at C = 1 the
1-slack iterations grow like C n / epsilon: a9a took 1352 to a gap of 2.1e-4). Following the
stabilisation of OCAS (Franc and Sonnenburg 2008, "Optimized cutting plane algorithm for SVMs":
a line search between the best w and w(beta), then the plane at a point between them), but with
no task-specific line search, q = w_best + s (w(beta) - w_best): s doubles (up to 1) when q priced
below P_best (q becomes w_best), and halves down to mu otherwise; when q's plane does not cut
w(beta), the next q is w(beta) itself, so the working set always grows by a plane the QP must
respect and the lower bound keeps rising as in the plain algorithm. The QP, its dual D and the
certificate are unchanged; the model is w_best, priced exactly. Measured (iterations to the same
gap, --in-out 0 against 0.1): a9a 1352 -> 176, pendigits /100 534 -> 149, cpusmall 148 -> 54,
ohsumed 369 -> 90, conll2000 (300 sentences) 226 -> 191.

Oracle screening (binary and multiclass; pyx/_oneslack.pyx, ScreenedOracle): at a reference point
r where every example was scored, each keeps a safe radius (its margin or its gap between the best
and second-best label, over |x_i|); at a query point q close enough to r (|q - r| against it, and
for multiclass a per-example bound over the row's own features) its decision provably stands, so
the certain violators are summed once into one vector (plane part s, loss b_s - q.s) and only the
other examples are scored: the same plane and loss up to rounding. A new reference point is taken
when a pass scored at least the average fraction of the passes since the last one, and in place
of a pass that a probe (every PROBE_STRIDE-th example, the pass's own tests) finds would score
PROBE_REFRESH or more of the examples: it costs what a reference pass costs (_ScreenPolicy: for
all shards together here; on Dask each partition decides for itself on its worker, in the same
call as its pass). Measured (examples scored at the oneslack-speed gaps): kddcup99 binary 71%,
a9a 69%, kddcup99 multiclass 59% of the full passes'; few in the early iterations, 8-25% late.

Sample start (`sample_start` = k, binary and multiclass): the early iterations, while the working
set models the loss poorly, jump far and score nearly every example (screening cannot skip them).
They are run instead on every k-th example with costs k C_i (sum_i C_i unchanged, so the sample's
objective estimates the whole one), to a loose gap; the whole problem then asks the oracle first
at the sample's w, which that pass prices exactly and makes the first best w. Only the point is
reused: a plane of the sample under costs k C_i is not a constraint of the whole problem (scaled
by 1/k it is, with every other example choosing "none", but that one is weak), so the working set
starts empty and the certificate is the whole problem's as before; after it the in-out step may
halve further (SAMPLE_IN_OUT). Measured (k = 10 with the screening probe, against the tree before
both, at the oneslack-speed gaps; iterations of the whole problem + the sample's, all examples
scored): kddcup99 multiclass 1/5 187 -> 123 + 151, 11.5M -> 5.1M; kddcup99 binary 60 -> 27 + 51,
23.0M -> 6.4M; a9a 176 -> 164 + 75, 3.8M -> 3.7M.

Identical examples (`merge_duplicates`, binary and multiclass, local training;
svmtrain.duplicates): rows with the same label and features are one loss term with their summed
cost, so the loop runs on the distinct rows (kddcup99 1/5: 35,285 of 98,804) and the final
pricing gives each original row its distinct row's violation, summed in file order as
verify-bound sums. The sample start samples the original rows, then merges (sampling the
distinct rows, whose summed costs are very uneven, measured no better).

More planes per oracle pass, tried in prototypes, measured no faster, so a pass adds one plane
(iterations of the whole problem at the oneslack-speed gaps, kddcup99 multiclass 1/5 / a9a /
kddcup99 binary, against 119 / 152 / 29):
- band planes: plane(tau) takes the worst offender of every example with H_i(q) > tau (valid for
  any tau; tau < 0 adds the near-violators, tau > 0 drops the weak violators), so that the QP can
  include margin examples in part. tau = +-0.2, +-0.5 or four bands, all added or only those
  violated at w(beta), on the sample too or not: 117-133 / 146-155 / 33-35. A band moves its
  examples together; the optimum needs each margin example's own fraction.
- a slack per shard (disaggregated cuts: each shard's part of the pass is a plane of its own
  group, the QP bounds each group's duals by 1; D stays a lower bound): 59 / 116 / 14 iterations,
  examples scored 4.70M / 3.26M / 6.83M -> 3.75M / 3.04M / 4.38M; but the QP over 3-5 times the
  planes takes 10-20 times the pair steps, and the multiclass passes took no less time for fewer
  examples scored (best of 3, shared machine, planes dropped after 5 idle QPs, which keeps the QP
  smallest: 0.59 / 0.19 / 0.32 s -> 0.93 / 0.47 / 0.26 s). One-slack planes mixing one shard's
  part of this pass with the rest of the last pass: 86 / 122 / 26 iterations, slower for the same
  reason.
- OCAS's exact line search between w_best and w(beta), then q = w_best + 0.05 (w(beta) - w_best):
  90 / 77 / 20 iterations, but the search needs the scores at w(beta), which screening cannot skip
  (a9a: every example; kddcup99 binary: 6.3M of the 9.4M).
Also tried and left out: a new reference point by recentering (the rows certain at q keep their
decision, their radius less the move's bound; only the others scored). The passes that ask for a
new reference are those the probe finds would score 70% or more, so the recentering scored 98.7k
of the 98.8k rows anyway (kddcup99 1/5 multiclass, 16 full passes -> 3, examples scored -6% at
-e 4.9e-3, +11% at 2e-3 from the weaker radii).

Planes are stored sparse (sorted columns and values), chosen by measurement: a sector plane
(105 classes x 55k features, n_w = 5.8M) has 0.38M-0.61M nonzeros (7-11%), a conll2000 plane
4-14% of w, so a sparse plane takes a fifth of a dense one's memory and a Gram row (a gather per
stored nonzero, against the new plane spread dense) a fraction of the time. The QP over the planes
costs little next to the oracle passes and the Gram rows (cpusmall: 6 ms per solve). The per-example
work (oracle, cache re-pricing, summing the plane) runs over shards of whole examples, cut at even
shares of the nonzeros (MIN_SHARD_NONZEROS each, at most MAX_SHARDS) independently of `threads`;
their partial planes are added in shard order. The other per-iteration work on w-sized arrays is
split over the threads so that each entry is computed by one thread in a fixed order: the Gram
row by runs of stored planes, the update of w (only the planes whose beta moved, w rebuilt from all
every 50 updates against rounding) by column ranges. So every thread count gives the same model
bit for bit. Binary has its own oracle-and-plane pass (`hinge_plane`: one scoring pass that sums
the plane as it goes).
"""

import queue
import time

import numpy as np

from svmtrain import interrupt, objective
from svmtrain._linear import term_dots
from svmtrain._oneslack import (ScreenedOracle, accumulate_plane, gram_row, hinge_plane, plane_qp,
                                row_violations, scatter_planes)
from svmtrain.data import Block, index_dtype, take_rows
from svmtrain.duplicates import merge_identical
from svmtrain.engine import EpochRecord, relative_gap
from svmtrain.records import record
from svmtrain.solvers.nslack import TrainResult
from svmtrain.tasks.base import Constraints, Geometry
from svmtrain.tasks.binary import Binary
from svmtrain.tasks.multiclass import Multiclass

#: per-example cache size (-f) and plane removal (the CLI's defaults: cli/oneslack_options.py);
#: bench/README.md, "1-slack", has the measurements behind them
DEFAULT_CACHE = 0         # no cache: with in-out query points it lost (docs/design/one-slack.md)
DEFAULT_INACTIVE = 50     # Joachims et al.: planes inactive in the last 50 QPs
#: the shards of the per-example loop: at most this many, each with at least this many nonzeros and
#: examples
MAX_SHARDS = 16
MIN_SHARD_NONZEROS = 100_000
MIN_SHARD_EXAMPLES = 64
#: a cached plane stands in for the oracle's while its violation is at least this fraction of the
#: last oracle plane's (and proves the gap open)
CACHE_FRACTION = 0.5
#: the QP over the planes is solved to a gap of QP_FRACTION * epsilon * P (it is small and cheap);
#: 0.5 against 0.2 (best of three, oneslack-speed targets): kddcup99 1/5 multiclass 0.72 -> 0.65 s,
#: 119 iterations (123); a9a 0.27 -> 0.22 s, 155 (164); 0.7 was slower on both
QP_FRACTION = 0.5
DEFAULT_IN_OUT = 0.1
#: a screened pass whose probe (every PROBE_STRIDE-th example) finds at least this fraction of
#: examples it cannot screen is made a reference pass instead
PROBE_STRIDE = 16
PROBE_REFRESH = 0.7
#: the sample start (--sample-start): every k-th example, solved to this relative gap (looser
#: measured no faster: the full problem's iterations from its w barely depend on it), when the
#: sample has at least SAMPLE_MIN_EXAMPLES examples
DEFAULT_SAMPLE_START = 10
SAMPLE_EPSILON = 0.05
SAMPLE_MIN_EXAMPLES = 2000
#: after a sample start the in-out step halves down to this fraction of --in-out (measured: the
#: examples the whole problem's passes scored at the oneslack-speed gaps, 1 -> 0.5: kddcup99
#: multiclass 1/5 4.67M -> 4.05M, kddcup99 binary 4.6M -> 4.3M, a9a 3.53M -> 3.43M, ijcnn1 2.47M
#: -> 2.25M)
SAMPLE_IN_OUT = 0.5
#: the screening radius is inflated by this factor so that rounding in the scores cannot turn a
#: certain example's decision
SCREEN_SLACK = 1e-9
#: with threads, the w-sized work (a Gram row, the update of w) is split over them only when w has
#: at least this many entries (below, a thread's share costs less than handing it over)
PARALLEL_MIN_WEIGHTS = 65536


@record
class PlaneRecord(EpochRecord):
    """A trace line of the 1-slack mode: `active` is the working-set size; primal is exact on
    oracle iterations, and 1/2|w|^2 + the cached plane's loss (a lower estimate) on cache hits."""

    oracle_passes: int = 0
    cache_hits: int = 0
    scored: int = 0          # the examples the oracle scored (not screened out) this iteration
    examples: int = 0        # the examples a pass is over (identical ones merged: the distinct)

    def trace_columns(self):
        return f"{self.oracle_passes} {self.cache_hits} {self.scored} {self.examples}"


@record
class OneSlackResult(TrainResult):
    oracle_passes: int = 0
    cache_hits: int = 0
    examples_scored: int = 0    # over all oracle passes (screening leaves the rest out)
    planes: object = None       # the working set (cols, vals, b, beta), which a 1-slack state keeps
    sample_iterations: int = 0  # iterations of the sample start (--sample-start), not in `rounds`
    distinct_examples: int = 0  # the examples trained on, identical ones merged (merge_duplicates)

    def schedule(self):
        sample = (f"{self.sample_iterations} iterations on the sample first, "
                  if self.sample_iterations else "")
        trained = self.distinct_examples or self.examples
        merged = (f"{trained} distinct examples trained on (identical ones merged), "
                  if trained != self.examples else "")
        return (f"{self.rounds} iterations ({self.oracle_passes} oracle passes = "
                f"{self.oracle_passes * trained} oracle calls, {self.cache_hits} cache hits), "
                f"{self.constraints} planes in the working set, {sample}{merged}")


class _Shard:
    """A run of whole examples: its rows as a block, its Problem and its cache of offenders."""

    def __init__(self, block, problem):
        self.block = block
        self.problem = problem
        self.cache = Constraints.empty()
        self.age = np.zeros(0, np.int64)      # the iteration each cached constraint was last used
        self.labels = None                    # binary, multiclass: (labels, K) for the passes, once
        self.screen = None                    # binary, multiclass: a ScreenedOracle, once
        self.policy = None                    # its own _ScreenPolicy (Dask), once

    def __getstate__(self):
        # a shard moved to another worker (Dask) leaves its screening state and policy behind:
        # its next pass scores every example (and, with a policy of its own, is a reference pass)
        state = self.__dict__.copy()
        state["screen"] = state["policy"] = None
        return state


class _Scratch:
    """Dense buffers to sum a plane into, one per thread (handed out through a queue)."""

    def __init__(self, n_w):
        self.dense = np.zeros(n_w)
        self.mark = np.zeros(n_w, np.uint8)
        self.touched = np.empty(n_w, np.int64)

    def hinge(self, problem, y, w):
        """The binary task's plane part in one pass (hinge_plane): (loss, cols, vals, b)."""
        count, loss, b = hinge_plane(problem.indptr, problem.indices, problem.data, problem.n_cols,
                                     y, problem.C, w, 0.0 if problem.bias is None else float(problem.bias),
                                     problem.bias is not None, self.dense, self.mark, self.touched)
        cols = np.sort(self.touched[:count])
        vals = self.dense[cols]
        self.dense[cols] = 0.0
        self.mark[cols] = 0
        keep = vals != 0.0
        return loss, cols[keep], vals[keep], b

    def screened(self, oracle, w, ref, rho, feature_move=None):
        """The plane of a shard with oracle screening (oracle: its ScreenedOracle): (loss, cols,
        vals, b, scored). rho < 0: w becomes the reference point number `ref` (every example
        scored); a state whose reference is not `ref` (a shard rebuilt on another worker) scores
        every example and keeps no reference until the next one."""
        refresh = rho < 0 or oracle.ref != ref
        if refresh:
            oracle.ref = ref if rho < 0 else None
        count, loss, b, scored = oracle.plane(w, refresh, max(rho, 0.0), feature_move, self.dense,
                                              self.mark, self.touched)
        cols, vals = self._take(count)
        return loss, cols, vals, b, scored

    def plane(self, problem, cons, weight):
        """sum_c weight_c x_c as (sorted columns, values); leaves the buffers zero again."""
        count = accumulate_plane(problem.indptr, problem.indices, problem.data, problem.n_cols,
                                 cons.tptr, cons.term_row, cons.term_scale, cons.term_offset,
                                 cons.term_bias, np.ascontiguousarray(weight, dtype=np.float64),
                                 0.0 if problem.bias is None else float(problem.bias),
                                 problem.bias is not None, problem.stride, self.dense, self.mark,
                                 self.touched)
        return self._take(count)

    def _take(self, count):
        """The `count` touched columns' sums as (sorted columns, non-zero values); buffers zeroed.
        The columns are int32 when w's length allows (the working set's planes are its largest
        arrays: UD English EWT's 226 planes held 466 MB with int64 columns)."""
        cols = np.sort(self.touched[:count])
        vals = self.dense[cols]
        self.dense[cols] = 0.0
        self.mark[cols] = 0
        keep = vals != 0.0
        return cols[keep].astype(index_dtype(len(self.dense))), vals[keep]

    def total(self, parts):
        """The sum of sparse (cols, vals) parts, added in list order, as (sorted columns, values)."""
        count = scatter_planes(self.dense, self.mark, self.touched, 0, [p[0] for p in parts],
                               [p[1] for p in parts], [1.0] * len(parts))
        return self._take(count)


def _gradients(problem, cons, w):
    """l_c - w . x_c for constraints given as terms."""
    return cons.margin - term_dots(problem.indptr, problem.indices, problem.data, problem.n_cols,
                                   cons.tptr, cons.term_row, cons.term_scale, cons.term_offset,
                                   cons.term_bias, w, 0.0 if problem.bias is None else problem.bias,
                                   problem.bias is not None, problem.stride)


def _best_per_example(g, group):
    """Index of the largest g of every group present (the first on ties), in group order."""
    order = np.lexsort((np.arange(len(g)), -g, group))
    sorted_group = group[order]
    first = np.ones(len(order), bool)
    first[1:] = sorted_group[1:] != sorted_group[:-1]
    return order[first]


def _shard_bounds(block, grouping, n_examples):
    """Row bounds of the shards, cut between whole examples at even shares of the nonzeros (the
    work of every oracle and plane is about proportional to them); depends only on the data."""
    nnz = int(block.indptr[-1])
    n_shards = min(MAX_SHARDS, n_examples // MIN_SHARD_EXAMPLES, nnz // MIN_SHARD_NONZEROS)
    if grouping == "whole" or n_shards < 2:
        return [(0, block.n_rows)]
    if grouping == "row":
        starts = np.arange(block.n_rows)
    else:   # "consecutive": an example is a run of rows with one qid
        starts = np.concatenate(([0], np.flatnonzero(block.qid[1:] != block.qid[:-1]) + 1))
    # the example start whose nonzeros before it are nearest below each share
    before = block.indptr[starts]
    cuts = starts[np.searchsorted(before, (np.arange(1, n_shards) * nnz) // n_shards, side="right") - 1]
    edges = [0] + sorted(set(int(c) for c in cuts) - {0}) + [block.n_rows]
    return list(zip(edges[:-1], edges[1:]))


class _WorkingSet:
    """The planes (sparse), their offsets b, Gram matrix G, duals beta and idle counters."""

    #: w is kept up to date by adding (beta - beta_sum)_k a_k for the planes whose beta moved; it is
    #: rebuilt from all planes this often, so that rounding does not accumulate
    REBUILD_EVERY = 50

    def __init__(self, n_w, pool=None, n_threads=1):
        self.cols, self.vals = [], []
        self.b = np.zeros(0)
        self.G = np.zeros((0, 0))
        self.beta = np.zeros(0)
        self.idle = np.zeros(0, np.int64)
        self.scratch = np.zeros(n_w)
        self.pool, self.n_threads = pool, n_threads
        self._sum = np.zeros(n_w)
        self._beta_sum = np.zeros(0)        # the beta that _sum is the sum of
        self._updates = 0

    @property
    def size(self):
        return len(self.cols)

    def add(self, cols, vals, b):
        self.scratch[cols] = vals
        m = self.size
        if self.pool is None or m < 2 * self.n_threads:
            dots = gram_row(self.scratch, self.cols, self.vals)
        else:
            # the stored planes in one run per thread (each dot is one thread's: the same sums)
            cuts = [m * t // self.n_threads for t in range(self.n_threads + 1)]
            dots = np.concatenate(list(self.pool.map(
                lambda ab: gram_row(self.scratch, self.cols[ab[0]:ab[1]], self.vals[ab[0]:ab[1]]),
                zip(cuts[:-1], cuts[1:]))))
        row = np.append(dots, float(np.dot(vals, vals)))
        self.scratch[cols] = 0.0
        m = self.size
        G = np.empty((m + 1, m + 1))
        G[:m, :m] = self.G
        G[m, :] = row
        G[:, m] = row
        self.G = G
        self.cols.append(cols)
        self.vals.append(vals)
        self.b = np.append(self.b, b)
        self.beta = np.append(self.beta, 0.0)
        self._beta_sum = np.append(self._beta_sum, 0.0)
        self.idle = np.append(self.idle, 0)

    def sqnorm(self):
        """|w(beta)|^2 = beta' G beta."""
        return float(self.beta @ self.G @ self.beta) if self.size else 0.0

    def slack(self):
        """xi_ws = max(0, max_k b_k - w . a_k) at w(beta), from the Gram matrix."""
        if not self.size:
            return 0.0
        return max(0.0, float(np.max(self.b - self.G @ self.beta)))

    def solve(self, tol, max_steps):
        steps, gap = plane_qp(self.G, self.b, self.beta, 1.0, tol, max_steps)
        self.idle = np.where(self.beta > 0, 0, self.idle + 1)
        return steps

    def drop_idle(self, inactive):
        if inactive <= 0:
            return
        keep = self.idle < inactive
        if np.all(keep):
            return
        self._sync()       # a dropped plane may still be part of _sum
        idx = np.flatnonzero(keep)
        self.cols = [self.cols[k] for k in idx]
        self.vals = [self.vals[k] for k in idx]
        self.b, self.beta, self.idle = self.b[idx], self.beta[idx], self.idle[idx]
        self._beta_sum = self._beta_sum[idx]
        self.G = np.ascontiguousarray(self.G[np.ix_(idx, idx)])

    def _sync(self):
        """_sum = sum_k beta_k a_k: from the planes whose beta moved, or rebuilt now and then."""
        self._updates += 1
        if self._updates % self.REBUILD_EVERY == 0:
            self._sum[:] = 0.0
            moved = self.beta
        else:
            moved = self.beta - self._beta_sum
        coefs = moved.tolist()
        no_mark, no_touched = np.zeros(0, np.uint8), np.zeros(0, np.int64)
        n = len(self._sum)
        if self.pool is None:
            scatter_planes(self._sum, no_mark, no_touched, 0, self.cols, self.vals, coefs)
        else:
            # one column range per thread (every entry sums its planes in the same order)
            cuts = [n * t // self.n_threads for t in range(self.n_threads + 1)]
            list(self.pool.map(lambda ab: scatter_planes(self._sum, no_mark, no_touched, 0, self.cols,
                                                         self.vals, coefs, ab[0], ab[1]),
                               zip(cuts[:-1], cuts[1:])))
        self._beta_sum = self.beta.copy()

    def w(self, n_w):
        """w(beta): the working set's own array, updated in place by the next call (copy to keep)."""
        self._sync()
        return self._sum


class _ClippedWorkingSet(_WorkingSet):
    """The working set under --nonneg: w = max(v, 0) on the constrained columns, v = sum beta_k a_k
    (Ramanan sec. 5), so D(beta) = b.beta - 1/2 |w|^2 is no longer beta' G beta. The QP over the
    planes is then the engine's own problem: the planes are the rows of a CSR store, each plane one
    constraint of a single group with C = 1 (sum beta <= 1), and the engine keeps w clipped and its
    dual exact. |w|^2 and the slack come from that w."""

    def __init__(self, n_w, nonneg):
        super().__init__(n_w)
        self.nonneg = nonneg
        self._w = np.zeros(n_w)

    def sqnorm(self):
        return float(np.dot(self._w, self._w))

    def slack(self):
        if not self.size:
            return 0.0
        dots = np.array([float(np.dot(self._w[c], v)) for c, v in zip(self.cols, self.vals)])
        return max(0.0, float(np.max(self.b - dots)))

    def solve(self, tol, max_steps):
        from svmtrain.engine import ConstraintCache, solve
        m = self.size
        indptr = np.zeros(m + 1, np.int64)
        indptr[1:] = np.cumsum([len(c) for c in self.cols])
        planes = ConstraintCache(
            indptr=indptr, indices=np.concatenate(self.cols).astype(np.int64),
            data=np.concatenate(self.vals), n_cols=len(self._w),
            tptr=np.arange(m + 1, dtype=np.int64), term_row=np.arange(m, dtype=np.int64),
            term_scale=np.ones(m), term_offset=np.zeros(m, np.int64), term_bias=np.zeros(m, bool),
            margin=self.b, group=np.zeros(m, np.int64), C_group=np.ones(1), n_w=len(self._w),
            nonneg=self.nonneg)
        # the engine stops on the relative gap of the planes' problem; tol is absolute
        scale = max(0.5 * self.sqnorm() + self.slack(), 1e-300)
        sol = solve(planes, epsilon=min(0.1, max(tol / scale, 1e-12)),
                    max_epochs=max(1, min(max_steps, 10_000)), seed=m, alpha=self.beta.copy(),
                    shrinking=False)
        self.beta = sol.alpha
        self._w = sol.w
        self.idle = np.where(self.beta > 0, 0, self.idle + 1)
        return sol.epochs

    def drop_idle(self, inactive):
        super().drop_idle(inactive)      # the dropped planes have beta 0: w is unchanged

    def _sync(self):
        pass                             # the engine keeps w

    def w(self, n_w):
        return self._w.copy()


class LocalShards:
    """The embedded shard executor: shards of the loaded block run by a pool of `threads` threads.
    An executor holds the per-example state (rows, Problem, offender caches) and offers
    `run(fn, args)`: fn(shard, scratch, *args) over every shard, the results in shard order;
    `price(w)`: P(w) as verify-bound computes it; `close()`; `len()`, the number of parts; `pool` and
    `n_threads` (None and 1 when the work is elsewhere). svmtrain.distributed has the Dask one.
    `merged` (svmtrain.duplicates.MergedRows): `block` is its distinct rows, and `price` sums the
    loss over the original rows."""

    def __init__(self, task, block, path, C, geometry, threads=1, merged=None):
        self.task, self.block, self.path, self.C, self.geometry = task, block, path, C, geometry
        self.merged = merged
        self.distinct_examples = 0 if merged is None else merged.block.n_rows   # 0: none merged
        whole = task.problem(block, path, C, geometry)
        self.n_w = whole.n_w
        self.nonneg = getattr(whole, "nonneg", None)
        bounds = ([(0, block.n_rows)] if task.aggregates_offenders
                  else _shard_bounds(block, task.grouping, whole.n_examples))
        if len(bounds) == 1:
            self.shards = [_Shard(block, whole)]
        else:
            self.shards = [_Shard(sub, task.problem(sub, path, C, geometry))
                           for sub in (block.rows(a, b) for a, b in bounds)]
        self.n_threads = n_threads = max(1, min(threads, len(self.shards)))
        self.pool = None
        if n_threads > 1:
            # imported here: concurrent.futures brings logging and threading's queue (2 ms of a
            # one-thread run's start)
            from concurrent.futures import ThreadPoolExecutor
            self.pool = ThreadPoolExecutor(n_threads)
        self.scratches = queue.SimpleQueue()
        for _ in range(n_threads):
            self.scratches.put(_Scratch(self.n_w))

    def __len__(self):
        """The number of parts `run` returns."""
        return len(self.shards)

    def run(self, fn, args):
        """fn over the shards, in parallel when asked; results in shard order."""
        if self.pool is None:
            return self.run_here(fn, args)
        def with_scratch(shard):
            s = self.scratches.get()
            try:
                return fn(shard, s, *args)
            finally:
                self.scratches.put(s)
        return list(self.pool.map(with_scratch, self.shards))

    def run_here(self, fn, args):
        """`run` in this thread: for work too small to pay a thread hand-off per shard (the same
        results: each shard's call is the same whichever thread makes it)."""
        scratch = self.scratches.get()
        try:
            return [fn(shard, scratch, *args) for shard in self.shards]
        finally:
            self.scratches.put(scratch)

    def price(self, w):
        """P(w) with verify-bound's sum (objective.PrimalAccumulator: C_i max(0, H_i) in file order),
        bit for bit: H_i from one Cython pass over the trained rows (binary, multiclass; the
        tasks' own `violations` otherwise), each original row taking its distinct row's."""
        if self.merged is None and not _screens(self.task):
            return objective.primal(self.task, w, self.geometry, self.C, [self.block], self.path)
        if _screens(self.task):
            w = np.ascontiguousarray(w, dtype=np.float64)
            H = np.concatenate(self.run(_violations, (self.task, w)))
        else:
            H = self.task.violations(w, self.block, self.path, self.geometry)
        acc = objective.PrimalAccumulator(self.task, w, self.geometry, self.C, self.path)
        if self.merged is None:
            acc.add_losses(self.task.costs(self.block, self.C) * H, len(H))
        else:
            original = self.merged.original
            acc.add_losses(self.merged.losses(H, self.task.costs(original, self.C)),
                           original.n_rows)
        return acc.value()

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()


def train_oneslack(task, block, path, *, C, bias, epsilon, max_epochs, seed, shrinking=True,
                   on_epoch=None, cache_size=DEFAULT_CACHE, qp_every=1,
                   inactive=DEFAULT_INACTIVE, threads=1, start=None, in_out=DEFAULT_IN_OUT,
                   shards=None, screen=True, sample_start=DEFAULT_SAMPLE_START,
                   merge_duplicates=True):
    """At most `max_epochs` iterations (each adds at most one plane). `seed` and `shrinking` do not
    apply (the QP's steps are deterministic, over a handful of planes). `start`: a working set
    (read_state) to begin from. `shards`: the executor of the per-example work (LocalShards over
    `block` when None; svmtrain.distributed.DaskShards keeps it on a cluster, block None).
    `screen`: oracle screening for binary and multiclass (the same planes up to rounding).
    `sample_start` = k > 1: the first query point is the w of this problem on every k-th example
    (costs k C_i, to a gap of SAMPLE_EPSILON; _sample_start), where the task and data allow it.
    `merge_duplicates`: binary and multiclass train on their distinct rows, identical ones merged
    with their costs summed (svmtrain.duplicates: the same problem); the sample start takes every
    k-th row of `block`, then merges its identical rows."""
    started = time.perf_counter()
    sample = merged = None
    if shards is None:
        geometry = Geometry(block.n_features, bias)
        sample = _sample_start(task, block, path, C, geometry, threads, sample_start, epsilon,
                               max_epochs, start, in_out, screen, merge_duplicates)
        if merge_duplicates and _merges(task):
            merged = merge_identical(block)
            block = block if merged is None else merged.block
        shards = LocalShards(task, block, path, C, geometry, threads, merged)
    elif hasattr(shards, "sample"):
        # an executor elsewhere (Dask) sends every k-th row of its partitions here
        sample = _sample_start(task, shards, path, C, shards.geometry, threads, sample_start,
                               epsilon, max_epochs, start, in_out, screen, merge_duplicates)
    geometry = shards.geometry
    n_w = shards.n_w
    aggregated = task.aggregates_offenders
    use_cache = task.cache_offenders and cache_size > 0 and not aggregated
    run = shards.run
    # work too small to pay a thread hand-off per shard (the probes: every PROBE_STRIDE-th
    # example's test) runs in this thread where the executor allows
    run_here = getattr(shards, "run_here", run)

    def reduce(parts):
        """(loss, cols, vals, b) of the whole plane from the shards' parts, added in shard order."""
        if len(parts) == 1:
            return parts[0][:4]
        loss = b = 0.0
        for part_loss, _cols, _vals, part_b, *_scored in parts:
            loss += part_loss
            b += part_b
        cols, vals = summing.total([(p[1], p[2]) for p in parts])
        return loss, cols, vals, b

    nonneg = shards.nonneg
    ws = (_ClippedWorkingSet(n_w, nonneg) if nonneg is not None and np.any(nonneg)
          else _WorkingSet(n_w, shards.pool if n_w >= PARALLEL_MIN_WEIGHTS else None,
                           shards.n_threads))
    summing = _Scratch(n_w) if len(shards) > 1 else None    # reduce's own buffers
    w = np.zeros(n_w)
    D = 0.0
    if start is not None:
        _restore(ws, start, n_w, C)
        ws.solve(1e-12, 10_000_000)
        w = ws.w(n_w)
        D = float(np.dot(ws.b, ws.beta)) - 0.5 * ws.sqnorm()
    P = rel = np.inf
    converged = False
    records = []
    passes = hits = 0
    qp_fraction = QP_FRACTION
    oracle_violation = 0.0
    iteration = 0
    # the in-out query point (module docstring): the best priced w so far and the step toward the
    # QP's w; step 1 (no best yet, or in_out off) is the plain cutting-plane algorithm
    # (w is the working set's own array, updated in place by each solve: best_w and the query
    # point have buffers of their own, swapped rather than copied where possible)
    best_w, best_P, best_loss, step = None, np.inf, 0.0, 1.0
    query_buffer = None
    # oracle screening (pyx/_oneslack.pyx): the reference points, here for every shard at once,
    # or each partition's own where the executor screens on its workers (Dask: no probe round
    # trip; _ScreenPolicy)
    screening = screen and _screens(task)
    screens_itself = screening and getattr(shards, "screens_itself", False)
    policy = _ScreenPolicy(task) if screening and not screens_itself else None
    scored_total, n_examples = 0, None      # n: what the first oracle pass scores (all)
    floor = in_out          # the smallest step
    if sample is not None:
        scored_total = sample.examples_scored
        # the sample's w is near the optimum: the stability center deserves more trust
        floor = in_out * SAMPLE_IN_OUT
    try:
        for iteration in range(1, max_epochs + 1):
            wsq = ws.sqnorm()     # |w|^2 from the Gram matrix: no pass over w
            xi_ws = ws.slack()
            if iteration == 1 and sample is not None:
                # the sample's w: priced exactly by this pass, it becomes the first best w
                query = query_buffer = sample.w.copy()
                qsq = float(np.dot(query, query))
            elif best_w is None or step >= 1.0:
                query, qsq = w, wsq
            else:
                if query_buffer is None:
                    query_buffer = np.empty(n_w)
                query = np.subtract(w, best_w, out=query_buffer)
                query *= step
                query += best_w
                qsq = float(np.dot(query, query))
            exact = False
            plane = None
            if use_cache and passes:
                loss, cols, vals, b = reduce(run(_from_cache, (query, iteration)))
                estimate = 0.5 * qsq + loss
                violation = b - float(np.dot(vals, w[cols])) - xi_ws
                if violation > max(epsilon * estimate, CACHE_FRACTION * oracle_violation):
                    plane, hits = (cols, vals, b), hits + 1
                    P_shown = estimate
            if plane is None:
                screen_args = None
                if policy is not None:
                    screen_args = policy.arguments(query, lambda args: [
                        sum(counts) for counts in zip(*run_here(_probe, args))])
                # (the arrays as arguments of their own: a Dask executor sends them with its calls)
                if screens_itself:
                    parts = run(_screened_oracle, (task, query, iteration, use_cache, cache_size))
                else:
                    parts = run(_from_oracle, (task, query, iteration, use_cache, cache_size,
                                               *(screen_args or ())))
                loss, cols, vals, b = reduce(parts)
                scored = sum(int(p[4]) for p in parts)
                scored_total += scored
                n_examples = scored if n_examples is None else n_examples
                if screen_args is not None:
                    policy.passed(screen_args, scored)
                passes += 1
                exact = True
                P_query = 0.5 * qsq + loss
                violation = b - float(np.dot(vals, w[cols])) - xi_ws
                oracle_violation = violation
                if in_out > 0:
                    if P_query < best_P:
                        if best_w is not None and query is not w:
                            step = min(1.0, 2.0 * step)
                        if query is query_buffer:
                            best_w, query_buffer = query_buffer, best_w
                        else:
                            best_w = query.copy()
                        best_P, best_loss = P_query, loss
                    else:
                        step = max(floor, 0.5 * step)
                    P = best_P
                else:
                    best_w, best_loss, P = query, loss, P_query
                P_shown = P
                rel = relative_gap(P, D)
            record = PlaneRecord(iteration, time.perf_counter() - started, D, P_shown,
                                 relative_gap(P_shown, D), exact, ws.size, 0.0,
                                 oracle_passes=passes, cache_hits=hits,
                                 scored=scored if exact else 0, examples=n_examples or 0)
            records.append(record)
            if on_epoch is not None:
                on_epoch(record)
            if exact and rel <= epsilon:
                # confirm with the certificate's own arithmetic (|w|^2 from w itself)
                D = objective.dual(w, ws.b, ws.beta)
                P = 0.5 * float(np.dot(best_w, best_w)) + best_loss
                rel = relative_gap(P, D)
                converged = rel <= epsilon
            if converged or (exact and iteration == max_epochs) or interrupt.requested():
                break
            if violation > 1e-12 * max(1.0, abs(b)) and len(cols):
                ws.add(cols, vals, b)
            elif exact:
                if query is not w:
                    step = 1.0      # the in-out point's plane does not cut the QP's w: query it
                else:
                    # nothing is violated beyond the working set: only the QP's accuracy keeps the
                    # gap open; solve it tighter (give up where rounding rules)
                    qp_fraction /= 10
                    if qp_fraction < 1e-10:
                        break
            full = qp_every <= 1 or iteration % qp_every == 0
            ws.solve(qp_fraction * epsilon * max(P if np.isfinite(P) else 0.0, 0.5 * wsq + xi_ws),
                     10_000_000 if full else max(ws.size, 1))
            ws.drop_idle(inactive)
            w = ws.w(n_w)
            D = float(np.dot(ws.b, ws.beta)) - 0.5 * ws.sqnorm()
        # the certificate of the final w: P from the task's own pass (the code verify-bound
        # runs), D with the same |w|^2
        D = objective.dual(w, ws.b, ws.beta)
        if in_out > 0 and best_w is not None:
            w = best_w      # the model is the best priced point; D stays the QP's
        priced = shards.price(w)
    except Exception as e:
        # a failed executor (a cluster lost): the working set so far, for a state file
        e.planes, e.n_w = (ws.cols, ws.vals, ws.b.copy(), ws.beta.copy()), n_w
        raise
    finally:
        shards.close()
    P = priced.primal
    return OneSlackResult(w, ws.beta.copy(), D, P, relative_gap(P, D), iteration,
                          time.perf_counter() - started, converged, geometry, priced.examples,
                          rounds=iteration, constraints=ws.size, records=records,
                          planes=(ws.cols, ws.vals, ws.b.copy(), ws.beta.copy()),
                          oracle_passes=passes, cache_hits=hits, examples_scored=scored_total,
                          sample_iterations=0 if sample is None else sample.rounds,
                          distinct_examples=shards.distinct_examples,
                          interrupted=interrupt.requested())


def _every_kth(block, k):
    """Rows 0, k, 2k, ... of a block as a block of their own, each row's cost times k (so that
    sum_i C_i, the scale of the loss, stays that of the whole block)."""
    rows = np.arange(0, block.n_rows, k)
    return Block(*take_rows(block, rows), block.target[rows], block.qid[rows],
                 block.cost[rows] * k, block.line[rows], block.n_features, 0)


def _sample_start(task, block, path, C, geometry, threads, k, epsilon, max_epochs, start, in_out,
                  screen, merge_duplicates):
    """The sample start (module docstring): the 1-slack result on every k-th example with costs
    k C_i, solved to a gap of max(epsilon, SAMPLE_EPSILON) and itself started from every k-th of
    its examples where they are enough (kddcup99 multiclass, 494k rows, -e 1e-3: 186 -> 130
    iterations on the sample, 33.5M -> 30.9M examples scored in all), or None where it does not
    apply: k < 2,
    a warm start (its planes are the start), examples of several rows (ranking, sequence), tasks
    without oracle screening (measured on binary and multiclass only), or fewer than
    SAMPLE_MIN_EXAMPLES examples in the sample."""
    if start is not None or not _samples(task, block.n_rows, k):
        return None
    # `block`: the rows, or an executor whose partitions are elsewhere (Dask) and which sends
    # every k-th row of each (`sample`): the same rows when there is one partition
    sample = _every_kth(block, k) if isinstance(block, Block) else block.sample(k)
    return train_oneslack(task, sample, path, C=C, bias=geometry.bias,
                          epsilon=max(epsilon, SAMPLE_EPSILON), max_epochs=max_epochs, seed=0,
                          threads=threads, in_out=in_out, screen=screen, sample_start=k,
                          merge_duplicates=merge_duplicates)


def _samples(task, n_rows, k):
    """Whether a run without a warm start begins with the sample start (_sample_start) on
    `n_rows` rows with stride k."""
    return k >= 2 and task.grouping == "row" and _screens(task) and n_rows // k >= SAMPLE_MIN_EXAMPLES


def _from_oracle(shard, scratch, task, w, iteration, use_cache, cache_size, ref=None, rho=None,
                 *move):
    """The shard's part of the oracle plane: (loss, cols, vals, b, examples scored); updates its
    cache. Oracle screening (binary, multiclass) with `ref`, the reference point's number: rho < 0,
    w is the new reference point; else the bounds of _screen_bounds (rho, and the multiclass
    tests' arrays d, U, L, R in `move`)."""
    problem, block = shard.problem, shard.block
    n = problem.n_examples
    # screening keeps two dense n_w buffers per shard and sweeps them once per plane: only where
    # that costs less than a pass over the shard's rows
    if ref is not None and _screens(task) and len(w) <= int(problem.indptr[-1]):
        if shard.screen is None:
            labels, K = _labels(shard, task)
            shard.screen = ScreenedOracle(problem.indptr, problem.indices, problem.data,
                                          problem.n_cols, len(w), labels, problem.C,
                                          0.0 if problem.bias is None else float(problem.bias),
                                          problem.bias is not None, K)
        return scratch.screened(shard.screen, np.ascontiguousarray(w, dtype=np.float64), ref, rho,
                                move or None)
    if type(task) is Binary:
        # one scoring pass that also sums the plane
        return (*scratch.hinge(problem, _labels(shard, task)[0],
                               np.ascontiguousarray(w, dtype=np.float64)), n)
    agg = task.aggregated_offender(w, problem, block)
    if agg is not None:
        loss, plane = agg
        cols, vals = scratch.plane(problem, plane, np.ones(1))
        return loss, cols, vals, float(plane.margin[0]), n
    H, worst = task.worst_offenders(w, problem, block)
    if worst.size != len(H):
        # the task listed all its constraints (regression's two sides, raw constraint groups):
        # keep each example's worst
        worst = worst.select(np.isin(np.arange(worst.size),
                                     _best_per_example(_gradients(problem, worst, w), worst.group)))
    violated = H[worst.group] > 0
    weight = np.where(violated, problem.C[worst.group], 0.0)
    cols, vals = scratch.plane(problem, worst, weight)
    loss = float(np.dot(problem.C, np.maximum(H, 0.0)))
    if use_cache:
        _remember(shard, worst.select(violated), iteration, cache_size)
    return loss, cols, vals, float(np.dot(weight, worst.margin)), n


def _probe(shard, scratch, ref, rho, *move):
    """(examples the shard's next screened pass would score, examples probed) over every
    PROBE_STRIDE-th example; all of them when the shard has no state for reference `ref`."""
    oracle = shard.screen
    if oracle is None or oracle.ref != ref:
        count = -(-shard.problem.n_examples // PROBE_STRIDE)
        return count, count
    return oracle.probe(rho, move or None, PROBE_STRIDE)


def _merges(task):
    """Whether identical examples are merged (svmtrain.duplicates): tasks whose examples are single
    rows with one loss term each, binary and multiclass (with any controls: weights and class
    weights are in the rows' costs, the rest acts on w or on every row alike)."""
    return task.grouping == "row" and task.name in ("binary", "multiclass")


def _labels(shard, task):
    """(labels, K) of the shard's rows for the Cython passes: binary (K = 0) the signs +-1,
    multiclass the class indices; computed once per shard."""
    if shard.labels is None:
        problem = shard.problem
        if type(task) is Binary:
            shard.labels = (np.ascontiguousarray(task.signs(shard.block, problem.path),
                                                 dtype=np.float64), 0)
        else:
            shard.labels = (task.label_index(shard.block, problem.path), task.K)
    return shard.labels


def _violations(shard, scratch, task, w):
    """H_i of the shard's rows at w (row_violations, the tasks' own values bit for bit)."""
    problem = shard.problem
    labels, K = _labels(shard, task)
    return row_violations(problem.indptr, problem.indices, problem.data, problem.n_cols, labels,
                          K, w, 0.0 if problem.bias is None else float(problem.bias),
                          problem.bias is not None)


def _screens(task):
    """Whether the task's oracle pass has screening (pyx/_oneslack.pyx): binary, and multiclass
    (zero-one loss, where both rescalings are one problem)."""
    return type(task) is Binary or (type(task) is Multiclass and task.loss == "zero-one")


def _screen_bounds(task, diff):
    """(rho, feature_move) of the screening rules (pyx/_oneslack.pyx) for q - r = diff, inflated
    by SCREEN_SLACK against rounding: binary, rho = |q - r| and no per-example test; multiclass (w
    feature-major: the K weights of a feature together, the bias's last), rho = the sum of the two
    largest per-class distances |q_k - r_k|, and (d, U, L, R): d = q - r, U_f / L_f the largest /
    smallest d_fk over the classes (pushed out by SCREEN_SLACK max_k |d_fk|), R_k = |d_k| + the
    largest |d_j| over j != k."""
    grow = 1.0 + SCREEN_SLACK
    if type(task) is Multiclass:
        d = diff.reshape(-1, task.K)
        per_class = np.sqrt(np.einsum("ij,ij->j", d, d)) * grow
        top2 = np.sort(per_class)[-2:]
        by_label = per_class + np.where(per_class == top2[-1], top2[0], top2[-1])
        slack = SCREEN_SLACK * np.abs(d).max(axis=1)
        upper = d.max(axis=1) + slack
        lower = d.min(axis=1) - slack
        return float(top2.sum()), (diff, upper, lower, by_label)
    return float(np.sqrt(np.dot(diff, diff))) * grow, None


class _ScreenPolicy:
    """When oracle screening takes a new reference point (module docstring), for the shards it is
    given: a pass that a probe (every PROBE_STRIDE-th example) finds would score PROBE_REFRESH or
    more of the examples is made a reference pass (it costs what one costs), and after a pass a
    new reference is due when the pass scored at least the average fraction of the passes since
    the last one, the reference pass (all) included: the passes get dearer as the query points
    move away from it. The local run keeps one for all its shards; on Dask each partition keeps
    its own on its worker (`_screened_oracle`), which saves the probe's round trip per iteration
    (kddcup99 binary, 2 workers: 28 of the run's 57 round trips) and is the same policy when
    there is one partition."""

    def __init__(self, task):
        self.task = task
        self.w_ref, self.ref_number, self.new_ref = None, 0, True
        self.epoch_work, self.epoch_passes = 0.0, 0
        self.n_examples = None             # what the first pass scored (all)

    def arguments(self, query, probe):
        """_from_oracle's screening arguments at `query`; probe(arguments) -> (examples the
        screened pass would score, examples probed)."""
        if not self.new_ref:
            rho, move = _screen_bounds(self.task, query - self.w_ref)
            screen_args = (self.ref_number, rho, *(move or ()))
            would_score, probed = probe(screen_args)
            self.new_ref = would_score >= PROBE_REFRESH * probed
            if not self.new_ref:
                return screen_args
        self.ref_number += 1
        self.w_ref = query.copy()
        return (self.ref_number, -1.0)

    def passed(self, screen_args, scored):
        """After the pass made with `screen_args`, which scored `scored` examples."""
        self.n_examples = scored if self.n_examples is None else self.n_examples
        if screen_args[1] < 0:
            self.epoch_work, self.epoch_passes, self.new_ref = 1.0, 1, False
        else:
            fraction = scored / self.n_examples
            self.epoch_work += fraction
            self.epoch_passes += 1
            self.new_ref = fraction >= self.epoch_work / self.epoch_passes


def _screened_oracle(shard, scratch, task, w, iteration, use_cache, cache_size):
    """_from_oracle with the shard's own screening policy (an executor whose shards are on
    workers: one task per shard and iteration, no probe round trip)."""
    if shard.policy is None:
        shard.policy = _ScreenPolicy(task)
    policy = shard.policy
    screen_args = policy.arguments(w, lambda args: _probe(shard, scratch, *args))
    part = _from_oracle(shard, scratch, task, w, iteration, use_cache, cache_size, *screen_args)
    policy.passed(screen_args, int(part[4]))
    return part


def _from_cache(shard, scratch, w, iteration):
    """The shard's part of the plane from its cache: each example's best cached offender."""
    problem, cache = shard.problem, shard.cache
    if not cache.size:
        return 0.0, np.zeros(0, np.int64), np.zeros(0), 0.0
    g = _gradients(problem, cache, w)
    best = _best_per_example(g, cache.group)
    chosen = np.zeros(cache.size, bool)
    chosen[best[g[best] > 0]] = True
    shard.age[chosen] = iteration                      # "most recently used"
    weight = np.where(chosen, problem.C[cache.group], 0.0)
    cols, vals = scratch.plane(problem, cache, weight)
    return (float(np.dot(weight, g)), cols, vals, float(np.dot(weight, cache.margin)))


def _remember(shard, fresh, iteration, cache_size):
    """Add the oracle's offenders to the shard's cache: a label already cached is refreshed, and
    each example keeps its `cache_size` most recently used."""
    cache = Constraints.concat([shard.cache, fresh])
    age = np.concatenate([shard.age, np.full(fresh.size, iteration, np.int64)])
    if not cache.size:
        return
    # newest first within each (example, label); then within each example
    order = np.lexsort((-age, cache.key, cache.group))
    g, k = cache.group[order], cache.key[order]
    new_label = np.ones(len(order), bool)
    new_label[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1])
    order = order[new_label]
    order = order[np.lexsort((-age[order], cache.group[order]))]
    g = cache.group[order]
    start = np.searchsorted(g, g, side="left")
    keep = np.zeros(cache.size, bool)
    keep[order[np.arange(len(order)) - start < cache_size]] = True
    shard.cache = cache.select(keep)
    shard.age = age[keep]


# -- dual states (--save-state / --warm-start) ---------------------------------------------------
#
# A 1-slack state is its working set: the planes a_k (sparse, over the n_w weights), their offsets
# b_k, their duals beta_k, and the C they were built with. Every plane stays a valid constraint of a
# problem with more examples (the new examples' part of it chooses "no violation"), and under
# C' = lambda C the same choice of offenders gives the plane (lambda a_k, lambda b_k): so a state
# starts any later run of the same task and weight layout, beta still feasible (sum beta <= 1).

STATE_VERSION = 1


def save_state(path, result, *, task, C):
    from svmtrain.atomic import atomic_output
    cols, vals, b, beta = result.planes
    indptr = np.zeros(len(cols) + 1, np.int64)
    indptr[1:] = np.cumsum([len(c) for c in cols])
    arrays = {"format_version": np.int64(STATE_VERSION), "mode": np.str_("1-slack"),
              "task": np.str_(task), "C": np.float64(C), "n_w": np.int64(len(result.w)),
              "indptr": indptr,
              "indices": np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64),
              "data": np.concatenate(vals) if vals else np.zeros(0), "b": b, "beta": beta}
    with atomic_output(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def read_state(path, task, n_w, C):
    """The working set of a 1-slack state file, checked against this run at cost C (ValueError:
    why not)."""
    with np.load(path, allow_pickle=False) as z:
        a = {k: z[k] for k in z.files}
    need = ("format_version", "mode", "task", "C", "n_w", "indptr", "indices", "data", "b", "beta")
    missing = [k for k in need if k not in a]
    if missing:
        raise ValueError(f"not a 1-slack state: missing {', '.join(missing)}")
    # the kinds first, so that a hand-edited file is refused by name, not by a conversion's error
    for key, kinds in (("format_version", "iu"), ("n_w", "iu"), ("C", "fiu"), ("mode", "U"),
                       ("task", "U")):
        if a[key].ndim != 0 or a[key].dtype.kind not in kinds:
            raise ValueError(f"damaged 1-slack state: {key} is not a single "
                             f"{'text' if kinds == 'U' else 'number'}")
    for key, kinds in (("indptr", "iu"), ("indices", "iu"), ("data", "fiu"), ("b", "fiu"),
                       ("beta", "fiu")):
        if a[key].ndim != 1 or a[key].dtype.kind not in kinds:
            raise ValueError(f"damaged 1-slack state: {key} is not a vector of numbers")
    if int(a["format_version"]) != STATE_VERSION:
        raise ValueError(f"unsupported 1-slack state version {a['format_version']}")
    if str(a["task"]) != task:
        raise ValueError(f"the state is for the {a['task']} task, not {task}")
    if int(a["n_w"]) != n_w:
        raise ValueError(f"the state's planes have {int(a['n_w'])} weights, this data's model "
                         f"{n_w} (other features or classes)")
    indptr, indices, data, b, beta = a["indptr"], a["indices"], a["data"], a["b"], a["beta"]
    m = len(b)
    C = float(a["C"])
    if (indptr.shape != (m + 1,) or beta.shape != (m,) or indptr[0] != 0
            or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices) or len(data) != len(indices)
            or (len(indices) and (indices.min() < 0 or indices.max() >= n_w))):
        raise ValueError("damaged 1-slack state: inconsistent plane arrays")
    if not (C > 0 and np.isfinite(C) and np.all(np.isfinite(data)) and np.all(np.isfinite(b))
            and np.all(np.isfinite(beta)) and np.all(beta >= 0) and beta.sum() <= 1 + 1e-9):
        raise ValueError("damaged 1-slack state: C, planes or duals out of range")
    # restored at C / C_state, the planes' Gram entries (|a_k . a_l| <= |a_k| |a_l|) and the QP's
    # values must stay finite
    with np.errstate(over="ignore", invalid="ignore"):
        scale = C / float(a["C"])
        norms = scale * np.sqrt(np.add.reduceat(np.asarray(data, float) ** 2, indptr[:-1])
                                if len(indices) else np.zeros(0))
        if len(indices) and np.any(indptr[1:] == indptr[:-1]):
            norms[indptr[1:] == indptr[:-1]] = 0.0     # reduceat reads an empty plane's neighbour
        if not (np.isfinite(scale) and np.all(norms < 1e150) and np.all(np.abs(scale * b) < 1e300)):
            raise ValueError(f"damaged 1-slack state: its planes at C = {C:g} overflow")
    cols = [indices[indptr[k]:indptr[k + 1]] for k in range(m)]
    vals = [data[indptr[k]:indptr[k + 1]] for k in range(m)]
    return {"cols": cols, "vals": vals, "b": b, "beta": beta, "C": C}


def _restore(ws, start, n_w, C):
    scale = C / start["C"]
    for cols, vals, b in zip(start["cols"], start["vals"], start["b"]):
        ws.add(np.asarray(cols, np.int64), scale * np.asarray(vals, float), scale * float(b))
    beta = np.asarray(start["beta"], float)
    ws.beta = beta / max(1.0, float(beta.sum()))
