"""svmtrain's command line: one module per command, shared options in `options`."""

import click

from svmtrain import __version__
from svmtrain.cli.predict import predict
from svmtrain.cli.train import train
from svmtrain.cli.verify import verify_bound


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="svmtrain")
def main():
    """Train and apply linear SVMs, each model with a certified duality gap.

    Data files are svmlight/libsvm text (plain, .gz, .bz2, .xz, or - for standard input).
    Exit status: 0 success, 1 verify-bound found the gap above tolerance, 2 bad input or usage,
    130 interrupted (train writes its model so far), 143 terminated (likewise).
    """


main.add_command(train)
main.add_command(predict)
main.add_command(verify_bound)
