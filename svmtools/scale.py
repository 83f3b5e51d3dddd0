"""svmtools scale: LIBSVM svm-scale's feature scaling, plus standardisation, on svmlight files.

What svm-scale does, and so what this does (checked value for value against svm-scale's output):

- Each feature j gets a range [min_j, max_j] over the whole file, *implicit zeros included*: a row
  that lacks feature j counts as a 0 there. A value v maps to

      lower + (upper - lower) * (v - min_j) / (max_j - min_j)

  except that v == min_j gives exactly `lower` and v == max_j exactly `upper` (svm-scale's two
  special cases, kept so the images of the extremes carry no rounding). A feature with
  min_j == max_j (constant, or never present) is dropped from the output. Values outside a
  restored range (a test file) extrapolate linearly.
- A scaled value of 0 is not written. So scaling to [0, u] keeps sparse data sparse (a feature
  with min 0 maps 0 to exactly 0); otherwise a zero maps to a nonzero value, which is written for
  every row that lacks the feature, as svm-scale does (the file becomes dense; a warning says so
  and suggests -l 0).
- The target is scaled likewise with -y LOWER UPPER (its range over the file), else copied.
- The ranges file (-s writes, -r reads) is svm-scale's, so the two tools read each other's:

      y                      (only with -y)
      y_lower y_upper
      y_min y_max
      x
      lower upper
      index min max          one line per feature with min != max, increasing index

  With -r, a feature of the file that the ranges file lacks is dropped (svm-scale "scales it to
  0", which it then does not write: the same output), with a warning when it varies in the file.
  The output's feature range runs to the larger of the file's and the ranges file's largest index
  (a test file lacking the last feature still gets its zero's image, as from svm-scale).

Differences, all on purpose: values are written exactly (the shortest decimal that reads back as
the same double) where svm-scale prints %g (6 significant digits), unless --digits N asks for %.Ng
(--digits 6 writes svm-scale's text: features %g, scaled targets %.17g); `qid:` and `cost:` are kept (svm-scale stops reading a line
at them); comments are dropped (as by svm-scale); no trailing space. Bad lines stop with the file,
line and reason (svm-scale reads past them).

--standardize maps each feature to (v - mean_j) / std_j (mean and population deviation over the
file, implicit zeros included). That map is affine, and so is svm-scale's: it *is* svm-scale's map
with lower = -1, upper = 1, min_j = mean_j - std_j, max_j = mean_j + std_j. It is computed that way,
so -s writes an ordinary ranges file that -r (and svm-scale -r) applies to a test file.

Passes: the ranges need the whole file before the first line is written, so a file is read twice
(compressed files are decompressed twice); standard input (`-`) is first copied to a temporary
file. With -r the ranges are known, and the file (or standard input) is read once, streaming.
"""
from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import Optional

import click

from svmtrain.cli.options import InputError, data_path, quiet_option, user_errors

__all__ = ["Ranges", "read_ranges", "ranges_text", "scan", "scale"]

# rows of one output chunk times its dense columns (features whose zero maps to nonzero)
_DENSE_CELLS = 1 << 22


@dataclass
class Ranges:
    """svm-scale's scaling parameters: arrays indexed by 0-based column (feature index - 1)."""

    lower: float
    upper: float
    fmin: "np.ndarray"          # float64, one per feature 1..n
    fmax: "np.ndarray"
    y: Optional[tuple] = None   # (y_lower, y_upper, y_min, y_max), or None: targets copied

    @property
    def n_features(self) -> int:
        return len(self.fmin)


def _g17(x: float) -> str:
    return "%.17g" % x


def ranges_text(r: Ranges) -> str:
    """The ranges file, as svm-scale -s writes it (%.17g, features with min == max left out)."""
    import numpy as np

    lines = []
    if r.y is not None:
        yl, yu, ymin, ymax = r.y
        lines += ["y", f"{_g17(yl)} {_g17(yu)}", f"{_g17(ymin)} {_g17(ymax)}"]
    lines += ["x", f"{_g17(r.lower)} {_g17(r.upper)}"]
    for j in np.flatnonzero(r.fmin != r.fmax).tolist():
        lines.append(f"{j + 1} {_g17(r.fmin[j])} {_g17(r.fmax[j])}")
    return "\n".join(lines) + "\n"


