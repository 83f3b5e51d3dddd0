"""Sequence tagging on UD English EWT (UPOS): svmtrain's sequence task against CRFsuite, side by side.

    python bench/seqbench.py [--shared-data DIR] [--quick] [--epsilon E ...] [--one-slack]

The data: the CoNLL-U files of ../shared/data/ud_english_ewt become CoNLL column files (word and
UPOS tag; comment lines, multiword-token lines `n-m` and empty nodes `n.k` dropped, spaces inside a
word written `_`), then `svmtools conll2svm` with its default features (word, lowercase, shape,
affixes 1..3, the word features of the neighbours at -1 and +1, bias) writes the svmlight files; the
test file goes through the training dictionary (unknown features dropped). Everything derived
lives in .cache/data/ (ignored by git).

The runs, each a fresh child process (peak RSS from os.wait4, wall clock around the process):
- svmtrain: `svmtrain train -t sequence -c 0.1` (n-slack by cutting planes; SVM-hmm's C = 0.1 x
  12,544 sentences = 1254.4), then `svmtrain predict --json` on the test file;
- CRFsuite (python-crfsuite, when installed; skipped with a note otherwise): bench/crfpeer.py, a
  child importing nothing but pycrfsuite, reads the same svmlight training file (each feature
  index an attribute: exactly conll2svm's features), handing each sentence to the trainer as it
  is read, so the peak memory is CRFsuite's and not a Python list of every sentence; trains a
  first-order CRF with L-BFGS (c1 0, c2 0.1, CRFsuite's own stopping rule), then tags the test
  file, streamed the same way. Its train time includes reading the file, as svmtrain's wall time
  does; its peak memory includes the tagging, which holds one sentence and the model.
Both read the same featurised file, so the conversion (shared) is reported once, on its own.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _common import BIN, Data, Table, fr, fs
from taskbench import _head_sentences as head_sentences, run_child

CRFPEER = Path(__file__).resolve().parent / "crfpeer.py"
SEQUENCE_C = 0.1          # the setting (svm_hmm -c 1254.4 = 0.1 x 12,544 sentences)
CRF_C2 = 0.1


# -- data --------------------------------------------------------------------------------------------

def conllu_to_columns(src, out):
    """Word and UPOS columns of a CoNLL-U file (binary streams), a blank line after each sentence."""
    import lzma
    with lzma.open(src, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\r\n")
            if not line:
                out.write(b"\n")
                continue
            if line.startswith(b"#"):
                continue
            cols = line.split(b"\t")
            if b"-" in cols[0] or b"." in cols[0]:
                continue          # a multiword token or an empty node: not a word of the tree
            word = cols[1].replace(b" ", b"_")
            out.write(word + b" " + cols[3] + b"\n")


def prepare(data):
    """(train.svm, test.svm, dictionary, conversion record) for UD English EWT."""
    files = {}
    for part in ("train", "test"):
        src = data.shared / "ud_english_ewt" / f"en_ewt-ud-{part}.conllu.xz"
        if not src.exists():
            raise SystemExit(f"seqbench: {src} not found (set --shared-data)")
        files[part] = data._write(f"ewt.{part}.conll", lambda out, s=src: conllu_to_columns(s, out))
    d = data.cache / "ewt.dict"
    tr, te = data.cache / "ewt.train.svm", data.cache / "ewt.test.svm"
    record = {}
    if not (d.exists() and tr.exists()):
        for p in (d, tr):
            p.unlink(missing_ok=True)
        wall, _o, err, rss = run_child([BIN / "svmtools", "conll2svm", "--new-dictionary", d,
                                        files["train"], tr])
        record["train"] = {"wall": wall, "peak_rss_mb": rss, "summary": err.strip()}
    if not te.exists():
        wall, _o, err, rss = run_child([BIN / "svmtools", "conll2svm", "--dictionary", d,
                                        "--unknown-tag-ok", files["test"], te])
        record["test"] = {"wall": wall, "peak_rss_mb": rss, "summary": err.strip()}
    return tr, te, d, record


def crfsuite_available():
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        return False
    return True


# -- the benchmark -----------------------------------------------------------------------------------

def ours(train, test, tmp, mode, epsilon):
    model = Path(tmp) / f"seq.{mode}.model"
    model.unlink(missing_ok=True)
    wall, _o, err, rss = run_child([BIN / "svmtrain", "train", "-t", "sequence", "-m", mode,
                                    "-c", repr(SEQUENCE_C), "-e", repr(epsilon), "-q", train, model])
    _w, out, _e, _r = run_child([BIN / "svmtrain", "predict", "-q", "--json", test, model,
                                 os.devnull])
    m = json.loads(out)
    return {"mode": mode, "epsilon": epsilon, "wall": wall, "peak_rss_mb": rss,
            "accuracy": m["accuracy"], "warning": err.strip()}


def crfsuite(train, test, tmp):
    result = Path(tmp) / "crf.json"
    wall, _o, _e, rss = run_child([sys.executable, CRFPEER, train, Path(tmp) / "crf.model",
                                   "--c2", repr(CRF_C2), "--test", test, "--result", result])
    r = json.loads(result.read_text())
    r.update(wall=wall, peak_rss_mb=rss)
    return r


def bench_sequence_ewt(data, quick, epsilons=(1e-3,), modes=("n-slack",)):
    train, test, _d, conversion = prepare(data)
    if quick:
        train = head_sentences(train, data.cache / "ewt.train.svm.head500", 500)
    table = Table("sequence-ewt", f"UD English EWT UPOS: svmtrain -t sequence -c {SEQUENCE_C:g} "
                  f"against CRFsuite (L-BFGS, c2 {CRF_C2:g}), same features, one run each",
                  ["run", "train s (reading incl.)", "peak MB", "test token acc", "vs CRFsuite s",
                   "vs CRFsuite MB"])
    peer = None
    with tempfile.TemporaryDirectory() as tmp:
        if crfsuite_available():
            peer = crfsuite(train, test, tmp)
            table.rows.append([f"CRFsuite L-BFGS c2 {CRF_C2:g} ({peer['iterations']} iterations)",
                               fs(peer["train_seconds"]), f"{peer['peak_rss_mb']:.0f}",
                               f"{100 * peer['accuracy']:.2f}", "", ""])
            table.records.append({"crfsuite": peer})
        else:
            table.notes.append("CRFsuite skipped: python-crfsuite is not installed "
                               "(pip install python-crfsuite).")
        for mode in modes:
            for eps in epsilons:
                r = ours(train, test, tmp, mode, eps)
                table.rows.append([f"svmtrain {mode} -e {eps:g}", fs(r["wall"]),
                                   f"{r['peak_rss_mb']:.0f}", f"{100 * r['accuracy']:.2f}",
                                   fr(r["wall"] / peer["train_seconds"]) if peer else "-",
                                   fr(r["peak_rss_mb"] / peer["peak_rss_mb"]) if peer else "-"])
                table.records.append({"ours": r})
    if conversion:
        table.records.append({"conll2svm": conversion})
    table.notes += [
        "Data: UD English EWT train (12,544 sentences, 204,577 words) and test (25,094 words), word "
        "and UPOS columns, featurised once by svmtools conll2svm (default features); both programs "
        "read that svmlight file. Conversion time not included in either.",
        "svmtrain: train s = the wall time of `svmtrain train` (a fresh process: reading, training, "
        "writing the model); CRFsuite: bench/crfpeer.py's clock from reading the file to the "
        "written model (python-crfsuite, attributes = conll2svm's feature indices, each sentence "
        "handed to the trainer as it is read).",
        "peak MB = the child's max RSS (os.wait4). Test accuracy over every test token.",
    ]
    if quick:
        table.notes.append("--quick: trained on the first 500 sentences only.")
    return table


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shared-data", default=str(Path(__file__).resolve().parent.parent.parent
                                                 / "shared" / "data"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--epsilon", type=float, nargs="+", default=[1e-3])
    p.add_argument("--one-slack", action="store_true", help="also run -m 1-slack")
    a = p.parse_args(argv)
    modes = ("n-slack", "1-slack") if a.one_slack else ("n-slack",)
    table = bench_sequence_ewt(Data(a.shared_data), a.quick, tuple(a.epsilon), modes)
    print(table.text())


if __name__ == "__main__":
    main()
