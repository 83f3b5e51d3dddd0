"""Shared fixtures: the real datasets of ../shared/data, decompressed once per session."""

import lzma
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_data_root() -> Path:
    return Path(os.environ.get("SVMTRAIN_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    """shared("a9a/a9a.xz", max_lines=None) -> path of the decompressed file (skip if absent)."""
    root = tmp_path_factory.mktemp("shared")
    cache = {}

    def get(rel, max_lines=None):
        key = (rel, max_lines)
        if key not in cache:
            src = shared_data_root() / rel
            if not src.exists():
                pytest.skip(f"shared data not found: {src} (set SVMTRAIN_SHARED_DATA)")
            out = root / (rel.replace("/", "_").removesuffix(".xz") + (f".{max_lines}" if max_lines else ""))
            with lzma.open(src, "rb") as f, open(out, "wb") as g:
                for i, line in enumerate(f):
                    if max_lines is not None and i >= max_lines:
                        break
                    g.write(line)
            cache[key] = out
        return cache[key]

    return get
