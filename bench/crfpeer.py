"""CRFsuite (python-crfsuite) on a sequence file in svmlight form, run as a child process by the
`footprint` group (train only) and by bench/seqbench.py (train, then tag a test file).

    python bench/crfpeer.py TRAIN.svm MODEL [--c2 0.1] [--test TEST.svm --result OUT.json]

The file is what svmtools conll2svm writes: one token per line, qid = sentence, the target the tag;
each feature index becomes an attribute with its value. CRFsuite trains a first-order CRF by
L-BFGS (c1 0, c2 as given, its own stopping rule) and writes MODEL. With --test, the test file is
tagged and OUT.json gets the clock (`train_seconds`: reading and training, from the first line read
to the written model), the iterations and the token accuracy.

Why a module of its own: the child's peak RSS is the peer's figure, so the child holds what a user
of CRFsuite holds and nothing more. Sentences go to the trainer (and the tagger) one at a time as
they are read, so Python never holds the corpus (on UD EWT, every sentence read into Python lists
first made the peak 366 MB); and it imports only pycrfsuite and the standard library: numpy and
scipy.sparse, which bench/peers.py imports for its other peers, add 40 MB to a child's peak here
(the interpreter alone is 8.7 MB, with pycrfsuite 14 MB, with numpy and scipy.sparse too 54 MB).
On UD EWT the streamed child peaks at 126 MB, against 165 MB run through bench/peers.py.
"""

import argparse
import json
import os
import tempfile
import time


def sequences(path):
    """The sentences of an svmlight sequence file one at a time, each as (attribute dicts, tags):
    only the sentence being read is held in Python."""
    last, xs, ys = None, [], []
    with open(path) as f:
        for line in f:
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            tag, qid = body[0], body[1]
            if qid != last and xs:
                yield xs, ys
                xs, ys = [], []
            last = qid
            xs.append({k: float(v) for k, v in (t.split(":", 1) for t in body[2:])})
            ys.append(tag)
    if xs:
        yield xs, ys


def train(path, model, c2):
    """Train on `path`, write `model`; the number of L-BFGS iterations."""
    import pycrfsuite
    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    trainer.set_params({"c1": 0.0, "c2": c2})
    for xs, ys in sequences(path):
        trainer.append(xs, ys)
    trainer.train(str(model))
    return len(trainer.logparser.iterations)


def tag(path, model):
    """(correct, total) tokens of `path` tagged by `model`."""
    import pycrfsuite
    tagger = pycrfsuite.Tagger()
    tagger.open(str(model))
    correct = total = 0
    for xs, ys in sequences(path):
        predicted = tagger.tag(xs)
        correct += sum(p == y for p, y in zip(predicted, ys))
        total += len(ys)
    tagger.close()
    return correct, total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("train")
    ap.add_argument("model")
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--test", help="tag this file after training (needs --result)")
    ap.add_argument("--result", help="write the clock, the iterations and the test accuracy here")
    a = ap.parse_args(argv)
    if bool(a.test) != bool(a.result):
        ap.error("--test and --result go together")
    started = time.perf_counter()
    iterations = train(a.train, a.model, a.c2)
    trained = time.perf_counter() - started
    if a.test:
        correct, total = tag(a.test, a.model)
        tmp = tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(a.result)),
                                          delete=False, suffix=".tmp")
        with tmp:
            json.dump({"train_seconds": trained, "iterations": iterations, "correct": correct,
                       "total": total, "accuracy": correct / max(total, 1)}, tmp)
        os.replace(tmp.name, a.result)


if __name__ == "__main__":
    main()
