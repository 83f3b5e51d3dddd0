"""`svmtrain predict` for the common case without numpy or click: what a Makefile loop pays.

A process that imports numpy cannot start in less time than that import takes: about 0.08 s, where
LIBLINEAR's `predict` tags a9a's test file in 0.03 s. So the console script (svmtrain.__main__)
first offers a predict command line to `run` here. It takes it when the command is of the plain
form

    svmtrain predict [--scores] [--json] [-q|--quiet] TEST_FILE MODEL_FILE [OUTPUT]

with a TEST_FILE (a regular file or `-`, standard input), plain or gzip/bzip2/xz-compressed, of
at most LEAN_BYTES of text, and a binary, multiclass, regression or sequence linear model in
svmtrain's format as svmtrain writes it (the header's keys in their order, each value spelled as
the writer spells it, training controls included), or a binary model in LIBLINEAR's format as its
save_model writes it. The text is parsed by the reader's C parser and its rows are scored,
labelled and written as text where they lie (`_reader.predict_parsed`, `_reader.regress_parsed`;
a sequence file's, of at most LEAN_SEQUENCE_BYTES, once parsed whole: `_reader.tag_parsed`, whose
Viterbi is the oracles' own); the output, the metric line and --json's object are the bytes the
full path writes.

Anything else, and anything unexpected on the way (a model or data line the full path would
refuse, or read in a way of its own), is not judged here: `run` returns None, having written
nothing (the output goes to a temporary file, standard output's text is held until the end), and
the command runs through click and svmtrain.api, which accept it or say what is wrong. A model the
lean reader accepts is one the full reader reads to the same weights (tests/test_lean_predict.py
checks this on every model kind it takes and on thousands of corrupted files). Standard input is
read whole (at most LEAN_BYTES) before its rows are parsed; when the full path must run after
all, the bytes read are put back in front of the rest of it (sys.stdin is replaced).
"""

import io
import math
import os
import stat
import sys

#: the most text (after decompression) predicted here: start-up is what a small file's predict
#: costs; above this the full path's progress bar and streaming to standard output matter more.
#: A compressed file is declined when its text turns out longer, before anything is written
LEAN_BYTES = 64 << 20
#: ... and when the predictions go to standard output, where they are held until the end
LEAN_STDOUT_BYTES = 8 << 20
#: ... and of a sequence file, whose rows are parsed whole before their sentences are tagged
#: (a sentence may run past any piece of the text): its rows and emission scores take several
#: times the text's bytes
LEAN_SEQUENCE_BYTES = 4 << 20
#: the most weights a model read here has (w's memory: 8 bytes each); its file is read a piece
#: of _MODEL_PIECE bytes at a time, its header within the first piece
LEAN_MODEL_WEIGHTS = 1 << 27
_MODEL_PIECE = 1 << 20
_READ = 1 << 20                 # input bytes per parse, as svmtrain.data.STREAM_BLOCK

_FLAGS = {"--scores": "scores", "--json": "json", "-q": "quiet", "--quiet": "quiet"}
_MODES = ("n-slack", "1-slack", "online-dual")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-")


class _NotHere(Exception):
    """The command is not one for the lean path: the full path runs it."""


