"""The svmlight reader (svmtrain.data / svmtrain._reader): agreement with scikit-learn on real data,
every byte split point, every kind of malformed line, compressed input and stdin, float exactness,
and random garbage."""
import bz2
import fractions
import gzip
import importlib.util
import io
import lzma
import math
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from svmtrain import _reader, data
from svmtrain.data import Block, DataError, _empty_block, iter_blocks, load, open_input

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("indptr", "indices", "data", "target", "qid", "cost", "line")


def shared_data() -> Path:
    return Path(os.environ.get("SVMTRAIN_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(tmp_path, rel, max_lines=None) -> Path:
    """Decompress shared/data/<rel> (xz) into tmp_path, keeping the first max_lines lines."""
    src = shared_data() / rel
    if not src.exists():
        pytest.skip(f"shared data not found: {src} (set SVMTRAIN_SHARED_DATA)")
    out = tmp_path / Path(rel).name.replace(".xz", ".svm")
    with lzma.open(src, "rb") as f, open(out, "wb") as g:
        for i, line in enumerate(f):
            if max_lines is not None and i >= max_lines:
                break
            g.write(line)
    return out


def write(tmp_path, content: bytes, name="f.svm") -> str:
    p = tmp_path / name
    p.write_bytes(content)
    return str(p)


def concat(blocks) -> Block:
    """Join blocks the way a consumer would (indptr offsets shifted)."""
    blocks = list(blocks)
    if not blocks:
        return _empty_block()
    indptr, off = [np.zeros(1, np.int64)], 0
    for b in blocks:
        indptr.append(b.indptr[1:] + off)
        off += b.nnz
    cat = lambda name: np.concatenate([getattr(b, name) for b in blocks])  # noqa: E731
    return Block(np.concatenate(indptr), cat("indices"), cat("data"), cat("target"), cat("qid"),
                 cat("cost"), cat("line"), max(b.n_features for b in blocks),
                 sum(b.nbytes for b in blocks))


def assert_same(a: Block, b: Block, nbytes=True):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y), name
    if a.n_rows and b.n_rows:
        assert a.n_features == b.n_features
    if nbytes:
        assert a.nbytes == b.nbytes


def error_of(tmp_path, content: bytes, **kw) -> DataError:
    path = write(tmp_path, content)
    with pytest.raises(DataError) as info:
        load(path, **kw)
    e = info.value
    assert e.path == path
    assert str(e) == f"{path}:{e.line}: {e.reason}"
    return e


# --- basic behaviour ---------------------------------------------------------------------------

SAMPLE = (
    b"# a header comment\n"
    b"+1 qid:3 1:0.5 3:-2 # trailing\r\n"
    b"\n"
    b"-1.0\tqid:3   2:1e3\t10:.5\r\n"
    b"  # indented comment\n"
    b"2.5e-3 cost:2 qid:7 1:5. 4:-0\n"
    b"   \t \n"
    b"0 qid:0\n"
    b"-2 cost:0.25 7:1E+3 8:-1.25e-2#c\n"
    b"\r\n"
    b"3 1:1 2:2 3:3"                      # no final newline
)


def test_sample_fields(tmp_path):
    b = load(write(tmp_path, SAMPLE))
    assert b.n_rows == 6 and b.nnz == 11 and b.n_features == 10 and b.nbytes == len(SAMPLE)
    assert b.target.tolist() == [1.0, -1.0, 2.5e-3, 0.0, -2.0, 3.0]
    assert b.qid.tolist() == [3, 3, 7, 0, -1, -1]
    assert b.cost.tolist() == [1.0, 1.0, 2.0, 1.0, 0.25, 1.0]
    assert b.line.tolist() == [2, 4, 6, 8, 9, 11]
    assert b.indptr.tolist() == [0, 2, 4, 6, 6, 8, 11]
    assert b.indices.tolist() == [0, 2, 1, 9, 0, 3, 6, 7, 0, 1, 2]
    assert b.data.tolist() == [0.5, -2.0, 1000.0, 0.5, 5.0, -0.0, 1000.0, -0.0125, 1.0, 2.0, 3.0]
    for name in FIELDS:
        assert getattr(b, name).dtype == (np.float64 if name in ("data", "target", "cost") else np.int64)


def test_negative_zero_keeps_sign(tmp_path):
    b = load(write(tmp_path, SAMPLE))
    assert np.signbit(b.data[5]) and not np.signbit(b.target[3])


def test_zero_based(tmp_path):
    b = load(write(tmp_path, b"1 0:1 5:2\n-1 2:3\n"), zero_based=True)
    assert b.indices.tolist() == [0, 5, 2] and b.n_features == 6
    e = error_of(tmp_path, b"1 0:1 5:2\n")
    assert e.line == 1 and "index 0" in e.reason


def test_empty_inputs(tmp_path):
    for content in (b"", b"\n\n", b"# only a comment", b"  \r\n# x\n"):
        b = load(write(tmp_path, content))
        assert b.n_rows == 0 and b.nnz == 0 and b.n_features == 0
        assert b.indptr.tolist() == [0] and b.nbytes == len(content)
        assert list(iter_blocks(write(tmp_path, content))) == []


def test_row_without_features(tmp_path):
    b = load(write(tmp_path, b"1\n2 # c\n-3 qid:4\n"))
    assert b.n_rows == 3 and b.nnz == 0 and b.n_features == 0 and b.indptr.tolist() == [0, 0, 0, 0]


def test_large_indices_64bit(tmp_path):
    big = 2**40
    b = load(write(tmp_path, f"1 {big}:1 {2**63 - 1}:2\n".encode()))
    assert b.indices.tolist() == [big - 1, 2**63 - 2] and b.n_features == 2**63 - 1


def test_data_error_pickles():
    import pickle

    e = pickle.loads(pickle.dumps(DataError("f.svm", 3, "bad")))
    assert (e.path, e.line, e.reason, str(e)) == ("f.svm", 3, "bad", "f.svm:3: bad")
    assert str(DataError("f.svm", None, "cannot open: x")) == "f.svm: cannot open: x"
    assert isinstance(e, ValueError)


# --- agreement with scikit-learn ---------------------------------------------------------------

@pytest.mark.parametrize("rel,lines", [
    ("heart_scale/heart_scale.xz", None),
    ("a9a/a9a.xz", 3000),
    ("reuters_lasvm/reuters.trn.xz", 2000),
    ("ohsumed/vali.txt.xz", 1000),                   # LETOR: qids and comments
])
def test_matches_sklearn(tmp_path, rel, lines):
    from sklearn.datasets import load_svmlight_file

    path = shared_file(tmp_path, rel, lines)
    X, y, q = load_svmlight_file(str(path), query_id=True)
    b = load(str(path))
    assert b.n_rows == X.shape[0] and b.n_features == X.shape[1]
    assert np.array_equal(b.indptr, X.indptr)
    assert np.array_equal(b.indices, X.indices)
    assert np.array_equal(b.data, X.data)        # bit-exact: same doubles
    assert np.array_equal(b.target, y)
    if len(q):
        assert np.array_equal(b.qid, q)
    else:                                            # scikit-learn: no qids at all -> empty
        assert (b.qid == -1).all()
    assert np.array_equal(b.line, np.arange(1, b.n_rows + 1))
    # streaming in small blocks gives the same rows
    assert_same(concat(iter_blocks(str(path), block_bytes=4096)), b)


# --- streaming and byte ranges -----------------------------------------------------------------

@pytest.mark.parametrize("block_bytes", [1, 7, 16, 100, 1 << 20])
def test_small_blocks_same_as_one(tmp_path, block_bytes):
    path = write(tmp_path, SAMPLE)
    whole = load(path)
    blocks = list(iter_blocks(path, block_bytes=block_bytes))
    assert all(b.n_rows > 0 for b in blocks)
    assert_same(concat(blocks), whole)
    assert_same(load(path, block_bytes=block_bytes), whole)


def test_line_longer_than_block(tmp_path):
    long_line = b"1 " + b" ".join(b"%d:%d.25" % (i, i) for i in range(1, 3000)) + b"\n"
    content = b"-1 1:1\n" + long_line + b"2 5:5\n" + long_line[:-1]
    path = write(tmp_path, content)
    whole = load(path)
    assert whole.n_rows == 4 and whole.nnz == 1 + 2999 + 1 + 2999
    blocks = list(iter_blocks(path, block_bytes=64))
    assert_same(concat(blocks), whole)
    assert sum(b.nbytes for b in blocks) == len(content)


def test_progress_counts_all_bytes(tmp_path):
    path = write(tmp_path, SAMPLE)
    seen = []
    blocks = list(iter_blocks(path, block_bytes=10, progress=seen.append))
    assert sum(seen) == len(SAMPLE) == sum(b.nbytes for b in blocks)


def ranges(path, cuts, **kw):
    """Blocks of the ranges [c0, c1), [c1, c2), ..., the last one open-ended."""
    out = []
    for a, b in zip(cuts, cuts[1:] + [None]):
        out += list(iter_blocks(path, offset=a, length=None if b is None else b - a, **kw))
    return concat(out)


def test_every_split_point(tmp_path):
    path = write(tmp_path, SAMPLE)
    whole = load(path)
    n = len(SAMPLE)
    for k in range(n + 2):
        assert_same(ranges(path, [0, k]), whole, nbytes=False)
        assert_same(ranges(path, [0, k], block_bytes=5), whole, nbytes=False)
        # a range and load() agree too
        first = load(path, offset=0, length=k)
        rest = load(path, offset=k)
        assert first.n_rows + rest.n_rows == whole.n_rows
        assert first.nbytes + rest.nbytes == n


def test_three_way_splits(tmp_path):
    path = write(tmp_path, SAMPLE)
    whole = load(path)
    n = len(SAMPLE)
    for i in range(0, n + 1, 3):
        for j in range(i, n + 1, 5):
            assert_same(ranges(path, [0, i, j]), whole, nbytes=False)
    for cuts in ([0, 1, 2, 3], [0, 20, 21, 22, 60, n - 1], [0] + list(range(1, n + 1, 2))):
        assert_same(ranges(path, cuts, block_bytes=3), whole, nbytes=False)


def test_range_line_numbers_absolute(tmp_path):
    content = b"".join(b"%d 1:%d\n" % (i % 2, i) for i in range(1, 1001))
    path = write(tmp_path, content)
    start = sum(len(b"%d 1:%d\n" % (i % 2, i)) for i in range(1, 500))     # line 500 starts here
    for offset in (start, start - 3):        # at a line start, or inside line 499
        b = load(path, offset=offset, length=30)
        assert b.line[0] == 500 and b.data[0] == 500.0
        assert np.array_equal(b.data, b.line.astype(float))
        b = load(path, offset=offset)
        assert b.line.tolist() == list(range(500, 1001))


def test_ranges_need_plain_file(tmp_path):
    path = tmp_path / "f.svm.gz"
    path.write_bytes(gzip.compress(SAMPLE))
    with pytest.raises(DataError, match="byte ranges need a plain"):
        load(str(path), offset=3)
    with pytest.raises(DataError, match="byte ranges need a plain"):
        list(iter_blocks(str(path), length=10))


# --- compressed input and stdin ----------------------------------------------------------------

@pytest.mark.parametrize("compress,suffix", [
    (gzip.compress, ".gz"), (bz2.compress, ".bz2"), (lzma.compress, ".xz"),
    (gzip.compress, ".svm"),                                  # detected by magic, not by name
])
def test_compressed(tmp_path, compress, suffix):
    whole = load(write(tmp_path, SAMPLE))
    path = tmp_path / ("c" + suffix)
    path.write_bytes(compress(SAMPLE))
    assert_same(load(str(path)), whole)
    assert_same(concat(iter_blocks(str(path), block_bytes=7)), whole)
    with open_input(str(path)) as f:
        assert f.read() == SAMPLE


def test_corrupt_compressed(tmp_path):
    path = tmp_path / "bad.gz"
    path.write_bytes(gzip.compress(SAMPLE * 50)[:60])
    with pytest.raises(DataError) as info:
        load(str(path))
    assert info.value.line is None and "decompress" in info.value.reason


@pytest.mark.parametrize("compress,suffix", [(gzip.compress, ".gz"), (bz2.compress, ".bz2"),
                                             (lzma.compress, ".xz")])
def test_truncated_compressed_file_in_a_fresh_process(tmp_path, compress, suffix):
    """The decompressors are imported only for a compressed file: a cut one still reads as a
    data error naming the file (status 2, no traceback, no model) in a process that had not
    imported them before."""
    path = tmp_path / ("cut" + suffix)
    path.write_bytes(compress(SAMPLE * 200)[:-20])
    model = tmp_path / "m"
    r = subprocess.run([sys.executable, "-m", "svmtrain", "train", "-q", str(path), str(model)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{path}: cannot decompress" in r.stderr and not model.exists()


@pytest.mark.parametrize("compress", [None, gzip.compress, lzma.compress])
def test_stdin(tmp_path, monkeypatch, compress):
    whole = load(write(tmp_path, SAMPLE))
    payload = SAMPLE if compress is None else compress(SAMPLE)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))
    assert_same(concat(iter_blocks("-", block_bytes=7)), whole)
    monkeypatch.setattr(sys, "stdin", io.BytesIO(payload))       # a bare binary stream works too
    assert_same(load("-"), whole)


def test_stdin_subprocess(tmp_path):
    code = ("from svmtrain.data import load; b = load('-'); "
            "print(b.n_rows, b.nnz, b.line.tolist())")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], input=bz2.compress(SAMPLE), env=env,
                         capture_output=True, check=True).stdout.decode()
    assert out.split(" ", 2)[:2] == ["6", "11"]


