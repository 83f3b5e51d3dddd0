"""Solvers: schedules over the engine (n-slack now; 1-slack and online-dual to come), and the
budgeted kernel solver with its own small engine (pyx/_budget.pyx).

A solver receives a task object and data; it never imports a concrete task.
"""

from svmtrain.solvers.budgeted import train_budgeted
from svmtrain.solvers.nslack import train_nslack

SOLVERS = {"n-slack": train_nslack, "budgeted": train_budgeted}

__all__ = ["SOLVERS", "train_budgeted", "train_nslack"]
