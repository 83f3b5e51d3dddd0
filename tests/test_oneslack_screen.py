"""Oracle screening in the 1-slack mode (pyx/_oneslack.pyx, ScreenedOracle): the screened plane and
loss equal the unscreened pass's (up to rounding; bit for bit on a reference pass) at every query
point, whatever the screening leaves out."""

import pickle

import numpy as np
import pytest

from svmtrain import data
from svmtrain._oneslack import ScreenedOracle
from svmtrain.solvers import oneslack
from svmtrain.tasks.base import Geometry
from svmtrain.tasks.binary import Binary
from svmtrain.tasks.multiclass import Multiclass


def _dense(cols, vals, n_w):
    out = np.zeros(n_w)
    out[cols] = vals
    return out


def _shards(path, task_class, bias, scale=None, **task_options):
    block = data.load(str(path))
    if scale is not None:
        block.data[:] = block.data / scale
    task = task_class.from_training_data(block, str(path), task_options or None)
    return task, oneslack.LocalShards(task, block, str(path), 1.0, Geometry(block.n_features, bias))


def _queries(w_star, rng, count):
    """Query points around w_star as the 1-slack loop makes them: jumps of every size, away from
    the reference and back toward it, and new references now and then."""
    scale = float(np.linalg.norm(w_star)) or 1.0
    steps = [0.0, 1e-3, 3e-2, 1e-2, 0.3, 1e-3, 2.0, 5e-2, 0.0, 1e-1, 1e-4, 1.0, 2e-2]
    for k in range(count):
        size = steps[k % len(steps)] * scale
        direction = rng.standard_normal(len(w_star))
        yield w_star + size * direction / np.linalg.norm(direction), k % 5 == 0


@pytest.mark.parametrize("case", ["a9a binary", "a9a binary bias", "pendigits multiclass",
                                  "pendigits multiclass slack bias"])
def test_screened_planes_and_losses_equal_the_full_pass(case, shared, monkeypatch):
    # several shards, so that the reduce and per-shard references are exercised too
    monkeypatch.setattr(oneslack, "MIN_SHARD_NONZEROS", 5000)
    monkeypatch.setattr(oneslack, "MIN_SHARD_EXAMPLES", 8)
    bias = 1.0 if "bias" in case else None
    if "a9a" in case:
        task, shards = _shards(shared("a9a/a9a.xz", max_lines=3000), Binary, bias)
    else:
        task, shards = _shards(shared("pendigits/pendigits.xz", max_lines=2000), Multiclass, bias,
                               scale=100.0, rescaling="slack" if "slack" in case else None)
    assert len(shards) > 1
    w_star = oneslack.train_oneslack(task, shards.block, shards.path, C=1.0, bias=bias,
                                     epsilon=1e-2, max_epochs=2000, seed=1, screen=False).w
    n_w, n = len(w_star), shards.block.n_rows
    scratch = oneslack._Scratch(n_w)
    rng = np.random.default_rng(7)
    ref, w_ref, scored = 0, None, []
    for q, new_ref in _queries(w_star, rng, 60):
        if new_ref:
            ref, w_ref = ref + 1, q.copy()
            args = (ref, -1.0)
        else:
            rho, move = oneslack._screen_bounds(task, q - w_ref)
            args = (ref, rho, *(move or ()))
        full = [oneslack._from_oracle(s, scratch, task, q, 1, False, 0) for s in shards.shards]
        part = [oneslack._from_oracle(s, scratch, task, q, 1, False, 0, *args) for s in shards.shards]
        for (l0, c0, v0, b0, n0), (l1, c1, v1, b1, n1) in zip(full, part):
            if new_ref:
                # a reference pass: the plane summed in the same order (the unscreened multiclass
                # loss is a numpy dot, summed in another)
                assert n1 == n0 and l1 == pytest.approx(l0, rel=1e-13)
                assert b1 == pytest.approx(b0, rel=1e-13)
                assert np.array_equal(c1, c0) and np.array_equal(v1, v0)
            else:
                assert l1 == pytest.approx(l0, rel=1e-9, abs=1e-9)
                assert b1 == pytest.approx(b0, rel=1e-12, abs=1e-12)
                scale = max(1.0, float(np.max(np.abs(v0), initial=0.0)))
                assert np.allclose(_dense(c1, v1, n_w), _dense(c0, v0, n_w), rtol=0,
                                   atol=1e-10 * scale)
        if not new_ref:
            scored.append(sum(p[4] for p in part))
    shards.close()
    scored = np.array(scored)
    # the screening did leave examples out near the reference, and scored them all far from it
    assert scored.min() < 0.5 * n and scored.max() > 0.5 * n


