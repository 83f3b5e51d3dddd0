"""What the commands share (rasterio's rio style: one registry): the data-file argument, the
common flags, and `user_errors`, which turns the library's input errors into exit status 2."""

import contextlib
import math
import os
import sys

import click


class InputError(click.ClickException):
    """Bad input (a data or model file, or an option): message on stderr, exit status 2."""

    exit_code = 2


def checked(check, *args):
    """A click callback running one of svmtrain.options' checks on the value (the message the
    library gives, shown as click's 'Invalid value for ...')."""
    def callback(ctx, param, value):
        from svmtrain.errors import OptionError
        try:
            check(value, *args)
        except OptionError as e:
            raise click.BadParameter(e.message) from None
        return value
    return callback


@contextlib.contextmanager
def user_errors():
    """Turn input errors into exit status 2 and Ctrl-C into 130, with one clear line each."""
    from svmtrain.data import DataError
    from svmtrain.errors import InputError as LibraryInputError, OptionError
    from svmtrain.model import ModelError
    try:
        yield
    except OptionError as e:
        if e.flag:
            raise click.BadParameter(e.message, param_hint=e.flag) from None
        raise InputError(e.message) from None
    except (DataError, ModelError, LibraryInputError) as e:
        raise InputError(str(e)) from None
    except BrokenPipeError:
        # the reader of our standard output left (`| head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except OSError as e:   # a file that cannot be read or written: name it, no traceback
        where = e.filename if e.filename is not None else "I/O"
        raise InputError(f"{where}: {e.strerror or e}") from None
    except MemoryError:   # e.g. a feature index far beyond what the data needs: w is dense
        raise InputError("out of memory (weight vectors are dense: check the data's largest "
                         "feature index with `svmtools check`); nothing was written") from None
    except KeyboardInterrupt:
        prog = click.get_current_context().find_root().info_name or "svmtrain"
        click.echo(f"{prog}: interrupted; no output was written", err=True)
        sys.exit(130)
    except Exception as e:
        # the cluster's errors (svmtrain.distributed, imported only with Dask): a cluster that
        # cannot be listed or reached is bad input; one that fails the run, exit status 1
        kind = type(e).__name__ if type(e).__module__ == "svmtrain.distributed" else None
        if kind == "NotListable":
            raise InputError(str(e)) from None
        if kind == "ClusterError":
            raise click.ClickException(str(e)) from None
        raise


def show_progress(quiet):
    return not quiet and sys.stderr.isatty()


def data_path(**kw):
    """A data file argument: '-' is standard input; existence is checked by the reader so that the
    message has the same form as every other input error."""
    return click.argument(kw.pop("name", "data_file"), type=click.Path(dir_okay=False, allow_dash=True), **kw)


def dask_options(group="Dask"):
    """--workers / --scheduler (predict, verify-bound and train)."""
    from svmtrain.cli.help import option

    def decorate(f):
        f = option(group, "--scheduler", metavar="ADDRESS", envvar="DASK_SCHEDULER_ADDRESS",
                   default=None, help="Run on this Dask scheduler's cluster "
                   "(or $DASK_SCHEDULER_ADDRESS).")(f)
        return option(group, "--workers", type=click.IntRange(1), default=None, metavar="N",
                      help="Run on a local Dask cluster of N processes.")(f)
    return decorate


def dask_where(workers, scheduler):
    """Dask(...) from the flags, checked, or None (this process) without them."""
    if not (workers or scheduler):
        return None
    from svmtrain.options import Dask
    return Dask(workers=workers, scheduler=scheduler).check()


quiet_option = click.option("-q", "--quiet", is_flag=True,
                            help="Nothing on standard error but errors: no progress bar, summary or warnings.")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print the figures as one JSON object on standard output.")
zero_based_option = click.option("--zero-based", is_flag=True,
                                 help="Feature indices start at 0 (default: 1, as svmlight and libsvm).")


def byte_progress(path, quiet, desc):
    """A tqdm bar over the bytes read, when stderr is a terminal and not quiet (svmtrain.progress);
    yields the reader's `progress` callback, or None."""
    from svmtrain.progress import byte_bar
    return byte_bar(path, show_progress(quiet), desc)


# the callbacks of options whose values need parsing beyond click's types

def label_list(ctx, param, value):
    if value is None:
        return None
    try:
        labels = [float(x) for x in value.replace(",", " ").split()]
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, got {value!r}") from None
    if not labels or not all(math.isfinite(x) for x in labels) or len(set(labels)) != len(labels):
        raise click.BadParameter(f"expected distinct finite numbers, got {value!r}")
    return tuple(labels)


def cache_limit(ctx, param, value):
    from svmtrain.options import OptionError, parse_cache_limit
    try:
        parse_cache_limit(value)
    except OptionError as e:
        raise click.BadParameter(e.message) from None
    return value


def bias_value(ctx, param, value):
    from svmtrain.options import check_bias
    checked(check_bias)(ctx, param, value)
    return None if value is None or value < 0 else value


def state_path(ctx, param, value):
    """--warm-start MODEL_FILE means the state left next to it (MODEL_FILE.state.npz)."""
    if value is None:
        return None
    import os
    beside = f"{value}.state.npz"
    if os.path.isfile(beside):
        import zipfile      # only here: it costs 6 ms of start-up (it imports pathlib)
        if not (os.path.isfile(value) and zipfile.is_zipfile(value)):
            return beside
    return value


def nonneg_spec(ctx, param, value):
    if value is not None:
        from svmtrain.controls import parse_nonneg
        try:
            parse_nonneg(value, zero_based=None)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return value


def weight_pairs(ctx, param, value):
    for label, weight in value:
        if not (math.isfinite(label) and weight > 0 and math.isfinite(weight)):
            raise click.BadParameter(f"-w {label:g} {weight:g}: the weight must be a positive "
                                     f"number and the label finite")
    return value


def task_module_options(f):
    """--task-module / --task-option of predict and verify-bound: a user-task model's code."""
    f = click.option("--task-option", "task_options", multiple=True, metavar="KEY=VALUE",
                     help="An option for --task-module's class, as in training (repeatable).")(f)
    return click.option("--task-module", "task_module", default=None, metavar="SPEC",
                        help="The code of a user-task model (PATH.py:Class or package.module:"
                             "Class); the model must record the same task name and version.")(f)


def load_user_task(task_module, task_options):
    """The StructuredTask named by --task-module, or None."""
    if task_module is None:
        if task_options:
            raise InputError("--task-option needs --task-module")
        return None
    from svmtrain.tasks.user import TaskError, load_task
    try:
        return load_task(task_module, list(task_options))
    except TaskError as e:
        raise InputError(str(e)) from None
