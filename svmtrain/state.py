"""The dual state of an n-slack training run, for incremental retraining (--save-state,
--warm-start).

A state file is a numpy .npz archive (no pickled objects) with these arrays:

    format_version  int       STATE_VERSION (version 1 files, without the entries marked 2, are read)
    mode            str       'n-slack' (other modes write their own states; a mismatch is refused)
    task            str       the task it was trained for
    C               float     the C it was trained with
    examples        int       its number of examples (slack groups)
    rows            int       its number of data rows
    fingerprint     int       crc32 of those rows' targets and nonzero counts
    group, key      int64     one per cached constraint: its example and which of the example's
                              constraints it is (the task's key: class, side, line, labelling hash)
    alpha           float64   one per cached constraint: its dual variable
  2 shrink_dec, shrink_inc  float   the engine's shrinking thresholds at the end (inf: none)

Listed constraints are rebuilt by the task and matched by (group, key). A run that grew its cache
by cutting planes (sequence; multiclass past the listing limit) also stores each cached constraint
as its terms over the data rows, enough to rebuild it against the same rows or an extension of
them (the old rows first, unchanged):

  2 cache_tptr, cache_term_row, cache_term_scale, cache_term_offset, cache_term_bias, cache_margin
                              the svmtrain.tasks.base.Constraints arrays of the cache
  2 layout      int       crc32 of what else a constraint depends on: task options (loss,
                          rescaling), the bias value, and the controls that rescale the data or
                          shift the margins (--reg-scale, --bias-reg, --prior)
  2 data_crc    int       crc32 of the old rows whole (nonzeros, values, targets, qids)
  2 n_cols, width         the feature columns and block width the offsets were laid out for
  2 labels      float64   the task's labels (classes, tags; none for unlabelled tasks)

Hot start (`hot_start`): constraints of the new problem that the state knows start at their old
alpha times C_new / C_old, new ones at 0; the engine then projects onto the new box
(sum_j alpha_ij <= C_i, alpha >= 0: a changed C or weight clips). Any feasible start leads to the
same optimum, so a listed state from other data is still correct, only slower (the fingerprint
tells when the old examples are not the first rows of the new data: a warning). A cached
constraint, though, is only a constraint of the new problem if its rows are the same: a cache
state whose rows, labels or layout differ is refused.

The shrinking thresholds let the hot start's first epoch set aside what the old run had set aside
(the constraints far from moving) instead of visiting everything for several epochs while the
thresholds fall from infinity; a wrong guess is undone by the engine's checks. They are used only
when the new problem has no constraint the state does not know (a changed C or weights): new
examples move w further than the old run's last epoch did, and the guess is then mostly wrong.
"""

import zlib

import numpy as np

from svmtrain.data import DataError, crc32_as

STATE_VERSION = 2
READS = (1, 2)
MODE = "n-slack"
KEYS = ("format_version", "mode", "task", "C", "examples", "rows", "fingerprint", "group", "key",
        "alpha")
CACHE_KEYS = ("cache_tptr", "cache_term_row", "cache_term_scale", "cache_term_offset",
              "cache_term_bias", "cache_margin", "layout", "data_crc", "n_cols", "width", "labels")


class StateError(DataError):
    """A state file that cannot be used: str(e) names the file and the reason (exit 2, as any
    input error, also when found by a solver)."""

    def __init__(self, path, reason):
        super().__init__(path, None, reason)

    def __reduce__(self):
        return StateError, (self.path, self.reason)


def fingerprint(block, rows=None):
    """crc32 of the first `rows` rows' targets and nonzero counts."""
    rows = block.n_rows if rows is None else rows
    # as the reader's types, however a task keeps them (data.narrow_row_arrays)
    crc = crc32_as(block.target[:rows], np.float64)
    return crc32_as(np.diff(block.indptr[:rows + 1]), np.int64, crc)


