"""svmtools split: train/test and k-fold files from one svmlight file, stratified or by query.

Which rows go where is decided from the rows' labels and qids alone, with a seeded generator
(numpy's PCG64 via ``default_rng(seed)``), so the same file, options and --seed give the same
files on every machine; the lines are copied byte for byte (comments included; blank and
comment-only lines are dropped).

- ``--by label`` (stratified): the rows are ordered by label, shuffled within each label, and
  dealt along that order: the k-th row of it goes to fold k mod K, or to the test file when
  floor((k + 1) f) > floor(k f) for a test fraction f. Every label is so divided as evenly as the
  counts allow (a label with n rows gives each fold floor(n/K) or ceil(n/K)), and regression
  targets, each value its own "label", are dealt in order of value: each fold spans the whole
  range of targets.
- ``--by qid`` (grouped): the queries are shuffled and each goes whole to one side: to the fold
  with the fewest rows so far (the lowest-numbered of equals), or to the test file while it has
  fewer than f * rows. A query (ranking, sequence, constraints) is never split.
- ``--by none``: the rows shuffled and dealt as above, labels ignored.
- ``--by auto`` (the default): qid when the file has qids, else label.

Output names: ``PREFIX.train`` and ``PREFIX.test`` (--test-fraction), or ``PREFIX.foldK.train``
and ``PREFIX.foldK.test`` for K = 1..--folds (fold K's test file is the K-th part, its train file
all the others, in file order). Files are written all or none, and existing ones are kept unless
--force. Standard input (``-``) is copied to a temporary file first: the rows are read twice.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

import click

from svmtrain.cli.options import InputError, data_path, quiet_option, user_errors

__all__ = ["assign_folds", "assign_test", "split"]


def _order(labels, qids, by, rng):
    """Row numbers in dealing order (see the module notes), for `label` and `none`."""
    import numpy as np

    n = len(labels)
    perm = rng.permutation(n)
    if by == "none":
        return perm
    # stable sort of the shuffled rows by label: shuffled within each label
    return perm[np.argsort(labels[perm], kind="stable")]


def _groups(qids, rng):
    """(group of each row, shuffled group numbers, rows per group) for --by qid."""
    import numpy as np

    values, group, sizes = np.unique(qids, return_inverse=True, return_counts=True)
    return group, rng.permutation(len(values)), sizes


def assign_folds(labels, qids, k, by, seed):
    """The fold (0..k-1) of every row."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = len(labels)
    fold = np.empty(n, dtype=np.int64)
    if by == "qid":
        group, order, sizes = _groups(qids, rng)
        rows = np.zeros(k, dtype=np.int64)
        where = np.empty(len(sizes), dtype=np.int64)
        for g in order.tolist():
            f = int(np.argmin(rows))
            where[g] = f
            rows[f] += sizes[g]
        return where[group]
    fold[_order(labels, qids, by, rng)] = np.arange(n) % k
    return fold


