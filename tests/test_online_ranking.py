"""online-dual ranking: a query is one example whose constraints are sets of its violated pairs
(svmtrain.tasks.ranking.Ranking.worst_offenders), looked at again per window as the structured
tasks are; certified in one pass with a cache of a few constraints per query, not its pairs."""

import json
import os
import signal
from itertools import combinations

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data, interrupt, objective
from svmtrain.cli import main
from svmtrain.model import read_model
from svmtrain.solvers.online import OnlineDual, OnlineOptions
from svmtrain.solvers.online_reading import streaming_task
from svmtrain.solvers.online_state import load_state, problem_fields, read_state, save_state
from svmtrain.tasks import task_class
from svmtrain.tasks.base import Geometry

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OHSUMED = os.path.join(REPO, "data", "ohsumed.train.sample")      # 5 queries, 240 documents


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _pairs(path):
    block = data.concat_blocks(list(data.iter_blocks(path)))
    return len(task_class("ranking")().pairs(block, path)[0])


@pytest.fixture(scope="module")
def ohsumed_head(tmp_path_factory):
    """The first 12 queries of the shared ohsumed train file (1,752 documents), decompressed."""
    import lzma
    from conftest import shared_data_root
    src = shared_data_root() / "ohsumed" / "train.txt.xz"
    if not src.exists():
        pytest.skip("shared data not found")
    out = tmp_path_factory.mktemp("ranking") / "ohsumed.12q"
    qids = []
    with lzma.open(src, "rt") as f, open(out, "w") as g:
        for line in f:
            q = line.split()[1]
            if q not in qids:
                if len(qids) == 12:
                    break
                qids.append(q)
            g.write(line)
    return str(out)


def test_the_query_constraint_is_its_violated_pairs_summed():
    """Per query, the constraint's margin minus w.x is the query's hinge sum (the primal's term),
    and x is the sum over the violated pairs of x_a - x_b, as listing the pairs gives."""
    block = data.concat_blocks(list(data.iter_blocks(OHSUMED)))
    task = task_class("ranking")()
    geometry = Geometry(block.n_features, None)
    problem = task.problem(block, OHSUMED, 0.01, geometry)
    w = np.random.default_rng(0).normal(size=geometry.width) * 0.3
    H, cons = task.worst_offenders(w, problem, block)
    assert len(H) == len(problem.C_example) == 5 and cons.size == 5
    X = np.zeros((block.n_rows, geometry.n_cols))
    for r in range(block.n_rows):
        lo, hi = block.indptr[r], block.indptr[r + 1]
        X[r, block.indices[lo:hi]] = block.data[lo:hi]
    s = X @ w
    for c in range(cons.size):
        q = int(cons.group[c])
        rows = np.flatnonzero(block.qid == np.unique(block.qid)[np.argsort(
            [np.argmax(block.qid == v) for v in np.unique(block.qid)])][q])
        x, n, hinge = np.zeros(geometry.n_cols), 0, 0.0
        for a, b in combinations(rows, 2):
            if block.target[a] < block.target[b]:
                a, b = b, a
            if block.target[a] > block.target[b] and s[a] - s[b] < 1:
                x += X[a] - X[b]
                n += 1
                hinge += 1 - (s[a] - s[b])
        assert cons.margin[c] == n and H[q] == pytest.approx(hinge, rel=1e-12)
        row = int(cons.term_row[cons.tptr[c]])
        lo, hi = problem.indptr[row], problem.indptr[row + 1]
        summed = np.zeros(geometry.n_cols)
        summed[problem.indices[lo:hi]] = problem.data[lo:hi]
        np.testing.assert_allclose(summed, x, rtol=1e-12, atol=1e-9)
        assert cons.margin[c] - summed @ w == pytest.approx(H[q], rel=1e-9)


def test_one_pass_is_certified_with_a_cache_far_below_the_pairs(ohsumed_head, tmp_path):
    """One pass certifies (verify-bound's gap within -e) with a few constraints per query where the
    pairs are tens of thousands, and its interval overlaps n-slack's around the one optimum."""
    online, batch = tmp_path / "o", tmp_path / "b"
    r = run("train", "-t", "ranking", "-c", "0.01", "-m", "online-dual", ohsumed_head, online)
    assert r.exit_code == 0, r.output
    cached = int(r.output.split(" constraints cached")[0].split()[-1])
    pairs = _pairs(ohsumed_head)
    assert pairs > 20000 and cached < pairs / 50
    v = json.loads(run("verify-bound", "--json", online, ohsumed_head).stdout)
    assert v["relative_gap"] <= 1e-3
    assert run("train", "-q", "-t", "ranking", "-c", "0.01", "-m", "n-slack", ohsumed_head,
               batch).exit_code == 0
    o, b = read_model(online), read_model(batch)
    assert o.dual <= b.primal and b.dual <= v["primal"]
    assert o.examples == 12


def test_the_sample_certifies_and_matches_nslack(tmp_path):
    """The 5 queries of data/ in chunks of 2 (in one chunk a sweep is a single cutting-plane round
    at one w, and five queries give few rounds to judge the window by): one pass certifies, and its
    interval overlaps n-slack's."""
    r = run("train", "-q", "-t", "ranking", "-c", "0.01", "-m", "online-dual", "--chunk", "2",
            "--verify", OHSUMED, tmp_path / "o")
    assert r.exit_code == 0, r.output
    assert run("train", "-q", "-t", "ranking", "-c", "0.01", OHSUMED, tmp_path / "b").exit_code == 0
    o, b = read_model(tmp_path / "o"), read_model(tmp_path / "b")
    assert o.relative_gap <= 1e-3
    assert o.dual <= b.primal and b.dual <= o.primal


