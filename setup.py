"""Build svmtrain: the Python package, the svmtools script and the Cython kernels in pyx/."""
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = ["_reader", "_engine", "_linear", "_oracles", "_budget", "_oneslack", "_multiclass",
           "_regression"]

extensions = [
    Extension(
        f"svmtrain.{name}",
        [f"pyx/{name}.pyx"],
        include_dirs=[numpy.get_include(), "pyx"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
        # libm linked explicitly: an unversioned `exp` binds at run time to glibc's compat symbol
        # (exp@GLIBC_2.2.5, an SVID error-handling wrapper around the same exp); linked, the
        # kernels call the current one directly (the same values, fewer instructions per call)
        libraries=["m"],
    )
    for name in KERNELS
]

setup(
    name="svmtrain",
    version="0.1.0",
    description="Command-line SVM trainer with certified duality gaps",
    packages=["svmtrain", "svmtrain.cli", "svmtrain.tasks", "svmtrain.solvers", "svmtools"],
    python_requires=">=3.9",
    install_requires=["numpy>=1.24", "scipy>=1.10", "click>=8.1", "tqdm>=4.60", "threadpoolctl>=3.1"],
    extras_require={
        "dask": ["dask[distributed]>=2023.1"],
        "sklearn": ["scikit-learn>=1.3"],
        "plot": ["matplotlib>=3.5"],
        "docs": ["mkdocs>=1.6"],
        "test": ["pytest>=7", "scikit-learn>=1.3", "liblinear-official>=2.47"],
    },
    ext_modules=cythonize(
        extensions,
        include_path=["pyx"],
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    entry_points={
        "console_scripts": [
            "svmtrain = svmtrain.__main__:run",
            "svmtools = svmtools.cli:main",
        ]
    },
)
