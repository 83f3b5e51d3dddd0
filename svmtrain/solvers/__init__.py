"""Solvers: schedules over the engine (n-slack, 1-slack, online-dual), and the budgeted kernel
solver with its own small engine (pyx/_budget.pyx).

A solver receives a task object and data; it never imports a concrete task. Most take the data as
one loaded block (`solver(task, block, path, **options)`); a solver marked `streams = True` takes
the path and streams the file itself, never loading it (`solver(task, path, OnlineOptions, state)`,
returning its OnlineDual run: `.run(...)` trains).
"""

from svmtrain.solvers.budgeted import train_budgeted
from svmtrain.solvers.nslack import train_nslack
from svmtrain.solvers.oneslack import train_oneslack
from svmtrain.solvers.online import train_online

SOLVERS = {"n-slack": train_nslack, "1-slack": train_oneslack, "online-dual": train_online,
           "budgeted": train_budgeted}
# the modes whose model is one linear w solved through the engine's problem layer: the training
# controls (svmtrain.controls) apply to these
LINEAR_MODES = ("n-slack", "1-slack")

__all__ = ["LINEAR_MODES", "SOLVERS", "train_budgeted", "train_nslack", "train_oneslack",
           "train_online"]
