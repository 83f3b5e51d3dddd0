"""The sequence task's cutting-plane cache: what it keeps at the peak and how it tells labellings
apart (svmtrain.tasks.sequence, svmtrain.solvers.nslack)."""

import re
from pathlib import Path

import numpy as np
import pytest

from svmtrain import data, objective
from svmtrain.engine import relative_gap
from svmtrain.solvers.nslack import _not_cached, train_nslack
from svmtrain.tasks import task_class
from svmtrain.tasks.base import Constraints, Geometry
from svmtrain.tasks.sequence import Sequence, labelling_key, labelling_keys

CONLL = Path(__file__).resolve().parent.parent / "data" / "conll2000.train.svm"


def _keyed(group, key):
    m = len(group)
    return Constraints(np.arange(m + 1, dtype=np.int64), np.zeros(m, np.int64), np.ones(m),
                       np.zeros(m, np.int64), np.zeros(m, bool), np.ones(m),
                       np.asarray(group, np.int64), np.asarray(key, np.int64))


def test_not_cached_is_membership_of_the_pair():
    rng = np.random.default_rng(3)
    for _ in range(20):
        cache = _keyed(rng.integers(0, 6, 40), rng.integers(-3, 3, 40))
        worst = _keyed(rng.integers(0, 7, 25), rng.integers(-3, 4, 25))
        have = set(zip(cache.group.tolist(), cache.key.tolist()))
        expected = [(g, k) not in have for g, k in zip(worst.group.tolist(), worst.key.tolist())]
        assert _not_cached(cache, worst).tolist() == expected
    # keys that agree and groups that differ (and the reverse) are different constraints
    cache = _keyed([0, 1], [7, 8])
    assert _not_cached(cache, _keyed([1, 0, 0, 1], [7, 8, 7, 8])).tolist() == [True, True, False, False]
    assert _not_cached(Constraints.empty(), _keyed([0], [1])).tolist() == [True]


def test_labelling_keys_are_the_per_sentence_keys():
    rng = np.random.default_rng(5)
    tags = rng.integers(0, 17, 500)
    ptr = np.array([0, 0, 1, 9, 9, 250, 500])
    expected = [labelling_key(tags[a:b]) for a, b in zip(ptr[:-1], ptr[1:])]
    assert labelling_keys(tags, ptr).tolist() == expected


def test_problem_holds_the_rows_once():
    block = data.load(str(CONLL))
    fresh = data.load(str(CONLL))
    task = task_class("sequence").from_training_data(block, str(CONLL))
    problem = task.problem(block, str(CONLL), 0.1, Geometry(block.n_features))
    # the block now reads the store's rows: the same values, one copy
    assert np.shares_memory(block.data, problem.data)
    assert np.shares_memory(block.indices, problem.indices)
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(block, name), getattr(fresh, name))
    # and the store is the rows plus the unit row
    assert problem.indptr[-1] - problem.indptr[-2] == 1
    assert problem.indices[-1] == 0 and problem.data[-1] == 1.0


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_dropping_idle_labellings_keeps_the_optimum(monkeypatch, rescaling):
    """Fewer constraints cached, the same optimum: each run's certified interval [D, P] holds the
    other's primal, and the early dropping keeps fewer labellings."""
    runs = {}
    for rounds in (50, Sequence.inactive_rounds):
        monkeypatch.setattr(Sequence, "inactive_rounds", rounds)
        block = data.load(str(CONLL))
        task = Sequence.from_training_data(block, str(CONLL), {"rescaling": rescaling})
        r = train_nslack(task, block, str(CONLL), C=0.1, bias=None, epsilon=1e-3,
                         max_epochs=300, seed=1)
        assert r.converged and r.relative_gap <= 1e-3
        # the certificate: P recomputed from the data, D from the alphas
        P = objective.primal(task, r.w, r.geometry, 0.1, [data.load(str(CONLL))], str(CONLL)).primal
        assert P == r.primal and relative_gap(P, r.dual) <= 1e-3
        runs[rounds] = r
    kept, dropped = runs[50], runs[Sequence.inactive_rounds]
    assert dropped.dual <= kept.primal and kept.dual <= dropped.primal
    assert dropped.constraints < kept.constraints


@pytest.mark.parametrize("loss,rescaling", [("hamming", "margin"), ("hamming", "slack"),
                                            ("zero-one", "margin")])
