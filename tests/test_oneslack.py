"""The 1-slack mode: its kernels against brute force, its optimum against the n-slack mode's on every
task, determinism across thread counts, its certificate, and its options."""

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data
from svmtrain._oneslack import accumulate_plane, gram_row, hinge_plane, plane_qp, scatter_planes
from svmtrain._oracles import ranking_pair_coefficients
from svmtrain.cli import main
from svmtrain.model import read_model
from svmtrain.tasks.base import Constraints
from svmtools.cli import main as svmtools_main


def run(*args, prog=main):
    return CliRunner().invoke(prog, [str(a) for a in args])


# -- kernels ---------------------------------------------------------------------------------------

def test_plane_qp_reaches_the_optimum_of_a_brute_force_qp():
    from scipy.optimize import minimize
    rng = np.random.default_rng(3)
    for trial in range(5):
        m, d = 6, 4
        A = rng.standard_normal((m, d))
        b = rng.uniform(0.0, 3.0, m)
        G = np.ascontiguousarray(A @ A.T)
        beta = np.zeros(m)
        steps, gap = plane_qp(G, b, beta, 1.0, 1e-13, 100000)
        assert beta.min() >= 0 and beta.sum() <= 1 + 1e-12 and gap <= 1e-12
        dual = b @ beta - 0.5 * beta @ G @ beta
        # brute force: the primal min 1/2|w|^2 + max(0, max_k b_k - a_k.w) equals the dual
        best = min((minimize(lambda w: 0.5 * w @ w + max(0.0, np.max(b - A @ w)), x0,
                             method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                            "maxiter": 20000}).fun
                    for x0 in (np.zeros(d), A.T @ beta)))
        assert dual == pytest.approx(best, rel=1e-6, abs=1e-9)