def test_stdin_no_ranges(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.BytesIO(SAMPLE))
    with pytest.raises(DataError, match="byte ranges need a plain"):
        load("-", offset=1)


@pytest.mark.parametrize("compress", [None, bz2.compress])
def test_fifo(tmp_path, compress):
    """A named pipe (like bash's <(zcat f.gz)) cannot seek: it is read like stdin."""
    import threading

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    whole = load(write(tmp_path, SAMPLE))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    payload = SAMPLE if compress is None else compress(SAMPLE)
    writer = threading.Thread(target=fifo.write_bytes, args=(payload,))
    writer.start()
    try:
        assert_same(load(str(fifo), block_bytes=5), whole)
    finally:
        writer.join()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_files_are_closed(tmp_path):
    plain = write(tmp_path, SAMPLE)
    packed = tmp_path / "c.xz"
    packed.write_bytes(lzma.compress(SAMPLE))
    def open_files():
        # (fd, what it names): a file of the loop's still open is a new pair; an fd of an
        # earlier test's that something else closes meanwhile (a lingering thread, the collection
        # below) is not a leak of the reader's
        pairs = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                pairs.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
            except OSError:
                pass                           # (the listing's own descriptor, closed since)
        return pairs

    before = open_files()
    for _ in range(5):
        load(plain)
        load(plain, offset=7, length=20)
        load(str(packed))
        with open_input(str(packed)) as f:
            f.read(3)
        next(iter_blocks(str(packed), block_bytes=8)).n_rows   # abandoned generator
        with pytest.raises(DataError):
            load(write(tmp_path, SAMPLE + b"\nx\n", "bad.svm"))
    import gc

    gc.collect()
    assert open_files() - before == set()


