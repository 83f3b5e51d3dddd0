"""The options of `svmtrain train`, declared group by group, and the records they fill.

Each option names the group it is listed under in --help and, for the mode groups, the record
field it fills (svmtrain.options); `records` turns the parsed flags into the records the library
takes. A mode's option given with another mode is refused, never silently ignored.
"""

import click

from svmtrain.cli.help import option
from svmtrain.cli.options import (bias_value, cache_limit, checked, dask_options, label_list,
                                  nonneg_spec, quiet_option, state_path, weight_pairs,
                                  zero_based_option)
from svmtrain.options import MODES, TASKS, check_epsilon, check_nonnegative, check_positive

# parameter name -> (flag, mode) for every mode-specific option; the mode records' fields carry
# the same names (but the 1-slack thread count, which says where the oracle runs: Local.threads)
MODE_FLAGS = {
    "cache_size": ("-f", "1-slack"), "qp_every": ("--qp-every", "1-slack"),
    "drop_inactive": ("--drop-inactive", "1-slack"), "threads": ("--threads", "1-slack"),
    "in_out": ("--in-out", "1-slack"), "sample_start": ("--sample-start", "1-slack"),
    "merge_duplicates": ("--merge-duplicates", "1-slack"),
    "passes": ("--passes", "online-dual"), "chunk": ("--chunk", "online-dual"),
    "shuffle_window": ("--shuffle-window", "online-dual"),
    "window_looks": ("--window-looks", "online-dual"),
    "window_rows": ("--window-rows", "online-dual"),
    "admit_margin": ("--admit-margin", "online-dual"),
    "keep_inactive": ("--keep-inactive", "online-dual"),
    "cache_limit": ("--cache-limit", "online-dual"), "labels": ("--labels", "online-dual"),
    "verify": ("--verify/--no-verify", "online-dual"),
    "checkpoint_every": ("--checkpoint-every", "online-dual"),
    "gamma": ("-g", "budgeted"), "budget": ("--budget", "budgeted"), "epochs": ("--epochs", "budgeted"),
    "optimizer": ("--optimizer", "budgeted"), "average": ("--average", "budgeted"),
    "shrink": ("--shrink", "budgeted"), "step_tolerance": ("--step-tolerance", "budgeted"),
    "merge_search": ("--merge-search", "budgeted"),
    "merge_precision": ("--merge-precision", "budgeted"), "validation": ("--validation", "budgeted"),
}
CONTROL_FIELDS = {"class_weight_pairs": "class_weights", "class_weight": "class_weight",
                  "weights_file": "example_weights", "bias_reg": "bias_reg", "nonneg": "nonneg",
                  "prior_model": "prior", "reg_scale_file": "reg_scale",
                  "save_state_file": "save_state", "warm_start_file": "warm_start"}


C, T, O, N, B = "Common", "Training controls", "1-slack", "online-dual", "budgeted"
U = "Your own task"
# what a --task-module task takes besides its own options: the common solver options and the
# linear modes' (it has no bias, task loss or training controls, and runs in this process)
USER_REFUSED = ("task", "bias", "p", "loss", "rescaling", "model_format", "zero_based",
                "workers", "scheduler", *CONTROL_FIELDS,
                *(name for name, (_, owner) in MODE_FLAGS.items() if owner == "budgeted"))
FLOAT = click.FLOAT
Path = click.Path(dir_okay=False)

