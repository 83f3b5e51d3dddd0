"""The arc-factored dependency parser as an svmtrain task (svmtrain's public task protocol).

    x = a sentence (its words' forms and UPOS tags), y = its heads (y[d - 1] = head of word d)
    psi(x, y) = sum over words d of f(x, y_d -> d)        hashed arc features (features.py)
    Delta(y, y') = number of words whose head differs      (the Hamming loss over heads)
    inference = Eisner's algorithm (eisner.py); loss-augmented inference adds 1 to the score of
                every arc h -> d with h != y_d, so its value is w . psi(x, y') + Delta(y, y'),
                exactly, and the cutting-plane solvers' primal is exact.

With margin rescaling the structured SVM (Taskar et al.; McDonald et al. 2005 train the same
margins with MIRA) asks the gold tree to beat every projective tree y' by Delta(y, y'). A gold
tree that is not projective (26 of the 2,077 UD English EWT test sentences) is outside the
decoder's reach: its constraint can never be met with zero slack, and at test time its
non-projective arcs count as errors (UAS below).

Task options (strings, from --task-option KEY=VALUE):
    bits=20            the feature space has 2^bits columns (8 <= bits <= 30); w is that long
    single_root=yes    exactly one word attaches to the root (UD's rule); `no` allows several
    cache_features=yes keep each sentence's arc-feature matrix on it after first use (memory about
                       224 bytes per arc, n(n + 1) arcs a sentence); `no` recomputes it per call
"""

import sys
from pathlib import Path

import numpy as np

try:
    from examples.parser.conllu import DataError, read_conllu
except ModuleNotFoundError:
    # loaded by path (--task-module examples/parser/task.py:ArcFactoredParser) from another
    # directory: the package is found from the repository root, two levels above this file
    sys.path.append(str(Path(__file__).resolve().parents[2]))
    from examples.parser.conllu import DataError, read_conllu
from examples.parser.eisner import compiled_module, eisner
from examples.parser.features import N_FEATURES_PER_ARC, arc_features, token_codes

try:
    from svmtrain import StructuredTask
except ImportError:      # the task protocol's base class is not on this branch yet
    StructuredTask = object


class ParserInput:
    """A sentence to parse: its words, their attribute codes, and (once computed) its arc features."""

    __slots__ = ("forms", "upos", "codes", "features", "features_bits", "line")

    def __init__(self, forms, upos, line=0):
        self.forms = list(forms)
        self.upos = list(upos)
        self.codes = token_codes(self.forms, self.upos)
        self.features = None
        self.features_bits = None     # the `bits` the cached features were hashed with
        self.line = line

    def __len__(self):
        return len(self.forms)

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)


_YES = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}


def _flag(key, value):
    if isinstance(value, bool):
        return value
    try:
        return _YES[str(value).strip().lower()]
    except KeyError:
        raise ValueError(f"task option {key}={value!r}: expected yes or no") from None


