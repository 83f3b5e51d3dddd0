"""The budgeted mode (BSCA / BSGD on a budget of RBF support vectors): against a brute-force QP, the
merge against direct kernel algebra, determinism, the CLI and the model files."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from svmtrain import data
from svmtrain._budget import Expansion, golden_search, merge_gain_at, table_search
from svmtrain.cli import main
from svmtrain.model import format_model, parse_model, read_model
from svmtrain.solvers.budgeted import train_budgeted
from svmtrain.tasks import task_class

DATA = Path(__file__).resolve().parent.parent / "data"
HEART = DATA / "heart_scale"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def dense(block, n_cols=None):
    X = np.zeros((block.n_rows, n_cols or block.n_features))
    for i in range(block.n_rows):
        s, e = block.indptr[i], block.indptr[i + 1]
        X[i, block.indices[s:e]] = block.data[s:e]
    return X


def rbf(A, B, gamma):
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def brute_force_dual(Q, C, iterations=20000):
    """max 1'a - 1/2 a'Qa on [0, C]^n by projected gradient ascent (step 1/L), plain numpy."""
    step = 1.0 / np.linalg.eigvalsh(Q)[-1]
    a = np.zeros(len(Q))
    for _ in range(iterations):
        a = np.clip(a + step * (1.0 - Q @ a), 0.0, C)
    return a


@pytest.fixture(scope="module")
def heart100(tmp_path_factory):
    path = tmp_path_factory.mktemp("budgeted") / "heart100"
    path.write_text("".join(HEART.read_text().splitlines(keepends=True)[:100]))
    return path


def test_unbudgeted_converges_to_the_exact_kernel_svm(heart100):
    """B >= n: no merge ever; BSCA is then exact coordinate ascent and must reach the QP optimum."""
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    C, gamma = 2.0, 0.2
    result = train_budgeted(task, block, str(heart100), C=C, gamma=gamma, budget=100, epochs=300)
    assert result.merges == 0

    y = task.signs(block, "x")
    X = dense(block)
    K = rbf(X, X, gamma)
    Q = K * np.outer(y, y)
    a = brute_force_dual(Q, C)
    opt = a.sum() - 0.5 * a @ Q @ a
    # the certificate closes on the optimum from both sides
    assert result.dual <= opt + 1e-9 * opt <= result.primal + 2e-9 * opt
    assert result.primal - result.dual <= 1e-6 * opt
    # and the model is the QP's: same decision values
    beta, indptr, indices, values = result.support_vectors[0]
    svs = dense(data.Block(indptr, indices, values, np.zeros(len(beta)), np.full(len(beta), -1),
                           np.ones(len(beta)), np.arange(len(beta)), block.n_features, 0), X.shape[1])
    ours = rbf(X, svs, gamma) @ beta
    assert np.allclose(ours, K @ (a * y), atol=1e-5)


def test_budgeted_dual_and_primal_bracket_the_optimum(heart100):
    """With merging, P(w~) and D(alpha) (exact kernel) must still bracket the unbudgeted optimum."""
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    C, gamma = 2.0, 0.2
    y = task.signs(block, "x")
    X = dense(block)
    Q = rbf(X, X, gamma) * np.outer(y, y)
    a = brute_force_dual(Q, C)
    opt = a.sum() - 0.5 * a @ Q @ a
    for optimizer in ("bsca", "bsgd"):
        r = train_budgeted(task, block, str(heart100), C=C, gamma=gamma, budget=10, epochs=3,
                           optimizer=optimizer)
        assert r.merges > 0 and len(r.support_vectors[0][0]) <= 10
        assert r.dual <= opt <= r.primal, optimizer


def two_sv_expansion(x1, x2, b1, b2, gamma):
    X = np.array([x1, x2], dtype=float)
    indptr = np.array([0, 2, 4])
    indices = np.array([0, 1, 0, 1])
    return Expansion.from_arrays(2, gamma, [b1, b2], indptr, indices, X.ravel(), capacity=3)


@pytest.mark.parametrize("b1, b2, gamma", [(0.3, 1.0, 0.5), (-2.0, -0.7, 2.0), (1.0, 1.0, 0.1),
                                           (0.05, 3.0, 4.0), (0.9, 1.1, 8.0)])
def test_merge_weight_degradation_is_the_direct_norm(b1, b2, gamma):
    x1, x2 = np.array([0.2, -0.5]), np.array([0.9, 0.4])
    e = two_sv_expansion(x1, x2, b1, b2, gamma)
    m, partner, h, beta_z, degradation = e.merge_once(0.001)
    beta, indptr, indices, values = e.export()
    assert e.n_sv == 1 and {m, partner} == {0, 1}
    xm, xp = (x1, x2) if m == 0 else (x2, x1)
    assert abs(b1 if m == 0 else b2) <= abs(b2 if m == 0 else b1)   # the smaller |beta| is "min"
    z = np.zeros(2)
    z[indices] = values
    assert np.allclose(z, h * xm + (1 - h) * xp)
    assert beta[0] == beta_z
    k = lambda u, v: np.exp(-gamma * np.sum((u - v) ** 2))  # noqa: E731
    direct = (b1 * b1 + b2 * b2 + beta_z * beta_z + 2 * b1 * b2 * k(x1, x2)
              - 2 * beta_z * (b1 * k(x1, z) + b2 * k(x2, z)))
    assert degradation == pytest.approx(direct, rel=1e-9, abs=1e-12)
    # the closed-form coefficient is the best one for this z: the norm is a parabola in beta_z
    for eps in (1e-3, -1e-3):
        bz = beta_z + eps
        worse = b1 * b1 + b2 * b2 + bz * bz + 2 * b1 * b2 * k(x1, x2) - 2 * bz * (b1 * k(x1, z) + b2 * k(x2, z))
        assert worse > direct
    # and h is as good as the best of a fine grid over z = h x_m + (1-h) x_p (closed-form beta each)
    hs = np.linspace(0, 1, 20001)
    Z = hs[:, None] * xm + (1 - hs[:, None]) * xp
    km = np.exp(-gamma * ((Z - xm) ** 2).sum(1))
    kp = np.exp(-gamma * ((Z - xp) ** 2).sum(1))
    bm, bp = (b1, b2) if m == 0 else (b2, b1)
    grid_wd = bm * bm + bp * bp + 2 * bm * bp * k(xm, xp) - (bm * km + bp * kp) ** 2
    # (within the search's precision: when g is bimodal the search may settle on an end of [0, 1]
    # that is 1e-3 short of a peak next to it)
    assert degradation <= grid_wd.min() + 1e-3 * (bm * bm)


def test_golden_section_against_a_grid():
    rng = np.random.default_rng(0)
    hs = np.linspace(0.0, 1.0, 100001)
    for _ in range(300):
        share, gd2 = rng.uniform(0.01, 0.5), rng.uniform(0.0, 6.0)
        g = share * np.exp(-gd2 * (1 - hs) ** 2) + (1 - share) * np.exp(-gd2 * hs ** 2)
        for precision in (0.01, 1e-4):
            h, gain = golden_search(share, gd2, precision)
            assert gain == merge_gain_at(share, gd2, h)
            assert gain >= g.max() - 5 * precision ** 2 * max(gd2, 1.0)
            if precision == 1e-4 and gain - g.max() > -1e-9 and np.sum(g >= g.max() - 1e-12) == 1:
                assert abs(h - hs[np.argmax(g)]) <= 2e-3


def test_merge_chooses_the_partner_of_least_degradation():
    rng = np.random.default_rng(3)
    gamma = 1.0
    for _ in range(20):
        n = 8
        X = rng.normal(size=(n, 3))
        beta = rng.uniform(0.2, 2.0, n) * rng.choice([-1.0, 1.0], n)
        e = Expansion.from_arrays(3, gamma, beta, np.arange(0, 3 * n + 1, 3), np.tile([0, 1, 2], n),
                                  X.ravel(), capacity=n)
        m, partner, h, beta_z, degradation = e.merge_once(1e-4)
        assert m == int(np.argmin(np.abs(beta)))
        hs = np.linspace(0, 1, 2001)
        best = np.inf
        for j in range(n):
            if j == m or beta[j] * beta[m] <= 0:
                continue
            Z = hs[:, None] * X[m] + (1 - hs[:, None]) * X[j]
            km = np.exp(-gamma * ((Z - X[m]) ** 2).sum(1))
            kj = np.exp(-gamma * ((Z - X[j]) ** 2).sum(1))
            kmj = np.exp(-gamma * ((X[m] - X[j]) ** 2).sum())
            wd = (beta[m] ** 2 + beta[j] ** 2 + 2 * beta[m] * beta[j] * kmj
                  - (beta[m] * km + beta[j] * kj) ** 2).min()
            best = min(best, wd)
        if np.isinf(best):
            assert partner == -1 and degradation == pytest.approx(beta[m] ** 2)
        else:
            assert degradation == pytest.approx(best, rel=1e-4, abs=1e-9)


def test_merge_table_against_the_exact_search():
    """The precomputed search (the default): over random (s, kappa), the degradation of the h it
    returns (exact g at that h) is the fine-grid optimum's to 1e-5 (normalised by (beta_m +
    beta_j)^2), and the interpolated degradation the candidates are ranked by is within 2e-4."""
    rng = np.random.default_rng(5)
    hs = np.linspace(0.0, 1.0, 20001)
    for k in range(600):
        share = rng.uniform(0.0, 1.0)
        # kappa over (0, 1], some nearly 0 (far points) and nearly 1 (close points)
        kappa = (1e-6, 1.0 - 1e-7, rng.uniform(1e-4, 1.0))[k % 3] if k < 30 else rng.uniform(1e-4, 1.0)
        gd2 = -np.log(kappa)
        g = share * np.exp(-gd2 * (1 - hs) ** 2) + (1 - share) * np.exp(-gd2 * hs ** 2)
        base = share ** 2 + (1 - share) ** 2 + 2 * share * (1 - share) * kappa
        best = base - g.max() ** 2
        h, gain, interpolated = table_search(share, gd2)
        assert 0.0 <= h <= 1.0 and gain == pytest.approx(merge_gain_at(share, gd2, h), rel=1e-12)
        assert base - gain ** 2 <= best + 1e-5
        assert abs(interpolated - best) <= 2e-4


def test_kappa_bound_is_below_every_ranked_degradation():
    """The pruning bound of the table ranking: for the smallest SV (s = beta_m / (beta_m + beta_j)
    in (0, 1/2]) the interpolated W~(s, kappa) / s^2 is never below the bound of kappa's column,
    over random points, grid nodes, s = 1/2 and kappa near 0 and 1; and the bound is useful (well
    above 0 away from kappa 1)."""
    from svmtrain._budget import kappa_bound
    rng = np.random.default_rng(21)
    shares = np.concatenate([rng.uniform(1e-6, 0.5, 3000), np.arange(1, 101) / 200.0, [0.5] * 50])
    kappas = np.concatenate([rng.uniform(0.0, 1.0, 3000), rng.integers(0, 201, 100) / 200.0,
                             rng.uniform(0.999, 1.0, 25), rng.uniform(0.0, 1e-3, 25)])
    rng.shuffle(kappas)
    for share, kappa in zip(shares, kappas):
        gd2 = -np.log(kappa) if kappa > 0 else 800.0
        _, _, interpolated = table_search(share, gd2)
        assert interpolated / share ** 2 >= kappa_bound(np.exp(-gd2))
    assert kappa_bound(0.5) > 0.1 and kappa_bound(0.9) > 0.003
    assert all(kappa_bound(k) >= kappa_bound(k + 0.01) for k in np.linspace(0, 0.98, 50))


def _random_expansion(rng, n, n_cols, gamma, dense_points=True):
    """n SVs on few distinct points (duplicates: kappa 1) with betas from a short list (ties in
    |beta| and in the ranked degradation), both signs."""
    points = rng.normal(scale=0.4, size=(max(n // 3, 2), 3))
    cols = rng.choice(n_cols, 3, replace=False) if not dense_points else np.arange(3)
    cols.sort()
    X = points[rng.integers(0, len(points), n)]
    beta = rng.choice([0.25, 0.5, 0.5, 1.0, 2.0], n) * rng.choice([-1.0, 1.0], n, p=[0.3, 0.7])
    return Expansion.from_arrays(n_cols, gamma, beta, np.arange(0, 3 * n + 1, 3), np.tile(cols, n),
                                 X.ravel(), capacity=n)


@pytest.mark.parametrize("n_cols", [3, 60000])   # the dense mirror, and sparse rows only (too wide)
def test_pruned_merge_choice_is_the_full_scans(n_cols):
    """The table ranking skips candidates by a bound; the merges must be those of interpolating every
    candidate, bit for bit (the same partner on ties: the lowest slot), merge after merge."""
    from svmtrain._budget import set_candidate_pruning
    rng = np.random.default_rng(7 + n_cols)
    for trial in range(40):
        n, gamma = int(rng.integers(2, 60)), float(rng.choice([0.1, 1.0, 5.0, 50.0]))
        seed = int(rng.integers(1 << 30))
        choices = []
        for prune in (True, False):
            set_candidate_pruning(prune)
            try:
                e = _random_expansion(np.random.default_rng(seed), n, n_cols, gamma, n_cols == 3)
                choices.append([e.merge_once(0.01, table=True) for _ in range(n - 1)] + [e.export()])
            finally:
                set_candidate_pruning(True)
        pruned, full = choices
        for a, b in zip(pruned[:-1], full[:-1]):
            assert a == b
        for a, b in zip(pruned[-1], full[-1]):
            assert np.array_equal(a, b)


def _same_model_both_ways(switch, min_merges, task, block, path, **options):
    """Train with a switch of the merge kernels on and off (a test setter, back on afterwards):
    the same model, bit for bit, and the same number of merges (more than min_merges)."""
    results = []
    for on in (True, False):
        switch(on)
        try:
            results.append(train_budgeted(task, block, str(path), C=32.0, epoch_objectives=False,
                                          **options))
        finally:
            switch(True)
    first, second = results
    assert first.merges == second.merges > min_merges
    for a, b in zip(first.support_vectors[0], second.support_vectors[0]):
        assert np.array_equal(a, b)
    assert first.primal == second.primal and first.dual == second.dual


@pytest.mark.parametrize("optimizer", ["bsca", "bsgd"])
def test_pruned_merges_train_the_same_model(shared, optimizer):
    """End to end on a9a's first 3000 rows, budget 100 (thousands of merges, most of them reusing
    the margin's kernel row): with and without the candidate pruning the same model, bit for bit."""
    from svmtrain._budget import set_candidate_pruning
    path = shared("a9a/a9a.xz", max_lines=3000)
    block = data.load(str(path))
    task = task_class("binary").from_training_data(block, str(path))
    _same_model_both_ways(set_candidate_pruning, 1000, task, block, path, gamma=2.0 ** -7, budget=100,
                          epochs=2, optimizer=optimizer, seed=3)


