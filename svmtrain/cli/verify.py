"""svmtrain verify-bound: certify a model with one streaming pass over its training data."""

import sys

import click

from svmtrain.cli.options import (load_user_task, task_module_options, dask_options, dask_where, data_path, json_option,
                                  quiet_option, show_progress, user_errors)


@click.command("verify-bound")
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=False))
@data_path(name="data_file")
@click.option("--tol", type=float, default=None,       # checked by api.verify_bound
              help="Largest acceptable relative gap (P-D)/P (default: the model's epsilon).")
@click.option("--weights", "weights_file", type=click.Path(dir_okay=False), default=None,
              help="The example weights file of a model trained with --weights (default: the "
                   "file the model names).")
@task_module_options
@dask_options()
@json_option
@quiet_option
def verify_bound(model_file, data_file, tol, weights_file, as_json, quiet, workers, scheduler,
                 task_module, task_options):
    """Compute the true primal P(w) of MODEL_FILE on DATA_FILE in one pass and compare it with the
    model's dual D, a lower bound on the optimum: OPT lies in [D, P].

    Exit status 0 when (P-D)/P is within the tolerance, 1 when it is not, 2 on bad input.
    """
    from svmtrain import api
    with user_errors():
        where = dask_where(workers, scheduler)
        task = load_user_task(task_module, task_options)
        v = api.verify_bound(model_file, data_file, tol=tol, example_weights=weights_file, task=task,
                             where=where, progress=show_progress(quiet))
    if not quiet:
        for warning in v.warnings:
            click.echo(f"svmtrain: warning: {warning}", err=True)
    if as_json:
        import json
        click.echo(json.dumps({"primal": v.primal, "dual": v.dual, "gap": v.gap,
                               "relative_gap": v.relative_gap, "examples": v.examples,
                               "tolerance": v.tolerance, "certified": v.certified}))
    else:
        click.echo(f"primal       {v.primal!r}\n"
                   f"dual         {v.dual!r}\n"
                   f"gap          {v.gap!r}\n"
                   f"relative_gap {v.relative_gap!r}\n"
                   f"examples     {v.examples}\n"
                   f"tolerance    {v.tolerance!r}\n"
                   + ("certified: the optimum lies in [dual, primal]" if v.certified else
                      "NOT certified: the primal is below the dual, so this data is not the data the "
                      "model was trained on (or the model file was changed)" if not v.consistent else
                      "NOT certified: the optimum lies in [dual, primal] but the gap is above the tolerance"))
    sys.exit(0 if v.certified else 1)
