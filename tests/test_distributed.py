"""Dask (svmtrain.distributed): partitions at example boundaries, verify-bound and predict equal to the
single-process run, CoCoA+ training certified and close to the embedded model, worker loss."""

import gzip
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data, distributed
from svmtrain.cli import main
from svmtrain.model import read_model
from svmtrain.tasks import task_class

DATA = Path(__file__).resolve().parent.parent / "data"
A9A = DATA / "a9a.train.sample"
CONLL = DATA / "conll2000.train.svm"
CPUSMALL = DATA / "cpusmall_scale.train.sample"
PENDIGITS = DATA / "pendigits_scale.train.sample"
HEART = DATA / "heart_scale"

dask_distributed = pytest.importorskip("distributed")


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


@pytest.fixture(scope="module")
def cluster():
    """An in-process cluster of 4 one-thread workers; commands join it with --scheduler."""
    with dask_distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                       dashboard_address=":0") as c:
        yield c


# -- partitions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, grouping", [(A9A, "row"), (CONLL, "consecutive")])
def test_partitions_cover_the_file_in_whole_examples(path, grouping, tmp_path):
    head = tmp_path / "head"
    head.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:1500]))
    path = head
    whole = data.load(str(path))
    for size in (97, 4096, 65536):
        spans = distributed.partitions(str(path), grouping, size=size)
        assert spans[0][0] == 0 and sum(n for _, n in spans) == os.path.getsize(path)
        parts = [data.load(str(path), offset=o, length=n) for o, n in spans]
        assert all(p.n_rows for p in parts)
        joined = data.concat_blocks(parts)
        for name in ("indptr", "indices", "data", "target", "qid", "line"):
            assert np.array_equal(getattr(joined, name), getattr(whole, name)), (size, name)
        if grouping == "consecutive":     # no sentence straddles two partitions
            for a, b in zip(parts[:-1], parts[1:]):
                assert a.qid[-1] != b.qid[0]


def test_partition_boundary_skips_comments_inside_a_sentence(tmp_path):
    f = tmp_path / "seq"
    f.write_bytes(b"1 qid:1 1:1\n2 qid:1 2:1\n# a comment\n\n1 qid:1 3:1\n2 qid:2 1:1\n1 qid:3 1:1\n")
    for size in range(1, 60):
        spans = distributed.partitions(str(f), "consecutive", size=size)
        qids = [list(data.load(str(f), offset=o, length=n).qid) for o, n in spans]
        assert sum(qids, []) == [1, 1, 1, 2, 3]
        # the sentence is never cut at its comment
        assert [q.count(1) for q in qids if 1 in q] == [3], (size, qids)


def test_compressed_and_stdin_are_one_partition(tmp_path):
    gz = tmp_path / "a.gz"
    gz.write_bytes(gzip.compress(A9A.read_bytes()))
    assert distributed.partitions(str(gz), "row", size=10) == [None]
    assert distributed.partitions("-", "row", size=10) == [None]
    assert distributed.partitions(str(A9A), "whole", size=10) == [None]


# -- verify-bound and predict ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def a9a_model(tmp_path_factory):
    model = tmp_path_factory.mktemp("m") / "a9a.model"
    assert run("train", "-q", A9A, model).exit_code == 0
    return model


def test_verify_bound_on_dask_equals_the_single_process_figures(cluster, a9a_model, tmp_path, monkeypatch):
    alone = run("verify-bound", "--json", a9a_model, A9A)
    assert alone.exit_code == 0, alone.output
    # many small partitions: the figures must not depend on the cut
    monkeypatch.setattr(distributed, "PARTITION_BYTES", 5000)
    on_dask = run("verify-bound", "--json", "--scheduler", cluster.scheduler_address, a9a_model, A9A)
    assert on_dask.exit_code == 0, on_dask.output
    assert on_dask.stdout == alone.stdout
    gz = tmp_path / "a9a.gz"
    gz.write_bytes(gzip.compress(A9A.read_bytes()))
    assert run("verify-bound", "--json", "--scheduler", cluster.scheduler_address, a9a_model,
               gz).stdout == alone.stdout


