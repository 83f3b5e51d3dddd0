"""svmtools: data-file utilities."""

import click
import numpy as np

from svmtrain import __version__
from svmtrain.cli.options import byte_progress, data_path, json_option, quiet_option, user_errors, zero_based_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="svmtools")
def main():
    """Utilities for svmlight/libsvm data files.

    Exit status: 0 success, 2 bad input or usage.
    """


def _label(x):
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


@main.command()
@data_path(name="file")
@zero_based_option
@json_option
@quiet_option
def check(file, zero_based, as_json, quiet):
    """Validate FILE and describe it: rows, features (largest index), labels with counts, nonzeros,
    queries. The first malformed line stops it with the message the trainer would give."""
    import json

    from svmtrain import data

    with user_errors():
        rows = nnz = n_features = 0
        labels = {}
        qids = set()
        with_qid = with_cost = 0
        bar = byte_progress(file, quiet, "checking")
        try:
            for block in data.iter_blocks(file, zero_based=zero_based,
                                          progress=bar.update if bar is not None else None):
                rows += block.n_rows
                nnz += block.nnz
                n_features = max(n_features, block.n_features)
                values, counts = np.unique(block.target, return_counts=True)
                for v, c in zip(values.tolist(), counts.tolist()):
                    labels[v] = labels.get(v, 0) + c
                has = block.qid >= 0
                with_qid += int(has.sum())
                qids.update(np.unique(block.qid[has]).tolist())
                with_cost += int(np.sum(block.cost != 1.0))
        finally:
            if bar is not None:
                bar.close()
    max_index = n_features - 1 if zero_based else n_features
    ordered = sorted(labels.items())
    if as_json:
        click.echo(json.dumps({"file": file, "rows": rows, "features": max_index, "nnz": nnz,
                               "labels": {_label(k): v for k, v in ordered},
                               "qids": len(qids), "rows_with_qid": with_qid,
                               "rows_with_cost": with_cost}))
        return
    shown = ", ".join(f"{_label(k)} ({v})" for k, v in ordered[:20])
    more = f", ... ({len(ordered) - 20} more)" if len(ordered) > 20 else ""
    click.echo(f"file      {file}\n"
               f"rows      {rows}\n"
               f"features  {max_index} (largest index{', zero-based' if zero_based else ''})\n"
               f"nnz       {nnz}\n"
               f"labels    {len(ordered)}: {shown}{more}\n"
               f"qids      {f'{len(qids)} distinct, on {with_qid} rows' if qids else 'none'}"
               + (f"\ncosts     on {with_cost} rows" if with_cost else ""))
