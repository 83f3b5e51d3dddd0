"""First-order (arc-factored) features, hashed: McDonald, Crammer and Pereira (ACL 2005), sec. 3.1.

A tree's joint feature is the sum of its arcs' features, psi(x, y) = sum_d f(x, y_d -> d), so the
score of a tree is the sum of its arc scores and Eisner's algorithm finds the best projective one.
The features of an arc h -> d (h = 0 is the root) are conjunctions of the attributes of the head
and of the dependent: the word form, its lowercase, its UPOS, the UPOS of its left and right
neighbours, and how many verbs, punctuation marks and coordinating conjunctions lie between
them (none, one, more: a compact stand-in for the paper's in-between UPOS); each conjunction
appears twice, alone and joined with the arc's direction and bucketed
distance (the paper conjoins every feature with them; the plain copy lets rare conjunctions still
share weight across distances).

Every feature is hashed into 2^bits columns, so the feature space is fixed before any data is seen
(the streaming mode never shows the task all its data) and w is a dense vector of that size.
Hashing is vectorised: each token's attributes become 64-bit codes once (crc32 of the string,
memoised), then a template's code is a splitmix64 chain over (template id, attribute codes) for all
arcs at once, in uint64 arithmetic that wraps (no Python per arc). The codes depend on nothing but
the strings, so models are the same from run to run and from process to process (Python's own
hash() is salted per process and could not be used).

The arcs of a sentence with n words are all (h, d) with h in 0..n, d in 1..n, numbered
a = h * n + (d - 1): n * (n + 1) rows of a fixed-width sparse matrix (every arc has exactly
N_FEATURES_PER_ARC features of value 1, so the CSR's indptr is implicit and its data all ones;
it is kept as an (n * (n + 1), width) index matrix). Arc scores are one sparse mat-vec
(task.arc_scores: a typed loop, or numpy adding the columns in the same order); a tree's joint
feature is the sum of its n rows. The rows of the impossible self-arcs h == d are computed like
the others and never used (decoders forbid them): keeping them keeps the numbering a plain grid.
"""

import zlib
from functools import lru_cache

import numpy as np

ROOT_FORM = "<root>"
ROOT_UPOS = "<root>"
BEFORE_UPOS = "<s>"      # the UPOS of the (absent) word before the root
AFTER_UPOS = "</s>"      # ... and after the last word

# token attributes, rows of the per-sentence attribute table; the last rows are 0/1 indicators of
# the word classes counted between a head and its dependent
FORM, LOWER, UPOS, UPOS_LEFT, UPOS_RIGHT = range(5)
BETWEEN_CLASSES = ({"VERB", "AUX"}, {"PUNCT"}, {"CCONJ"})
N_ATTRIBUTES = 5 + len(BETWEEN_CLASSES)
# a template's slots name attributes of the head (h), of the dependent (d), or of the words
# strictly between them (b-verb, b-punct, b-cconj: none, one, or more)
_SLOT = {"hw": FORM, "hl": LOWER, "hp": UPOS, "hp-1": UPOS_LEFT, "hp+1": UPOS_RIGHT}
_SLOT.update({"d" + k[1:]: N_ATTRIBUTES + v for k, v in _SLOT.items()})
_EMPTY_SLOT = 2 * N_ATTRIBUTES       # a row of zeros: templates with fewer than MAX_SLOTS slots
_SLOT.update({name: _EMPTY_SLOT + 1 + i for i, name in enumerate(("b-verb", "b-punct", "b-cconj"))})

# (McDonald et al. 2005, table 1: unigram, bigram and in-context UPOS features; the lowercase
# stands for their word, the cased form adds one unigram each)
TEMPLATES = (
    ("hl", "hp"), ("hl",), ("hp",), ("hw",),
    ("dl", "dp"), ("dl",), ("dp",), ("dw",),
    ("hl", "hp", "dl", "dp"), ("hp", "dl", "dp"), ("hl", "dl", "dp"), ("hl", "hp", "dp"),
    ("hl", "hp", "dl"), ("hl", "dl"), ("hp", "dp"), ("hl", "dp"), ("hp", "dl"),
    ("hp", "hp+1", "dp-1", "dp"), ("hp-1", "hp", "dp-1", "dp"),
    ("hp", "hp+1", "dp", "dp+1"), ("hp-1", "hp", "dp", "dp+1"),
    ("hp", "hp+1", "dp"), ("hp", "dp-1", "dp"), ("hp-1", "hp", "dp"), ("hp", "dp", "dp+1"),
    ("hp", "dp", "b-verb"), ("hp", "dp", "b-punct"), ("hp", "dp", "b-cconj"),
)
MAX_SLOTS = max(len(t) for t in TEMPLATES)
N_FEATURES_PER_ARC = 2 * len(TEMPLATES)