def read_ranges(path: str) -> tuple:
    """(Ranges or None for the x part, y tuple or None) from a ranges file.

    Stricter than svm-scale's reader: every line must be complete and numeric, indices
    positive and increasing; DataError(path, line, reason) otherwise.
    """
    import numpy as np
    from svmtrain.data import DataError, open_input

    with open_input(path) as f:
        try:
            raw = f.read()
        except OSError as e:
            raise DataError(path, None, f"cannot read: {e.strerror or e}") from None
    lines = [(k, t.strip()) for k, t in enumerate(raw.decode("utf-8", "replace").splitlines(), 1)]
    lines = [(k, t) for k, t in lines if t]
    pos = 0

    def numbers(count, what):
        nonlocal pos
        if pos >= len(lines):
            raise DataError(path, None, f"ends early: expected {what}")
        k, text = lines[pos]
        pos += 1
        parts = text.split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = None
        if values is None or len(values) != count or not all(map(math.isfinite, values)):
            raise DataError(path, k, f"expected {what}, got {text[:60]!r}")
        return k, values

    y = None
    if pos < len(lines) and lines[pos][1] == "y":
        pos += 1
        k, (yl, yu) = numbers(2, "'y_lower y_upper'")
        if not yu > yl:
            raise DataError(path, k, f"y_upper must be greater than y_lower, got {yl:g} {yu:g}")
        _, (ymin, ymax) = numbers(2, "'y_min y_max'")
        y = (yl, yu, ymin, ymax)
    if pos >= len(lines):
        if y is None:
            raise DataError(path, None, "not a ranges file: empty (svm-scale -s writes 'x', then "
                                        "'lower upper', then 'index min max' lines)")
        return None, y
    k, text = lines[pos]
    if text != "x":
        raise DataError(path, k, f"expected 'x' (or 'y') to open a section of svm-scale's ranges "
                                 f"file, got {text[:60]!r}")
    pos += 1
    k, (lower, upper) = numbers(2, "'lower upper'")
    if not upper > lower:
        raise DataError(path, k, f"upper must be greater than lower, got {lower:g} {upper:g}")
    index, fmin, fmax = [], [], []
    while pos < len(lines):
        k, text = lines[pos]
        parts = text.split()
        if len(parts) != 3 or not (parts[0].isascii() and parts[0].isdigit()):
            raise DataError(path, k, f"expected 'index min max', got {text[:60]!r}")
        _, (_, lo, hi) = numbers(3, "'index min max'")
        j = int(parts[0])
        if j < 1 or (index and j <= index[-1]):
            raise DataError(path, k, f"feature index {j}: indices must be positive and increasing")
        index.append(j)
        fmin.append(lo)
        fmax.append(hi)
    n = index[-1] if index else 0
    lo_all = np.zeros(n)
    hi_all = np.zeros(n)   # features the file lacks: min == max == 0, dropped
    if index:
        at = np.asarray(index) - 1
        lo_all[at] = fmin
        hi_all[at] = fmax
    return Ranges(lower, upper, lo_all, hi_all), y


# ---------------------------------------------------------------------------------------------
# the first pass: ranges (or means and deviations) over the file


