"""Solvers: schedules over the engine (n-slack, 1-slack, online-dual), and the budgeted kernel
solver with its own small engine (pyx/_budget.pyx).

A solver receives a task object and data; it never imports a concrete task. Most take the data as
one loaded block (`solver(task, block, path, **options)`); a solver marked `streams = True` takes
the path and streams the file itself, never loading it (`solver(task, path, OnlineOptions, state)`,
returning its OnlineDual run: `.run(...)` trains). `SOLVERS[mode]` imports a solver's module when
first asked for it: a run loads only its own mode's kernels.
"""

import importlib
from collections.abc import Mapping

_MODULES = {"n-slack": ("svmtrain.solvers.nslack", "train_nslack"),
            "1-slack": ("svmtrain.solvers.oneslack", "train_oneslack"),
            "online-dual": ("svmtrain.solvers.online", "train_online"),
            "budgeted": ("svmtrain.solvers.budgeted", "train_budgeted")}


class _Solvers(Mapping):
    def __getitem__(self, mode):
        module, name = _MODULES[mode]
        return getattr(importlib.import_module(module), name)

    def __iter__(self):
        return iter(_MODULES)

    def __len__(self):
        return len(_MODULES)


SOLVERS = _Solvers()
# the modes whose model is one linear w solved through the engine's problem layer: the training
# controls (svmtrain.controls) apply to these
LINEAR_MODES = ("n-slack", "1-slack", "online-dual")


def __getattr__(name):            # train_nslack, ...: the solver functions, imported on use
    for module, function in _MODULES.values():
        if function == name:
            return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'svmtrain.solvers' has no attribute {name!r}")


__all__ = ["LINEAR_MODES", "SOLVERS", "train_budgeted", "train_nslack", "train_oneslack",
           "train_online"]
