"""The online-dual schedule on structured tasks: shuffle windows bounded in rows, the looks that
re-visit a window's examples under the current w (LaRank's process-old), and their resume state."""

import functools
import os

import numpy as np
import pytest

from svmtrain import data, objective
from svmtrain.solvers.online import OnlineDual, OnlineOptions, structured
from svmtrain.solvers.online_reading import _rechunk, _windows, streaming_task
from svmtrain.solvers.online_state import StateError
from svmtrain.tasks import task_class

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONLL = os.path.join(REPO, "data", "conll2000.train.svm")      # 100 sentences, 2440 tokens
A9A = os.path.join(REPO, "data", "a9a.train.sample")


def _windows_of(path, grouping, size, max_rows, block_bytes):
    blocks = data.whole_examples(data.iter_blocks(path, block_bytes=block_bytes), grouping)
    return list(_windows(blocks, grouping, size, max_rows))


@pytest.mark.parametrize("size,max_rows", [(30, 200), (1000, 500), (7, 10 ** 9), (1000, 1)])
def test_windows_hold_whole_sentences_within_the_row_bound(size, max_rows):
    """Windows cut at sentence ends, hold at most `size` sentences and `max_rows` rows (one
    sentence longer than the bound is a window of its own), and do not depend on the reader's
    blocks."""
    cuts = []
    for block_bytes in (8 << 20, 3000, 500):
        windows = _windows_of(CONLL, "consecutive", size, max_rows, block_bytes)
        for win in windows:
            n_sentences = 1 + int(np.sum(win.qid[1:] != win.qid[:-1]))
            assert n_sentences <= size
            assert win.n_rows <= max_rows or n_sentences == 1
        # a window is closed only when the next sentence would not fit
        for win, nxt in zip(windows, windows[1:]):
            n_sentences = 1 + int(np.sum(win.qid[1:] != win.qid[:-1]))
            first_len = int(np.argmax(np.append(nxt.qid[1:] != nxt.qid[:-1], True))) + 1
            assert n_sentences == size or win.n_rows + first_len > max_rows
            assert win.qid[-1] != nxt.qid[0]
        joined = data.concat_blocks(windows)
        whole = data.concat_blocks(list(data.iter_blocks(CONLL)))
        assert np.array_equal(joined.qid, whole.qid) and np.array_equal(joined.indices, whole.indices)
        cuts.append([(int(w.qid[0]), w.n_rows) for w in windows])
    assert cuts[0] == cuts[1] == cuts[2]


def test_windows_of_one_row_examples_are_the_chunks_of_before():
    """Binary rows: with the row bound at least the window size, the windows are _rechunk's (the
    binary models of before, bit for bit)."""
    blocks = lambda: data.whole_examples(data.iter_blocks(A9A, block_bytes=4000), "row")  # noqa: E731
    new = list(_windows(blocks(), "row", 70, 70))
    old = list(_rechunk(blocks(), "row", 70))
    assert len(new) == len(old)
    for a, b in zip(new, old):
        assert np.array_equal(a.target, b.target) and np.array_equal(a.indices, b.indices)


def test_which_tasks_are_structured():
    assert structured(task_class("sequence")(labels=[1.0, 2.0]))
    assert structured(task_class("multiclass")(labels=[1.0, 2.0, 3.0]))
    assert not structured(task_class("binary")(labels=[-1.0, 1.0]))
    assert not structured(task_class("regression")(p=0.1))


def _one_pass(path, task_name, **kw):
    task = streaming_task(task_class(task_name), path, {})
    opt = OnlineOptions(C=kw.pop("C", 1.0), bias=None, epsilon=1e-3, seed=1, **kw)
    solver = OnlineDual(task, path, opt)
    result = solver.run()
    value = objective.primal(task, result.w, result.geometry, opt.C, data.iter_blocks(path), path)
    return solver, result, (value.primal - result.dual) / value.primal


def _stopped_and_saved(task, task_name, path, opt, tmp_path, stop):
    """Run until stop(solver, record) holds after a chunk (then an interrupt, as Ctrl-C gives),
    save the resume state and read it back: (the stopped solver, its result, the state, fields)."""
    from svmtrain import interrupt
    import signal
    from svmtrain.solvers.online_state import load_state, problem_fields, read_state, save_state
    probe = OnlineDual(task, path, opt)

    def watch(record):
        if stop(probe, record):
            interrupt._received = signal.SIGINT
    cut = probe.run(on_chunk=watch)
    interrupt.reset()
    fields = problem_fields(task_name, task, opt)
    save_state(tmp_path / "s.npz", cut.state, fields)
    return probe, cut, load_state(read_state(tmp_path / "s.npz"), fields), fields


def test_looks_until_the_window_is_certified_close_the_one_pass_gap():
    """Sequence tagging, the file in one window: looking at it again until a sweep no longer
    raises UB by epsilon (and the cache is solved) certifies one pass far below three looks (the
    binary default); the same seed gives the same model. In windows of a quarter of the file the
    looks still help, but the earlier windows keep the constraints of an earlier w."""
    _, _, gap_few = _one_pass(CONLL, "sequence", C=0.1, chunk=10, window_looks=3)
    run, res, gap = _one_pass(CONLL, "sequence", C=0.1, chunk=10)
    _, again, _ = _one_pass(CONLL, "sequence", C=0.1, chunk=10)
    assert run.looks > 3
    assert 0 <= gap < gap_few / 5 and gap < 0.01
    assert np.array_equal(res.w, again.w) and res.dual == again.dual
    _, _, gap_quarters_few = _one_pass(CONLL, "sequence", C=0.1, chunk=10, window_rows=600,
                                       window_looks=3)
    _, _, gap_quarters = _one_pass(CONLL, "sequence", C=0.1, chunk=10, window_rows=600)
    assert gap < gap_quarters < gap_quarters_few


