"""svmtools scale: svm-scale's values, checked against an independent dense computation."""

import gzip

import numpy as np
import pytest
from click.testing import CliRunner

from svmtools.cli import main
from svmtools.scale import read_ranges

DATA = ["data/heart_scale", "data/pendigits_scale.train.sample", "data/cpusmall_scale.train.sample",
        "data/a9a.train.sample"]


@pytest.fixture
def runner():
    return CliRunner()


def parse(text):
    """(targets, [dict index -> value]) of svmlight text, with a plain Python parser."""
    targets, rows = [], []
    for line in text.splitlines():
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        targets.append(float(line[0]))
        rows.append({int(k): float(v) for k, v in (t.split(":") for t in line[1:]
                                                   if not t.startswith(("qid:", "cost:")))})
    return np.array(targets), rows


def dense(rows, n):
    x = np.zeros((len(rows), n))
    for i, r in enumerate(rows):
        for k, v in r.items():
            x[i, k - 1] = v
    return x


def svm_scale(x, lo, hi, lower, upper):
    """svm-scale's output() for a dense matrix: {(row, index): value} of what it writes."""
    out = {}
    for j in range(x.shape[1]):
        if lo[j] == hi[j]:
            continue
        for i in range(x.shape[0]):
            v = x[i, j]
            if v == lo[j]:
                s = lower
            elif v == hi[j]:
                s = upper
            else:
                s = lower + (upper - lower) * (v - lo[j]) / (hi[j] - lo[j])
            if s != 0:
                out[i, j + 1] = s
    return out


def written(rows):
    return {(i, k): v for i, r in enumerate(rows) for k, v in r.items()}


def run(runner, args, input=None):
    result = runner.invoke(main, ["scale", *args], input=input)
    return result


@pytest.mark.parametrize("path", DATA)
@pytest.mark.parametrize("lower,upper", [(-1.0, 1.0), (0.0, 1.0), (-2.5, 0.75)])
def test_values_are_svm_scales(runner, tmp_path, path, lower, upper):
    text = open(path).read()
    y, rows = parse(text)
    n = max(max(r) for r in rows if r)
    x = dense(rows, n)
    lo, hi = x.min(axis=0), x.max(axis=0)            # zeros of absent features included
    out = tmp_path / "out"
    result = run(runner, ["-l", str(lower), "-u", str(upper), path, str(out)])
    assert result.exit_code == 0, result.output
    y2, rows2 = parse(out.read_text())
    assert np.array_equal(y, y2)
    assert written(rows2) == svm_scale(x, lo, hi, lower, upper)   # bit for bit, values exact


def test_zero_lower_keeps_non_negative_data_sparse(runner, tmp_path):
    path = "data/a9a.train.sample"
    out = tmp_path / "out"
    assert run(runner, ["-l", "0", path, str(out)]).exit_code == 0
    _, before = parse(open(path).read())
    _, after = parse(out.read_text())
    assert [sorted(r) for r in before] == [sorted(r) for r in after]


def test_default_range_writes_the_image_of_zero(runner, tmp_path):
    # a9a's features are 0/1: scaled to [-1, 1] every absent one becomes -1, written
    out = tmp_path / "out"
    result = run(runner, ["data/a9a.train.sample", str(out)])
    _, after = parse(out.read_text())
    n = len(after[0])
    assert all(len(r) == n for r in after) and n > 100
    assert "use -l 0" in result.output


def test_ranges_file_is_svm_scales_and_restores_on_the_test_file(runner, tmp_path):
    f = tmp_path / "train"
    f.write_text("1 1:2 3:-4\n-1 1:6 2:5 3:4\n1 2:5 4:1\n")
    ranges = tmp_path / "ranges"
    assert run(runner, ["-l", "0", "-u", "2", "-y", "-1", "1", "-s", str(ranges), str(f),
                        str(tmp_path / "out")]).exit_code == 0
    # feature 2 is 0 or 5 (min 0), 1 is 0..6, 3 is -4..4, 4 is 0..1; nothing constant here
    assert ranges.read_text() == ("y\n-1 1\n-1 1\nx\n0 2\n1 0 6\n2 0 5\n3 -4 4\n4 0 1\n")
    test = tmp_path / "test"
    test.write_text("1 1:3 2:10 5:7\n-1 3:-8\n")   # 2:10 beyond the range, 5 unknown
    out = tmp_path / "test.out"
    result = run(runner, ["-r", str(ranges), str(test), str(out)])
    assert result.exit_code == 0, result.output
    # 1:3 -> 1; 2:10 -> 4 (extrapolated); 3 absent -> 0 -> 1; 4 absent -> 0 -> 0 (not written)
    assert out.read_text() == "1 1:1 2:4 3:1\n-1 3:-1\n"
    assert "not in the ranges file" in result.output and ": 5" in result.output


def test_constant_and_absent_features_are_dropped(runner, tmp_path):
    f = tmp_path / "d"
    f.write_text("1 1:3 2:1 4:2\n2 1:3 2:2 4:2\n")   # 1 and 4 constant, 3 never present
    out = tmp_path / "out"
    ranges = tmp_path / "r"
    assert run(runner, ["-s", str(ranges), str(f), str(out)]).exit_code == 0
    assert out.read_text() == "1 2:-1\n2 2:1\n"
    assert ranges.read_text() == "x\n-1 1\n2 1 2\n"


