"""svmtrain predict: labels or decision values for a data file, and the task's metric."""

import click

from svmtrain.cli.options import (load_user_task, task_module_options, InputError, dask_options, dask_where, data_path, json_option,
                                  quiet_option, show_progress, user_errors)


@click.command()
@data_path(name="test_file")
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=False))
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@click.option("--scores", is_flag=True, help="Write decision values instead of labels.")
@task_module_options
@dask_options()
@json_option
@quiet_option
def predict(test_file, model_file, output, scores, as_json, quiet, workers, scheduler,
            task_module, task_options):
    """Predict TEST_FILE with MODEL_FILE (ours or LIBLINEAR's), one line per example to OUTPUT.

    OUTPUT defaults to standard output. The metric goes to standard error in LIBLINEAR's words
    (Accuracy = 84.9702% (13834/16281)); with --json it goes to standard output as one JSON object,
    and OUTPUT must then be a file.
    """
    if as_json and output in (None, "-"):
        raise InputError("--json prints the metrics on standard output: give OUTPUT for the predictions")
    from svmtrain import api
    with user_errors():
        where = dask_where(workers, scheduler)
        task = load_user_task(task_module, task_options)
        result = api.predict(model_file, test_file, output=output or "-", scores=scores, where=where,
                             task=task,
                             progress=show_progress(quiet or output in (None, "-")))
    if as_json:
        import json
        click.echo(json.dumps(result.metrics))
    elif not quiet:
        click.echo(result.line, err=True)
