"""The sample start of the 1-slack mode (--sample-start): the first query point is the solution on
every k-th example; the planes, the certificate and the optimum stay the whole problem's."""

import numpy as np

from svmtrain import data, objective
from svmtrain.solvers import oneslack
from svmtrain.tasks.base import Geometry
from svmtrain.tasks.binary import Binary
from svmtrain.tasks.multiclass import Multiclass


def test_every_kth_takes_rows_and_scales_costs(shared):
    block = data.load(str(shared("a9a/a9a.xz", max_lines=50)))
    block.cost[7] = 2.5
    sample = oneslack._every_kth(block, 7)
    rows = list(range(0, 50, 7))
    assert sample.n_rows == len(rows)
    for s, r in enumerate(rows):
        a, b = block.indptr[r], block.indptr[r + 1]
        c, d = sample.indptr[s], sample.indptr[s + 1]
        assert np.array_equal(sample.indices[c:d], block.indices[a:b])
        assert np.array_equal(sample.data[c:d], block.data[a:b])
    assert np.array_equal(sample.target, block.target[rows])
    assert np.array_equal(sample.line, block.line[rows])
    assert np.array_equal(sample.cost, 7 * block.cost[rows]) and sample.cost[1] == 17.5


def _run(task, block, path, **options):
    return oneslack.train_oneslack(task, block, path, C=1.0, bias=None, epsilon=1e-3,
                                   max_epochs=5000, seed=1, **options)


def _check(task, block, path, k):
    plain = _run(task, block, path, sample_start=0)
    started = _run(task, block, path, sample_start=k)
    assert plain.sample_iterations == 0 and started.sample_iterations > 0
    assert started.converged and started.relative_gap <= 1e-3
    # the certificate is the whole problem's: P recomputed as verify-bound does, D below both P
    priced = objective.primal(task, started.w, Geometry(block.n_features, None), 1.0, [block], path)
    assert abs(priced.primal - started.primal) <= 1e-9 * started.primal
    assert started.dual <= plain.primal and plain.dual <= started.primal
    assert abs(started.primal - plain.primal) <= 1e-3 * plain.primal
    # threads: the same model bit for bit, sample included
    two = _run(task, block, path, sample_start=k, threads=2)
    assert np.array_equal(two.w, started.w) and two.sample_iterations == started.sample_iterations
    return plain, started


def test_sample_start_binary_same_optimum_and_certificate(shared):
    path = str(shared("a9a/a9a.xz", max_lines=8000))
    block = data.load(path)
    _check(Binary.from_training_data(block, path), block, path, 3)


def test_sample_start_multiclass_same_optimum_fewer_full_iterations(shared):
    path = str(shared("pendigits/pendigits.xz"))
    block = data.load(path)
    block.data[:] = block.data / 100
    plain, started = _check(Multiclass.from_training_data(block, path), block, path, 3)
    assert started.rounds < plain.rounds


def test_sample_start_skipped_when_the_sample_is_small(shared):
    path = str(shared("a9a/a9a.xz", max_lines=3000))
    block = data.load(path)
    result = _run(Binary.from_training_data(block, path), block, path, sample_start=10)
    assert result.sample_iterations == 0


def test_sample_start_nests_when_the_sample_is_large(shared, monkeypatch):
    path = str(shared("a9a/a9a.xz", max_lines=8000))
    block = data.load(path)
    task = Binary.from_training_data(block, path)
    sizes = []
    every_kth = oneslack._every_kth

    def counted(b, k):
        sizes.append(b.n_rows)
        return every_kth(b, k)

    monkeypatch.setattr(oneslack, "_every_kth", counted)
    nested = _run(task, block, path, sample_start=2)
    assert sizes == [8000, 4000]      # the sample (4000) started from its own (2000)
    plain = _run(task, block, path, sample_start=0)
    assert nested.converged and abs(nested.primal - plain.primal) <= 1e-3 * plain.primal
    assert nested.dual <= plain.primal and plain.dual <= nested.primal