def run(args):
    """Predict as `svmtrain predict ARGS` would; the exit status, or None when the full path must
    run the command (nothing has been written then, and what was read of standard input is put
    back for it)."""
    parsed = _command(args)
    if parsed is None:
        return None
    test, model_path, output, flags = parsed
    to_stdout = output in (None, "-")
    if flags["json"] and to_stdout:
        return None            # (the full path says why: --json prints on standard output)
    held = None                # standard input's bytes, once read
    try:
        model = read_model(model_path)
        if model is None or (not to_stdout and (output == "" or os.path.isdir(output))):
            return None
        limit = LEAN_STDOUT_BYTES if to_stdout else LEAN_BYTES
        if model.task == "sequence":
            limit = min(limit, LEAN_SEQUENCE_BYTES)
        if test == "-":
            held = _read_stdin(limit + 1)
            if len(held) > limit:
                raise _NotHere
            kind = _kind_of(held)
            raw = io.BytesIO(held)
        else:
            kind = _input_kind(test, limit)
            if kind is None:
                return None
            raw = open(test, "rb")
        with raw:
            stream = raw if kind == "plain" else _decompressor(kind, raw)
            if to_stdout:
                pieces = []
                metric = _predict(stream, kind == "plain", limit, model, flags["scores"],
                                  pieces.append)
                from svmtrain._stdout import say
                say("".join(pieces), 141)      # (the full path's status for a broken pipe)
            else:
                from svmtrain.atomic import atomic_output
                with atomic_output(output, "w", durable=False) as out:
                    metric = _predict(stream, kind == "plain", limit, model, flags["scores"],
                                      out.write)
    except Exception:
        # _NotHere, or what the full path names better (a file that cannot be read or written,
        # memory): nothing was written, and the full path says what is wrong or does it its way
        if held is not None:
            _put_back_stdin(held)
        return None
    except KeyboardInterrupt:
        print("svmtrain: interrupted; no output was written", file=sys.stderr)
        return 130
    if flags["json"]:
        print(metric.json())
    elif not flags["quiet"]:
        print(metric.line(), file=sys.stderr)
    return 0


def _read_stdin(most):
    """Standard input's bytes, at most `most` of them."""
    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    pieces, n = [], 0
    while n < most:
        piece = stdin.read(most - n)
        if not piece:
            break
        pieces.append(piece)
        n += len(piece)
    return b"".join(pieces)


class _PutBack(io.RawIOBase):
    """Standard input for the full path: the bytes the lean path read of it, then the rest."""

    def __init__(self, held, stdin):
        # (the replaced sys.stdin is kept: collected, it would close the stream under it)
        self._held, self._pos, self._stdin = held, 0, stdin
        self._rest = getattr(stdin, "buffer", stdin)

    def readable(self):
        return True

    def readinto(self, b):
        if self._pos < len(self._held):
            k = min(len(b), len(self._held) - self._pos)
            b[:k] = self._held[self._pos:self._pos + k]
            self._pos += k
            return k
        return self._rest.readinto(b)


def _put_back_stdin(held):
    sys.stdin = io.TextIOWrapper(io.BufferedReader(_PutBack(held, sys.stdin)))


def _command(args):
    """(test, model, output, flags) of a plain predict command line, else None."""
    flags, positional = {"scores": False, "json": False, "quiet": False}, []
    for a in args:
        if a in _FLAGS:
            flags[_FLAGS[a]] = True
        elif a.startswith("-") and a != "-":
            return None          # --workers, --help, --, ...: click's
        else:
            positional.append(a)
    if len(positional) not in (2, 3) or positional[1] == "-":
        return None
    # the environment can ask for Dask (predict's --scheduler reads it)
    if os.environ.get("DASK_SCHEDULER_ADDRESS"):
        return None
    test, model = positional[:2]
    output = positional[2] if len(positional) == 3 else None
    return test, model, output, flags


#: svmtrain.data._MAGIC: how the full path knows a compressed file
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))


def _kind_of(head):
    """"plain", "gzip", "bz2" or "xz": what the first bytes of a file say it is."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return "plain"


def _input_kind(path, limit):
    """_kind_of a regular file (a plain one of at most `limit` bytes), else None."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return None
    kind = _kind_of(head)
    return kind if kind != "plain" or st.st_size <= limit else None


# ---------------------------------------------------------------------------------------------
# The model: svmtrain's format as model.format_model writes a binary, multiclass, regression
# or sequence linear model


class LeanModel:
    """A linear model's weights (feature-major, as _reader.predict_parsed reads them) and what
    prediction needs of its header; K is 1 for binary and regression models."""

    __slots__ = ("task", "w", "n_cols", "K", "bias", "labels", "index_base")

    def __init__(self, task, w, n_cols, K, bias, labels, index_base):
        self.task, self.w, self.n_cols, self.K, self.bias = task, w, n_cols, K, bias
        self.labels, self.index_base = labels, index_base


