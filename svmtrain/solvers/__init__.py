"""Solvers: schedules over the engine (n-slack now; 1-slack and online-dual to come), and the
budgeted kernel solver with its own small engine (pyx/_budget.pyx).

A solver receives a task object and data; it never imports a concrete task.
"""

from svmtrain.solvers.budgeted import train_budgeted
from svmtrain.solvers.nslack import train_nslack

SOLVERS = {"n-slack": train_nslack, "budgeted": train_budgeted}
# the modes whose model is one linear w solved through the engine's problem layer: the training
# controls (svmtrain.controls) apply to these
LINEAR_MODES = ("n-slack",)

__all__ = ["LINEAR_MODES", "SOLVERS", "train_budgeted", "train_nslack"]