def test_the_oracle_in_pieces_finds_what_it_finds_whole(monkeypatch, loss, rescaling):
    """Loss-augmented Viterbi and the constraints it gives are built a few sentences at a time
    (their emission scores and temporaries for a whole file were an n-slack round's peak): the
    values and the constraints, term for term, are those of one piece."""
    from svmtrain.tasks import sequence
    block = data.load(str(CONLL))
    task = task_class("sequence").from_training_data(block, str(CONLL), {"loss": loss,
                                                                         "rescaling": rescaling})
    geometry = Geometry(block.n_features)
    problem = task.problem(block, str(CONLL), 0.1, geometry)
    w = np.random.default_rng(7).normal(size=task.n_weights(geometry))
    whole_value, whole = task.worst_offenders(w, problem, block)
    monkeypatch.setattr(sequence, "ORACLE_TOKENS", 50)        # 2440 tokens: about fifty pieces
    assert len(list(sequence._sentence_chunks(sentences_of(block)))) > 30
    value, pieces = task.worst_offenders(w, problem, block)
    assert np.array_equal(value, whole_value)
    for name in ("tptr", "term_row", "term_scale", "term_offset", "term_bias", "margin", "group", "key"):
        assert np.array_equal(getattr(pieces, name), getattr(whole, name)), name


def sentences_of(block):
    from svmtrain.tasks.sequence import sentences
    return sentences(block, str(CONLL))


def test_a_cache_extended_and_pruned_in_place_is_the_one_concatenated_and_selected():
    """The cutting-plane cache grows and shrinks in place, an array at a time (a second copy of
    a large cache was the peak of a round): the same constraints as concat and select."""
    rng = np.random.default_rng(11)

    def random_constraints(m):
        lengths = rng.integers(0, 5, m)
        t = int(lengths.sum())
        return Constraints(np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
                           rng.integers(0, 100, t), rng.normal(size=t), rng.integers(0, 50, t),
                           rng.random(t) < 0.5, rng.random(m), rng.integers(0, 20, m),
                           rng.integers(-5, 5, m))
    names = ("tptr", "term_row", "term_scale", "term_offset", "term_bias", "margin", "group", "key")
    a, b = random_constraints(30), random_constraints(12)
    joined = Constraints.concat([a, b])
    grown = Constraints(*(getattr(a, n).copy() for n in names)).extend(b)
    for n in names:
        assert np.array_equal(getattr(grown, n), getattr(joined, n)), n
    assert Constraints.empty().extend(a).size == a.size
    # grown where the arrays are (n-slack's rounds), the new ones let go as they are appended: the
    # same cache; an array something else still refers to is copied, the other's view untouched
    cache = Constraints(*(getattr(a, n).copy() for n in names))
    held = cache.term_scale[:5]
    before = held.copy()
    taken = Constraints(*(getattr(b, n).copy() for n in names))
    cache.extend(taken, in_place=True, release=True)
    for n in names:
        assert np.array_equal(getattr(cache, n), getattr(joined, n)), n
    assert taken.size == 0 and len(taken.term_row) == 0 and np.array_equal(taken.tptr, [0])
    assert np.array_equal(held, before) and not np.shares_memory(held, cache.term_scale)
    empty = Constraints.empty().extend(Constraints(*(getattr(a, n).copy() for n in names)),
                                       in_place=True, release=True)
    assert all(np.array_equal(getattr(empty, n), getattr(a, n)) for n in names)

    def by_hand(c, mask):      # the kept constraints' terms, one constraint at a time
        keep = np.flatnonzero(mask)
        spans = [np.arange(c.tptr[k], c.tptr[k + 1]) for k in keep]
        terms = np.concatenate(spans + [np.zeros(0, np.int64)])
        lengths = [len(s) for s in spans]
        return {"tptr": np.concatenate(([0], np.cumsum(lengths))),
                **{n: getattr(c, n)[terms] for n in names[1:5]},
                **{n: getattr(c, n)[keep] for n in names[5:]}}
    for mask in (rng.random(joined.size) < 0.6, np.ones(joined.size, bool),
                 np.zeros(joined.size, bool)):
        expect = by_hand(joined, mask)
        kept = joined.select(mask)
        pruned = Constraints(*(getattr(joined, n).copy() for n in names)).retain(mask)
        for n in names:
            assert np.array_equal(getattr(kept, n), expect[n]), n
            assert np.array_equal(getattr(pruned, n), expect[n]), n
        assert pruned.tptr.dtype == np.int64 and kept.size == pruned.size == mask.sum()
    # a range of constraints is a view of the cache's terms: the selection of those constraints
    inside = np.zeros(joined.size, bool)
    inside[7:25] = True
    part, expect = joined.range(7, 25), by_hand(joined, inside)
    for n in names:
        assert np.array_equal(getattr(part, n), expect[n]), n
    assert np.shares_memory(part.term_row, joined.term_row)