@pytest.mark.parametrize("optimizer, search, task_name, rel", [
    ("bsca", "table", "binary", "a9a.train.sample"), ("bsgd", "table", "binary", "a9a.train.sample"),
    ("bsca", "golden", "binary", "a9a.train.sample"),
    ("bsca", "table", "regression", "cpusmall_scale.train.sample")])
def test_incoming_merges_train_the_same_model(optimizer, search, task_name, rel):
    """A new SV that is the smallest is merged without being stored (its partner from the margin's
    kernel row, z from the example's row): the same model, bit for bit, as storing it and then
    merging."""
    from svmtrain._budget import set_incoming_merge
    path = Path(__file__).parent.parent / "data" / rel
    block = data.load(str(path))
    task = task_class(task_name).from_training_data(block, str(path), {"p": 0.1})
    _same_model_both_ways(set_incoming_merge, 500, task, block, path, gamma=2.0 ** -3, budget=40,
                          epochs=3, optimizer=optimizer, merge_search=search, seed=5)


def test_table_merge_is_close_to_the_golden_merge():
    """Whole merges with the table: the same SV to merge, a degradation that is the direct norm of
    the merged model's error, and within 1e-4 (relative to (beta_m + beta_j)^2) of the best over all
    partners and a fine grid of h."""
    rng = np.random.default_rng(11)
    for gamma in (0.3, 1.0, 4.0):
        for _ in range(15):
            n = 10
            X = rng.normal(size=(n, 3))
            beta = rng.uniform(0.2, 2.0, n) * rng.choice([-1.0, 1.0], n)
            args = (3, gamma, beta, np.arange(0, 3 * n + 1, 3), np.tile([0, 1, 2], n), X.ravel())
            e = Expansion.from_arrays(*args, capacity=n)
            m, partner, h, beta_z, degradation = e.merge_once(0.01, table=True)
            assert m == int(np.argmin(np.abs(beta)))
            if partner < 0:
                continue
            z = h * X[m] + (1 - h) * X[partner]
            k = lambda u, v: np.exp(-gamma * np.sum((u - v) ** 2))  # noqa: E731
            bm, bp = beta[m], beta[partner]
            direct = (bm * bm + bp * bp + beta_z * beta_z + 2 * bm * bp * k(X[m], X[partner])
                      - 2 * beta_z * (bm * k(X[m], z) + bp * k(X[partner], z)))
            assert degradation == pytest.approx(direct, rel=1e-9, abs=1e-12)
            hs = np.linspace(0, 1, 4001)
            best = np.inf
            for j in range(n):
                if j == m or beta[j] * bm <= 0:
                    continue
                Z = hs[:, None] * X[m] + (1 - hs[:, None]) * X[j]
                km = np.exp(-gamma * ((Z - X[m]) ** 2).sum(1))
                kj = np.exp(-gamma * ((Z - X[j]) ** 2).sum(1))
                wd = bm ** 2 + beta[j] ** 2 + 2 * bm * beta[j] * k(X[m], X[j]) - (bm * km + beta[j] * kj) ** 2
                best = min(best, wd.min())
            assert degradation <= best + 1e-4 * (bm + bp) ** 2