def test_cannot_open(tmp_path):
    for path in (str(tmp_path / "missing.svm"), str(tmp_path)):
        with pytest.raises(DataError) as info:
            load(path)
        assert info.value.line is None and info.value.reason.startswith("cannot open: ")
        with pytest.raises(DataError):
            open_input(path)


# --- malformed lines ---------------------------------------------------------------------------

BAD = [
    # (line, fragment of the reason)
    (b"abc 1:2", "expected a number as target, got 'abc'"),
    (b"1x 1:2", "expected a number as target"),
    (b"1:2 3:4", "expected a number as target, got '1:2'"),
    (b"nan 1:2", "target is nan"),
    (b"-inf 1:2", "target is infinite"),
    (b"1e999 1:2", "target is infinite"),
    (b"1 3:abc", "expected a number as value, got 'abc'"),
    (b"1 3:4x", "expected a number as value, got '4x'"),
    (b"1 3:nan", "value is nan"),
    (b"1 3:Infinity", "value is infinite"),
    (b"1 3:-1e400", "value is infinite"),
    (b"1 3:", "value missing after '3:'"),
    (b"1 3: 4:1", "value missing after '3:'"),
    (b"1 :3", "index missing in ':3'"),
    (b"1 1.5:3", "index is not an integer in '1.5:3'"),
    (b"1 x:3", "index is not an integer in 'x:3'"),
    (b"1 0:3", "index 0 in '0:3'"),
    (b"1 -3:1", "negative index in '-3:1'"),
    (b"1 7:1 5:2", "index 5 after 7"),
    (b"1 5:1 5:2", "duplicate index 5"),
    (b"1 qid:x 1:1", "bad qid 'qid:x'"),
    (b"1 qid:-2 1:1", "bad qid 'qid:-2'"),
    (b"1 qid:1.5 1:1", "bad qid"),
    (b"1 qid: 1:1", "bad qid"),
    (b"1 qid:99999999999999999999 1:1", "bad qid"),
    (b"1 qid:1 qid:2", "duplicate qid"),
    (b"1 1:1 qid:2", "'qid:2' must come right after the target"),
    (b"1 cost:0 1:1", "bad cost 'cost:0'"),
    (b"1 cost:-1", "bad cost"),
    (b"1 cost:abc", "bad cost"),
    (b"1 cost:inf", "bad cost"),
    (b"1 cost:1 cost:2", "duplicate cost"),
    (b"1 1:1 cost:2", "'cost:2' must come right after the target"),
    (b"1 abc", "expected index:value, got 'abc'"),
    (b"1 3", "expected index:value, got '3'"),
    (b"1 3:4:5", "expected index:value, got '3:4:5'"),
    (b"1 1:1 3abc", "expected index:value, got '3abc'"),
    (b"1 99999999999999999999:1", "index too large for 64 bits"),
    (b"1 9223372036854775808:1", "index too large for 64 bits"),
    (b"1 1:2\x003:4", "nul byte"),
    (b"1\x00 1:2", "nul byte"),
    (b"\x00", "nul byte"),
    (b"1 1:2 # comment \x00", "nul byte"),
]


