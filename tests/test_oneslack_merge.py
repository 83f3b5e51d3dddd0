"""Identical examples merged in the 1-slack mode (svmtrain.duplicates): the classes of identical rows
against brute force, the final pricing against the tasks' own violations bit for bit, and the
merged problem being the same problem (the optimum, the certificate on the original file, weights,
class weights, warm starts, threads, the sample start)."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data, objective
from svmtrain.data import take_rows
from svmtrain._oneslack import distinct_rows, gather_rows, row_violations
from svmtrain.cli import main
from svmtrain.duplicates import merge_identical
from svmtrain.model import read_model
from svmtrain.solvers import oneslack
from svmtrain.tasks.base import Geometry
from svmtrain.tasks.binary import Binary
from svmtrain.tasks.multiclass import Multiclass


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _train(task, block, path, **options):
    options = {"epsilon": 1e-3, **options}
    return oneslack.train_oneslack(task, block, path, C=1.0, bias=options.pop("bias", None),
                                   max_epochs=5000, seed=1, **options)


# -- the classes of identical rows ---------------------------------------------------------------

def test_distinct_rows_agree_with_brute_force():
    rng = np.random.default_rng(5)
    # rows drawn from a few prototypes (some of them empty, some differing only in the label, a
    # value or the last column), so that most rows repeat one another
    protos = []
    for _ in range(12):
        length = int(rng.integers(0, 4))
        cols = np.sort(rng.choice(6, length, replace=False)).astype(np.int64)
        protos.append((float(rng.integers(0, 2)), cols, rng.integers(1, 3, length) / 2.0))
    protos.append((protos[1][0], protos[1][1], protos[1][2] + 0.25))     # another value
    protos.append((1.0 - protos[2][0], protos[2][1], protos[2][2]))      # another label
    rows = [protos[k] for k in rng.integers(0, len(protos), 400)]
    indptr = np.concatenate(([0], np.cumsum([len(r[1]) for r in rows]))).astype(np.int64)
    indices = np.concatenate([r[1] for r in rows]).astype(np.int64)
    values = np.concatenate([r[2] for r in rows])
    target = np.array([r[0] for r in rows])
    first, inverse = distinct_rows(indptr, indices, values, target)
    seen = {}
    for i, (y, cols, vals) in enumerate(rows):
        key = (y, cols.tobytes(), vals.tobytes())
        seen.setdefault(key, len(seen))
        assert inverse[i] == seen[key]
    assert len(first) == len(seen) < len(rows)
    # classes in order of first occurrence, each named by its first row
    assert np.array_equal(first, np.unique(inverse, return_index=True)[1])
    assert np.array_equal(inverse[first], np.arange(len(first)))


def test_gather_rows_is_take_rows(shared):
    block = data.load(str(shared("a9a/a9a.xz", max_lines=500)))
    rows = np.random.default_rng(1).integers(0, block.n_rows, 300)
    for picks in (rows, rows[:0], np.array([block.n_rows - 1, 0, 0])):
        got, want = gather_rows(block.indptr, block.indices, block.data, picks), take_rows(block, picks)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    with pytest.raises(ValueError, match="outside"):
        gather_rows(block.indptr, block.indices, block.data, np.array([block.n_rows]))


def test_merge_sums_costs_in_file_order_and_keeps_first_rows(shared):
    block = data.load(str(shared("a9a/a9a.xz", max_lines=3000)))
    block.cost[:] = np.random.default_rng(2).uniform(0.5, 2.0, block.n_rows)
    merged = merge_identical(block)
    assert merged is not None and merged.block.n_rows < block.n_rows
    m = merged.block
    first = np.unique(merged.inverse, return_index=True)[1]
    assert np.array_equal(m.line, block.line[first]) and np.array_equal(m.target, block.target[first])
    for c in range(m.n_rows):
        members = np.flatnonzero(merged.inverse == c)
        a, b = m.indptr[c], m.indptr[c + 1]
        for r in members:
            assert np.array_equal(block.indices[block.indptr[r]:block.indptr[r + 1]], m.indices[a:b])
            assert np.array_equal(block.data[block.indptr[r]:block.indptr[r + 1]], m.data[a:b])
        assert m.cost[c] == pytest.approx(block.cost[members].sum(), rel=1e-15)
    assert m.cost.sum() == pytest.approx(block.cost.sum(), rel=1e-12)
    # no two rows alike: nothing to merge
    assert merge_identical(m) is None


# -- the final pricing ----------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [None, 1.0])
def test_row_violations_are_the_tasks_own_bit_for_bit(shared, bias):
    rng = np.random.default_rng(7)
    path = str(shared("a9a/a9a.xz", max_lines=2000))
    block = data.load(path)
    task = Binary.from_training_data(block, path)
    # fewer model columns than the data has: the others are ignored, as by the task
    for n_cols in (block.n_features, block.n_features - 20):
        geometry = Geometry(n_cols, bias)
        w = rng.standard_normal(task.n_weights(geometry))
        H = row_violations(block.indptr, block.indices, block.data, n_cols,
                           task.signs(block, path), 0, w, bias or 0.0, bias is not None)
        assert np.array_equal(H, task.violations(w, block, path, geometry))
    path = str(shared("pendigits/pendigits.xz"))
    block = data.load(path)
    block.data[:] = block.data / 100
    task = Multiclass.from_training_data(block, path)
    for n_cols in (block.n_features, block.n_features - 3):
        geometry = Geometry(n_cols, bias)
        w = rng.standard_normal(task.n_weights(geometry))
        H = row_violations(block.indptr, block.indices, block.data, n_cols,
                           task.label_index(block, path), task.K, w, bias or 0.0, bias is not None)
        assert np.array_equal(H, task.violations(w, block, path, geometry))


def test_row_violations_refuse_inconsistent_input():
    indptr, indices, data_ = np.array([0, 2]), np.array([0, 1]), np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="negative"):
        row_violations(indptr, np.array([0, -1]), data_, 2, np.array([1.0]), 0, np.zeros(2), 0, False)
    with pytest.raises(ValueError, match="beyond w"):
        row_violations(indptr, indices, data_, 2, np.array([1]), 3, np.zeros(5), 0, False)
    with pytest.raises(ValueError, match="0..K-1"):
        row_violations(indptr, indices, data_, 2, np.array([3]), 3, np.zeros(6), 0, False)
    with pytest.raises(ValueError, match="CSR"):
        row_violations(np.array([0, 3]), indices, data_, 2, np.array([1.0]), 0, np.zeros(2), 0, False)


# -- the same problem -------------------------------------------------------------------------------

def test_merged_binary_reaches_the_same_optimum_with_the_original_certificate(shared):
    path = str(shared("a9a/a9a.xz", max_lines=6000))
    block = data.load(path)
    task = Binary.from_training_data(block, path)
    merged = _train(task, block, path)
    plain = _train(task, block, path, merge_duplicates=False)
    assert plain.distinct_examples == 0 and 3000 < merged.distinct_examples < block.n_rows
    assert merged.examples == plain.examples == block.n_rows
    assert merged.converged and plain.converged
    # both within epsilon of the one optimum: each dual below the other's primal
    assert merged.dual <= plain.primal and plain.dual <= merged.primal
    assert abs(merged.primal - plain.primal) <= 1e-3 * plain.primal
    # P is verify-bound's over the original rows, bit for bit
    priced = objective.primal(task, merged.w, merged.geometry, 1.0, [block], path)
    assert priced.primal == merged.primal and priced.examples == block.n_rows
    # deterministic, and the same model bit for bit with two threads
    again = _train(task, block, path)
    two = _train(task, block, path, threads=2)
    assert np.array_equal(again.w, merged.w) and np.array_equal(two.w, merged.w)
    assert two.primal == merged.primal and two.dual == merged.dual


def _pendigits_with_copies(shared, tmp_path):
    """pendigits / 100 (2,000 rows) with 600 of its rows repeated 1-3 more times anywhere in the
    file, every line with a random cost: token; and the file of its distinct rows in order of first
    occurrence with the summed costs."""
    src = str(shared("pendigits/pendigits.xz"))
    rng = np.random.default_rng(11)
    rows = []
    for line in open(src).read().splitlines()[:2000]:
        head, *pairs = line.split()
        rows.append((head, " ".join(f"{p.split(':')[0]}:{float(p.split(':')[1]) / 100!r}"
                                    for p in pairs)))
    order = list(range(len(rows)))
    for r in rng.choice(len(rows), 600, replace=False):
        for _ in range(int(rng.integers(1, 4))):
            order.insert(int(rng.integers(0, len(order) + 1)), int(r))
    costs = rng.choice([0.5, 1.0, 2.0], len(order))
    total, firsts = {}, []
    for r, c in zip(order, costs):
        if r not in total:
            firsts.append(r)
        total[r] = total.get(r, 0.0) + float(c)
    dup, distinct = tmp_path / "dup.svm", tmp_path / "distinct.svm"
    dup.write_text("".join(f"{rows[r][0]} cost:{float(c)!r} {rows[r][1]}\n" for r, c in zip(order, costs)))
    distinct.write_text("".join(f"{rows[r][0]} cost:{total[r]!r} {rows[r][1]}\n" for r in firsts))
    return str(dup), str(distinct), len(order), len(firsts)


def test_merged_rows_are_the_problem_of_the_distinct_rows_with_summed_costs(shared, tmp_path):
    dup_path, distinct_path, n, n_distinct = _pendigits_with_copies(shared, tmp_path)
    dup, distinct = data.load(dup_path), data.load(distinct_path)
    task = Multiclass.from_training_data(dup, dup_path)
    merged = merge_identical(dup)
    assert merged.block.n_rows == n_distinct == distinct.n_rows and n > n_distinct
    for name in ("indptr", "indices", "data", "target"):
        assert np.array_equal(getattr(merged.block, name), getattr(distinct, name))
    assert np.allclose(merged.block.cost, distinct.cost, rtol=1e-15)
    # the same iterates (no sample start: the sample of every k-th row is another one), the
    # certificate priced over each file's own rows
    a = _train(task, dup, dup_path, sample_start=0)
    b = _train(task, distinct, distinct_path, sample_start=0)
    plain = _train(task, dup, dup_path, sample_start=0, merge_duplicates=False)
    assert a.rounds == b.rounds and np.allclose(a.w, b.w, rtol=1e-9, atol=1e-12)
    assert a.distinct_examples == n_distinct and a.examples == n
    for other in (b, plain):
        assert a.dual <= other.primal and other.dual <= a.primal
        assert abs(a.primal - other.primal) <= 1e-3 * other.primal
    priced = objective.primal(task, a.w, a.geometry, 1.0, [dup], dup_path)
    assert priced.primal == a.primal


def test_sample_start_takes_every_kth_original_row_then_merges(shared, tmp_path, monkeypatch):
    monkeypatch.setattr(oneslack, "SAMPLE_MIN_EXAMPLES", 500)
    dup_path, _distinct, n, n_distinct = _pendigits_with_copies(shared, tmp_path)
    dup = data.load(dup_path)
    task = Multiclass.from_training_data(dup, dup_path)
    k = 2
    sample = oneslack._sample_start(task, dup, dup_path, 1.0, Geometry(dup.n_features, None), 1,
                                    k, 1e-3, 5000, None, oneslack.DEFAULT_IN_OUT, True, True)
    unmerged = oneslack._sample_start(task, dup, dup_path, 1.0, Geometry(dup.n_features, None), 1,
                                      k, 1e-3, 5000, None, oneslack.DEFAULT_IN_OUT, True, False)
    # the sample of the original rows (costs times k), its identical rows merged
    rows = oneslack._every_kth(dup, k)
    assert sample.examples == unmerged.examples == rows.n_rows
    assert sample.distinct_examples == merge_identical(rows).block.n_rows < rows.n_rows
    assert unmerged.distinct_examples == 0
    assert sample.dual <= unmerged.primal and unmerged.dual <= sample.primal
    assert abs(sample.primal - unmerged.primal) <= oneslack.SAMPLE_EPSILON * unmerged.primal
    whole = _train(task, dup, dup_path, sample_start=k)
    assert whole.sample_iterations == sample.rounds and whole.converged


def _verify(model, path, *extra):
    r = run("verify-bound", "--json", model, path, *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_cli_merge_with_weights_class_weights_and_warm_start(shared, tmp_path):
    path = shared("a9a/a9a.xz", max_lines=4000)
    weights = tmp_path / "weights"
    weights.write_text("".join(f"{float(w)!r}\n" for w in
                               np.random.default_rng(4).choice([0.5, 1.0, 3.0], 4000)))
    models = {}
    for flag in ("--merge-duplicates", "--no-merge-duplicates"):
        model = tmp_path / f"m{flag}"
        r = run("train", "--mode", "1-slack", "-e", "1e-3", "--weights", weights, "-w", "1", "2",
                flag, "--save-state", tmp_path / f"s{flag}.npz", path, model)
        assert r.exit_code == 0, r.output
        assert ("distinct examples trained on" in r.stderr) == (flag == "--merge-duplicates")
        m = read_model(model)
        v = _verify(model, path)      # against the original file, with its weights
        assert v["certified"] and v["primal"] == m.primal and v["examples"] == m.examples == 4000
        models[flag] = m
    a, b = models.values()
    assert a.dual <= b.primal and b.dual <= a.primal and abs(a.primal - b.primal) <= 1e-3 * b.primal
    # a merged run's state starts an unmerged run and the other way round (planes are sums over
    # the examples, the same whichever rows carry them)
    for state, flag in (("s--merge-duplicates.npz", "--no-merge-duplicates"),
                        ("s--no-merge-duplicates.npz", "--merge-duplicates")):
        model = tmp_path / f"warm{flag}"
        r = run("train", "--mode", "1-slack", "-e", "1e-3", "--weights", weights, "-w", "1", "2",
                flag, "--warm-start", tmp_path / state, path, model)
        assert r.exit_code == 0, r.output
        m = read_model(model)
        assert _verify(model, path)["certified"] and m.dual <= b.primal and b.dual <= m.primal


def test_cli_threads_give_the_same_model_file(shared, tmp_path):
    path = shared("a9a/a9a.xz", max_lines=4000)
    out = []
    for threads in ("1", "2"):
        model = tmp_path / f"m{threads}"
        r = run("train", "--mode", "1-slack", "-B", "1", "--threads", threads, path, model)
        assert r.exit_code == 0, r.output
        out.append(model.read_bytes())
    assert out[0] == out[1]


def test_merge_option_is_for_one_slack(shared, tmp_path):
    r = run("train", "--mode", "n-slack", "--no-merge-duplicates", "x", "y")
    assert r.exit_code == 2 and "--merge-duplicates" in r.output
    assert not (tmp_path / "y").exists()


@pytest.mark.parametrize("threads", [1, 2])
def test_final_pricing_is_verify_bounds_primal_bit_for_bit(shared, threads, monkeypatch):
    """LocalShards.price (the Cython pass over the trained rows, shard by shard) against
    objective.primal over the file's rows, merged or not, with a bias and costs."""
    monkeypatch.setattr(oneslack, "MIN_SHARD_NONZEROS", 5000)     # several shards
    rng = np.random.default_rng(3)
    for rel, cls in (("a9a/a9a.xz", Binary), ("pendigits/pendigits.xz", Multiclass)):
        path = str(shared(rel, max_lines=3000))
        block = data.load(path)
        block.data[:] = block.data / (100 if cls is Multiclass else 1)
        block.cost[:] = rng.choice([0.5, 1.0, 2.0], block.n_rows)
        task = cls.from_training_data(block, path)
        geometry = Geometry(block.n_features, 1.0)
        w = rng.standard_normal(task.n_weights(geometry)) * 0.1
        want = objective.primal(task, w, geometry, 2.0, [block], path)
        merged = merge_identical(block)
        for rows, m in ((block, None), (merged.block if merged else block, merged)):
            shards = oneslack.LocalShards(task, rows, path, 2.0, geometry, threads, m)
            assert len(shards) > 1
            got = shards.price(w)
            shards.close()
            assert (got.primal, got.loss, got.examples) == (want.primal, want.loss, want.examples)