def test_merge_searches_train_alike(heart100):
    """--merge-search table and golden: both merge, both end near each other (a different search
    is a different run, not the same bits)."""
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    results = [train_budgeted(task, block, str(heart100), C=1.0, gamma=0.2, budget=10, epochs=5,
                              merge_search=search) for search in ("table", "golden")]
    assert all(r.merges > 0 for r in results)
    assert results[0].dual == pytest.approx(results[1].dual, rel=0.05)
    with pytest.raises(ValueError, match="merge search"):
        train_budgeted(task, block, str(heart100), C=1.0, gamma=0.2, budget=10, epochs=1,
                       merge_search="exact")


def test_merge_search_option(tmp_path):
    models = {}
    for search in ("table", "golden"):
        models[search] = tmp_path / search
        r = run("train", "-q", "-m", "budgeted", "-g", "0.2", "--budget", "10", "--epochs", "2",
                "--merge-search", search, HEART, models[search])
        assert r.exit_code == 0, r.output
        model = read_model(models[search])
        assert len(model.support_vectors[0][0]) == 10 and model.merge_search == search
    default = tmp_path / "default"
    assert run("train", "-q", "-m", "budgeted", "-g", "0.2", "--budget", "10", "--epochs", "2",
               HEART, default).exit_code == 0
    assert default.read_bytes() == models["table"].read_bytes()