def test_accumulate_plane_and_gram_row_match_dense_arithmetic():
    rng = np.random.default_rng(5)
    n_rows, n_cols, stride = 7, 5, 3
    X = (rng.random((n_rows, n_cols)) < 0.5) * rng.standard_normal((n_rows, n_cols))
    indptr = np.concatenate(([0], np.cumsum((X != 0).sum(1)))).astype(np.int64)
    indices = np.nonzero(X)[1].astype(np.int64)
    values = X[X != 0]
    bias = 0.5
    n_w = stride * (n_cols + 1)
    cons = Constraints(np.array([0, 2, 3, 5], np.int64), np.array([0, 3, 6, 1, 2], np.int64),
                       np.array([1.0, -2.0, 0.5, 1.5, -1.0]), np.array([0, 2, 1, 1, 0], np.int64),
                       np.array([True, False, True, True, True]), np.zeros(3), np.arange(3),
                       np.zeros(3, np.int64))
    weight = np.array([2.0, 0.0, -1.0])
    expect = np.zeros(n_w)
    for c in range(3):
        for t in range(cons.tptr[c], cons.tptr[c + 1]):
            o, a = cons.term_offset[t], weight[c] * cons.term_scale[t]
            expect[o + stride * np.arange(n_cols)] += a * X[cons.term_row[t]]
            if cons.term_bias[t]:
                expect[o + stride * n_cols] += a * bias
    dense, mark, touched = np.zeros(n_w), np.zeros(n_w, np.uint8), np.empty(n_w, np.int64)
    count = accumulate_plane(indptr, indices, values, n_cols, cons.tptr, cons.term_row,
                             cons.term_scale, cons.term_offset, cons.term_bias, weight, bias, True,
                             stride, dense, mark, touched)
    assert np.allclose(dense, expect, rtol=1e-15, atol=1e-15)
    assert set(touched[:count].tolist()) >= set(np.flatnonzero(expect).tolist())
    # int32 columns (a sequence store's) give the same plane, in the same order
    dense32, mark32, touched32 = np.zeros(n_w), np.zeros(n_w, np.uint8), np.empty(n_w, np.int64)
    count32 = accumulate_plane(indptr, indices.astype(np.int32), values, n_cols, cons.tptr,
                               cons.term_row, cons.term_scale, cons.term_offset, cons.term_bias,
                               weight, bias, True, stride, dense32, mark32, touched32)
    assert count32 == count and dense32.tobytes() == dense.tobytes()
    assert np.array_equal(touched32[:count], touched[:count])
    # ... and int32 term rows and offsets (a sequence cache's)
    dense32[:] = 0.0
    mark32[:] = 0
    count32 = accumulate_plane(indptr, indices.astype(np.int32), values, n_cols, cons.tptr,
                               cons.term_row.astype(np.int32), cons.term_scale,
                               cons.term_offset.astype(np.int32), cons.term_bias, weight, bias, True,
                               stride, dense32, mark32, touched32)
    assert count32 == count and dense32.tobytes() == dense.tobytes()
    # float32 values and scales (a sequence store's and cache's, where each is a float32
    # exactly), and byte values (indicator features, counts), give the plane and the dots of the
    # same values in float64, bit for bit
    from svmtrain._linear import term_dots
    exact, scales = values.astype(np.float32), cons.term_scale.astype(np.float32)
    counts = np.minimum(np.abs(np.round(values * 3)), 255)
    assert np.any(counts > 1)
    for cases in (((exact.astype(np.float64), scales.astype(np.float64)), (exact, scales),
                   (exact, scales.astype(np.float64)), (exact.astype(np.float64), scales)),
                  ((counts, scales), (counts.astype(np.uint8), scales))):
        planes, dots = [], []
        for v, sc in cases:
            d, m, t = np.zeros(n_w), np.zeros(n_w, np.uint8), np.empty(n_w, np.int64)
            accumulate_plane(indptr, indices.astype(np.int32), v, n_cols, cons.tptr,
                             cons.term_row.astype(np.int32), sc, cons.term_offset.astype(np.int32),
                             cons.term_bias, weight, bias, True, stride, d, m, t)
            planes.append(d.tobytes())
            dots.append(term_dots(indptr, indices, v, n_cols, cons.tptr, cons.term_row, sc,
                                  cons.term_offset, cons.term_bias, expect, bias, True,
                                  stride).tobytes())
        assert len(set(planes)) == 1 and len(set(dots)) == 1
    cols = np.sort(touched[:count])
    others = [np.flatnonzero(v).astype(np.int64) for v in rng.standard_normal((3, n_w))]
    vals = [rng.standard_normal(len(c)) for c in others]
    row = gram_row(dense, others, vals)
    assert np.allclose(row, [expect[c] @ v for c, v in zip(others, vals)])
    with pytest.raises(ValueError):   # a term past w is refused before any write
        accumulate_plane(indptr, indices, values, n_cols, cons.tptr, cons.term_row,
                         cons.term_scale, cons.term_offset + n_w, cons.term_bias, weight, bias,
                         True, stride, dense, mark, touched)
    assert cols[-1] < n_w


def test_hinge_plane_is_the_sum_over_violated_examples():
    rng = np.random.default_rng(11)
    n, n_cols = 60, 9
    X = rng.standard_normal((n, n_cols)) * (rng.random((n, n_cols)) < 0.4)
    X[:, -1] = 0.0                    # a column with no nonzeros: untouched by the plane
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    C = rng.uniform(0.5, 2.0, n)
    indptr = np.concatenate(([0], np.cumsum((X != 0).sum(1)))).astype(np.int64)
    indices = np.concatenate([np.flatnonzero(r) for r in X]).astype(np.int64)
    values = np.concatenate([r[r != 0] for r in X])
    for bias, use_bias in ((0.0, False), (1.5, True)):
        n_w = n_cols + use_bias
        w = rng.standard_normal(n_w) * 0.5
        Xb = np.hstack([X, np.full((n, 1), bias)]) if use_bias else X
        H = 1 - y * (Xb @ w)
        on = H > 0
        dense, mark, touched = np.zeros(n_w), np.zeros(n_w, np.uint8), np.empty(n_w, np.int64)
        count, loss, b = hinge_plane(indptr, indices, values, n_cols, y, C, w, bias, use_bias,
                                     dense, mark, touched)
        assert loss == pytest.approx(np.dot(C, np.maximum(H, 0)), rel=1e-13)
        assert b == pytest.approx(C[on].sum(), rel=1e-13)
        assert np.allclose(dense, (C[on] * y[on]) @ Xb[on], rtol=1e-13, atol=1e-13)
        assert sorted(touched[:count].tolist()) == np.flatnonzero(mark).tolist()
    with pytest.raises(ValueError):
        hinge_plane(indptr, indices, values, n_cols, y[:-1], C, w, 0.0, False, dense, mark, touched)