def test_the_sequence_store_holds_the_rows_once_with_int32_columns():
    """The training rows and the row store are one set of arrays, the store's columns int32 (the
    engine, the oracle and the plane builder read them in place); a model trained from them is
    the model of int64 columns, bit for bit."""
    block = data.load(str(CONLL))
    task = task_class("sequence").from_training_data(block, str(CONLL), {})
    geometry = Geometry(block.n_features)
    columns = block.indices.copy()
    problem = task.problem(block, str(CONLL), 0.1, geometry)
    assert problem.indices.dtype == np.int32
    assert np.shares_memory(block.indices, problem.indices)
    assert np.shares_memory(block.data, problem.data)
    assert np.array_equal(block.indices, columns) and problem.indices[-1] == 0   # the unit row
    w = np.random.default_rng(3).normal(size=task.n_weights(geometry))
    narrow_value, narrow = task.worst_offenders(w, problem, block)
    assert narrow.term_row.dtype == narrow.term_offset.dtype == np.int32      # 17 bytes a term
    cache = Constraints.empty().extend(narrow)          # an empty cache takes the terms' types
    assert cache.term_row.dtype == np.int32 and not np.shares_memory(cache.term_row, narrow.term_row)
    assert cache.extend(narrow).term_offset.dtype == np.int32
    block.indices = columns             # the reader's int64 columns, the same values
    problem.indices = problem.indices.astype(np.int64)
    wide_value, wide = task.worst_offenders(w, problem, block)
    assert np.array_equal(narrow_value, wide_value)
    for name in ("tptr", "term_row", "term_scale", "term_offset", "term_bias", "margin", "key"):
        assert np.array_equal(getattr(narrow, name), getattr(wide, name)), name
    from svmtrain._linear import term_dots        # and the terms are read as they are
    dots = [term_dots(problem.indptr, problem.indices, problem.data, problem.n_cols, c.tptr,
                      c.term_row, c.term_scale, c.term_offset, c.term_bias,
                      task.solver_weights(w), 0.0, False, problem.stride)
            for c in (narrow, Constraints(narrow.tptr, narrow.term_row.astype(np.int64),
                                          narrow.term_scale, narrow.term_offset.astype(np.int64),
                                          narrow.term_bias, narrow.margin, narrow.group, narrow.key))]
    assert dots[0].tobytes() == dots[1].tobytes()


def test_values_and_scales_are_kept_in_the_narrowest_exact_type(tmp_path):
    """Indicator features (every value 1) are kept as bytes, halves and 256s as float32s, tenths
    as float64s; the terms' scales (+-1 and counts, times Delta) as float32s, never bytes (they
    are negative too)."""
    block = data.load(str(CONLL))
    task = task_class("sequence").from_training_data(block, str(CONLL), {"rescaling": "slack"})
    geometry = Geometry(block.n_features)
    problem = task.problem(block, str(CONLL), 0.1, geometry)
    assert problem.data.dtype == np.uint8 and np.shares_memory(block.data, problem.data)
    w = np.random.default_rng(5).normal(size=task.n_weights(geometry))
    _, worst = task.worst_offenders(w, problem, block)
    assert worst.term_scale.dtype == np.float32 and np.abs(worst.term_scale).max() > 1   # Delta
    for value, kept in (("0.5", np.float32), ("256", np.float32), ("0.1", np.float64)):
        changed = tmp_path / f"values{value}.svm"
        changed.write_text(re.sub(r"(?<= )(\d+):1(?=\s)", rf"\1:{value}", CONLL.read_text()))
        block = data.load(str(changed))
        problem = task.problem(block, str(changed), 0.1, geometry)
        assert problem.data.dtype == kept and np.any(problem.data[:-1] == float(value)), value
    assert data.value_dtype(np.array([0.0, 1.0, 2.0, 255.0])) == np.uint8
    assert data.value_dtype(np.array([1.0, 2.0]), bytes_too=False) == np.float32
    assert data.value_dtype(np.array([1.0, 2.0]), False) == np.float64
    bytes_ = np.array([0, 1, 255], np.uint8)        # (a compacted window's rows: as the floats)
    assert data.value_dtype(bytes_) == data.value_dtype(bytes_.astype(float)) == np.uint8
    assert data.value_dtype(bytes_, bytes_too=False) == np.float32
    assert data.value_dtype(bytes_, False) == np.float64
    for not_a_byte in (-1.0, 256.0, 0.5, -0.0, 2.0 ** 24, np.inf):
        assert data.value_dtype(np.array([1.0] * 5 + [not_a_byte])) == np.float32, not_a_byte
    for inexact in (0.1, 2.0 ** 24 + 1, 1e300, np.nan):
        assert data.value_dtype(np.array([1.0] * 5 + [inexact])) == np.float64, inexact


