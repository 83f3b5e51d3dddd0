"""The numbers of model files and of predict's output (svmtrain._reader.weight_text, float_rows):
the text of repr, made in C.

A model file's weight is repr(x), the shortest decimal that reads back to x; the writer makes it
without a Python float per weight (Schubfach, in _reader.pyx). These compare the two on bit
patterns drawn from every exponent and on the cases at the edges of the algorithm and of the
layout (subnormals, powers of two and of ten and their neighbours, the switch to exponent form)."""

import math
from fractions import Fraction

import numpy as np
import pytest

from svmtrain._reader import _floor_logs, float_repr, float_rows, weight_text
from svmtrain.model import format_model, read_model
from svmtrain.tasks.base import repr_rows

from test_model import make_model, same_bits


def _doubles():
    rng = np.random.default_rng(20261128)
    bits = rng.integers(0, 2**63 - 1, 300_000, dtype=np.int64, endpoint=True)
    random = bits[(bits >> 52) & 0x7FF != 0x7FF].view(np.float64)        # finite ones
    powers_of_two = np.ldexp(1.0, np.arange(-1074, 1024))
    tens = np.array([float(f"1e{e}") for e in range(-323, 309)])
    edges = np.array([0.0, 1e-4, 1e-5, 0.1, 0.3, 1e15, 1e16, 9007199254740993.0,
                      2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
                      9999999999999998.0, 123456789.0, 1234.5678, 1e22, 1e23, 5e-310])
    x = np.concatenate([random, powers_of_two, 1.5 * powers_of_two[:-1], tens,
                        np.nextafter(tens, np.inf), np.nextafter(tens, -np.inf),
                        np.arange(1, 3000) * 5e-324, edges])
    return np.concatenate([x, -x])


def test_weights_are_their_repr():
    x = _doubles()
    assert weight_text(x) == "".join(repr(v) + "\n" for v in x.tolist())


def test_sparse_weights_are_index_colon_repr():
    x = _doubles()[:20_000]
    index = np.sort(np.random.default_rng(3).choice(2**62, x.size, replace=False)).astype(np.int64)
    index[0] = 0
    expected = "".join(f"{j}:{v!r}\n" for j, v in zip(index.tolist(), x.tolist()))
    assert weight_text(x, index) == expected


@pytest.mark.parametrize("x", [0.0, -0.0, 5e-324, 1e16, 1e-5, 0.0001, 1e300, 0.1 + 0.2])
def test_one_value(x):
    assert float_repr(x) == repr(x) and float(float_repr(x)) == x


@pytest.mark.parametrize("x", [float("inf"), -float("inf"), float("nan"), -float("nan")])
def test_what_predict_may_write_beside_numbers(x):
    assert float_repr(x) == repr(x)


@pytest.mark.parametrize("width", [0, 1, 3, 105])
def test_score_rows_are_space_joined_reprs(width):
    x = _doubles()[: 40 * width].reshape(40, width) if width else np.zeros((40, 0))
    x[:3, :1] = [[np.nan], [np.inf], [-np.inf]] if width else x[:3, :1]
    expected = "".join(" ".join(repr(v) for v in row) + "\n" for row in x.tolist())
    assert float_rows(np.ascontiguousarray(x)) == expected


def test_block_scores_as_the_tasks_wrote_them():
    # predict's --scores: one value a row (binary, regression) or one row of them (multiclass,
    # sequence), as the per-row format method writes it; anything else is left to that method
    one = np.array([1.5, -0.0, 2.0, 1e-7])
    assert repr_rows(one) == "1.5\n-0.0\n2.0\n1e-07\n"
    assert repr_rows(np.arange(6, dtype=np.int32).reshape(3, 2)) == "0.0 1.0\n2.0 3.0\n4.0 5.0\n"
    assert repr_rows(np.array([{"a": 1}], dtype=object)) is None
    assert repr_rows(np.zeros(0)) == repr_rows(np.zeros((0, 3))) == ""      # an empty file's block
    assert repr_rows(np.zeros((2, 2, 2))) is None


def test_refuses_what_has_no_repr_in_a_model():
    with pytest.raises(ValueError, match="not finite"):
        weight_text(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="differ in length"):
        weight_text(np.ones(3), np.arange(2, dtype=np.int64))
    assert weight_text(np.zeros(0)) == ""


def _floor_log(base, x):
    """floor(log_base x) for a positive Fraction x, exactly (from a float estimate)."""
    k = math.floor((math.log2(x.numerator) - math.log2(x.denominator)) / math.log2(base))
    while Fraction(base) ** k > x:
        k -= 1
    while Fraction(base) ** (k + 1) <= x:
        k += 1
    return k


def test_floor_logs_are_exact_for_every_exponent():
    # the table's index and the scale come from these: a wrong one rounds a weight to the wrong
    # decimal; the range holds every double's binary exponent and every decimal one of a repr
    for q in range(-1080, 1030, 1):
        two_q = Fraction(2) ** q
        assert _floor_logs(q)[:2] == (_floor_log(10, two_q), _floor_log(10, Fraction(3, 4) * two_q)), q
    for e in range(-330, 330):
        assert _floor_logs(e)[2] == _floor_log(2, Fraction(10) ** e), e


def test_model_file_weights_read_back_bit_for_bit(tmp_path):
    m = make_model(n_features=400, density=1.0, rng_seed=7)
    w = m.w.copy()
    w[:9] = [5e-324, -0.0, 1e16, 1e-5, 0.1, 2.2250738585072014e-308, 1e300, -1.5, 3.0]
    m.w = w
    text = format_model(m)
    assert "\n5e-324\n-0.0\n1e+16\n1e-05\n0.1\n2.2250738585072014e-308\n1e+300\n-1.5\n3.0\n" in text
    path = tmp_path / "m.txt"
    path.write_text(text)
    assert same_bits(read_model(path).w, w)