_SLOT_ROWS = np.array([[_SLOT[s] for s in t] + [_EMPTY_SLOT] * (MAX_SLOTS - len(t)) for t in TEMPLATES],
                      dtype=np.intp).T                                  # (MAX_SLOTS, T)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix(h, v):
    """splitmix64's finaliser of h * golden + v: one step of the hash chain (uint64, wrapping)."""
    z = h * _GOLDEN + v
    z ^= z >> _S30
    z *= _MUL1
    z ^= z >> _S27
    z *= _MUL2
    z ^= z >> _S31
    return z


@lru_cache(maxsize=1 << 18)
def string_code(kind, text):
    """A deterministic 64-bit code of a string of one kind (form, lower, upos): two 32-bit checksums."""
    raw = (kind + "\x00" + text).encode("utf-8", "surrogatepass")
    return (zlib.crc32(raw) << 32) | zlib.adler32(raw)


_TEMPLATE_SEEDS = _mix(np.arange(1, len(TEMPLATES) + 1, dtype=np.uint64), np.uint64(0))[:, None]
_DISTANCE_SEED = np.uint64(0x5DEECE66D)


def token_codes(forms, upos):
    """The (N_ATTRIBUTES, n + 1) uint64 attribute table of a sentence; column 0 is the root."""
    n = len(forms)
    table = np.empty((N_ATTRIBUTES, n + 1), dtype=np.uint64)
    table[FORM] = [string_code("form", ROOT_FORM)] + [string_code("form", f) for f in forms]
    table[LOWER] = [string_code("lower", ROOT_FORM)] + [string_code("lower", f.lower()) for f in forms]
    pos = np.array([string_code("upos", ROOT_UPOS)] + [string_code("upos", p) for p in upos], dtype=np.uint64)
    table[UPOS] = pos
    table[UPOS_LEFT, 0] = string_code("upos", BEFORE_UPOS)
    table[UPOS_LEFT, 1:] = pos[:-1]
    table[UPOS_RIGHT, :-1] = pos[1:]
    table[UPOS_RIGHT, -1] = string_code("upos", AFTER_UPOS)
    for i, members in enumerate(BETWEEN_CLASSES):
        table[5 + i] = [0] + [p in members for p in upos]
    return table


def distance_bucket(distance):
    """1, 2, 3, 4, 5, then 6-10 -> 6 and 11+ -> 7."""
    return np.where(distance <= 5, distance, np.where(distance <= 10, 6, 7))


def arc_grid(n):
    """(heads, dependents) of all n * (n + 1) arcs, in arc-number order a = h * n + (d - 1)."""
    heads = np.repeat(np.arange(n + 1), n)
    dependents = np.tile(np.arange(1, n + 1), n + 1)
    return heads, dependents


def between_counts(codes, heads, dependents):
    """(len(BETWEEN_CLASSES), arcs): the words of each class strictly between h and d, from prefix
    counts (prefix[c, i] = words of class c among positions 0..i-1)."""
    n = codes.shape[1] - 1
    prefix = np.zeros((len(BETWEEN_CLASSES), n + 2), dtype=np.int64)
    np.cumsum(codes[5:].astype(np.int64), axis=1, out=prefix[:, 1:])
    lo, hi = np.minimum(heads, dependents), np.maximum(heads, dependents)
    return np.maximum(prefix[:, hi] - prefix[:, lo + 1], 0)     # 0 on the (unused) self-arcs


def arc_features(codes, bits):
    """The (n * (n + 1), N_FEATURES_PER_ARC) column indices (< 2^bits) of all arcs of a sentence."""
    n = codes.shape[1] - 1
    heads, dependents = arc_grid(n)
    between = np.minimum(between_counts(codes, heads, dependents), 2).astype(np.uint64)  # 2 = "more"
    values = np.concatenate([codes[:, heads], codes[:, dependents],
                             np.zeros((1, len(heads)), dtype=np.uint64), between])  # (2A + 4, arcs)
    h = np.broadcast_to(_TEMPLATE_SEEDS, (len(TEMPLATES), len(heads)))
    for slot in range(MAX_SLOTS):
        h = _mix(h, values[_SLOT_ROWS[slot]])
    # direction and bucketed distance; arcs from the root get a bucket of their own (0)
    direction = (dependents > heads).astype(np.uint64)
    bucket = np.where(heads == 0, 0, distance_bucket(np.abs(dependents - heads))).astype(np.uint64)
    shape = _mix(_mix(np.full(len(heads), _DISTANCE_SEED), direction), bucket)
    both = np.concatenate([h, _mix(h, shape[None, :])])
    index_dtype = np.int32 if bits <= 31 else np.int64
    return np.ascontiguousarray((both & np.uint64((1 << bits) - 1)).astype(index_dtype).T)