@pytest.mark.parametrize("bad,reason", BAD)
def test_malformed_line(tmp_path, bad, reason):
    good = b"1 1:1\n# comment\n\n-1 2:2 3:3\r\n"
    e = error_of(tmp_path, good + bad + b"\n" + good)
    assert e.line == 5
    assert reason in e.reason
    e = error_of(tmp_path, good + bad)           # last line, no newline
    assert e.line == 5 and reason in e.reason
    # in a byte range starting mid-file (mid-line too), and with tiny blocks
    path = write(tmp_path, good * 40 + bad + b"\n" + good)
    start = len(good) * 37 + 3
    with pytest.raises(DataError) as info:
        load(path, offset=start, length=len(good) * 3 + 1, block_bytes=5)
    assert info.value.line == 4 * 40 + 1 and reason in info.value.reason
    # a range that ends before the bad line does not see it
    assert load(path, offset=start, length=len(good) * 2).n_rows == 4


def test_token_in_message_is_cut_and_escaped(tmp_path):
    e = error_of(tmp_path, b"1 " + b"\xff" * 100 + b"\n")
    assert "\\xff" in e.reason and len(e.reason) < 120


# --- float exactness ---------------------------------------------------------------------------

def parse(s: str) -> float:
    """The reader's value of s, the same bits as the model reader's (fractions eight digits at
    a time), or ValueError from both."""
    try:
        value = _reader.parse_float(s.encode())
    except ValueError:
        with pytest.raises(ValueError):
            _reader.parse_float(s.encode(), True)
        raise
    assert struct.pack("<d", value) == struct.pack("<d", _reader.parse_float(s.encode(), True)), s
    return value