class _Scan:
    """Per-feature min/max (or mean and M2) and the target's range, block by block."""

    def __init__(self, standardize: bool):
        import numpy as np

        self.np = np
        self.standardize = standardize
        self.rows = 0
        self.count = np.zeros(0, dtype=np.int64)   # rows in which the feature is present
        self.vmin = np.zeros(0)
        self.vmax = np.zeros(0)
        self.mean = np.zeros(0)
        self.m2 = np.zeros(0)
        self.ymin = math.inf
        self.ymax = -math.inf
        self.nnz = 0

    def _grow(self, n):
        np = self.np
        k = n - len(self.count)
        if k > 0:
            self.count = np.concatenate([self.count, np.zeros(k, dtype=np.int64)])
            self.vmin = np.concatenate([self.vmin, np.full(k, np.inf)])
            self.vmax = np.concatenate([self.vmax, np.full(k, -np.inf)])
            self.mean = np.concatenate([self.mean, np.zeros(k)])
            self.m2 = np.concatenate([self.m2, np.zeros(k)])

    def add(self, block):
        np = self.np
        n_rows = block.n_rows
        if n_rows == 0:
            return
        self._grow(block.n_features)
        cols, vals = block.indices, block.data
        n = len(self.count)
        if len(block.target):
            self.ymin = min(self.ymin, float(block.target.min()))
            self.ymax = max(self.ymax, float(block.target.max()))
        self.nnz += len(vals)
        count_b = np.bincount(cols, minlength=n)
        np.minimum.at(self.vmin, cols, vals)
        np.maximum.at(self.vmax, cols, vals)
        if self.standardize:
            # Chan et al.'s merge of (count, mean, M2) over the block's rows, zeros included
            total = np.bincount(cols, weights=vals, minlength=n)
            mean_b = total / n_rows
            dev = vals - mean_b[cols]
            m2_b = np.bincount(cols, weights=dev * dev, minlength=n) + (n_rows - count_b) * mean_b ** 2
            before = self.rows
            both = before + n_rows
            delta = mean_b - self.mean
            self.mean = self.mean + delta * (n_rows / both)
            self.m2 = self.m2 + m2_b + delta * delta * (before * n_rows / both)
        self.count += count_b
        self.rows += n_rows

    def ranges(self, lower, upper, y_limits) -> Ranges:
        np = self.np
        if self.standardize:
            std = np.sqrt(self.m2 / max(self.rows, 1))
            fmin, fmax = self.mean - std, self.mean + std
            lower, upper = -1.0, 1.0
        else:
            sparse = self.count < self.rows          # some row lacks it: a 0 is in its range
            fmin = np.where(sparse, np.minimum(self.vmin, 0.0), self.vmin)
            fmax = np.where(sparse, np.maximum(self.vmax, 0.0), self.vmax)
        y = None
        if y_limits is not None:
            y = (y_limits[0], y_limits[1], self.ymin, self.ymax)
        return Ranges(lower, upper, fmin, fmax, y)


def scan(blocks, standardize=False, lower=-1.0, upper=1.0, y_limits=None) -> Ranges:
    """The ranges of the rows of `blocks` (svm-scale's pass 2, or means and deviations)."""
    s = _Scan(standardize)
    for block in blocks:
        s.add(block)
    return s.ranges(lower, upper, y_limits)


# ---------------------------------------------------------------------------------------------
# the second pass: scaled lines


