"""The library's input errors beyond a data line (DataError), a model file (ModelError) and an
option (OptionError): a state, control or task file that cannot be used with this run.

Every one of them is bad input: the CLI prints its message and exits with status 2."""


class InputError(ValueError):
    """Bad input that is not a line of a data or model file: str(e) is the whole message."""