def same_bits(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)


def test_float_round_trip_random():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**64, size=20000, dtype=np.uint64)
    values = bits.view(np.float64)
    values = values[np.isfinite(values)].tolist()
    values += rng.standard_normal(20000).tolist() + rng.random(5000).tolist()
    values += (rng.integers(-10**6, 10**6, 5000) / 1000).tolist()
    for v in values:
        for s in (repr(v), "%.17g" % v, "%.15g" % v, "%.6e" % v):
            assert same_bits(parse(s), float(s)), s


def test_float_edge_cases():
    cases = ["1e-320", "4.9406564584124654e-324", "2.2250738585072011e-308", "1e308",
             "1.7976931348623157e308", "-0", "-0.0", "+0", ".5", "5.", "-.5e1", "1E+3", "1e-3",
             "123456789012345678901234567890", "0.123456789012345678901234567890",
             "9007199254740993", "9007199254740992", "1e22", "1e23", "8.5e-23", "0.1", "0.3",
             "1.00000000000000000000000000000000001", "000000000000000000001.5", "0.0000000000000000000001",
             "4.35679845e-10", "1e-400", "0e999999999999", "123e-999999999999999999999"]
    for s in cases:
        assert same_bits(parse(s), float(s)), s
    assert np.signbit(parse("-0")) and not np.signbit(parse("+0"))
    for s in ["", ".", "-", "e5", "1e", "1e+", "0x10", "1..2", "--1", "nan", "inf", "1e999"]:
        with pytest.raises(ValueError):
            parse(s)


