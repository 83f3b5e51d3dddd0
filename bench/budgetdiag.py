"""Why BSCA's first epoch on a9a depends on the seed: the ranking against the threshold.

    python bench/budgetdiag.py [--budget 500] [--epochs 1] [--seeds 1,2,3,4,5,6] [--last]

Trains BSCA on a9a (C = 32, gamma = 2^-7, the paper's settings) once per seed and reports, on
a9a.t: the accuracy of sign(f~), the ROC AUC of f~ (how well the model ranks, whatever the
threshold), the accuracy at the best constant offset (f~ + b for the b that is best *on the test
set*: an oracle, for diagnosis only) and the fraction of test points predicted positive (24% are).
When the AUC and the best-offset accuracy are the same for every seed while the plain accuracy is
not, the seeds learn the same ranking and differ in the constant part of f~ only: the bias-free
model's implicit bias, which at gamma = 2^-7 (k >= 0.8 between any two a9a rows) every step
shifts. `--budget 40000` (more than the 32,561 examples: no merge) shows the same without a budget.
`--last` diagnoses the last iterate (--no-average, the paper's output); by default BSCA returns the
mean of the iterates over the epoch's last B steps, which removes that noise.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, Data  # noqa: E402


def auc(f, y):
    """ROC AUC by the rank sum (ties broken by order: f~ is continuous)."""
    ranks = np.empty(len(f))
    ranks[np.argsort(f, kind="stable")] = np.arange(1, len(f) + 1)
    pos = y > 0
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def best_offset_accuracy(f, y):
    """max over b of the accuracy of sign(f + b): one sweep over the sorted values."""
    order = np.argsort(-f, kind="stable")
    ys = y[order]
    # predicting the top k positive: correct = positives among them + negatives below them
    correct = np.concatenate([[0], np.cumsum(ys > 0)]) + np.concatenate(
        [[np.sum(ys < 0)], np.sum(ys < 0) - np.cumsum(ys < 0)])
    return correct.max() / len(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared-data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seeds", default="1,2,3,4,5,6")
    ap.add_argument("--last", action="store_true", help="the last iterate instead of the average")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from svmtrain import data as reader
    from svmtrain._budget import Expansion
    from svmtrain.solvers.budgeted import train_budgeted
    from svmtrain.tasks import task_class

    store = Data(args.shared_data)
    train, test = str(store.plain("a9a/a9a")), str(store.plain("a9a/a9a.t"))
    block, held_out = reader.load(train), reader.load(test)
    task = task_class("binary").from_training_data(block, train)
    y = np.where(held_out.target == task.labels[0], 1.0, -1.0)
    print(f"a9a, C 32, gamma 2^-7, budget {args.budget}, {args.epochs} epoch(s); test: "
          f"{np.mean(y > 0):.3f} positive")
    print("seed  accuracy %   AUC     best-offset accuracy %   predicted positive")
    for seed in (int(s) for s in args.seeds.split(",")):
        r = train_budgeted(task, block, train, C=32.0, gamma=2.0 ** -7, budget=args.budget,
                           epochs=args.epochs, seed=seed, average=not args.last)
        model = Expansion.from_arrays(r.n_features, r.gamma, *r.support_vectors[0])
        f = model.decision_values(held_out.indptr, held_out.indices, held_out.data)
        print(f"{seed:4d}  {100 * np.mean(np.where(f > 0, 1.0, -1.0) == y):10.2f}   {auc(f, y):.4f}"
              f"  {100 * best_offset_accuracy(f, y):22.2f}   {np.mean(f > 0):18.3f}", flush=True)


if __name__ == "__main__":
    main()
