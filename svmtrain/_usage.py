"""`svmtrain --help` as click prints it in a terminal of 80 columns or more (written by
`make man`, svmtools.manpages, from the CLI; tests/test_startup.py checks it against
click: edit the CLI, not this file)."""

HELP = """\
Usage: svmtrain [OPTIONS] COMMAND [ARGS]...

  Train and apply linear SVMs, each model with a certified duality gap.

  Data files are svmlight/libsvm text (plain, .gz, .bz2, .xz, or - for
  standard input). Exit status: 0 success, 1 verify-bound found the gap above
  tolerance, 2 bad input or usage, 130 interrupted (train writes its model so
  far), 143 terminated (likewise).

Options:
  --version   Show the version and exit.
  -h, --help  Show this message and exit.

Commands:
  train         Learn a model from TRAIN_FILE and write it...
  predict       Predict TEST_FILE with MODEL_FILE (ours or...
  verify-bound  Compute the true primal P(w) of MODEL_FILE...
  cv            Cross-validate a training setup on...
"""