def _float(tok, lo=None, strict=False):
    """A float spelled as the writer spells it (repr), finite, above `lo`; else _NotHere."""
    try:
        x = float(tok)
    except ValueError:
        raise _NotHere from None
    if repr(x) != tok or not math.isfinite(x) or (
            lo is not None and (x <= lo if strict else x < lo)):
        raise _NotHere
    return x


def _int(tok, lo=None):
    if not (tok.isascii() and tok.lstrip("-").isdigit()) or len(tok.lstrip("-")) > 18:
        raise _NotHere
    x = int(tok)
    if str(x) != tok or (lo is not None and x < lo):
        raise _NotHere
    return x


def label_text(x):
    """A label as the full path writes it (svmtrain.tasks.base.format_label)."""
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _model_label(tok):
    """A label spelled as the model writer spells it (svmtrain.model._fmt_label)."""
    try:
        x = float(tok)
    except ValueError:
        raise _NotHere from None
    whole = x.is_integer() and abs(x) < 2**53 and not (x == 0 and math.copysign(1.0, x) < 0)
    if not math.isfinite(x) or (str(int(x)) if whole else repr(x)) != tok:
        raise _NotHere
    return x


def _word(choices):
    def check(tok):
        if tok not in choices:
            raise _NotHere
        return tok
    return check


def _solver(tok):
    if not tok or not _NAME_CHARS.issuperset(tok):
        raise _NotHere
    return tok


def _bias(tok):
    return None if tok == "none" else _float(tok)


def _positive(tok):
    return _float(tok, 0.0, strict=True)


def _non_negative(tok):
    return _float(tok, 0.0)


def _count(tok):
    return _int(tok, 0)


def _pairs(key, value):
    """model._pairs_kind's `key:value ...` as its writer spells them (keys increasing)."""
    def check(rest):
        pairs = []
        for tok in rest.split(" "):
            k, sep, v = tok.partition(":")
            if not sep:
                raise _NotHere
            pairs.append((key(k), value(v)))
        if any(a[0] >= b[0] for a, b in zip(pairs, pairs[1:])):
            raise _NotHere
        return pairs
    return check


def _path(rest):
    """model._check_path's file name, as the reader joins its tokens (single spaces)."""
    if not rest or rest.split() != rest.split(" "):
        raise _NotHere
    return rest


_SPEC_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz,-")


def _spec(rest):
    """model._check_spec's feature list, [0-9a-z,-]+."""
    if not rest or not _SPEC_CHARS.issuperset(rest):
        raise _NotHere
    return rest


# model.HEADER_KEYS as model._keys_of lists them for a binary model, after `task`, each with the
# check of its kind; `labels` is read apart. A multiclass model adds the task's keys at the end.
_HEADER = (("mode", _word(_MODES)), ("solver", _solver), ("C", _positive), ("bias", _bias),
           ("features", _count), ("index_base", lambda tok: int(_word(("0", "1"))(tok))),
           ("labels", None), ("epsilon", _non_negative), ("dual", _float), ("primal", _float),
           ("relative_gap", _float), ("examples", _count), ("seed", _int), ("epochs", _count))
_LOSS_RESCALING = (("loss", _word(("zero-one", "hamming"))), ("rescaling", _word(("margin", "slack"))))
_TASK_HEADER = {"binary": (), "multiclass": _LOSS_RESCALING, "regression": (("p", _non_negative),),
                "sequence": _LOSS_RESCALING}
# the training controls (model.HEADER_KEYS' last keys, each written only when used): they change
# how w was trained, not how it predicts; values whose lines hold spaces are read whole (`rest`)
_CONTROLS = (("class_weights", _pairs(_model_label, _positive)),
             ("example_weights", _path),
             ("example_weights_crc32", _count),
             ("bias_reg", _positive),
             ("nonneg", _spec),
             ("reg_scale", _pairs(_count, _positive)),
             ("prior", _pairs(_count, _float)))
