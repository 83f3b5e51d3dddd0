"""Model files written a chunk of weights at a time (svmtrain.model.write_model): the same bytes as
the whole text, validated before the file is touched."""

import numpy as np
import pytest

from svmtrain import model as model_module
from svmtrain.model import ModelError, format_model, model_text_chunks, read_model, write_model

from test_model import make_model, same_bits


@pytest.mark.parametrize("density", [1.0, 0.2])
@pytest.mark.parametrize("per_chunk", [1, 7, 1000])
def test_chunked_file_is_the_whole_text(tmp_path, monkeypatch, density, per_chunk):
    m = make_model(n_features=250, density=density, rng_seed=4)
    whole = "".join(list(model_text_chunks(m)))     # the pieces of the default chunking
    monkeypatch.setattr(model_module, "WEIGHTS_PER_CHUNK", per_chunk)
    path = tmp_path / "m.txt"
    write_model(m, path)
    assert path.read_text() == whole == format_model(m)
    back = read_model(path)
    assert back == m and same_bits(back.w, m.w)


def test_invalid_model_leaves_no_file(tmp_path):
    m = make_model(n_features=10)
    m.w = np.zeros(3)                      # not n_features + 1 weights
    path = tmp_path / "m.txt"
    with pytest.raises(ModelError, match="cannot write model"):
        write_model(m, path)
    assert list(tmp_path.iterdir()) == []
