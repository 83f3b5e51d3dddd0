"""What the benchmarks share: the data files they derive, timing, tables and the results files."""

import gc
import json
import lzma
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent               # the venv's bin: svmtrain, svmtools
PEERS = Path(__file__).resolve().parent / "peers.py"
PINNED = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
          "NUMEXPR_NUM_THREADS")


def pinned_env():
    """The environment for child processes: BLAS and OpenMP held to one thread."""
    env = dict(os.environ)
    for var in PINNED:
        env[var] = "1"
    return env


# -- timing ------------------------------------------------------------------------------------------

def best_of(repeat, fn):
    """(best seconds, all seconds, fn's last result): fn() run `repeat` times on a collected heap."""
    times, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), times, result


def run_timed(argv, *, check=True):
    """Run a child process; (wall seconds, CompletedProcess with text stdout/stderr)."""
    start = time.perf_counter()
    proc = subprocess.run([str(a) for a in argv], env=pinned_env(), cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
                           f"{proc.stderr[-2000:]}")
    return seconds, proc


# -- data --------------------------------------------------------------------------------------------

@dataclass
class Data:
    """Plain copies of the shared xz files, and files derived from them, in .cache/data/.

    Every file is written to a temporary name and renamed into place, so a file found there is
    complete; it is reused by later runs (delete .cache/data/ to start over).
    """

    shared: Path
    cache: Path = field(default_factory=lambda: ROOT / ".cache" / "data")

    def __post_init__(self):
        self.shared = Path(self.shared)
        self.cache.mkdir(parents=True, exist_ok=True)

    def _write(self, name, produce):
        path = self.cache / name
        if path.exists():
            return path
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as out:
                produce(out)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
        return path

    def plain(self, rel):
        """`rel` (e.g. 'a9a/a9a.t') decompressed from SHARED/rel.xz."""
        src = self.shared / f"{rel}.xz"
        if not src.exists():
            raise SystemExit(f"bench: {src} not found (set --shared-data)")

        def produce(out):
            with lzma.open(src, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
        return self._write(Path(rel).name, produce)

    def source(self, rel):
        """The shared file `rel` (e.g. 'conll2000/train.txt') as a group that reads it whole
        should take it: here the xz itself (its readers decompress it on the fly)."""
        src = self.shared / f"{rel}.xz"
        if not src.exists():
            raise SystemExit(f"bench: {src} not found (set --shared-data)")
        return src

    def repeated(self, rel, k):
        """The file `rel` written k times over (same rows, k times as many)."""
        src = self.plain(rel)

        def produce(out):
            for _ in range(k):
                with open(src, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        return self._write(f"{src.name}.x{k}", produce)

    def head(self, path, lines):
        """The first `lines` lines of a cached file (the --quick subsets)."""
        path = Path(path)

        def produce(out):
            with open(path, "rb") as f:
                for i, line in enumerate(f):
                    if i >= lines:
                        break
                    out.write(line)
        return self._write(f"{path.name}.head{lines}", produce)

    def kddcup99_binary(self):
        """kddcup99 as a binary problem: its largest class (+1) against the rest (-1), features
        scaled to [0, 1] by their largest absolute value (svm-scale -l 0 -u 1 on this non-negative
        data, %g values). Returns (path, info)."""
        src = self.plain("kddcup99/kddcup99")
        proc = subprocess.run([BIN / "svmtools", "check", "--json", "-q", str(src)],
                              capture_output=True, text=True, check=True, env=pinned_env())
        labels = json.loads(proc.stdout)["labels"]
        largest = max(labels, key=lambda k: labels[k])
        info = {"positive_label": largest, "positive_rows": labels[largest],
                "rows": sum(labels.values()), "classes": len(labels)}

        def produce(out):
            from svmtrain import data
            b = data.load(str(src))
            if b.data.size and b.data.min() < 0:
                raise SystemExit("bench: kddcup99 has negative values; the [0, 1] scaling assumes none")
            top = np.zeros(b.n_features)
            np.maximum.at(top, b.indices, np.abs(b.data))
            values = np.char.mod("%g", b.data / top[b.indices])
            tokens = np.char.add(np.char.add((b.indices + 1).astype(str), ":"), values)
            signs = np.where(b.target == float(largest), "+1", "-1")
            ip = b.indptr
            lines = (signs[i] + " " + " ".join(tokens[ip[i]:ip[i + 1]]) + "\n"
                     for i in range(b.n_rows))
            chunk = []
            for line in lines:
                chunk.append(line)
                if len(chunk) == 65536:
                    out.write("".join(chunk).encode())
                    chunk = []
            out.write("".join(chunk).encode())
        return self._write("kddcup99.binary", produce), info


    # -- the `tasks` group's files ------------------------------------------------------------------

    def scaled(self, rel, name, *, by=None, features=None, target=None, ranges_from=None,
               every=1):
        """`rel` with its features rescaled, written as `name` (%g values, zeros omitted).

        by=S: every value divided by S. features=(lo, hi): each column mapped linearly from its
        [min, max] (implicit zeros included, as svm-scale does) to [lo, hi]; a constant column
        becomes 0. target=(lo, hi): the same for the targets. ranges_from: another rel whose
        [min, max] ranges are used (svm-scale -r, for a test file). every=k: only rows 0, k, 2k...
        """
        src = self.plain(rel)

        def produce(out):
            from svmtrain import data
            import scipy.sparse as sp
            b = data.load(str(src))
            ref = data.load(str(self.plain(ranges_from))) if ranges_from else b
            n = max(b.n_features, ref.n_features)
            X = sp.csr_matrix((b.data, b.indices, b.indptr), shape=(b.n_rows, n))
            y = b.target.copy()
            if every > 1:
                X, y = X[::every], y[::every]
            if by is not None:
                X = X / by
            if features is not None:
                R = sp.csr_matrix((ref.data, ref.indices, ref.indptr), shape=(ref.n_rows, n))
                lo = np.asarray(R.min(axis=0).todense()).ravel()
                hi = np.asarray(R.max(axis=0).todense()).ravel()
                span = np.where(hi > lo, hi - lo, 1.0)
                D = (np.asarray(X.todense()) - lo) / span * (features[1] - features[0]) + features[0]
                D[:, hi <= lo] = 0.0
                X = sp.csr_matrix(D)
            if target is not None:
                lo, hi = ref.target.min(), ref.target.max()
                y = (y - lo) / (hi - lo) * (target[1] - target[0]) + target[0]
            X = sp.csr_matrix(X)
            X.eliminate_zeros()
            X.sort_indices()
            write_svmlight(out, X, y)
        return self._write(name, produce)


class Skip(Exception):
    """A benchmark (or a part of one) that cannot run here: a peer or a data file is absent. The
    runner reports the note instead of a table; it is not a failure."""


#: --smoke: how many lines of each shared file the groups see
SMOKE_LINES = 400
#: --smoke: files whose first lines are all of one class are sampled every k-th line instead
SMOKE_STRIDE = {"kddcup99/kddcup99": 1201}


@dataclass
class SmokeData(Data):
    """Tiny data for `run.py --smoke`: every shared file cut to its first SMOKE_LINES lines (read
    from the xz on the fly, in .cache/smoke/; a file in SMOKE_STRIDE: every k-th line). Every derived
    file (kddcup99 binary, scaled copies, repeats) is built from these slices by Data's own code,
    so the smoke run exercises the code the full run uses. A shared file that is absent makes
    the group that needs it skip with a note (Skip)."""

    cache: Path = field(default_factory=lambda: ROOT / ".cache" / "smoke")
    lines: int = SMOKE_LINES

    def plain(self, rel):
        src = self.shared / f"{rel}.xz"
        if not src.exists():
            raise Skip(f"{src} not found (give --shared-data)")

        stride = SMOKE_STRIDE.get(rel, 1)

        def produce(out):
            with lzma.open(src, "rb") as f:
                for i, line in enumerate(f):
                    if i >= self.lines * stride:
                        break
                    if i % stride == 0:
                        out.write(line)
        # named with its folder: conll2000/train.txt and ohsumed/train.txt are different files
        return self._write(f"{Path(rel).parent.name}-{Path(rel).name}", produce)

    def source(self, rel):
        """The slice, where a full run reads the whole xz."""
        return self.plain(rel)


def write_svmlight(out, X, y):
    """CSR X and targets y as svmlight lines (%g values, 1-based indices) to a binary file."""
    values = np.char.mod("%g", X.data)
    tokens = np.char.add(np.char.add((X.indices + 1).astype(str), ":"), values)
    labels = np.char.mod("%g", y)
    ip = X.indptr
    chunk = []
    for i in range(X.shape[0]):
        chunk.append(" ".join([labels[i], *tokens[ip[i]:ip[i + 1]]]) + "\n")
        if len(chunk) == 65536:
            out.write("".join(chunk).encode())
            chunk = []
    out.write("".join(chunk).encode())


def warm(path):
    """Read a file once so that every timed reader finds it in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


# -- tables and results ------------------------------------------------------------------------------

@dataclass
class Table:
    """One benchmark's report: a title, columns, rows of already formatted cells, notes below."""

    name: str
    title: str
    columns: list
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    records: list = field(default_factory=list)   # raw figures for latest.json
    summary: dict = field(default_factory=dict)

    def text(self):
        cells = [self.columns] + [[str(c) for c in r] for r in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]

        def line(r):
            return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        out = [f"== {self.name}: {self.title}", line(self.columns), line(["-" * w for w in widths])]
        out += [line(r) for r in cells[1:]]
        out += [f"  {n}" for n in self.notes]
        return "\n".join(out)

    def markdown(self):
        out = [f"## {self.name}: {self.title}", "",
               "| " + " | ".join(self.columns) + " |",
               "|" + "|".join("---" if i == 0 else "---:" for i in range(len(self.columns))) + "|"]
        out += ["| " + " | ".join(str(c) for c in r) + " |" for r in self.rows]
        if self.notes:
            out += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(out)


def environment():
    """What the figures were measured on."""
    import scipy
    import sklearn

    import svmtrain

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.rstrip("\n")
        except (OSError, subprocess.CalledProcessError):
            return None
    dirty = git("status", "--porcelain", "--", "pyx", "svmtrain", "setup.py")
    # the extensions measured are the built ones: say when a source is newer than its build
    built = {}
    for so in sorted((ROOT / "svmtrain").glob("_*.so")):
        pyx = ROOT / "pyx" / (so.name.split(".")[0] + ".pyx")
        built[so.name.split(".")[0]] = {
            "built": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(so.stat().st_mtime)),
            "source_newer": pyx.exists() and pyx.stat().st_mtime > so.stat().st_mtime}
    try:
        from importlib.metadata import version
        liblinear_version = version("liblinear-official")
    except Exception:   # noqa: BLE001 - only informative
        liblinear_version = None
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": dirty.splitlines() if dirty else [],
        "extensions": built,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": _cpu_name(),
        "cpus": os.cpu_count(),
        "svmtrain": getattr(svmtrain, "__version__", None),
        "numpy": np.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
        "liblinear-official": liblinear_version,
        "threads": {v: os.environ.get(v) for v in PINNED},
    }


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def write_results(directory, env, options, tables):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    payload = {"environment": env, "options": options,
               "benchmarks": {t.name: {"title": t.title, "columns": t.columns, "rows": t.rows,
                                       "notes": t.notes, "summary": t.summary,
                                       "records": t.records} for t in tables}}
    _atomic_text(directory / "latest.json", json.dumps(payload, indent=1, default=_jsonable) + "\n")
    kind = ("smoke run: tiny slices, no figure judged" if options.get("smoke") else
            "quick subsets" if options["quick"] else "full run")
    head = [f"# svmtrain benchmarks ({kind})", "",
            f"- command: `{options['command']}`",
            f"- date: {env['date']}; commit {env['commit']}"
            + (f" with uncommitted changes to {', '.join(l[3:] for l in env['uncommitted_changes'])}"
               if env["uncommitted_changes"] else ""),
            f"- machine: {env['processor']}, {env['cpus']} cpus; python {env['python']}, "
            f"numpy {env['numpy']}, scikit-learn {env['scikit-learn']}, "
            f"liblinear-official {env['liblinear-official']}; BLAS/OpenMP threads pinned to 1",
            f"- each time is the best of {options['repeat']} runs"]
    head += [f"- skipped {note}" for note in options.get("skipped", [])] + [""]
    _atomic_text(directory / "latest.md", "\n".join(head) + "\n" +
                 "\n\n".join(t.markdown() for t in tables) + "\n")


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON: {type(x)}")


def _atomic_text(path, text):
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# -- number formats ----------------------------------------------------------------------------------

def fs(seconds):
    """Seconds, three significant figures."""
    return f"{seconds:.3g}"


def fr(ratio):
    return f"{ratio:.2f}x" if ratio == ratio else "-"


def fe(x):
    return f"{x:.2g}" if x == x else "-"