@pytest.mark.parametrize("chunk", [1000, 2])
def test_query_lines_apart_or_without_qid_exit_2(tmp_path, chunk):
    """A query whose lines are not together (qid 27 after 29), or a line without qid: file, line,
    reason, exit 2, no model; in file order and in shuffled windows alike."""
    lines = open(OHSUMED).read().splitlines(keepends=True)
    apart = tmp_path / "apart.txt"
    apart.write_text("".join(lines[:60] + lines[1:2] + lines[60:]))
    r = run("train", "-t", "ranking", "-m", "online-dual", "--chunk", chunk, apart, tmp_path / "m")
    assert r.exit_code == 2 and f"{apart}:61:" in r.output and "qid 27 appears again" in r.output
    assert not (tmp_path / "m").exists()
    r = run("train", "-t", "ranking", "-m", "online-dual", "--chunk", chunk, "--shuffle-window", "0",
            apart, tmp_path / "m")
    assert r.exit_code == 2 and f"{apart}:61:" in r.output and "qid 27 appears again" in r.output
    missing = tmp_path / "missing.txt"
    missing.write_text("".join(lines[:100] + [lines[100].replace(" qid:29", "")] + lines[101:]))
    r = run("train", "-t", "ranking", "-m", "online-dual", "--chunk", chunk, missing, tmp_path / "m")
    assert r.exit_code == 2 and f"{missing}:101:" in r.output and "qid" in r.output
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("cut_at", [2, 11])
def test_resume_inside_the_window_is_bit_for_bit(tmp_path, cut_at):
    """Stopped between chunks (in the window's first sweep, or in a later look), saved, loaded and
    continued: the model of the uninterrupted run."""
    task = streaming_task(task_class("ranking"), OHSUMED, {})
    opt = OnlineOptions(C=0.01, bias=None, epsilon=1e-3, seed=2, passes=2, chunk=2)
    records = []
    whole = OnlineDual(task, OHSUMED, opt).run(on_chunk=records.append)
    assert len(records) > cut_at

    def stop(record, seen=[]):
        seen.append(record)
        if len(seen) == cut_at:
            interrupt._received = signal.SIGINT
    cut = OnlineDual(task, OHSUMED, opt).run(on_chunk=stop)
    interrupt.reset()
    assert cut.interrupted
    fields = problem_fields("ranking", task, opt)
    save_state(tmp_path / "s.npz", cut.state, fields)
    state = load_state(read_state(tmp_path / "s.npz"), fields)
    resumed = OnlineDual(task, OHSUMED, opt, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    assert resumed.solves == whole.solves and resumed.cache == whole.cache


def test_same_seed_same_model_and_the_primal_is_verify_bounds(tmp_path):
    task = streaming_task(task_class("ranking"), OHSUMED, {})
    opt = OnlineOptions(C=0.01, bias=None, epsilon=1e-3, seed=4)
    a, b = OnlineDual(task, OHSUMED, opt).run(), OnlineDual(task, OHSUMED, opt).run()
    assert np.array_equal(a.w, b.w) and a.dual == b.dual
    value = objective.primal(task, a.w, a.geometry, opt.C, data.iter_blocks(OHSUMED), OHSUMED)
    assert a.dual <= value.primal and (value.primal - a.dual) / value.primal <= 1e-3


def test_summed_rows_against_dense_sums():
    """Each group's rows times their coefficients, summed: the dense sums, columns past n_cols
    left out, exact zeros dropped, columns increasing; bad arguments are ValueErrors."""
    from svmtrain._oracles import summed_rows
    rng = np.random.default_rng(5)
    dense = rng.normal(size=(30, 12)) * (rng.random((30, 12)) < 0.4)
    indptr = np.concatenate(([0], np.cumsum((dense != 0).sum(1)))).astype(np.int64)
    indices = np.nonzero(dense)[1].astype(np.int64)
    values = dense[dense != 0]
    rows = np.array([3, 7, 7, 0, 29, 11, 4, 4], np.int64)
    coef = np.array([1.0, -2.0, 0.5, 3.0, -1.0, 1.0, 1.0, -1.0])
    groups = np.array([0, 3, 3, 6, 8], np.int64)          # the second group is empty
    ptr, cols, sums = summed_rows(indptr, indices, values, rows, coef, groups, 10)
    assert len(ptr) == 5 and ptr[0] == 0 and ptr[-1] == len(cols) == len(sums)
    for g in range(4):
        want = sum((coef[i] * dense[rows[i], :10] for i in range(groups[g], groups[g + 1])),
                   np.zeros(10))
        got = np.zeros(10)
        c = cols[ptr[g]:ptr[g + 1]]
        assert np.all(np.diff(c) > 0) and np.all(sums[ptr[g]:ptr[g + 1]] != 0)
        got[c] = sums[ptr[g]:ptr[g + 1]]
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    assert ptr[2] == ptr[1] and ptr[4] == ptr[3]         # empty; row 4 minus itself
    with pytest.raises(ValueError, match="rows"):
        summed_rows(indptr, indices, values, np.array([30]), np.ones(1), np.array([0, 1]), 10)
    with pytest.raises(ValueError, match="group_ptr"):
        summed_rows(indptr, indices, values, rows, coef, np.array([0, 9]), 10)