OPTIONS = [
    option(C, "-t", "--task", type=click.Choice(TASKS), default="binary", show_default=True,
           metavar="TASK", help="binary, multiclass, regression, ranking, sequence, constraints."),
    option(C, "-m", "--mode", type=click.Choice(("auto",) + MODES), default="auto", metavar="MODE",
           help="auto, n-slack, 1-slack, online-dual or budgeted  [default: auto]",
           details="auto chooses by the task and the file's size: online-dual when the data "
                   "would not fit in memory, 1-slack for ranking, sequence and large binary or "
                   "multiclass files, n-slack otherwise (a mode's own options choose it; the "
                   "summary line says which mode ran and why). n-slack is dual coordinate descent over the constraints of every example (all "
                   "listed, or grown by cutting planes), each example with its own slack; 1-slack "
                   "adds one aggregated plane (every example's worst offender) per iteration and "
                   "solves a small QP over those planes (same objective and C); online-dual "
                   "streams the file (memory bounded by a cache of hard constraints, not by the "
                   "data; Ramanan Alg. 2); budgeted is an RBF-kernel SVM with at most --budget "
                   "support vectors (BSCA; binary, one-vs-rest multiclass, regression; no bias)."),
    option(C, "-c", "C", type=float, default=1.0, show_default=True,
           callback=checked(check_positive, "C"),
           help="P(w) = 1/2|w|^2 + C sum_i loss_i."),
    option(C, "-e", "--epsilon", type=float, default=1e-3, show_default=True,
           callback=checked(check_epsilon), help="Stop at this relative gap (P-D)/P."),
    option(C, "-B", "--bias", type=float, default=None, callback=bias_value,
           help="Append a constant feature (LIBLINEAR's -B)."),
    option(C, "--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, metavar="N",
           help="Seed of the order of steps."),
    option(C, "--max-epochs", type=click.IntRange(1), default=1000, show_default=True, metavar="N",
           help="Stop after N passes or rounds."),
    option(C, "-p", "p", type=float, default=None, callback=checked(check_nonnegative, "p"),
           help="Regression: |y - w.x| <= p is free  [default: 0.1]"),
    option(C, "--loss", type=click.Choice(("zero-one", "hamming")), default=None,
           help="Multiclass, sequence: the loss."),
    option(C, "--rescaling", type=click.Choice(("margin", "slack")), default=None,
           help="Multiclass, sequence  [default: margin]",
           details="Margin rescaling: w.dpsi >= Delta - xi; slack rescaling: w.dpsi >= 1 - xi / "
                   "Delta (Joachims et al. Alg. 1 and 2)."),
    option(C, "--shrinking/--no-shrinking", default=True, show_default=True,
           help="LIBLINEAR's shrinking."),
    option(C, "--trace", "trace_file", type=click.Path(dir_okay=False, writable=True), default=None,
           help="Write a line per epoch: dual, primal, gap."),
    option(C, "--format", "model_format", type=click.Choice(("svmtrain", "liblinear")),
           default="svmtrain", show_default=True,
           help="Model file format."),
    # the training controls (every linear mode)
    option(T, "-w", "class_weight_pairs", type=(float, float), multiple=True,
           metavar="LABEL WEIGHT", callback=weight_pairs,
           help="C of LABEL's examples is WEIGHT * C (-wi)."),
    option(T, "--class-weight", "class_weight", type=click.Choice(("balanced",)), default=None,
           help="balanced: weights n / (k n_c)."),
    option(T, "--weights", "weights_file", type=Path, default=None, metavar="FILE",
           help="Example weights: C_i = weight_i * C.",
           details="LIBLINEAR's weights file; it multiplies any cost: token. Ranking and "
                   "sequence: the lines of a query / sentence must agree."),
    option(T, "--bias-reg", "bias_reg", type=float, default=None, metavar="FACTOR",
           callback=checked(check_positive, "the factor"),
           help="With -B: FACTOR * 1/2 b^2 for the bias.",
           details="FACTOR -> 0 tends to an unregularized bias, but the rescaled bias feature "
                   "B/sqrt(FACTOR) grows and convergence slows."),
    option(T, "--nonneg", "nonneg", type=str, default=None, metavar="SPEC", callback=nonneg_spec,
           help="Weights >= 0: '1-10,15', 'all', 'bias'.",
           details="Ramanan sec. 5; for multiclass and sequence, in every class / tag block."),
    option(T, "--prior", "prior_model", type=Path, default=None, metavar="MODEL",
           help="Regularize by 1/2 |w - w0|^2, w0 MODEL's."),
    option(T, "--reg-scale", "reg_scale_file", type=Path, default=None, metavar="FILE",
           help="Lines 'index:r': 1/2 r (w_index - w0)^2."),
    option(T, "--save-state", "save_state_file", type=Path, default=None, metavar="FILE",
           help="Write the dual state, to resume from.",
           details="n-slack: the alphas of the listed constraints and the shrinking thresholds, "
                   "or its cutting-plane cache; 1-slack: its planes and their duals; online-dual: "
                   "its resume state."),
    option(T, "--warm-start", "warm_start_file", type=Path, default=None, metavar="STATE",
           callback=state_path,
           help="Start from a --save-state file.",
           details="The state's mode decides the mode: known constraints start at their alpha "
                   "(times C_new/C_old, clipped to the new bounds), new examples at 0; a "
                   "cutting-plane cache is rebuilt over the same rows; 1-slack restarts from its "
                   "planes; online-dual resumes where it stopped."),
    # 1-slack
    option(O, "-f", "--cache-size", "cache_size", type=click.IntRange(0), default=None, metavar="N",
           help="Keep each example's N latest offenders  [default: 0]"),
    option(O, "--qp-every", "qp_every", type=click.IntRange(1), default=None, metavar="N",
           help="Solve the QP fully every N-th iteration  [default: 1]"),
    option(O, "--drop-inactive", "drop_inactive", type=click.IntRange(0), default=None, metavar="N",
           help="Drop a plane idle N iterations (0: never)  [default: 50]"),
    option(O, "--threads", "threads", type=click.IntRange(1, 256), default=None, metavar="N",
           help="Threads for the oracle (same model)  [default: 1]"),
    option(O, "--in-out", "in_out", type=click.FloatRange(0, 1), default=None, metavar="X",
           help="In-out planes' smallest step  [default: 0.1]",
           details="The oracle is asked between the best w priced so far and the QP's w, the "
                   "step toward the QP's w doubling on progress and halving down to this value "
                   "otherwise; the model is the best w."),
    option(O, "--sample-start", "sample_start", type=click.IntRange(0), default=None, metavar="N",
           help="Start from every N-th example's w  [default: 10]",
           details="The sample (at least 2,000 examples) is solved to a gap of 0.05 and the "
                   "oracle first asked at its w; planes and certificate are the whole data's."),
    option(O, "--merge-duplicates/--no-merge-duplicates", "merge_duplicates", default=None,
           help="Merge identical rows  [default: merge]"),
    # online-dual
    option(N, "--passes", type=click.IntRange(1), default=None, metavar="N",
           help="Passes over the file (at most)  [default: 1]"),
    option(N, "--chunk", type=click.IntRange(1), default=None, metavar="N",
           help="Examples per explore-or-optimise step  [default: 1000]"),
    option(N, "--shuffle-window", "shuffle_window", type=click.IntRange(0), default=None,
           metavar="N", help="Shuffle N examples at a time  [default: 100000]"),
    option(N, "--window-rows", "window_rows", type=click.IntRange(1), default=None, metavar="R",
           help="A window also closes at R rows  [default: 250000]"),
    option(N, "--window-looks", "window_looks", type=click.IntRange(0), default=None, metavar="K",
           help="Re-check a window up to K times  [default: 3; 100; 40]",
           details="Multiclass and sequence look up to 100 times, stopping earlier when a look "
                   "raises the cached upper bound by at most -e of it; ranking up to 40 times, "
                   "to a quarter of -e."),
    option(N, "--admit-margin", "admit_margin", type=click.FloatRange(0, 100), default=None,
           metavar="M", help="Cache examples within M of violating  [default: 0.3]"),
    option(N, "--keep-inactive", "keep_inactive", type=click.IntRange(0), default=None, metavar="N",
           help="Keep an idle constraint N solves  [default: 200; sequence: 2]"),
    option(N, "--cache-limit", "cache_limit", type=str, default=None, callback=cache_limit,
           metavar="N|SIZE", help="Bound the cache: 100000 constraints, 512MB, window (what "
                                  "the largest window needed), or none  [default: window; "
                                  "binary and regression: none]"),
    option(N, "--labels", type=str, default=None, callback=label_list, metavar="L1,L2,...",
           help="The labels (spares a pass; needed for stdin)."),
    option(N, "--verify/--no-verify", "verify", default=None,
           help="Certify by one more pass  [default: verify]"),
    option(N, "--checkpoint-every", "checkpoint_every", type=float, default=None,
           metavar="SECONDS", callback=checked(check_positive, "the period", None, " of seconds"),
           help="Write model and resume state this often."),
    # a user's task (svmtrain.tasks.user; docs/own-task.md)
    option(U, "--task-module", "task_module", default=None, metavar="SPEC",
           help="Your task's class: PATH.py:Class or package.module:Class."),
    option(U, "--task-option", "task_options", multiple=True, metavar="KEY=VALUE",
           help="An option for the task's class (repeatable)."),
    option(U, "--latent-rounds", "latent_rounds", type=click.IntRange(0), default=0, metavar="N",
           help="Latent SVM: at most N CCCP rounds (n-slack)  [default: 0]",
           details="With a task that defines latent(x, y, w): each round imputes the latent part "
                   "of every ground truth with the current w, then solves the convex problem "
                   "hot-started from the previous round; it stops when the objective stops "
                   "falling."),
    # budgeted
    option(B, "-g", "--gamma", type=float, default=None, callback=checked(check_positive, "gamma"),
           help="exp(-gamma |x - x'|^2)  [default: 1/features]"),
    option(B, "--budget", type=click.IntRange(1, 10**7), default=None, metavar="N",
           help="Most support vectors (per class)  [default: 500]"),
    option(B, "--epochs", type=click.IntRange(1, 10**6), default=None, metavar="N",
           help="Passes over the data  [default: 5]"),
    option(B, "--optimizer", type=click.Choice(("bsca", "sgd")), default=None,
           help="bsca (dual) or sgd (primal)  [default: bsca]"),
    option(B, "--average/--no-average", default=None,
           help="BSCA: mean of the last iterates  [default: on]"),
    option(B, "--shrink/--no-shrink", default=None,
           help="BSCA: skip resting examples  [default: on]"),
    option(B, "--step-tolerance", type=float, default=None,
           help="BSCA: skip smaller steps  [default: 0]"),
    option(B, "--merge-search", type=click.Choice(("table", "golden")), default=None,
           help="How a merge is found  [default: table]"),
    option(B, "--merge-precision", type=float, default=None,
           help="Golden search's precision  [default: 0.01]"),
    option(B, "--validation", type=Path, default=None,
           help="A file scored in --trace each epoch."),
]


def train_options(f):
    for decorate in reversed(OPTIONS + [dask_options("Dask"), zero_based_option, quiet_option]):
        f = decorate(f)
    return f