def test_training_is_deterministic(tmp_path):
    paths = [tmp_path / f"m{k}" for k in range(3)]
    for path, seed in zip(paths, (7, 7, 8)):
        assert run("train", "-q", "-m", "budgeted", "--budget", "20", "--epochs", "2", "--seed", seed,
                   HEART, path).exit_code == 0
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()


def test_train_predict_verify_round_trip(tmp_path):
    model, out, trace = tmp_path / "m", tmp_path / "pred", tmp_path / "trace"
    r = run("train", "-m", "budgeted", "-c", "2", "-g", "0.1", "--budget", "30", "--epochs", "3",
            "--trace", trace, "--validation", HEART, HEART, model)
    assert r.exit_code == 0, r.output
    m = read_model(model)
    assert (m.mode, m.kernel, m.gamma, m.budget, m.solver, m.bias) == ("budgeted", "rbf", 0.1, 30, "bsca", None)
    assert len(m.support_vectors) == 1 and len(m.support_vectors[0][0]) == 30
    assert parse_model(format_model(m)) == m and format_model(m) == model.read_text()
    rows = [line.split() for line in trace.read_text().splitlines()[1:]]
    assert [int(r[0]) for r in rows] == [1, 2, 3]
    assert float(rows[-1][2]) == m.primal and float(rows[-1][3]) == m.dual   # primal, dual
    assert 0.7 < float(rows[-1][8]) <= 1.0                                   # validation accuracy

    r = run("predict", "--scores", HEART, model, out)
    assert r.exit_code == 0, r.output
    scores = np.array(out.read_text().split(), dtype=float)
    block = data.load(str(HEART))
    beta, indptr, indices, values = m.support_vectors[0]
    svs = dense(data.Block(indptr, indices, values, beta, beta, beta, beta, 13, 0), 13)
    assert np.allclose(scores, rbf(dense(block, 13), svs, 0.1) @ beta, rtol=1e-12, atol=1e-12)
    accuracy = np.mean(np.where(scores > 0, 1.0, -1.0) == block.target)
    assert accuracy > 0.8
    r = run("predict", HEART, model, out)
    assert f"({int(round(accuracy * 270))}/270)" in r.stderr

    r = run("verify-bound", "--json", model, HEART)   # the gap of a budgeted model: above 1e-3
    assert r.exit_code == 1, r.output
    import json
    v = json.loads(r.stdout)   # both recomputed from the data, bit for bit what training recorded
    assert v["primal"] == m.primal and v["dual"] == m.dual and v["dual"] <= v["primal"]
    assert "warning" not in r.stderr
    assert run("verify-bound", "--tol", "0.9", model, HEART).exit_code == 0

    # D is recomputed from the stored coefficients, not read back: change one, D changes
    rows, values = m.alphas[0]
    values[np.argmax(values)] *= 0.5
    edited = tmp_path / "edited"
    edited.write_text(format_model(m))
    r = run("verify-bound", "--json", edited, HEART)
    assert json.loads(r.stdout)["dual"] != m.dual and "D recomputed" in r.stderr
    # coefficients out of their box for this data (another C): refused, exit 2
    m.alphas[0][1][:] = 100.0
    edited.write_text(format_model(m))
    r = run("verify-bound", edited, HEART)
    assert r.exit_code == 2 and "outside its box" in r.output
    # other data: the coefficients still give a bound for it (zeros elsewhere), with a warning
    r = run("verify-bound", model, DATA / "a9a.test.sample")
    assert r.exit_code == 1 and "the model was trained on 270" in r.stderr


def test_bsgd_runs_and_learns(tmp_path):
    model = tmp_path / "m"
    r = run("train", "-m", "budgeted", "--optimizer", "sgd", "--budget", "100", "--epochs", "5",
            DATA / "a9a.train.sample", model)
    assert r.exit_code == 0, r.output
    m = read_model(model)
    assert m.solver == "bsgd" and 0 < m.dual <= m.primal
    r = run("predict", DATA / "a9a.test.sample", model, tmp_path / "p")
    accuracy = float(r.stderr.split("=")[1].split("%")[0])
    assert accuracy > 80.0       # the majority class is 76% of this sample
    # the implied a_i = n C_i (violations) / T lie in [0, C_i]: verify-bound recomputes D from them
    r = run("verify-bound", "--json", "--tol", "1", model, DATA / "a9a.train.sample")
    assert r.exit_code == 0 and "warning" not in r.stderr, r.output
    assert max(v.max() for _, v in m.alphas) <= m.C


def test_multiclass_one_vs_rest_and_regression(tmp_path):
    model = tmp_path / "mc"
    r = run("train", "-m", "budgeted", "-t", "multiclass", "-c", "10", "--budget", "50", "--epochs", "3",
            DATA / "pendigits_scale.train.sample", model)
    assert r.exit_code == 0, r.output
    m = read_model(model)
    assert len(m.support_vectors) == len(m.labels) == 10 and m.loss is None
    r = run("predict", DATA / "pendigits_scale.test.sample", model, tmp_path / "p")
    assert float(r.stderr.split("=")[1].split("%")[0]) > 82.0   # linear Crammer-Singer: 86%
    assert parse_model(model.read_text()) == m

    # epsilon-SVR with B >= n: the certificate closes (exact coordinate ascent, soft threshold)
    lines = (DATA / "cpusmall_scale.train.sample").read_text().splitlines(keepends=True)[:80]
    small = tmp_path / "cpu80"
    small.write_text("".join(lines))
    block = data.load(str(small))
    task = task_class("regression").from_training_data(block, str(small), {"p": 1.0})
    res = train_budgeted(task, block, str(small), C=10.0, gamma=1.0, budget=80, epochs=400, p=1.0)
    assert res.merges == 0 and res.primal - res.dual <= 1e-6 * res.primal


BAD_OPTIONS = [
    (["-B", "1"], "-B"),
    (["--max-epochs", "3"], "--max-epochs"),
    (["-t", "ranking"], "--task"),
    (["--gamma", "-1"], "gamma"),
    (["--merge-precision", "0.7"], "merge precision"),
    (["--merge-search", "exact"], "--merge-search"),
    (["--budget", "0"], "--budget"),
    (["--epochs", "0"], "--epochs"),
    (["--step-tolerance", "-0.1"], "--step-tolerance"),
    (["--step-tolerance", "nan"], "--step-tolerance"),
    (["--optimizer", "sgd", "--no-shrink"], "--shrink"),
    (["--optimizer", "sgd", "--step-tolerance", "0.1"], "--step-tolerance"),
    (["--format", "liblinear"], "--format"),
    (["-t", "multiclass", "--rescaling", "slack"], "--rescaling"),
]


