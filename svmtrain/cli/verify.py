"""svmtrain verify-bound: certify a model with one streaming pass over its training data."""

import json
import math
import sys

import click

from svmtrain.cli.dask import check_dask_options, dask_options, dask_session
from svmtrain.cli.options import InputError, byte_progress, data_path, json_option, quiet_option, user_errors
from svmtrain.cli.user import task_module_option, task_option_option


@click.command("verify-bound")
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=False))
@data_path(name="data_file")
@click.option("--tol", type=float, default=None,
              help="Largest acceptable relative gap (P-D)/P (default: the model's epsilon).")
@click.option("--weights", "weights_file", type=click.Path(dir_okay=False), default=None,
              help="The example weights file of a model trained with --weights (default: the "
                   "file the model names).")
@dask_options
@task_module_option
@task_option_option
@json_option
@quiet_option
def verify_bound(model_file, data_file, tol, weights_file, as_json, quiet, workers, scheduler,
                 task_module=None, task_options=()):
    """Compute the true primal P(w) of MODEL_FILE on DATA_FILE in one pass and compare it with the
    model's dual D, a lower bound on the optimum: OPT lies in [D, P].

    Exit status 0 when (P-D)/P is within the tolerance, 1 when it is not, 2 on bad input.
    """
    if tol is not None and not (tol >= 0 and math.isfinite(tol)):
        raise click.BadParameter(f"must be a non-negative number, got {tol}", param_hint="--tol")
    check_dask_options(workers, scheduler)
    with user_errors(), dask_session(workers, scheduler) as cluster:
        ok = _verify(model_file, data_file, tol, as_json, quiet, weights_file, cluster,
                     task_module, task_options)
    sys.exit(0 if ok else 1)


def _verify(model_file, data_file, tol, as_json, quiet, weights_file=None, cluster=None,
            task_module=None, task_options=()):
    from svmtrain import data, objective
    from svmtrain.engine import relative_gap
    from svmtrain.model import read_model
    from svmtrain.tasks import task_class
    from svmtrain.controls import ControlError, certified_objective

    model = read_model(model_file)
    if model.dual is None or model.C is None:
        raise InputError(f"{model_file}: a {model.format} model records no dual value or C; "
                         "verify-bound needs a model written by svmtrain")
    if tol is None:
        tol = model.epsilon
    from svmtrain.cli.user import model_task
    user = model_task(model, model_file, task_module, task_options)   # None: a built-in task
    if user is not None and (cluster is not None or weights_file is not None):
        raise InputError("verify-bound of a user task runs here, without --workers or --weights")
    task = user if user is not None else task_class(model.task).from_model(model)
    dual_acc = prepare = None
    if user is not None:          # P(w) from the task's own oracle, over its own reading
        from svmtrain.tasks.base import Geometry
        acc = objective.PrimalAccumulator(user, user.solver_weights(model.w),
                                          Geometry(model.n_features, None), model.C, data_file)
    elif model.mode == "budgeted":   # P(w~) of the kernel expansion, D(a) from the stored a (exact kernel)
        from svmtrain.solvers.budgeted import KernelDual, KernelPrimal, expansions
        acc = KernelPrimal(task, expansions(model), model.C, model.p or 0.0, data_file)
        dual_acc = KernelDual(task, model, data_file)
    else:
        # the objective the model was trained to (its controls: weights, scales, prior, nonneg)
        try:
            task, w, geometry, prepare = certified_objective(model, task, data_file, weights_file)
        except ControlError as e:
            raise InputError(f"{model_file}: {e}") from None
        acc = objective.PrimalAccumulator(task, w, geometry, model.C, data_file)
    if cluster is not None and (dual_acc is not None or prepare is not None):
        raise InputError(f"{model_file}: verify-bound on Dask is for linear models trained without "
                         "controls (weights, scales, prior, nonneg) so far: leave out --workers")
    if cluster is not None:
        from svmtrain.distributed import accumulate_primal
        accumulate_primal(cluster, acc, model.index_base == 0)
    with byte_progress(data_file, quiet, "verifying") as progress:
        blocks = (user.iter_blocks(data_file) if user is not None else
                  data.iter_blocks(data_file, zero_based=model.index_base == 0, progress=progress))
        if prepare is not None:
            blocks = (prepare(b, task.grouping) for b in blocks)
        for block in data.whole_examples(blocks, task.grouping) if cluster is None else ():
            acc.add(block)
            if dual_acc is not None:
                dual_acc.add(block)
    if prepare is not None:
        prepare.finish()
    P = acc.value()
    D = model.dual
    if dual_acc is not None:
        D, problem = dual_acc.value()
        if problem is not None:
            raise InputError(f"{data_file}: {problem}")
        if D != model.dual and not quiet:
            click.echo(f"svmtrain: warning: D recomputed from the model's coefficients is {D!r}, "
                       f"the model records {model.dual!r}", err=True)
    gap = P.primal - D
    # P below D is impossible for the data the dual belongs to (weak duality): the file is not the
    # model's training data, or the model was edited. Never certify that; show the signed figure.
    consistent = gap >= -1e-12 * max(abs(P.primal), abs(D), 1.0)
    rel = relative_gap(P.primal, D) if consistent else gap / max(abs(P.primal), abs(D))
    ok = consistent and rel <= tol
    if model.examples is not None and P.examples != model.examples and not quiet:
        click.echo(f"svmtrain: warning: {data_file} has {P.examples} examples, the model was trained "
                   f"on {model.examples}: the dual bound is for the training data", err=True)
    if as_json:
        click.echo(json.dumps({"primal": P.primal, "dual": D, "gap": gap, "relative_gap": rel,
                               "examples": P.examples, "tolerance": tol, "certified": ok}))
    else:
        click.echo(f"primal       {P.primal!r}\n"
                   f"dual         {D!r}\n"
                   f"gap          {gap!r}\n"
                   f"relative_gap {rel!r}\n"
                   f"examples     {P.examples}\n"
                   f"tolerance    {tol!r}\n"
                   + ("certified: the optimum lies in [dual, primal]" if ok else
                      "NOT certified: the primal is below the dual, so this data is not the data the "
                      "model was trained on (or the model file was changed)" if not consistent else
                      "NOT certified: the optimum lies in [dual, primal] but the gap is above the tolerance"))
    return ok
