"""Solvers: schedules over the engine (n-slack, 1-slack; online-dual to come).

A solver receives a task object and data; it never imports a concrete task.
"""

from svmtrain.solvers.nslack import train_nslack
from svmtrain.solvers.oneslack import train_oneslack

SOLVERS = {"n-slack": train_nslack, "1-slack": train_oneslack}

__all__ = ["SOLVERS", "train_nslack", "train_oneslack"]
