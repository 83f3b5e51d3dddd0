"""The svmtrain command: `python -m svmtrain`, and the console script's entry (`run`).

`svmtrain --help` and `svmtrain --version` are answered without importing click, whose import is
most of what they cost (about 45 of 60 ms, against 13 ms for the bare interpreter): the group's
help as click renders it at the width of a terminal of 80 columns or more is kept in
svmtrain._usage (written by `make man`, from the CLI itself; tests/test_startup.py checks that it is
click's text, byte for byte). A narrower terminal, and every other command line, go to click.

The cyclic garbage collector is off while the command's modules are imported, and what they made
is then frozen out of its way: an import makes long-lived objects and next to no cycles, yet
allocating them triggered 54 collections (10.8 ms of a `train` run on heart_scale, half of them in
numpy's import), and every full collection of the run would walk them again.
"""

import gc
import os
import sys


def _columns():
    """The terminal's width as click reads it (shutil.get_terminal_size, without importing shutil:
    $COLUMNS, else the width of the terminal on standard output, else 80)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _say(text):
    """Write `text` to standard output as click.echo does: nothing when there is none (closed);
    a reader gone away (a broken pipe) ends the command with status 1, quietly, as click does."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit's flush
        sys.exit(1)


def run():
    """The console script: the group's --help and --version answered here, the rest by click."""
    args = sys.argv[1:]
    if args in (["--help"], ["-h"]) and _columns() >= 80:
        from svmtrain._usage import HELP
        return _say(HELP)
    if args == ["--version"]:
        from svmtrain import __version__
        return _say(f"svmtrain, version {__version__}\n")
    gc.disable()
    try:
        from svmtrain.cli import main
    finally:
        gc.freeze()
        gc.enable()
    main(prog_name="svmtrain")


if __name__ == "__main__":
    run()
