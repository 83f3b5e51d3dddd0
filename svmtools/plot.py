"""svmtools plot: training traces and C paths / cross-validation curves as PNG or SVG.

Inputs, told apart by their content (or by --kind):

- A trace, as ``svmtrain train --trace FILE`` writes it: a header line naming the columns
  (``# epoch seconds dual primal gap relative_gap ...``; 1-slack counts ``iteration``s, the
  budgeted mode writes ``primal`` before ``dual``), then one line of numbers per epoch. Columns
  are found by name, so every mode's trace is read; extra or missing trailing columns are
  ignored. Drawn: primal and dual per epoch (log scale when both stay positive) above the
  relative gap (log scale), one column of panels per trace, side by side.
- A C path or cross-validation curve, in either of two forms (what `svmtrain cv` and the C path
  write):

      # C accuracy std              text: a line per C, `C score [std]`, whitespace-separated;
      0.25 0.8412 0.0061            '#' starts a comment; std is optional (no error bars); a
                                    first line `# C NAME [std]` names the score
      0.5 0.8437 0.0048

      {"C": [0.25, 0.5], "score": [0.8412, 0.8437], "std": [0.0061, 0.0048],
       "metric": "accuracy", "higher_is_better": true}     JSON; std, metric and
                                                            higher_is_better optional

  Drawn: score against C (log2 axis), the standard deviation as error bars, the best C marked
  (the highest score, or the lowest with ``"higher_is_better": false`` or --lower-is-better).

matplotlib is an optional extra (``pip install svmtrain[plot]``); it is imported only here, with
the Agg backend (no display needed), and its absence is a usage error (exit status 2) that says
how to install it. Output format by OUTPUT's extension (.png, .svg; .pdf too).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Optional

import click

from svmtrain.cli.options import InputError, user_errors

__all__ = ["Trace", "Path", "read_trace", "read_path", "read_input", "plot"]

_FORMATS = (".png", ".svg", ".pdf")


@dataclass
class Trace:
    name: str
    x_label: str                 # epoch or iteration
    x: list
    seconds: list
    primal: list
    dual: list
    relative_gap: list


@dataclass
class Path:
    name: str
    C: list
    score: list
    std: Optional[list] = None
    metric: str = "score"
    higher_is_better: bool = True


def _data_error(path, line, reason):
    from svmtrain.data import DataError
    return DataError(path, line, reason)


def _number(text, path, lineno, what):
    if text == "-":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise _data_error(path, lineno, f"{what}: expected a number, got {text[:30]!r}") from None


def _lines(path):
    from svmtrain.data import open_input

    with open_input(path) as f:
        try:
            raw = f.read()
        except OSError as e:
            raise _data_error(path, None, f"cannot read: {e.strerror or e}") from None
    return raw.decode("utf-8", "replace").splitlines()


def read_trace(path: str, lines=None) -> Trace:
    lines = _lines(path) if lines is None else lines
    if not lines or not lines[0].startswith("#"):
        raise _data_error(path, 1, "not a trace: the first line should name the columns "
                                   "(# epoch seconds dual primal ...), as svmtrain train --trace "
                                   "writes it")
    names = lines[0][1:].split()
    need = ("seconds", "dual", "primal", "relative_gap")
    missing = [n for n in need if n not in names]
    x_name = names[0] if names and names[0] in ("epoch", "iteration") else None
    if missing or x_name is None:
        raise _data_error(path, 1, f"not a trace header: expected epoch (or iteration), "
                                   f"seconds, dual, primal and relative_gap columns, got "
                                   f"{' '.join(names)[:80]!r}")
    at = {n: names.index(n) for n in (x_name,) + need}
    cols = {n: [] for n in at}
    for lineno, text in enumerate(lines[1:], 2):
        parts = text.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) <= max(at.values()):
            raise _data_error(path, lineno, f"expected at least {max(at.values()) + 1} columns, "
                                            f"found {len(parts)}")
        for n, k in at.items():
            cols[n].append(_number(parts[k], path, lineno, n))
    if not cols[x_name]:
        raise _data_error(path, None, "no epochs: the trace has only its header")
    return Trace(os.path.basename(path), x_name, cols[x_name], cols["seconds"], cols["primal"],
                 cols["dual"], cols["relative_gap"])


def read_path(path: str, lines=None) -> Path:
    lines = _lines(path) if lines is None else lines
    text = "\n".join(lines).strip()
    name = os.path.basename(path)
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise _data_error(path, getattr(e, "lineno", None), f"not JSON: {e.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("C"), list) \
                or not isinstance(obj.get("score"), list):
            raise _data_error(path, None, 'expected a JSON object with lists "C" and "score"')
        got = {}
        for key in ("C", "score", "std"):
            values = obj.get(key)
            if values is None:
                continue
            if not isinstance(values, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                raise _data_error(path, None, f'"{key}": expected a list of numbers')
            if len(values) != len(obj["C"]):
                raise _data_error(path, None, f'"{key}" has {len(values)} values, "C" '
                                              f'{len(obj["C"])}')
            got[key] = [float(v) for v in values]
        metric = obj.get("metric", "score")
        better = obj.get("higher_is_better", True)
        if not isinstance(metric, str) or not isinstance(better, bool):
            raise _data_error(path, None, '"metric" must be a string, "higher_is_better" true '
                                          'or false')
        result = Path(name, got["C"], got["score"], got.get("std"), metric, better)
    else:
        C, score, std = [], [], []
        metric = "score"
        for lineno, line in enumerate(lines, 1):
            if not C and line.startswith("#"):
                # a header `# C accuracy std` names the score
                head = line[1:].split()
                if len(head) in (2, 3) and head[0] == "C":
                    metric = head[1]
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            if len(body) not in (2, 3) or (std and len(body) != 3) or (C and not std
                                                                       and len(body) == 3):
                raise _data_error(path, lineno, "expected 'C score' or 'C score std' on every "
                                                "line alike")
            C.append(_number(body[0], path, lineno, "C"))
            score.append(_number(body[1], path, lineno, "score"))
            if len(body) == 3:
                std.append(_number(body[2], path, lineno, "std"))
        result = Path(name, C, score, std or None, metric)
    if not result.C:
        raise _data_error(path, None, "no points")
    for k, c in enumerate(result.C):
        if not (c > 0 and math.isfinite(c)):
            raise _data_error(path, None, f"C must be positive and finite, got {c!r} "
                                          f"(point {k + 1})")
    return result


def read_input(path: str, kind: str = "auto"):
    """A Trace or a Path from a file; `kind` 'trace', 'path' or 'auto' (by the content)."""
    lines = _lines(path)
    if kind == "auto":
        first = next((line for line in lines if line.strip()), "")
        head = first[1:].split() if first.startswith("#") else []
        kind = "trace" if head[:1] in (["epoch"], ["iteration"]) else "path"
    return read_trace(path, lines) if kind == "trace" else read_path(path, lines)


# ---------------------------------------------------------------------------------------------
# drawing


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise InputError("svmtools plot needs matplotlib, which is not installed: "
                         "pip install 'svmtrain[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _positive(values):
    return all(v > 0 for v in values if not math.isnan(v))


def draw(items, output, x_axis="epoch", title=None, lower_is_better=False, epsilon=None):
    plt = _matplotlib()
    traces = [t for t in items if isinstance(t, Trace)]
    paths = [p for p in items if isinstance(p, Path)]
    columns = len(traces) + (1 if paths else 0)
    fig, axes = plt.subplots(2 if traces else 1, columns, squeeze=False,
                             figsize=(4.2 * columns, 6.0 if traces else 3.6),
                             sharey="row" if len(traces) > 1 else False)
    for k, t in enumerate(traces):
        top, bottom = axes[0][k], axes[1][k]
        x = t.seconds if x_axis == "seconds" else t.x
        xlabel = "seconds" if x_axis == "seconds" else t.x_label
        top.plot(x, t.primal, label="primal P(w)", color="tab:red")
        top.plot(x, t.dual, label="dual D(a)", color="tab:blue")
        if _positive(t.primal) and _positive(t.dual):
            top.set_yscale("log")
        top.set_title(t.name, fontsize=10)
        top.set_ylabel("objective")
        top.legend(fontsize=8)
        top.grid(True, which="both", alpha=0.3)
        gaps = [g if g > 0 else math.nan for g in t.relative_gap]
        bottom.plot(x, gaps, color="tab:green")
        if epsilon is not None:
            bottom.axhline(epsilon, color="gray", linestyle="--", linewidth=1)
            bottom.annotate(f"-e {epsilon:g}", (0, epsilon), xycoords=("axes fraction", "data"),
                            textcoords="offset points", xytext=(4, 3), fontsize=8, color="gray")
        bottom.set_yscale("log")
        bottom.set_ylabel("relative gap (P - D) / P")
        bottom.set_xlabel(xlabel)
        bottom.grid(True, which="both", alpha=0.3)
    if paths:
        ax = axes[0][-1]
        for p in paths:
            better = p.higher_is_better and not lower_is_better
            ax.errorbar(p.C, p.score, yerr=p.std, marker="o", capsize=3, label=p.name)
            scores = [(s, c) for s, c in zip(p.score, p.C) if not math.isnan(s)]
            if scores:
                s, c = (max if better else min)(scores, key=lambda sc: (sc[0] if better
                                                                         else -sc[0], -sc[1]))
                ax.plot([c], [s], marker="*", markersize=14, color="gold",
                        markeredgecolor="black", linestyle="none")
                ax.annotate(f"C = {c:g}", (c, s), textcoords="offset points", xytext=(6, 6),
                            fontsize=8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("C")
        ax.set_ylabel(paths[0].metric if len({p.metric for p in paths}) == 1 else "score")
        ax.grid(True, which="both", alpha=0.3)
        if len(paths) > 1:
            ax.legend(fontsize=8)
        if traces:
            axes[1][-1].set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    ext = os.path.splitext(output)[1].lower()
    from svmtrain.atomic import atomic_output
    with atomic_output(output, "wb") as f:
        # fixed metadata: the same inputs give the same file (no date, no software version)
        meta = {"Software": None} if ext == ".png" else {"Date": None, "Creator": None} \
            if ext == ".svg" else {"CreationDate": None, "Creator": None, "Producer": None}
        fig.savefig(f, format=ext[1:], dpi=110, metadata=meta)
    plt.close(fig)


@click.command()
@click.option("-o", "--output", metavar="FILE", required=True,
              type=click.Path(dir_okay=False),
              help="The picture: .png, .svg or .pdf (by its extension).")
@click.option("--kind", type=click.Choice(["auto", "trace", "path"]), default="auto",
              show_default=True,
              help="trace: svmtrain train --trace files; path: C paths / cross-validation curves "
                   "(`C score [std]` lines or JSON); auto: by each file's first line.")
@click.option("--x", "x_axis", type=click.Choice(["epoch", "seconds"]), default="epoch",
              show_default=True, help="Traces: plot against epochs (iterations) or seconds.")
@click.option("--title", metavar="TEXT", help="A title over the figure.")
@click.option("-e", "--epsilon", type=click.FloatRange(0, min_open=True), default=None,
              help="Traces: draw the relative gap the training aimed at (svmtrain's -e) as a "
                   "dashed line.")
@click.option("--lower-is-better", is_flag=True,
              help="Paths: mark the C of the lowest score as the best (an error rate, a loss).")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def plot(output, kind, x_axis, title, epsilon, lower_is_better, files):
    """Draw training traces and C paths side by side.

    Each trace (svmtrain train --trace FILE) gets a column: primal and dual objectives above the
    relative duality gap, per epoch, on log scales. C paths and cross-validation curves (lines
    `C score [std]`, or JSON {"C": [...], "score": [...], "std": [...]}) share one panel: score
    against C on a log2 axis, the deviation as error bars, the best C starred. Needs matplotlib
    (pip install 'svmtrain[plot]').
    """
    ext = os.path.splitext(output)[1].lower()
    if ext not in _FORMATS:
        raise InputError(f"{output}: the picture's format comes from its extension, one of "
                         f"{', '.join(_FORMATS)}")
    _matplotlib()    # before any file is read: a missing extra is the first thing to hear
    with user_errors():
        items = [read_input(f, kind) for f in files]
        draw(items, output, x_axis, title, lower_is_better, epsilon)
