"""The library's input errors besides a data line's (DataError) and a model file's (ModelError):
an option that cannot run (OptionError), and a state, control or task file that cannot be used
with this run (InputError).

Every one of them is bad input: the CLI prints its message and exits with status 2."""

from typing import Optional


class InputError(ValueError):
    """Bad input that is not a line of a data or model file: str(e) is the whole message."""


class OptionError(ValueError):
    """An option value, or a combination of options, that cannot run (svmtrain.options checks
    them; it lives here so that a command can catch it without importing the option records).

    `flag` is the command-line spelling of the option at fault (e.g. "--loss"), None when the
    message names it already.
    """

    def __init__(self, message: str, flag: Optional[str] = None):
        super().__init__(message)
        self.message, self.flag = message, flag

    def __str__(self):
        return f"{self.flag}: {self.message}" if self.flag else self.message
