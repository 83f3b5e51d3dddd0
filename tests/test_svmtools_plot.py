"""svmtools plot: traces from real training runs, C paths in both formats, matplotlib optional."""

import json
import sys

import pytest
from click.testing import CliRunner

from svmtools.cli import main
from svmtools.plot import Path, Trace, read_input, read_path

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Traces of real runs: n-slack and 1-slack on heart_scale, budgeted on its first rows."""
    from svmtrain.cli import main as svmtrain

    d = tmp_path_factory.mktemp("traces")
    runner = CliRunner()
    out = {}
    for mode, extra in (("n-slack", []), ("1-slack", []), ("budgeted", ["--budget", "20"])):
        trace = d / f"{mode}.trace"
        result = runner.invoke(svmtrain, ["train", "-q", "--mode", mode, *extra, "--trace",
                                          str(trace), "data/heart_scale", str(d / f"{mode}.model")])
        assert result.exit_code == 0, result.output
        out[mode] = trace
    return out


PNG = b"\x89PNG\r\n\x1a\n"


def plot(*args):
    return CliRunner().invoke(main, ["plot", *args])


def test_every_modes_trace_is_read_by_its_header(traces):
    for mode, path in traces.items():
        t = read_input(str(path))
        assert isinstance(t, Trace)
        assert len(t.x) == len(open(path).read().splitlines()) - 1
        assert t.x_label == ("iteration" if mode == "1-slack" else "epoch")
        # whatever the column order, primal >= dual and the gap is theirs
        for p, d, g in zip(t.primal, t.dual, t.relative_gap):
            assert p >= d - 1e-9 * abs(p)
            assert g == pytest.approx((p - d) / p, rel=1e-6, abs=1e-12)


def test_traces_side_by_side_as_png_and_svg(traces, tmp_path):
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    result = plot("-o", str(png), *map(str, traces.values()))
    assert result.exit_code == 0, result.output
    assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000
    assert plot("-o", str(svg), "--x", "seconds", "-e", "0.001",
                str(traces["n-slack"])).exit_code == 0
    assert b"<svg" in svg.read_bytes()[:1000]


def test_same_inputs_give_the_same_file(traces, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    for out in (a, b):
        assert plot("-o", str(out), str(traces["n-slack"])).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_path_text_and_json_read_alike(tmp_path):
    text = tmp_path / "path.txt"
    text.write_text("# C accuracy std\n0.25 0.84 0.01\n0.5 0.85 0.008\n1 0.86 0.01  # best\n")
    js = tmp_path / "path.json"
    js.write_text(json.dumps({"C": [0.25, 0.5, 1], "score": [0.84, 0.85, 0.86],
                              "std": [0.01, 0.008, 0.01], "metric": "accuracy"}))
    a, b = read_input(str(text)), read_input(str(js))
    assert isinstance(a, Path) and isinstance(b, Path)
    assert (a.C, a.score, a.std) == (b.C, b.score, b.std) == ([0.25, 0.5, 1.0], [0.84, 0.85, 0.86],
                                                              [0.01, 0.008, 0.01])
    assert a.metric == b.metric == "accuracy"
    assert read_path(str(text), ["1 0.5", "2 0.6"]).std is None
    out = tmp_path / "p.png"
    assert plot("-o", str(out), str(text), str(js)).exit_code == 0
    assert out.read_bytes().startswith(PNG)


def test_trace_beside_a_path(traces, tmp_path):
    path = tmp_path / "path.txt"
    path.write_text("0.5 0.1\n1 0.08\n2 0.09\n")
    out = tmp_path / "m.pdf"
    assert plot("-o", str(out), "--lower-is-better", str(traces["1-slack"]),
                str(path)).exit_code == 0
    assert out.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("text,kind,where,reason", [
    ("1 2 3\n", "trace", ":1:", "first line should name the columns"),
    ("# epoch seconds dual primal\n", "trace", ":1:", "relative_gap"),
    ("# epoch seconds dual primal gap relative_gap\n1 0.1 1 2 1 0.5\n2 0.2 x 2 1 0.5\n", "auto",
     ":3:", "dual: expected a number"),
    ("# epoch seconds dual primal gap relative_gap\n1 0.1 1\n", "auto", ":2:", "at least 6"),
    ("0.5 0.8\n1 0.9 0.1\n", "auto", ":2:", "on every line alike"),
    ("-1 0.8\n", "path", ":", "C must be positive"),
    ('{"C": [1, 2], "score": [0.5]}', "auto", ":", '"score" has 1 values'),
    ('{"C": [1], "score": ["a"]}', "auto", ":", "list of numbers"),
    ("{not json", "auto", ":1:", "not JSON"),
])
def test_bad_inputs_name_the_file_and_write_nothing(tmp_path, text, kind, where, reason):
    bad = tmp_path / "bad"
    bad.write_text(text)
    out = tmp_path / "out.png"
    result = plot("-o", str(out), "--kind", kind, str(bad))
    assert result.exit_code == 2, result.output
    assert f"{bad}{where}" in result.output and reason in result.output
    assert not out.exists()


def test_unknown_extension(tmp_path, traces):
    result = plot("-o", str(tmp_path / "x.jpeg"), str(traces["n-slack"]))
    assert result.exit_code == 2 and ".png, .svg, .pdf" in result.output


def test_missing_matplotlib_is_a_clear_usage_error(monkeypatch, tmp_path, traces):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # import matplotlib -> ImportError
    out = tmp_path / "t.png"
    result = plot("-o", str(out), str(traces["n-slack"]))
    assert result.exit_code == 2
    assert "needs matplotlib" in result.output and "svmtrain[plot]" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
