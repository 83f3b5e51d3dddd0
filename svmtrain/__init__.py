"""svmtrain: linear, structured and budgeted-kernel SVMs, every model with a certified duality gap.

The library (svmtrain.api): `train`, `predict`, `verify_bound`, the option records (`Problem`,
`NSlack`, `OneSlack`, `OnlineDual`, `Budgeted`, `Controls`, `Local`, `Dask`) and `Model`. Names are
imported on first use, so `import svmtrain` (and the command line that imports it) stays cheap.
"""

__version__ = "0.1.0"

#: the variables by which a user sets numpy's BLAS thread count: the command line sets them to 1
#: before numpy is imported, and the library runs BLAS on one thread unless one is set
#: (svmtrain.api): the rounding of numpy's dot products depends on the thread count
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_EXPORTS = {
    "train": "svmtrain.api", "predict": "svmtrain.api", "verify_bound": "svmtrain.api",
    "cross_validate": "svmtrain.api", "c_path": "svmtrain.api",
    "Certificate": "svmtrain.api", "Verification": "svmtrain.api", "Predictions": "svmtrain.api",
    "Problem": "svmtrain.options", "NSlack": "svmtrain.options", "OneSlack": "svmtrain.options",
    "OnlineDual": "svmtrain.options", "Budgeted": "svmtrain.options",
    "Controls": "svmtrain.options", "Local": "svmtrain.options", "Dask": "svmtrain.options",
    "OptionError": "svmtrain.errors", "InputError": "svmtrain.errors",
    "DataError": "svmtrain.data", "ModelError": "svmtrain.model", "Model": "svmtrain.model",
    "RunStats": "svmtrain.pipeline", "StructuredTask": "svmtrain.tasks.protocol",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'svmtrain' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
