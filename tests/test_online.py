"""The online-dual mode: streamed training certified by verify-bound, agreement with the batch
optimum, stdin and compressed input, the cache limit, interrupt / resume, option errors."""

import json
import lzma
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data, interrupt, objective
from svmtrain.cli import main
from svmtrain.model import read_model
from svmtrain.solvers.online import OnlineDual, OnlineOptions
from svmtrain.solvers.online_reading import streaming_task
from svmtrain.solvers.online_store import RowStore
from svmtrain.tasks import task_class

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args, input=None):
    return runner.invoke(main, [str(a) for a in args], input=input)


def verify(runner, model, train):
    r = run(runner, "verify-bound", "--json", model, train)
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def a9a5k(tmp_path_factory):
    """The first 5000 lines of a9a (shared data), decompressed."""
    import lzma as _lzma
    from conftest import shared_data_root
    src = shared_data_root() / "a9a" / "a9a.xz"
    if not src.exists():
        pytest.skip("shared data not found")
    out = tmp_path_factory.mktemp("online") / "a9a.5k"
    with _lzma.open(src, "rb") as f, open(out, "wb") as g:
        for i, line in enumerate(f):
            if i >= 5000:
                break
            g.write(line)
    return out


def test_one_pass_is_certified_and_more_passes_tighten(runner, a9a5k, tmp_path):
    gaps = []
    for passes in (1, 3):
        model = tmp_path / f"m{passes}"
        # Alg. 2 as the paper has it: file order, violated examples only, pruned at once
        r = run(runner, "train", "-m", "online-dual", "--chunk", "250", "--passes", passes,
                "--shuffle-window", "0", "--keep-inactive", "0", "--admit-margin", "0", a9a5k, model)
        assert r.exit_code == 0, r.output
        assert "certified by a pass over the data" in r.stderr
        m = read_model(model)
        v = verify(runner, model, a9a5k)
        # the recorded primal is verify-bound's, bit for bit; D <= P
        assert m.mode == "online-dual" and v["primal"] == m.primal and v["dual"] == m.dual
        assert v["gap"] >= 0 and v["examples"] == 5000 == m.examples
        gaps.append(v["relative_gap"])
    # one pass over 5000 examples of a9a certifies about 25%, three passes the tolerance
    assert gaps[0] < 0.5 and gaps[1] < gaps[0] / 100 and gaps[1] <= 1e-3


def test_reaches_the_batch_optimum(runner, a9a5k, tmp_path):
    """After enough passes the online model is the n-slack optimum (strongly convex primal: close
    objectives mean close weights)."""
    batch, online = tmp_path / "batch", tmp_path / "online"
    assert run(runner, "train", "-q", "-e", "1e-6", "--max-epochs", "5000", a9a5k, batch).exit_code == 0
    r = run(runner, "train", "-q", "-m", "online-dual", "-e", "1e-5", "--passes", "20",
            "--keep-inactive", "3", "--chunk", "500", a9a5k, online)
    assert r.exit_code == 0, r.output
    b, o = read_model(batch), read_model(online)
    assert o.relative_gap <= 1e-5
    assert abs(o.primal - b.primal) <= 2e-5 * b.primal
    # ||w_o - w*||^2 <= 2 (P(w_o) - OPT) <= 2 (P(w_o) - D_batch)
    assert np.sum((o.w - b.w) ** 2) <= 2 * (o.primal - b.dual) + 1e-9


@pytest.mark.parametrize("task,extra", [("multiclass", ["--chunk", "100"]),
                                        ("regression", ["-c", "100", "-p", "1", "-B", "1"]),
                                        ("sequence", ["--keep-inactive", "50", "--chunk", "20"])])
def test_other_tasks_match_batch(runner, task, extra, tmp_path):
    files = {"multiclass": "pendigits_scale.train.sample", "regression": "cpusmall_scale.train.sample",
             "sequence": "conll2000.train.svm"}
    train = os.path.join(REPO, "data", files[task])
    if task == "sequence":          # the first 30 sentences
        lines = open(train).read().splitlines(keepends=True)
        qids = [ln.split()[1] for ln in lines]
        cut = [i for i in range(1, len(lines)) if qids[i] != qids[i - 1]][29]
        train = tmp_path / "seq.svm"
        train.write_text("".join(lines[:cut]))
    eps = "1e-2" if task == "sequence" else "1e-3"
    batch, online = tmp_path / "b", tmp_path / "o"
    nb = ["-c", "100", "-p", "1", "-B", "1"] if task == "regression" else []
    assert run(runner, "train", "-q", "-t", task, "-e", eps, *nb, train, batch).exit_code == 0
    r = run(runner, "train", "-q", "-t", task, "-e", eps, "-m", "online-dual", "--passes", "60",
            *extra, train, online)
    assert r.exit_code == 0, r.output
    b, o = read_model(batch), read_model(online)
    v = verify(runner, online, train)
    assert v["relative_gap"] <= float(eps) and v["primal"] == o.primal
    # both models certify intervals around the one optimum: they overlap
    assert o.dual <= b.primal and b.dual <= o.primal