def test_screening_against_brute_force_with_empty_and_repeated_rows():
    """A hand-made problem: an empty row (its scores never move), repeated rows, the bias."""
    rng = np.random.default_rng(3)
    rows = [[], [0, 2], [0, 2], [1], [0, 1, 2, 3], [3], [], [2, 3]]
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    indices = np.array([c for r in rows for c in r], np.int64)
    values = rng.uniform(-1, 1, len(indices))
    n, n_cols, K = len(rows), 4, 3
    X = np.zeros((n, n_cols + 1))
    for i in range(n):
        X[i, indices[indptr[i]:indptr[i + 1]]] = values[indptr[i]:indptr[i + 1]]
    X[:, n_cols] = 0.5                                   # the bias feature
    C = rng.uniform(0.5, 2.0, n)
    y_sign = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y_class = rng.integers(0, K, n)
    width = n_cols + 1
    for K_ in (0, K):
        n_w = width * max(K_, 1)
        oracle = ScreenedOracle(indptr, indices, values, n_cols, n_w,
                                y_sign if K_ == 0 else y_class, C, 0.5, True, K_)
        dense, mark, touched = np.zeros(n_w), np.zeros(n_w, np.uint8), np.zeros(n_w, np.int64)
        ref = rng.standard_normal(n_w)
        for step, size in enumerate([0.0, 0.01, 0.5, 0.02, 3.0, 0.0, 0.1]):
            q = ref + size * rng.standard_normal(n_w)
            diff = q - ref
            if K_ == 0:
                rho, move = np.linalg.norm(diff) * (1 + 1e-9), None
                H = 1.0 - y_sign * (X @ q)
                plane = (C * y_sign * (H > 0)) @ X
            else:
                Wd = diff.reshape(width, K_)
                norms = np.linalg.norm(Wd, axis=0) * (1 + 1e-9)
                rho = np.sort(norms)[-2:].sum()
                # R_k = |d_k| + the largest |d_j| of the other classes
                by_label = np.array([norms[k] + np.delete(norms, k).max() for k in range(K_)])
                pad = 1e-9 * np.abs(Wd).max(axis=1)
                move = (diff, Wd.max(axis=1) + pad, Wd.min(axis=1) - pad, by_label)
                S = X @ q.reshape(width, K_)
                f = 1.0 - (S[np.arange(n), y_class][:, None] - S)
                f[np.arange(n), y_class] = 0.0
                j = np.argmax(f, axis=1)
                H = f[np.arange(n), j]
                plane = np.zeros((width, K_))
                for i in np.flatnonzero(H > 0):
                    plane[:, y_class[i]] += C[i] * X[i]
                    plane[:, j[i]] -= C[i] * X[i]
                plane = plane.ravel()
            count, loss, b, scored = oracle.plane(q, step == 0, rho, move, dense, mark, touched)
            cols = np.sort(touched[:count])
            got = _dense(cols, dense[cols], n_w)
            dense[cols], mark[cols] = 0.0, 0
            assert loss == pytest.approx(float(C @ np.maximum(H, 0.0)), rel=1e-12, abs=1e-12)
            assert b == pytest.approx(float(C @ (H > 0)), rel=1e-12)
            assert np.allclose(got, plane, rtol=0, atol=1e-12)
            if step == 0:
                ref = q
            if size == 0.0:
                # at the reference point itself only the rows with a zero gap are scored
                assert scored <= (n if step == 0 else n - 1)