def test_verify_bound_sequence_partitions(cluster, tmp_path, monkeypatch):
    train = tmp_path / "conll"
    lines = CONLL.read_bytes().splitlines(keepends=True)[:3000]
    train.write_bytes(b"".join(lines))
    model = tmp_path / "conll.model"
    assert run("train", "-q", "-t", "sequence", "-e", "0.1", train, model).exit_code == 0
    alone = run("verify-bound", "--json", model, train)
    monkeypatch.setattr(distributed, "PARTITION_BYTES", 3000)
    on_dask = run("verify-bound", "--json", "--scheduler", cluster.scheduler_address, model, train)
    assert on_dask.exit_code == alone.exit_code and on_dask.stdout == alone.stdout


def test_predict_on_dask_writes_the_same_lines_in_file_order(cluster, a9a_model, tmp_path, monkeypatch):
    out1, out2 = tmp_path / "p1", tmp_path / "p2"
    alone = run("predict", "--scores", A9A, a9a_model, out1)
    monkeypatch.setattr(distributed, "PARTITION_BYTES", 7000)
    on_dask = run("predict", "--scores", "--scheduler", cluster.scheduler_address, A9A, a9a_model, out2)
    assert on_dask.exit_code == 0, on_dask.output
    assert out1.read_bytes() == out2.read_bytes()
    assert on_dask.stderr == alone.stderr          # Accuracy = ...


def test_local_cluster_of_worker_processes(a9a_model):
    """--workers 2 starts real worker processes."""
    alone = run("verify-bound", "--json", a9a_model, A9A)
    on_dask = run("verify-bound", "--json", "--workers", "2", a9a_model, A9A)
    assert on_dask.exit_code == 0, on_dask.output
    assert on_dask.stdout == alone.stdout


# -- training (CoCoA+) -----------------------------------------------------------------------------

def _train_on(cluster_address, path, task, n_partitions, **kw):
    s = distributed.Session(None, cluster_address)
    try:
        options = {"p": 0.1, "loss": None, "rescaling": "margin"}
        args = dict(zero_based=False, options=options, C=1.0, bias=None, epsilon=1e-2,
                    max_epochs=3000, seed=3, partitions_count=n_partitions)
        args.update(kw)
        return distributed.train_cocoa(s, task_class(task), str(path), **args)
    finally:
        s.close()


# CoCoA+'s safe sigma' = K makes rounds grow faster than K on these small, hard problems (an
# independent numpy CoCoA+ on heart_scale needs 16 / 44 / 152 rounds for K = 1 / 2 / 4 at 1e-2):
# the tolerances keep the test quick
@pytest.mark.parametrize("path, task, lines, eps, counts", [
    (HEART, "binary", None, 0.02, (1, 2, 4)), (CPUSMALL, "regression", None, 0.01, (1, 2, 4)),
    (PENDIGITS, "multiclass", 150, 0.05, (1, 2))])
def test_cocoa_is_certified_and_close_to_the_embedded_model(cluster, path, task, lines, eps, counts,
                                                           tmp_path):
    if lines:
        head = tmp_path / "head"
        head.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:lines]))
        path = head
    embedded = tmp_path / "embedded.model"
    args = ["-t", task, "-e", str(eps), "--seed", "3"]
    assert run("train", "-q", *args, path, embedded).exit_code == 0
    e = read_model(embedded)
    w_e = np.asarray(e.w, float).ravel()
    for k in counts:
        t, r = _train_on(cluster.scheduler_address, path, task, k, epsilon=eps)
        assert r.partitions == k and r.converged and r.relative_gap <= eps
        # weak duality across the two runs: each dual is below the other's primal
        assert r.dual <= e.primal and e.dual <= r.primal
        # 1/2 |w - w*|^2 <= P(w) - OPT (strong convexity): the two models are close
        w_d = np.asarray(t.model_weights(r.w, r.geometry), float).ravel()
        bound = np.sqrt(2 * (r.primal - r.dual)) + np.sqrt(2 * (e.primal - e.dual))
        assert np.linalg.norm(w_d - w_e) <= bound


