"""svmtrain: linear and budgeted-kernel SVMs with certified duality gaps."""

__version__ = "0.1.0"

from svmtrain.tasks.protocol import StructuredTask   # the public task protocol (no heavy imports)

__all__ = ["StructuredTask", "__version__"]
