"""svmtrain's command line: one module per command, each imported only when it runs.

Every command parses its flags into the library's records (svmtrain.options), calls svmtrain.api
and reports; none of them orchestrates training.
"""

import importlib
import os

# svmtrain's parallelism is its own (--threads, --workers, the Cython kernels); numpy's BLAS calls
# here are small, and a BLAS thread count that follows the machine changes the rounding of its
# sums, so a model would depend on the core count. One BLAS thread unless the user sets one
# (before numpy is first imported; Dask workers inherit it).
from svmtrain import BLAS_THREAD_VARIABLES, __version__  # (imports no numpy)

for _variable in BLAS_THREAD_VARIABLES:
    os.environ.setdefault(_variable, "1")

import click  # noqa: E402

COMMANDS = {"train": ("svmtrain.cli.train", "train", "Learn a model from TRAIN_FILE and write it to MODEL_FILE."),
            "predict": ("svmtrain.cli.predict", "predict",
                        "Predict TEST_FILE with MODEL_FILE (ours or LIBLINEAR's), one line per example to OUTPUT."),
            "verify-bound": ("svmtrain.cli.verify", "verify_bound",
                             "Compute the true primal P(w) of MODEL_FILE on DATA_FILE in one pass and compare it with the model's dual D, a lower bound on the optimum: OPT lies in [D, P]."),
            "cv": ("svmtrain.cli.cv", "cv", "Cross-validate a training setup on DATA_FILE, or choose its C.")}


class LazyGroup(click.Group):
    """Commands imported on first use: `svmtrain --help` and each command load only their own."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx, formatter):
        # each command's short help as click cuts it (Command.get_short_help_str: its public
        # form; click.utils.make_default_short_help is deprecated in Click 8.5)
        rows = [(name, click.Command(name, help=short).get_short_help_str(45))
                for name, (_, _, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="svmtrain")
def main():
    """Train and apply linear SVMs, each model with a certified duality gap.

    Data files are svmlight/libsvm text (plain, .gz, .bz2, .xz, or - for standard input).
    Exit status: 0 success, 1 verify-bound found the gap above tolerance, 2 bad input or usage,
    130 interrupted (train writes its model so far), 143 terminated (likewise).
    """
