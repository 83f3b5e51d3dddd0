"""`svmtrain train`'s flags into the library's records (svmtrain.options)."""

import click
from click.core import ParameterSource

from svmtrain.cli.train_options import CONTROL_FIELDS, MODE_FLAGS, USER_REFUSED


def records(ctx, params):
    """(Problem, mode record, Controls, where) from the parsed flags; refuses a mode's option
    given with another mode."""
    from svmtrain import options
    from svmtrain.pipeline import resolve_mode

    given = {name: value for name, value in params.items()
             if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}
    controls = options.Controls(**{field: params[name] for name, field in CONTROL_FIELDS.items()})
    requested = params["mode"]
    if requested == "auto":      # a mode's own options name the mode
        owners = {MODE_FLAGS[name][1] for name in given if name in MODE_FLAGS and name != "threads"}
        if len(owners) == 1 and controls.warm_start is None:
            requested = owners.pop()
    data = params.get("train_file", params.get("data_file"))
    on_dask = bool(params.get("workers") or params.get("scheduler"))
    mode, _, reason = resolve_mode(requested, controls, params["task"], data,
                                   options.Dask(workers=1) if on_dask else None)
    task = params["task"]
    if params["task_module"] is None and (params["task_options"] or params["latent_rounds"]):
        raise click.BadParameter("--task-option and --latent-rounds need --task-module",
                                 param_hint="--task-module")
    if params["task_module"] is not None:
        task = user_task(ctx, params, given)
    problem = options.Problem(task=task, C=params["C"], epsilon=params["epsilon"],
                              bias=params["bias"], p=params["p"], loss=params["loss"],
                              rescaling=params["rescaling"], seed=params["seed"],
                              zero_based=params["zero_based"],
                              latent_rounds=params["latent_rounds"])
    for name, (flag, owner) in MODE_FLAGS.items():
        if name in given and params[name] is not None and owner != mode.name:
            if owner == "budgeted":
                raise click.BadParameter("applies to --mode budgeted only", param_hint=flag)
            raise click.BadParameter(f"applies to --mode {owner}, not to {mode.name}", param_hint=flag)
    fields = {name: params[name] for name, (_, owner) in MODE_FLAGS.items()
              if owner == mode.name and params[name] is not None and name != "threads"}
    if mode.name == "budgeted":
        if ctx.get_parameter_source("max_epochs") == ParameterSource.COMMANDLINE:
            raise click.BadParameter("the budgeted mode runs a fixed number of passes: give "
                                     "--epochs", param_hint="--max-epochs")
    else:
        fields.update(max_epochs=params["max_epochs"], shrinking=params["shrinking"])
    mode = type(mode)(**fields)
    where = (options.Dask(workers=params["workers"], scheduler=params["scheduler"])
             if params["workers"] or params["scheduler"] else options.Local(threads=params["threads"]))
    if isinstance(where, options.Dask) and params["threads"] is not None:
        raise click.BadParameter("on Dask the per-example loop runs on the workers, one thread "
                                 "each: leave out --threads (give more workers)", param_hint="--threads")
    return problem, mode, controls, where, reason


def user_task(ctx, params, given):
    """The --task-module task, loaded with its --task-option values (other flags refused)."""
    from svmtrain.cli.options import InputError
    from svmtrain.tasks.user import TaskError, load_task
    for name in USER_REFUSED:
        if name in given:
            flag = next((p.opts[-1] for p in ctx.command.params if p.name == name), name)
            raise click.BadParameter("does not apply to a --task-module task", param_hint=flag)
    try:
        return load_task(params["task_module"], list(params["task_options"]))
    except TaskError as e:
        raise InputError(str(e)) from None