def test_float_decimals_of_up_to_19_digits_at_every_exponent():
    """The Eisel-Lemire path (19 significant digits at most, any exponent; strtod where it cannot
    decide) against Python's correctly rounded float(): random digit strings, and the points
    halfway between two doubles, written exactly where 19 digits hold them (round half to even)
    and to 19 digits, one unit below and above."""
    rng = random.Random(4)
    cases = []
    for _ in range(20000):
        nd = rng.randint(1, 19)
        cases.append(f"{rng.randint(10 ** (nd - 1), 10 ** nd - 1)}e{rng.randint(-345, 310)}")
    for _ in range(3000):
        m = 2 * (rng.getrandbits(53) | 1 << 53) + 1          # halfway: one bit past 53
        e = rng.randint(-12, 9)
        exact = str(m << e) if e >= 0 else f"{m * 5 ** -e}e{e}"
        if len(exact.split("e")[0]) <= 19:
            cases += [exact, "-" + exact]
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(63)))[0]
        if math.isfinite(x) and x:
            mid = (fractions.Fraction(x) + fractions.Fraction(math.nextafter(x, math.inf))) / 2
            digits, _, ex = f"{mid.numerator / mid.denominator:.18e}".partition("e")
            whole = int(digits.replace(".", ""))
            cases += [f"{whole + d}e{int(ex) - 18}" for d in (-1, 0, 1)]
    # every length of fraction, so that the eight-digit chunks end at every place; the bytes
    # next to the digits in ASCII ('/' and ':') inside a chunk are not digits
    for n in range(1, 27):
        digits = "".join(rng.choice("0123456789") for _ in range(n))
        cases += [f"0.{digits}", f"7.{digits}e-5", f"-{digits[:5]}.{digits}e12", f"0.000{digits}"]
    for s in cases:
        if math.isfinite(float(s)):        # (overflowing ones are refused: tested above)
            assert same_bits(parse(s), float(s)), s
    for junk in "/:":
        for at in range(0, 9):
            with pytest.raises(ValueError):
                parse("0." + "12345678"[:at] + junk + "12345678"[at:])


@pytest.mark.parametrize("token,qid,value", [
    ("qid:9223372036854775807", 2**63 - 1, None), ("qid:9223372036854775799", 2**63 - 9, None),
    ("qid:9223372036854775808", "bad qid", None), ("qid:92233720368547758070", "bad qid", None),
    ("qid:0000000000000000000009", 9, None), ("9223372036854775808:1", "index too large", None),
    ("1:00000.000123", -1, 0.000123), ("1:0.", -1, 0.0), ("1:.0", -1, 0.0), ("1:000", -1, 0.0),
    ("1:-000.0001e3", -1, -0.1), ("1:.", "expected a number as value", None),
    ("1:0.0000000000000000000000000000012345678901234567890123", -1,
     float("1.2345678901234567890123e-30"))])
def test_integers_at_int64s_edge_and_zeros_before_the_digits(tmp_path, token, qid, value):
    """The largest qid and index an int64 holds, one past it, and leading zeros on either side
    of the point (skipped by loops of their own)."""
    path = write(tmp_path, f"1 {token}\n".encode())
    if isinstance(qid, str):
        with pytest.raises(DataError, match=qid):
            load(path)
        return
    b = load(path)
    assert b.qid.tolist() == [qid]
    if value is not None:
        assert same_bits(float(b.data[0]), value)