def test_cocoa_model_verifies_bit_for_bit_and_repeats(cluster, tmp_path):
    model, again = tmp_path / "d.model", tmp_path / "d2.model"
    for m in (model, again):
        r = run("train", "-m", "n-slack", "-e", "0.05", "--scheduler", cluster.scheduler_address,
                HEART, m)
        assert r.exit_code == 0, r.output
        assert "CoCoA+, 4 partitions" in r.stderr
    assert model.read_bytes() == again.read_bytes()      # same seed, same cluster: same model
    v = run("verify-bound", "--json", model, HEART)
    assert v.exit_code == 0
    import json
    assert json.loads(v.stdout)["primal"] == read_model(model).primal


def test_dask_options_are_checked_before_the_data(cluster, tmp_path):
    r = run("train", "--workers", "2", "--scheduler", cluster.scheduler_address, A9A, tmp_path / "m")
    assert r.exit_code == 2 and "not both" in r.output
    r = run("train", "-m", "n-slack", "-t", "sequence", "--workers", "2", CONLL, tmp_path / "m")
    assert r.exit_code == 2 and "binary, regression and multiclass" in r.output
    r = run("train", "-m", "online-dual", "--workers", "2", A9A, tmp_path / "m")
    assert r.exit_code == 2 and "n-slack" in r.output
    assert not (tmp_path / "m").exists()


def test_without_dask_the_flags_say_how_to_get_it(monkeypatch, a9a_model, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)     # import distributed -> ImportError
    for args in (["train", "--workers", "2", A9A, tmp_path / "m"],
                 ["verify-bound", "--workers", "2", a9a_model, A9A],
                 ["predict", "--scheduler", "tcp://127.0.0.1:1", A9A, a9a_model, tmp_path / "p"]):
        r = run(*args)
        assert r.exit_code == 2 and "pip install 'svmtrain[dask]'" in r.output, r.output
    assert not (tmp_path / "m").exists() and not (tmp_path / "p").exists()
    # and the embedded default never imports it
    assert run("verify-bound", a9a_model, A9A).exit_code == 0


def test_a_worker_killed_mid_training_does_not_lose_the_run():
    """Dask recomputes the lost partitions and rounds from their lineage (every task is
    deterministic: seeds per partition and round), so the run ends with the very same model."""
    with dask_distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0") as c:
        with dask_distributed.Client(c) as client:
            pids = list(client.run(os.getpid).values())
        _, reference = _train_on(c.scheduler_address, HEART, "binary", 2, max_epochs=12, epsilon=1e-6)
        killed = []

        def kill_one(record):
            if record.epoch == 6 and not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        _, r = _train_on(c.scheduler_address, HEART, "binary", 2, max_epochs=12, epsilon=1e-6,
                         on_epoch=kill_one)
        assert killed
        assert np.array_equal(r.w, reference.w) and r.dual == reference.dual


def test_bad_input_on_dask_names_the_file_and_line(cluster, a9a_model, tmp_path, monkeypatch):
    lines = A9A.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad"
    bad.write_bytes(b"".join(lines[:1500] + [b"+1 3:1 2:oops\n"] + lines[1500:]))
    monkeypatch.setattr(distributed, "PARTITION_BYTES", 20000)
    for args in (["verify-bound", a9a_model, bad], ["predict", bad, a9a_model, tmp_path / "p"],
                 ["train", bad, tmp_path / "m"], ["train", "-m", "1-slack", bad, tmp_path / "m"]):
        r = run(args[0], "--scheduler", cluster.scheduler_address, *args[1:])
        assert r.exit_code == 2 and f"{bad}:1501:" in r.output, r.output
    assert not (tmp_path / "p").exists() and not (tmp_path / "m").exists()