@pytest.mark.parametrize("column", [np.int64, np.int32, "mixed"])
def test_scatter_planes_sums_in_order_and_by_column_ranges(column):
    """... with planes whose columns are int64, int32 (the solver's own) or some of each."""
    rng = np.random.default_rng(5)
    n_w = 50
    cols = [np.sort(rng.choice(n_w, k, replace=False)).astype(np.int64) for k in (5, 20, 0, 33)]
    if column != "mixed":
        cols = [c.astype(column) for c in cols]
    else:
        cols = [c.astype(np.int32) if k % 2 else c for k, c in enumerate(cols)]
    vals = [rng.standard_normal(len(c)) for c in cols]
    coefs = [0.3, -1.2, 2.0, 0.0]
    expect = np.zeros(n_w)
    for c, v, a in zip(cols, vals, coefs):
        expect[c] += a * v
    dense, mark, touched = np.zeros(n_w), np.zeros(n_w, np.uint8), np.empty(n_w, np.int64)
    count = scatter_planes(dense, mark, touched, 0, cols, vals, coefs)
    assert np.array_equal(dense, expect)
    assert sorted(touched[:count].tolist()) == sorted(set(np.concatenate(cols[:2]).tolist()))
    # untracked, in column ranges: the same sums bit for bit, whatever the split
    none8, none64 = np.zeros(0, np.uint8), np.zeros(0, np.int64)
    for cuts in ([0, n_w], [0, 17, n_w], [0, 1, 25, 26, n_w]):
        w = np.zeros(n_w)
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            scatter_planes(w, none8, none64, 0, cols, vals, coefs, lo, hi)
        assert np.array_equal(w, expect)
    with pytest.raises(ValueError):
        scatter_planes(np.zeros(10), none8, none64, 0, cols, vals, coefs)
    # and their dots with a dense plane: gram_row reads either kind of column the same way
    dense = rng.standard_normal(n_w)
    row = gram_row(dense, cols, vals)
    assert np.allclose(row, [dense[c] @ v for c, v in zip(cols, vals)], rtol=1e-14, atol=0)
    assert gram_row(dense, [c.astype(np.int64) for c in cols], vals).tobytes() == row.tobytes()
    with pytest.raises(ValueError):
        gram_row(np.zeros(10), cols, vals)


def test_working_set_keeps_w_equal_to_its_planes_sum():
    from svmtrain.solvers.oneslack import _WorkingSet
    rng = np.random.default_rng(2)
    n_w = 40
    ws = _WorkingSet(n_w)
    for step in range(120):
        c = np.sort(rng.choice(n_w, rng.integers(1, 12), replace=False)).astype(np.int64)
        ws.add(c, rng.standard_normal(len(c)), float(rng.random() + 0.5))
        ws.solve(1e-12, 1000)
        ws.drop_idle(5)
        w = ws.w(n_w)
        direct = np.zeros(n_w)
        for k in range(ws.size):
            direct[ws.cols[k]] += ws.beta[k] * ws.vals[k]
        assert np.allclose(w, direct, rtol=1e-12, atol=1e-12)
        assert float(w @ w) == pytest.approx(ws.sqnorm(), rel=1e-9, abs=1e-12)


def test_ranking_plane_equals_the_sum_over_violated_pairs():
    rng = np.random.default_rng(7)
    n = 40
    scores = rng.standard_normal(n).round(1)       # ties included
    targets = rng.integers(0, 3, n).astype(float)
    qid = rng.integers(0, 4, n)
    order = np.argsort(qid, kind="stable").astype(np.int64)
    query_ptr = np.concatenate(([0], np.cumsum(np.bincount(qid, minlength=4)))).astype(np.int64)
    coef, hinge, n_violated = ranking_pair_coefficients(scores, targets, query_ptr, order)
    expect_coef, expect_viol = np.zeros(n), np.zeros(4)
    for a in range(n):
        for b in range(n):
            if qid[a] == qid[b] and targets[a] > targets[b] and scores[a] - scores[b] < 1:
                expect_coef[a] += 1
                expect_coef[b] -= 1
                expect_viol[qid[a]] += 1
    assert np.array_equal(coef, expect_coef) and np.array_equal(n_violated, expect_viol)