@pytest.mark.parametrize("args, fragment", BAD_OPTIONS)
def test_bad_options_exit_2(tmp_path, args, fragment):
    model = tmp_path / "m"
    r = run("train", "-m", "budgeted", *args, HEART, model)
    assert r.exit_code == 2 and fragment in r.output and not model.exists(), r.output


@pytest.mark.parametrize("flag", [["--budget", "10"], ["--epochs", "2"], ["--optimizer", "sgd"],
                                  ["-g", "1"], ["--validation", str(HEART)],
                                  ["--merge-search", "golden"], ["--no-shrink"],
                                  ["--step-tolerance", "0.1"]])
def test_budgeted_options_need_the_mode(tmp_path, flag):
    """Given with another mode they are refused (without -m they choose the budgeted mode)."""
    r = run("train", "-m", "n-slack", *flag, HEART, tmp_path / "m")
    assert r.exit_code == 2 and "--mode budgeted" in r.output


@pytest.fixture(scope="module")
def good_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("bm") / "m"
    assert run("train", "-q", "-m", "budgeted", "--budget", "5", "--epochs", "1", HEART, path).exit_code == 0
    return path.read_text().splitlines(keepends=True)


def _alpha_line(lines):
    return next(i for i, line in enumerate(lines) if line.startswith("alphas")) + 1


def _sv_line(lines):
    return next(i for i, line in enumerate(lines) if line.startswith("support_vectors")) + 1


BAD_MODELS = [
    ("index beyond features", lambda L, s: L[:s] + ["1.0 14:0.5\n"] + L[s + 1:], "outside 1..13"),
    ("indices not increasing", lambda L, s: L[:s] + ["1.0 3:1 2:1\n"] + L[s + 1:], "not increasing"),
    ("bad coefficient", lambda L, s: L[:s] + ["nan 3:1\n"] + L[s + 1:], "non-finite"),
    ("bad feature", lambda L, s: L[:s] + ["1.0 3-1\n"] + L[s + 1:], "expected 'index:value'"),
    ("count too small", lambda L, s: L[:s - 1] + ["support_vectors 1 4\n"] + L[s:], "expected 'alphas'"),
    ("truncated", lambda L, s: L[:s] + L[s + 1:], "truncated: expected 5 support vectors, found 4"),
    ("over budget", lambda L, s: [l.replace("budget 5", "budget 4") for l in L], "exceed the budget"),
    ("bias", lambda L, s: [l.replace("bias none", "bias 1.0") for l in L], "no bias"),
    ("missing gamma", lambda L, s: [l for l in L if not l.startswith("gamma")], "missing key gamma"),
    ("weights body", lambda L, s: L[:s - 1] + ["weights dense 13\n"] + L[s:], "support vectors, not weights"),
    ("sets", lambda L, s: L[:s - 1] + ["support_vectors 2 5 5\n"] + L[s:], "number of sets"),
    ("alpha beyond the examples", lambda L, s: _edit_alpha(L, "271:1.0"), "outside 1..270"),
    ("alpha zero", lambda L, s: _edit_alpha(L, "1:0.0"), "zero coefficient"),
    ("alpha syntax", lambda L, s: _edit_alpha(L, "1=0.5"), "expected 'example:value'"),
    ("alphas missing", lambda L, s: L[:_alpha_line(L) - 1] + ["end\n"], "expected 'alphas'"),
]


def _edit_alpha(lines, text):
    a = _alpha_line(lines)
    return lines[:a] + [text + "\n"] + lines[a + 1:]


@pytest.mark.parametrize("name, edit, fragment", BAD_MODELS, ids=[b[0] for b in BAD_MODELS])
def test_bad_model_files_exit_2(tmp_path, good_model, name, edit, fragment):
    bad = tmp_path / "bad.model"
    bad.write_text("".join(edit(list(good_model), _sv_line(good_model))))
    out = tmp_path / "out"
    for args in (["predict", HEART, bad, out], ["verify-bound", bad, HEART]):
        r = run(*args)
        assert r.exit_code == 2, (name, r.output)
        assert f"{bad}:" in r.output and fragment in r.output, (name, r.output)
    assert not out.exists()


def test_dense_and_sparse_support_vector_rows_agree():
    """Small inputs keep the SVs also as dense rows (a kernel row loops over the example's
    non-zeros); wide ones do not. Both must give the same decision values and the same merges."""
    rng = np.random.default_rng(2)
    n, d = 12, 6
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.6)
    indptr = np.concatenate([[0], np.cumsum((X != 0).sum(1))]).astype(np.int64)
    indices = np.nonzero(X)[1].astype(np.int64)
    values = X[X != 0]
    beta = rng.uniform(0.2, 2.0, n) * rng.choice([-1.0, 1.0], n)
    narrow = Expansion.from_arrays(d, 0.5, beta, indptr, indices, values)
    wide = Expansion.from_arrays(10 ** 6, 0.5, beta, indptr, indices, values)   # beyond the dense limit
    for step in range(6):
        assert np.allclose(narrow.decision_values(indptr, indices, values),
                           wide.decision_values(indptr, indices, values), rtol=1e-12, atol=1e-12)
        a, b = narrow.merge_once(0.01, table=step % 2 == 0), wide.merge_once(0.01, table=step % 2 == 0)
        assert a[:2] == b[:2] and np.allclose(a[2:], b[2:], rtol=1e-9, atol=1e-12)
    assert np.allclose(narrow.export()[0], wide.export()[0], rtol=1e-9)


