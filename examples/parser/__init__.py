"""A first-order dependency parser as a structured SVM task: CoNLL-U in, projective trees out.

    conllu.py    CoNLL-U sentences (ID, FORM, UPOS, HEAD), errors naming file and line
    features.py  hashed arc features, all n(n + 1) arcs of a sentence at once
    eisner.py    Eisner's O(n^3) decoder (one root child, or several), vectorised over split points,
                 and its typed-loop twin _eisner_fast.pyx, built on first use
    task.py      ArcFactoredParser, svmtrain's task protocol over the three; UAS
    _check.py    an averaged perceptron over the same protocol methods, to see that it learns
"""

from examples.parser.conllu import DataError, Sentence, read_conllu
from examples.parser.eisner import eisner
from examples.parser.task import ArcFactoredParser, ParserInput, unlabelled_attachment

__all__ = ["ArcFactoredParser", "ParserInput", "DataError", "Sentence", "read_conllu", "eisner",
           "unlabelled_attachment"]
