"""The process's allocator policy for long training runs (glibc only; elsewhere nothing is done).

glibc serves a large allocation with mmap, and gives it back to the system when it is freed, but
after such a block is freed it raises its mmap threshold to the block's size (up to 32 MB): later
arrays of that size then come from the heap, whose holes are reused but never given back. A run
that allocates and frees arrays of many sizes again and again (a stream of chunks; the cutting-plane
rounds of the sequence task, each with its oracle's tables and a grown cache) ratchets its
resident memory up to far above what it holds. A fixed threshold switches the adjustment off.
"""

#: online-dual: every chunk's arrays go back to the system (kddcup99 streamed 10 times: peak RSS
#: +31% over one time with glibc's adjustment, +1.5% at this fixed threshold, glibc's default)
STREAM_MMAP_THRESHOLD = 128 * 1024

#: sequence n-slack: see svmtrain.pipeline._train_batch for the measurements that chose it
ROUNDS_MMAP_THRESHOLD = 256 * 1024

#: online-dual on a structured task, every window (they are cutting-plane rounds too), with or
#: without a cache limit. One pass, against 4 MB (2026-11-28, idle, 2 runs each, the same models):
#: UD English EWT 127.6-127.7 against 130.8-131.0 MB, 39.9-41.7 s against 39.7-42.1 s;
#: conll2000 136.0-136.2 against 141.5-141.7 MB, 34.9-36.7 s against 34.4-35.4 s. Earlier, under
#: --cache-limit 32MB: UD 142 against 150 MB one pass, written 4 times 180 against 199 MB (148.4 s
#: against 147.8 s); at 128 KB 140 and 175 MB, but the 4 times file took 165 s, 20 s of it system
#: time. A file of several windows under the window bound (the default) peaked 15-20 MB higher
#: at 4 MB. Lower costs a multiclass run system time for little: sector (one window) 127.7
#: against 128.0 MB at 256 KB, for 1.0 s more of 12 s (2026-11-29).
WINDOWS_MMAP_THRESHOLD = 1024 * 1024

#: ... except for the sequence task, whose windows take its n-slack rounds' threshold: where the
#: window bound evicts the earlier windows' constraints (folds, the copies of what stays,
#: compactions), arrays of many sizes come and go. One pass, C 0.1, the same models (2026-11-29,
#: idle): UD English EWT written 4 times 134.6 MB at 1 MB, 131.2 at 512 KB, 128.8 at 256 KB (7.6
#: -> 11.7 s of system time, of 107-111 s), 127.1 at 128 KB (13.7 s); once 116.3 / 116.8 / 114.9 /
#: 112.9 MB (2.7 -> 3.8 s of system time at 256 KB, of 30-32 s); conll2000 131.5 -> 130.1 MB at
#: 256 KB, 0.1 s more system time. Lowering it only from a file's second window on took UD
#: written 4 times to 131.1 MB: the first window's holes stay.
SEQUENCE_WINDOWS_MMAP_THRESHOLD = ROUNDS_MMAP_THRESHOLD


def online_mmap_threshold(task_name, structured):
    """The mmap threshold of an online-dual run once its labels are read: a stream's, or a
    structured task's windows' (the sequence task's its own). The command line and the
    benchmark's pass-by-pass runs both take it from here, so that the memory the benchmark
    reports is the command's."""
    if task_name == "sequence":
        return SEQUENCE_WINDOWS_MMAP_THRESHOLD
    return WINDOWS_MMAP_THRESHOLD if structured else STREAM_MMAP_THRESHOLD


def _libc(name):
    """The process's C library function `name`, or None where there is none (not glibc)."""
    import ctypes
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def fix_mmap_threshold(nbytes):
    """Allocations of at least `nbytes` are mapped, and unmapped when freed, from now on; True
    when the allocator took the setting."""
    mallopt = _libc("mallopt")
    M_MMAP_THRESHOLD = -3
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, int(nbytes)))


def trim_heap():
    """Give the heap's free pages back to the system (glibc's malloc_trim); True when some were."""
    malloc_trim = _libc("malloc_trim")
    return malloc_trim is not None and bool(malloc_trim(0))