def test_ranking_and_keyed_constraints(runner, tmp_path):
    ohsumed = os.path.join(REPO, "data", "ohsumed.train.sample")
    r = run(runner, "train", "-q", "-t", "ranking", "-c", "0.01", "-m", "online-dual", "--passes", "5",
            "--chunk", "2", ohsumed, tmp_path / "r")
    assert r.exit_code == 0, r.output
    assert verify(runner, tmp_path / "r", ohsumed)["relative_gap"] <= 1e-3
    # constraints whose slack groups (qid) are spread over the file: they share slacks across chunks
    rng = np.random.default_rng(0)
    lines = []
    for g in range(60):
        x = rng.normal(size=(4, 5))
        for j in range(4):
            lines.append(f"{rng.uniform(0.5, 1.5):.3f} qid:{g} " + " ".join(f"{k + 1}:{v:.4f}" for k, v in enumerate(x[j])))
    rng.shuffle(lines)
    cons = tmp_path / "cons.txt"
    cons.write_text("\n".join(lines) + "\n")
    assert run(runner, "train", "-q", "-t", "constraints", "-e", "1e-4", cons, tmp_path / "b").exit_code == 0
    r = run(runner, "train", "-q", "-t", "constraints", "-e", "1e-4", "-m", "online-dual", "--chunk", "16",
            "--passes", "30", "--verify", cons, tmp_path / "o")
    assert r.exit_code == 0, r.output
    b, o = read_model(tmp_path / "b"), read_model(tmp_path / "o")
    assert o.examples == 60 and o.dual <= b.primal and b.dual <= o.primal


def test_stdin_and_xz(runner, a9a5k, tmp_path):
    raw = open(a9a5k, "rb").read()
    xz = tmp_path / "a9a.xz"
    xz.write_bytes(lzma.compress(raw))
    r = run(runner, "train", "-m", "online-dual", "--chunk", "250", xz, tmp_path / "x")
    assert r.exit_code == 0, r.output
    r = run(runner, "train", "-m", "online-dual", "--chunk", "250", "--labels", "1,-1", "-", tmp_path / "s",
            input=raw)
    assert r.exit_code == 0, r.output
    assert "NOT certified" in r.stderr
    x, s = read_model(tmp_path / "x"), read_model(tmp_path / "s")
    # the same stream gives the same model; the stdin one records the cached problem's bound
    assert np.array_equal(x.w, s.w) and x.dual == s.dual
    assert verify(runner, tmp_path / "s", a9a5k)["primal"] == x.primal
    # compressed standard input too
    r = run(runner, "train", "-q", "-m", "online-dual", "--chunk", "250", "--labels", "-1,1", "-",
            tmp_path / "sx", input=xz.read_bytes())
    assert r.exit_code == 0 and np.array_equal(read_model(tmp_path / "sx").w, x.w)


def test_cache_limit_is_respected(a9a5k):
    task = streaming_task(task_class("binary"), str(a9a5k), {})
    for limit, limit_bytes in ((300, None), (None, 200_000)):
        records = []
        opt = OnlineOptions(C=1.0, bias=None, epsilon=1e-3, seed=1, passes=2, chunk=200,
                            cache_limit=limit, cache_limit_bytes=limit_bytes)
        result = OnlineDual(task, str(a9a5k), opt).run(on_chunk=records.append)
        if limit:
            assert max(r.cache for r in records) <= limit
        else:
            assert max(r.nbytes for r in records) <= limit_bytes
            # the result reports the most the cache held, which the bound holds too
            assert max(r.nbytes for r in records) <= result.cache_peak_bytes <= limit_bytes
        # still a true lower bound: LB <= P(w) for the w it holds, and <= the unlimited optimum
        P = objective.primal(task, result.w, result.geometry, 1.0, data.iter_blocks(str(a9a5k)), str(a9a5k))
        assert result.dual <= P.primal


def test_row_store_compaction_keeps_rows():
    store = RowStore()
    indptr = np.array([0, 2, 3, 6]); indices = np.array([0, 4, 1, 0, 2, 3]); vals = np.arange(1.0, 7.0)
    ids = store.add(indptr, indices, vals, np.array([0, 2]))
    more = store.add(indptr, indices, vals, np.array([1, 2]))
    term_row = np.concatenate([ids, more])
    store.hold(term_row)
    store.release(term_row[:2])                       # rows of the first add are now unused
    given = term_row[2:].copy()
    renumbered = store.compact(given, force=True)
    assert renumbered is given and store.n_rows == 2 and list(renumbered) == [0, 1]   # in place
    assert store.indptr.tolist() == [0, 1, 4] and store.indices.tolist() == [1, 0, 2, 3]
    assert store.data.tolist() == [3.0, 4.0, 5.0, 6.0] and store.refs.tolist() == [1, 1]


def test_row_store_positions_follow_their_rows():
    """Once tracked, each row's row in its example moves with the row through a compaction; rows
    added without one are -1 (kept by value when their constraint is evicted)."""
    store = RowStore()
    indptr = np.array([0, 2, 3, 6, 7]); indices = np.array([0, 4, 1, 0, 2, 3, 5]); vals = np.arange(1.0, 8.0)
    assert store.positions is None
    store.track_positions()
    ids = store.add(indptr, indices, vals, np.arange(4))
    assert store.positions.tolist() == [-1, -1, -1, -1]
    store.set_positions(ids, [0, 1, 0, 2])
    term_row = ids[[1, 3, 3]].copy()
    store.hold(term_row)
    renumbered = store.compact(term_row, force=True)
    assert store.n_rows == 2 and store.positions.tolist() == [1, 2]
    assert store.positions[renumbered].tolist() == [1, 2, 2]
    assert store.add(indptr, indices, vals, np.array([0])).tolist() == [2]
    assert store.positions.tolist() == [1, 2, -1]