def data_crc(block, rows=None):
    """crc32 of the first `rows` rows whole: what a cached constraint's terms read."""
    rows = block.n_rows if rows is None else rows
    end = int(block.indptr[rows])
    crc = 0
    for a, dtype in ((np.diff(block.indptr[:rows + 1]), np.int64), (block.indices[:end], np.int64),
                     (block.data[:end], np.float64), (block.target[:rows], np.float64),
                     (block.qid[:rows], np.int64)):
        crc = crc32_as(a, dtype, crc)      # as the reader's types: however a task stores them
    return crc


def layout_crc(task, bias, controls):
    """crc32 of what a cached constraint depends on besides its rows and labels (see the module
    docstring): the task's options, the bias value (None: none) and the controls that rescale the
    data or shift the margins, as given (not laid out: more features may come)."""
    reg = sorted((controls.reg_scale or {}).items())
    parts = [task.name, repr(getattr(task, "loss", None)), repr(getattr(task, "rescaling", None)),
             repr(None if bias is None else float(bias)), repr(controls.bias_reg), repr(reg)]
    crc = zlib.crc32(" ".join(parts).encode())
    prior = controls.prior_model
    if prior is not None:
        crc = zlib.crc32(repr((prior.n_features, prior.bias)).encode(), crc)
        crc = zlib.crc32(np.ascontiguousarray(prior.w, np.float64).tobytes(), crc)
    return crc


