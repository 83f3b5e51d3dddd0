"""Standard output for the commands answered without click (svmtrain.__main__, lean_predict)."""

import os
import sys


def say(text, broken_pipe_status):
    """Write `text` to standard output as click.echo does: nothing when there is none (closed).
    A reader gone away (a broken pipe, `| head`) ends the command quietly with
    `broken_pipe_status`: 1 as click's own output does, 141 as svmtrain's commands do."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit's flush
        sys.exit(broken_pipe_status)