def test_a_window_that_ends_inside_a_block_lets_the_block_go():
    """While a window is looked at (its parts handed out, None after them), nothing holds the
    reader's block the window ended in: the rows after it, which start the next window, are a
    copy of their own."""
    import gc
    import weakref
    from svmtrain.solvers.online_reading import _checked, _window_parts
    for compact in (None, False):
        read = []

        def reader():           # one block of five sentences of two rows, as the reader's
            block = data.Block(np.arange(11, dtype=np.int64), np.arange(10, dtype=np.int32),
                               np.ones(10), np.zeros(10), np.repeat(np.arange(5), 2).astype(np.int64),
                               np.ones(10), np.arange(1, 11), 10, 100)
            read.append(weakref.ref(block.indices))
            handed, block = [block], None
            yield handed.pop()

        parts = _window_parts(_checked(data.whole_examples(reader(), "consecutive"), "x", False),
                              "consecutive", 2, 10 ** 6, compact_values=compact)
        window = [next(parts), next(parts)]
        assert window[1] is None and window[0].n_rows == 4          # two sentences of two rows
        window = None
        gc.collect()
        assert read[0]() is None                                    # the block is let go
        rest = [None if p is None else p.n_rows for p in parts]
        assert rest == [4, None, 2, None]


@pytest.mark.parametrize("piece", [1, 7, 1 << 20])
def test_row_store_compacted_in_place_keeps_its_rows_and_gives_back_the_room(monkeypatch, piece):
    """The kept rows move down in place (a piece of non-zeros at a time), the same rows in the
    same order as a fresh store of them; the arrays are then cut to the rows and the spare,
    except one a block still refers to, which stays whole and unharmed."""
    from svmtrain.solvers import online_store
    monkeypatch.setattr(online_store, "COMPACT_PIECE", piece)
    monkeypatch.setattr(online_store, "STORE_SPARE", (5, 20))
    rng = np.random.default_rng(piece)
    n = 300
    lengths = rng.integers(0, 9, n)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = rng.integers(0, 50, int(indptr[-1]))
    vals = rng.normal(size=int(indptr[-1]))
    for held in (False, True):
        store = RowStore()
        ids = store.add(indptr, indices, vals, np.arange(n))
        term_row = rng.choice(ids, 120)
        store.hold(term_row)
        view = store.data if held else None
        before = view.copy() if held else None
        renumbered = store.compact(term_row.copy(), force=True)
        live = np.unique(term_row)
        fresh = RowStore()
        fresh.add(indptr, indices, vals, live)
        assert store.indptr.tolist() == fresh.indptr.tolist()
        assert store.indices.tolist() == fresh.indices.tolist() and store.data.tolist() == fresh.data.tolist()
        assert np.array_equal(live[renumbered], term_row)           # each term on its own row again
        assert store.refs.tolist() == np.bincount(renumbered, minlength=len(live)).tolist()
        spare_rows, spare_nnz = online_store.STORE_SPARE
        assert len(store._indptr) == store.n_rows + 1 + spare_rows
        if held:        # a view of the old array: not cut under it (its leading rows moved)
            assert len(store._data) == len(before) and len(view) == len(before)
        else:
            assert len(store._data) == len(store._indices) == store.nnz + spare_nnz
            # a second compaction: `moved` takes each row of before the first to its row now
            assert np.array_equal(store.moved[term_row], renumbered)
            gone = renumbered[::3]
            store.release(gone)
            later = np.delete(renumbered, np.arange(0, len(renumbered), 3))
            again = store.compact(later.copy(), force=True)
            still = np.isin(term_row, live[np.unique(later)])
            assert np.array_equal(store.moved[term_row[~still]], np.full(np.count_nonzero(~still), -1))
            assert np.array_equal(store.moved[np.delete(term_row, np.arange(0, len(term_row), 3))], again)
            assert np.array_equal(store.indptr[1:] - store.indptr[:-1], lengths[live[np.unique(later)]])


def test_row_store_keeps_narrow_values_until_rows_that_are_not_come():
    """Rows whose values are bytes (the sequence task's indicator features) are held as bytes;
    the first rows that are not widen the store to float32 and then to float64, each value kept
    exactly; rows of float64 into a float64 store stay float64. The bytes counted are those of
    the rows some term holds, in the store's types."""
    rng = np.random.default_rng(2)
    indptr = np.array([0, 2, 5, 6])
    indices = np.array([0, 3, 1, 2, 4, 0])
    ones = np.ones(6, np.uint8)
    store = RowStore()
    store.hold(store.add(indptr, indices, ones, np.arange(3)))
    assert store.data.dtype == np.uint8 and store.nbytes == 8 * 4 + 5 * 6 + 8 * 3
    store.hold(store.add(indptr, indices, ones * 2, np.array([2, 0])))
    assert store.data.dtype == np.uint8 and store.data.tolist() == [1] * 6 + [2] * 3
    store.hold(store.add(indptr, indices, np.full(6, 0.5, np.float32), np.array([2])))
    assert store.data.dtype == np.float32 and store.nbytes == 8 * 7 + 8 * 10 + 8 * 6
    assert store.data.tolist() == [1.0] * 6 + [2.0] * 3 + [0.5]
    tenths = rng.normal(size=6)
    store.hold(store.add(indptr, indices, tenths, np.array([1])))
    assert store.data.dtype == np.float64 and store.nbytes == 8 * 8 + 12 * 13 + 8 * 7
    assert store.data.tolist() == [1.0] * 6 + [2.0] * 3 + [0.5] + tenths[2:5].tolist()
    counted = store.nbytes
    store.add(indptr, indices, ones, np.array([0]))          # a row no term holds: not counted
    assert store.nbytes == counted and store.dead_bytes() == 12 * 2 + 16
    assert store.data.dtype == np.float64 and store.data[-2:].tolist() == [1.0, 1.0]
    wide = RowStore()
    wide.add(indptr, indices, tenths, np.arange(3))
    wide.add(indptr, indices, ones, np.arange(3))
    assert wide.data.dtype == np.float64 and wide.data.tolist() == tenths.tolist() + [1.0] * 6