# -- the same optimum as the n-slack mode, on every task --------------------------------------------

def _scaled(src, out, factor=None):
    """A copy of an svmlight file with every feature value divided by its column's max |value|
    (or by `factor`)."""
    rows = []
    for line in open(src):
        parts = line.split()
        if not parts:
            continue
        rows.append((parts[0], [p for p in parts[1:] if p.startswith("qid:")],
                     [(int(k), float(v)) for k, v in (p.split(":") for p in parts[1:]
                                                      if not p.startswith("qid:"))]))
    scale = {}
    for _, _, feats in rows:
        for k, v in feats:
            scale[k] = max(scale.get(k, 0.0), abs(v))
    with open(out, "w") as f:
        for target, qid, feats in rows:
            vals = " ".join(f"{k}:{v / (factor or scale[k] or 1.0)!r}" for k, v in feats)
            f.write(" ".join([target] + qid + [vals]) + "\n")
    return out


@pytest.fixture(scope="module")
def conll_subset(shared, tmp_path_factory):
    """About 125 sentences of conll2000, as the sequence task's file."""
    src = shared("conll2000/train.txt.xz", max_lines=3000)
    out = tmp_path_factory.mktemp("conll") / "train.svm"
    dic = out.parent / "dict"
    r = run("conll2svm", "--new-dictionary", dic, src, out, prog=svmtools_main)
    assert r.exit_code == 0, r.output
    return out


CASES = {
    "a9a binary": ("a9a/a9a.xz", 3000, None, ["-t", "binary", "-B", "1"]),
    "pendigits/100 multiclass": ("pendigits/pendigits.xz", 2000, 100.0, ["-t", "multiclass", "-B", "1"]),
    "pendigits/100 multiclass slack": ("pendigits/pendigits.xz", 1000, 100.0,
                                       ["-t", "multiclass", "--rescaling", "slack"]),
    "cpusmall regression": ("cpusmall/cpusmall.xz", 1500, "columns", ["-t", "regression", "-B", "1"]),
    "ohsumed ranking": ("ohsumed/train.txt.xz", 1500, None, ["-t", "ranking"]),
    "raw constraints": ("a9a/a9a.xz", 600, None, ["-t", "constraints", "-B", "1"]),
}


@pytest.mark.parametrize("case", list(CASES) + ["conll2000 sequence",
                                                 "conll2000 sequence slack rescaling"])
def test_one_slack_reaches_the_n_slack_optimum(case, shared, conll_subset, tmp_path):
    if case.startswith("conll2000"):
        path, args, eps = conll_subset, ["-t", "sequence", "-c", "0.1"], 1e-2
        if "slack" in case:      # a looser tolerance: this one is the slowest to converge
            args, eps = args + ["--rescaling", "slack"], 3e-2
    else:
        rel, lines, scale, args = CASES[case]
        path, eps = shared(rel, max_lines=lines), 1e-3
        if scale is not None:
            path = _scaled(path, tmp_path / "scaled", None if scale == "columns" else scale)
        if case == "raw constraints":   # lines of one qid share a slack: groups of 3
            raw = tmp_path / "raw"
            with open(path) as f, open(raw, "w") as g:
                for i, line in enumerate(f):
                    target, rest = line.split(None, 1)
                    sign = 1 if float(target) > 0 else -1
                    feats = " ".join(f"{k}:{sign * float(v)!r}" for k, v in
                                     (p.split(":") for p in rest.split()))
                    g.write(f"{1.0 + (i % 3) * 0.25} qid:{i // 3} {feats}\n")
            path = raw
    models = {}
    for mode in ("n-slack", "1-slack"):
        models[mode] = tmp_path / mode
        r = run("train", "-q", "--mode", mode, "-e", eps, "--max-epochs", 20000, *args, path,
                models[mode])
        assert r.exit_code == 0, r.output
    n, one = read_model(models["n-slack"]), read_model(models["1-slack"])
    assert one.mode == "1-slack" and one.relative_gap <= eps and n.relative_gap <= eps
    # each dual bounds the optimum from below, so it cannot exceed the other mode's primal
    assert one.dual <= n.primal and n.dual <= one.primal
    assert abs(one.primal - n.primal) <= eps * max(one.primal, n.primal)


