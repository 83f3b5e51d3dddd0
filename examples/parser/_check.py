"""Does the parser learn? An averaged perceptron over the task protocol, then UAS on a test file.

    python -m examples.parser._check --train TRAIN.conllu[.xz] --test TEST.conllu[.xz] [--epochs 5]

Not the structured SVM (that is svmtrain's job, through the same protocol methods): the averaged
structured perceptron of Collins (2002), which uses only inference and joint_feature, gives a
quick reference point for the features and the decoder, and this script measures what the solvers
will pay for them: the time per sentence of feature extraction and of (loss-augmented) inference,
and the memory of the cached arc features.
"""

import argparse
import resource
import sys
import time

import numpy as np

from examples.parser.conllu import DataError
from examples.parser.task import ArcFactoredParser


def is_projective(heads):
    """No two arcs cross (the root at position 0 included): what Eisner's algorithm can output."""
    heads = np.asarray(heads)
    d = np.arange(1, len(heads) + 1)
    lo, hi = np.minimum(heads, d), np.maximum(heads, d)
    cross = (lo[:, None] < lo[None, :]) & (lo[None, :] < hi[:, None]) & (hi[:, None] < hi[None, :])
    return not cross.any()


def averaged_perceptron(task, examples, epochs, seed, log=print):
    """Collins' averaged perceptron: w += psi(x, y) - psi(x, y_hat) on each mistake; returns the
    average of w over all steps (kept as w - u / c, u the step-weighted sum of the updates)."""
    w = np.zeros(task.size_joint_feature)
    u = np.zeros(task.size_joint_feature)
    rng = np.random.default_rng(seed)
    step = 1
    for epoch in range(1, epochs + 1):
        start = time.process_time()
        mistakes = words = 0
        for i in rng.permutation(len(examples)):
            x, y = examples[i]
            y_hat = task.inference(x, w)
            loss = task.loss(y, y_hat)
            if loss > 0:
                gold_i, gold_v = task.joint_feature(x, y)
                pred_i, pred_v = task.joint_feature(x, y_hat)
                np.add.at(w, gold_i, gold_v)
                np.add.at(w, pred_i, -pred_v)
                np.add.at(u, gold_i, step * gold_v)
                np.add.at(u, pred_i, -step * pred_v)
            mistakes += loss
            words += len(y)
            step += 1
        log(f"epoch {epoch}: training UAS (before each update) {100 * (1 - mistakes / words):.2f}%, "
            f"{time.process_time() - start:.1f} s")
    return w - u / step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--bits", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-train", type=int, default=None, help="use the first N training sentences")
    args = parser.parse_args(argv)
    try:
        task = ArcFactoredParser(bits=str(args.bits))
        start = time.process_time()
        train = []
        for example in task.read_examples(args.train):
            if args.max_train is not None and len(train) >= args.max_train:
                break
            train.append(example)
        test = list(task.read_examples(args.test))
    except (DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    read_seconds = time.process_time() - start
    n_train_words = sum(len(y) for _, y in train)
    print(f"read {len(train)} training sentences ({n_train_words} words), {len(test)} test sentences, "
          f"{read_seconds:.1f} s")

    start = time.process_time()
    for x, _ in train:
        task.arc_features(x)
    seconds = time.process_time() - start
    n_arcs = sum(len(x) * (len(x) + 1) for x, _ in train)
    feature_bytes = sum(x.features.nbytes for x, _ in train)
    print(f"features: {1e3 * seconds / len(train):.3f} ms per training sentence, {n_arcs} arcs, "
          f"{feature_bytes / 2**20:.0f} MiB cached ({feature_bytes / n_arcs:.0f} bytes per arc)")

    w = averaged_perceptron(task, train, args.epochs, args.seed)

    for x, _ in test:
        task.arc_features(x)
    start = time.process_time()
    predicted = task.batch_inference([x for x, _ in test], w)
    inference_seconds = time.process_time() - start
    start = time.process_time()
    for x, y in test:
        task.loss_augmented_inference(x, y, w)
    augmented_seconds = time.process_time() - start
    gold = [y for _, y in test]
    n_test_words = sum(len(y) for y in gold)
    projective = [is_projective(y) for y in gold]
    name, value = task.score(gold, predicted)
    print(f"test {name} {100 * value:.2f}% over {n_test_words} words (punctuation included); "
          f"{sum(not p for p in projective)} of {len(gold)} gold trees are not projective")
    print(f"inference: {1e3 * inference_seconds / len(test):.3f} ms per test sentence, "
          f"loss-augmented {1e3 * augmented_seconds / len(test):.3f} ms "
          f"(mean length {n_test_words / len(test):.1f} words)")
    print(f"peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
