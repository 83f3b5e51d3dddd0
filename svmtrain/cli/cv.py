"""svmtrain cv: K-fold cross-validation and the choice of C, over svmtrain.api's cross_validate and
c_path. A command of its own rather than LIBLINEAR's `train -v K`: train's MODEL_FILE argument and
its one-model output do not fit a run that trains K models (K per C on a path) and prints a score;
train's options are the same declarations (svmtrain.cli.train_options), so a setup moves from
`cv` to `train` unchanged."""

import json
import math

import click
from click.core import ParameterSource

from svmtrain.cli.help import GroupedCommand, option
from svmtrain.cli.options import data_path, json_option, user_errors
from svmtrain.cli.train_options import train_options
from svmtrain.cli.train_records import records

V = "Cross-validation"


@click.command(cls=GroupedCommand)
@data_path(name="data_file")
@option(V, "-v", "--folds", "folds", type=click.IntRange(2), default=5, show_default=True,
        metavar="K", help="K folds, stratified by label or whole qids.",
        details="Classification folds hold each class in proportion; ranking and constraints "
                "folds keep a qid's lines together, sequence folds a sentence. --seed shuffles "
                "the folds (and orders the solver's steps, as for train).")
@option(V, "--jobs", type=click.IntRange(1, 256), default=1, show_default=True, metavar="N",
        help="Train N folds at once (same result).")
@option(V, "--C-path", "c_path", is_flag=True,
        help="Choose C: score a path of C's, report the best.",
        details="Each C is hot-started from the previous one's dual state (n-slack: alphas times "
                "C_new/C_old) and trained to -e. Without --C-steps the search is LIBLINEAR -C's: "
                "from the smallest C that changes the predictions (or --C-min), doubling until "
                "the mean score has not improved for 5 doublings or C passes --C-max.")
@option(V, "--C-min", "c_min", type=float, default=None, metavar="C",
        help="The path's first C  [default: automatic]")
@option(V, "--C-max", "c_max", type=float, default=None, metavar="C",
        help="The path's last C  [default: 1024]")
@option(V, "--C-steps", "c_steps", type=click.IntRange(1), default=None, metavar="N",
        help="N C's from --C-min to --C-max, geometric.")
@option(V, "--model", "model_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
        help="Write the model at the best C (all the data).")
@json_option
@train_options
def cv(data_file, folds, jobs, c_path, c_min, c_max, c_steps, model_file, as_json, trace_file,
       model_format, quiet, **params):
    """Cross-validate a training setup on DATA_FILE, or choose its C.

    Prints the task's metric on each held-out fold (accuracy; token accuracy for sequence; mean
    squared error for regression; pairwise accuracy for ranking; constraints satisfied), then its
    mean and standard deviation. With --C-path, one line per C and the best C.
    """
    from svmtrain import api

    ctx = click.get_current_context()
    grid = (c_min, c_max, c_steps)
    c_path = c_path or any(x is not None for x in grid)
    if trace_file is not None:
        raise click.BadParameter("cross-validation trains a model per fold: train one setup "
                                 "with `svmtrain train --trace`", param_hint="--trace")
    if c_path and ctx.get_parameter_source("C") == ParameterSource.COMMANDLINE:
        raise click.BadParameter("--C-path chooses C: bound it with --C-min and --C-max",
                                 param_hint="-c")
    if c_steps is not None and (c_min is None or c_max is None):
        raise click.BadParameter("a grid of N C's needs --C-min and --C-max",
                                 param_hint="--C-steps")
    if model_file is not None and not c_path:
        raise click.BadParameter("writes the model at the best C: give --C-path (or train the "
                                 "model with `svmtrain train`)", param_hint="--model")
    if c_path and c_min is not None and c_max is not None and c_max < c_min:
        raise click.BadParameter(f"{c_max:g} is below --C-min {c_min:g}", param_hint="--C-max")
    for flag, value in (("--C-min", c_min), ("--C-max", c_max)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise click.BadParameter(f"must be a positive number, got {value}", param_hint=flag)

    def warn(message):
        if not quiet:
            click.echo(f"svmtrain: warning: {message}", err=True)

    with user_errors():
        problem, mode, controls, where, _ = records(ctx, dict(params, data_file=data_file))
        if not c_path:
            result = api.cross_validate(data_file, problem, mode, controls, folds=folds,
                                        seed=problem.seed, jobs=jobs, where=where,
                                        on_warning=warn)
            _report_cv(result, as_json)
            return
        Cs = None
        if c_steps is not None:
            from svmtrain.cv import geometric_grid
            Cs = geometric_grid(c_min, c_max, c_steps)
        show = None if as_json else (lambda p: click.echo(_point_line(p)))
        result = api.c_path(data_file, problem, mode, controls, Cs=Cs, folds=folds,
                            seed=problem.seed, jobs=jobs, where=where,
                            start=c_min if Cs is None else None,
                            C_max=1024.0 if c_max is None else c_max, model_file=model_file,
                            model_format=model_format, on_point=show, on_warning=warn)
    if as_json:
        click.echo(json.dumps(result.as_json()))
        return
    best = result.best
    click.echo(f"best C {best.C:.6g}: {best.cv.metric} mean {best.cv.mean:.6g}, std "
               f"{best.cv.std:.3g}")
    if model_file is not None and not quiet:
        click.echo(f"svmtrain: wrote {model_file} (C {best.C:.6g}, relative gap "
                   f"{result.model.relative_gap:.3g})", err=True)
    uncertified = [p.C for p in result.points if not p.certified]
    if uncertified:
        warn(f"not every fold reached -e at C = {', '.join(f'{c:.6g}' for c in uncertified)} "
             f"(--max-epochs)")


def _point_line(p):
    r = p.cv
    return (f"C {p.C:.6g}: {r.metric} mean {r.mean:.6g}, std {r.std:.3g} (folds "
            f"{' '.join(f'{v:.6g}' for v in r.folds)}; relative gap <= {p.relative_gap:.2g}"
            f"{'' if p.certified else ', NOT certified'}; {p.epochs} epochs)")


def _report_cv(result, as_json):
    if as_json:
        click.echo(json.dumps(result.as_json()))
        return
    for k, value in enumerate(result.folds, 1):
        click.echo(f"fold {k}: {result.metric} {value:.6g}")
    extra = ""
    if result.metric == "mse":
        r2 = [d["squared_correlation"] for d in result.details]
        extra = f"; squared correlation mean {sum(r2) / len(r2):.6g}"
    click.echo(f"cross-validation {result.metric}: mean {result.mean:.6g}, std {result.std:.3g} "
               f"over {len(result.folds)} folds (C {result.C:g}){extra}")
