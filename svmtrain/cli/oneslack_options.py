"""The options of `train --mode 1-slack`, kept together (their defaults live with the solver)."""

import click

ONESLACK_DEFAULTS = {"cache_size": 0, "qp_every": 1, "inactive": 50, "threads": 1, "in_out": 0.1,
                     "sample_start": 10, "merge_duplicates": True}
_FLAGS = {"cache_size": "-f", "qp_every": "--qp-every", "inactive": "--drop-inactive",
          "threads": "--threads", "in_out": "--in-out",
          "sample_start": "--sample-start", "merge_duplicates": "--merge-duplicates"}
ONESLACK_OPTIONS = tuple(_FLAGS)     # the parameters oneslack_options adds to train

TRACE_HEADERS = {"1-slack": "# iteration seconds dual primal gap relative_gap exact working_set "
                            "oracle_passes cache_hits scored examples"}


def oneslack_options(f):
    for decorator in reversed([
        click.option("-f", "--cache-size", "cache_size", type=click.IntRange(0), default=None,
                     help="1-slack: remember each example's this many most recently used worst "
                          "offenders and build a plane from them before asking the oracle; 0: no "
                          "cache (it applies to sequence; with in-out query points it measured "
                          "slower than the oracle alone, --in-out 0 gains from -f 10)  [default: 0]"),
        click.option("--qp-every", "qp_every", type=click.IntRange(1), default=None,
                     help="1-slack: solve the QP over the planes to its tolerance every N-th "
                          "iteration; in between take only as many pair steps as there are "
                          "planes  [default: 1]"),
        click.option("--drop-inactive", "inactive", type=click.IntRange(0), default=None,
                     help="1-slack: drop a plane from the working set once its dual variable has "
                          "been 0 for this many iterations; 0: never  [default: 50]"),
        click.option("--threads", "threads", type=click.IntRange(1, 256), default=None,
                     help="1-slack: threads for the per-example oracle loop; every thread count "
                          "gives the same model  [default: 1]"),
        click.option("--in-out", "in_out", type=click.FloatRange(0, 1), default=None,
                     help="1-slack: ask the oracle between the best w priced so far and the QP's "
                          "w (in-out cutting planes), the step toward the QP's w doubling on "
                          "progress and halving down to this value otherwise; the model is the "
                          "best w; 0: always at the QP's w  [default: 0.1]"),
        click.option("--sample-start", "sample_start", type=click.IntRange(0), default=None,
                     help="1-slack, binary and multiclass: first solve the problem on every K-th "
                          "example (costs times K) to a gap of 0.05 and ask the oracle first at its "
                          "w; only the point is reused, the planes and the certificate are the "
                          "whole data's; when the sample has at least 2,000 examples; 0: off  "
                          "[default: 10]"),
        click.option("--merge-duplicates/--no-merge-duplicates", "merge_duplicates", default=None,
                     help="1-slack, binary and multiclass: train on the distinct examples, rows "
                          "with the same label and features merged into one with their costs "
                          "summed (the same problem: the same optimum and certificate, priced "
                          "over every row)  [default: merge]"),
    ]):
        f = decorator(f)
    return f


def oneslack_settings(mode, given):
    """The solver's keyword arguments; a 1-slack option with another mode is an error."""
    if mode != "1-slack":
        for name, value in given.items():
            if value is not None:
                raise click.BadParameter(f"applies to --mode 1-slack, not to {mode}",
                                         param_hint=_FLAGS[name])
        return {}
    return {name: ONESLACK_DEFAULTS[name] if value is None else value
            for name, value in given.items()}