@pytest.mark.parametrize("mode", ["n-slack", "1-slack", "online-dual"])
@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_compact_values_and_scales_train_the_float64_model(monkeypatch, mode, rescaling):
    """Keeping values as bytes and scales as float32 changes no bit of the model: each is
    widened to double before any arithmetic."""
    import svmtrain
    import svmtrain.tasks.sequence as sequence
    problem = svmtrain.Problem(task="sequence", C=0.1, rescaling=rescaling)
    narrow = svmtrain.train(str(CONLL), problem, mode=mode)
    monkeypatch.setattr(sequence.Sequence, "compact_values", False)     # values and scales
    wide = svmtrain.train(str(CONLL), problem, mode=mode)
    assert narrow.w.tobytes() == wide.w.tobytes()
    assert narrow.certificate == wide.certificate


def _block(target, cost, qid, line):
    n = len(target)
    return data.Block(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                      np.asarray(target, np.float64), np.asarray(qid, np.int64),
                      np.asarray(cost, np.float64), np.asarray(line, np.int64), 0, 0)


def test_narrow_row_arrays_keeps_every_value():
    cases = [  # (target, cost, qid, line) -> their narrowed types
        (([1, 2, 17], [1, 1, 3], [5, 5, 7], [1, 2, 3]), (np.uint8, np.uint8, np.int32, np.int32)),
        (([0.5, -1, 3], [0.25, 1, 1], [2 ** 31, 0, 0], [1, 2, 2 ** 31]),
         (np.float32, np.float32, np.int64, np.int64)),
        (([0.1, 1, 2], [1e-300, 1, 1], [-2 ** 40, -1, -1], [7, 8, 9]),
         (np.float64, np.float64, np.int64, np.int32)),
        (([-0.0, 1, 2], [256, 1, 1], [-1, -1, 3], [1, 2, 3]), (np.float32, np.float32, np.int32, np.int32)),
    ]
    for arrays, types in cases:
        block = _block(*arrays)
        data.narrow_row_arrays(block)
        for name, values, kind in zip(("target", "cost", "qid", "line"), arrays, types):
            got = getattr(block, name)
            assert got.dtype == kind, (name, values)
            assert np.array_equal(got.astype(np.float64 if name in ("target", "cost") else np.int64),
                                  np.asarray(values)), (name, values)
        assert np.signbit(block.target[0]) == np.signbit(arrays[0][0])
    empty = _block([], [], [], [])
    data.narrow_row_arrays(empty)
    assert empty.n_rows == 0


def test_sequence_problem_narrows_the_rows_arrays_and_the_state_fingerprint_is_the_same():
    from svmtrain.state import fingerprint
    block = data.load(str(CONLL))
    fresh = data.load(str(CONLL))
    task = task_class("sequence").from_training_data(block, str(CONLL))
    task.problem(block, str(CONLL), 0.1, Geometry(block.n_features))
    assert (block.target.dtype, block.cost.dtype, block.qid.dtype, block.line.dtype) == \
        (np.uint8, np.uint8, np.int32, np.int32)
    for name in ("target", "cost", "qid", "line"):
        assert np.array_equal(getattr(block, name), getattr(fresh, name)), name
    # a resume state made on the narrowed rows matches the file as read, and other data does not
    assert fingerprint(block) == fingerprint(fresh) and fingerprint(block, 100) == fingerprint(fresh, 100)
    fresh.target[3] += 1
    assert fingerprint(block) != fingerprint(fresh)


