"""The online-dual mode's resume state (svmtrain.solvers.online): an .npz with mode = 'online-dual'
holding the cache, its row store, alpha, w, the bounds, the position in the file (pass, rows done)
and the options that define the problem (problem_fields). `read_state` reads the state file of any
mode (np.load without pickles); `load_state` checks an online-dual one against the problem and for
consistency, so that a state file can never make a run go wrong, only be refused (StateError).
"""

import numpy as np

from svmtrain.solvers.online_store import REL_UNKNOWN

STATE_VERSION = 11             # 2: the shuffle window's position; 3: its rows and UB raise;
                               # 4: ranking caches one slack per query, not per pair;
                               # 5: the UB raised since the last re-optimisation (and its gap,
                               # which 6 no longer keeps); 7: only the rows in use are kept, with
                               # their rows in the pinned window; 8: the support vectors
                               # evicted by the cache limit (w0, their margin and mass);
                               # 9: ... and their terms or codes, to come back with their
                               # example; the gradients and norms as the run had them;
                               # 10: the count of evicted support vectors and of returns;
                               # 11: the window bound (older states resume without it)


class StateError(ValueError):
    """A resume state that cannot be used (the CLI names the file and exits 2)."""


def problem_fields(task_name, task, opt):
    """What defines the problem: a resume state must match the command line on all of these."""
    fields = task.model_fields()
    return {"task": task_name, "C": float(opt.C), "bias": np.nan if opt.bias is None else float(opt.bias),
            "zero_based": bool(opt.zero_based), "labels": np.asarray(fields.get("labels", []), np.float64),
            "p": float(fields.get("p", np.nan)), "loss": str(fields.get("loss", "")),
            "rescaling": str(fields.get("rescaling", ""))}


def save_state(path, state, fields):
    """Write the resume state (an .npz) atomically."""
    from svmtrain.atomic import atomic_output
    arrays = dict(state)
    for k, v in fields.items():
        arrays["problem_" + k] = np.asarray(v)
    with atomic_output(path, "wb") as f:
        np.savez(f, **arrays)


_ARRAY_KEYS = {
    "w": np.floating, "tptr": np.integer, "term_row": np.integer, "term_scale": np.floating,
    "term_offset": np.integer, "term_bias": np.bool_, "margin": np.floating, "group": np.integer,
    "key": np.integer, "C": np.floating, "alpha": np.floating, "age": np.integer, "idle": np.integer,
    "store_indptr": np.integer, "store_indices": np.integer,
    "store_data": (np.floating, np.uint8),      # (a sequence store's values may be bytes)
    "store_refs": np.integer, "store_window_row": np.integer, "qids_done": np.integer,
    "w0": np.floating, "folded_ids": np.integer, "folded_mass": np.floating,
    "frozen_ids": np.integer, "term_rel": np.integer, "fold_group": np.integer,
    "fold_key": np.integer, "fold_alpha": np.floating, "fold_l": np.floating,
    "fold_coded": np.bool_, "fold_cptr": np.integer, "fold_codes": np.integer,
    "grad": np.floating, "sqnorm": np.floating,
    "fold_tptr": np.integer, "fold_rel": np.integer, "fold_scale": np.floating,
    "fold_offset": np.integer, "fold_bias": np.bool_, "fold_extra_indptr": np.integer,
    "fold_extra_indices": np.integer, "fold_extra_data": (np.floating, np.uint8),
}


_FOLD_KEYS = [k for k in _ARRAY_KEYS if k.startswith("fold_")] + ["frozen_ids", "term_rel"]


_SCALAR_KEYS = ("digest", "pass_solves", "n_cols", "store_cols", "stride", "model_examples", "LB", "UB", "pass", "rows_done", "examples_done", "added_in_pass", "window_done", "window_added", "window_raise", "raised_since_solve", "window_rows", "revisit", "shuffle_window",
                "examples_in_file", "examples_seen", "next_age", "solves", "epochs", "certified",
                "fold_margin", "evicted", "returned")