def save_state(path, *, task, C, examples, block, constraints, alpha, thresholds=None,
               cache_layout=None):
    """Write a state. `cache_layout` (a dict: layout, n_cols, width) marks a cutting-plane cache:
    the constraints' terms are stored with it."""
    from svmtrain.atomic import atomic_output
    dec, inc = thresholds if thresholds is not None else (np.inf, np.inf)
    arrays = {"format_version": np.int64(STATE_VERSION), "mode": np.str_(MODE),
              "task": np.str_(task), "C": np.float64(C), "examples": np.int64(examples),
              "rows": np.int64(block.n_rows), "fingerprint": np.int64(fingerprint(block)),
              "group": np.asarray(constraints.group, np.int64),
              "key": np.asarray(constraints.key, np.int64),
              "alpha": np.asarray(alpha, np.float64),
              "shrink_dec": np.float64(dec), "shrink_inc": np.float64(inc)}
    if cache_layout is not None:
        arrays.update(cache_tptr=np.asarray(constraints.tptr, np.int64),
                      cache_term_row=np.asarray(constraints.term_row, np.int64),
                      cache_term_scale=np.asarray(constraints.term_scale, np.float64),
                      cache_term_offset=np.asarray(constraints.term_offset, np.int64),
                      cache_term_bias=np.asarray(constraints.term_bias, bool),
                      cache_margin=np.asarray(constraints.margin, np.float64),
                      layout=np.int64(cache_layout["layout"]), data_crc=np.int64(data_crc(block)),
                      n_cols=np.int64(cache_layout["n_cols"]),
                      width=np.int64(cache_layout["width"]),
                      labels=np.asarray(cache_layout["labels"], np.float64))
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
        self.thresholds = None
        if "shrink_dec" in arrays:
            self.thresholds = (float(arrays["shrink_dec"]), float(arrays["shrink_inc"]))
        self.cache = {k: arrays[k] for k in CACHE_KEYS} if "cache_tptr" in arrays else None

    def check(self, task_name, block):
        """Refuse another task; return a warning (or None) when the old rows are not a prefix."""
        if self.task != task_name:
            raise StateError(self.path, f"the state is for the {self.task} task, not {task_name}")
        if self.rows > block.n_rows or fingerprint(block, self.rows) != self.fingerprint:
            if self.cache is not None:
                raise StateError(self.path, f"the state's cached constraints are over {self.rows} "
                                            f"rows that are not the first rows of this data: it "
                                            f"cannot warm-start training on it")
            return (f"{self.path}: the data's first {self.rows} rows are not the rows the state was "
                    f"trained on; the warm start is still correct, but may not save time")
        return None

    def hot_start(self, C):
        """A function of the new problem's listed constraints: their hot start (alpha0, shrink0).

        alpha0: known constraints at their old alpha times C / C_old, new ones at 0. shrink0: the
        old run's shrinking thresholds when the state knows every constraint (only C or weights
        changed), else None (the engine's first epoch measures its own). New examples' first steps
        move w far more than the old run's last epoch did (ijcnn1's 80% state: violations up to
        4.75 at the start against thresholds of 0.04), so what those thresholds set aside in the
        first epoch comes back for the next ten: from the 80% state at -e 1e-3, 31.8 epochs with
        them against 23.6 without (27.4 from scratch; the mean of 5 seeds)."""
        def start(cons):
            alpha = np.zeros(cons.size)
            if not cons.size:
                return alpha, self.thresholds
            if not len(self.alpha):
                return alpha, None
            keys, inverse = np.unique(np.concatenate([self.key, cons.key]), return_inverse=True)
            span = np.int64(len(keys))
            old = self.group * span + inverse[:len(self.key)]
            new = cons.group.astype(np.int64) * span + inverse[len(self.key):]
            order = np.argsort(old, kind="stable")
            at = np.minimum(np.searchsorted(old[order], new), len(old) - 1)
            found = old[order][at] == new
            alpha[found] = self.alpha[order][at[found]] * (C / self.C)
            return alpha, (self.thresholds if found.all() else None)
        return start

    def start_cache(self, C, block, layout, n_cols, width, labels):
        """The cached constraints rebuilt over `block` (the old rows first, then new ones) with
        their alphas times C / C_old as alpha0; StateError when they cannot be.

        The tasks that grow caches (multiclass, sequence) lay w out feature-major with stride K,
        the number of labels: a term at offset k < K places its row in label k's slots (whatever
        the number of columns), and offsets from K * width on address what follows the blocks,
        the sequence task's transitions (K + 1) x K, from (previous or START = K, current). New
        labels (the old ones must all be there) and new columns move both. Rows past the old data
        rows are the task's extra rows (the sequence task's unit row, after the data) and move
        with the data."""
        from svmtrain.tasks.base import Constraints
        c = self.cache
        if int(c["layout"]) != layout:
            raise StateError(self.path, "the state was trained with other task options, bias or "
                                        "controls (--loss, --rescaling, -B, --bias-reg, "
                                        "--reg-scale, --prior): its cached constraints are not "
                                        "constraints of this problem")
        if data_crc(block, self.rows) != int(c["data_crc"]):
            raise StateError(self.path, f"the data's first {self.rows} rows differ from the rows "
                                        f"the state was trained on (values or qids): its cached "
                                        f"constraints cannot be rebuilt")
        old_labels, labels = c["labels"], np.asarray(labels, np.float64)
        at = np.searchsorted(labels, old_labels)
        if len(old_labels) != 0 and (np.any(at >= len(labels))
                                     or np.any(labels[np.minimum(at, len(labels) - 1)] != old_labels)):
            raise StateError(self.path, f"the state's labels are not all among this data's "
                                        f"({len(old_labels)} against {len(labels)}): its cached "
                                        f"constraints cannot be placed")
        old_cols, old_width, offset = int(c["n_cols"]), int(c["width"]), c["cache_term_offset"]
        K_old, K = max(len(old_labels), 1), max(len(labels), 1)
        if (K_old, old_width) != (K, width):
            if n_cols < old_cols or len(old_labels) == 0:
                raise StateError(self.path, f"the state was laid out for {old_cols} features and "
                                            f"{len(old_labels)} labels, this data has {n_cols} and "
                                            f"{len(labels)}: its cached constraints cannot be placed")
            inside = (offset >= K_old) & (offset < K_old * old_width)
            if np.any(inside):
                raise StateError(self.path, "its cached constraints are not laid out as the task's")
            past = offset >= K_old * old_width
            pair = offset[past] - K_old * old_width
            prev, cur = np.divmod(pair, K_old)
            if np.any(prev > K_old):
                raise StateError(self.path, "its cached constraints reach past the task's weights")
            prev = np.where(prev == K_old, K, at[np.minimum(prev, K_old - 1)])
            offset = offset.copy()
            offset[~past] = at[offset[~past]]
            offset[past] = K * width + prev * K + at[cur]
        row = c["cache_term_row"].copy()
        row[row >= self.rows] += block.n_rows - self.rows
        cons = Constraints(c["cache_tptr"], row, c["cache_term_scale"], offset,
                           c["cache_term_bias"], c["cache_margin"], self.group.astype(np.int64),
                           self.key.astype(np.int64))
        cons.alpha0 = self.alpha * (C / self.C)
        return cons


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
    if version.shape != () or version.dtype.kind not in "iu" or int(version) not in READS:
        raise StateError(path, f"unsupported state format version {version!r} (this svmtrain "
                               f"reads versions {', '.join(map(str, READS))})")
    for k, kind in (("C", "fiu"), ("examples", "iu"), ("rows", "iu"), ("fingerprint", "iu"),
                    ("task", "U")):
        if arrays[k].shape != () or arrays[k].dtype.kind not in kind:
            raise StateError(path, f"{k} must be a single value "
                                   f"({'a name' if kind == 'U' else 'a number'})")
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
    if int(arrays["rows"]) < 0 or int(arrays["examples"]) < 0:
        raise StateError(path, "rows and examples must be >= 0")
    if ("shrink_dec" in arrays) != ("shrink_inc" in arrays):
        raise StateError(path, "shrink_dec and shrink_inc go together")
    if "shrink_dec" in arrays:
        th = [arrays["shrink_dec"], arrays["shrink_inc"]]
        if (any(t.shape != () or t.dtype.kind != "f" for t in th)
                or not all(float(t) > 0 for t in th)):     # inf: no threshold; nan fails
            raise StateError(path, "the shrinking thresholds must be single numbers > 0")
    _check_cache(path, arrays, n[0])
    return State(path, arrays)