def test_rows_with_unseen_columns_score_by_the_exact_kernel():
    """A row to predict may hold columns the model never saw: they meet zeros in every SV but count
    in ||x - x~_j||^2. The dense layout takes a checked loop for such rows (training rows, checked
    at the epoch's boundary, take the unchecked one); both layouts give the exact expansion."""
    rng = np.random.default_rng(5)
    n, d, gamma = 9, 5, 0.3
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.7)
    beta = rng.uniform(0.2, 2.0, n) * rng.choice([-1.0, 1.0], n)
    indptr = np.concatenate([[0], np.cumsum((X != 0).sum(1))]).astype(np.int64)
    indices, values = np.nonzero(X)[1].astype(np.int64), X[X != 0]
    # rows over d + 3 columns: some with unseen columns (beyond d), some without
    Z = rng.normal(size=(6, d + 3)) * (rng.uniform(size=(6, d + 3)) < 0.6)
    Z[::2, d:] = 0.0
    Z[1, d + 2] = 1.5
    zp = np.concatenate([[0], np.cumsum((Z != 0).sum(1))]).astype(np.int64)
    zi, zv = np.nonzero(Z)[1].astype(np.int64), Z[Z != 0]
    Xw = np.hstack([X, np.zeros((n, 3))])
    exact = np.exp(-gamma * ((Z[:, None, :] - Xw[None, :, :]) ** 2).sum(-1)) @ beta
    for n_cols in (d, 10 ** 6):   # the dense layout, and sparse rows only
        e = Expansion.from_arrays(n_cols, gamma, beta, indptr, indices, values)
        assert np.allclose(e.decision_values(zp, zi, zv), exact, rtol=1e-12, atol=1e-12)


def _epoch_inputs(block, task, C):
    from svmtrain._budget import row_sqnorms
    n = block.n_rows
    return dict(sqnorm=row_sqnorms(block.indptr, block.indices, block.data),
                y=np.ascontiguousarray(task.signs(block, "x"), dtype=np.float64), cost=np.full(n, C),
                alpha=np.zeros(n), slot_of=np.full(n, -1, dtype=np.int64),
                perm=np.arange(n, dtype=np.int64), rng=np.array([7], dtype=np.uint64))


def test_averaged_output_is_the_mean_of_the_iterates(heart100):
    """No merging (B >= n): after one epoch the averaged coefficients are the mean of the last
    `window` iterates of plain coordinate ascent, replayed here in numpy in the epoch's order with
    the exact kernel, and the averaged model is w(a_bar); the iterate is plain BSCA's."""
    from svmtrain._budget import bsca_epoch
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    C, gamma, n, window = 2.0, 0.2, block.n_rows, 37
    args = _epoch_inputs(block, task, C)
    e = Expansion(block.n_features, gamma, n + 1)
    alpha_avg = np.zeros(n)
    bsca_epoch(e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"], args["cost"],
               args["alpha"], args["slot_of"], args["perm"], args["rng"], n, 0.01, False, 0.0, True,
               alpha_avg, window)
    X, y = dense(block), args["y"]
    K = rbf(X, X, gamma)
    a, iterates = np.zeros(n), []
    for i in args["perm"]:   # the order the epoch used (shuffled in place)
        a[i] = np.clip(a[i] + 1.0 - y[i] * (K[i] @ (a * y)), 0.0, C)
        iterates.append(a.copy())
    assert np.allclose(args["alpha"], a, atol=1e-9)
    mean = np.mean(iterates[-window:], axis=0)
    assert np.allclose(alpha_avg, mean, atol=1e-9)
    beta, indptr, indices, values = e.export(averaged=True)
    svs = dense(data.Block(indptr, indices, values, np.zeros(len(beta)), np.full(len(beta), -1),
                           np.ones(len(beta)), np.arange(len(beta)), block.n_features, 0), X.shape[1])
    assert np.allclose(rbf(X, svs, gamma) @ beta, K @ (mean * y), atol=1e-8)


def test_averaging_leaves_the_iterates_alone(heart100):
    """With merging, the iterates (a and beta) are bit for bit those of plain BSCA: the average is
    an output, not a change of the steps; and the averaged dual coefficients stay in the box."""
    from svmtrain._budget import bsca_epoch
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    runs = []
    for averaged in (False, True):
        args = _epoch_inputs(block, task, 2.0)
        e = Expansion(block.n_features, 0.2, 11)
        alpha_avg = np.zeros(block.n_rows) if averaged else None
        for _ in range(3):
            bsca_epoch(e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"],
                       args["cost"], args["alpha"], args["slot_of"], args["perm"], args["rng"], 10,
                       0.01, False, 0.0, True, alpha_avg, 10)
        runs.append((args["alpha"], e.export()[0], alpha_avg))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    assert np.all((runs[1][2] >= 0.0) & (runs[1][2] <= 2.0)) and not np.array_equal(runs[1][2], runs[1][0])


def test_average_option(tmp_path):
    """--no-average returns the last iterate (another model, same certificate kind); the option is
    BSCA's: with --optimizer sgd it is an input error."""
    train = DATA / "heart_scale"
    models = {}
    for flag in ("--average", "--no-average"):
        out = tmp_path / f"m{flag}"
        r = run("train", "-m", "budgeted", "-c", "2", "-g", "0.2", "--budget", "20", "--epochs", "2",
                flag, "-q", train, out)
        assert r.exit_code == 0, r.output
        models[flag] = m = read_model(str(out))
        v = run("verify-bound", "--json", out, train)   # recomputed: what training recorded
        import json
        got = json.loads(v.stdout)
        assert got["primal"] == m.primal and got["dual"] == m.dual and m.dual <= m.primal
    assert models["--average"].dual != models["--no-average"].dual
    # the model file says which output it holds: the mean of the last B = 20 iterates, or the last
    assert models["--average"].averaged == 20 and models["--no-average"].averaged is None
    assert "averaged 20\n" in open(tmp_path / "m--average").read()
    r = run("train", "-m", "budgeted", "--optimizer", "sgd", "--no-average", "-q", train, tmp_path / "x")
    assert r.exit_code == 2 and "--average" in r.output


def _replay_epoch(K, y, C, a, order, step_tol=0.0, shrink=np.inf, skip_left=None, skip_next=None,
                  beta=None):
    """One epoch of bias-free coordinate ascent with the exact kernel, in numpy, with BSCA's step
    tolerance and shrinking as documented: returns the number of margins computed and the kernel
    values they cost, the support vectors held at each. beta (optional, kept across epochs): each
    example's coefficient y_i a_i summed step by step as the model sums it; x_i is a support vector
    while its sum is not 0 (no budget: nothing is merged)."""
    margins = kernels = 0
    beta = np.zeros(len(a)) if beta is None else beta
    for i in order:
        if skip_left is not None and skip_left[i] > 0:
            skip_left[i] -= 1
            continue
        yf = y[i] * (K[i] @ (a * y))
        margins += 1
        kernels += np.count_nonzero(beta)
        room = yf - 1.0 if a[i] == 0.0 else (1.0 - yf if a[i] == C else -1.0)
        if skip_left is not None:
            if room >= shrink:
                skip_left[i], skip_next[i] = skip_next[i], min(2 * skip_next[i], 8)
            else:
                skip_next[i] = 1
        new = np.clip(a[i] + 1.0 - yf, 0.0, C)
        if abs(new - a[i]) >= step_tol:
            beta[i] += (new - a[i]) * y[i]
            a[i] = new
    return margins, kernels