def read_state(path):
    """The arrays of a state file, any mode (np.load without pickles); StateError when unreadable."""
    import os
    import zipfile
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise StateError("not a state file (.npz, as --save-state or an interrupt writes)")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise StateError("no such file") from None
    except Exception as e:   # OSError, a bad zip, a corrupt member (zlib.error, EOFError), ...
        raise StateError(f"not a resume state (.npz): {e}") from None
    if "mode" not in arrays or arrays["mode"].shape != () or arrays["mode"].dtype.kind != "U":
        raise StateError("not a resume state: no 'mode' key")
    return arrays


def load_state(arrays, fields):
    """Check an online-dual state read by read_state against the problem (`problem_fields`) and for
    consistency; returns the arrays. Raises StateError with the reason."""
    if str(arrays["mode"]) != "online-dual":
        raise StateError(f"a {arrays['mode']} state, not an online-dual one")
    version = int(arrays.get("version", -1))
    if version not in (STATE_VERSION, 10, 9, 8):
        raise StateError(f"unsupported state version {arrays.get('version')}")
    if version < 10:        # (the counts for the summary line begin at the resume)
        arrays = dict(arrays, evicted=np.array(0), returned=np.array(0))
    if version == 8:        # saved before evicted support vectors kept their terms: none kept
        arrays = dict(arrays)
        arrays["grad"] = arrays["sqnorm"] = np.zeros(0)      # (recomputed: see _restore)
        for k in _FOLD_KEYS:
            arrays[k] = np.zeros(1 if k in ("fold_tptr", "fold_cptr", "fold_extra_indptr") else 0,
                                 bool if k in ("fold_bias", "fold_coded") else np.int64)
    for k in list(_ARRAY_KEYS) + list(_SCALAR_KEYS):
        if k not in arrays:
            raise StateError(f"missing '{k}'")
    for k, kind in _ARRAY_KEYS.items():
        a = arrays[k]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if a.ndim != 1 or not (any(np.issubdtype(a.dtype, k) for k in kinds) or a.size == 0):
            raise StateError(f"'{k}' is not a 1-D array of the right type")
        if k == "sqnorm":       # (NaN: not computed yet)
            if np.any(np.isinf(a)) or np.any(a < 0):
                raise StateError(f"'{k}' holds inf or a negative value")
        elif a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise StateError(f"'{k}' holds NaN or inf")
    for k in _SCALAR_KEYS:
        a = arrays[k]
        if a.shape != () or a.dtype.kind not in "iufb" or not np.isfinite(float(a)):
            raise StateError(f"'{k}' is not a finite number")
    for k, v in fields.items():
        key = "problem_" + k
        if key not in arrays:
            raise StateError(f"missing '{key}'")
        have = arrays[key]
        same = (np.array_equal(have, np.asarray(v), equal_nan=True) if np.asarray(v).dtype.kind == "f"
                else np.array_equal(have, np.asarray(v)))
        if not same:
            raise StateError(f"it was saved for {k} = {_show(have)}, this run has {k} = {_show(np.asarray(v))}")
    m = len(arrays["margin"])
    t, s = arrays["tptr"], arrays["store_indptr"]
    n_terms = len(arrays["term_row"])
    n_rows = len(s) - 1
    if len(t) != m + 1 or t[0] != 0 or np.any(np.diff(t) < 0) or t[-1] != n_terms:
        raise StateError("inconsistent constraint terms")
    if any(len(arrays[k]) != n_terms for k in ("term_scale", "term_offset", "term_bias")):
        raise StateError("inconsistent constraint terms")
    if any(len(arrays[k]) != m for k in ("group", "key", "C", "alpha", "age", "idle")) \
            or len(arrays["grad"]) not in (0, m) or len(arrays["sqnorm"]) not in (0, m):
        raise StateError("per-constraint arrays differ in length")
    if n_rows < 0 or s[0] != 0 or np.any(np.diff(s) < 0) or s[-1] != len(arrays["store_indices"]) \
            or len(arrays["store_data"]) != s[-1] or len(arrays["store_refs"]) != n_rows:
        raise StateError("inconsistent row store")
    n_cols = int(arrays["n_cols"])
    if n_cols < 0 or (len(arrays["store_indices"]) and (arrays["store_indices"].min() < 0
                                                         or arrays["store_indices"].max() >= max(n_cols, 1))):
        raise StateError("row store columns outside the feature count")
    if n_terms and (arrays["term_row"].min() < 0 or arrays["term_row"].max() >= n_rows
                    or arrays["term_offset"].min() < 0 or arrays["term_offset"].max() >= len(arrays["w"])):
        raise StateError("a constraint term outside the row store or w")
    if np.any(arrays["alpha"] < 0) or np.any(arrays["C"] < 0):
        raise StateError("negative alpha or C")
    if len(arrays["w0"]) not in (0, len(arrays["w"])):
        raise StateError("w0 and w differ in length")
    ids = arrays["folded_ids"]
    if len(ids) != len(arrays["folded_mass"]) or np.any(np.diff(ids) <= 0) \
            or np.any(arrays["folded_mass"] < 0):
        raise StateError("inconsistent evicted support vectors")
    _check_fold(arrays, n_terms, n_cols)
    if int(arrays["pass"]) < 0 or int(arrays["rows_done"]) < 0:
        raise StateError("negative position")
    return arrays