def test_a_window_part_keeps_narrow_values_for_a_task_that_reads_them():
    """online-dual's window parts (the pinned store's rows) take the narrowest exact type of their
    values where the task reads it (the sequence task): bytes, float32; else their float64 copy."""
    from svmtrain.solvers.online_reading import _compact
    from svmtrain.tasks.sequence import Sequence
    assert Sequence.compact_values and not task_class("binary").compact_values
    ones = data.Block(np.array([0, 2, 3]), np.array([0, 4, 1]), np.array([1.0, 2.0, 1.0]),
                      np.array([1.0, 2.0]), np.array([1, 1]), np.ones(2), np.array([1, 2]), 5, 30)
    part = _compact(ones, True)
    assert part.data.dtype == np.uint8 and part.data.tolist() == [1, 2, 1]
    assert part.indices.dtype == np.int32 and not np.shares_memory(part.data, ones.data)
    assert _compact(ones, False).data.dtype == np.float64
    ones.data[1] = 0.5
    assert _compact(ones, True).data.dtype == np.float32
    ones.data[1] = 0.1
    assert _compact(ones, True).data.dtype == np.float64


def test_features_appearing_late_widen_w(runner, tmp_path):
    """Columns first met in a late chunk (and a bias) give the batch problem's optimum."""
    rng = np.random.default_rng(1)
    lines = []
    for i in range(400):
        k = 3 if i < 200 else 8                     # features 4..8 appear only in the second half
        x = rng.normal(size=k)
        y = 1 if x[0] + 0.5 * x[-1] > 0 else -1
        lines.append(f"{y} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    f = tmp_path / "late.txt"
    f.write_text("\n".join(lines) + "\n")
    for task, extra in (("binary", []), ("multiclass", [])):
        assert run(runner, "train", "-q", "-t", task, "-B", "1", "-e", "1e-5", f, tmp_path / "b").exit_code == 0
        r = run(runner, "train", "-q", "-t", task, "-B", "1", "-e", "1e-5", "-m", "online-dual", "--chunk", "50",
                "--passes", "30", f, tmp_path / "o")
        assert r.exit_code == 0, r.output
        b, o = read_model(tmp_path / "b"), read_model(tmp_path / "o")
        assert o.n_features == b.n_features == 8
        assert o.dual <= b.primal and b.dual <= o.primal
        assert np.sum((o.w - b.w) ** 2) <= 2 * (o.primal - b.dual) + 1e-9


def test_widening_in_the_solvers_layout_is_widening_through_the_models():
    """New features widen w (and w0) as a run of zeros in the solvers' feature-major layout: the
    same vector, and w0 held in the same form, as inserting them in every block of the model's
    layout (the path a task with another layout takes)."""
    from types import SimpleNamespace
    from svmtrain.solvers.online_store import SparseW0, inserted_zeros
    from svmtrain.tasks.base import Geometry
    from svmtrain.tasks.binary import Binary
    from svmtrain.tasks.multiclass import Multiclass
    from svmtrain.tasks.sequence import Sequence
    rng = np.random.default_rng(5)
    for task in (Binary(np.array([-1.0, 1.0])), Multiclass(np.array([1.0, 2.0, 3.0])),
                 Sequence(np.array([1.0, 2.0, 3.0]))):
        for bias in (None, 1.0):
            old, new = Geometry(4, bias), Geometry(7, bias)
            blocks = task.n_weights(Geometry(5, bias)) - task.n_weights(old)
            w = rng.normal(size=task.n_weights(old))
            through_model = OnlineDual._widened(SimpleNamespace(task=task), w, old, new, blocks)
            at, gap = blocks * old.n_cols, blocks * (new.n_cols - old.n_cols)
            assert len(through_model) == task.n_weights(new)
            assert np.array_equal(inserted_zeros(w, at, gap), through_model)
            for density in (0.1, 0.5, 0.9):        # w0 as its non-zeros, as a vector, between
                w0 = np.where(rng.random(len(w)) < density, w, 0.0)
                widened = SparseW0.of(w0.copy()).widened(at, gap)
                expected = SparseW0.of(OnlineDual._widened(SimpleNamespace(task=task), w0, old,
                                                           new, blocks))
                assert (widened.full is None) == (expected.full is None)
                assert np.array_equal(widened.dense(), expected.dense())
                assert np.array_equal(widened.index, expected.index)


def _cli(*args):
    return [sys.executable, "-c", "from svmtrain.cli import main; main()", *map(str, args)]


def _start_and_signal(args, trace, sig, lines=8):
    env = dict(os.environ, PYTHONPATH=REPO)
    p = subprocess.Popen(_cli(*args), env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        if trace.exists() and len(trace.read_text().splitlines()) > lines:
            break
        time.sleep(0.02)
    assert p.poll() is None, "training ended before it could be interrupted"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    return p.returncode, err


@pytest.fixture(scope="module")
def a9a_full(tmp_path_factory):
    from conftest import shared_data_root
    src = shared_data_root() / "a9a" / "a9a.xz"
    if not src.exists():
        pytest.skip("shared data not found")
    out = tmp_path_factory.mktemp("online") / "a9a"
    out.write_bytes(lzma.decompress(src.read_bytes()))
    return out


def test_sigint_writes_a_valid_model_and_resume_matches(runner, a9a_full, tmp_path):
    args = ["-m", "online-dual", "--passes", "2", "--chunk", "500"]
    whole = tmp_path / "whole"
    assert run(runner, "train", "-q", *args, a9a_full, whole).exit_code == 0
    model, trace = tmp_path / "m", tmp_path / "trace"
    code, err = _start_and_signal(["train", "-q", *args, "--trace", trace, a9a_full, model], trace,
                                  signal.SIGINT, lines=40)
    assert code == 130, err
    state = tmp_path / "m.state.npz"
    assert "--warm-start" in err and state.exists()
    m = read_model(model)                              # complete and valid
    v = verify(runner, model, a9a_full)
    assert m.mode == "online-dual" and v["gap"] >= 0   # D is a true lower bound of the data's problem
    r = run(runner, "train", "-q", *args, "--warm-start", state, a9a_full, model)
    assert r.exit_code == 0, r.output
    resumed, uninterrupted = read_model(model), read_model(whole)
    # the signal may land inside a re-optimisation (cut short, resumed from that alpha): the same
    # objective within the tolerance, and the certified intervals [D, P] overlap
    assert resumed.primal == pytest.approx(uninterrupted.primal, rel=1e-3)
    assert resumed.dual <= uninterrupted.primal and uninterrupted.dual <= resumed.primal
    assert not state.exists()                          # the finished model supersedes it


@pytest.mark.parametrize("window", [0, 1200])
def test_resume_at_a_chunk_boundary_is_bit_for_bit(a9a5k, tmp_path, window):
    """Stopped between chunks, saved, loaded and continued: the very model of an uninterrupted run
    (in file order, and inside a shuffle window's first visit or its looks)."""
    from svmtrain.solvers.online_state import load_state, problem_fields, read_state, save_state
    task = streaming_task(task_class("binary"), str(a9a5k), {})
    opt = OnlineOptions(C=1.0, bias=1.0, epsilon=1e-3, seed=3, passes=2, chunk=300, block_bytes=5000,
                        shuffle_window=window)
    records = []
    whole = OnlineDual(task, str(a9a5k), opt).run(on_chunk=records.append)
    second = [i for i, r in enumerate(records) if r.pass_ == 2]
    cut_at = second[len(second) // 2] + 1              # halfway through the second pass

    def stop_after(n):
        seen = []

        def on_chunk(record):
            seen.append(record)
            if len(seen) == n:
                interrupt._received = signal.SIGINT      # as the handler does
        return on_chunk

    cut = OnlineDual(task, str(a9a5k), opt).run(on_chunk=stop_after(cut_at))
    interrupt.reset()
    assert cut.interrupted and cut.passes == 1
    fields = problem_fields("binary", task, opt)
    save_state(tmp_path / "s.npz", cut.state, fields)
    state = load_state(read_state(tmp_path / "s.npz"), fields)
    resumed = OnlineDual(task, str(a9a5k), opt, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    assert resumed.epochs == whole.epochs and resumed.solves == whole.solves
    # the state fingerprints the rows it has done: other data is refused, not trained on
    other = tmp_path / "other"
    lines = open(a9a5k).read().splitlines(keepends=True)
    other.write_text("".join(lines[1:] + lines[:1]))
    with pytest.raises(data.DataError, match="not the data the resume state was saved on"):
        OnlineDual(task, str(other), opt, state).run()


@pytest.mark.parametrize("save_state", [False, True])
def test_interrupt_in_the_certificate_pass_keeps_the_trained_model(runner, a9a5k, tmp_path,
                                                                    monkeypatch, save_state):
    """A signal in the certificate's pass comes after training is complete: the model is written
    with the cached problem's bounds, exit 130, and no resume state is left (not even an earlier
    checkpoint's: the run it would resume is over) unless --save-state asks for one; verify-bound
    then certifies the model."""
    add = objective.PrimalAccumulator.add

    def add_then_signal(self, block):
        add(self, block)
        interrupt._received = signal.SIGINT               # as the handler does
    monkeypatch.setattr(objective.PrimalAccumulator, "add", add_then_signal)
    model = tmp_path / "m"
    try:
        state = ["--save-state", tmp_path / "s.npz"] if save_state else []
        r = run(runner, "train", "-m", "online-dual", "--checkpoint-every", "1e-9", *state, a9a5k,
                model)
    finally:
        interrupt.reset()
    assert r.exit_code == 130, r.output
    assert "in the certificate's pass" in r.output and "verify-bound" in r.output
    assert sorted(os.listdir(tmp_path)) == (["m", "s.npz"] if save_state else ["m"])
    assert ("resume state" in r.output) == save_state
    monkeypatch.undo()
    m = read_model(model)
    checked = verify(runner, model, a9a5k)
    assert checked["dual"] == m.dual and checked["primal"] >= m.dual


def test_sigterm_exits_143_and_nslack_stops_cleanly(runner, a9a_full, tmp_path):
    model, trace = tmp_path / "m", tmp_path / "trace"
    code, err = _start_and_signal(["train", "-q", "-m", "online-dual", "--passes", "3", "--chunk", "500",
                                   "--trace", trace, a9a_full, model], trace, signal.SIGTERM)
    assert code == 143 and "SIGTERM" in err
    assert read_model(model).mode == "online-dual"
    # n-slack: stops after the current epoch and writes its (exactly priced) model
    model, trace = tmp_path / "n", tmp_path / "ntrace"
    code, err = _start_and_signal(["train", "-q", "-e", "1e-9", "--max-epochs", "100000", "--trace", trace,
                                   a9a_full, model], trace, signal.SIGINT, lines=5)
    assert code == 130, err
    m = read_model(model)
    assert verify(runner, model, a9a_full)["primal"] == m.primal
    # ... and leaves its dual state, from which the run continues to the tolerance
    state = tmp_path / "n.state.npz"
    assert state.exists() and str(state) in err
    r = run(runner, "train", "-q", "--warm-start", model, a9a_full, tmp_path / "n2")   # its state
    assert r.exit_code == 0, r.output
    resumed = read_model(tmp_path / "n2")
    assert resumed.relative_gap <= 1e-3 and resumed.dual >= m.dual - 1e-9 * abs(m.dual)


def test_checkpoint_every_writes_model_and_state(a9a5k, tmp_path):
    task = streaming_task(task_class("binary"), str(a9a5k), {})
    opt = OnlineOptions(C=1.0, bias=None, epsilon=1e-3, seed=1, chunk=100, checkpoint_every=1e-9,
                        shuffle_window=0)
    written = []
    OnlineDual(task, str(a9a5k), opt).run(on_checkpoint=written.append)
    assert len(written) == 50 and all(w.state["mode"] == "online-dual" for w in written)


@pytest.mark.parametrize("args,message", [
    (["--passes", "0"], "--passes"),
    (["--cache-limit", "lots"], "--cache-limit"),
    (["--cache-limit", "0"], "--cache-limit"),
    (["-m", "n-slack", "--passes", "2"], "applies to --mode online-dual"),   # auto: chooses it
    (["-m", "n-slack", "--keep-inactive", "2"], "applies to --mode online-dual"),
    (["-m", "1-slack", "--shuffle-window", "10"], "applies to --mode online-dual"),
    (["-m", "online-dual", "--admit-margin", "-1"], "--admit-margin"),
    (["-m", "online-dual", "--shuffle-window", "-5"], "--shuffle-window"),
    (["-m", "online-dual", "--labels", "1,1"], "--labels"),
    (["-m", "online-dual", "-t", "regression", "--labels", "1,2"], "no labels"),
    (["-m", "online-dual", "--checkpoint-every", "-1"], "--checkpoint-every"),
])
def test_bad_options_exit_2(runner, args, message, tmp_path):
    heart = os.path.join(REPO, "data", "heart_scale")
    r = run(runner, "train", *args, heart, tmp_path / "m")
    assert r.exit_code == 2 and message in r.output
    assert not (tmp_path / "m").exists()


def test_stdin_limits_and_bad_states_exit_2(runner, a9a5k, tmp_path):
    heart = os.path.join(REPO, "data", "heart_scale")
    r = run(runner, "train", "-m", "online-dual", "--passes", "2", "--labels", "1,-1", "-", tmp_path / "m", input="")
    assert r.exit_code == 2 and "read only once" in r.output
    r = run(runner, "train", "-m", "online-dual", "-", tmp_path / "m", input=open(heart).read())
    assert r.exit_code == 2 and "--labels" in r.output
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    r = run(runner, "train", "--warm-start", junk, heart, tmp_path / "m")
    assert r.exit_code == 2 and "junk.npz" in r.output
    # a state saved for another C cannot continue this run
    state = tmp_path / "s.npz"
    assert run(runner, "train", "-q", "-m", "online-dual", "--save-state", state, heart, tmp_path / "m").exit_code == 0
    r = run(runner, "train", "-c", "2", "--warm-start", state, heart, tmp_path / "m2")
    assert r.exit_code == 2 and "C = 1.0" in r.output and not (tmp_path / "m2").exists()
    r = run(runner, "train", "-m", "n-slack", "--warm-start", state, heart, tmp_path / "m2")
    assert r.exit_code == 2 and "online-dual state" in r.output
    # a tampered state: an index out of range is refused, not run
    z = dict(np.load(state))
    z["term_row"] = z["term_row"] + 10**6
    np.savez(tmp_path / "bad.npz", **z)
    r = run(runner, "train", "--warm-start", tmp_path / "bad.npz", heart, tmp_path / "m2")
    assert r.exit_code == 2 and "cannot resume" in r.output
    # values may be bytes (a sequence store's), not other integers
    z = dict(np.load(state))
    z["store_data"] = z["store_data"].astype(np.int16)
    np.savez(tmp_path / "bad.npz", **z)
    r = run(runner, "train", "--warm-start", tmp_path / "bad.npz", heart, tmp_path / "m2")
    assert r.exit_code == 2 and "store_data" in r.output and not (tmp_path / "m2").exists()
    interrupt.reset()


@pytest.mark.parametrize("window", [0, 150])
@pytest.mark.parametrize("task,name", [("binary", "a9a.train.sample"), ("sequence", "conll2000.train.svm")])
def test_model_does_not_depend_on_the_reader_blocks(task, name, window):
    """Chunks are cut by examples across the reader's blocks: tiny blocks (a sentence split between
    blocks, chunks spanning several) give the model of the default blocks, bit for bit."""
    path = os.path.join(REPO, "data", name)
    t = streaming_task(task_class(task), path, {})
    models = []
    for block_bytes in (8 << 20, 3000):
        opt = OnlineOptions(C=1.0, bias=1.0, epsilon=1e-2, seed=1, passes=2, chunk=70,
                            block_bytes=block_bytes, shuffle_window=window)
        models.append(OnlineDual(t, path, opt).run())
    assert np.array_equal(models[0].w, models[1].w) and models[0].dual == models[1].dual
    assert models[0].examples == models[1].examples


def test_never_loads_the_whole_file(runner, monkeypatch, tmp_path):
    """Training and its verification pass stream: data.load is never called."""
    def refuse(*args, **kwargs):
        raise AssertionError("online-dual loaded the whole file")
    monkeypatch.setattr(data, "load", refuse)
    for task, name in (("binary", "a9a.train.sample"), ("multiclass", "pendigits_scale.train.sample"),
                       ("sequence", "conll2000.train.svm")):
        r = run(runner, "train", "-q", "-t", task, "-m", "online-dual", "--verify",
                os.path.join(REPO, "data", name), tmp_path / "m")
        assert r.exit_code == 0, r.output


def test_shuffle_window_is_seeded_and_its_looks_close_the_gap(a9a5k):
    """Windows visit their examples in an order fixed by --seed (another seed, another order), keep
    each example's slack group (its place in the file) and, with the looks, one pass over windows
    far smaller than the file certifies far below file order's gap."""
    task = streaming_task(task_class("binary"), str(a9a5k), {})

    def one_pass(**kw):
        opt = OnlineOptions(C=1.0, bias=None, epsilon=1e-3, seed=kw.pop("seed", 1), chunk=100, **kw)
        run = OnlineDual(task, str(a9a5k), opt)
        result = run.run()
        value = objective.primal(task, result.w, result.geometry, 1.0,
                                 data.iter_blocks(str(a9a5k)), str(a9a5k))
        return run, result, (value.primal - result.dual) / value.primal

    run_a, a, gap_a = one_pass(shuffle_window=1000)
    _, b, _ = one_pass(shuffle_window=1000)
    _, c, _ = one_pass(shuffle_window=1000, seed=2)
    assert np.array_equal(a.w, b.w) and not np.array_equal(a.w, c.w)
    assert a.examples == 5000 and run_a.cache.cons.group.max() < 5000
    _, _, gap_plain = one_pass(shuffle_window=0, keep_rounds=0, admit_margin=0)
    _, _, gap_no_look = one_pass(shuffle_window=1000, window_looks=0)
    _, _, gap_violated_only = one_pass(shuffle_window=1000, admit_margin=0)
    assert 0 <= gap_a < gap_no_look and gap_a < gap_violated_only and gap_a < gap_plain / 10


def _heart():
    return os.path.join(REPO, "data", "heart_scale")


def test_controls_stream_as_in_batch(runner, tmp_path):
    """Class weights from the label pass's counts are n-slack's; example weights and bias
    regularization give n-slack's optimum (brackets meet) and verify-bound certifies."""
    weights = tmp_path / "w"
    weights.write_text("".join(f"{1 + i % 3}\n" for i in range(270)))
    args = ["-e", "1e-4", "-B", "1", "--bias-reg", "0.5", "--class-weight", "balanced", "-w", "1", "2",
            "--weights", weights]
    r = run(runner, "train", *args, _heart(), tmp_path / "batch")
    assert r.exit_code == 0, r.output
    r = run(runner, "train", "-m", "online-dual", "--passes", "5", *args, _heart(), tmp_path / "online")
    assert r.exit_code == 0, r.output
    a, b = read_model(tmp_path / "batch"), read_model(tmp_path / "online")
    assert a.class_weights == b.class_weights and b.bias_reg == 0.5
    assert b.dual <= a.primal * (1 + 1e-12) and a.dual <= b.primal * (1 + 1e-12)
    v = verify(runner, tmp_path / "online", _heart())
    assert v["certified"] and v["primal"] == b.primal


def test_controls_bad_input_exit_2(runner, tmp_path):
    short = tmp_path / "w"
    short.write_text("1\n" * 100)
    r = run(runner, "train", "-m", "online-dual", "--weights", short, _heart(), tmp_path / "m")
    assert r.exit_code == 2 and str(short) in r.output and "has 100 weights" in r.output, r.output
    assert not (tmp_path / "m").exists()
    r = run(runner, "train", "-m", "online-dual", "--class-weight", "balanced", "--labels", "1,-1",
            "-", tmp_path / "m", input=open(_heart()).read())
    assert r.exit_code == 2 and "standard input" in r.output, r.output
    # a resume state is for the controls it was saved with
    state = tmp_path / "s.npz"
    r = run(runner, "train", "-m", "online-dual", "-B", "1", "--bias-reg", "0.5", "--save-state",
            state, _heart(), tmp_path / "m1")
    assert r.exit_code == 0, r.output
    r = run(runner, "train", "-B", "1", "--bias-reg", "0.25", "--warm-start", state, _heart(),
            tmp_path / "m2")
    assert r.exit_code == 2 and "cannot resume" in r.output and "controls" in r.output, r.output


def test_the_allocator_takes_a_fixed_mmap_threshold():
    """Long runs fix glibc's mmap threshold (svmtrain.memory): the call reaches the allocator."""
    import platform
    from svmtrain.memory import STREAM_MMAP_THRESHOLD, fix_mmap_threshold
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's mallopt")
    assert fix_mmap_threshold(STREAM_MMAP_THRESHOLD) is True


def test_online_dual_takes_the_allocators_policy_of_its_task(monkeypatch):
    """A structured online-dual run maps arrays of 1 MB and more, bounded or not (its windows are
    cutting-plane rounds), a sequence run those of its n-slack rounds; a binary stream every
    chunk's arrays (svmtrain.memory)."""
    import svmtrain
    from svmtrain import memory
    calls = []
    monkeypatch.setattr(memory, "fix_mmap_threshold", lambda n: calls.append(n) or True)
    for limit in (None, "200KB", "none"):
        calls.clear()
        svmtrain.train(os.path.join(REPO, "data", "conll2000.train.svm"),
                       svmtrain.Problem(task="sequence", C=0.1),
                       svmtrain.OnlineDual(cache_limit=limit, chunk=20))
        assert calls[-1] == memory.SEQUENCE_WINDOWS_MMAP_THRESHOLD == memory.ROUNDS_MMAP_THRESHOLD
    calls.clear()
    svmtrain.train(os.path.join(REPO, "data", "pendigits_scale.train.sample"),
                   svmtrain.Problem(task="multiclass", C=1.0), svmtrain.OnlineDual())
    assert calls[-1] == memory.WINDOWS_MMAP_THRESHOLD != memory.ROUNDS_MMAP_THRESHOLD
    calls.clear()
    svmtrain.train(os.path.join(REPO, "data", "heart_scale"), svmtrain.Problem(C=1.0),
                   svmtrain.OnlineDual())
    assert calls and set(calls) == {memory.STREAM_MMAP_THRESHOLD}


def test_the_heap_gives_back_what_a_window_freed():
    """A window's end gives the heap's free pages back (svmtrain.memory.trim_heap): after arrays
    from the heap are freed, the call reaches glibc's malloc_trim and it releases some."""
    import platform
    from svmtrain.memory import fix_mmap_threshold, trim_heap
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's malloc_trim")
    fix_mmap_threshold(4 << 20)       # arrays of 256 KB from the heap, as in an online-dual run
    arrays = [np.ones(32768) for _ in range(200)]
    del arrays
    assert trim_heap() is True


def test_the_summary_reports_the_most_the_cache_held(runner, a9a5k, tmp_path):
    """`N constraints cached (at most X MB)`: X is the cache's largest size in the run, which
    a byte bound keeps below it."""
    def peak_mb(args):
        r = run(runner, "train", "-m", "online-dual", "--labels", "-1,1", *args, str(a9a5k),
                tmp_path / "m")
        assert r.exit_code == 0, r.output
        m = re.search(r"(\d+) constraints cached \(at most ([0-9.]+) (KB|MB|GB)\)", r.stderr)
        assert m, r.stderr
        return float(m.group(2)) * {"KB": 2 ** -10, "MB": 1, "GB": 2 ** 10}[m.group(3)]
    free = peak_mb([])
    assert free > 0.1
    bounded = peak_mb(["--cache-limit", f"{free / 2:.6f}MB"])
    assert bounded <= free / 2 * (1 + 1e-3)


def test_the_summary_reports_what_a_cache_limit_evicted(runner, tmp_path):
    """Under a bound below what the file's support vectors need, the summary says how many were
    evicted and how many came back with their example (a bound far below a window's need brings
    back nearly all of them, sweep after sweep: slow); a run that evicts nothing says nothing of
    it. The counts are the run's: a state resumed carries them on."""
    conll = os.path.join(REPO, "data", "conll2000.train.svm")
    args = ["-t", "sequence", "-c", "0.1", "--window-rows", "500", "--chunk", "10"]

    def evictions(*more):
        r = run(runner, "train", "-m", "online-dual", *args, *more, conll, tmp_path / "m")
        assert r.exit_code == 0, r.output
        m = re.search(r"cached \(at most [^)]*\), (\d+) support vectors evicted and (\d+) brought "
                      r"back by the cache limit, ", r.stderr)
        return None if m is None else (int(m.group(1)), int(m.group(2)))
    assert evictions("--cache-limit", "none") is None
    # the default bound (what the largest window needed) evicts earlier windows' support vectors
    # only: none comes back within the pass
    by_window = evictions()
    assert by_window is not None and by_window[0] > 0 and by_window[1] == 0
    assert evictions("--cache-limit", "window") == by_window
    tight = evictions("--cache-limit", "60KB")
    assert tight is not None and 0 < tight[1] <= tight[0]
    # a bound the constraints fit in evicts fewer
    looser = evictions("--cache-limit", "400KB")
    assert looser is None or looser[0] < tight[0]


def test_the_cache_limit_reads_window_and_none():
    from svmtrain.options import OptionError, parse_cache_limit
    assert parse_cache_limit(None) == parse_cache_limit("window") == ("window", None)
    assert parse_cache_limit(" Window ") == ("window", None)
    assert parse_cache_limit("none") is None and parse_cache_limit("NONE") is None
    assert parse_cache_limit("512MB") == ("bytes", 512 << 20)
    assert parse_cache_limit(100000) == parse_cache_limit("100000") == ("constraints", 100000)
    with pytest.raises(OptionError, match="'window' or 'none'"):
        parse_cache_limit("windows")


def test_sizes_read_as_a_person_writes_them():
    from svmtrain.pipeline import _size
    assert [_size(b) for b in (0, 145_000, 33_449_000, 999.96 * 2 ** 20, 1.5 * 2 ** 30)] == \
        ["0 KB", "141.6 KB", "31.9 MB", "1000 MB", "1.5 GB"]


def test_the_window_bound_is_the_default_for_structured_tasks_only(runner, tmp_path):
    """A binary file of several windows is not bounded by its windows unless asked: a binary
    support vector is one row, and the bound froze the earlier windows' support vectors for the
    pass. The same run with --cache-limit window evicts them, and certifies worse."""
    gaps = {}
    for limit in ([], ["--cache-limit", "window"], ["--cache-limit", "none"]):
        model = tmp_path / f"m{len(gaps)}"
        r = run(runner, "train", "-m", "online-dual", "--passes", "1", "--shuffle-window", "500",
                *limit, os.path.join(REPO, "data", "a9a.train.sample"), model)
        assert r.exit_code == 0, r.output
        gaps[" ".join(limit)] = (read_model(str(model)).relative_gap,
                                 "evicted" in r.stderr, model.read_bytes())
    default, window, none = gaps[""], gaps["--cache-limit window"], gaps["--cache-limit none"]
    assert not default[1] and window[1] and not none[1]
    assert default[2] == none[2]                    # the default is no bound, bit for bit
    assert default[0] < window[0]
    # a sequence file of several windows keeps the bound by default (its runs evict)
    seq = tmp_path / "seq"
    r = run(runner, "train", "-t", "sequence", "-m", "online-dual", "--passes", "1",
            "--window-rows", "500", os.path.join(REPO, "data", "conll2000.train.svm"), seq)
    assert r.exit_code == 0, r.output
    assert "evicted" in r.stderr