def test_standard_input_is_read_by_the_client(cluster, a9a_model, tmp_path):
    alone = run("verify-bound", "--json", a9a_model, "-", input=A9A.read_bytes())
    on_dask = run("verify-bound", "--json", "--scheduler", cluster.scheduler_address, a9a_model, "-",
                  input=A9A.read_bytes())
    assert on_dask.exit_code == 0 and on_dask.stdout == alone.stdout
    r = run("train", "--scheduler", cluster.scheduler_address, "-", tmp_path / "m", input=A9A.read_bytes())
    assert r.exit_code == 2 and "standard input" in r.output


# -- training (1-slack) ----------------------------------------------------------------------------

OPTIONS = {"p": 0.1, "loss": None, "rescaling": "margin"}


def _oneslack_on(cluster_address, path, task, n_partitions, **kw):
    s = distributed.Session(None, cluster_address)
    try:
        args = dict(zero_based=False, options=OPTIONS, C=1.0, bias=None, epsilon=1e-2,
                    max_epochs=2000, seed=1, partitions_count=n_partitions)
        args.update(kw)
        return distributed.train_oneslack(s, task_class(task), str(path), **args)
    finally:
        s.close()


def _head(path, lines, tmp_path):
    if not lines:
        return path
    head = tmp_path / f"{path.name}.head"
    head.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:lines]))
    return head


@pytest.mark.parametrize("path, task, lines, C, eps", [
    (HEART, "binary", None, 1.0, 1e-2), (PENDIGITS, "multiclass", 200, 1.0, 5e-2),
    (CPUSMALL, "regression", None, 1.0, 1e-2), (CONLL, "sequence", 500, 0.1, 0.1),
    (DATA / "ohsumed.train.sample", "ranking", None, 0.01, 1e-2)])
def test_oneslack_on_dask_is_the_embedded_model(cluster, path, task, lines, C, eps, tmp_path):
    """One partition: the embedded run (one shard below 4096 examples) bit for bit; 2 and 4
    partitions: certified, within the strong-convexity distance of the embedded model."""
    path = _head(path, lines, tmp_path)
    embedded = tmp_path / "embedded.model"
    r = run("train", "-q", "-m", "1-slack", "-t", task, "-c", C, "-e", eps, path, embedded)
    assert r.exit_code == 0, r.output
    e = read_model(embedded)
    w_e = np.asarray(e.w, float).ravel()
    for k in (1, 2, 4):
        t, r, K = _oneslack_on(cluster.scheduler_address, path, task, k, C=C, epsilon=eps)
        assert K == k and r.converged and r.relative_gap <= eps
        w_d = np.asarray(t.model_weights(r.w, r.geometry), float).ravel()
        if k == 1:
            assert np.array_equal(w_d, w_e) and (r.dual, r.primal) == (e.dual, e.primal)
            continue
        assert r.dual <= e.primal and e.dual <= r.primal
        bound = np.sqrt(2 * (r.primal - r.dual)) + np.sqrt(2 * (e.primal - e.dual))
        assert np.linalg.norm(w_d - w_e) <= bound


def test_oneslack_on_dask_trains_on_distinct_rows_and_prices_every_row(cluster, tmp_path):
    """Each partition merges its identical rows (heart_scale three times: 270 distinct of 810);
    the certificate's primal is still verify-bound's sum over every row of the file, bit for bit,
    and the model is the local one's within the gaps."""
    from svmtrain import objective
    from svmtrain.tasks.base import Geometry
    path = tmp_path / "heart.x3"
    path.write_bytes(HEART.read_bytes() * 3)
    local = tmp_path / "local.model"
    r = run("train", "-q", "-m", "1-slack", "-e", "1e-3", path, local)
    assert r.exit_code == 0, r.output
    e = read_model(local)
    t, r, K = _oneslack_on(cluster.scheduler_address, path, "binary", 2, epsilon=1e-3)
    assert K == 2 and r.converged and r.relative_gap <= 1e-3
    assert r.distinct_examples == 2 * 270 and r.examples == 810   # each half: its own 270
    block = data.load(str(path))
    priced = objective.primal(t, r.w, Geometry(block.n_features, None), 1.0, [block], str(path))
    assert priced.primal == r.primal and priced.examples == 810
    assert r.dual <= e.primal and e.dual <= r.primal


