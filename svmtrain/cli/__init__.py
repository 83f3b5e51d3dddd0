"""svmtrain's command line: one module per command, shared options in `options`."""

import os

# svmtrain's parallelism is its own (--threads, --workers, the Cython kernels); numpy's BLAS calls
# here are small, and a BLAS thread count that follows the machine changes the rounding of its
# sums, so a model would depend on the core count. One BLAS thread unless the user sets one
# (before numpy is first imported; Dask workers inherit it).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import click  # noqa: E402

from svmtrain import __version__  # noqa: E402
from svmtrain.cli.predict import predict  # noqa: E402
from svmtrain.cli.train import train  # noqa: E402
from svmtrain.cli.verify import verify_bound  # noqa: E402


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
