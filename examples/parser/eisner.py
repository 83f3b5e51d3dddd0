"""Eisner's algorithm: the best projective dependency tree under arc-factored scores, O(n^3).

Eisner (1996); the formulation of McDonald, Crammer and Pereira (2005), fig. 3. Over positions
s < t, four tables of spans:

    complete   C[s, t, <-]: t heads s..t-1 inside the span, and s has all its dependents
    complete   C[s, t, ->]: s heads s+1..t, t complete
    incomplete I[s, t, <-]: the arc t -> s, plus the dependents of s and t between them
    incomplete I[s, t, ->]: the arc s -> t, likewise

    I[s, t, <-] = max_{s <= r < t} C[s, r, ->] + C[r + 1, t, <-] + score(t -> s)
    I[s, t, ->] = max_{s <= r < t} C[s, r, ->] + C[r + 1, t, <-] + score(s -> t)
    C[s, t, <-] = max_{s <= r < t} C[s, r, <-] + I[r, t, <-]
    C[s, t, ->] = max_{s < r <= t} I[s, r, ->] + C[r, t, ->]

Spans of one length are independent, so each length is one set of numpy operations over all its
spans and split points at once (an (spans, split points) sum of two strided views, then a max over
the second axis): n Python steps, O(n^3) arithmetic in numpy.

The root: UD annotates exactly one word per sentence as the dependent of the root, so by default the
tree has a single root child. The table then runs over the words 1..n only, and the root child r
is chosen last: max_r score(0 -> r) + C[1, r, <-] + C[r, n, ->] — O(n) more, no extra table.
With single_root=False the root is position 0 of the table and may head several words
(the tree of McDonald et al.).

Ties go to the smallest split point (numpy's argmax), so the output is a function of the scores.

The same recurrences in typed loops (_eisner_fast.pyx) are 20-50x faster (n = 12..50 words): the
oracle is most of a structured SVM's training time (profiled: the numpy tables were half of a
1-slack run), so `eisner` builds that version on first use and falls back to this one when it
cannot; both give the same trees and values, bit for bit (tested).
"""

import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np

LEFT, RIGHT = 0, 1


def _tables(scores):
    """Fill the four tables for an (N, N) score matrix (scores[h, d] = score of h -> d over N
    positions, 0-based). Returns (cl_start, cr_end, complete_split, incomplete_split): the complete
    spans C[s, s + k, <-] = cl_start[s, k] and C[t - k, t, ->] = cr_end[t, k], and the best split
    points r - s, indexed [direction, s, t - s].

    Each table is kept twice, by start (X_start[s, k] = X[s, s + k]) and by end (X_end[t, k] =
    X[t - k, t]), so that every gather of a span length is a strided slice, not fancy indexing:
    for spans (s, s + k), C[s, s + j, ->] is X_start[s, j] (a row prefix) and C[s + j + 1, s + k, <-]
    is X_end[s + k, k - 1 - j] (a reversed row prefix).
    """
    N = scores.shape[0]
    shape = (N, N)
    cl_start, cl_end = np.zeros(shape), np.zeros(shape)      # complete, head on the right
    cr_start, cr_end = np.zeros(shape), np.zeros(shape)      # complete, head on the left
    il_end = np.zeros(shape)                                 # incomplete t -> s, by end
    ir_start = np.zeros(shape)                               # incomplete s -> t, by start
    complete_split = np.zeros((2, N, N), dtype=np.intp)
    incomplete_split = np.zeros((2, N, N), dtype=np.intp)
    for k in range(1, N):
        m = N - k                                            # spans (s, s + k), s = 0..m-1
        rows = np.arange(m)
        # incomplete spans: C[s, r, ->] + C[r + 1, t, <-] over r = s + j, j = 0..k-1
        halves = cr_start[:m, :k] + cl_end[k:, k - 1::-1]
        best = np.argmax(halves, axis=1)
        value = halves[rows, best]
        il = value + np.diagonal(scores, -k)                 # + score(t -> s)
        ir = value + np.diagonal(scores, k)                  # + score(s -> t)
        il_end[k:, k] = il
        ir_start[:m, k] = ir
        incomplete_split[LEFT, :m, k] = best
        incomplete_split[RIGHT, :m, k] = best
        # complete, head t: C[s, r, <-] + I[r, t, <-] over r = s + j, j = 0..k-1
        left = cl_start[:m, :k] + il_end[k:, k:0:-1]
        best = np.argmax(left, axis=1)
        value = left[rows, best]
        cl_start[:m, k] = value
        cl_end[k:, k] = value
        complete_split[LEFT, :m, k] = best
        # complete, head s: I[s, r, ->] + C[r, t, ->] over r = s + 1 + j, j = 0..k-1
        right = ir_start[:m, 1:k + 1] + cr_end[k:, k - 1::-1]
        best = np.argmax(right, axis=1)
        value = right[rows, best]
        cr_start[:m, k] = value
        cr_end[k:, k] = value
        complete_split[RIGHT, :m, k] = best + 1
    return cl_start, cr_end, complete_split, incomplete_split