@pytest.mark.parametrize("mode", ["n-slack", "1-slack", "online-dual"])
def test_narrowed_row_arrays_train_the_same_model(monkeypatch, tmp_path, mode):
    """Tags, costs, sentences and lines kept in narrow types change no bit of the model, with
    costs that are not bytes either (a weights file: sentences of weight 0.3 and 2)."""
    import svmtrain
    import svmtrain.tasks.sequence as sequence
    narrow = data.narrow_row_arrays
    qids = [line.split()[1] for line in CONLL.read_text().splitlines()]
    weights = tmp_path / "weights"
    weights.write_text("".join(("0.3\n" if int(q[4:]) % 3 else "2\n") for q in qids))
    for extra in ({}, {"weights": str(weights)}):
        problem = svmtrain.Problem(task="sequence", C=0.1)
        controls = svmtrain.Controls(example_weights=extra["weights"]) if extra else None
        kept = svmtrain.train(str(CONLL), problem, mode=mode, controls=controls)
        with monkeypatch.context() as m:
            wide = lambda block, compact=True, copy=False: narrow(block, False, copy)  # noqa: E731
            m.setattr(sequence, "narrow_row_arrays", wide)
            m.setattr(data, "narrow_row_arrays", wide)
            model = svmtrain.train(str(CONLL), problem, mode=mode, controls=controls)
        assert kept.w.tobytes() == model.w.tobytes(), extra
        assert kept.certificate == model.certificate, extra


def test_an_online_window_part_is_narrow_and_its_own():
    from svmtrain.solvers.online_reading import _compact
    block = data.load(str(CONLL))
    for compact, types in ((True, (np.uint8, np.uint8, np.int32, np.int32)),
                           (False, (np.float64, np.float64, np.int64, np.int64))):
        part = _compact(block, compact)
        for name, kind in zip(("target", "cost", "qid", "line"), types):
            got, read = getattr(part, name), getattr(block, name)
            assert got.dtype == kind and np.array_equal(got, read), (compact, name)
            assert not np.shares_memory(got, read), (compact, name)


@pytest.mark.parametrize("loss,rescaling", [("hamming", "margin"), ("hamming", "slack"),
                                            ("zero-one", "margin"), ("zero-one", "slack")])
def test_an_evicted_labelling_comes_back_as_the_same_constraint(loss, rescaling):
    """The online-dual mode keeps an evicted sequence constraint as its labelling's mistakes
    (Sequence.evicted_codes) and rebuilds it when its sentence is read again: the same terms in
    the same order, margin and key, for any subset of the sentences in any order."""
    block = data.concat_blocks(list(data.iter_blocks(str(CONLL))))
    task = Sequence.from_training_data(block, str(CONLL), {"loss": loss, "rescaling": rescaling})
    geometry = Geometry(block.n_features, 1.0)
    problem = task.problem(block, str(CONLL), 0.1, geometry)
    rng = np.random.default_rng(5)
    for w in (np.zeros(task.n_weights(geometry)), rng.normal(size=task.n_weights(geometry))):
        _, cons = task.worst_offenders(w, problem, block)
        starts = np.concatenate(([0], np.flatnonzero(block.qid[1:] != block.qid[:-1]) + 1,
                                 [block.n_rows]))
        pick = rng.permutation(cons.size)[:40]
        part = cons.select(np.isin(np.arange(cons.size), pick))
        row = np.asarray(part.term_row, np.int64)
        first = starts[np.repeat(part.group, np.diff(part.tptr))]
        rel = np.where(row < block.n_rows, row - first, -1)
        cptr, codes = task.evicted_codes(part, rel)
        assert len(codes) * 8 < 0.5 * len(row) * 13     # much smaller than the terms
        order = rng.permutation(part.size)              # returned in another order
        sub_cptr = np.concatenate(([0], np.cumsum(np.diff(cptr)[order])))
        sub_codes = np.concatenate([codes[cptr[k]:cptr[k + 1]] for k in order])
        built = task.constraints_from_codes(problem, block, part.group[order], sub_cptr, sub_codes)
        again = part.select(np.ones(part.size, bool))
        for k_new, k_old in enumerate(order):
            a, b = slice(built.tptr[k_new], built.tptr[k_new + 1]), slice(again.tptr[k_old], again.tptr[k_old + 1])
            for name in ("term_row", "term_scale", "term_offset", "term_bias"):
                assert np.array_equal(getattr(built, name)[a], getattr(again, name)[b]), name
            assert built.margin[k_new] == again.margin[k_old] and built.key[k_new] == again.key[k_old]
            assert built.group[k_new] == again.group[k_old]