def test_a_state_from_other_windows_is_refused():
    """The window's rows and its sweep's UB raise are in the resume state: a state cut inside a
    window resumes only with the same window bound."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10, window_rows=600)
    solver = OnlineDual(task, CONLL, opt)
    states = []

    def keep(record):
        if len(states) < 3:
            states.append(solver.state())
    solver.run(on_chunk=keep)
    state = states[-1]
    assert int(state["window_done"]) > 0 and int(state["window_rows"]) == 600
    same = OnlineDual(task, CONLL, opt, state)
    assert same.window_raise == float(state["window_raise"])
    other = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10, window_rows=900)
    with pytest.raises(StateError, match="rows"):
        OnlineDual(task, CONLL, other, state)


def test_later_sweeps_of_a_window_are_cutting_plane_rounds():
    """The first sweep of a window re-optimises after its chunks (w moves while new examples come);
    a later sweep explores all its chunks at one w and re-optimises at its end, as one round of
    n-slack: the trace's re-optimisation count moves only between sweeps. One pass is still
    certified close, and the same seed gives the same model."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10)
    records = []
    result = OnlineDual(task, CONLL, opt).run(on_chunk=records.append)
    per_sweep = 10                                   # 100 sentences in chunks of 10
    assert len(records) > 3 * per_sweep
    first = [r.solves for r in records[:per_sweep]]
    assert first[-1] - first[0] >= per_sweep // 2    # the first sweep solves as it goes
    for start in range(per_sweep, len(records) - per_sweep + 1, per_sweep):
        sweep = [r.solves for r in records[start:start + per_sweep]]
        assert sweep[0] == sweep[-1]                 # none inside a later sweep
    value = objective.primal(task, result.w, result.geometry, opt.C, data.iter_blocks(CONLL), CONLL)
    assert 0 <= (value.primal - result.dual) / value.primal < 0.01
    again = OnlineDual(streaming_task(task_class("sequence"), CONLL, {}), CONLL, opt).run()
    assert np.array_equal(result.w, again.w) and result.dual == again.dual


def test_a_structured_run_resumes_inside_a_window_bit_for_bit(tmp_path):
    """Stopped after a chunk inside a window's looks (with UB raised since the last
    re-optimisation), saved and loaded: the continued run is the uninterrupted one."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=2, chunk=10, window_rows=600)
    records = []
    whole = OnlineDual(task, CONLL, opt).run(on_chunk=records.append)
    pending = []

    def stop(probe, record):
        pending.append(probe.raised_since_solve)
        return len(pending) > 15 and probe.raised_since_solve > 0 and probe.window_done > 0
    _, cut, state, _ = _stopped_and_saved(task, "sequence", CONLL, opt, tmp_path, stop)
    assert cut.interrupted and len(pending) < len(records)
    assert float(state["raised_since_solve"]) > 0
    resumed = OnlineDual(task, CONLL, opt, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    assert resumed.solves == whole.solves and resumed.epochs == whole.epochs


def test_a_window_does_not_hold_the_blocks_it_was_cut_from():
    """Once a window is handed out, the reader's blocks it was copied from can be freed (held
    through the window's sweeps, they doubled its memory)."""
    import gc
    import weakref
    blocks = list(data.whole_examples(data.iter_blocks(CONLL, block_bytes=3000), "consecutive"))
    assert len(blocks) > 4
    watched = [weakref.ref(b.indices.base if b.indices.base is not None else b.indices)
               for b in blocks[:2]]
    windows = _windows(iter(blocks), "consecutive", 10 ** 6, 10 ** 9)
    del blocks
    gc.collect()
    whole = next(windows)
    gc.collect()
    assert whole.n_rows == 2440
    assert all(ref() is None for ref in watched)


def test_a_structured_sweep_is_cut_into_several_chunks(monkeypatch):
    """A window smaller than one chunk is still swept in STRUCTURED_MIN_CHUNKS chunks, so w moves
    inside its first sweep: with the same number of looks (24), one chunk a sweep (an n-slack
    round from the first look) certifies one pass far worse."""
    from svmtrain.solvers import online
    counts = []
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1)       # chunk 1000 > 100 sentences
    solver = OnlineDual(task, CONLL, opt)
    solver.run(on_chunk=lambda r: counts.append(r.examples))
    first_sweep = [n for n in counts if n < 100] + [100]
    assert len(first_sweep) == online.STRUCTURED_MIN_CHUNKS
    _, _, gap = _one_pass(CONLL, "sequence", C=0.1, window_looks=24)
    monkeypatch.setattr(online, "STRUCTURED_MIN_CHUNKS", 1)
    _, _, gap_one_chunk = _one_pass(CONLL, "sequence", C=0.1, window_looks=24)
    assert 0 <= gap < 0.02 and gap < gap_one_chunk / 2


