"""svmtrain: linear and budgeted-kernel SVMs with certified duality gaps."""

__version__ = "0.1.0"
