"""What is allocated at the peak of an svmtrain command, by where it was allocated.

    python bench/memprofile.py [--depth 3] [--top 20] -- train -t sequence -c 0.1 FILE MODEL

Runs `python -m svmtrain ARGS...` under memray (a profiler, not a dependency of svmtrain:
`pip install memray`) and prints the heap at its high-water mark, summed by the innermost
`depth` frames of svmtrain and numpy code that allocated it. This is how the memory figures in
bench/README.md were taken apart: peak RSS (`/usr/bin/time`) says how much, this says what.

Two things it does not see: the interpreter's and libraries' own pages (about 30 MB of a train
run's RSS), and the difference between memory allocated and memory touched (calloc's zero pages
count here from the start, in RSS only once written).
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile


def peak(capture, depth):
    """(total bytes at the peak, Counter of location -> bytes) of a memray capture file."""
    from memray import FileReader
    by_place = collections.Counter()
    for record in FileReader(capture).get_high_watermark_allocation_records(merge_threads=True):
        frames = [f"{name}:{os.path.basename(path)}:{line}" for name, path, line in record.stack_trace()
                  if "svmtrain" in path or "numpy" in path][:depth]
        by_place[" < ".join(frames) or "(elsewhere)"] += record.size
    return sum(by_place.values()), by_place


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=3, help="frames of a location (default 3)")
    parser.add_argument("--top", type=int, default=20, help="locations shown (default 20)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then svmtrain's arguments")
    opts = parser.parse_args(argv)
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    if not args:
        parser.error("no svmtrain command given (after --)")
    try:
        import memray  # noqa: F401
    except ImportError:
        sys.exit("bench/memprofile.py: memray is not installed (pip install memray)")
    with tempfile.TemporaryDirectory() as tmp:
        capture = os.path.join(tmp, "capture.bin")
        run = subprocess.run([sys.executable, "-m", "memray", "run", "-q", "--native", "-o", capture,
                              "-m", "svmtrain", *args])
        if run.returncode != 0:
            sys.exit(run.returncode)
        total, by_place = peak(capture, opts.depth)
    print(f"heap at its peak: {total / 1e6:.1f} MB")
    for place, size in by_place.most_common(opts.top):
        print(f"{size / 1e6:8.1f} MB  {place}")


if __name__ == "__main__":
    main()
