"""svmtools: data-file utilities."""

from dataclasses import dataclass, field

import click
import numpy as np

from svmtrain import __version__
from svmtrain.cli.options import byte_progress, data_path, json_option, quiet_option, user_errors, zero_based_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="svmtools")
def main():
    """Utilities for svmlight/libsvm data files: check, scale and split them, convert CoNLL and
    CoNLL-U corpora, plot training traces and C paths.

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
    from svmtrain import data

    with user_errors():
        summary = FileSummary(file, zero_based)
        with byte_progress(file, quiet, "checking") as progress:
            for block in data.iter_blocks(file, zero_based=zero_based, progress=progress):
                summary.add(block)
        click.echo(summary.json() if as_json else summary.text())


@dataclass
class FileSummary:
    file: str
    zero_based: bool
    rows: int = 0
    nnz: int = 0
    n_features: int = 0
    labels: dict = field(default_factory=dict)
    qids: set = field(default_factory=set)
    rows_with_qid: int = 0
    rows_with_cost: int = 0

    def add(self, block):
        self.rows += block.n_rows
        self.nnz += block.nnz
        self.n_features = max(self.n_features, block.n_features)
        values, counts = np.unique(block.target, return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist()):
            self.labels[v] = self.labels.get(v, 0) + c
        has = block.qid >= 0
        self.rows_with_qid += int(has.sum())
        self.qids.update(np.unique(block.qid[has]).tolist())
        self.rows_with_cost += int(np.sum(block.cost != 1.0))

    @property
    def max_index(self):
        return self.n_features - 1 if self.zero_based else self.n_features

    def json(self):
        import json
        return json.dumps({"file": self.file, "rows": self.rows, "features": self.max_index,
                           "nnz": self.nnz,
                           "labels": {_label(k): v for k, v in sorted(self.labels.items())},
                           "qids": len(self.qids), "rows_with_qid": self.rows_with_qid,
                           "rows_with_cost": self.rows_with_cost})

    def text(self):
        ordered = sorted(self.labels.items())
        shown = ", ".join(f"{_label(k)} ({v})" for k, v in ordered[:20])
        more = f", ... ({len(ordered) - 20} more)" if len(ordered) > 20 else ""
        qids = f"{len(self.qids)} distinct, on {self.rows_with_qid} rows" if self.qids else "none"
        lines = [f"file      {self.file}",
                 f"rows      {self.rows}",
                 f"features  {self.max_index} (largest index{', zero-based' if self.zero_based else ''})",
                 f"nnz       {self.nnz}",
                 f"labels    {len(ordered)}: {shown}{more}",
                 f"qids      {qids}"]
        if self.rows_with_cost:
            lines.append(f"costs     on {self.rows_with_cost} rows")
        return "\n".join(lines)


from svmtools.conll import conll2svm, svm2conll  # noqa: E402  (the commands live in svmtools/conll.py)
main.add_command(conll2svm)
main.add_command(svm2conll)

from svmtools.scale import scale  # noqa: E402
from svmtools.split import split  # noqa: E402
main.add_command(scale)
main.add_command(split)

from svmtools.plot import plot  # noqa: E402
main.add_command(plot)