def test_a_shard_without_the_current_reference_scores_every_example(shared):
    """A shard rebuilt elsewhere (Dask) has no state for the current reference: it scores all its
    examples, gives the full plane, and keeps no reference until the next one."""
    task, shards = _shards(shared("a9a/a9a.xz", max_lines=500), Binary, None)
    shard = shards.shards[0]
    n_w = task.n_weights(shards.geometry)
    scratch = oneslack._Scratch(n_w)
    w = np.random.default_rng(1).standard_normal(n_w) * 0.1
    full = oneslack._from_oracle(shard, scratch, task, w, 1, False, 0)
    got = oneslack._from_oracle(shard, scratch, task, w, 1, False, 0, 5, 0.01)
    assert got[4] == shard.block.n_rows and shard.screen.ref is None
    assert got[0] == full[0] and np.array_equal(got[2], full[2])
    # a shard that has a reference, moved (pickled) to another worker, starts without
    oneslack._from_oracle(shard, scratch, task, w, 1, False, 0, 6, -1.0)
    assert oneslack._from_oracle(shard, scratch, task, w, 1, False, 0, 6, 0.0)[4] < 100
    moved = pickle.loads(pickle.dumps(shard))
    got = oneslack._from_oracle(moved, scratch, task, w, 1, False, 0, 6, 0.0)
    assert got[4] == shard.block.n_rows and got[0] == full[0]
    shards.close()


def test_screening_changes_the_path_not_the_optimum(shared):
    path = shared("a9a/a9a.xz", max_lines=3000)
    block = data.load(str(path))
    task = Binary.from_training_data(block, str(path))
    runs = [oneslack.train_oneslack(task, block, str(path), C=1.0, bias=1.0, epsilon=1e-3,
                                    max_epochs=5000, seed=1, screen=screen)
            for screen in (False, True)]
    for r in runs:
        assert r.relative_gap <= 1e-3
    off, on = runs
    assert abs(on.primal - off.primal) <= 1e-3 * off.primal
    assert on.dual <= off.primal and off.dual <= on.primal
    # fewer examples scored per pass with screening
    assert on.examples_scored / on.oracle_passes < 0.9 * off.examples_scored / off.oracle_passes


@pytest.mark.parametrize("case", ["a9a binary", "pendigits multiclass"])
def test_probe_counts_what_the_pass_scores(case, shared):
    """The probe before a pass (stride 1: every example) counts exactly the examples the screened
    pass then scores; a stride probes every stride-th example; no reference: all count."""
    if "a9a" in case:
        task, shards = _shards(shared("a9a/a9a.xz", max_lines=2000), Binary, None)
    else:
        task, shards = _shards(shared("pendigits/pendigits.xz", max_lines=1500), Multiclass, None,
                               scale=100.0)
    shard = shards.shards[0]
    n = shard.block.n_rows
    w_star = oneslack.train_oneslack(task, shards.block, shards.path, C=1.0, bias=None,
                                     epsilon=1e-2, max_epochs=2000, seed=1, screen=False).w
    scratch = oneslack._Scratch(len(w_star))
    oneslack._from_oracle(shard, scratch, task, w_star, 1, False, 0, 1, -1.0)   # the reference
    assert oneslack._probe(shard, scratch, 2, 0.0) == (-(-n // oneslack.PROBE_STRIDE),) * 2
    seen = set()
    for q, _new in _queries(w_star, np.random.default_rng(3), 24):
        rho, move = oneslack._screen_bounds(task, q - w_star)
        args = (rho, *(move or ()))
        probed, count = shard.screen.probe(rho, None if move is None else move, 1)
        strided, count7 = shard.screen.probe(rho, None if move is None else move, 7)
        assert count == n and count7 == -(-n // 7) and strided <= count7
        scored = oneslack._from_oracle(shard, scratch, task, q, 1, False, 0, 1, *args)[4]
        assert probed == scored
        seen.add(0 < scored < n)
    assert True in seen      # some passes screened part of the examples
    shards.close()
