"""numpy, imported on first use, for the compiled kernels (svmtrain._engine, _multiclass,
_linear): each does `from svmtrain import _numpy as np`, and the first attribute read imports
numpy. `train`'s lean path (svmtrain.lean_train) builds its kernels from the reader's buffers and
never reads one, so never imports numpy (about 0.08 s of a process)."""


def __getattr__(name):
    import numpy
    return getattr(numpy, name)
