# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Eisner's algorithm in typed loops: the same recurrences, order of additions and tie-breaking
(the first best split point) as eisner.py's numpy version, so both return the same trees and
values bit for bit; this one has no per-span-length Python overhead (the 1-slack solver spends
most of its time in the oracle: profiled, eisner.py's tables were half of a training run).

    I[s, t, <-] = max_{s <= r < t} (C[s, r, ->] + C[r + 1, t, <-]) + score(t -> s)
    I[s, t, ->] = max_{s <= r < t} (C[s, r, ->] + C[r + 1, t, <-]) + score(s -> t)
    C[s, t, <-] = max_{s <= r < t} C[s, r, <-] + I[r, t, <-]
    C[s, t, ->] = max_{s < r <= t} I[s, r, ->] + C[r, t, ->]

feature_sums is the arc-score mat-vec over the int32 feature matrix, with no int32 -> intp copy
and no (arcs, width) temporary: after Eisner, it was the oracle's largest cost.

Built by examples/parser/eisner.py on first use (pyximport, into a cache directory), never by
setup.py; without a compiler the numpy version runs.
"""

import numpy as np
cimport numpy as cnp

cnp.import_array()


cdef void _fill(const double[:, ::1] sc, double[:, ::1] cl, double[:, ::1] cr, double[:, ::1] il,
                double[:, ::1] ir, Py_ssize_t[:, ::1] cl_split, Py_ssize_t[:, ::1] cr_split,
                Py_ssize_t[:, ::1] i_split) noexcept nogil:
    cdef Py_ssize_t N = sc.shape[0], k, s, t, r, best
    cdef double v, top
    for k in range(1, N):
        for s in range(N - k):
            t = s + k
            best = s
            top = cr[s, s] + cl[s + 1, t]
            for r in range(s + 1, t):
                v = cr[s, r] + cl[r + 1, t]
                if v > top:
                    top = v
                    best = r
            il[s, t] = top + sc[t, s]
            ir[s, t] = top + sc[s, t]
            i_split[s, t] = best
            best = s
            top = cl[s, s] + il[s, t]
            for r in range(s + 1, t):
                v = cl[s, r] + il[r, t]
                if v > top:
                    top = v
                    best = r
            cl[s, t] = top
            cl_split[s, t] = best
            best = s + 1
            top = ir[s, s + 1] + cr[s + 1, t]
            for r in range(s + 2, t + 1):
                v = ir[s, r] + cr[r, t]
                if v > top:
                    top = v
                    best = r
            cr[s, t] = top
            cr_split[s, t] = best


cdef void _backtrack(Py_ssize_t s0, Py_ssize_t t0, int right0, Py_ssize_t[:, ::1] cl_split,
                     Py_ssize_t[:, ::1] cr_split, Py_ssize_t[:, ::1] i_split, long long[::1] heads,
                     Py_ssize_t offset, Py_ssize_t[:, ::1] stack) noexcept nogil:
    """Heads of the complete span (s0, t0) (head t0 if not right0, else s0) into heads[pos + offset].
    stack rows: (kind, s, t, right), kind 1 = complete, 0 = incomplete."""
    cdef Py_ssize_t top = 0, s, t, r, kind, right
    stack[0, 0] = 1; stack[0, 1] = s0; stack[0, 2] = t0; stack[0, 3] = right0
    top = 1
    while top > 0:
        top -= 1
        kind = stack[top, 0]; s = stack[top, 1]; t = stack[top, 2]; right = stack[top, 3]
        if s == t:
            continue
        if kind == 1:
            if right == 0:
                r = cl_split[s, t]
                stack[top, 0] = 1; stack[top, 1] = s; stack[top, 2] = r; stack[top, 3] = 0
                stack[top + 1, 0] = 0; stack[top + 1, 1] = r; stack[top + 1, 2] = t; stack[top + 1, 3] = 0
            else:
                r = cr_split[s, t]
                stack[top, 0] = 0; stack[top, 1] = s; stack[top, 2] = r; stack[top, 3] = 1
                stack[top + 1, 0] = 1; stack[top + 1, 1] = r; stack[top + 1, 2] = t; stack[top + 1, 3] = 1
        else:
            r = i_split[s, t]
            if right == 0:
                heads[s + offset] = t + offset
            else:
                heads[t + offset] = s + offset
            stack[top, 0] = 1; stack[top, 1] = s; stack[top, 2] = r; stack[top, 3] = 1
            stack[top + 1, 0] = 1; stack[top + 1, 1] = r + 1; stack[top + 1, 2] = t; stack[top + 1, 3] = 0
        top += 2


def eisner_compiled(scores, bint single_root):
    """eisner.eisner's contract: (heads int64 length n, value) for (n + 1, n + 1) scores."""
    cdef double[:, ::1] sc = np.ascontiguousarray(scores, dtype=np.float64)
    cdef Py_ssize_t n = sc.shape[0] - 1, N, r, best, offset
    cdef double top, v
    heads_array = np.zeros(n + 1, dtype=np.int64)
    cdef long long[::1] heads = heads_array
    if n == 0:
        return heads_array[1:], 0.0
    if single_root:
        words = np.ascontiguousarray(scores[1:, 1:], dtype=np.float64)
        offset = 1
    else:
        words = np.array(scores, dtype=np.float64, order="C")
        words[:, 0] = -np.inf
        offset = 0
    cdef double[:, ::1] w = words
    N = w.shape[0]
    cdef double[:, ::1] cl = np.zeros((N, N)), cr = np.zeros((N, N))
    cdef double[:, ::1] il = np.zeros((N, N)), ir = np.zeros((N, N))
    cdef Py_ssize_t[:, ::1] cl_split = np.zeros((N, N), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] cr_split = np.zeros((N, N), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] i_split = np.zeros((N, N), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] stack = np.zeros((4 * N + 8, 4), dtype=np.intp)
    with nogil:
        _fill(w, cl, cr, il, ir, cl_split, cr_split, i_split)
        if single_root:
            best = 0
            top = cl[0, 0] + cr[0, N - 1] + sc[0, 1]
            for r in range(1, N):
                v = cl[0, r] + cr[r, N - 1] + sc[0, r + 1]
                if v > top:
                    top = v
                    best = r
            heads[best + 1] = 0
            _backtrack(0, best, 0, cl_split, cr_split, i_split, heads, 1, stack)
            _backtrack(best, N - 1, 1, cl_split, cr_split, i_split, heads, 1, stack)
        else:
            top = cr[0, N - 1]
            _backtrack(0, N - 1, 1, cl_split, cr_split, i_split, heads, 0, stack)
    return heads_array[1:], top


def feature_sums(const double[::1] w, const int[:, ::1] features):
    """out[a] = w[features[a, 0]] + w[features[a, 1]] + ... in that order (task.arc_scores's
    contract: the numpy version adds the columns in the same order, so both agree bit for bit).
    The caller checks that every index is below len(w)."""
    cdef Py_ssize_t n_arcs = features.shape[0], width = features.shape[1], a, j
    out_array = np.empty(n_arcs, dtype=np.float64)
    cdef double[::1] out = out_array
    cdef double s
    with nogil:
        for a in range(n_arcs):
            s = w[features[a, 0]]
            for j in range(1, width):
                s += w[features[a, j]]
            out[a] = s
    return out_array
