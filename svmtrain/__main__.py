"""The svmtrain command: `python -m svmtrain`, and the console script's entry (`run`).

`svmtrain --help` and `svmtrain --version` are answered without importing click, whose import is
most of what they cost (about 45 of 60 ms, against 13 ms for the bare interpreter): the group's
help as click renders it at the width of a terminal of 80 columns or more is kept in
svmtrain._usage (written by `make man`, from the CLI itself; tests/test_startup.py checks that it is
click's text, byte for byte). A narrower terminal, and every other command line, go to click.

`svmtrain predict` of a binary, multiclass, regression or sequence linear model, the common case,
is first offered to svmtrain.lean_predict, and `svmtrain train` of a binary, multiclass or
regression model on a small file to svmtrain.lean_train; neither imports click or numpy, and each
hands the command back when it is not of its plain form.

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
    from svmtrain._stdout import say
    say(text, 1)


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
        if args[:1] == ["predict"]:
            from svmtrain.lean_predict import run as lean_predict
            status = lean_predict(args[1:])
            if status is not None:
                sys.exit(status)
        elif args[:1] == ["train"]:
            from svmtrain.lean_train import run as lean_train
            status = lean_train(args[1:])
            if status is not None:
                sys.exit(status)
        from svmtrain.cli import main
    finally:
        gc.freeze()
        gc.enable()
    main(prog_name="svmtrain")


if __name__ == "__main__":
    run()