def assign_test(labels, qids, fraction, by, seed):
    """True for the rows of the test file."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = len(labels)
    test = np.zeros(n, dtype=bool)
    if by == "qid":
        group, order, sizes = _groups(qids, rng)
        chosen = np.zeros(len(sizes), dtype=bool)
        rows = 0
        for g in order.tolist():
            if rows >= fraction * n:
                break
            chosen[g] = True
            rows += sizes[g]
        return chosen[group]
    k = np.arange(n)
    test[_order(labels, qids, by, rng)] = np.floor((k + 1) * fraction) > np.floor(k * fraction)
    return test


@click.command()
@click.option("-t", "--test-fraction", "fraction", type=click.FloatRange(0, 1, min_open=True,
                                                                          max_open=True),
              default=None, help="Write PREFIX.train and PREFIX.test, this fraction of the rows "
                                 "(or of the queries' rows, --by qid) in the test file.")
@click.option("-k", "--folds", type=click.IntRange(2), default=None,
              help="Write PREFIX.foldK.train and PREFIX.foldK.test for K = 1..N: N disjoint test "
                   "parts, each with the rest as its training file.")
@click.option("--by", type=click.Choice(["auto", "label", "qid", "none"]), default="auto",
              show_default=True,
              help="label: stratified (each label divided evenly); qid: whole queries; none: "
                   "plain shuffle; auto: qid when the file has qids, else label.")
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True,
              help="The shuffle's seed: the same seed gives the same files.")
@click.option("--force", is_flag=True, help="Replace output files that exist.")
@quiet_option
@data_path(name="file")
@click.argument("prefix")
def split(fraction, folds, by, seed, force, quiet, file, prefix):
    """Split FILE into a training and a test file, or into k folds, by label or by query.

    With -t F, PREFIX.train and PREFIX.test; with -k N, PREFIX.fold1.train, PREFIX.fold1.test,
    ... PREFIX.foldN.test. Lines are copied unchanged, in file order. Stratified by label (every
    label divided evenly) unless the file has qids, whose queries are never split (--by). A
    summary goes to standard error.
    """
    if (fraction is None) == (folds is None):
        raise InputError("give -t FRACTION (train/test) or -k N (folds), " +
                         ("not both" if folds else "one of them"))
    names = ([(f"{prefix}.train", f"{prefix}.test")] if folds is None else
             [(f"{prefix}.fold{k}.train", f"{prefix}.fold{k}.test") for k in range(1, folds + 1)])
    outputs = [name for pair in names for name in pair]
    if not force:
        for name in outputs:
            if os.path.lexists(name):
                raise InputError(f"{name}: file exists (refusing to overwrite; use --force to "
                                 f"replace it)")
    if file != "-" and os.path.abspath(file) in map(os.path.abspath, outputs):
        raise InputError(f"{file}: an output would replace the input")

    with user_errors(), contextlib.ExitStack() as stack:
        path = file
        if file == "-":
            path = stack.enter_context(_stdin_copy())
        summary = _split(path, file, names, fraction, folds, by, seed, force)
    if not quiet:
        for line in summary:
            click.echo(f"split: {line}", err=True)


@contextlib.contextmanager
def _stdin_copy():
    f = tempfile.NamedTemporaryFile(prefix="svmtools-split-", delete=False)
    try:
        with f:
            shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
        yield f.name
    finally:
        os.unlink(f.name)


def _split(path, shown, names, fraction, folds, by, seed, force):
    import numpy as np
    from svmtrain import data
    from svmtrain.atomic import atomic_output

    labels, qids, lines = [], [], []
    try:
        for block in data.iter_blocks(path):
            labels.append(block.target)
            qids.append(block.qid)
            lines.append(block.line)
    except data.DataError as e:
        raise data.DataError(shown, e.line, e.reason) from None
    labels = np.concatenate(labels) if labels else np.zeros(0)
    qids = np.concatenate(qids) if qids else np.zeros(0, dtype=np.int64)
    lines = np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64)
    if len(labels) == 0:
        raise data.DataError(shown, None, "no rows to split")
    if by == "auto":
        by = "qid" if (qids >= 0).any() else "label"
    if by == "qid":
        missing = np.flatnonzero(qids < 0)
        if len(missing):
            raise data.DataError(shown, int(lines[missing[0]]),
                                 "no qid: --by qid needs one on every row")
        n_groups = len(np.unique(qids))
        parts = folds or 2
        if n_groups < parts:
            raise data.DataError(shown, None, f"{n_groups} queries cannot make {parts} parts")
    elif folds is not None and len(labels) < folds:
        raise data.DataError(shown, None, f"{len(labels)} rows cannot make {folds} folds")

    if folds is None:
        part = assign_test(labels, qids, fraction, by, seed).astype(np.int64)   # 1: test
        n_parts = 2
    else:
        part = assign_folds(labels, qids, folds, by, seed)
        n_parts = folds
    # the part of each line number (0: not a row)
    n_lines = int(lines[-1])
    line_part = np.full(n_lines + 1, -1, dtype=np.int64)
    line_part[lines] = part

    with contextlib.ExitStack() as stack:
        files = [(stack.enter_context(atomic_output(a, "wb", force=force)),
                  stack.enter_context(atomic_output(b, "wb", force=force))) for a, b in names]
        with data.open_input(path) as f:
            for number, raw in enumerate(f, 1):
                if number > n_lines:
                    break
                p = int(line_part[number])
                if p < 0:
                    continue
                if not raw.endswith(b"\n"):
                    raw += b"\n"
                if folds is None:
                    files[0][p].write(raw)
                else:
                    for k in range(n_parts):
                        files[k][1 if k == p else 0].write(raw)

    summary = []
    for k, (train_name, test_name) in enumerate(names):
        in_test = part == (1 if folds is None else k)
        summary.append(f"{train_name}: {int((~in_test).sum())} rows{_labels(labels[~in_test])}; "
                       f"{test_name}: {int(in_test.sum())} rows{_labels(labels[in_test])}")
    summary.append(f"by {by}, seed {seed}")
    return summary


def _labels(values) -> str:
    import numpy as np

    u, c = np.unique(values, return_counts=True)
    if len(u) > 10:
        return f" ({len(u)} labels)"
    shown = ", ".join(f"{int(v) if float(v).is_integer() else v}: {n}" for v, n in
                      zip(u.tolist(), c.tolist()))
    return f" ({shown})"
