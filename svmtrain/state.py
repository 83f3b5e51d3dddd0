"""The dual state of an n-slack training run, for incremental retraining (--save-state,
--warm-start).

A state file is a numpy .npz archive (no pickled objects) with these arrays:

    format_version  int       STATE_VERSION
    mode            str       'n-slack' (other modes write their own states; a mismatch is refused)
    task            str       the task it was trained for
    C               float     the C it was trained with
    examples        int       its number of examples (slack groups)
    rows            int       its number of data rows
    fingerprint     int       crc32 of those rows' targets and nonzero counts
    group, key      int64     one per cached constraint: its example and which of the example's
                              constraints it is (the task's key: class, side, line)
    alpha           float64   one per cached constraint: its dual variable

Hot start (`start_alpha`): constraints of the new problem that the state knows start at their old
alpha times C_new / C_old, new ones at 0; the engine then projects onto the new box
(sum_j alpha_ij <= C_i, alpha >= 0: a changed C or weight clips). Any feasible start leads to the
same optimum, so a state from other data is still correct, only slower; the fingerprint tells when
the old examples are not the first rows of the new data (a warning).
"""

import zlib

import numpy as np

STATE_VERSION = 1
MODE = "n-slack"
KEYS = ("format_version", "mode", "task", "C", "examples", "rows", "fingerprint", "group", "key",
        "alpha")


class StateError(ValueError):
    """A state file that cannot be used: str(e) names the file and the reason (exit 2)."""

    def __init__(self, path, reason):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}")


def fingerprint(block, rows=None):
    """crc32 of the first `rows` rows' targets and nonzero counts."""
    rows = block.n_rows if rows is None else rows
    raw = (np.ascontiguousarray(block.target[:rows]).tobytes()
           + np.ascontiguousarray(np.diff(block.indptr[:rows + 1])).tobytes())
    return zlib.crc32(raw)


def save_state(path, *, task, C, examples, block, constraints, alpha):
    from svmtrain.atomic import atomic_output
    arrays = {"format_version": np.int64(STATE_VERSION), "mode": np.str_(MODE),
              "task": np.str_(task), "C": np.float64(C), "examples": np.int64(examples),
              "rows": np.int64(block.n_rows), "fingerprint": np.int64(fingerprint(block)),
              "group": np.asarray(constraints.group, np.int64),
              "key": np.asarray(constraints.key, np.int64),
              "alpha": np.asarray(alpha, np.float64)}
    with atomic_output(path, "wb") as f:
        np.savez_compressed(f, **arrays)


class State:
    def __init__(self, path, arrays):
        self.path = path
        self.task = str(arrays["task"])
        self.C = float(arrays["C"])
        self.examples = int(arrays["examples"])
        self.rows = int(arrays["rows"])
        self.fingerprint = int(arrays["fingerprint"])
        self.group, self.key, self.alpha = arrays["group"], arrays["key"], arrays["alpha"]

    def check(self, task_name, block):
        """Refuse another task; return a warning (or None) when the old rows are not a prefix."""
        if self.task != task_name:
            raise StateError(self.path, f"the state is for the {self.task} task, not {task_name}")
        if self.rows > block.n_rows or fingerprint(block, self.rows) != self.fingerprint:
            return (f"{self.path}: the data's first {self.rows} rows are not the rows the state was "
                    f"trained on; the warm start is still correct, but may not save time")
        return None

    def start_alpha(self, C):
        """A function of the new problem's listed constraints: their hot start."""
        def start(cons):
            alpha = np.zeros(cons.size)
            if not len(self.alpha) or not cons.size:
                return alpha
            keys, inverse = np.unique(np.concatenate([self.key, cons.key]), return_inverse=True)
            span = np.int64(len(keys))
            old = self.group * span + inverse[:len(self.key)]
            new = cons.group.astype(np.int64) * span + inverse[len(self.key):]
            order = np.argsort(old, kind="stable")
            at = np.minimum(np.searchsorted(old[order], new), len(old) - 1)
            found = old[order][at] == new
            alpha[found] = self.alpha[order][at[found]] * (C / self.C)
            return alpha
        return start


def load_state(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise StateError(path, "no such file") from None
    except OSError as e:
        raise StateError(path, f"cannot read: {e.strerror or e}") from None
    except Exception:            # not an npz (zip) archive, or a corrupt one
        raise StateError(path, "not a state file (an .npz archive written by --save-state)") from None
    bad = [k for k, v in arrays.items() if not isinstance(v, np.ndarray) or v.dtype.kind == "O"]
    if bad:
        raise StateError(path, f"not a state file: {bad[0]!r} is not a numpy array")
    mode = arrays.get("mode")
    if mode is not None and mode.shape == () and str(mode) != MODE:
        raise StateError(path, f"the state is from the {str(mode)} mode; this training runs "
                               f"{MODE}: warm-start a run of the same mode")
    missing = [k for k in KEYS if k not in arrays]
    if missing:
        raise StateError(path, f"not an svmtrain state file: missing {', '.join(missing)}")
    version = arrays["format_version"]
    if version.shape != () or version.dtype.kind not in "iu" or int(version) != STATE_VERSION:
        raise StateError(path, f"unsupported state format version {version!r} (this svmtrain "
                               f"reads version {STATE_VERSION})")
    for k in ("C", "examples", "rows", "fingerprint", "task"):
        if arrays[k].shape != ():
            raise StateError(path, f"{k} must be a single value")
    n = arrays["alpha"].shape
    if (len(n) != 1 or arrays["group"].shape != n or arrays["key"].shape != n
            or arrays["group"].dtype.kind not in "iu" or arrays["key"].dtype.kind not in "iu"
            or arrays["alpha"].dtype.kind != "f"):
        raise StateError(path, "group, key and alpha must be 1-D arrays of one length "
                               "(integers, integers, floats)")
    C = float(arrays["C"])
    alpha = arrays["alpha"]
    if not (C > 0 and np.isfinite(C)) or not np.all(np.isfinite(alpha)) or np.any(alpha < 0):
        raise StateError(path, "C must be positive and the alphas finite and >= 0")
    if len(alpha) and (arrays["group"].min() < 0 or arrays["group"].max() >= int(arrays["examples"])):
        raise StateError(path, "a constraint names an example outside [0, examples)")
    return State(path, arrays)