_SPACED = ("class_weights", "example_weights", "reg_scale", "prior")


def read_model(path):
    """The LeanModel of the file at `path`, or None when it is not of the form read here."""
    if _input_kind(path, float("inf")) != "plain":
        return None
    try:
        with open(path, "rb") as f:
            return _parse(f.read(_MODEL_PIECE), f.read)
    except (_NotHere, UnicodeError):
        return None


class _Lines:
    """The model file's header lines, each ASCII without '\\r', else _NotHere; `pos` is where
    the next one starts. `more(n)` reads on from the file (None: `data` is all of it)."""

    def __init__(self, data, more=None):
        if more is None and not data.endswith(b"\n"):
            raise _NotHere          # (truncated, says the full reader)
        self.data, self.pos, self.more = data, 0, more

    def __call__(self):
        j = self.data.find(b"\n", self.pos)
        if j < 0:
            raise _NotHere
        text = self.data[self.pos:j].decode("ascii")
        if "\r" in text:
            raise _NotHere
        self.pos = j + 1
        return text


def _weights(line, size, n_lines, sparse, rows, after):
    """The weights body from line.pos on (model._Source.weights_body's fast path, the same C
    parser), a piece of the file at a time, and then exactly `after`, the rest of the file;
    else _NotHere."""
    from svmtrain._reader import weight_lines, zeros
    data, pos, more = line.data, line.pos, line.more
    eof = more is None
    w = zeros(size)
    done, at = 0, -1
    while True:
        k, pos, at, stopped = weight_lines(data, pos, eof, n_lines - done, sparse, w, at, rows)
        done += k
        if stopped or done == n_lines or eof:
            break
        piece = more(_MODEL_PIECE)
        data, pos, eof = data[pos:] + piece, 0, not piece
    if done != n_lines:
        raise _NotHere
    rest = data[pos:]
    while not eof and len(rest) <= len(after):
        piece = more(len(after) + 1 - len(rest))
        eof = not piece
        rest += piece
    if rest != after or not data.endswith(b"\n") and not rest:
        raise _NotHere              # (the full reader: truncated, or more after the weights)
    return w


def _parse(data, more=None):
    """The LeanModel of a model file's bytes: `data` all of them, or its first piece and `more`
    the file's read."""
    line = _Lines(data, more)
    first = line()
    if first.startswith("solver_type "):
        return _parse_liblinear(line, first)
    if first != "svmtrain_model 1":
        raise _NotHere
    task_line = line().split(" ")
    if len(task_line) != 2 or task_line[0] != "task" or task_line[1] not in _TASK_HEADER:
        raise _NotHere
    task = task_line[1]
    values = {}
    text = line()
    for key, check in _HEADER + _TASK_HEADER[task] + _CONTROLS:
        if key == "labels" and task == "regression":
            continue
        name, _, rest = text.partition(" ")
        if name != key:
            if any(key == k for k, _ in _CONTROLS):
                continue               # (each control is written only when used)
            raise _NotHere             # another key here, or another order
        if key == "labels":
            values[key] = [_model_label(t) for t in rest.split(" ")]
        elif key in _SPACED:
            values[key] = check(rest)
        elif " " in rest:
            raise _NotHere
        else:
            values[key] = check(rest)
        text = line()
    labels = values.get("labels", [])
    K = len(labels) if task in ("multiclass", "sequence") else 1
    if task != "regression" and ((len(labels) != 2 if task == "binary" else
                                  K < (1 if task == "sequence" else 2))
                                 or len(set(labels)) != len(labels)):
        raise _NotHere
    n_cols, bias = values["features"], values["bias"]
    width = n_cols + (bias is not None)
    # a sequence model's K emission blocks are followed by its (K + 1) x K transitions
    size = width * K + ((K + 1) * K if task == "sequence" else 0)
    spec = text.split(" ")
    if len(spec) != 3 or spec[0] != "weights" or spec[1] not in ("dense", "sparse"):
        raise _NotHere
    if size > LEAN_MODEL_WEIGHTS:
        raise _NotHere      # (w's memory: the full path's to judge)
    if "prior" in values and values["prior"][-1][0] >= size:
        raise _NotHere      # (the full reader: an index past the weights)
    sparse = spec[1] == "sparse"
    if sparse:
        n_lines = _int(spec[2], 0)
        if n_lines > size:
            raise _NotHere
    else:
        n_lines = size
        if spec[2] != (f"{K}x{width}" if task == "multiclass" else str(size)):
            raise _NotHere
    # (multiclass weights transposed to feature-major as they are read; a sequence model's are
    # tagged in the file's layout, _reader.tag_parsed)
    w = _weights(line, size, n_lines, sparse, K if task == "multiclass" else 1, b"end\n")
    return LeanModel(task, w, n_cols, K, bias, labels, values["index_base"])