def test_test_file_missing_the_last_feature_still_gets_its_zeros_image(runner, tmp_path):
    train = tmp_path / "train"
    train.write_text("1 1:1 2:4\n1 1:3\n")
    ranges = tmp_path / "r"
    assert run(runner, ["-s", str(ranges), str(train), str(tmp_path / "o")]).exit_code == 0
    test = tmp_path / "test"
    test.write_text("1 1:2\n")
    out = tmp_path / "out"
    assert run(runner, ["-r", str(ranges), str(test), str(out)]).exit_code == 0
    assert out.read_text() == "1 1:0 2:-1\n".replace(" 1:0", "")


def test_standardize_gives_mean_zero_deviation_one(runner, tmp_path):
    path = "data/cpusmall_scale.train.sample"
    _, rows = parse(open(path).read())
    x = dense(rows, 12)
    out = tmp_path / "out"
    ranges = tmp_path / "r"
    assert run(runner, ["--standardize", "-s", str(ranges), path, str(out)]).exit_code == 0
    _, scaled = parse(out.read_text())
    z = dense(scaled, 12)
    keep = x.std(axis=0) > 0
    assert np.allclose(z[:, keep], ((x - x.mean(axis=0)) / x.std(axis=0))[:, keep], atol=1e-12)
    assert np.allclose(z[:, keep].mean(axis=0), 0, atol=1e-12)
    assert np.allclose(z[:, keep].std(axis=0), 1, atol=1e-12)
    # the ranges file is svm-scale's: mean -/+ deviation over [-1, 1]; -r reproduces the output
    again = tmp_path / "again"
    assert run(runner, ["-r", str(ranges), path, str(again)]).exit_code == 0
    assert again.read_text() == out.read_text()
    r, _ = read_ranges(str(ranges))
    assert (r.lower, r.upper) == (-1.0, 1.0)
    assert np.allclose((r.fmin + r.fmax)[keep] / 2, x.mean(axis=0)[keep])


def test_digits_six_prints_as_svm_scale(runner, tmp_path):
    f = tmp_path / "d"
    f.write_text("0.1 1:1 2:0\n7 1:4 2:3\n2 1:2 2:1\n")
    out = tmp_path / "out"
    assert run(runner, ["--digits", "6", "-y", "0", "1", str(f), str(out)]).exit_code == 0
    # svm-scale -y 0 1 on this file prints these lines (each with a trailing space): features
    # %g, targets %.17g (0.1, the minimum, exactly 0)
    assert out.read_text() == ("0 1:-1 2:-1\n1 1:1 2:1\n0.27536231884057966 1:-0.333333 "
                               "2:-0.333333\n")


def test_qid_and_cost_are_kept_comments_dropped(runner, tmp_path):
    f = tmp_path / "d"
    f.write_text("2 qid:7 1:1 # a\n1 qid:7 cost:0.5 1:3\n")
    out = tmp_path / "out"
    assert run(runner, [str(f), str(out)]).exit_code == 0
    assert out.read_text() == "2 qid:7 1:-1\n1 qid:7 cost:0.5 1:1\n"


def test_standard_input_and_compressed_files_give_the_same_output(runner, tmp_path):
    path = "data/heart_scale"
    plain = tmp_path / "plain"
    assert run(runner, ["-l", "0", path, str(plain)]).exit_code == 0
    gz = tmp_path / "d.gz"
    gz.write_bytes(gzip.compress(open(path, "rb").read()))
    for args, stdin in (([str(gz)], None), (["-"], open(path).read())):
        out = tmp_path / "o"
        result = run(runner, ["-l", "0", *args, str(out)], input=stdin)
        assert result.exit_code == 0, result.output
        assert out.read_text() == plain.read_text()
    # with -r, standard input is read once
    ranges = tmp_path / "r"
    assert run(runner, ["-l", "0", "-s", str(ranges), path, str(tmp_path / "x")]).exit_code == 0
    result = run(runner, ["-r", str(ranges), "-"], input=open(path).read())
    assert result.exit_code == 0
    assert result.stdout == plain.read_text()


@pytest.mark.parametrize("args,message", [
    (["-l", "1", "-u", "0"], "must be greater than -l"),
    (["-y", "1", "1"], "UPPER (1) must be greater"),
    (["--standardize", "-l", "0"], "--standardize"),
    (["-r", "R", "-l", "0"], "with -r the ranges file sets the limits"),
    (["-r", "R", "-s", "S"], "-s goes with scaling from the data"),
    (["-l", "nan"], "-l must be finite"),
])
def test_bad_options(runner, tmp_path, args, message):
    result = run(runner, [*args, "data/heart_scale", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_bad_line_names_file_and_line_and_writes_nothing(runner, tmp_path):
    f = tmp_path / "d"
    f.write_text("1 1:1\n1 2:x\n")
    out, ranges = tmp_path / "out", tmp_path / "r"
    result = run(runner, ["-s", str(ranges), str(f), str(out)])
    assert result.exit_code == 2
    assert f"{f}:2:" in result.output
    assert not out.exists() and not ranges.exists()
    result = run(runner, ["-"], input="1 1:1\nfoo\n")
    assert result.exit_code == 2 and "-:2:" in result.output


@pytest.mark.parametrize("text,line,reason", [
    ("x\n0\n", 2, "expected 'lower upper'"),
    ("x\n0 1\n2 0 1\n1 0 1\n", 4, "positive and increasing"),
    ("x\n0 1\n1 0\n", 3, "expected 'index min max'"),
    ("z\n", 1, "expected 'x'"),
    ("", None, "empty"),
])
def test_bad_ranges_file(runner, tmp_path, text, line, reason):
    r = tmp_path / "r"
    r.write_text(text)
    out = tmp_path / "out"
    result = run(runner, ["-r", str(r), "data/heart_scale", str(out)])
    assert result.exit_code == 2
    assert (f"{r}:{line}:" if line else f"{r}:") in result.output and reason in result.output
    assert not out.exists()
