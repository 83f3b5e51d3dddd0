"""The Python examples run as shown (docs/python.md and the README, from the repository root)."""

import os
import re
import shutil

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
PAGE = os.path.join(ROOT, "docs", "python.md")


def _blocks():
    blocks = []
    for page in (PAGE, os.path.join(ROOT, "README.md")):
        with open(page) as f:
            blocks += re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    return blocks


def test_python_examples_run(tmp_path, monkeypatch):
    shutil.copytree(os.path.join(ROOT, "data"), tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    assert len(blocks) >= 6
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{PAGE} example {i + 1}", "exec"), {})
        except Exception as e:                        # name the example that broke
            pytest.fail(f"Python example {i + 1} (docs/python.md, then README.md): "
                        f"{type(e).__name__}: {e}")
    assert (tmp_path / "heart.predictions").exists()