def _idle_past_two(opt):
    """Run one pass; after each chunk inside a window: (does a constraint of the window's examples
    idle for more than 2 re-optimisations remain, does one of an earlier window's)."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    solver = OnlineDual(task, CONLL, opt)
    seen = []

    def watch(record):
        c = solver.cache
        if solver.window_examples and c.size:
            lo = solver.examples_done
            inside = (c.cons.group >= lo) & (c.cons.group < lo + solver.window_examples)
            seen.append((bool(np.any(c.idle[inside] > 2)), bool(np.any(c.idle[~inside] > 2))))
    solver.run(on_chunk=watch)
    return solver, seen


def test_the_sequence_pruning_period_applies_to_the_current_window():
    """Sequence constraints idle for 2 re-optimisations are pruned while their window is looked
    at (its next sweep brings back what is violated again); an earlier window's are not looked at
    again in the pass, so they keep the default period. An explicit --keep-inactive applies to
    all."""
    from svmtrain.solvers import online
    solver, seen = _idle_past_two(OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10,
                                                window_rows=600))
    assert solver.keep_rounds == 2 < online.DEFAULT_KEEP_INACTIVE
    assert not any(inside for inside, _ in seen)       # the window's own: pruned at 2
    assert any(earlier for _, earlier in seen)          # an earlier window's: kept longer
    _, seen = _idle_past_two(OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10,
                                           window_rows=600, keep_rounds=2))
    assert not any(earlier for _, earlier in seen)


def test_the_window_is_held_once_as_the_row_store_s_rows():
    """A window's rows are the row store's while it is looked at (pinned): the constraints on them
    name them there, nothing of the window is copied again, and the rows no constraint uses go
    when the window is let go. The cache's reported bytes leave the window's rows out."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10, window_rows=600)
    solver = OnlineDual(task, CONLL, opt)
    seen = []

    def watch(record):
        store, c = solver.cache.store, solver.cache
        if store.pinned is None or not c.size:
            return
        first, n = store.pinned
        window_nnz = int(store.indptr[first + n] - store.indptr[first])
        lo = solver.examples_done
        own = (c.cons.group >= lo) & (c.cons.group < lo + solver.window_examples)
        rows = c.cons.select(own).term_row
        data_rows = rows[store.indptr[rows + 1] - store.indptr[rows] > 1]   # not a unit row
        seen.append((bool(np.all((data_rows >= first) & (data_rows < first + n))),
                     window_nnz, record.nbytes))
    solver.run(on_chunk=watch)
    assert seen and all(inside for inside, _, _ in seen)
    # the first chunk's cache is far smaller than the window it would include if counted
    assert seen[0][2] < 12 * seen[0][1]
    store = solver.cache.store
    assert store.pinned is None
    dead = np.diff(store.indptr)[store.refs == 0].sum()
    assert dead <= max(store.nnz - dead, 1 << 16)


def test_a_window_s_parts_go_into_the_store_as_they_are_cut(monkeypatch):
    """A window read in many blocks: each part is in the row store before the next is cut, so a
    window is never held twice (its parts beside their copy), and the model is the same as with
    the window in one block."""
    import weakref
    from svmtrain.solvers import online_reading, online_store
    parts = []                    # weak references to every part cut
    most = []
    compact, add = online_reading._compact, online_store.RowStore.add

    def compacted(block, compact_values=False):
        part = compact(block, compact_values)
        parts.append(weakref.ref(part))
        return part

    def added(store, *args, **kwargs):
        most.append(sum(ref() is not None for ref in parts))
        return add(store, *args, **kwargs)
    monkeypatch.setattr(online_reading, "_compact", compacted)
    monkeypatch.setattr(online_store.RowStore, "add", added)
    task = streaming_task(task_class("sequence"), CONLL, {})
    ws = []
    for block_bytes in (2000, 8 << 20):
        opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10, window_rows=1000,
                            block_bytes=block_bytes)
        ws.append(OnlineDual(task, CONLL, opt).run().w)
    assert max(most) <= 2 and np.array_equal(ws[0], ws[1])


def test_a_multiclass_run_resumes_inside_a_window_bit_for_bit(tmp_path):
    """A resume state holds only the rows in use, each with its row in the window it was saved
    in; the resumed run names the window's rows again, so an example whose constraints share one
    row is solved as in the run that was not stopped: the same model, bit for bit."""
    path = os.path.join(REPO, "data", "pendigits_scale.train.sample")
    task = streaming_task(task_class("multiclass"), path, {})
    opt = OnlineOptions(C=1.0, bias=None, epsilon=1e-3, seed=3, chunk=40, shuffle_window=200)
    whole = OnlineDual(task, path, opt).run()
    chunks = []

    def stop(probe, record):
        chunks.append(record)
        return len(chunks) == 9 and probe.window_done > 0
    probe, cut, state, _ = _stopped_and_saved(task, "multiclass", path, opt, tmp_path, stop)
    assert cut.interrupted
    pinned_nnz = int(np.diff(probe.cache.store.indptr)[probe.cache.store.pinned[0]:].sum())
    assert len(state["store_data"]) < pinned_nnz             # not the window's other rows
    assert np.all(state["store_refs"] > 0) and np.any(state["store_window_row"] >= 0)
    resumed = OnlineDual(task, path, opt, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    assert resumed.solves == whole.solves and resumed.epochs == whole.epochs


def test_a_store_compacted_inside_a_window_changes_nothing_and_holds_the_window_once(monkeypatch):
    """A compaction while a window is pinned moves its rows down with the others: the sweeps then
    take their chunks from the new arrays (a block over the old ones would hold the window twice),
    and the run is the one without compactions, bit for bit."""
    from svmtrain.solvers import online, online_store
    task = streaming_task(task_class("multiclass"), os.path.join(REPO, "data",
                                                                 "pendigits_scale.train.sample"), {})
    path = os.path.join(REPO, "data", "pendigits_scale.train.sample")
    opt = OnlineOptions(C=1.0, bias=None, epsilon=1e-3, seed=5, chunk=40, shuffle_window=300,
                        keep_rounds=1)          # pruning often: keep() compacts often
    plain = OnlineDual(task, path, opt).run()
    compact = online_store.RowStore.compact
    monkeypatch.setattr(online_store.RowStore, "compact",
                        lambda self, term_row, force=False: compact(self, term_row, force=True))
    taken = []
    take = online._take_examples

    def watch(block, starts, which):
        store = solver.cache.store
        taken.append((store.compactions, np.shares_memory(block.data, store._data)))
        return take(block, starts, which)
    monkeypatch.setattr(online, "_take_examples", watch)
    solver = OnlineDual(task, path, opt)
    forced = solver.run()
    assert max(c for c, _ in taken) > 5 and all(shared for _, shared in taken)
    assert np.array_equal(forced.w, plain.w) and forced.dual == plain.dual


def test_a_store_grown_inside_a_window_holds_the_window_once(monkeypatch):
    """Rows added beyond a pinned window (the sequence task's unit rows) grow the store's arrays
    by a copy: the sweeps then take their chunks from the new arrays, and the old ones go (a
    block over them held them), with the same model."""
    from svmtrain.solvers import online, online_store
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10, window_rows=1000)
    plain = OnlineDual(task, CONLL, opt).run()
    monkeypatch.setattr(online_store, "STORE_SPARE", (2, 8))  # every add beyond the window grows
    taken, grew = [], []
    take, room = online._take_examples, online_store._room

    def watch(block, starts, which):
        taken.append(np.shares_memory(block.data, solver.cache.store._data))
        return take(block, starts, which)

    def count(a, n, spare=None):
        out = room(a, n, spare)
        grew.append(solver.cache.store.pinned is not None and out is not a)
        return out
    monkeypatch.setattr(online, "_take_examples", watch)
    monkeypatch.setattr(online_store, "_room", count)
    solver = OnlineDual(task, CONLL, opt)
    grown = solver.run()
    assert sum(grew) > 3 and all(taken)
    assert np.array_equal(grown.w, plain.w) and grown.dual == plain.dual