def _backtrack(complete_split, incomplete_split, s, t, direction, heads, offset):
    """Write the heads of the complete span (s, t, direction) into heads (positions + offset)."""
    stack = [(True, s, t, direction)]
    while stack:
        is_complete, s, t, direction = stack.pop()
        if s == t:
            continue
        if is_complete:
            r = s + complete_split[direction, s, t - s]
            if direction == LEFT:
                stack.append((True, s, r, LEFT))
                stack.append((False, r, t, LEFT))
            else:
                stack.append((False, s, r, RIGHT))
                stack.append((True, r, t, RIGHT))
        else:
            r = s + incomplete_split[direction, s, t - s]
            if direction == LEFT:
                heads[s + offset] = t + offset
            else:
                heads[t + offset] = s + offset
            stack.append((True, s, r, RIGHT))
            stack.append((True, r + 1, t, LEFT))


_BUILD_SCRIPT = """
import sys
import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
pyx, build_lib, build_temp = sys.argv[1:4]
setup(name="parser_eisner", ext_modules=cythonize([Extension("_eisner_fast", [pyx],
      include_dirs=[np.get_include()], define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])],
      quiet=True, build_dir=build_temp), script_args=["build_ext", "--build-lib", build_lib,
      "--build-temp", build_temp])
"""

_compiled = None     # None: not tried yet; False: unavailable (no Cython or no compiler); else the module


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "svmtrain-examples"


def compiled_module():
    """The typed loops of _eisner_fast.pyx (eisner_compiled, and task.py's feature_sums) as a
    module, compiled once per source and Python into the user's cache directory
    (~/.cache/svmtrain-examples, $XDG_CACHE_HOME) by a child process whose output is kept out of
    ours; None when that cannot be done (no Cython or no C compiler), and numpy serves.
    SVMTRAIN_PARSER_NUMPY=1 asks for numpy."""
    global _compiled
    if _compiled is None:
        _compiled = False
        if not os.environ.get("SVMTRAIN_PARSER_NUMPY"):
            try:
                _compiled = _build_and_load()
            except Exception:     # any failure to build or load leaves the numpy version in charge
                _compiled = False
    return _compiled or None


def _build_and_load():
    pyx = Path(__file__).with_name("_eisner_fast.pyx")
    key = hashlib.sha256(pyx.read_bytes() + sys.version.encode() + np.__version__.encode()).hexdigest()[:16]
    target = _cache_dir() / f"_eisner_fast_{key}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            done = subprocess.run([sys.executable, "-c", _BUILD_SCRIPT, str(pyx), tmp, os.path.join(tmp, "t")],
                                  capture_output=True, cwd=tmp, timeout=600)
            built = list(Path(tmp).glob("_eisner_fast*" + sysconfig.get_config_var("EXT_SUFFIX")))
            if done.returncode != 0 or len(built) != 1:
                return False
            os.replace(built[0], target)      # atomic: a concurrent build leaves one whole file
    spec = importlib.util.spec_from_file_location("_eisner_fast", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def eisner(scores, single_root=True):
    """The best projective tree (see eisner_numpy): the compiled version when it could be built,
    else numpy's; both return the same heads and value, bit for bit."""
    fast = compiled_module()
    if fast is not None:
        return fast.eisner_compiled(scores, single_root)
    return eisner_numpy(scores, single_root)


def eisner_numpy(scores, single_root=True):
    """The best projective tree for arc scores scores[h, d] ((n + 1) x (n + 1), position 0 the root;
    column 0 and the diagonal are ignored). Returns (heads, value): heads[d - 1] is the head of
    word d (int64, length n), value the sum of its arc scores."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0] - 1
    heads = np.zeros(n + 1, dtype=np.int64)          # heads[0] unused
    if n == 0:
        return heads[1:], 0.0
    if single_root:
        words = scores[1:, 1:]
        cl_start, cr_end, complete_split, incomplete_split = _tables(words)
        # root child r (0-based among words): C[0, r, <-] + C[r, n - 1, ->] + score(0 -> r)
        total = cl_start[0, :] + cr_end[n - 1, ::-1] + scores[0, 1:]
        r = int(np.argmax(total))
        heads[r + 1] = 0
        _backtrack(complete_split, incomplete_split, 0, r, LEFT, heads, 1)
        _backtrack(complete_split, incomplete_split, r, n - 1, RIGHT, heads, 1)
        return heads[1:], float(total[r])
    scores = scores.copy()
    scores[:, 0] = -np.inf       # no arc into the root (C[0, t, <-] is never used from position 0)
    _, cr_end, complete_split, incomplete_split = _tables(scores)
    _backtrack(complete_split, incomplete_split, 0, n, RIGHT, heads, 0)
    return heads[1:], float(cr_end[n, n])


def tree_score(scores, heads):
    """The sum of the arc scores of a tree (heads[d - 1] = head of word d)."""
    heads = np.asarray(heads)
    return float(scores[heads, np.arange(1, len(heads) + 1)].sum())