def test_oneslack_on_dask_starts_from_a_sample_of_every_partition(cluster, tmp_path, monkeypatch):
    """The sample start on Dask: every k-th row of each partition comes to the client, whose
    1-slack solution is the first query point; the run is still certified on every row."""
    from svmtrain.solvers import oneslack
    monkeypatch.setattr(oneslack, "SAMPLE_MIN_EXAMPLES", 50)
    path = tmp_path / "heart.x3"
    path.write_bytes(HEART.read_bytes() * 3)
    t, r, K = _oneslack_on(cluster.scheduler_address, path, "binary", 2, epsilon=1e-3,
                           sample_start=3)
    assert K == 2 and r.converged and r.relative_gap <= 1e-3 and r.sample_iterations > 0
    one, r1, _ = _oneslack_on(cluster.scheduler_address, HEART, "binary", 1, epsilon=1e-3,
                              sample_start=3)
    local = oneslack.train_oneslack(one, data.load(str(HEART)), str(HEART), C=1.0, bias=None,
                                    epsilon=1e-3, max_epochs=2000, seed=1, sample_start=3)
    # one partition: the local run's sample, solution and certificate, bit for bit
    assert r1.sample_iterations == local.sample_iterations > 0
    assert np.array_equal(r1.w, local.w) and (r1.primal, r1.dual) == (local.primal, local.dual)


def test_oneslack_on_dask_repeats_bit_for_bit_and_verifies(cluster, tmp_path):
    path = _head(PENDIGITS, 200, tmp_path)
    models = [tmp_path / "a.model", tmp_path / "b.model"]
    for m in models:
        r = run("train", "-m", "1-slack", "-t", "multiclass", "-e", "5e-2", "--scheduler",
                cluster.scheduler_address, path, m)
        assert r.exit_code == 0, r.output
        assert "1-slack on Dask (4 partitions)" in r.stderr
    assert models[0].read_bytes() == models[1].read_bytes()
    import json
    v = run("verify-bound", "--json", models[0], path)
    assert v.exit_code == 0 and json.loads(v.stdout)["primal"] == read_model(models[0]).primal


def test_oneslack_on_dask_refuses_what_it_cannot_cut(cluster, tmp_path):
    lines = (DATA / "ohsumed.train.sample").read_bytes().splitlines(keepends=True)
    scattered = tmp_path / "scattered"
    scattered.write_bytes(b"".join(lines[::2] + lines[1::2]))     # every query's lines in two runs
    r = run("train", "-m", "1-slack", "-t", "ranking", "--scheduler", cluster.scheduler_address,
            scattered, tmp_path / "m")
    assert r.exit_code == 2 and "has lines in two parts" in r.output, r.output
    r = run("train", "-m", "1-slack", "-t", "constraints", "--workers", "2", A9A, tmp_path / "m")
    assert r.exit_code == 2 and "1-slack training is for the" in r.output
    r = run("train", "-m", "1-slack", "--threads", "2", "--workers", "2", A9A, tmp_path / "m")
    assert r.exit_code == 2 and "--threads" in r.output
    # the training controls are not honoured on Dask: refused by their own flag, before the data
    for flags, named in ((["-w", "1", "2"], "-w does not"), (["--nonneg", "all"], "--nonneg"),
                         (["--prior", HEART], "--prior does not"), (["--class-weight", "balanced"],
                                                                    "--class-weight does not")):
        for mode in ("1-slack", "n-slack"):
            r = run("train", "-m", mode, *flags, "--workers", "2", HEART, tmp_path / "m")
            assert r.exit_code == 2 and named in r.output, (flags, r.output)
    assert not (tmp_path / "m").exists()