def test_the_powers_of_five_are_the_scripts():
    """pyx/_pow5_table.h is what pyx/make_pow5_table.py writes (and so can be checked)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyx")
    spec = importlib.util.spec_from_file_location("make_pow5_table",
                                                  os.path.join(root, "make_pow5_table.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with open(os.path.join(root, "_pow5_table.h")) as f:
        assert f.read() == script.header()
    powers = script.powers()
    for q in (-342, -28, -27, -1, 0, 1, 27, 55, 308):
        c, exact = powers[q + 342], fractions.Fraction(5) ** q
        assert c.bit_length() == 128
        # 5^q scaled into [2^127, 2^128), within a unit of the 128 bits' last place
        scaled = exact * fractions.Fraction(2) ** (127 - math.floor(math.log2(exact)))
        assert 1 << 127 <= scaled < 1 << 128 and abs(scaled - c) <= 1, q


def test_the_repr_scales_are_the_scripts():
    """pyx/_repr_table.h is what pyx/make_repr_table.py writes, and each g_k is 10^-k scaled
    into [2^125, 2^126), rounded up: the bound the shortest-repr search relies on."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyx")
    spec = importlib.util.spec_from_file_location("make_repr_table",
                                                  os.path.join(root, "make_repr_table.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with open(os.path.join(root, "_repr_table.h")) as f:
        assert f.read() == script.header()
    scales = script.scales()
    assert len(scales) == script.K_MAX - script.K_MIN + 1
    for k in (-324, -308, -1, 0, 1, 22, 23, 292):
        exact = fractions.Fraction(10) ** -k
        r = exact.numerator.bit_length() - exact.denominator.bit_length()
        if fractions.Fraction(2) ** r > exact:      # floor(log2 10^-k), exactly
            r -= 1
        scaled = exact / fractions.Fraction(2) ** (r - 125)
        g = scales[k - script.K_MIN]
        assert 1 << 125 <= scaled < 1 << 126 and 0 < g - scaled <= 1, k


def test_float_exact_through_files(tmp_path):
    rng = np.random.default_rng(1)
    values = rng.standard_normal(2000) * 10.0 ** rng.integers(-300, 300, 2000)
    lines = b"".join(b"%s 1:%s 2:%.17g\n" % (repr(v).encode(), repr(v).encode(), v) for v in values.tolist())
    b = load(write(tmp_path, lines))
    assert np.array_equal(b.target.view(np.uint64), values.view(np.uint64))
    assert np.array_equal(b.data.view(np.uint64), np.repeat(values, 2).view(np.uint64))


# --- random garbage ----------------------------------------------------------------------------

def test_fuzz_never_crashes(tmp_path):
    rng = np.random.default_rng(2)
    alphabet = np.frombuffer(b"0123456789:.+-eE \t\r\n#qidcost:nax\x00\xff", np.uint8)
    path = tmp_path / "fuzz.svm"
    for i in range(400):
        n = int(rng.integers(0, 200))
        if i % 2:
            data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        else:
            data = alphabet[rng.integers(0, len(alphabet), n)].tobytes()
        path.write_bytes(data)
        for kw in ({}, {"block_bytes": 3}, {"offset": n // 3, "length": n // 2}):
            try:
                b = load(str(path), **kw)
            except DataError as e:
                assert e.line is not None and e.reason
            else:
                assert b.indptr[-1] == b.nnz and len(b.line) == b.n_rows
                assert np.isfinite(b.data).all() and np.isfinite(b.target).all()


def test_fuzz_mutations_of_valid_file(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "mut.svm"
    for _ in range(300):
        data = bytearray(SAMPLE)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        try:
            b = load(str(path))
        except DataError as e:
            assert 1 <= e.line <= data.count(b"\n") + 1
        else:
            assert_same(concat(iter_blocks(str(path), block_bytes=4)), b)


@pytest.mark.parametrize("seed", range(6))
def test_whole_examples_yields_every_row_once_and_no_example_split(seed):
    """Runs of one qid (sentences) cut anywhere by the reader come out whole, every row once and
    in order, however the blocks fall: an example longer than a block, blocks of one example's
    rows, empty blocks."""
    rng = np.random.default_rng(seed)
    runs = rng.integers(1, 9, 60)
    qid = np.repeat(np.arange(len(runs)), runs)
    n = len(qid)
    lengths = rng.integers(0, 4, n)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    whole = data.Block(indptr, rng.integers(0, 20, indptr[-1]), rng.normal(size=indptr[-1]),
                       np.arange(n, dtype=np.float64), qid, np.ones(n), np.arange(1, n + 1), 20, 0)
    cuts = np.unique(np.concatenate(([0, n], rng.integers(0, n + 1, rng.integers(0, 40)))))
    blocks = [whole.rows(a, b).copy() for a, b in zip(cuts[:-1], cuts[1:])]
    blocks.insert(1, whole.rows(0, 0))
    out = list(data.whole_examples(iter(blocks), "consecutive"))
    joined = data.concat_blocks(out)
    for name in ("indptr", "indices", "data", "target", "qid", "line"):
        assert np.array_equal(getattr(joined, name), getattr(whole, name)), name
    ends = set(np.cumsum([b.n_rows for b in out]).tolist())
    starts_of_runs = set(np.cumsum(runs).tolist())
    assert ends <= starts_of_runs        # every yielded block ends where an example ends
    # a run whose qid came before, in whichever block: refused at its first line
    again = whole.qid.copy()
    k = int(np.cumsum(runs)[-2])          # the last run takes the first run's qid
    again[k:] = 0
    whole.qid = again
    blocks = [whole.rows(a, b).copy() for a, b in zip(cuts[:-1], cuts[1:])]
    with pytest.raises(DataError, match=f"f:{k + 1}: qid 0 appears again"):
        list(data.whole_examples(iter(blocks), "consecutive", "f"))
    assert sum(b.n_rows for b in data.whole_examples(iter(blocks), "consecutive", "f",
                                                     refuse_repeats=False)) == n


@pytest.mark.parametrize("piece", [1, 7, 1 << 16])
def test_a_crc_taken_in_pieces_is_the_crc_of_the_whole_in_the_wider_type(piece):
    """Fingerprints (resume states, the online-dual mode's rows done) take a CRC-32 of arrays
    converted a piece at a time: the value is that of the whole array in the wider type, however
    the array is stored and cut."""
    import zlib
    from svmtrain.data import crc32_as
    rng = np.random.default_rng(piece)
    columns = rng.integers(0, 1 << 20, 100_003).astype(np.int32)
    values = rng.random(100_003).astype(np.float32)
    whole = zlib.crc32(values.astype(np.float64), zlib.crc32(columns.astype(np.int64)))
    assert crc32_as(values, np.float64, crc32_as(columns, np.int64, 0, piece), piece) == whole
    assert crc32_as(columns.astype(np.int64), np.int64, 0, piece) == zlib.crc32(columns.astype(np.int64))


def _parsed(text, **kw):
    parser = _reader.Parser(False, 1, **kw)
    consumed, done, error = parser.parse(text, final=True)
    assert error == 0 and consumed == len(text)
    return parser


TEXT = b"1 1:0.5 3:2\n-1 2:1 70000:0.25\n\n2 1:1 2:1 3:1\n"


@pytest.mark.parametrize("extra, fits", [(b"", True), (b"1 2147483648:1\n", True),
                                         (b"1 2147483649:1\n", False),
                                         (b"1 3000000000:1\n", False)],
                         ids=["int32", "column INT32_MAX", "past INT32_MAX", "far past"])
def test_int32_columns_while_parsing(extra, fits):
    """A parser made with int32_columns stores int32s while every column fits and int64s from the
    first that does not; either way the rows are the int64 parser's."""
    text = TEXT * 500 + extra + TEXT
    narrow, plain = _parsed(text, int32_columns=True), _parsed(text)
    a, b = narrow.take_buffers(), plain.take_buffers()
    assert memoryview(a[1]).format == ("i" if fits else "q")
    assert memoryview(b[1]).format == "q"
    assert [list(memoryview(x)) for x in a[:-1]] == [list(memoryview(x)) for x in b[:-1]]
    assert a[-1] == b[-1]
    # take() hands over int64 columns whatever the parser stored
    narrow, plain = _parsed(text, int32_columns=True), _parsed(text)
    for x, y in zip(narrow.take(), plain.take()):
        assert np.array_equal(x, y) and getattr(x, "dtype", None) == getattr(y, "dtype", None)


def test_a_parser_of_int32_columns_after_a_take_and_a_bad_line():
    parser = _reader.Parser(False, 1, int32_columns=True)
    parser.parse(TEXT, final=True)
    assert memoryview(parser.take_buffers()[1]).format == "i"
    # the next rows are int32 again: a take starts afresh
    consumed, done, error = parser.parse(b"1 4:1\n-1 2:x\n", final=True)
    assert error != 0 and consumed == len(b"1 4:1\n")
    indptr, indices = parser.take_buffers()[:2]
    assert memoryview(indices).format == "i" and list(memoryview(indices)) == [3]


def test_the_predicting_readers_take_a_parser_of_int32_columns():
    """predict_parsed and regress_parsed read int64 columns: they widen a narrow parser's first."""
    w = memoryview(struct.pack("4d", 0.5, -1.0, 2.0, 0.0)).cast("d")
    text = b"1 1:1 3:2\n-1 2:1 4:1\n1 3:0.5 70000:1\n"
    outs = []
    for kw in ({}, {"int32_columns": True}):
        parser = _parsed(text, **kw)
        outs.append(_reader.predict_parsed(parser, w, 4, 1, 0.0, False, [1.0, -1.0],
                                           [b"1", b"-1"], True))
        parser = _parsed(text, **kw)
        sums = _reader.RegressionSums()
        outs.append((_reader.regress_parsed(parser, w, 4, 0.0, False, sums), sums.figures()))
    assert outs[0] == outs[2] and outs[1] == outs[3]