# model._parse_liblinear's binary models as LIBLINEAR's save_model writes them: its keys in its
# order, numbers as its printf formats spell them (%d, %.17g), one weight a line
_LIBLINEAR_BINARY = ("L2R_LR", "L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVC", "L2R_L1LOSS_SVC_DUAL",
                     "L1R_L2LOSS_SVC", "L1R_LR", "L2R_LR_DUAL")


def _liblinear_value(line, key):
    name, _, value = line().partition(" ")
    if name != key:
        raise _NotHere
    return value


def _parse_liblinear(line, first):
    if first.partition(" ")[2] not in _LIBLINEAR_BINARY or _liblinear_value(line, "nr_class") != "2":
        raise _NotHere
    labels = [float(_int(t)) for t in _liblinear_value(line, "label").split(" ")]
    n_cols = _count(_liblinear_value(line, "nr_feature"))
    tok = _liblinear_value(line, "bias")
    try:
        b = float(tok)
    except ValueError:
        raise _NotHere from None
    if not math.isfinite(b) or "%.17g" % b != tok or line() != "w":
        raise _NotHere
    if len(labels) != 2 or labels[0] == labels[1]:
        raise _NotHere
    bias = None if b < 0 else b           # LIBLINEAR: a bias below 0 is none
    size = n_cols + (bias is not None)
    if size > LEAN_MODEL_WEIGHTS:
        raise _NotHere
    w = _weights(line, size, size, False, 1, b"")
    return LeanModel("binary", w, n_cols, 1, bias, labels, 1)


# ---------------------------------------------------------------------------------------------
# The data: svmtrain.data's reading loop for a plain file, the rows scored as each piece is parsed


def _json_float(x):
    """A float as json.dumps writes it (repr; NaN and Infinity as JavaScript spells them)."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


class _Accuracy:
    """BinaryMetric's, AccuracyMetric's and TokenAccuracy's figures (svmtrain.tasks.binary,
    .multiclass, .sequence), from the counts _reader.predict_parsed (tag_parsed) returns."""

    def __init__(self, binary, name="Accuracy"):
        self.binary, self.name = binary, name
        self.correct = self.total = self.first_predicted = self.first_true = self.first_both = 0

    def add(self, parsed, n_rows):
        _, correct, first_predicted, first_true, first_both = parsed
        self.total += n_rows
        self.correct += correct
        self.first_predicted += first_predicted
        self.first_true += first_true
        self.first_both += first_both

    def line(self):
        accuracy = self.correct / self.total if self.total else 0.0
        return "%s = %g%% (%d/%d)" % (self.name, 100.0 * accuracy, self.correct, self.total)

    def json(self):
        """json.dumps of the metric's summary(), whose floats and ints print as repr."""
        accuracy = self.correct / self.total if self.total else 0.0
        text = '{"accuracy": %r, "correct": %r, "total": %r' % (accuracy, self.correct, self.total)
        if self.binary:
            tp = self.first_both
            fp, fn = self.first_predicted - tp, self.first_true - tp
            precision = tp / (tp + fp) if tp + fp else 0.0
            recall = tp / (tp + fn) if tp + fn else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            text += ', "precision": %r, "recall": %r, "f1": %r' % (precision, recall, f1)
        return text + "}"