@pytest.mark.parametrize("step_tol, shrink", [(0.0, np.inf), (0.3, np.inf), (0.0, 0.5), (0.2, 0.0)])
def test_step_tolerance_and_shrinking_replayed(heart100, step_tol, shrink):
    """No merging (B >= n): BSCA's epochs with a step tolerance and shrinking are coordinate ascent
    that skips the small steps and rests the shrunk examples, replayed in numpy over 6 epochs with
    the exact kernel (same a, same number of margins computed); step_tol 0 and shrink inf are Alg. 2
    (every visit computes its margin). The kernel values an epoch counts are the support vectors
    held at each margin, summed."""
    from svmtrain._budget import bsca_epoch
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    C, gamma, n = 2.0, 0.2, block.n_rows
    args = _epoch_inputs(block, task, C)
    e = Expansion(block.n_features, gamma, n + 1)
    skip_left, skip_next = np.zeros(n, dtype=np.int32), np.ones(n, dtype=np.int32)
    K, y = rbf(dense(block), dense(block), gamma), args["y"]
    a, left, nxt = np.zeros(n), np.zeros(n, dtype=np.int32), np.ones(n, dtype=np.int32)
    beta = np.zeros(n)
    skipped = 0
    for _ in range(6):
        merges, _, _, margins, kernels = bsca_epoch(
            e, block.indptr, block.indices, block.data, args["sqnorm"], y, args["cost"], args["alpha"],
            args["slot_of"], args["perm"], args["rng"], n, 0.01, False, 0.0, True, None, 0,
            step_tol, skip_left, skip_next, shrink)
        expected, expected_kernels = _replay_epoch(K, y, C, a, args["perm"], step_tol, shrink, left, nxt,
                                                   beta)
        assert merges == 0 and margins == expected
        assert kernels == expected_kernels and e.n_sv == np.count_nonzero(beta)
        assert np.allclose(args["alpha"], a, atol=1e-9)
        assert np.array_equal(skip_left, left) and np.array_equal(skip_next, nxt)
        skipped += n - margins
    assert (skipped > 0) == (shrink < np.inf)


def test_shrinking_still_reaches_the_exact_kernel_svm(heart100):
    """Shrinking only rests examples at a bound, and every one is revisited within 9 epochs: without
    a budget BSCA still converges to the exact bias-free kernel SVM (the brute-force QP's dual)."""
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    C, gamma = 2.0, 0.2
    X = dense(block)
    y = task.signs(block, "x").astype(float)
    Q = rbf(X, X, gamma) * np.outer(y, y)
    best = brute_force_dual(Q, C)
    D_best = best.sum() - 0.5 * best @ Q @ best
    result = train_budgeted(task, block, str(heart100), C=C, gamma=gamma, budget=100, epochs=300,
                            shrink=0.0, average=False)
    assert result.merges == 0 and abs(result.dual - D_best) <= 1e-6 * abs(D_best)
    assert result.dual <= result.primal + 1e-9


def test_step_tolerance_zero_and_no_shrinking_is_alg2(heart100):
    """train_budgeted with shrink=None and step_tol=0 takes Alg. 2's steps: with a budget (merges)
    the same iterates as the bare epoch function without those arguments, bit for bit."""
    from svmtrain._budget import bsca_epoch
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    args = _epoch_inputs(block, task, 2.0)
    e = Expansion(block.n_features, 0.2, 11)
    for _ in range(3):
        bsca_epoch(e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"], args["cost"],
                   args["alpha"], args["slot_of"], args["perm"], args["rng"], 10, 0.01, False, 0.0, True)
    beta = e.export()[0]
    result = train_budgeted(task, block, str(heart100), C=2.0, gamma=0.2, budget=10, epochs=3,
                            seed=7, average=False, shrink=None, step_tol=0.0)
    assert np.array_equal(result.support_vectors[0][0], beta)
    rows, values = result.alphas[0]
    assert np.array_equal(rows, np.flatnonzero(args["alpha"])) and np.array_equal(values, args["alpha"][rows])
    shrunk = train_budgeted(task, block, str(heart100), C=2.0, gamma=0.2, budget=10, epochs=3,
                            seed=7, average=False, shrink=0.0, step_tol=0.0)
    assert not np.array_equal(shrunk.support_vectors[0][0], beta)


def test_bsgd_kernel_values_without_merging_replayed(heart100):
    """No merging (B >= n): BSGD's epoch counts one kernel value per support vector held at each
    margin (none at the very first step, which has no margin), replayed in numpy with the exact
    kernel over 3 epochs: S sums n C y_i over the violations, f~ = K S / (steps before)."""
    from svmtrain._budget import bsgd_epoch
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    C, gamma, n = 2.0, 0.2, block.n_rows
    args = _epoch_inputs(block, task, C)
    e = Expansion(block.n_features, gamma, n + 1)
    clock = np.zeros(1, dtype=np.int64)
    K, y = rbf(dense(block), dense(block), gamma), args["y"]
    S, t = np.zeros(n), 0
    for _ in range(3):
        merges, _, violations, kernels = bsgd_epoch(
            e, block.indptr, block.indices, block.data, args["sqnorm"], y, args["cost"], args["alpha"],
            args["slot_of"], args["perm"], args["rng"], clock, n, 0.01, False, 0.0)
        expected_kernels = expected_violations = 0
        for i in args["perm"]:
            t += 1
            f = 0.0
            if t >= 2:
                expected_kernels += np.count_nonzero(S)
                f = K[i] @ S / (t - 1)
            if y[i] * f < 1.0:
                S[i] += n * C * y[i]
                expected_violations += 1
        assert merges == 0 and violations == expected_violations
        assert kernels == expected_kernels > 0 and e.n_sv == np.count_nonzero(S)