def test_a_worker_killed_mid_oneslack_training_does_not_lose_the_run(tmp_path):
    """The lost worker's shard is rebuilt by Dask from its byte range on another worker (its cache
    starts empty): the run goes on to a certified model close to the undisturbed one."""
    path = _head(PENDIGITS, 300, tmp_path)
    with dask_distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0") as c:
        with dask_distributed.Client(c) as client:
            pids = list(client.run(os.getpid).values())
        t, reference, _ = _oneslack_on(c.scheduler_address, path, "multiclass", 2, epsilon=1e-2)
        killed = []

        def kill_one(record):
            if record.epoch == 5 and not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        _, r, K = _oneslack_on(c.scheduler_address, path, "multiclass", 2, epsilon=1e-2,
                               on_epoch=kill_one)
    assert killed and K == 2 and r.converged and r.examples == reference.examples
    assert r.dual <= reference.primal and reference.dual <= r.primal
    bound = np.sqrt(2 * (r.primal - r.dual)) + np.sqrt(2 * (reference.primal - reference.dual))
    assert np.linalg.norm(r.w - reference.w) <= bound


def test_a_lost_cluster_leaves_the_working_set_and_no_model(tmp_path, monkeypatch):
    """The scheduler gone mid-run: exit 1 with one line, no model, the working set in
    MODEL_FILE.state.npz; --warm-start MODEL_FILE resumes from it (here without Dask)."""
    path = _head(PENDIGITS, 200, tmp_path)
    model = tmp_path / "m.model"
    cluster = dask_distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                            dashboard_address=":0")
    calls = []
    real_run = distributed.DaskShards.run

    def run_then_lose(self, fn, args):
        calls.append(fn)
        if len(calls) == 6:
            cluster.close()
        return real_run(self, fn, args)

    monkeypatch.setattr(distributed.DaskShards, "run", run_then_lose)
    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", "2s")   # Dask waits this long for it
    try:
        r = run("train", "-m", "1-slack", "-t", "multiclass", "-e", "1e-3", "--scheduler",
                cluster.scheduler_address, path, model)
    finally:
        cluster.close()
    assert r.exit_code == 1 and "lost" in r.output and "--warm-start" in r.output, r.output
    assert not model.exists()
    state = tmp_path / "m.model.state.npz"
    assert state.exists()
    resumed = run("train", "-m", "1-slack", "-t", "multiclass", "-e", "1e-3", "--warm-start", model,
                  path, model)
    assert resumed.exit_code == 0, resumed.output
    assert read_model(model).relative_gap <= 1e-3


def test_oneslack_on_dask_honours_the_bias_feature(cluster, tmp_path):
    embedded = tmp_path / "embedded.model"
    r = run("train", "-q", "-m", "1-slack", "-B", "1", "-e", "1e-2", HEART, embedded)
    assert r.exit_code == 0, r.output
    e = read_model(embedded)
    t, r, _ = _oneslack_on(cluster.scheduler_address, HEART, "binary", 1, bias=1.0)
    assert np.array_equal(np.asarray(e.w, float).ravel(), t.model_weights(r.w, r.geometry))
    assert r.primal == e.primal and len(r.w) == 14      # 13 features and the bias


# -- paths, convergence ----------------------------------------------------------------------------

def test_relative_paths_work_with_workers_in_another_directory(tmp_path, monkeypatch):
    """The workers of a --scheduler run may run in any directory: the client sends them absolute
    paths, and names the file as the user gave it in its messages."""
    import dask
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    (here / "train.svm").write_bytes(HEART.read_bytes())
    lines = A9A.read_bytes().splitlines(keepends=True)[:300]
    (here / "bad.svm").write_bytes(b"".join(lines[:200] + [b"+1 3:1 2:oops\n"] + lines[200:]))
    monkeypatch.chdir(elsewhere)
    # spawned worker processes start in the directory the client is in now, and stay there
    with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}), \
            dask_distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                          dashboard_address=":0") as c:
        monkeypatch.chdir(here)
        with dask_distributed.Client(c) as client:
            assert list(client.run(os.getcwd).values()) == [str(elsewhere)]
        address = c.scheduler_address
        for mode in ("n-slack", "1-slack"):
            r = run("train", "-q", "-m", mode, "-e", "0.05", "--scheduler", address, "train.svm",
                    f"{mode}.model")
            assert r.exit_code == 0, r.output
            assert (here / f"{mode}.model").exists() and not (elsewhere / f"{mode}.model").exists()
        v = run("verify-bound", "--scheduler", address, "n-slack.model", "train.svm")
        assert v.exit_code == 0, v.output
        p = run("predict", "--scheduler", address, "train.svm", "n-slack.model", "out")
        assert p.exit_code == 0 and (here / "out").exists(), p.output
        for args in (["train", "bad.svm", "m"], ["train", "-m", "1-slack", "bad.svm", "m"],
                     ["verify-bound", "n-slack.model", "bad.svm"],
                     ["predict", "bad.svm", "n-slack.model", "p"]):
            r = run(args[0], "--scheduler", address, *args[1:])
            assert r.exit_code == 2 and "bad.svm:201:" in r.output, r.output
            assert str(here) not in r.output      # named as given
        assert not (here / "m").exists() and not (here / "p").exists()