@functools.lru_cache(maxsize=None)
def _optimum(task_name, path, C):
    """OPT to within 1e-6 (n-slack), an upper bound on every true lower bound."""
    from svmtrain import api
    from svmtrain.options import NSlack, Problem
    model = api.train(path, Problem(task=task_name, C=C, epsilon=1e-6, seed=1), NSlack())
    return model.primal


def _held_within_budgets(solver):
    """Each example's evicted mass plus its cached alphas is at most its C_i: alpha is feasible."""
    c = solver.cache
    ids, inv, C_group, _ = c.groups()
    cached = np.bincount(inv, weights=c.alpha, minlength=len(ids))
    pos = np.minimum(np.searchsorted(solver.folded_ids, ids), max(len(solver.folded_ids) - 1, 0))
    folded = np.zeros(len(ids))
    if len(solver.folded_ids):
        hit = solver.folded_ids[pos] == ids
        folded[hit] = solver.folded_mass[pos[hit]]
    return bool(np.all(cached + folded <= C_group * (1 + 1e-12)))


def test_a_cache_limit_keeps_the_evicted_support_vectors_in_w():
    """A cache bounded below what the file's support constraints need: the evicted support
    vectors stay in w (w0) with their alphas, so the bound is still a true lower bound (below the
    optimum), alpha stays feasible over passes in which their examples come back (budgets less
    the evicted mass), and the certificate stays meaningful; taking them out of w, as before,
    certified 0.82 here. Their terms are kept over their example's rows (Folded): when the
    example is read again they return to the cache with their alphas, and later passes revise
    them (frozen for good, three passes certified 0.216 here, as one pass). The same seed gives
    the same model."""
    OPT = _optimum("sequence", CONLL, 0.1)
    gaps, results = [], []
    kw = dict(C=0.1, chunk=10, window_rows=500, cache_limit=150)
    for passes in (1, 3):
        run, result, gap = _one_pass(CONLL, "sequence", passes=passes, **kw)
        assert run.w0 is not None and len(run.folded_ids) > 0 and run.folded.size > 0
        assert run.cache.size <= 150
        assert _held_within_budgets(run)
        assert result.dual <= OPT
        gaps.append(gap)
        results.append(result)
    assert 0 <= gaps[1] < 0.05 < gaps[0] < 0.3, gaps
    _, again, _ = _one_pass(CONLL, "sequence", passes=1, **kw)
    assert np.array_equal(results[0].w, again.w) and results[0].dual == again.dual


def test_a_sparse_w0_takes_a_fold_as_a_dense_one_does():
    """w0 (the evicted support vectors' w) is held as its non-zeros: a fold's entries, listed by
    plane_entries in accumulate_plane's order, leave it as a dense w0 would be, bit for bit
    (columns met by several terms and by the bias, a fold and its return cancelling to zeros,
    which are dropped)."""
    from svmtrain._oneslack import accumulate_plane, plane_entries
    from svmtrain.solvers.online_store import SparseW0
    rng = np.random.default_rng(3)
    n_rows, n_cols, stride, n_terms = 40, 30, 3, 200
    lengths = rng.integers(0, 8, n_rows)
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(n_cols, k, replace=False))
                              for k in lengths]).astype(np.int32)
    values = rng.normal(size=len(indices))
    n_w = stride * (n_cols + 1)
    tptr = np.concatenate(([0], np.cumsum(rng.integers(1, 6, 50)))).astype(np.int64)
    tptr = tptr[tptr <= n_terms]
    n_t = int(tptr[-1])
    terms = (tptr, rng.integers(0, n_rows, n_t).astype(np.int64), rng.normal(size=n_t),
             rng.integers(0, stride, n_t).astype(np.int64), rng.random(n_t) < 0.5)
    listed, banded, dense = SparseW0(n_w), SparseW0(n_w), np.zeros(n_w)
    # a fold of a few constraints, then larger ones: w0 goes from its non-zeros to a vector
    weights = [rng.random(len(tptr) - 1) * (rng.random(len(tptr) - 1) < share)
               for share in (0.05, 0.7, 0.7)]
    forms = set()
    for weight in weights + [-weights[0], -weights[1], -weights[2]]:
        args = (indptr, indices, values, n_cols) + terms + (weight, 1.5, True, stride)
        listed.add(*plane_entries(*args, n_w))
        # a band at a time (the bands after the first call unchecked), or the whole vector once
        # w0 is held so
        calls = []

        def accumulate(band, lo, checked):
            calls.append(checked)
            accumulate_plane(*args, band, np.ones(len(band), np.uint8),
                             np.empty(len(band), np.int64), lo=lo, n_w=n_w, checked=checked)
        banded.add_dense_bands(accumulate, 4)
        assert calls[0] is False and all(calls[1:])       # the first call checks the terms
        accumulate_plane(*args, dense, np.ones(n_w, np.uint8), np.empty(n_w, np.int64))
        for w0 in (listed, banded):
            assert np.array_equal(w0.dense(), dense)
            forms.add(w0.full is None)
            if w0.full is None:
                assert np.all(np.diff(w0.index) > 0) and np.all(w0.value != 0)
                assert 3 * len(w0.index) <= 2 * n_w
            else:
                assert 3 * np.count_nonzero(w0.full) >= n_w
    assert forms == {True, False}         # both forms were taken on the way


