"""Solvers: schedules over the engine (n-slack now; 1-slack and online-dual to come).

A solver receives a task object and data; it never imports a concrete task.
"""

from svmtrain.solvers.nslack import train_nslack

SOLVERS = {"n-slack": train_nslack}

__all__ = ["SOLVERS", "train_nslack"]