def _map(values, lo, hi, lower, upper):
    """svm-scale's output(): v == min -> lower, v == max -> upper, else the affine map."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        out = lower + (upper - lower) * (values - lo) / (hi - lo)
    out = np.where(values == hi, upper, out)
    return np.where(values == lo, lower, out)


class _Writer:
    """Scaled svmlight text for blocks, under fixed ranges."""

    def __init__(self, r: Ranges, n_features: int, digits: Optional[int]):
        import numpy as np

        self.np = np
        self.r = r
        n = max(n_features, r.n_features)
        self.n = n
        fmin = np.zeros(n)
        fmax = np.zeros(n)
        fmin[: r.n_features] = r.fmin
        fmax[: r.n_features] = r.fmax
        self.fmin, self.fmax = fmin, fmax
        self.keep = fmin != fmax
        zero = _map(np.zeros(n), fmin, fmax, r.lower, r.upper)
        self.dense = np.flatnonzero(self.keep & (zero != 0))   # a zero's image is written
        self.dense_value = zero[self.dense]
        self.nnz = 0
        if digits is None:
            def fmt(x, r=repr):
                s = r(x)
                return s[:-2] if s.endswith(".0") else s
        else:
            spec = f"%.{digits}g"

            def fmt(x):
                return spec % x
        self.fmt = fmt
        self._index_texts = [f"{j + 1}:" for j in range(n)]
        # targets exactly; with --digits, as svm-scale prints them (%.17g)
        self.target_fmt = fmt if digits is None else _g17

    def target_text(self, t: float) -> str:
        if self.r.y is None:
            return _g17_short(t)
        yl, yu, ymin, ymax = self.r.y
        if t == ymin:
            v = yl
        elif t == ymax:
            v = yu
        else:
            v = yl + (yu - yl) * (t - ymin) / (ymax - ymin)
        return self.target_fmt(v)

    def lines(self, block) -> str:
        out = []
        step = max(1, _DENSE_CELLS // max(len(self.dense), 1))
        for start in range(0, block.n_rows, step):
            out.append(self._chunk(block.rows(start, min(start + step, block.n_rows))))
        return "".join(out)

    def _chunk(self, block) -> str:
        np = self.np
        n_rows = block.n_rows
        row = np.repeat(np.arange(n_rows), np.diff(block.indptr))
        col = block.indices
        val = block.data
        inside = col < self.n
        row, col, val = row[inside], col[inside], val[inside]
        kept = self.keep[col]
        row, col, val = row[kept], col[kept], val[kept]
        val = _map(val, self.fmin[col], self.fmax[col], self.r.lower, self.r.upper)
        if len(self.dense):
            # the dense features a row lacks get the image of its zero
            where = np.full(self.n, -1, dtype=np.int64)
            where[self.dense] = np.arange(len(self.dense))
            present = np.zeros((n_rows, len(self.dense)), dtype=bool)
            d = where[col]
            present[row[d >= 0], d[d >= 0]] = True
            r_abs, k_abs = np.nonzero(~present)
            row = np.concatenate([row, r_abs])
            col = np.concatenate([col, self.dense[k_abs]])
            val = np.concatenate([val, self.dense_value[k_abs]])
        nonzero = val != 0
        row, col, val = row[nonzero], col[nonzero], val[nonzero]
        order = np.lexsort((col, row))
        row, col, val = row[order], col[order], val[order]
        self.nnz += len(val)
        bounds = np.searchsorted(row, np.arange(n_rows + 1)).tolist()
        # each distinct value and each feature's "index:" formatted once (scaled data repeat
        # values a lot: a9a's 0/1 features have two images), then joined per entry
        distinct, which = np.unique(val, return_inverse=True)
        texts = [self.fmt(v) for v in distinct.tolist()]
        heads_of = self._index_texts
        items = [heads_of[c] + texts[k] for c, k in zip(col.tolist(), which.ravel().tolist())]
        heads = [self.target_text(t) for t in block.target.tolist()]
        qids = block.qid.tolist()
        costs = block.cost.tolist()
        lines = []
        for i in range(n_rows):
            parts = [heads[i]]
            if qids[i] >= 0:
                parts.append(f"qid:{qids[i]}")
            if costs[i] != 1.0:
                parts.append(f"cost:{_g17_short(costs[i])}")
            parts.extend(items[bounds[i]:bounds[i + 1]])
            lines.append(" ".join(parts))
        return "\n".join(lines) + "\n" if lines else ""


def _g17_short(x: float) -> str:
    """A target or cost as read: integers without a decimal point, others exactly."""
    if x.is_integer() and abs(x) < 2**53:
        return str(int(x))
    return repr(x)


# ---------------------------------------------------------------------------------------------
# the command


class _Stdin:
    """Standard input copied to a temporary file (the two passes need to read it twice); errors
    name '-' rather than the temporary file."""

    def __enter__(self):
        self.f = tempfile.NamedTemporaryFile(prefix="svmtools-scale-", delete=False)
        try:
            shutil.copyfileobj(sys.stdin.buffer, self.f, 1 << 20)
        finally:
            self.f.close()
        return self.f.name

    def __exit__(self, *exc):
        os.unlink(self.f.name)
        return False


def _renamed(e, name):
    from svmtrain.data import DataError

    return DataError(name, e.line, e.reason) if isinstance(e, DataError) else e


def _float(name):
    def check(ctx, param, value):
        if value is not None and not all(math.isfinite(v) for v in
                                         (value if isinstance(value, tuple) else (value,))):
            raise click.BadParameter(f"{name} must be finite")
        return value
    return check


@click.command()
@click.option("-l", "--lower", type=float, default=None, callback=_float("-l"),
              help="Lower end of the features' range.  [default: -1]")
@click.option("-u", "--upper", type=float, default=None, callback=_float("-u"),
              help="Upper end of the features' range.  [default: 1]")
@click.option("-y", "y_limits", type=(float, float), default=None, metavar="LOWER UPPER",
              callback=_float("-y"),
              help="Scale the targets to [LOWER, UPPER] too (default: copied as they are).")
@click.option("-s", "save", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write the ranges to FILE (svm-scale's format; replaced if it exists).")
@click.option("-r", "restore", metavar="FILE", type=click.Path(dir_okay=False),
              help="Read the ranges from FILE (written by -s, here or by svm-scale) instead of "
                   "from the data: the test file is scaled as the training file was. One pass, "
                   "so standard input streams.")
@click.option("--standardize", is_flag=True,
              help="Map each feature to (value - mean) / deviation over the file (zeros "
                   "included) instead of to [-l, -u]; -s writes it as svm-scale ranges "
                   "(min = mean - deviation, max = mean + deviation over [-1, 1]).")
@click.option("--digits", metavar="N", type=click.IntRange(1, 17), default=None,
              help="Write feature values with N significant digits (%.Ng) and scaled targets with "
                   "%.17g: 6 writes svm-scale's text.  "
                   "[default: exact, the shortest decimal that reads back as the same double]")
@quiet_option
@data_path(name="file")
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True), default="-")
def scale(lower, upper, y_limits, save, restore, standardize, digits, quiet, file, output):
    """Scale the features of FILE to [-1, 1] (or [-l, -u]), as LIBSVM's svm-scale does.

    Each feature's range is taken over the whole file, a row without the feature counting as a 0;
    a feature with one value throughout is left out. Scaled zeros are not written: with -l 0 a
    sparse file (all values >= 0) stays sparse, otherwise every row gets a value for every feature.
    Save the training file's ranges with -s and apply them to the test file with -r. OUTPUT (by
    default standard output) gets the scaled lines; FILE may be compressed, or `-`.
    """
    # options first, before any data is read
    if restore is not None:
        for name, given in (("-l", lower), ("-u", upper), ("-s", save)):
            if given is not None:
                raise InputError(f"{name} goes with scaling from the data; with -r the ranges "
                                 f"file sets the limits")
        if standardize:
            raise InputError("--standardize computes ranges from the data; -r reads them")
    if standardize and (lower is not None or upper is not None):
        raise InputError("-l/-u go with min/max scaling; --standardize maps to mean 0, deviation 1")
    lower = -1.0 if lower is None else lower
    upper = 1.0 if upper is None else upper
    if not upper > lower:
        raise InputError(f"-u ({upper:g}) must be greater than -l ({lower:g})")
    if y_limits is not None and not y_limits[1] > y_limits[0]:
        raise InputError(f"-y: UPPER ({y_limits[1]:g}) must be greater than LOWER "
                         f"({y_limits[0]:g})")
    paths = {os.path.abspath(p) for p in (file, output) if p != "-"}
    if save is not None and os.path.abspath(save) in paths:
        raise InputError(f"{save}: -s must name a file other than FILE and OUTPUT")
    if file != "-" and output != "-" and os.path.abspath(file) == os.path.abspath(output):
        raise InputError(f"{output}: OUTPUT must be another file than FILE")

    with user_errors():
        ranges = y = None
        if restore is not None:
            ranges, y = read_ranges(restore)
            if y is not None and y_limits is not None:
                raise InputError(f"{restore} sets the targets' range; leave -y out")
        if ranges is not None and (y is not None or y_limits is None):
            ranges.y = y
            summary = _one_pass(file, output, ranges, digits, restore)
        elif file == "-":
            with _Stdin() as copy:
                try:
                    summary = _two_passes(copy, output, lower, upper, y_limits, standardize,
                                          save, digits, ranges, y)
                except Exception as e:
                    raise _renamed(e, "-") from None
        else:
            summary = _two_passes(file, output, lower, upper, y_limits, standardize, save,
                                  digits, ranges, y)
    if not quiet:
        for line in summary:
            click.echo(f"scale: {line}", err=True)


def _two_passes(path, output, lower, upper, y_limits, standardize, save, digits, restored, y):
    from svmtrain import data
    from svmtrain.atomic import atomic_output

    stats = _Scan(standardize)
    for block in data.iter_blocks(path):
        stats.add(block)
    ranges = stats.ranges(lower, upper, y_limits)
    if restored is not None:   # restored x ranges, the targets' range from the data (-y)
        restored.y = ranges.y
        ranges = restored
    elif y is not None:        # a ranges file with only a y part (svm-scale -r reads that too)
        ranges.y = y
    n_features = len(stats.count)
    writer = _Writer(ranges, n_features, digits)
    with _maybe(save) as saved:
        with atomic_output(output, "w") as out:
            for block in data.iter_blocks(path):
                out.write(writer.lines(block))
        if saved is not None:
            saved.write(ranges_text(ranges))
    return _summary(stats.rows, stats.nnz, writer, ranges.lower)


def _one_pass(path, output, ranges, digits, restore):
    from svmtrain import data
    from svmtrain.atomic import atomic_output

    writer = _Writer(ranges, ranges.n_features, digits)
    rows = nnz = 0
    unseen = set()   # features of the file the ranges file lacks, and that vary in it
    seen = {}
    with atomic_output(output, "w") as out:
        for block in data.iter_blocks(path):
            out.write(writer.lines(block))
            rows += block.n_rows
            nnz += block.nnz
            inside = block.indices < writer.n
            extra = ~inside
            extra[inside] = ~writer.keep[block.indices[inside]]
            for j, v in zip(block.indices[extra].tolist(), block.data[extra].tolist()):
                lo, hi, k = seen.get(j, (v, v, 0))
                seen[j] = (min(lo, v), max(hi, v), k + 1)
    for j, (lo, hi, k) in seen.items():
        if k < rows:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        if lo != hi and not (j < len(ranges.fmin) and ranges.fmin[j] != ranges.fmax[j]):
            unseen.add(j + 1)
    lines = _summary(rows, nnz, writer, ranges.lower)
    if unseen:
        shown = " ".join(map(str, sorted(unseen)[:10])) + (" ..." if len(unseen) > 10 else "")
        lines.append(f"warning: {len(unseen)} features of {path} are not in the ranges file "
                     f"{restore} and were dropped (as svm-scale scales them to 0): {shown}")
    return lines


def _summary(rows, nnz, writer, lower):
    lines = [f"{rows} rows, {nnz} nonzeros in, {writer.nnz} out"]
    if writer.nnz > nnz and lower != 0:
        lines.append(f"warning: {writer.nnz} nonzeros out, {nnz} in (zeros scale to nonzero "
                     f"values): for sparse non-negative features use -l 0")
    return lines


class _maybe:
    """atomic_output(path, "w"), or None when path is None."""

    def __init__(self, path):
        self.path, self.cm = path, None

    def __enter__(self):
        if self.path is None:
            return None
        from svmtrain.atomic import atomic_output
        self.cm = atomic_output(self.path, "w")
        return self.cm.__enter__()

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc) if self.cm is not None else False
