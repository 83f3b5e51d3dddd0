"""svmtrain train: parse the flags into the library's records, call svmtrain.api.train, report."""

import signal
import sys

import click

from svmtrain.cli.help import GroupedCommand
from svmtrain.cli.options import data_path, show_progress, user_errors
from svmtrain.cli.train_options import train_options
from svmtrain.cli.train_records import records


@click.command(cls=GroupedCommand)
@data_path(name="train_file")
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=False))
@train_options
def train(model_file, trace_file, model_format, quiet, **params):
    """Learn a model from TRAIN_FILE and write it to MODEL_FILE.

    The model records the dual value D (a lower bound on the optimum) and the primal P(w) (an upper
    bound); `svmtrain verify-bound` re-checks P with one pass over the data.
    """
    from svmtrain import api, interrupt

    ctx = click.get_current_context()

    def warn(message):
        if not quiet:
            click.echo(f"svmtrain: warning: {message}", err=True)

    def latent_round(r):         # a latent SVM's outer rounds are news; epochs are not
        if not quiet and hasattr(r, "changed") and hasattr(r, "objective"):
            click.echo(f"svmtrain: latent round {r.round}: objective {r.objective:.10g}, "
                       f"{r.changed} latent parts changed, convex primal {r.primal:.10g}, "
                       f"relative gap {r.relative_gap:.3g}", err=True)

    with user_errors():
        problem, mode, controls, where, reason = records(ctx, params)
        model = api.train(params["train_file"], problem, mode, controls, where, model_file=model_file,
                          model_format=model_format, trace=trace_file,
                          progress=show_progress(quiet), on_warning=warn, mode_reason=reason,
                          on_epoch=latent_round)
    stats = model.stats
    if stats.interrupted:
        name = signal.Signals(stats.signal).name if stats.signal else "signal"
        if stats.certifying:
            kept = f" and the resume state {stats.state_file}" if stats.state_file else ""
            click.echo(f"svmtrain: interrupted ({name}) in the certificate's pass, after training: "
                       f"wrote {model_file}{kept} (not certified: svmtrain verify-bound certifies "
                       f"it)", err=True)
        elif mode.name == "online-dual" and where.__class__.__name__ == "Local":
            kept = (f" and the resume state {stats.state_file} (continue with --warm-start "
                    f"{stats.state_file})" if stats.state_file else "")
            click.echo(f"svmtrain: interrupted ({name}) in pass {stats.passes + 1}: wrote "
                       f"{model_file}{kept}", err=True)
        else:
            kept = f" and {stats.state_file}" if stats.state_file else ""
            click.echo(f"svmtrain: interrupted ({name}): wrote {model_file}{kept} (relative gap "
                       f"{model.relative_gap:.3g})", err=True)
        sys.exit(interrupt.exit_status())
    if not quiet:
        click.echo(f"svmtrain: {stats.summary}", err=True)
        for message in stats.late_warnings:
            click.echo(f"svmtrain: warning: {message}", err=True)
