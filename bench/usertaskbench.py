"""User tasks (svmtrain.StructuredTask) against the built-in tasks, side by side in one run.

    .venv/bin/python bench/usertaskbench.py --train PENDIGITS_DIV100 --test PENDIGITS_T_DIV100 \
        [--only oracle,train,mixture] [--templates 4] [--mixture-C 1] [--rounds 10]

oracle   one oracle pass (every example's worst offender and H_i) at the optimum's w: the built-in
         multiclass task's Cython pass against the Crammer-Singer example through the adapter,
         split into the task's batched inference, its joint features and the row building
train    n-slack / 1-slack / online-dual training of the example against the built-in multiclass
         n-slack (time ratio, relative primal difference, gaps)
mixture  the latent mixture-of-templates example against linear Crammer-Singer: test accuracy

Times are wall seconds on a shared machine: read the ratios. The files are pendigits with the
features divided by 100 (bench/README: pendigits.s100).
"""

import argparse
import os
import sys
import time
from types import SimpleNamespace
from pathlib import Path

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CS = str(ROOT / "examples" / "multiclass_task.py") + ":CrammerSinger"
MIXTURE = str(ROOT / "examples" / "mixture.py") + ":Mixture"
OPTIONS = {"classes": "0,1,2,3,4,5,6,7,8,9", "features": "16"}


def builtin(train, C, epsilon, mode="n-slack"):
    from svmtrain import data
    from svmtrain.solvers import SOLVERS
    from svmtrain.tasks import task_class
    block = data.load(train)
    task = task_class("multiclass").from_training_data(block, train)
    started = time.perf_counter()
    result = SOLVERS[mode](task, block, train, C=C, bias=None, epsilon=epsilon, max_epochs=1000,
                           seed=1)
    return task, block, result, time.perf_counter() - started


def bench_oracle(args):
    from svmtrain.tasks.base import Geometry
    from svmtrain.tasks.user import UserTask, example_block, load_examples, load_task, oracle_chunk
    task_b, block, result, _ = builtin(args.train, 1.0, 1e-3)
    problem = task_b.problem(block, args.train, 1.0, Geometry(block.n_features, None))
    reps = 5
    t = time.perf_counter()
    for _ in range(reps):
        task_b.worst_offenders(result.w, problem, block)
    t_builtin = (time.perf_counter() - t) / reps
    user = load_task(CS, OPTIONS)
    examples = load_examples(user, args.train)
    adapter = UserTask(user, examples)
    ublock = example_block(0, len(examples), user.size_joint_feature)
    w = np.ascontiguousarray(task_b.class_major(result.w))   # the example's class-major layout
    uproblem = adapter.problem(ublock, args.train, 1.0, None)
    t = time.perf_counter()
    for _ in range(reps):
        adapter.worst_offenders(w, uproblem, ublock)
    t_user = (time.perf_counter() - t) / reps
    xs, ys = [x for x, _ in examples], [y for _, y in examples]
    t = time.perf_counter()
    for _ in range(reps):
        for a in range(0, len(xs), 256):
            user.batch_loss_augmented_inference(xs[a:a + 256], ys[a:a + 256], w)
    t_lai = (time.perf_counter() - t) / reps
    t = time.perf_counter()
    for _ in range(reps):
        for a in range(0, len(xs), 256):
            oracle_chunk(user, xs[a:a + 256], ys[a:a + 256], w)
    t_chunk = (time.perf_counter() - t) / reps
    # the answers wrong at the optimum are the ones whose joint features are computed
    n = len(xs)
    wrong = sum(1 for k in range(0, n, 256) for e in oracle_chunk(user, xs[k:k + 256],
                ys[k:k + 256], w).H if e > 0)
    us = lambda s: f"{1e6 * s / n:.2f} us"  # noqa: E731
    print(f"oracle pass over {n} examples at the optimum (C=1; {wrong} examples with H > 0):")
    print(f"  built-in multiclass (Cython)      {t_builtin:.4f} s  {us(t_builtin)}/example  1.00x")
    print(f"  user task, whole pass             {t_user:.4f} s  {us(t_user)}/example  "
          f"{t_user / t_builtin:.1f}x")
    print(f"    task's batched inference (numpy) {t_lai:.4f} s  {us(t_lai)}/example")
    print(f"    + loss, joint features, rows      {t_chunk - t_lai:.4f} s  {us(t_chunk - t_lai)}/example")
    print(f"    + row store (hash, dedup)         {t_user - t_chunk:.4f} s  {us(t_user - t_chunk)}/example")


