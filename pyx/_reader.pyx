# svmlight / libsvm text parser: bytes in, CSR arrays out.
#
# Grammar of one line (bytes up to '\n'; whitespace is ' ', '\t', '\r', '\v', '\f'):
#
#     line    := ws* [ target (ws+ head)* (ws+ feature)* ] ws* [ '#' comment ]
#     head    := 'qid:' uint  |  'cost:' float        (each at most once, before the features)
#     feature := uint ':' float                        (indices strictly increasing)
#
# Blank and comment-only lines give no row but count for line numbers. A final line without '\n'
# is parsed only when the caller says the buffer is final.
#
# Everything below runs under `nogil` on a `const char*` buffer: no Python object per line or token.
# Integers are parsed by hand. Floats use Clinger's fast path -- at most 19 significant digits,
# mantissa < 2**53 and a decimal exponent |e| <= 22 give the exact `m * 10**e` (or `m / 10**-e`),
# one correctly rounded IEEE operation on exact operands -- and otherwise fall back to `strtod`
# (C locale) on a NUL-terminated copy of the token, so every value is bit-exact with `strtod`.
#
# Output rows accumulate in malloc'd arrays grown by doubling; `Parser.take()` hands them to numpy
# without copying (an _Owned buffer frees each with the numpy array). numpy is imported by
# `take()`, not with the module: predict's lean path (svmtrain.lean_predict) parses with this
# module and scores the rows where they lie (`predict_parsed`), numpy never imported. Arguments
# are taken through the buffer protocol (_acquire), not typed memoryviews, whose support code
# imports collections.abc when the module loads (3-4 ms of a lean predict's 30).
# On a malformed line the parser stops and records an error code, the line number and the
# offending token's byte span; Python builds the message (`Parser.error_reason`) while the buffer
# is still alive.

from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES,
                             PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer)
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdint cimport int32_t, int64_t, uint64_t, INT32_MAX, INT64_MAX
from libc.stdlib cimport calloc, malloc, qsort, realloc, free
from libc.string cimport memchr, memcpy, memcmp, strlen
from libc.math cimport fabs, isfinite, isnan

from _viterbi cimport _backward, _decode

cdef extern from *:
    """
    #include <stdlib.h>
    #include <locale.h>
    #if defined(__APPLE__)
    #include <xlocale.h>
    #endif
    #include <stdint.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* numpy's hint for a large array (alloc.c): the page-aligned part of the block in huge pages */
    static void svmtrain_advise_huge(void *p, size_t nbytes) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        uintptr_t offset = 4096u - (uintptr_t)p % 4096u;
        if (nbytes > offset)
            madvise((char *)p + offset, nbytes - offset, MADV_HUGEPAGE);
    #else
        (void)p; (void)nbytes;
    #endif
    }
    #if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
    static locale_t svmtrain_c_locale = (locale_t)0;
    static void svmtrain_strtod_init(void) {
        if (!svmtrain_c_locale) svmtrain_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    }
    static double svmtrain_strtod(const char *s, char **end) {
        if (svmtrain_c_locale) return strtod_l(s, end, svmtrain_c_locale);
        return strtod(s, end);
    }
    #else
    static void svmtrain_strtod_init(void) {}
    static double svmtrain_strtod(const char *s, char **end) { return strtod(s, end); }
    #endif
    """
    void svmtrain_strtod_init() nogil
    void svmtrain_advise_huge(void* p, size_t nbytes) nogil
    double svmtrain_strtod(const char* s, char** end) nogil

svmtrain_strtod_init()   # once, at import: the C locale object is shared by all threads

