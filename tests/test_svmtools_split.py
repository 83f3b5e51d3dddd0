"""svmtools split: train/test and k-fold files, stratified by label or grouped by qid, seeded."""

from collections import Counter

import pytest
from click.testing import CliRunner

from svmtools.cli import main


@pytest.fixture
def runner():
    return CliRunner()


def lines(path):
    return open(path).read().splitlines()


def label(line):
    return line.split()[0]


def qid(line):
    return line.split()[1]


def split(runner, *args, input=None):
    return runner.invoke(main, ["split", *args], input=input)


def test_train_test_is_a_stratified_partition_in_file_order(runner, tmp_path):
    src = "data/heart_scale"
    prefix = str(tmp_path / "hs")
    result = split(runner, "-t", "0.25", src, prefix)
    assert result.exit_code == 0, result.output
    train, test = lines(prefix + ".train"), lines(prefix + ".test")
    original = lines(src)
    assert sorted(train + test) == sorted(original)
    assert len(test) == round(0.25 * len(original)) or abs(len(test) - 0.25 * len(original)) < 1
    # each label divided as the fraction says (within one row)
    whole, part = Counter(map(label, original)), Counter(map(label, test))
    for k, n in whole.items():
        assert abs(part[k] - 0.25 * n) <= 1
    # file order kept in each output
    position = {line: i for i, line in enumerate(original)}
    assert [position[x] for x in test] == sorted(position[x] for x in test)


def test_folds_partition_the_rows_and_train_files_are_the_rest(runner, tmp_path):
    src = "data/pendigits_scale.train.sample"
    prefix = str(tmp_path / "pd")
    assert split(runner, "-k", "4", src, prefix).exit_code == 0
    original = lines(src)
    tests = [lines(f"{prefix}.fold{k}.test") for k in range(1, 5)]
    assert sorted(sum(tests, [])) == sorted(original)
    whole = Counter(map(label, original))
    for k in range(1, 5):
        train = lines(f"{prefix}.fold{k}.train")
        assert sorted(train + tests[k - 1]) == sorted(original)
        counts = Counter(map(label, tests[k - 1]))
        for lab, n in whole.items():      # stratified: floor(n/4) or ceil(n/4) of each label
            assert n // 4 <= counts[lab] <= -(-n // 4)


def test_queries_are_never_split(runner, tmp_path):
    src = "data/ohsumed.train.sample"
    for args in (["-k", "3"], ["-t", "0.3"]):
        prefix = str(tmp_path / args[0][1:])
        assert split(runner, *args, src, prefix).exit_code == 0
        names = ([f"{prefix}.fold{k}.test" for k in (1, 2, 3)] if args[0] == "-k"
                 else [f"{prefix}.train", f"{prefix}.test"])
        owner = {}
        for name in names:
            for q in set(map(qid, lines(name))):
                assert q not in owner, f"{q} in {owner.get(q)} and {name}"
                owner[q] = name
        assert set(owner) == set(map(qid, lines(src)))


def test_same_seed_same_files_other_seed_other_files(runner, tmp_path):
    src = "data/a9a.train.sample"
    out = {}
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        prefix = str(tmp_path / name)
        assert split(runner, "-k", "3", "--seed", seed, src, prefix).exit_code == 0
        out[name] = [open(f"{prefix}.fold{k}.test", "rb").read() for k in (1, 2, 3)]
    assert out["a"] == out["b"]
    assert out["a"] != out["c"]


def test_standard_input_gives_the_same_files(runner, tmp_path):
    src = "data/heart_scale"
    assert split(runner, "-t", "0.3", src, str(tmp_path / "f")).exit_code == 0
    assert split(runner, "-t", "0.3", "-", str(tmp_path / "s"),
                 input=open(src).read()).exit_code == 0
    for part in ("train", "test"):
        assert lines(tmp_path / f"f.{part}") == lines(tmp_path / f"s.{part}")


def test_existing_files_are_kept_unless_force(runner, tmp_path):
    prefix = str(tmp_path / "hs")
    open(prefix + ".test", "w").write("keep\n")
    result = split(runner, "-t", "0.5", "data/heart_scale", prefix)
    assert result.exit_code == 2 and "file exists" in result.output
    assert lines(prefix + ".test") == ["keep"]
    assert not (tmp_path / "hs.train").exists()
    assert split(runner, "-t", "0.5", "--force", "data/heart_scale", prefix).exit_code == 0
    assert lines(prefix + ".test") != ["keep"]


@pytest.mark.parametrize("args,message", [
    (["-t", "0.5", "-k", "3"], "not both"),
    ([], "one of them"),
    (["-t", "1.5"], "-t"),
    (["-k", "3", "--by", "qid"], "heart_scale:1: no qid"),
])
def test_bad_usage(runner, tmp_path, args, message):
    result = split(runner, *args, "data/heart_scale", str(tmp_path / "x"))
    assert result.exit_code == 2
    assert message in result.output
    assert list(tmp_path.iterdir()) == []


def test_bad_line_names_file_and_line_and_writes_nothing(runner, tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("1 1:1\n-1 1:1\n1 2:oops\n")
    result = split(runner, "-t", "0.5", str(bad), str(tmp_path / "x"))
    assert result.exit_code == 2 and f"{bad}:3:" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad"]