def _check_cache(path, arrays, n):
    present = [k for k in CACHE_KEYS if k in arrays]
    if not present:
        return
    if len(present) != len(CACHE_KEYS):
        missing = [k for k in CACHE_KEYS if k not in arrays]
        raise StateError(path, f"a damaged constraint cache: missing {', '.join(missing)}")
    for k in ("layout", "data_crc", "n_cols", "width"):
        if arrays[k].shape != () or arrays[k].dtype.kind not in "iu":
            raise StateError(path, f"{k} must be a single integer")
    labels = arrays["labels"]
    if (labels.ndim != 1 or labels.dtype.kind != "f" or not np.all(np.isfinite(labels))
            or np.any(np.diff(labels) <= 0)):
        raise StateError(path, "labels must be finite numbers, ascending")
    if int(arrays["n_cols"]) < 0 or int(arrays["width"]) < int(arrays["n_cols"]):
        raise StateError(path, "n_cols and width must be >= 0, width >= n_cols")
    tptr = arrays["cache_tptr"]
    if (tptr.ndim != 1 or tptr.dtype.kind not in "iu" or tptr.shape[0] != n + 1 or tptr[0] != 0
            or np.any(np.diff(tptr.astype(np.int64)) < 0)):
        raise StateError(path, "cache_tptr must be a term pointer: one more entry than alpha, "
                               "from 0, non-decreasing")
    terms = int(tptr[-1])
    kinds = {"cache_term_row": "iu", "cache_term_scale": "f", "cache_term_offset": "iu",
             "cache_term_bias": "b"}
    for k, kind in kinds.items():
        a = arrays[k]
        if a.ndim != 1 or a.shape[0] != terms or a.dtype.kind not in kind:
            raise StateError(path, f"{k} must hold one {'integer' if kind == 'iu' else 'value'} "
                                   f"per term ({terms})")
    margin = arrays["cache_margin"]
    if margin.ndim != 1 or margin.shape[0] != n or margin.dtype.kind != "f":
        raise StateError(path, "cache_margin must hold one float per cached constraint")
    if terms and (arrays["cache_term_row"].min() < 0 or arrays["cache_term_offset"].min() < 0):
        raise StateError(path, "a cached term names a negative row or offset")
    # |scale| <= 1e150: a constraint's terms are sums of data rows scaled by small counts and
    # losses; a scale past this makes w . x overflow to inf in the oracles
    if not (np.all(np.abs(arrays["cache_term_scale"]) <= 1e150) and np.all(np.isfinite(margin))):
        raise StateError(path, "cached constraints must be finite (|term scale| <= 1e150)")