def bench_train(args):
    from svmtrain.tasks.user import load_task, train_user_task
    _, _, ref, t_ref = builtin(args.train, 1.0, 1e-3)
    print(f"training to a relative gap of 1e-3, C=1 (built-in multiclass n-slack: {t_ref:.2f} s, "
          f"primal {ref.primal:.10g}, gap {ref.relative_gap:.2e})")
    for mode, online in (("n-slack", None), ("1-slack", None), ("online-dual", {"passes": 3})):
        task = load_task(CS, OPTIONS)
        t = time.perf_counter()
        out = train_user_task(task, args.train, mode=mode, C=1.0, epsilon=1e-3, online=online)
        dt = time.perf_counter() - t
        m = SimpleNamespace(**out.fields)
        diff = abs(m.primal - ref.primal) / ref.primal
        print(f"  user {mode:12s} {dt:7.2f} s  {dt / t_ref:6.1f}x  primal {m.primal:.10g}  gap "
              f"{m.relative_gap:.2e}  |dP|/P {diff:.2e}  within gaps: "
              f"{diff <= m.relative_gap + ref.relative_gap}")


def accuracy(task, w, path, latent=False):
    from svmtrain.tasks.user import read_examples
    xs, ys = zip(*read_examples(task, path))
    pred = task.batch_inference(list(xs), w)
    first = (lambda y: y[0]) if latent else (lambda y: y)
    return float(np.mean([first(a) == first(b) for a, b in zip(ys, pred)]))


def bench_mixture(args):
    from svmtrain.tasks.user import load_task, train_user_task
    _, _, ref, t_ref = builtin(args.train, 1.0, 1e-3)
    cs = load_task(CS, OPTIONS)
    from svmtrain.tasks import task_class  # noqa: F401
    w_cs = np.ascontiguousarray(ref.w.reshape(-1, 10).T.ravel())     # class-major
    acc_linear = accuracy(cs, w_cs, args.test)
    print(f"linear Crammer-Singer (built-in, C=1): test accuracy {100 * acc_linear:.2f}%, "
          f"{t_ref:.1f} s")
    for M in args.templates:
        task = load_task(MIXTURE, dict(OPTIONS, templates=str(M)))
        t = time.perf_counter()
        out = train_user_task(task, args.train, C=args.mixture_C, epsilon=1e-3,
                              latent_rounds=args.rounds,
                              on_round=lambda r: print(f"    round {r.round}: f {r.objective:.6g}, "
                                                       f"{r.changed} changed, {r.epochs} epochs, "
                                                       f"{r.seconds:.1f} s", flush=True))
        dt = time.perf_counter() - t
        acc = accuracy(task, out.fields['w'], args.test, latent=True)
        print(f"  mixture M={M} C={args.mixture_C:g}: test accuracy {100 * acc:.2f}% "
              f"({100 * (acc - acc_linear):+.2f} points), {len(out.rounds)} rounds "
              f"({out.stopped}), {dt:.1f} s, gap {out.fields['relative_gap']:.2e}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--only", default="oracle,train,mixture")
    ap.add_argument("--templates", type=lambda s: [int(x) for x in s.split(",")], default=[4])
    ap.add_argument("--mixture-C", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    for name in args.only.split(","):
        {"oracle": bench_oracle, "train": bench_train, "mixture": bench_mixture}[name](args)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