class _Regression:
    """RegressionMetric's figures (svmtrain.tasks.regression), from the same RegressionSums."""

    def __init__(self):
        from svmtrain._reader import RegressionSums
        self.sums = RegressionSums()

    def summary(self):
        return self.sums.figures()

    def line(self):
        return ("Mean squared error = %g (regression)\nMean absolute error = %g (regression)\n"
                "Squared correlation coefficient = %g (regression)" % self.summary())

    def json(self):
        return '{"mse": %s, "mae": %s, "squared_correlation": %s, "total": %d}' % (
            *map(_json_float, self.summary()), self.sums.n)


def _predict(f, plain, limit, model, scores, write):
    """Write the predictions of the rows of the text stream f (a plain file or a decompressor);
    the metric (_Accuracy or _Regression)."""
    from svmtrain import _reader
    regression, sequence = model.task == "regression", model.task == "sequence"
    metric = (_Regression() if regression else _Accuracy(False, "Token accuracy") if sequence
              else _Accuracy(model.task == "binary"))
    texts = [label_text(x).encode("ascii") for x in model.labels]
    labels = model.labels
    bias = 0.0 if model.bias is None else model.bias
    parser = _reader.Parser(model.index_base == 0, 1)
    for rows in parsed(f, plain, parser, limit):
        if regression:
            write(_reader.regress_parsed(parser, model.w, model.n_cols, bias,
                                         model.bias is not None, metric.sums))
        elif not sequence:                   # (a sequence file's rows: tagged once all parsed)
            done = _reader.predict_parsed(parser, model.w, model.n_cols, model.K, bias,
                                          model.bias is not None, labels, texts, scores)
            metric.add(done, rows)
            write(done[0])
    if sequence:
        rows = parser.n_rows
        tagged = _reader.tag_parsed(parser, model.w, model.n_cols, model.K, bias,
                                    model.bias is not None, labels, texts, scores)
        if tagged is None:
            raise _NotHere                   # (the full path names the line)
        metric.add((tagged[0], tagged[1], 0, 0, 0), rows)
        write(tagged[0])
    return metric


def parsed(f, plain, parser, limit):
    """Parse the text stream f (a plain file or a decompressor) with `parser`, _READ bytes at a
    time; after each piece, yield the parser's rows (the caller may take them). _NotHere on a
    line the reader refuses (the full path names it) and past `limit` bytes of text."""
    size = _READ
    if plain:
        try:
            size = min(_READ, os.fstat(f.fileno()).st_size + 1)
        except (OSError, AttributeError, io.UnsupportedOperation):
            pass        # (standard input's bytes: a BytesIO)
    buf = bytearray(size)
    n, eof, text_bytes = 0, False, 0
    while True:
        view = memoryview(buf)
        while n < len(buf) and not eof:
            k = f.readinto(view[n:])
            eof = k == 0
            n += k
            text_bytes += k
        if text_bytes > limit:
            raise _NotHere                   # (a compressed file's text: the full path's)
        consumed, _, err = parser.parse(view[:n], eof)
        view.release()
        if err:
            raise _NotHere                   # the full path names the line
        yield parser.n_rows
        if consumed:
            buf[: n - consumed] = buf[consumed:n]
            n -= consumed
        elif eof:
            break
        else:
            buf.extend(bytes(len(buf)))      # one line longer than the buffer
        if eof and n == 0:
            break


def _decompressor(kind, raw):
    """svmtrain.data._decompressor's stream over `raw`, on the same defaults, so that both paths
    read the same text."""
    if kind == "gzip":
        import gzip
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bz2":
        import bz2
        return bz2.BZ2File(raw, mode="rb")
    import lzma
    return lzma.LZMAFile(raw, mode="rb")
