"""Options and error handling shared by the commands (rasterio's rio style: one registry)."""

import contextlib
import math
import os
import sys

import click

from svmtrain.data import DataError
from svmtrain.model import ModelError


def positive(name, unit=""):
    """A click callback: the option, when given, must be a positive finite number."""
    def check(ctx, param, value):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise click.BadParameter(f"{name} must be a positive number{unit}, got {value}")
        return value
    return check


class InputError(click.ClickException):
    """Bad input (a data or model file, or an option): message on stderr, exit status 2."""

    exit_code = 2


@contextlib.contextmanager
def user_errors():
    """Turn input errors into exit status 2 and Ctrl-C into 130, with one clear line each."""
    try:
        yield
    except (DataError, ModelError) as e:
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


def show_progress(quiet):
    return not quiet and sys.stderr.isatty()


@contextlib.contextmanager
def byte_progress(path, quiet, desc):
    """A tqdm bar over the bytes read while the block runs, when stderr is a terminal.

    Yields the reader's `progress` callback, or None when no bar is shown.
    """
    if not show_progress(quiet):
        yield None
        return
    from tqdm import tqdm
    total = None
    if path != "-" and not path.endswith((".gz", ".bz2", ".xz")):
        with contextlib.suppress(OSError):
            total = os.path.getsize(path)
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, leave=False, file=sys.stderr) as bar:
        yield bar.update


def data_path(**kw):
    """A data file argument: '-' is standard input; existence is checked by the reader so that the
    message has the same form as every other input error."""
    return click.argument(kw.pop("name", "data_file"), type=click.Path(dir_okay=False, allow_dash=True), **kw)


quiet_option = click.option("-q", "--quiet", is_flag=True,
                            help="Nothing on standard error but errors: no progress bar, summary or warnings.")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print the figures as one JSON object on standard output.")
zero_based_option = click.option("--zero-based", is_flag=True,
                                 help="Feature indices start at 0 (default: 1, as svmlight and libsvm).")