def test_the_cache_changes_the_path_not_the_optimum(conll_subset, tmp_path):
    primal = {}
    for f in (0, 10):
        model = tmp_path / f"m{f}"
        r = run("train", "--mode", "1-slack", "-t", "sequence", "-c", "0.1", "-e", "1e-2", "-f", f,
                conll_subset, model)
        assert r.exit_code == 0, r.output
        hits = int(r.stderr.split(" cache hits")[0].rsplit(" ", 1)[1])
        assert (hits == 0) if f == 0 else (hits > 0)
        primal[f] = read_model(model).primal
    assert primal[0] == pytest.approx(primal[10], rel=1e-2)


@pytest.mark.parametrize("args", [["--qp-every", "4"], ["--drop-inactive", "0"],
                                  ["--drop-inactive", "1"]])
def test_qp_schedule_and_plane_removal_keep_the_optimum(args, shared, tmp_path):
    path = shared("a9a/a9a.xz", max_lines=1500)
    primal = []
    for extra in ([], args):
        model = tmp_path / "m"
        r = run("train", "-q", "--mode", "1-slack", "-B", "1", *extra, path, model)
        assert r.exit_code == 0, r.output
        m = read_model(model)
        assert m.relative_gap <= 1e-3
        primal.append(m.primal)
    assert primal[1] == pytest.approx(primal[0], rel=1e-3)


# -- threads, certificate, options ------------------------------------------------------------------

@pytest.mark.parametrize("rel,lines,args", [
    ("pendigits/pendigits.xz", 3000, ["-t", "multiclass", "-e", "1e-2"]),
    ("a9a/a9a.xz", 3000, ["-t", "binary", "-e", "1e-2", "-B", "1"]),
    ("conll2000", None, ["-t", "sequence", "-c", "0.1", "-e", "3e-2"]),
])
def test_two_threads_give_the_model_of_one_bit_for_bit(rel, lines, args, shared, conll_subset,
                                                      tmp_path, monkeypatch):
    from svmtrain.solvers import oneslack
    # small shards, so that these subsets are cut into several and two threads share them
    monkeypatch.setattr(oneslack, "MIN_SHARD_NONZEROS", 2000)
    monkeypatch.setattr(oneslack, "MIN_SHARD_EXAMPLES", 8)
    # and the w-sized work split over the threads however small w is
    monkeypatch.setattr(oneslack, "PARALLEL_MIN_WEIGHTS", 1)
    path = conll_subset if rel == "conll2000" else shared(rel, max_lines=lines)
    if "multiclass" in args:
        path = _scaled(path, tmp_path / "p", 100.0)
    files = []
    for threads in (1, 2):
        model, trace = tmp_path / f"m{threads}", tmp_path / f"t{threads}"
        r = run("train", "-q", "--mode", "1-slack", "--threads", threads, "--trace", trace, *args,
                path, model)
        assert r.exit_code == 0, r.output
        files.append(model.read_bytes())
        # the trace differs only in its timings
        files.append([line.split()[:1] + line.split()[2:] for line in trace.read_text().splitlines()])
    assert files[0] == files[2] and files[1] == files[3]