def test_the_line_search_takes_the_best_step_and_the_dual_never_falls(cluster):
    rng = np.random.default_rng(5)
    for _ in range(20):
        w, dw = rng.normal(size=6), rng.normal(size=6)
        l_delta, t_max = float(rng.normal()) * 3, float(rng.uniform(1, 4))
        t = distributed.line_search(w, dw, l_delta, t_max)
        grid = np.linspace(0, t_max, 4001)
        dual = [-0.5 * np.dot(w + g * dw, w + g * dw) + g * l_delta for g in grid]
        assert 0 <= t <= t_max
        assert -0.5 * np.dot(w + t * dw, w + t * dw) + t * l_delta >= max(dual) - 1e-12
    records = []
    _t, r = _train_on(cluster.scheduler_address, HEART, "binary", 2, epsilon=1e-3,
                      on_epoch=records.append)
    assert r.converged
    duals = [rec.dual for rec in records]
    assert all(b >= a for a, b in zip(duals, duals[1:]))
    assert all(rec.dual <= rec.primal for rec in records)


def test_a_cocoa_run_stopped_by_max_epochs_says_why(cluster, tmp_path):
    model = tmp_path / "m"
    r = run("train", "-m", "n-slack", "-e", "1e-9", "--max-epochs", "4", "--scheduler",
            cluster.scheduler_address, HEART, model)
    assert r.exit_code == 0, r.output
    assert "above epsilon 1e-09 after 4 CoCoA+ rounds (--max-epochs 4)" in r.stderr
    assert "more rounds: give --max-epochs" in r.stderr, r.stderr
    assert read_model(model).relative_gap > 1e-9       # the model says so too


def test_the_convergence_message_names_a_stalled_run():
    from svmtrain.engine import EpochRecord
    flat = [EpochRecord(k, 0.1 * k, 1.0, 1.1, 0.05, True, 10, 0.0) for k in range(1, 31)]
    note = distributed.why_not_converged(flat, 1e-3, 30)
    assert "relative gap 0.05 is above epsilon 0.001 after 30 CoCoA+ rounds" in note
    assert "did not shrink" in note
    halving = [EpochRecord(k, 0.1 * k, 1.0, 1.1, 0.5 ** k, True, 10, 0.0) for k in range(1, 6)]
    note = distributed.why_not_converged(halving, 1.01 * 0.5 ** 8, 5)
    assert "about 3 more rounds" in note and "--max-epochs 8" in note


_meeting = None


def _meet(shard):
    """Both calls must be running at once for either to pass the barrier."""
    _meeting.wait(timeout=30)
    return shard.block.n_rows


def test_the_shards_of_a_worker_with_two_threads_are_called_at_once():
    """A worker with two threads holds two partitions; each iteration calls both shards' hosts at
    once (Dask runs an actor's own methods in one thread per worker: they would queue)."""
    import threading
    global _meeting
    _meeting = threading.Barrier(2)
    with dask_distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=None) as c:
        s = distributed.Session(None, c.scheduler_address)
        try:
            shards = distributed.DaskShards(s, task_class("binary"), str(HEART), zero_based=False,
                                            options=None, C=1.0, bias=None)
            assert shards.partitions == 2
            assert sum(shards._call_hosts(_meet)) == 270
            shards.close()
        finally:
            s.close()