# w * 10^q for a decimal of at most 19 significant digits w (exact in a uint64) and any q, by the
# Eisel-Lemire method (Lemire, "Number Parsing at a Gigabyte per Second", 2021, sec. 5): w, shifted
# to its top bit, times a 128-bit approximation of 5^q (pyx/_pow5_table.h) gives the double's 53
# bits and its rounding bit directly; what the approximation cannot decide (the product's low
# word all ones, a result that may sit on a halfway point), and subnormal or overflowing results,
# it leaves to strtod (returns 0). 17-digit weights, repr's spelling of most doubles, are past
# Clinger's exact path (w < 2^53): strtod took 424 instructions a value, a third of reading a
# model file's weights.
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include "_pow5_table.h"
    #if defined(__SIZEOF_INT128__)
    static int svmtrain_decimal_to_double(uint64_t w, int64_t q, double *out) {
        const uint64_t *t;
        unsigned __int128 p;
        uint64_t hi, lo, hi2, mant, bits;
        int lz, upper;
        int64_t power2;
        if (w == 0 || q < SVMTRAIN_POW5_MIN_Q || q > SVMTRAIN_POW5_MAX_Q) return 0;
        lz = __builtin_clzll(w);
        w <<= lz;
        t = svmtrain_pow5_128[q - SVMTRAIN_POW5_MIN_Q];
        p = (unsigned __int128)w * t[0];
        hi = (uint64_t)(p >> 64);
        lo = (uint64_t)p;
        if ((hi & 0x1FF) == 0x1FF) {          /* the bits below the rounding bit all ones: */
            hi2 = (uint64_t)(((unsigned __int128)w * t[1]) >> 64);  /* the next word decides */
            lo += hi2;
            if (hi2 > lo) hi++;
        }
        if (lo == UINT64_MAX) return 0;
        upper = (int)(hi >> 63);
        mant = hi >> (upper + 9);
        /* floor(q log2(10)) + 63 as (217706 q) >> 16, the exponent's bias 1023 */
        power2 = ((217706 * q) >> 16) + 63 + upper - lz + 1023;
        if (power2 <= 0 || power2 >= 2047) return 0;
        if (lo <= 1 && (mant & 3) == 1) return 0;       /* maybe halfway: round-half-even's */
        mant += mant & 1;
        mant >>= 1;
        if (mant >= (UINT64_C(1) << 53)) {
            mant = UINT64_C(1) << 52;
            power2++;
            if (power2 >= 2047) return 0;
        }
        bits = (mant & ~(UINT64_C(1) << 52)) | ((uint64_t)power2 << 52);
        memcpy(out, &bits, sizeof bits);
        return 1;
    }
    #else
    static int svmtrain_decimal_to_double(uint64_t w, int64_t q, double *out) { return 0; }
    #endif
    """
    int svmtrain_decimal_to_double(uint64_t w, int64_t q, double* out) nogil


# Error codes set by the parser; `Parser.error_reason` turns them into words.
cdef enum:
    OK = 0
    E_NOMEM
    E_NUL
    E_TARGET
    E_TARGET_NAN
    E_TARGET_INF
    E_VALUE
    E_VALUE_NAN
    E_VALUE_INF
    E_NO_VALUE
    E_NO_INDEX
    E_INDEX
    E_INDEX_ZERO
    E_INDEX_NEG
    E_INDEX_ORDER
    E_INDEX_DUP
    E_INDEX_BIG
    E_QID
    E_QID_DUP
    E_COST
    E_COST_DUP
    E_MISPLACED
    E_JUNK

# Results of parse_double.
cdef enum:
    F_OK = 0
    F_SYNTAX      # not a decimal number at all
    F_NAN         # 'nan' spelled out
    F_INF         # 'inf' / 'infinity' spelled out, or a number that overflows

cdef double[23] POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]
cdef uint64_t TWO53 = 1 << 53
cdef int64_t TENTH_INT64_MAX = INT64_MAX // 10


cdef inline bint is_ws(char c) noexcept nogil:
    return c == c' ' or c == c'\t' or c == c'\r' or c == c'\v' or c == c'\f'


cdef inline bint is_end(char c) noexcept nogil:
    # what may follow a complete token on the same line
    return is_ws(c) or c == c'#'


cdef inline bint is_digit(char c) noexcept nogil:
    return <unsigned char>(c - c'0') < 10


cdef inline char lower(char c) noexcept nogil:
    if c >= c'A' and c <= c'Z':
        return c + 32
    return c


cdef inline const char* token_end(const char* p, const char* e) noexcept nogil:
    while p < e and not is_end(p[0]):
        p += 1
    return p


cdef bint spelled(const char* p, const char* e, const char* word) noexcept nogil:
    """[+-]? word, case-insensitive, filling [p, e) exactly."""
    if p < e and (p[0] == c'+' or p[0] == c'-'):
        p += 1
    while word[0] != 0:
        if p == e or lower(p[0]) != word[0]:
            return False
        p += 1
        word += 1
    return p == e


cdef double slow_strtod(const char* s, const char* e) noexcept nogil:
    """strtod on a NUL-terminated copy of [s, e) (already checked to be a decimal number)."""
    cdef char[128] small
    cdef char* tmp = small
    cdef Py_ssize_t n = e - s
    cdef double v
    if n >= 128:
        tmp = <char*> malloc(n + 1)
        if tmp == NULL:
            return 0.0 / 0.0  # NaN: reported as a bad value; only on out-of-memory with a huge token
    memcpy(tmp, s, n)
    tmp[n] = 0
    v = svmtrain_strtod(tmp, NULL)
    if tmp != small:
        free(tmp)
    return v


cdef extern from *:
    """
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    #define SVMTRAIN_LITTLE_ENDIAN 1
    #else
    #define SVMTRAIN_LITTLE_ENDIAN 0
    #endif
    """
    bint LITTLE_ENDIAN "SVMTRAIN_LITTLE_ENDIAN"


cdef inline bint eight_digits(const char* p) noexcept nogil:
    """Whether the 8 bytes at p are all ASCII digits (SWAR: each byte's high nibble is 3 and
    adding 6 does not carry it past 9); False where eight_digits_value's byte order is not the
    machine's."""
    cdef uint64_t x
    if not LITTLE_ENDIAN:
        return False
    memcpy(&x, p, 8)
    return ((x & 0xF0F0F0F0F0F0F0F0ULL) |
            (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) == 0x3333333333333333ULL


cdef inline uint64_t eight_digits_value(const char* p) noexcept nogil:
    """The 8 digits at p as a number, the first the most significant: pairs, then fours, then
    the eight combined by three multiplications (the bytes read in little-endian order)."""
    cdef uint64_t x
    memcpy(&x, p, 8)
    x = ((x & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8
    x = ((x & 0x00FF00FF00FF00FFULL) * 6553601) >> 16
    return ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32


cdef inline int parse_double(const char* s, const char* e, const char** endp, double* out,
                             bint long_fractions=False) noexcept nogil:
    """Parse the longest decimal float `[+-]? digits [. digits] [(e|E) [+-]? digits]` at s.

    *endp is set past the number; the caller checks what follows. Returns F_OK, F_SYNTAX, F_NAN or
    F_INF (a spelled-out or overflowing infinity). `long_fractions`: the caller expects fractions
    of 16 digits or more (a model's weights, written as repr writes them), read eight digits at a
    time; a data file's values are shorter, and the test would cost each of them more than it
    saves (ijcnn1.t: 7% of its reading).
    """
    cdef const char* p = s
    cdef const char* q
    cdef bint neg = False, eneg = False, slow = False, digits = False
    cdef uint64_t m = 0
    cdef int nd = 0
    cdef int64_t exp10 = 0, ev = 0
    cdef double v

    if p < e and (p[0] == c'+' or p[0] == c'-'):
        neg = p[0] == c'-'
        p += 1
    # (leading zeros skipped in a loop of their own: the digit loops then test nothing but the
    # digit and the count, the reader's hottest loop)
    q = p
    while p < e and p[0] == c'0':
        p += 1
    while p < e and is_digit(p[0]):
        if nd < 19:
            m = m * 10 + (p[0] - c'0')
            nd += 1
        else:
            slow = True                 # more than 19 significant digits: let strtod round
        p += 1
    digits = p > q
    if p < e and p[0] == c'.':
        p += 1
        q = p
        if nd == 0:                     # zeros after the point and before the first digit
            while p < e and p[0] == c'0':
                p += 1
            exp10 -= p - q
        # eight digits at a time while they fit the 19 (a weight's 17 are two such and one)
        while long_fractions and nd <= 11 and e - p >= 8 and eight_digits(p):
            m = m * 100000000 + eight_digits_value(p)
            nd += 8
            exp10 -= 8
            p += 8
        while p < e and is_digit(p[0]):
            if nd < 19:
                m = m * 10 + (p[0] - c'0')
                nd += 1
                exp10 -= 1
            else:
                slow = True
            p += 1
        digits = digits or p > q
    if not digits:
        endp[0] = token_end(s, e)
        if spelled(s, endp[0], b"nan"):
            return F_NAN
        if spelled(s, endp[0], b"inf") or spelled(s, endp[0], b"infinity"):
            return F_INF
        return F_SYNTAX
    if p < e and (p[0] == c'e' or p[0] == c'E'):
        q = p + 1
        if q < e and (q[0] == c'+' or q[0] == c'-'):
            eneg = q[0] == c'-'
            q += 1
        if q < e and is_digit(q[0]):    # else: 'e' is not part of the number (caller rejects it)
            while q < e and is_digit(q[0]):
                if ev < 100000:         # beyond that the value is 0 or inf either way (strtod decides)
                    ev = ev * 10 + (q[0] - c'0')
                q += 1
            exp10 += -ev if eneg else ev
            p = q
    endp[0] = p

    if m == 0:
        out[0] = -0.0 if neg else 0.0
        return F_OK
    if not slow and m < TWO53 and -22 <= exp10 <= 22:
        v = <double> m                  # exact: m < 2**53
        if exp10 < 0:
            v = v / POW10[-exp10]
        else:
            v = v * POW10[exp10]
        out[0] = -v if neg else v
        return F_OK
    if not slow and svmtrain_decimal_to_double(m, exp10, &v):
        out[0] = -v if neg else v
        return F_OK
    v = slow_strtod(s, p)
    out[0] = v
    if not isfinite(v):
        return F_NAN if isnan(v) else F_INF
    return F_OK


cdef inline int parse_uint(const char* s, const char* e, const char** endp, int64_t* out) noexcept nogil:
    """Digits at s as a non-negative int64. Returns 0 ok, 1 no digits, 2 overflow (endp past digits)."""
    cdef const char* p = s
    cdef int64_t v = 0
    cdef int d
    cdef bint big = False
    while p < e and is_digit(p[0]):
        d = p[0] - c'0'
        # v * 10 + d <= INT64_MAX = TENTH_INT64_MAX * 10 + 7, in one comparison mostly
        if v >= TENTH_INT64_MAX and (v > TENTH_INT64_MAX or d > 7):
            big = True
        else:
            v = v * 10 + d
        p += 1
    endp[0] = p
    out[0] = v
    if p == s:
        return 1
    return 2 if big else 0


cdef class _Owned:
    """n items at a malloc'd pointer, exported as a writable buffer of `format` (b"d" doubles,
    b"q" int64s, b"i" int32s) and freed with the last object that views it (the numpy arrays of
    `take`, the buffers of `take_buffers`, the weights of `zeros`)."""
    cdef void* ptr
    cdef Py_ssize_t n
    cdef Py_ssize_t itemsize
    cdef const char* format
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __getbuffer__(self, Py_buffer* view, int flags):
        # what the request asks for and no more: the format only with PyBUF_FORMAT, the shape with
        # PyBUF_ND, the strides with PyBUF_STRIDES (numpy's frombuffer asks for bytes alone)
        self.shape[0] = self.n
        self.strides[0] = self.itemsize
        view.buf = self.ptr
        view.obj = self
        view.len = self.n * self.itemsize
        view.readonly = 0
        view.itemsize = self.itemsize
        view.format = NULL
        if flags & PyBUF_FORMAT:
            view.format = <char*> self.format
        view.ndim = 1
        view.shape = self.shape if (flags & PyBUF_ND) == PyBUF_ND else NULL
        view.strides = self.strides if (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        free(self.ptr)


cdef _Owned _owned(void* ptr, Py_ssize_t n, char kind=c'd'):
    """An _Owned of n items of `kind`: c'd' doubles, c'q' int64s, c'i' int32s."""
    cdef _Owned owner = _Owned.__new__(_Owned)
    owner.ptr = ptr
    owner.n = n
    owner.itemsize = 4 if kind == c'i' else 8
    owner.format = b"i" if kind == c'i' else b"q" if kind == c'q' else b"d"
    return owner


cdef _Owned _shrunk(void* ptr, Py_ssize_t n, char kind):
    """_owned, the spare capacity given back (as _hand_over)."""
    cdef void* q
    if ptr != NULL and n > 0:
        q = realloc(ptr, n * (4 if kind == c'i' else 8))
        if q != NULL:
            ptr = q
    return _owned(ptr, n, kind)


cdef object _hand_over(void* ptr, Py_ssize_t n, object dtype):
    """A 1-d numpy array of `dtype` (8-byte items) owning the malloc'd `ptr` (n items): ptr is
    freed with the array."""
    import numpy as np
    if ptr == NULL or n == 0:
        free(ptr)
        return np.empty(0, dtype=dtype)
    return np.frombuffer(_shrunk(ptr, n, c'd'), dtype=dtype)   # (8-byte items; numpy reads bytes)


cdef int _acquire(object obj, Py_buffer* view, char kind, int ndim, bint writable,
                  const char* what) except -1:
    """obj's buffer in `view` (released by the caller): C-contiguous, `ndim` dimensions, items of
    `kind`: b'B' bytes, b'd' doubles, b'q' int64s. A ValueError naming `what` otherwise."""
    cdef int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (PyBUF_WRITABLE if writable else 0)
    cdef const char* f
    cdef bint ok
    if obj is None:
        raise TypeError(f"{what.decode()}: a buffer is needed, not None")
    PyObject_GetBuffer(obj, view, flags)
    f = view.format
    if f == NULL:
        f = b"B"
    if f[0] in b"@=<":          # native or little-endian: the machines these wheels are built for
        f += 1
    if kind == c'B':
        ok = view.itemsize == 1 and f[0] in b"Bbc"
    elif kind == c'd':
        ok = view.itemsize == 8 and f[0] == c'd'
    else:
        ok = view.itemsize == 8 and f[0] in b"lq"
    ok = ok and f[1] == 0 and view.ndim == ndim
    if not ok:
        PyBuffer_Release(view)
        raise ValueError(f"{what.decode()}: a contiguous {ndim}-d buffer of "
                         f"{ {c'B': 'bytes', c'd': 'float64', c'q': 'int64'}[kind]} is needed")
    return 0


cdef class Parser:
    """Incremental svmlight parser. Feed it buffers of complete lines with `parse`; `take` the rows.

    Parser(zero_based, first_line, int32_columns=False): `first_line` is the 1-based number of the
    first line fed; with `int32_columns` the column indices are stored as int32s while every one
    fits (take_buffers hands them over so: the lean train's kernels read int32 columns, and the
    int64s were a third of the parse's peak), as int64s from the first that does not.
    """
    cdef bint zero_based
    cdef public int64_t line_no         # number of the next line to parse
    # rows
    cdef int64_t* indptr
    cdef double* target
    cdef int64_t* qid
    cdef double* cost
    cdef int64_t* line
    cdef Py_ssize_t n_rows, row_cap
    # nonzeros: their columns in `indices`, or in `indices32` while a parser made with
    # int32_columns has seen none past INT32_MAX (`narrow`)
    cdef int64_t* indices
    cdef int32_t* indices32
    cdef bint int32_columns, narrow
    cdef double* data
    cdef Py_ssize_t nnz, nnz_cap
    cdef int64_t max_col
    # last error
    cdef public int err_code
    cdef public int64_t err_line
    cdef public Py_ssize_t err_start, err_end     # token span, relative to the buffer parsed
    cdef public int64_t err_a, err_b

    def __cinit__(self, bint zero_based=False, int64_t first_line=1, bint int32_columns=False):
        self.zero_based = zero_based
        self.line_no = first_line
        self.int32_columns = int32_columns
        self.err_code = OK
        self._reset()

    def __dealloc__(self):
        free(self.indptr); free(self.target); free(self.qid); free(self.cost); free(self.line)
        free(self.indices); free(self.indices32); free(self.data)

    cdef void _reset(self) noexcept:
        self.indptr = NULL; self.target = NULL; self.qid = NULL; self.cost = NULL; self.line = NULL
        self.indices = NULL; self.indices32 = NULL; self.data = NULL
        self.narrow = self.int32_columns
        self.n_rows = 0; self.row_cap = 0; self.nnz = 0; self.nnz_cap = 0
        self.max_col = -1

    @property
    def n_rows(self):
        return self.n_rows

    @property
    def nnz(self):
        return self.nnz

    cdef int _grow_rows(self) noexcept nogil:
        cdef Py_ssize_t c = self.row_cap * 2 if self.row_cap > 0 else 1024
        cdef void* p
        p = realloc(self.target, c * sizeof(double))
        if p == NULL: return E_NOMEM
        self.target = <double*> p
        p = realloc(self.qid, c * sizeof(int64_t))
        if p == NULL: return E_NOMEM
        self.qid = <int64_t*> p
        p = realloc(self.cost, c * sizeof(double))
        if p == NULL: return E_NOMEM
        self.cost = <double*> p
        p = realloc(self.line, c * sizeof(int64_t))
        if p == NULL: return E_NOMEM
        self.line = <int64_t*> p
        p = realloc(self.indptr, (c + 1) * sizeof(int64_t))
        if p == NULL: return E_NOMEM
        self.indptr = <int64_t*> p
        self.row_cap = c
        return OK

    cdef int _grow_nnz(self) noexcept nogil:
        cdef Py_ssize_t c = self.nnz_cap * 2 if self.nnz_cap > 0 else 4096
        cdef void* p
        if self.narrow:
            p = realloc(self.indices32, c * sizeof(int32_t))
            if p == NULL: return E_NOMEM
            self.indices32 = <int32_t*> p
        else:
            p = realloc(self.indices, c * sizeof(int64_t))
            if p == NULL: return E_NOMEM
            self.indices = <int64_t*> p
        p = realloc(self.data, c * sizeof(double))
        if p == NULL: return E_NOMEM
        self.data = <double*> p
        self.nnz_cap = c
        return OK

    cdef int _int64_columns(self) except -1:
        """The columns as int64s from here on, for the readers of `indices`."""
        if self._widen() != OK:
            raise MemoryError()
        return 0

    cdef int _widen(self) noexcept nogil:
        """The columns stored so far as int64s (a column past INT32_MAX, or a caller that reads
        int64s): `narrow` no longer."""
        cdef int64_t* wide
        cdef Py_ssize_t k
        if not self.narrow:
            return OK
        wide = <int64_t*> malloc(max(self.nnz_cap, 1) * sizeof(int64_t))
        if wide == NULL: return E_NOMEM
        for k in range(self.nnz):
            wide[k] = self.indices32[k]
        free(self.indices32)
        self.indices32 = NULL
        self.indices = wide
        self.narrow = False
        return OK

    cdef int _fail(self, int code, const char* buf, const char* s, const char* e,
                   const char* ts, const char* te, int64_t a, int64_t b) noexcept nogil:
        """Record an error on the line [s, e) at token [ts, te). A NUL byte anywhere wins."""
        cdef const char* z = <const char*> memchr(s, 0, e - s)
        if z != NULL:
            code = E_NUL
            ts = z
            te = z + 1
            a = z - s + 1               # 1-based column
        self.err_code = code
        self.err_line = self.line_no
        self.err_start = ts - buf
        self.err_end = te - buf
        self.err_a = a
        self.err_b = b
        return code

    cdef int _line(self, const char* buf, const char* s, const char* e) noexcept nogil:
        """Parse one line [s, e) (no '\n'). Appends at most one row."""
        cdef const char* p = s
        cdef const char* t
        cdef const char* q
        cdef double y, v, c = 1.0
        cdef int64_t qd = -1, idx, col, prev = -1, prev_idx = 0
        cdef bint have_qid = False, have_cost = False
        cdef int r
        cdef Py_ssize_t row_start = self.nnz

        while p < e and is_ws(p[0]):
            p += 1
        if p == e or p[0] == c'#':
            if memchr(p, 0, e - p) != NULL:
                return self._fail(E_NUL, buf, s, e, p, e, 0, 0)
            return OK

        # target
        t = p
        r = parse_double(t, e, &p, &y)
        if r == F_OK and p < e and not is_end(p[0]):
            r = F_SYNTAX
        if r != F_OK:
            q = token_end(t, e)
            return self._fail(E_TARGET if r == F_SYNTAX else (E_TARGET_NAN if r == F_NAN else E_TARGET_INF),
                              buf, s, e, t, q, 0, 0)

        # qid: / cost:, in either order, before the features
        while True:
            while p < e and is_ws(p[0]):
                p += 1
            if e - p >= 4 and memcmp(p, b"qid:", 4) == 0:
                t = p
                if have_qid:
                    return self._fail(E_QID_DUP, buf, s, e, t, token_end(t, e), 0, 0)
                r = parse_uint(t + 4, e, &p, &qd)
                if r != 0 or (p < e and not is_end(p[0])):
                    return self._fail(E_QID, buf, s, e, t, token_end(t, e), 0, 0)
                have_qid = True
            elif e - p >= 5 and memcmp(p, b"cost:", 5) == 0:
                t = p
                if have_cost:
                    return self._fail(E_COST_DUP, buf, s, e, t, token_end(t, e), 0, 0)
                r = parse_double(t + 5, e, &p, &c)
                if r != F_OK or (p < e and not is_end(p[0])) or not (c > 0.0):
                    return self._fail(E_COST, buf, s, e, t, token_end(t, e), 0, 0)
                have_cost = True
            else:
                break

        # features
        while True:
            while p < e and is_ws(p[0]):
                p += 1
            if p == e:
                break
            if p[0] == c'#':
                if memchr(p, 0, e - p) != NULL:
                    return self._fail(E_NUL, buf, s, e, p, e, 0, 0)
                break
            t = p
            r = parse_uint(t, e, &p, &idx)
            if r == 1:                              # no digits
                q = token_end(t, e)
                if t[0] == c':':
                    return self._fail(E_NO_INDEX, buf, s, e, t, q, 0, 0)
                if (q - t >= 4 and memcmp(t, b"qid:", 4) == 0) or (q - t >= 5 and memcmp(t, b"cost:", 5) == 0):
                    return self._fail(E_MISPLACED, buf, s, e, t, q, 0, 0)
                if t[0] == c'-' and t + 1 < q and is_digit(t[1]) and memchr(t, c':', q - t) != NULL:
                    return self._fail(E_INDEX_NEG, buf, s, e, t, q, 0, 0)
                if memchr(t, c':', q - t) != NULL:
                    return self._fail(E_INDEX, buf, s, e, t, q, 0, 0)
                return self._fail(E_JUNK, buf, s, e, t, q, 0, 0)
            if p == e or p[0] != c':':
                q = token_end(t, e)
                if memchr(p, c':', q - p) != NULL:   # e.g. '1.5:2', '3x:1'
                    return self._fail(E_INDEX, buf, s, e, t, q, 0, 0)
                return self._fail(E_JUNK, buf, s, e, t, q, 0, 0)   # e.g. '3', '3abc'
            if r == 2:
                return self._fail(E_INDEX_BIG, buf, s, e, t, token_end(t, e), 0, 0)
            p += 1                                   # ':'
            if p == e or is_end(p[0]):
                return self._fail(E_NO_VALUE, buf, s, e, t, p, 0, 0)
            q = p
            r = parse_double(q, e, &p, &v)
            if r == F_OK and p < e and not is_end(p[0]):
                r = F_SYNTAX
            if r != F_OK:
                p = token_end(q, e)
                if r == F_SYNTAX and memchr(q, c':', p - q) != NULL:
                    return self._fail(E_JUNK, buf, s, e, t, p, 0, 0)   # '3:4:5'
                return self._fail(E_VALUE if r == F_SYNTAX else (E_VALUE_NAN if r == F_NAN else E_VALUE_INF),
                                  buf, s, e, t, p, q - t, 0)
            if self.zero_based:
                col = idx
                if col == INT64_MAX:                 # n_features = col + 1 must fit
                    return self._fail(E_INDEX_BIG, buf, s, e, t, p, 0, 0)
            else:
                if idx == 0:
                    return self._fail(E_INDEX_ZERO, buf, s, e, t, p, 0, 0)
                col = idx - 1
            if col <= prev:
                return self._fail(E_INDEX_DUP if col == prev else E_INDEX_ORDER,
                                  buf, s, e, t, p, idx, prev_idx)
            prev = col
            prev_idx = idx
            if self.nnz == self.nnz_cap and self._grow_nnz() != OK:
                return self._fail(E_NOMEM, buf, s, e, t, p, 0, 0)
            if self.narrow and col > INT32_MAX and self._widen() != OK:
                return self._fail(E_NOMEM, buf, s, e, t, p, 0, 0)
            if self.narrow:
                self.indices32[self.nnz] = <int32_t> col
            else:
                self.indices[self.nnz] = col
            self.data[self.nnz] = v
            self.nnz += 1

        if prev > self.max_col:
            self.max_col = prev
        if self.n_rows == self.row_cap and self._grow_rows() != OK:
            self.nnz = row_start
            return self._fail(E_NOMEM, buf, s, e, s, s, 0, 0)
        if self.n_rows == 0:
            self.indptr[0] = 0
        self.target[self.n_rows] = y
        self.qid[self.n_rows] = qd
        self.cost[self.n_rows] = c
        self.line[self.n_rows] = self.line_no
        self.n_rows += 1
        self.indptr[self.n_rows] = self.nnz
        return OK

    cdef int _parse(self, const char* buf, Py_ssize_t n, bint final, Py_ssize_t limit,
                    Py_ssize_t* consumed, bint* done) noexcept nogil:
        cdef Py_ssize_t pos = 0, le, nxt
        cdef const char* nl
        cdef int r
        done[0] = False
        while True:
            if pos >= limit:
                done[0] = True
                break
            if pos >= n:
                break
            nl = <const char*> memchr(buf + pos, c'\n', n - pos)
            if nl == NULL:
                if not final:
                    break
                le = n
                nxt = n
            else:
                le = nl - buf
                nxt = le + 1
            r = self._line(buf, buf + pos, buf + le)
            if r != OK:
                consumed[0] = pos
                return r
            self.line_no += 1
            pos = nxt
        consumed[0] = pos
        return OK

    def parse(self, buf, bint final=False, limit=None):
        """Parse the complete lines at the start of `buf` (and, if `final`, a last unterminated one).

        Lines starting at or after byte `limit` are left alone. Returns (consumed, done, error):
        consumed = bytes of the lines parsed, done = the limit was reached, error = the error code
        (0 = none; the details are in err_* and `error_reason(buf)`).
        """
        cdef Py_buffer b
        cdef Py_ssize_t n, consumed = 0, lim
        cdef bint done = False
        cdef int r
        cdef const char* p = b""
        _acquire(buf, &b, c'B', 1, False, b"Parser.parse")
        try:
            n = b.len
            lim = n + 1 if limit is None else max(0, min(<Py_ssize_t> limit, n + 1))
            if n > 0:
                p = <const char*> b.buf
            with nogil:
                r = self._parse(p, n, final, lim, &consumed, &done)
        finally:
            PyBuffer_Release(&b)
        return consumed, done, r

    cdef int _indptr_for_take(self) except -1:
        """No rows yet: indptr becomes [0], as a take hands it over."""
        cdef int64_t* ip
        if self.n_rows == 0:
            free(self.indptr)
            ip = <int64_t*> malloc(sizeof(int64_t))
            if ip == NULL:
                raise MemoryError()
            ip[0] = 0
            self.indptr = ip
        return 0

    def take(self):
        """The rows parsed since the last take, as numpy arrays (ownership passes to numpy):
        (indptr, indices, data, target, qid, cost, line, n_features)."""
        self._indptr_for_take()
        self._int64_columns()
        import numpy as np
        out = (
            _hand_over(self.indptr, self.n_rows + 1, np.int64),
            _hand_over(self.indices, self.nnz, np.int64),
            _hand_over(self.data, self.nnz, np.float64),
            _hand_over(self.target, self.n_rows, np.float64),
            _hand_over(self.qid, self.n_rows, np.int64),
            _hand_over(self.cost, self.n_rows, np.float64),
            _hand_over(self.line, self.n_rows, np.int64),
            int(self.max_col + 1),
        )
        self._reset()
        return out

    def take_buffers(self):
        """`take` without numpy (`train`'s lean path, svmtrain.lean_train): the same arrays as
        buffers of int64s ('q': indptr, indices, qid, line) and doubles ('d': data, target,
        cost), each freed with the last object that views it; the column indices are int32s
        ('i') where the parser was made with int32_columns and none is past INT32_MAX."""
        self._indptr_for_take()
        out = (
            _shrunk(self.indptr, self.n_rows + 1, c'q'),
            (_shrunk(self.indices32, self.nnz, c'i') if self.narrow else
             _shrunk(self.indices, self.nnz, c'q')),
            _shrunk(self.data, self.nnz, c'd'),
            _shrunk(self.target, self.n_rows, c'd'),
            _shrunk(self.qid, self.n_rows, c'q'),
            _shrunk(self.cost, self.n_rows, c'd'),
            _shrunk(self.line, self.n_rows, c'q'),
            int(self.max_col + 1),
        )
        self._reset()
        return out

    def error_reason(self, buf):
        """Words for the last error; `buf` is the buffer that was being parsed."""
        buf = memoryview(buf)
        code = self.err_code
        tok = _show(bytes(buf[self.err_start:self.err_end]))
        a, b = self.err_a, self.err_b
        if code == E_NOMEM:
            return "out of memory"
        if code == E_NUL:
            return f"nul byte at column {a}"
        if code == E_TARGET:
            return f"expected a number as target, got {tok}"
        if code == E_TARGET_NAN:
            return f"target is nan: {tok}"
        if code == E_TARGET_INF:
            return f"target is infinite: {tok}"
        if code in (E_VALUE, E_VALUE_NAN, E_VALUE_INF):
            val = _show(bytes(buf[self.err_start + a:self.err_end]))
            what = {E_VALUE: "expected a number as value, got", E_VALUE_NAN: "value is nan:",
                    E_VALUE_INF: "value is infinite:"}[code]
            return f"{what} {val} in {tok}"
        if code == E_NO_VALUE:
            return f"value missing after {tok}"
        if code == E_NO_INDEX:
            return f"index missing in {tok}"
        if code == E_INDEX:
            return f"index is not an integer in {tok}"
        if code == E_INDEX_ZERO:
            return f"index 0 in {tok}, but indices are 1-based (use zero-based indexing)"
        if code == E_INDEX_NEG:
            return f"negative index in {tok}"
        if code == E_INDEX_ORDER:
            return f"index {a} after {b}: indices must be strictly increasing"
        if code == E_INDEX_DUP:
            return f"duplicate index {a}"
        if code == E_INDEX_BIG:
            return f"index too large for 64 bits in {tok}"
        if code == E_QID:
            return f"bad qid {tok}: expected a non-negative integer"
        if code == E_QID_DUP:
            return f"duplicate qid {tok}"
        if code == E_COST:
            return f"bad cost {tok}: expected a positive finite number"
        if code == E_COST_DUP:
            return f"duplicate cost {tok}"
        if code == E_MISPLACED:
            return f"{tok} must come right after the target, before the features"
        if code == E_JUNK:
            return f"expected index:value, got {tok}"
        return f"parse error {code}"


def _show(bytes tok):
    """A token for an error message: quoted, non-UTF-8 escaped, long ones cut."""
    s = tok.decode("utf-8", "backslashreplace")
    if len(s) > 40:
        s = s[:37] + "..."
    return "'" + s + "'"


def count_newlines(buf):
    """Number of b'\\n' in buf (a vectorisable loop, no GIL)."""
    cdef Py_buffer b
    cdef Py_ssize_t i, k = 0
    cdef const unsigned char* p
    _acquire(buf, &b, c'B', 1, False, b"count_newlines")
    p = <const unsigned char*> b.buf
    with nogil:
        for i in range(b.len):
            k += p[i] == 10
    PyBuffer_Release(&b)
    return k


def parse_float(bytes s, bint long_fractions=False):
    """Parse one token with the reader's float parser (for tests): float, or ValueError;
    `long_fractions` as the model reader reads its weights."""
    cdef const char* p = s
    cdef const char* e = p + len(s)
    cdef const char* end
    cdef double v = 0.0
    cdef int r = parse_double(p, e, &end, &v, long_fractions)
    if r != F_OK or end != e:
        raise ValueError(f"not a finite decimal number: {s!r}")
    return v


def weight_lines(buf, Py_ssize_t pos, bint final, Py_ssize_t n_lines, bint sparse, w, int64_t at,
                 int64_t rows=1):
    """The body of a model's `weights` section, one weight per line, parsed in place (the model
    reader's fast path: no Python object per line).

    Dense lines are `ws* float ws*`, stored at w[at], w[at + 1], ...; sparse lines are
    `ws* index ':' float ws*` with indices increasing past `at` (the previous index, -1 at first)
    and below w's size, stored at w[index]. Lines are parsed from byte `pos` of `buf` while there
    are complete lines ('\\n'-terminated, or the rest of the buffer when `final`) and fewer than
    `n_lines` done. With `rows` > 1 the file's row-major rows x width matrix is stored transposed
    (the weight of flat index i = r * width + j at w[j * rows + r]). Returns (lines done, byte position after them, at after them, stopped): stopped
    is True when the line at the returned position is not of that simple form (or out of range or
    order, or not finite): the caller's own checks then accept it or say what is wrong.
    """
    cdef Py_buffer text, weights
    _acquire(buf, &text, c'B', 1, False, b"weight_lines")
    try:
        _acquire(w, &weights, c'd', 1, True, b"weight_lines")
        try:
            return _weight_lines(<const char*> text.buf, text.len, pos, final, n_lines, sparse,
                                 <double*> weights.buf, weights.len // 8, at, rows)
        finally:
            PyBuffer_Release(&weights)
    finally:
        PyBuffer_Release(&text)


cdef tuple _weight_lines(const char* base, Py_ssize_t end, Py_ssize_t pos, bint final,
                         Py_ssize_t n_lines, bint sparse, double* w, Py_ssize_t size, int64_t at,
                         int64_t rows):
    cdef Py_ssize_t done = 0
    cdef int64_t width = size // rows if rows > 0 else size
    cdef const char* p
    cdef const char* e
    cdef const char* q
    cdef const unsigned char* nl
    cdef int64_t index
    cdef double v
    cdef bint stopped = False
    if end == 0 or n_lines <= 0:
        return 0, pos, at, False
    with nogil:
        while done < n_lines and pos < end:
            nl = <const unsigned char*> memchr(base + pos, 10, end - pos)
            if nl == NULL and not final:
                break
            p = base + pos
            e = <const char*> nl if nl != NULL else base + end
            while p < e and is_ws(p[0]):
                p += 1
            if sparse:
                if parse_uint(p, e, &q, &index) != 0 or q == e or q[0] != c':' \
                        or index <= at or index >= size:
                    stopped = True
                    break
                p = q + 1
            elif at + 1 >= size:
                stopped = True
                break
            else:
                index = at + 1
            if parse_double(p, e, &q, &v, True) != F_OK:
                stopped = True
                break
            while q < e and is_ws(q[0]):
                q += 1
            if q != e:
                stopped = True
                break
            if rows > 1:
                w[(index % width) * rows + index // width] = v
            else:
                w[index] = v
            at = index
            done += 1
            pos = (e - base) + 1 if nl != NULL else end
    return done, pos, at, stopped



# ---------------------------------------------------------------------------------------------
# The numbers of model files and of predict's output: repr(x) without a Python float per value.
#
# repr(x) is the shortest decimal that reads back to x (of several, the closest to x; of two as
# close, the even one). CPython finds it with David Gay's dtoa, about 0.5 us a value: 1.1 s of the
# 1.5 s that writing sector's multiclass model took. Here it is found as in Giulietti's Schubfach
# ("The Schubfach way to render doubles", 2020), in 64-bit integer arithmetic (without Java's rule
# of two digits at least, which repr does not have: 5e-324, not 4.9e-324):
#   - x = c 2^q (c < 2^53). Its rounding interval is R = [c - 1/2, c + 1/2] 2^q, or
#     [c - 1/4, c + 1/2] 2^q when c = 2^52 and the neighbour below is closer; R is closed when c
#     is even (round-half-even reads the ends back to x), open when odd;
#   - k is the largest integer with 10^k <= the width of R, so R is 1 to 10 units 10^k wide:
#     it holds at most one multiple of 10^(k+1), which when there is the shortest (its trailing
#     zeros dropped); otherwise s 10^k or (s + 1) 10^k with s = floor(x / 10^k), whichever lies
#     in R, or the closer to x when both do;
#   - x / 10^k is c 2^q 10^-k, with 10^-k = g 2^r for a 126-bit integer g = floor(10^-k 2^-r) + 1
#     (a table by k, pyx/_repr_table.h). The product is rounded to odd on four times the scale,
#     where the paper proves every comparison with R's ends and the candidates exact.
# CPython's 'r' format then lays the digits out: exponent form when the decimal point would be
# more than 16 places right of the first digit or 4 or more left of it, a trailing ".0" on a
# whole number. tests/test_model_text.py compares the two on 600,000 bit patterns.

cdef extern from *:
    """
    static inline uint64_t svmtrain_mulhi64(uint64_t a, uint64_t b) {
        return (uint64_t) (((unsigned __int128) a * b) >> 64);
    }
    """
    uint64_t mulhi64 "svmtrain_mulhi64"(uint64_t a, uint64_t b) nogil

cdef enum:
    K_MIN = -324        # floor(log10) of the narrowest interval (the subnormals')
    K_MAX = 292         # and of the widest (the largest doubles')
    Q_MIN = -1074
    MAX_REPR = 26       # '-', 17 digits, '.', "e-308" and spare

cdef uint64_t C_MIN = 0x10000000000000ULL
cdef uint64_t MASK63 = 0x7FFFFFFFFFFFFFFFULL
cdef extern from "_repr_table.h":
    # g_k split as G1 2^63 + G0, k = K_MIN..K_MAX (generated by pyx/make_repr_table.py)
    const uint64_t G1 "svmtrain_repr_g1"[]
    const uint64_t G0 "svmtrain_repr_g0"[]


cdef inline int floor_log10_pow2(int q) noexcept nogil:
    return <int> ((<int64_t> q * 661971961083LL) >> 41)      # exact for every double's q (tests)


cdef inline int floor_log10_three_quarters_pow2(int q) noexcept nogil:
    return <int> ((<int64_t> q * 661971961083LL - 274743187321LL) >> 41)


cdef inline int floor_log2_pow10(int e) noexcept nogil:
    return <int> ((<int64_t> e * 913124641741LL) >> 38)


cdef inline uint64_t times_10_pow(uint64_t g1, uint64_t g0, uint64_t cp) noexcept nogil:
    """floor(g cp / 2^127) rounded to odd (its last bit set when the part cut off is not 0)."""
    cdef uint64_t x1 = mulhi64(g0, cp)
    cdef uint64_t y0 = g1 * cp
    cdef uint64_t y1 = mulhi64(g1, cp)
    cdef uint64_t z = (y0 >> 1) + x1
    return (y1 + (z >> 63)) | (((z & MASK63) + MASK63) >> 63)


cdef uint64_t shortest(uint64_t c, int q, int* k_out) noexcept nogil:
    """The shortest decimal f 10^k in c 2^q's rounding interval, the closest of them (c > 0)."""
    cdef uint64_t odd = c & 1
    cdef uint64_t cb = c << 2, cbl, cbr = (c << 2) + 2
    cdef uint64_t g1, g0, vb, vbl, vbr, s, t, sp10, tp10
    cdef int k, h
    cdef int64_t beyond
    cdef bint upin, wpin, uin, win
    if c != C_MIN or q == Q_MIN:
        cbl = cb - 2
        k = floor_log10_pow2(q)
    else:
        cbl = cb - 1
        k = floor_log10_three_quarters_pow2(q)
    h = q + floor_log2_pow10(-k) + 2            # 2..8: cb << h stays below 2^63
    g1 = G1[k - K_MIN]
    g0 = G0[k - K_MIN]
    vb = times_10_pow(g1, g0, cb << h)          # 4 x / 10^k and R's ends, rounded to odd
    vbl = times_10_pow(g1, g0, cbl << h)
    vbr = times_10_pow(g1, g0, cbr << h)
    k_out[0] = k
    s = vb >> 2
    sp10 = s // 10 * 10                         # the multiples of 10^(k+1) around x
    tp10 = sp10 + 10
    upin = vbl + odd <= sp10 << 2
    wpin = (tp10 << 2) + odd <= vbr
    if upin != wpin:
        return sp10 if upin else tp10
    t = s + 1
    uin = vbl + odd <= s << 2
    win = (t << 2) + odd <= vbr
    if uin != win:
        return s if uin else t
    beyond = <int64_t> vb - <int64_t> ((s + t) << 1)  # 4 x / 10^k against s + 1/2, doubled
    return s if beyond < 0 or (beyond == 0 and (s & 1) == 0) else t


cdef Py_ssize_t put_repr(char* out, double x) noexcept nogil:
    """repr(x) at out (at most MAX_REPR characters); returns its length."""
    cdef uint64_t bits, c, f
    cdef int q, k, n_digits = 0, point, i, exponent
    cdef Py_ssize_t n = 0
    cdef char[24] digits
    memcpy(&bits, &x, 8)
    c = bits & (C_MIN - 1)
    q = <int> ((bits >> 52) & 0x7ff)
    if q == 0x7ff and c != 0:
        memcpy(out, b"nan", 3)                   # repr drops a nan's sign
        return 3
    if bits >> 63:
        out[0] = c'-'
        n = 1
    if q == 0x7ff:
        memcpy(out + n, b"inf", 3)
        return n + 3
    if q == 0 and c == 0:
        memcpy(out + n, b"0.0", 3)
        return n + 3
    if q != 0:
        c |= C_MIN
        q -= 1075
    else:
        q = Q_MIN
    f = shortest(c, q, &k)
    while f % 10 == 0:
        f //= 10
        k += 1
    while f != 0:                                # the digits, last first
        digits[n_digits] = <char> (48 + f % 10)
        f //= 10
        n_digits += 1
    point = n_digits + k                         # x = 0.d1 d2 ... 10^point
    if point <= -4 or point > 16:
        out[n] = digits[n_digits - 1]
        n += 1
        if n_digits > 1:
            out[n] = c'.'
            n += 1
            for i in range(n_digits - 2, -1, -1):
                out[n] = digits[i]
                n += 1
        exponent = point - 1
        out[n] = c'e'
        out[n + 1] = c'-' if exponent < 0 else c'+'
        n += 2
        if exponent < 0:
            exponent = -exponent
        if exponent >= 100:
            out[n] = <char> (48 + exponent // 100)
            n += 1
        out[n] = <char> (48 + exponent // 10 % 10)
        out[n + 1] = <char> (48 + exponent % 10)
        return n + 2
    if point <= 0:
        out[n] = c'0'
        out[n + 1] = c'.'
        n += 2
        for i in range(-point):
            out[n] = c'0'
            n += 1
        for i in range(n_digits - 1, -1, -1):
            out[n] = digits[i]
            n += 1
        return n
    for i in range(n_digits):
        if i == point:
            out[n] = c'.'
            n += 1
        out[n] = digits[n_digits - 1 - i]
        n += 1
    if point >= n_digits:
        for i in range(point - n_digits):
            out[n] = c'0'
            n += 1
        out[n] = c'.'
        out[n + 1] = c'0'
        n += 2
    return n


cdef inline Py_ssize_t put_index(char* out, int64_t j) noexcept nogil:
    """j >= 0 in decimal at out; returns its length (at most 19)."""
    cdef char[20] digits
    cdef Py_ssize_t n = 0, i
    while True:
        digits[n] = <char> (48 + j % 10)
        n += 1
        j //= 10
        if j == 0:
            break
    for i in range(n):
        out[i] = digits[n - 1 - i]
    return n


def float_repr(double x):
    """repr(x) as the writers here make it (for tests)."""
    cdef char[MAX_REPR] out
    return out[:put_repr(out, x)].decode("ascii")


cdef char* text_buffer(Py_ssize_t size) except NULL:
    """A malloc'd buffer for the text of weight_text and float_rows."""
    cdef char* buf
    buf = <char*> malloc(size)
    if buf == NULL:
        raise MemoryError()
    return buf


cdef str taken_text(char* buf, Py_ssize_t size):
    """The first `size` bytes of `buf` as str; buf is freed."""
    try:
        return PyUnicode_DecodeASCII(buf, size, NULL)
    finally:
        free(buf)


def weight_text(values, index=None):
    """The lines of a model's `weights` section, as str: repr(x) a line (dense), or index:repr(x)
    with the given indices (>= 0; sparse). The model writer's fast path, the reverse of
    weight_lines: the text of the Python f-strings, without a Python object per weight."""
    cdef Py_buffer v, ix
    _acquire(values, &v, c'd', 1, False, b"weight_text")
    try:
        if index is None:
            return _weight_text(<const double*> v.buf, v.len // 8, NULL)
        _acquire(index, &ix, c'q', 1, False, b"weight_text")
        try:
            if ix.len != v.len:
                raise ValueError("weight_text: the index and the values differ in length")
            return _weight_text(<const double*> v.buf, v.len // 8, <const int64_t*> ix.buf)
        finally:
            PyBuffer_Release(&ix)
    finally:
        PyBuffer_Release(&v)


cdef str _weight_text(const double* values, Py_ssize_t n, const int64_t* index):
    cdef Py_ssize_t i, size = 0, bad = -1
    cdef bint sparse = index != NULL
    cdef char* buf
    if n == 0:
        return ""
    buf = text_buffer(n * (MAX_REPR + 22))      # 19 digits, ':' and '\n' beside each repr
    with nogil:
        for i in range(n):
            if not isfinite(values[i]):
                bad = i
                break
            if sparse:
                size += put_index(buf + size, index[i])
                buf[size] = c':'
                size += 1
            size += put_repr(buf + size, values[i])
            buf[size] = c'\n'
            size += 1
    if bad >= 0:
        free(buf)
        raise ValueError(f"weight {values[bad]!r} is not finite")
    return taken_text(buf, size)


def float_rows(values):
    """The rows of `values` (2-d, float64) as lines of repr(x) joined by a space, as str
    (predict's --scores and a regression's predictions: the text of the tasks' format methods,
    made in C)."""
    cdef Py_buffer b
    cdef Py_ssize_t n, width, i, j, size = 0
    cdef const double* v
    cdef char* buf
    _acquire(values, &b, c'd', 2, False, b"float_rows")
    try:
        n, width = b.shape[0], b.shape[1]
        v = <const double*> b.buf
        if n == 0:
            return ""
        buf = text_buffer(n * (width * (MAX_REPR + 1) + 1))
        with nogil:
            for i in range(n):
                for j in range(width):
                    if j:
                        buf[size] = c' '
                        size += 1
                    size += put_repr(buf + size, v[i * width + j])
                buf[size] = c'\n'
                size += 1
        return taken_text(buf, size)
    finally:
        PyBuffer_Release(&b)


# ---------------------------------------------------------------------------------------------
# Linear prediction from the parsed rows straight to predict's output lines (predict's lean path,
# svmtrain.lean_predict: the interpreter's start and this module, no numpy, no click). The scores,
# the choice of label and the text are those of the tasks' own path (Binary.predict, csr_scores;
# Multiclass.predict, block_scores and multiclass_predict; format_lines), the same additions in the
# same order, so the output is the same bytes; tests/test_lean_predict.py compares the two.


def zeros(Py_ssize_t n):
    """n doubles, all 0.0, as a writable buffer (a model's weights on the lean paths, where the
    array module would import collections: 4 ms). Allocated as numpy allocates an array: from
    4 MB on, its pages are advised to be huge pages (madvise, before any is touched), which the
    kernels' scattered reads and writes of w need: a lean Crammer-Singer solve on sector took
    10% longer on w in small pages than the full path's on numpy's."""
    cdef void* p = calloc(max(n, 1), sizeof(double))
    if p == NULL:
        raise MemoryError()
    if n * 8 >= (1 << 22):
        svmtrain_advise_huge(p, n * 8)
    return _owned(p, max(n, 0))


def predict_parsed(Parser parser not None, w, int64_t n_cols, int64_t K, double bias,
                   bint has_bias, list labels not None, list label_texts not None, bint scores):
    """Predict the rows `parser` holds with a linear model and let them go (the parser keeps its
    buffers for the next rows). Returns (the output's lines as str, the rows whose target is the
    predicted label).

    K == 1 (binary): s = w.x (+ w[n_cols] * bias), labels[0] when s > 0, else labels[1].
    K >= 2 (multiclass): w feature-major, as the model reader stores it (the K weights of column j
    at w[j * K:], the bias weights at w[n_cols * K:]); S_k = w_k.x (+ bias term), the label of the
    first largest S_k. Columns at or beyond n_cols are ignored. A line is label_texts[k] (bytes, the
    label as format_label writes it) or, with `scores`, the reprs of s or of S_1..S_K joined by a
    space.

    Returns (text, correct, first_predicted, first_true, first_both): the rows whose target is their
    predicted label, predicted as labels[0], whose target is labels[0], and both (a binary
    metric's confusion counts of its positive class, BinaryMetric's).
    """
    cdef Py_buffer b
    parser._int64_columns()
    _acquire(w, &b, c'd', 1, False, b"predict_parsed")
    try:
        return _predict_parsed(parser, <const double*> b.buf, b.len // 8, n_cols, K, bias,
                               has_bias, labels, label_texts, scores)
    finally:
        PyBuffer_Release(&b)


cdef tuple _predict_parsed(Parser parser, const double* w, Py_ssize_t w_size, int64_t n_cols,
                           int64_t K, double bias, bint has_bias, list labels, list label_texts,
                           bint scores):
    cdef Py_ssize_t n = parser.n_rows, i, size = 0, longest = 0, n_labels = len(labels)
    cdef int64_t p, j, k, best, correct = 0, first_predicted = 0, first_true = 0, first_both = 0
    cdef double v, top
    cdef const int64_t* ip = parser.indptr
    cdef const int64_t* ind = parser.indices
    cdef const double* val = parser.data
    cdef const double* target = parser.target
    cdef double* S
    cdef double* label
    cdef char* buf
    cdef const char** text
    cdef Py_ssize_t* text_len
    if K < 1 or n_cols < 0:
        raise ValueError("predict_parsed: K >= 1 and n_cols >= 0")
    if n_labels != (2 if K == 1 else K) or len(label_texts) != n_labels:
        raise ValueError("predict_parsed: one label (and its text) per class, two for binary")
    if w_size < K * (n_cols + (1 if has_bias else 0)):
        raise ValueError("predict_parsed: w is shorter than the model's columns")
    for t in label_texts:
        longest = max(longest, len(<bytes?> t))
    if n == 0:
        return "", 0, 0, 0, 0
    S = <double*> malloc(K * sizeof(double))
    label = <double*> malloc(n_labels * sizeof(double))
    text = <const char**> malloc(n_labels * sizeof(char*))
    text_len = <Py_ssize_t*> malloc(n_labels * sizeof(Py_ssize_t))
    if S == NULL or label == NULL or text == NULL or text_len == NULL:
        free(S); free(label); free(text); free(text_len)
        raise MemoryError()
    for k in range(n_labels):
        label[k] = labels[k]
        text[k] = <bytes> label_texts[k]
        text_len[k] = len(<bytes> label_texts[k])
    try:
        buf = text_buffer(n * ((K * (MAX_REPR + 1) if scores else longest) + 1))
        with nogil:
            for i in range(n):
                for k in range(K):
                    S[k] = 0.0
                for p in range(ip[i], ip[i + 1]):
                    j = ind[p]
                    if 0 <= j < n_cols:
                        v = val[p]
                        for k in range(K):
                            S[k] += w[j * K + k] * v
                if has_bias:
                    for k in range(K):
                        S[k] += w[n_cols * K + k] * bias
                if K == 1:
                    best = 0 if S[0] > 0 else 1
                else:
                    best = 0
                    top = S[0]
                    for k in range(1, K):
                        if S[k] > top:
                            top = S[k]
                            best = k
                correct += label[best] == target[i]
                first_predicted += best == 0
                first_true += target[i] == label[0]
                first_both += best == 0 and target[i] == label[0]
                if scores:
                    for k in range(K):
                        if k:
                            buf[size] = c' '
                            size += 1
                        size += put_repr(buf + size, S[k])
                else:
                    memcpy(buf + size, text[best], text_len[best])
                    size += text_len[best]
                buf[size] = c'\n'
                size += 1
    finally:
        free(S); free(label); free(text); free(text_len)
    parser.n_rows = 0
    parser.nnz = 0
    return taken_text(buf, size), correct, first_predicted, first_true, first_both


cdef int _cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*> a)[0], y = (<const int64_t*> b)[0]
    return (x > y) - (x < y)


def tag_parsed(Parser parser not None, w, int64_t n_cols, int64_t K, double bias, bint has_bias,
               list labels not None, list label_texts not None, bint scores):
    """Tag the sentences of the rows `parser` holds, every one of them whole (the caller parsed
    the whole text), with a sequence model, and let the rows go. Returns (the output's lines as
    str, the tokens whose target is their tag), or None, having written nothing, where the full
    path must judge: a line without a qid, a sentence's qid coming back after other sentences, a
    score that is not finite.

    w is the model file's: K class-major emission blocks of width = n_cols + has_bias (the weight
    of column j in tag k at w[k * width + j], its bias weight at w[k * width + n_cols]), then the
    (K + 1) x K transitions. E[t, k] = w_k.x_t sums a token's columns below n_cols in its order,
    then the bias term, as _oracles.block_scores does; a sentence is a run of one qid; its tags are
    the Viterbi of _viterbi.pxd, as _oracles.viterbi finds them. A line is label_texts[tag]
    (bytes) or, with `scores`, the reprs of E[t, 0..K-1] joined by a space."""
    cdef Py_buffer b
    parser._int64_columns()
    _acquire(w, &b, c'd', 1, False, b"tag_parsed")
    try:
        return _tag_parsed(parser, <const double*> b.buf, b.len // 8, n_cols, K, bias, has_bias,
                           labels, label_texts, scores)
    finally:
        PyBuffer_Release(&b)


cdef object _tag_parsed(Parser parser, const double* w, Py_ssize_t w_size, int64_t n_cols,
                        int64_t K, double bias, bint has_bias, list labels, list label_texts,
                        bint scores):
    cdef Py_ssize_t n = parser.n_rows, i, size = 0, longest = 0, n_runs = 0
    cdef int64_t width = n_cols + (1 if has_bias else 0), p, j, k, a, L, longest_run = 0
    cdef int64_t correct = 0
    cdef bint refused = False
    cdef const int64_t* ip = parser.indptr
    cdef const int64_t* ind = parser.indices
    cdef const double* val = parser.data
    cdef const int64_t* qid = parser.qid
    cdef const double* target = parser.target
    cdef const double* T = w + K * width
    cdef double* E = NULL
    cdef double* beta = NULL
    cdef double* label = NULL
    cdef int64_t* tags = NULL
    cdef int64_t* run_qid = NULL
    cdef const char** text = NULL
    cdef Py_ssize_t* text_len = NULL
    cdef char* buf
    if K < 1 or n_cols < 0:
        raise ValueError("tag_parsed: K >= 1 and n_cols >= 0")
    if len(labels) != K or len(label_texts) != K:
        raise ValueError("tag_parsed: one label (and its text) per tag")
    if w_size != K * width + (K + 1) * K:
        raise ValueError("tag_parsed: w is not K emission blocks and the transitions")
    for t in label_texts:
        longest = max(longest, len(<bytes?> t))
    if n == 0:
        return "", 0
    try:
        E = <double*> malloc(n * K * sizeof(double))
        tags = <int64_t*> malloc(n * sizeof(int64_t))
        run_qid = <int64_t*> malloc(n * sizeof(int64_t))
        label = <double*> malloc(K * sizeof(double))
        text = <const char**> malloc(K * sizeof(char*))
        text_len = <Py_ssize_t*> malloc(K * sizeof(Py_ssize_t))
        if (E == NULL or tags == NULL or run_qid == NULL or label == NULL or text == NULL
                or text_len == NULL):
            raise MemoryError()
        for k in range(K):
            label[k] = labels[k]
            text[k] = <bytes> label_texts[k]
            text_len[k] = len(<bytes> label_texts[k])
        with nogil:
            # the sentences: runs of one qid, each qid once
            a = 0
            for i in range(n):
                if qid[i] < 0:
                    refused = True
                    break
                if i + 1 == n or qid[i + 1] != qid[i]:
                    run_qid[n_runs] = qid[i]
                    n_runs += 1
                    if i + 1 - a > longest_run:
                        longest_run = i + 1 - a
                    a = i + 1
            if not refused:
                qsort(run_qid, n_runs, sizeof(int64_t), _cmp_int64)
                for i in range(1, n_runs):
                    if run_qid[i] == run_qid[i - 1]:
                        refused = True
                        break
            if not refused:
                for i in range((K + 1) * K):
                    if not isfinite(T[i]):
                        refused = True
                        break
            if not refused:
                for i in range(n):
                    for k in range(K):
                        E[i * K + k] = 0.0
                    for p in range(ip[i], ip[i + 1]):
                        j = ind[p]
                        if 0 <= j < n_cols:
                            for k in range(K):
                                E[i * K + k] += w[k * width + j] * val[p]
                    if has_bias:
                        for k in range(K):
                            E[i * K + k] += w[k * width + n_cols] * bias
                    for k in range(K):
                        if not isfinite(E[i * K + k]):
                            refused = True
        if refused:
            return None
        beta = <double*> malloc(longest_run * K * sizeof(double))
        if beta == NULL:
            raise MemoryError()
        buf = text_buffer(n * ((K * (MAX_REPR + 1) if scores else longest) + 1))
        with nogil:
            a = 0
            for i in range(n):
                if i + 1 == n or qid[i + 1] != qid[i]:
                    L = i + 1 - a
                    _backward(E + a * K, T, NULL, L, K, beta)
                    _decode(T, beta, L, K, tags + a)
                    a = i + 1
            for i in range(n):
                correct += label[tags[i]] == target[i]
                if scores:
                    for k in range(K):
                        if k:
                            buf[size] = c' '
                            size += 1
                        size += put_repr(buf + size, E[i * K + k])
                else:
                    memcpy(buf + size, text[tags[i]], text_len[tags[i]])
                    size += text_len[tags[i]]
                buf[size] = c'\n'
                size += 1
    finally:
        free(E); free(beta); free(tags); free(run_qid); free(label); free(text); free(text_len)
    parser.n_rows = 0
    parser.nnz = 0
    return taken_text(buf, size), correct


cdef inline void _add_regression(double* s, double y, double v) noexcept nogil:
    """One row's terms of RegressionSums, in their order (LIBLINEAR's predict sums these)."""
    cdef double e = y - v
    s[0] += e * e
    s[1] += fabs(e)
    s[2] += y
    s[3] += v
    s[4] += y * y
    s[5] += v * v
    s[6] += y * v


cdef class RegressionSums:
    """The sums a regression metric is made of, over the rows in file order, one row at a time:
    (sum e^2, sum |e|, sum y, sum v, sum y^2, sum v^2, sum y v), with v the prediction and
    e = y - v, and the figures made of them. One loop, here, serves both predict paths
    (RegressionMetric.add on the full path, regress_parsed on the lean one), so their metric lines
    are the same bytes whatever the blocks the rows came in."""

    cdef double s[7]
    cdef public int64_t n        # the rows added

    def __cinit__(self):
        cdef int k
        for k in range(7):
            self.s[k] = 0.0
        self.n = 0

    def add(self, targets, predictions):
        """Add the rows of two equal-length float64 arrays (targets y, predictions v)."""
        cdef Py_buffer by, bv
        cdef Py_ssize_t i, n
        cdef const double* y
        cdef const double* v
        _acquire(targets, &by, c'd', 1, False, b"RegressionSums.add")
        try:
            _acquire(predictions, &bv, c'd', 1, False, b"RegressionSums.add")
            try:
                n = by.len // 8
                if bv.len // 8 != n:
                    raise ValueError("RegressionSums.add: one prediction per target")
                y = <const double*> by.buf
                v = <const double*> bv.buf
                with nogil:
                    for i in range(n):
                        _add_regression(self.s, y[i], v[i])
                self.n += n
            finally:
                PyBuffer_Release(&bv)
        finally:
            PyBuffer_Release(&by)

    @property
    def values(self):
        """The seven sums, as a tuple of floats."""
        return tuple(self.s[k] for k in range(7))

    def figures(self):
        """(mean squared error, mean absolute error, squared correlation coefficient), as
        LIBLINEAR's predict computes them from these sums (0 where there is nothing to divide:
        no rows, or a constant target or prediction; inf where the sums overflowed)."""
        cdef double n = <double> self.n
        cdef double se = self.s[0], ae = self.s[1], sy = self.s[2], sv = self.s[3]
        cdef double syy = self.s[4], svv = self.s[5], syv = self.s[6]
        cdef double cov = n * syv - sy * sv
        cdef double den = (n * syy - sy * sy) * (n * svv - sv * sv)
        return (se / n if self.n else 0.0, ae / n if self.n else 0.0,
                cov * cov / den if den > 0.0 else 0.0)


def regress_parsed(Parser parser not None, w, int64_t n_cols, double bias, bint has_bias,
                   RegressionSums sums not None):
    """Predict the rows `parser` holds with a linear regression model and let them go: v = w.x
    (+ w[n_cols] * bias), columns at or beyond n_cols ignored, as csr_scores computes it; each row
    adds (its target, v) to `sums`. Returns the output's lines, repr(v) each (format_lines')."""
    cdef Py_buffer b
    cdef Py_ssize_t n = parser.n_rows, i, size = 0
    cdef int64_t p, j
    cdef double v
    cdef const int64_t* ip = parser.indptr
    cdef const int64_t* ind
    cdef const double* val = parser.data
    cdef const double* target = parser.target
    cdef const double* wp
    cdef char* buf
    if n_cols < 0:
        raise ValueError("regress_parsed: n_cols >= 0")
    parser._int64_columns()
    ind = parser.indices
    _acquire(w, &b, c'd', 1, False, b"regress_parsed")
    try:
        if b.len // 8 < n_cols + (1 if has_bias else 0):
            raise ValueError("regress_parsed: w is shorter than the model's columns")
        if n == 0:
            return ""
        wp = <const double*> b.buf
        buf = text_buffer(n * (MAX_REPR + 1))
        with nogil:
            for i in range(n):
                v = 0.0
                for p in range(ip[i], ip[i + 1]):
                    j = ind[p]
                    if 0 <= j < n_cols:
                        v += wp[j] * val[p]
                if has_bias:
                    v += wp[n_cols] * bias
                _add_regression(sums.s, target[i], v)
                size += put_repr(buf + size, v)
                buf[size] = c'\n'
                size += 1
        sums.n += n
    finally:
        PyBuffer_Release(&b)
    parser.n_rows = 0
    parser.nnz = 0
    return taken_text(buf, size)


def _floor_logs(int q):
    """(floor(log10 2^q), floor(log10 (3/4) 2^q), floor(log2 10^q)) as computed here (for tests)."""
    return floor_log10_pow2(q), floor_log10_three_quarters_pow2(q), floor_log2_pow10(q)
