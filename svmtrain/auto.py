"""`--mode auto`: which linear mode solves a problem fastest, chosen before the data is read.

The rule, from the task and the size of the input (all modes solve the same problem to the same
certified gap, so only time and memory differ):

1. The data would not fit: its in-memory size (about MEMORY_PER_BYTE bytes per byte of svmlight
   text; compressed files by their typical ratio) above half the memory available -> online-dual,
   whose memory is bounded by its cache, not by the data.
2. ranking above RANKING_BYTES -> 1-slack: n-slack lists every pair of a query (ohsumed: 367,663
   pairs for 9,177 rows, 4.2 MB) where 1-slack aggregates a query's pairs into one plane per pass
   (ohsumed 0.45 s against n-slack's 1.74 s, the same optimum); on a few queries the pairs are few
   and n-slack wins (data/ohsumed.train.sample, 5 queries, 0.1 MB: 0.09 s against 0.5 s).
3. sequence below SEQUENCE_BYTES -> 1-slack: on a few sentences 1-slack's one Viterbi pass per
   iteration beats n-slack's cutting-plane rounds (data/conll2000.train.svm, 100 sentences, 83 KB:
   0.73 s against 5.4 s); on whole corpora n-slack, which drops labellings idle for two rounds,
   wins (conll2000, 8,936 sentences, 33 MB, -e 1e-2: 26.8 s against 108 s).
4. binary and multiclass on large files -> 1-slack: its iterations grow slowly with n and it trains
   on the distinct rows (kddcup99, 494k rows, 45 MB: binary 0.33x n-slack, multiclass 1.8 s against
   16 s); below LARGE_BYTES dual coordinate descent wins (a9a, 3.6 MB: 1-slack 1.42x n-slack;
   kddcup99's fifth, 9 MB: even).
5. On Dask -> 1-slack: the oracle is map-reduce over the workers' partitions, where CoCoA+'s
   n-slack rounds close the gap by about 1.5% a round on kddcup99 binary (not certified after 30
   rounds, 280 s; 1-slack on 2 workers, from a sample and on each partition's distinct rows,
   certified 1e-3 in 7 s, 2.2x local n-slack).
6. Everything else -> n-slack (LIBLINEAR's dual coordinate descent; regression on cpusmall:
   1-slack 1.3x; the constraints task: its lines are the constraints).

The figures are bench/README.md's mode tables (`bench/run.py --only modes`), which also time
`--mode auto` against the best explicit mode on every shared set: in the last run auto's choice
cost at most 6% (a9a, ijcnn1: n-slack where 1-slack was 4-6% faster that time).
"""

import os

#: binary / multiclass files above this size (uncompressed bytes) train fastest by 1-slack
LARGE_BYTES = 20 << 20
#: sequence files below this size train fastest by 1-slack, larger ones by n-slack
SEQUENCE_BYTES = 1 << 20
#: ranking files above this size train fastest by 1-slack
RANKING_BYTES = 1 << 20
#: in-memory bytes per byte of svmlight text: CSR (12 bytes per nonzero, about 8 of text), the
#: engine's copy and the constraint cache
MEMORY_PER_BYTE = 4
#: typical expansion of svmlight text by the compressors the reader takes
COMPRESSION = {"gzip": 5, "bz2": 7, "xz": 8}


def input_bytes(source):
    """The uncompressed size of a file (estimated for compressed ones), or None (standard input,
    in-memory data, a file that cannot be opened: the reader will say why)."""
    if not isinstance(source, str) or source == "-" or hasattr(source, "iter_blocks"):
        return None
    try:
        size = os.path.getsize(source)
        with open(source, "rb") as f:
            head = f.read(6)
    except OSError:
        return None
    from svmtrain.data import _sniff
    kind = _sniff(head)
    return size * COMPRESSION.get(kind, 1) if kind else size


def available_memory():
    """MemAvailable of /proc/meminfo in bytes, or None where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def choose_mode(task, source, dask=False):
    """(mode name, reason) for `--mode auto`; `dask`: the run is on a Dask cluster."""
    if not isinstance(task, str):
        return "n-slack", "your own task"
    if dask:
        return "1-slack", "a Dask cluster"
    size = input_bytes(source)
    memory = available_memory()
    if size is not None and memory is not None and size * MEMORY_PER_BYTE > memory / 2:
        return "online-dual", "the data would not fit in memory"
    if task == "ranking" and (size is None or size > RANKING_BYTES):
        return "1-slack", "ranking"
    if task == "sequence" and size is not None and size < SEQUENCE_BYTES:
        return "1-slack", "sequence (a small file)"
    if task in ("binary", "multiclass") and size is not None and size > LARGE_BYTES:
        return "1-slack", "a large file"
    return "n-slack", "a small file" if task in ("binary", "multiclass") else task
