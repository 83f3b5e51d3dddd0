# Row access on CSR slices: the three operations every linear kernel needs (dot, axpy, squared norm),
# plus the dot of two sorted rows. Inline, nogil, unchecked: callers validate shapes once at the edge.
#
# Column indices may be int32 (half the memory traffic of int64: the engine's choice) or int64.
#
# A row may carry LIBLINEAR's implicit bias feature: a constant `bias` stored in column `bias_col`
# of w (bias_col < 0: no bias feature). It is never materialised in the CSR arrays.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t


cdef inline void* buffer_address(object a) except? NULL:
    """The first byte of a C-contiguous buffer that `a` keeps alive (an array a kernel holds)."""
    cdef Py_buffer view
    cdef void* p
    PyObject_GetBuffer(a, &view, PyBUF_SIMPLE)
    p = view.buf
    PyBuffer_Release(&view)
    return p


cdef inline object zeros_as_numpy(Py_ssize_t n):
    """n doubles, 0.0, without numpy but allocated as numpy allocates an array (huge pages from
    4 MB: svmtrain._reader.zeros): the lean paths' w and int32 columns."""
    from svmtrain._reader import zeros
    return zeros(n)


cdef inline object int32_columns(object indices, int64_t n_cols, int32_t** out):
    """The column indices as int32s, their first in out: the buffer itself when it holds int32s
    ('i': a Parser made with int32_columns stores them so), else a copy of its int64s in a buffer
    of its own (zeros_as_numpy's). Returns the buffer to keep alive; ValueError when an index lies
    outside [0, n_cols)."""
    cdef const int32_t[::1] narrow
    cdef const int64_t[::1] wide
    cdef Py_ssize_t p
    cdef int32_t* i32
    view = memoryview(indices)
    if view.format == "i" and len(view) > 0:
        narrow = indices
        for p in range(narrow.shape[0]):
            if narrow[p] < 0 or narrow[p] >= n_cols:
                raise ValueError("a column index is outside [0, n_cols)")
        out[0] = <int32_t*> &narrow[0]
        return indices
    if len(view) == 0:
        owner = zeros_as_numpy(1)
        out[0] = <int32_t*> buffer_address(owner)
        return owner
    wide = indices
    owner = zeros_as_numpy((wide.shape[0] + 1) // 2)
    i32 = <int32_t*> buffer_address(owner)
    for p in range(wide.shape[0]):
        if wide[p] < 0 or wide[p] >= n_cols:
            raise ValueError("a column index is outside [0, n_cols)")
        i32[p] = <int32_t>wide[p]
    out[0] = i32
    return owner



# A hint that an address will be read soon. An epoch visits rows in a random order it knows in
# advance, and a visit is a chain of dependent loads (the constraint's record, then its row):
# fetching a few visits ahead overlaps those misses. On x86 it is the instruction itself, in a
# volatile asm: gcc 12 at -O3 dropped __builtin_prefetch from the engine's epoch loop once inlined
# there (a9a epochs stayed at 8 ms; 2 ms with the instruction). Elsewhere the builtin, or nothing.
cdef extern from *:
    """
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    #define SVMTRAIN_PREFETCH(p) __asm__ __volatile__("prefetcht0 %0" : : "m"(*(const char*)(p)))
    #elif defined(__GNUC__) || defined(__clang__)
    #define SVMTRAIN_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define SVMTRAIN_PREFETCH(p) ((void)(p))
    #endif
    """
    void prefetch "SVMTRAIN_PREFETCH"(const void* p) noexcept nogil

ctypedef fused index_t:
    int32_t
    int64_t

# The same choice for def functions over arrays (each a type of its own, so that one array may be
# int32 and another int64): CSR column indices, a constraint term's row, its offset (int32 where a
# cache keeps them so: the sequence task's).
ctypedef fused column_t:
    int32_t
    int64_t

ctypedef fused row_t:
    int32_t
    int64_t

ctypedef fused offset_t:
    int32_t
    int64_t

# CSR values: float64, or float32 where a store keeps them so because every value is a float32
# exactly, or a byte where every value is an integer from 0 to 255 (svmtrain.data.value_dtype: the
# sequence task's indicator features). Each is widened to double before any arithmetic, so all
# three give the same bits.
ctypedef fused value_t:
    uint8_t
    float
    double

# A constraint term's scale, the same choice (a type of its own: the values may be the other kind).
ctypedef fused scale_t:
    float
    double


cdef inline double row_dot(const double* w, const index_t* ind, const value_t* val,
                           int64_t start, int64_t end, double bias, int64_t bias_col) noexcept nogil:
    cdef double s = 0.0
    cdef int64_t p
    for p in range(start, end):
        s += w[ind[p]] * val[p]
    if bias_col >= 0:
        s += w[bias_col] * bias
    return s


cdef inline void row_axpy(double a, const index_t* ind, const value_t* val,
                          int64_t start, int64_t end, double bias, int64_t bias_col,
                          double* w) noexcept nogil:
    cdef int64_t p
    for p in range(start, end):
        w[ind[p]] += a * val[p]
    if bias_col >= 0:
        w[bias_col] += a * bias


# The strided forms (a feature-major weight layout): column j of the row is read at w[stride * j]; the
# bias column is given already strided.
cdef inline double row_dot_s(const double* w, const index_t* ind, const value_t* val,
                             int64_t start, int64_t end, double bias, int64_t bias_col,
                             int64_t stride) noexcept nogil:
    cdef double s = 0.0
    cdef int64_t p
    for p in range(start, end):
        s += w[stride * ind[p]] * val[p]
    if bias_col >= 0:
        s += w[bias_col] * bias
    return s


cdef inline void row_axpy_s(double a, const index_t* ind, const value_t* val,
                            int64_t start, int64_t end, double bias, int64_t bias_col,
                            double* w, int64_t stride) noexcept nogil:
    cdef int64_t p
    for p in range(start, end):
        w[stride * ind[p]] += a * val[p]
    if bias_col >= 0:
        w[bias_col] += a * bias


cdef inline double row_sqnorm(const value_t* val, int64_t start, int64_t end,
                              double bias, int64_t bias_col) noexcept nogil:
    cdef double s = 0.0
    cdef int64_t p
    for p in range(start, end):
        s += <double>val[p] * <double>val[p]
    if bias_col >= 0:
        s += bias * bias
    return s


cdef inline double row_row_dot(const index_t* ind, const value_t* val,
                               int64_t s1, int64_t e1, int64_t s2, int64_t e2,
                               double bias, int64_t bias_col) noexcept nogil:
    """Dot product of two rows with sorted indices (merge)."""
    cdef double s = 0.0
    while s1 < e1 and s2 < e2:
        if ind[s1] == ind[s2]:
            s += <double>val[s1] * <double>val[s2]
            s1 += 1
            s2 += 1
        elif ind[s1] < ind[s2]:
            s1 += 1
        else:
            s2 += 1
    if bias_col >= 0:
        s += bias * bias
    return s


# splitmix64 (Steele, Lea, Flood 2014): a tiny seeded generator with a 64-bit state, so that runs are
# reproducible bit for bit from the seed recorded in the model, independent of numpy's generators.
cdef inline uint64_t mix64(uint64_t z) noexcept nogil:
    """splitmix64's finaliser: every input bit moves about half the output bits (also a hash)."""
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline uint64_t splitmix64(uint64_t* state) noexcept nogil:
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    return mix64(state[0])


cdef inline int64_t rand_below(uint64_t* state, int64_t n) noexcept nogil:
    """Uniform integer in [0, n): Lemire's multiply-shift (no division) while n < 2**32."""
    cdef uint64_t r = splitmix64(state)
    if n < <int64_t>4294967296:
        return <int64_t>(((r >> 32) * <uint64_t>n) >> 32)
    return <int64_t>(r % <uint64_t>n)


cdef inline void shuffle(int64_t* a, int64_t n, uint64_t* state) noexcept nogil:
    """a[:n] in a random order: Fisher-Yates, drawing from `state` (every epoch's order)."""
    cdef int64_t i, k, tmp
    for i in range(n - 1, 0, -1):
        k = rand_below(state, i + 1)
        tmp = a[i]
        a[i] = a[k]
        a[k] = tmp