def test_w0_is_held_in_the_smaller_of_its_two_forms():
    """w0 as its non-zeros takes 12 bytes an entry, as a vector 8: a vector above two thirds of
    non-zeros, the non-zeros below one third, as it was between (no flip-flopping)."""
    from svmtrain.solvers.online_store import SparseW0
    n = 300
    mostly = np.where(np.arange(n) % 10 < 8, 1.5, 0.0)
    assert SparseW0.of(mostly).full is not None
    few = np.where(np.arange(n) % 10 < 2, 1.5, 0.0)
    w0 = SparseW0.of(few)
    assert w0.full is None and len(w0.index) == 60
    w = np.arange(n, dtype=np.float64)
    assert w0.dot(w) == float(np.dot(w, few))
    # half: it stays in the form it was in
    w0.add(np.arange(n)[(np.arange(n) % 10 >= 2) & (np.arange(n) % 10 < 5)], np.full(90, 1.5))
    assert w0.full is None and len(w0.index) == 150
    w0.add(np.arange(n)[(np.arange(n) % 10 >= 5) & (np.arange(n) % 10 < 8)], np.full(90, 1.5))
    assert w0.full is not None and np.array_equal(w0.dense(), mostly)
    w0.add(np.arange(n)[(np.arange(n) % 10 >= 2) & (np.arange(n) % 10 < 8)], np.full(180, -1.5))
    assert w0.full is None and np.array_equal(w0.dense(), few)
    out = np.full(n, 7.0)
    assert w0.dense(out) is out and np.array_equal(out, few)
    w2 = np.ones(n)
    w0.add_to(w2)
    assert np.array_equal(w2, 1.0 + few)


def test_a_band_of_a_plane_stays_in_its_band():
    """accumulate_plane over a band writes within it whatever the columns (an unchecked band
    too), and lists the band's own positions."""
    from svmtrain._oneslack import accumulate_plane
    indptr = np.array([0, 3], np.int64)
    indices = np.array([0, 4, 9], np.int32)
    values = np.array([1.0, 2.0, 3.0])
    terms = (np.array([0, 1], np.int64), np.array([0], np.int64), np.array([2.0]),
             np.array([0], np.int64), np.array([False]))
    args = (indptr, indices, values, 10) + terms + (np.array([1.0]), 0.0, False, 1)
    for checked in (False, True):
        band = np.zeros(5)
        mark, listed = np.zeros(5, np.uint8), np.zeros(5, np.int64)
        count = accumulate_plane(*args, band, mark, listed, lo=3, n_w=10, checked=checked)
        assert np.array_equal(band, [0.0, 4.0, 0.0, 0.0, 0.0]) and count == 1 and listed[0] == 1
    with pytest.raises(ValueError, match="within w"):
        accumulate_plane(*args, np.zeros(5), np.zeros(5, np.uint8), np.zeros(5, np.int64), lo=6,
                         n_w=10)


def _sequence_in_bytes(limit, passes):
    """(task, path, options) of the conll2000 sample in 500-row windows under a byte bound."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    return task, CONLL, OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10,
                                      window_rows=500, cache_limit_bytes=limit, passes=passes)


def test_a_byte_bound_holds_the_kept_terms_too():
    """Under a bound in bytes the evicted support vectors' kept terms count against it, and take
    at most half of it; the oldest beyond are frozen for good. Every bound stays a true lower
    bound."""
    records = []
    limit = 60_000
    solver = OnlineDual(*_sequence_in_bytes(limit, passes=2))
    kept = []

    def record(r):
        records.append(r)
        kept.append(solver.folded.nbytes)
    result = solver.run(on_chunk=record)
    assert max(r.nbytes for r in records) <= result.cache_peak_bytes <= limit
    assert 0 < max(kept) <= limit // 2
    assert result.dual <= _optimum("sequence", CONLL, 0.1) and _held_within_budgets(solver)


def test_eviction_counts_the_bytes_the_bound_counts():
    """The bytes eviction expects the kept constraints to hold (_kept_bytes) are the bytes the
    bound then counts (Cache.nbytes): counted otherwise (12 bytes a row entry, where a sequence
    store holds 5), eviction went further below the bound than it was asked to."""
    from svmtrain.solvers.online_store import _kept_bytes
    solver = OnlineDual(*_sequence_in_bytes(60_000, passes=1))
    seen = []

    def watch(record):
        c = solver.cache
        seen.append((_kept_bytes(c, np.arange(c.size)), c.nbytes))
    solver.run(on_chunk=watch)
    assert len(seen) > 10 and all(kept == held for kept, held in seen)


def test_a_passed_byte_bound_is_evicted_below_it(monkeypatch):
    """Once a byte bound is passed, eviction takes the cache down to EVICT_TO of what the bound
    leaves it, so that the next chunks fit without another eviction (one after every chunk made
    bounded multiclass runs several times slower): the cache is never above the bound after an
    eviction, and an eviction that took something leaves it at most EVICT_TO of its budget."""
    from svmtrain.solvers import online
    solver = OnlineDual(*_sequence_in_bytes(60_000, passes=1))
    after = []
    evict = online.OnlineDual._evict

    def evict_and_record(self, budget, keep=None):
        size = self.cache.size
        evicted = evict(self, budget, keep)
        if budget is not None and self.cache.size < size:
            after.append((self.cache.nbytes, budget))
        return evicted
    monkeypatch.setattr(online.OnlineDual, "_evict", evict_and_record)
    result = solver.run()
    assert len(after) > 3
    assert all(held <= online.EVICT_TO * budget for held, budget in after)
    assert result.dual <= _optimum("sequence", CONLL, 0.1) and _held_within_budgets(solver)


def test_the_bound_holds_before_the_next_window_is_read(monkeypatch):
    """A let-go window's rows still in use count against a byte bound: the cache is brought
    within it before the next window is read, not after that window's first chunk (else the old
    window's rows are held beside the new one)."""
    from svmtrain.solvers.online_store import RowStore
    limit = 60_000
    solver = OnlineDual(*_sequence_in_bytes(limit, passes=1))
    held = []
    pin = RowStore.pin

    def pin_and_record(store, parts, before=None):
        held.append(solver.cache.nbytes + solver.folded.nbytes)
        return pin(store, parts, before)
    monkeypatch.setattr(RowStore, "pin", pin_and_record)
    result = solver.run()
    assert len(held) > 3                      # several windows
    assert max(held[1:]) <= limit and result.cache_peak_bytes <= limit
    assert result.dual <= _optimum("sequence", CONLL, 0.1) and _held_within_budgets(solver)