class ArcFactoredParser(StructuredTask):
    """First-order projective dependency parsing (McDonald, Crammer and Pereira 2005) on CoNLL-U."""

    name = "arc-factored-parser"
    version = "1"
    holds_gil = True          # numpy between Python steps: threads would serialise on the GIL
    OPTIONS = ("bits", "single_root", "cache_features")

    def __init__(self, **options):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise ValueError(f"unknown task option {unknown[0]!r} (the parser knows: "
                             f"{', '.join(self.OPTIONS)})")
        bits = options.get("bits", 20)
        try:
            bits = int(bits)
        except (TypeError, ValueError):
            raise ValueError(f"task option bits={bits!r}: expected an integer") from None
        if not 8 <= bits <= 30:
            raise ValueError(f"task option bits={bits}: expected 8 <= bits <= 30")
        self.bits = bits
        self.single_root = _flag("single_root", options.get("single_root", True))
        self.cache_features = _flag("cache_features", options.get("cache_features", True))
        self.size_joint_feature = 1 << bits

    # -- data -------------------------------------------------------------------------------------

    def read_examples(self, path):
        """(ParserInput, gold heads) for each sentence of a CoNLL-U file (streamed)."""
        for sentence in read_conllu(path, require_heads=True):
            yield ParserInput(sentence.forms, sentence.upos, sentence.line), sentence.heads

    def initialize(self, examples):
        """The hashed feature space is fixed by `bits`, so there is nothing to learn here; with
        cache_features, every sentence's arc features are computed now, once, in this process:
        oracle worker processes forked later share them (copy-on-write) instead of each building
        its own copy."""
        if self.cache_features:
            for x, _ in examples:
                self.arc_features(x)

    # -- the joint feature map and scores ---------------------------------------------------------

    def arc_features(self, x):
        """The (n(n + 1), N_FEATURES_PER_ARC) feature columns of all arcs of x (arc h -> d is row
        h * n + d - 1)."""
        if x.features is not None and x.features_bits == self.bits:
            return x.features
        features = arc_features(x.codes, self.bits)
        if self.cache_features:
            x.features, x.features_bits = features, self.bits
        return features

    def arc_scores(self, x, w):
        """(n + 1, n + 1) scores[h, d] = w . f(h -> d); column 0 (arcs into the root) is unused."""
        n = len(x)
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.size_joint_feature,):
            raise ValueError(f"w has shape {w.shape}, the parser's feature space has "
                             f"{self.size_joint_feature} columns (bits={self.bits})")
        features = self.arc_features(x)
        compiled = compiled_module()
        if compiled is not None and features.dtype == np.int32:
            sums = compiled.feature_sums(w, features)
        else:
            sums = feature_sums_numpy(w, features)
        scores = np.zeros((n + 1, n + 1))
        scores[:, 1:] = sums.reshape(n + 1, n)
        return scores

    def _check(self, x, y):
        y = np.asarray(y)
        if y.shape != (len(x),):
            raise ValueError(f"a tree for a sentence of {len(x)} words needs {len(x)} heads, "
                             f"got shape {y.shape}")
        return y

    def joint_feature(self, x, y):
        """psi(x, y) = the sum of the feature rows of the tree's arcs: the rows' indices, each with
        value 1, repeats included (the protocol sums repeated indices; the solver merges psi(y)
        and psi(y') in one pass, so sorting here would be paid twice for nothing)."""
        y = self._check(x, y)
        n = len(x)
        rows = y * n + np.arange(n)
        columns = self.arc_features(x)[rows].ravel().astype(np.int64)
        return columns, np.ones(len(columns))

    def loss(self, y, y_hat):
        return float(np.count_nonzero(np.asarray(y) != np.asarray(y_hat)))

    # -- inference --------------------------------------------------------------------------------

    def inference(self, x, w):
        return eisner(self.arc_scores(x, w), self.single_root)[0]

    def loss_augmented_inference(self, x, y, w):
        return self.loss_augmented(x, y, w)[0]

    def loss_augmented(self, x, y, w):
        """(y', value) with value = w . psi(x, y') + Delta(y, y') the maximum over projective y'."""
        y = self._check(x, y)
        scores = self.arc_scores(x, w)
        scores[:, 1:] += 1.0
        scores[y, np.arange(1, len(x) + 1)] -= 1.0      # the gold arcs carry no loss
        return eisner(scores, self.single_root)

    def batch_inference(self, xs, w):
        return [self.inference(x, w) for x in xs]

    def batch_loss_augmented_inference(self, xs, ys, w):
        return [self.loss_augmented_inference(x, y, w) for x, y in zip(xs, ys)]

    def score(self, ys, y_hats):
        """('UAS', the fraction of words, punctuation included, whose predicted head is right)."""
        return "UAS", unlabelled_attachment(ys, y_hats)

    def format_label(self, y):
        """A predicted tree on one line: the heads of words 1..n, space-separated (0 = root)."""
        return " ".join(str(int(h)) for h in y)


def feature_sums_numpy(w, features):
    """sums[a] = w[features[a, 0]] + w[features[a, 1]] + ..., the columns added in order as the
    compiled loop does (numpy's sum(axis=1) adds them pairwise, in another order, and the last
    bits of the scores, hence ties and models, would depend on which version ran)."""
    values = w.take(features)
    sums = values[:, 0].copy()
    for j in range(1, values.shape[1]):
        sums += values[:, j]
    return sums


def unlabelled_attachment(ys, y_hats):
    """UAS over all words (punctuation included, as in the CoNLL 2018 shared task's UAS)."""
    correct = total = 0
    for y, y_hat in zip(ys, y_hats):
        y, y_hat = np.asarray(y), np.asarray(y_hat)
        correct += int(np.count_nonzero(y == y_hat))
        total += len(y)
    return correct / total if total else 0.0


__all__ = ["ArcFactoredParser", "ParserInput", "DataError", "N_FEATURES_PER_ARC", "unlabelled_attachment"]