def _check_fold(arrays, n_terms, n_cols):
    """The evicted support vectors' terms (Folded) of a state, for consistency."""
    bad = StateError("inconsistent evicted support vectors' terms")
    rel = arrays["term_rel"]
    if len(rel) not in (0, n_terms) or (len(rel) and rel.min() < REL_UNKNOWN):
        raise bad
    m, t = len(arrays["fold_group"]), arrays["fold_tptr"]
    n = len(arrays["fold_rel"])
    if len(t) != m + 1 or t[0] != 0 or np.any(np.diff(t) < 0) or t[-1] != n:
        raise bad
    if any(len(arrays[k]) != n for k in ("fold_scale", "fold_offset", "fold_bias")) \
            or any(len(arrays[k]) != m for k in ("fold_key", "fold_alpha", "fold_l", "fold_coded")):
        raise bad
    c = arrays["fold_cptr"]
    if len(c) != m + 1 or c[0] != 0 or np.any(np.diff(c) < 0) or c[-1] != len(arrays["fold_codes"]) \
            or (len(arrays["fold_codes"]) and arrays["fold_codes"].min() < 0) \
            or np.any(np.diff(c)[~arrays["fold_coded"]] > 0) or np.any(np.diff(t)[arrays["fold_coded"]] > 0):
        raise bad
    if np.any(arrays["fold_alpha"] < 0) or (n and (arrays["fold_offset"].min() < 0 or
                                                   arrays["fold_offset"].max() >= len(arrays["w"]))):
        raise bad
    x = arrays["fold_extra_indptr"]
    n_extra = len(x) - 1
    if n_extra < 0 or x[0] != 0 or np.any(np.diff(x) < 0) or x[-1] != len(arrays["fold_extra_indices"]) \
            or len(arrays["fold_extra_data"]) != x[-1]:
        raise bad
    if len(arrays["fold_extra_indices"]) and (arrays["fold_extra_indices"].min() < 0
                                              or arrays["fold_extra_indices"].max() >= max(n_cols, 1)):
        raise bad
    if n and arrays["fold_rel"].min() < -n_extra:
        raise bad
    if not np.all(np.isin(arrays["fold_group"], arrays["folded_ids"])) \
            or np.any(np.diff(arrays["frozen_ids"]) <= 0):
        raise bad


def _show(a):
    if a.shape == ():
        return repr(a.item())
    return "[" + " ".join(repr(x) for x in a.tolist()[:6]) + (" ..." if a.size > 6 else "") + "]"