def test_a_run_under_a_byte_bound_resumes_bit_for_bit(tmp_path):
    """Stopped after some windows were let go (and brought within the bound), a run resumed from
    its state is the run that was not stopped."""
    task, _, o = _sequence_in_bytes(60_000, passes=1)
    whole = OnlineDual(task, CONLL, o).run()
    _, cut, state, _ = _stopped_and_saved(task, "sequence", CONLL, o, tmp_path,
                                          lambda probe, record: probe.w0 is not None
                                          and probe.rows_done > 1500)
    assert cut.interrupted
    resumed = OnlineDual(task, CONLL, o, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    # (and the summary's counts of evicted and returned support vectors)
    assert whole.evicted > 0 and (resumed.evicted, resumed.returned) == (whole.evicted,
                                                                         whole.returned)


def _refuses_broken_kept_terms(state, fields, cases):
    """Each (key, breakage) of the evicted support vectors' kept terms makes load_state refuse
    the state (an empty array is skipped: the sequence task keeps codes, not terms)."""
    from svmtrain.solvers.online_state import load_state
    for key, broken in cases:
        if not len(state[key]):
            continue
        with pytest.raises(StateError, match="evicted support vectors"):
            load_state(dict(state, **{key: broken(state[key])}), fields)


def test_a_run_with_evicted_support_vectors_resumes_bit_for_bit(tmp_path):
    """The evicted support vectors (w0, their margin and mass) are in the resume state; a state
    whose w0 does not fit w is refused."""
    from svmtrain.solvers.online_state import load_state
    task = streaming_task(task_class("sequence"), CONLL, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=2, chunk=10, window_rows=500,
                        cache_limit=150, passes=2)
    whole = OnlineDual(task, CONLL, opt).run()
    _, cut, state, fields = _stopped_and_saved(
        task, "sequence", CONLL, opt, tmp_path,
        lambda probe, record: probe.w0 is not None and record.pass_ == 2)
    assert cut.interrupted
    assert len(state["w0"]) == len(state["w"]) and float(state["fold_margin"]) > 0
    assert len(state["fold_group"]) > 0 and len(state["term_rel"]) == len(state["term_row"])
    assert state["fold_coded"].all() and len(state["fold_codes"]) > 0     # the sequence task's codes
    resumed = OnlineDual(task, CONLL, opt, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    bad = dict(state, w0=state["w0"][:-1])
    with pytest.raises(StateError, match="w0"):
        load_state(bad, fields)
    # the kept terms of the evicted are checked as the cache's are
    _refuses_broken_kept_terms(state, fields, (
        ("fold_offset", lambda a: a + len(state["w"])), ("fold_tptr", lambda a: a[:-1]),
        ("fold_rel", lambda a: a - 10 ** 6), ("fold_alpha", lambda a: -a),
        ("fold_codes", lambda a: a - 10 ** 12), ("fold_coded", lambda a: ~a),
        ("fold_group", lambda a: a + 10 ** 9), ("term_rel", lambda a: a[:-1])))
    # a state of the version before (no kept terms) still resumes; its evicted stay frozen
    from svmtrain.solvers.online_state import _FOLD_KEYS
    old = {k: v for k, v in state.items() if k not in _FOLD_KEYS}
    old["version"] = np.array(8)
    loaded = load_state(old, fields)
    again = OnlineDual(task, CONLL, opt, loaded)
    assert again.folded.size == 0 and np.all(again.cache.store.positions == -2)
    assert again.run().dual <= _optimum("sequence", CONLL, 0.1)


def test_evicted_multiclass_support_vectors_keep_their_terms_and_resume(tmp_path):
    """A task without codes (multiclass) keeps an evicted support vector as its terms over its
    example's rows; they come back in the next pass, a resume state holds them (checked like the
    cache's), and the resumed run is the same bit for bit."""
    path = os.path.join(REPO, "data", "pendigits_scale.train.sample")
    task = streaming_task(task_class("multiclass"), path, {})
    opt = OnlineOptions(C=1.0, bias=None, epsilon=1e-3, seed=3, chunk=40, shuffle_window=200,
                        cache_limit=120, passes=2)
    whole = OnlineDual(task, path, opt).run()
    _, cut, state, fields = _stopped_and_saved(
        task, "multiclass", path, opt, tmp_path,
        lambda probe, record: record.pass_ == 2 and probe.folded.size > 0)
    assert cut.interrupted and not state["fold_coded"].any() and len(state["fold_rel"]) > 0
    resumed = OnlineDual(task, path, opt, state).run()
    assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
    _refuses_broken_kept_terms(state, fields, (
        ("fold_offset", lambda a: a + len(state["w"])), ("fold_rel", lambda a: a - 10 ** 6),
        ("fold_bias", lambda a: a[:-1])))


def _written(tmp_path, times):
    """The conll2000 sample written `times` times over, each copy's sentences numbered on."""
    out = []
    for copy in range(times):
        for line in open(CONLL).read().splitlines():
            label, qid, rest = line.split(" ", 2)
            out.append(f"{label} qid:{int(qid[4:]) + 100 * copy} {rest}")
    path = tmp_path / f"conll.x{times}.svm"
    path.write_text("\n".join(out) + "\n")
    return str(path)


def _by_window(path, window_bound=True, **more):
    task = streaming_task(task_class("sequence"), path, {})
    opt = OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1, chunk=10, window_rows=500,
                        window_bound=window_bound, **more)
    return task, opt


def test_the_window_bound_keeps_the_cache_flat_as_the_file_grows(tmp_path):
    """By default a file of several windows keeps at most what its largest window's constraints
    needed: the sample written 4 times holds no more than once (without a bound, about 4 times
    as much), only earlier windows' support vectors are evicted, alpha stays feasible, and the
    lower bound stays a true one."""
    peaks = {}
    for times in (1, 4):
        path = _written(tmp_path, times)
        for bounded in (True, False):
            task, opt = _by_window(path, bounded)
            solver = OnlineDual(task, path, opt)
            result = solver.run()
            peaks[times, bounded] = result.cache_peak_bytes
            if bounded:
                assert result.evicted > 0 and solver.window_bound is not None
                assert solver.cache.nbytes + solver.folded.nbytes <= solver.window_bound
                assert _held_within_budgets(solver)
            else:
                assert result.evicted == 0
        assert result.dual <= _optimum("sequence", CONLL, 0.1) * times * (1 + 1e-9)
    assert peaks[4, True] <= 1.1 * peaks[1, True]
    assert peaks[4, False] > 1.4 * peaks[1, False]


def test_the_window_bound_spares_the_window_being_looked_at(monkeypatch):
    """The window bound evicts earlier windows' constraints only: a support vector evicted from
    the window being looked at would come back at its next sweep (a thrash)."""
    task, opt = _by_window(CONLL)
    evict = OnlineDual._evict
    spared = []

    def evict_and_check(self, budget, keep=None):
        if self._window_bounding:
            first, n = self.examples_done, self.window_examples
            spared.append(keep is not None)
            before = self.cache.cons.group[(self.cache.cons.group >= first)
                                           & (self.cache.cons.group < first + n)].copy()
            evict(self, budget, keep)
            after = self.cache.cons.group[(self.cache.cons.group >= first)
                                          & (self.cache.cons.group < first + n)]
            assert n == 0 or np.array_equal(np.sort(before), np.sort(after))
            return True
        return evict(self, budget, keep)
    monkeypatch.setattr(OnlineDual, "_evict", evict_and_check)
    result = OnlineDual(task, CONLL, opt).run()
    assert spared and all(spared) and result.evicted > 0


def test_a_let_go_window_is_brought_within_the_bound_before_the_next_is_read(tmp_path,
                                                                            monkeypatch):
    """The window bound is what the cache held while a window was looked at, the window's own
    rows not counted (they are its data); when the window is let go its rows in use count, and
    once the next window's first part is read, its constraints are evicted down to the bound
    before that window's rows are stored: they are not held beside them (UD English EWT written
    4 times: peak RSS 125.2 -> 120.5 MB). The file of one window is never bounded (above)."""
    from svmtrain.solvers.online_store import RowStore
    path = _written(tmp_path, 4)
    task, opt = _by_window(path, passes=1)
    solver = OnlineDual(task, path, opt)
    held, held_in_window = [], []
    arrives, unpin, add = OnlineDual._window_arrives, RowStore.unpin, RowStore.add

    def arrives_and_record(self):
        arrives(self)
        held.append((self.cache.nbytes + self.folded.nbytes, self.window_bound,
                     self.cache.store.pinned))

    def unpin_and_record(store):
        if store is solver.cache.store:
            held_in_window.append(solver.cache.nbytes + solver.folded.nbytes)
        unpin(store)
    monkeypatch.setattr(OnlineDual, "_window_arrives", arrives_and_record)
    monkeypatch.setattr(RowStore, "unpin", unpin_and_record)
    result = solver.run()
    # called for each window, before its rows are stored; the bound is known from the second on
    assert len(held) == len(held_in_window) and held[0][1] is None
    assert len(held) > 3 and all(h <= bound and pinned is None for h, bound, pinned in held[1:])
    assert solver.window_bound == max(held_in_window)    # the rows of a window not counted
    assert result.evicted > 0 and _held_within_budgets(solver)
    assert result.dual <= 4 * _optimum("sequence", CONLL, 0.1) * (1 + 1e-9)


def test_the_last_pass_keeps_evicted_support_vectors_only_for_a_resume_state(tmp_path):
    """An evicted support vector of an earlier window comes back when its example is read
    again, which the last pass does not do: there it is kept only for a run that continues this
    one with more passes (keep_evicted: the pipeline's --save-state), and frozen otherwise, its
    alpha in w0 and its example's evicted mass as before. The bound then has the room the kept
    terms took, and the certificate stays a true one."""
    path = _written(tmp_path, 4)
    runs = {}
    for keep in (True, False):
        for passes in (1, 2):
            task, opt = _by_window(path, passes=passes, keep_evicted=keep)
            solver = OnlineDual(task, path, opt)
            result = solver.run()
            runs[keep, passes] = solver, result
            assert result.evicted > 0 and _held_within_budgets(solver)
            assert result.dual <= 4 * _optimum("sequence", CONLL, 0.1) * (1 + 1e-9)
    assert runs[True, 1][0].folded.size > 0 and not len(runs[True, 1][0].frozen_ids)
    assert runs[False, 1][0].folded.size == 0 and len(runs[False, 1][0].frozen_ids) > 0
    # the first of two passes keeps them either way: they come back in the second, which then
    # freezes what it evicts
    assert runs[False, 2][1].returned > 0 and len(runs[False, 2][0].frozen_ids) > 0


def test_the_command_keeps_the_last_pass_evictions_for_save_state_only(tmp_path):
    """`train` keeps the support vectors its last pass evicts from earlier windows when
    --save-state asks for a resume state, which a run with more passes continues and revises
    them in; else they are frozen, and the cache has the room they took (another model). Either
    model is certified by verify-bound."""
    import json
    from click.testing import CliRunner
    from svmtrain.cli import main
    from svmtrain.model import read_model
    path, runner = _written(tmp_path, 4), CliRunner()
    models = {}
    for save_state in (False, True):
        model = tmp_path / f"m{int(save_state)}"
        state = ["--save-state", str(tmp_path / "s.npz")] if save_state else []
        r = runner.invoke(main, ["train", "-q", "-t", "sequence", "-c", "0.1", "-m",
                                 "online-dual", "--chunk", "10", "--window-rows", "500", *state,
                                 path, str(model)])
        assert r.exit_code == 0, r.output
        r = runner.invoke(main, ["verify-bound", "--json", str(model), path])
        assert r.exit_code in (0, 1), r.output
        checked = json.loads(r.stdout)
        models[save_state] = read_model(str(model))
        assert checked["dual"] == models[save_state].dual <= checked["primal"]
    kept = np.load(tmp_path / "s.npz")
    assert len(kept["fold_group"]) > 0 and len(kept["frozen_ids"]) == 0
    assert not np.array_equal(models[False].w, models[True].w)


def test_a_file_of_one_window_is_not_bounded(tmp_path):
    """A file of one window has no earlier window to evict: the default is the run without a
    bound, bit for bit, pass after pass."""
    task = streaming_task(task_class("sequence"), CONLL, {})
    runs = [OnlineDual(task, CONLL, OnlineOptions(C=0.1, bias=None, epsilon=1e-3, seed=1,
                                                  chunk=10, passes=2, window_bound=bounded)).run()
            for bounded in (True, False)]
    assert np.array_equal(runs[0].w, runs[1].w) and runs[0].dual == runs[1].dual
    assert runs[0].cache_peak_bytes == runs[1].cache_peak_bytes and runs[0].evicted == 0


def test_a_run_under_the_window_bound_resumes_bit_for_bit(tmp_path):
    """Stopped in the first window (before the bound is known), in a later one (earlier windows'
    support vectors evicted) or in the second pass, a run resumed from its state is the run that
    was not stopped."""
    task, opt = _by_window(CONLL, passes=2)
    whole = OnlineDual(task, CONLL, opt).run()
    assert whole.evicted > 0
    for when in (lambda probe, record: probe.rows_done == 0 and probe.window_done > 20,
                 lambda probe, record: probe.w0 is not None and probe.rows_done > 1500,
                 lambda probe, record: record.pass_ == 2 and probe.rows_done > 0):
        _, cut, state, fields = _stopped_and_saved(task, "sequence", CONLL, opt, tmp_path, when)
        first_window = int(state["rows_done"]) == 0 and int(state["pass"]) == 0
        assert cut.interrupted and (int(state["window_bound"]) > 0) != first_window
        assert bool(state["rel_kept"]) != first_window
        resumed = OnlineDual(task, CONLL, opt, state).run()
        assert np.array_equal(resumed.w, whole.w) and resumed.dual == whole.dual
        assert (resumed.evicted, resumed.returned) == (whole.evicted, whole.returned)


def test_windows_of_a_long_file_are_cut_alike(tmp_path):
    """A plain file longer than a window is cut into windows of about equal size (its rows
    estimated from its head, not from the reader's blocks), not into full windows and what
    remains: the window bound holds what the largest window needed."""
    from svmtrain.solvers.online_reading import _balanced_windows, _window_parts
    path = _written(tmp_path, 30)                   # 73,200 rows, 3,000 sentences
    size, max_rows, windows = _balanced_windows(path, "consecutive", 100000, 20000)
    assert size == 100000 and 18000 <= max_rows <= 19000 and windows == 4    # of 73,200 rows

    def window_rows(rows_cap, block_bytes):
        rows, n = [], 0
        blocks = data.stream(path, block_bytes=block_bytes)
        for part in _window_parts(data.whole_examples(blocks, "consecutive"), "consecutive",
                                  size, rows_cap):
            if part is None:
                rows.append(n)
                n = 0
            else:
                n += part.n_rows
        return rows
    before, cut = window_rows(20000, 1 << 16), window_rows(max_rows, 1 << 20)
    assert len(before) == 4 and before[-1] < 0.7 * min(before[:-1])
    assert sum(cut) == 73200 and len(cut) == 4 and min(cut) > 0.9 * max(cut)
    assert cut == window_rows(max_rows, 1 << 16)          # whatever the reader's blocks
    # a file the reader takes whole (below a MiB), standard input: the caps given
    assert _balanced_windows(CONLL, "consecutive", 100000, 500) == (100000, 500, None)
    assert _balanced_windows("-", "consecutive", 100000, 500) == (100000, 500, None)


def test_the_cache_numbers_its_rows_in_int32_and_lets_the_fold_go_when_released(tmp_path):
    """The cache's row numbers take 4 bytes a term, not 8 (a third of a sequence term's memory),
    in a run and in the run resumed from its state; release() lets go, with the cache, what the
    evicted support vectors keep (their codes and w0), which the certificate's pass does not need."""
    path = _written(tmp_path, 4)
    task, opt = _by_window(path)
    solver = OnlineDual(task, path, opt)
    result = solver.run()
    assert result.evicted > 0 and solver.cache.cons.term_row.dtype == np.int32
    state = solver.state()
    resumed = OnlineDual(task, path, opt, state)
    assert resumed.cache.cons.term_row.dtype == np.int32      # (renumbered to the rows in use)
    assert resumed.cache.size == solver.cache.size
    solver.release()
    assert solver.cache is None and solver.folded is None and solver.w0 is None
