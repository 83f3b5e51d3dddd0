"""svmtrain predict: labels or decision values for a data file, and the task's metric."""

import json

import click

from svmtrain.cli.dask import check_dask_options, dask_options, dask_session
from svmtrain.cli.options import InputError, byte_progress, data_path, json_option, quiet_option, user_errors
from svmtrain.cli.user import task_module_option, task_option_option


@click.command()
@data_path(name="test_file")
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=False))
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@click.option("--scores", is_flag=True, help="Write decision values instead of labels.")
@dask_options
@task_module_option
@task_option_option
@json_option
@quiet_option
def predict(test_file, model_file, output, scores, as_json, quiet, workers, scheduler,
            task_module=None, task_options=()):
    """Predict TEST_FILE with MODEL_FILE (ours or LIBLINEAR's), one line per example to OUTPUT.

    OUTPUT defaults to standard output. The metric goes to standard error in LIBLINEAR's words
    (Accuracy = 84.9702% (13834/16281)); with --json it goes to standard output as one JSON object,
    and OUTPUT must then be a file.
    """
    if as_json and output in (None, "-"):
        raise InputError("--json prints the metrics on standard output: give OUTPUT for the predictions")
    check_dask_options(workers, scheduler)
    with user_errors(), dask_session(workers, scheduler) as cluster:
        _predict(test_file, model_file, output or "-", scores, as_json, quiet, cluster,
                 task_module, task_options)


def _predict(test_file, model_file, output, scores, as_json, quiet, cluster=None,
             task_module=None, task_options=()):
    from svmtrain import data
    from svmtrain.atomic import atomic_output
    from svmtrain.model import read_model
    from svmtrain.tasks import task_class
    from svmtrain.tasks.base import Geometry

    model = read_model(model_file)
    from svmtrain.cli.user import model_task
    user = model_task(model, model_file, task_module, task_options)   # None: a built-in task
    if user is not None and cluster is not None:
        raise InputError("predict on Dask is for built-in tasks: leave out --workers")
    task = user if user is not None else task_class(model.task).from_model(model)
    zero_based = model.index_base == 0
    if model.mode == "budgeted":
        if cluster is not None:
            raise InputError(f"{model_file}: predict on Dask is for linear models so far: leave "
                             f"out --workers")
        # kernel models: decision values are the expansions sum_j beta_j k(x, x~_j)
        from svmtrain.solvers.budgeted import expansions, predict_values
        exps = expansions(model)

        def predict_block(block):
            return predict_values(task, exps, block)
    else:
        geometry = Geometry(model.n_features, model.bias)
        w = task.solver_weights(model.w)

        def predict_block(block):
            return task.predict(w, block, geometry, test_file)
    metric = task.new_metric()
    fmt = task.format_scores if scores else task.format_prediction
    with byte_progress(test_file, quiet or output == "-", "predicting") as progress, \
            atomic_output(output, "w") as out:
        if cluster is not None:
            from svmtrain.distributed import predict as predict_on_dask
            predict_on_dask(cluster, task, w, geometry, test_file, zero_based, scores, out, metric)
        else:
            blocks = (user.iter_blocks(test_file) if user is not None else
                      data.iter_blocks(test_file, zero_based=zero_based, progress=progress))
            for block in data.whole_examples(blocks, task.grouping):
                labels, values = predict_block(block)
                metric.add(labels, block)
                out.write("".join(fmt(v) + "\n" for v in (values if scores else labels)))
    if as_json:
        click.echo(json.dumps(metric.summary()))
    elif not quiet:
        click.echo(metric.line(), err=True)