def test_shards_are_cut_between_examples_at_even_shares_of_nonzeros(shared, conll_subset,
                                                                     monkeypatch):
    from svmtrain.solvers import oneslack
    monkeypatch.setattr(oneslack, "MIN_SHARD_NONZEROS", 1000)
    monkeypatch.setattr(oneslack, "MIN_SHARD_EXAMPLES", 4)
    block = data.load(str(conll_subset))
    qid_starts = set(np.flatnonzero(np.diff(block.qid) != 0) + 1) | {0}
    n_sentences = len(qid_starts)
    bounds = oneslack._shard_bounds(block, "consecutive", n_sentences)
    assert len(bounds) == min(oneslack.MAX_SHARDS, int(block.indptr[-1]) // 1000)
    assert bounds[0][0] == 0 and bounds[-1][1] == block.n_rows
    assert all(a in qid_starts for a, _ in bounds)
    assert all(b == a2 for (_, b), (a2, _) in zip(bounds[:-1], bounds[1:]))
    nnz = [int(block.indptr[b] - block.indptr[a]) for a, b in bounds]
    assert max(nnz) < 2 * min(nnz)


def test_in_out_planes_reach_the_optimum_in_fewer_iterations(shared, tmp_path):
    """The in-out query point (--in-out, the default 0.1) against the plain cutting-plane
    algorithm (--in-out 0): both certified within -e of each other; in-out takes fewer oracle
    passes (a count, not a time: the same on every machine)."""
    path = shared("a9a/a9a.xz", max_lines=3000)
    found = {}
    for mu in ("0", "0.1"):
        model = tmp_path / f"m{mu}"
        r = run("train", "--mode", "1-slack", "-B", "1", "-e", "1e-3", "--in-out", mu, path, model)
        assert r.exit_code == 0, r.output
        passes = int(r.stderr.split(" oracle passes")[0].rsplit("(", 1)[1])
        found[mu] = (read_model(model), passes)
        ok = run("verify-bound", "-q", "--tol", "1e-3", model, path)
        assert ok.exit_code == 0, ok.output
    (plain, n_plain), (inout, n_inout) = found["0"], found["0.1"]
    assert plain.relative_gap <= 1e-3 and inout.relative_gap <= 1e-3
    assert abs(plain.primal - inout.primal) <= 1e-3 * max(plain.primal, inout.primal)
    assert n_inout < n_plain


def test_verify_bound_certifies_a_one_slack_model(shared, tmp_path):
    path = shared("a9a/a9a.xz", max_lines=2000)
    model, trace = tmp_path / "m", tmp_path / "trace"
    r = run("train", "--mode", "1-slack", "-B", "1", "--trace", trace, path, model)
    assert r.exit_code == 0, r.output
    assert " iterations (" in r.stderr and "planes in the working set" in r.stderr
    lines = trace.read_text().splitlines()
    assert lines[0].split()[1:] == ["iteration", "seconds", "dual", "primal", "gap", "relative_gap",
                                    "exact", "working_set", "oracle_passes", "cache_hits",
                                    "scored", "examples"]
    # the counts are the summary's (the last line: all passes so far), scored at most n a pass,
    # n the distinct examples (a9a repeats rows: the summary names how many were trained on)
    passes = int(r.stderr.split(" oracle passes")[0].rsplit("(", 1)[1])
    distinct = int(r.stderr.split(" distinct examples trained on")[0].rsplit(" ", 1)[1])
    assert 1000 < distinct < 2000
    rows = [ln.split() for ln in lines[1:]]
    assert int(rows[-1][8]) == passes and int(rows[-1][9]) == 0
    assert all(int(c[11]) == distinct for c in rows)
    assert int(rows[0][10]) == distinct and all(0 <= int(c[10]) <= distinct for c in rows)
    m = read_model(model)
    r = run("verify-bound", model, path)
    assert r.exit_code == 0, r.output
    assert "certified" in r.stdout and repr(m.primal) in r.stdout
    assert int(lines[-1].split()[7]) >= 1       # the working set is not empty at the end


@pytest.mark.parametrize("args,flag", [
    (["-m", "n-slack", "-f", "3"], "-f"),                  # a 1-slack option with n-slack
    (["--threads", "2"], "--threads"),
    (["--mode", "1-slack", "--threads", "0"], "--threads"),
    (["--mode", "1-slack", "-f", "-1"], "-f"),
    (["--mode", "1-slack", "--qp-every", "0"], "--qp-every"),
    (["--mode", "1-slack", "--drop-inactive", "x"], "--drop-inactive"),
    (["-m", "n-slack", "--in-out", "0.5"], "--in-out"),
    (["--mode", "1-slack", "--in-out", "1.5"], "--in-out"),
    (["--mode", "1-slack", "--in-out", "-0.1"], "--in-out"),
    (["--mode", "2-slack"], "--mode"),
])
def test_bad_one_slack_options_exit_2_before_reading(args, flag, tmp_path):
    model = tmp_path / "m"
    r = run("train", *args, tmp_path / "does-not-exist", model)
    assert r.exit_code == 2 and flag in r.output
    assert not model.exists()