@pytest.mark.parametrize("wide", [False, True], ids=["dense rows", "sparse rows"])
@pytest.mark.parametrize("table", [True, False], ids=["table", "golden"])
def test_a_merge_counts_its_fresh_kernel_row(wide, table):
    """A merge whose kernel row is not known (merge_once: never) computes one kernel value per SV
    of the smallest one's sign, the smallest itself excepted; the other SVs cost nothing."""
    rng = np.random.default_rng(5)
    n, d = 15, 6
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.6)
    indptr = np.concatenate([[0], np.cumsum((X != 0).sum(1))]).astype(np.int64)
    indices = np.nonzero(X)[1].astype(np.int64)
    beta = rng.uniform(0.2, 2.0, n) * np.where(np.arange(n) % 3 == 0, -1.0, 1.0)
    e = Expansion.from_arrays(10 ** 6 if wide else d, 0.5, beta, indptr, indices, X[X != 0])
    assert e.fresh_kernel_values == 0
    seen = set()
    while e.n_sv > 1:
        b = e.export()[0]
        before = e.fresh_kernel_values
        m = e.merge_once(0.01, table=table)[0]
        same_sign = int(np.sum(b * b[m] > 0.0)) - 1
        assert e.fresh_kernel_values - before == same_sign
        seen.add(same_sign)
    assert 0 in seen and max(seen) >= 5   # a lone sign (no partner) and a full row both met


def _far_away_model(block, P, magnitude, n_cols, positive):
    """P support vectors far from every example (column block.n_features, values 1000 apart, so
    every kernel value against the data and between them is exactly 0), `positive` of them with
    +magnitude, the rest -magnitude; room for one more (the budget is P)."""
    beta = np.where(np.arange(P) < positive, magnitude, -magnitude)
    indptr = np.arange(P + 1, dtype=np.int64)
    indices = np.full(P, block.n_features, dtype=np.int64)
    return Expansion.from_arrays(n_cols, 0.2, beta, indptr, indices, 1000.0 * (1 + np.arange(P)),
                                 capacity=P + 1)


@pytest.mark.parametrize("wide", [False, True], ids=["dense rows", "sparse rows"])
@pytest.mark.parametrize("table", [True, False], ids=["table", "golden"])
def test_epoch_kernel_values_with_merges(heart100, wide, table):
    """A budget of P far-away SVs of large |beta| (kernel 0 against every example, so every margin
    is 0 and every visit steps): each step adds the example and merges it straight away, being the
    smallest. BSCA: every merge reads the margin's kernel row, so an epoch costs exactly n P kernel
    values. BSGD: the very first step has no margin, so its merge computes a fresh row, one kernel
    value per far SV of the first example's sign; every later step costs P."""
    from svmtrain._budget import bsca_epoch, bsgd_epoch
    block = data.load(str(heart100))
    task = task_class("binary").from_training_data(block, str(heart100))
    n, P, positive = block.n_rows, 6, 4
    n_cols = 10 ** 6 if wide else block.n_features + 1
    args = _epoch_inputs(block, task, 2.0)
    e = _far_away_model(block, P, 1e6, n_cols, positive)
    for _ in range(2):
        merges, _, steps, margins, kernels = bsca_epoch(
            e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"], args["cost"],
            args["alpha"], args["slot_of"], args["perm"], args["rng"], P, 0.01, False, 0.0, table)
        assert merges == steps == margins == n and kernels == n * P
    assert e.fresh_kernel_values == 0 and e.n_sv == P

    args = _epoch_inputs(block, task, 2.0)
    e = _far_away_model(block, P, 1e6, n_cols, positive)
    clock = np.zeros(1, dtype=np.int64)
    for epoch in (1, 2):
        merges, _, violations, kernels = bsgd_epoch(
            e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"], args["cost"],
            args["alpha"], args["slot_of"], args["perm"], args["rng"], clock, P, 0.01, False, 0.0, table)
        assert merges == violations == n
        if epoch == 1:
            first = args["perm"][0]   # the epoch's order: the permutation is shuffled in place
            fresh = positive if args["y"][first] > 0 else P - positive
            assert kernels == (n - 1) * P + fresh and e.fresh_kernel_values == fresh
        else:
            assert kernels == n * P and e.fresh_kernel_values == fresh


@pytest.mark.parametrize("optimizer", ["bsca", "bsgd"])
def test_kernel_values_on_a_budget(optimizer):
    """heart_scale on a budget of 10 (merges of both kinds): an epoch's kernel values are its
    margins' (each at most B SVs; BSGD's binary model never drops an SV, so a full one holds B at
    every margin of epoch 2 on) plus its merges' fresh rows (at most B each); both counted."""
    from svmtrain._budget import bsca_epoch, bsgd_epoch
    block = data.load(str(HEART))
    task = task_class("binary").from_training_data(block, str(HEART))
    n, B = block.n_rows, 10
    args = _epoch_inputs(block, task, 2.0)
    e = Expansion(block.n_features, 0.2, B + 1)
    clock = np.zeros(1, dtype=np.int64)
    fresh_total = 0
    for epoch in (1, 2, 3):
        before = e.fresh_kernel_values
        if optimizer == "bsca":
            merges, _, _, margins, kernels = bsca_epoch(
                e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"], args["cost"],
                args["alpha"], args["slot_of"], args["perm"], args["rng"], B, 0.01, False, 0.0)
        else:
            merges, _, _, kernels = bsgd_epoch(
                e, block.indptr, block.indices, block.data, args["sqnorm"], args["y"], args["cost"],
                args["alpha"], args["slot_of"], args["perm"], args["rng"], clock, B, 0.01, False, 0.0)
            margins = n - 1 if epoch == 1 else n
        fresh = e.fresh_kernel_values - before
        fresh_total += fresh
        assert merges > 0 and 0 <= fresh <= merges * B
        assert kernels - fresh <= margins * B
        if optimizer == "bsgd" and epoch >= 2:
            assert e.n_sv == B and kernels == n * B + fresh
    if optimizer == "bsgd":   # an old SV with one violation ties the new one, and the older wins
        assert fresh_total > 0


def test_trace_reports_kernel_values(tmp_path):
    """--trace's last column: the epoch's kernel values, a positive integer, those train_budgeted
    counts for the same run."""
    trace = tmp_path / "trace"
    r = run("train", "-m", "budgeted", "-c", "2", "-g", "0.2", "--budget", "20", "--epochs", "3",
            "--trace", trace, "-q", HEART, tmp_path / "m")
    assert r.exit_code == 0, r.output
    lines = trace.read_text().splitlines()
    assert lines[0].split()[-1] == "kernel_values" and len(lines) == 4
    counts = [int(line.split()[-1]) for line in lines[1:]]
    assert all(c > 0 for c in counts) and all(len(line.split()) == 10 for line in lines[1:])
    block = data.load(str(HEART))
    history = []
    train_budgeted(task_class("binary").from_training_data(block, str(HEART)), block, str(HEART),
                   C=2.0, gamma=0.2, budget=20, epochs=3, on_epoch=history.append, epoch_objectives=False)
    assert counts == [h.kernel_values for h in history]
