"""The documentation's shell examples, run and checked against what the pages show.

Convention, for README.md and every page under docs/ (pages written later follow it too):

* Only fenced blocks whose info string is ``console`` are run. Other fences (``sh``, ``text``,
  ``python``, ...) are shown, never run: use them for the contents of files and for commands
  that need what a test machine lacks (a SLURM cluster, a file of gigabytes), and say so in the
  text around them.
* In a ``console`` block a line starting with ``$ `` is a command. A command line ending with a
  backslash continues on the next line, which is taken as it is. The lines after a command, up
  to the next ``$ `` line or the end of the block, are its expected output: standard output and
  standard error together, in the order the program writes them.
* An expected output ending with a line ``[exit N]`` expects exit status N; otherwise 0.
* Matching, line by line, after runs of blanks are made one space and the ends stripped:
  - a line that is exactly ``...`` matches any number of lines, none included;
  - ``...`` inside a line matches any text on that line;
  - a number matches a number within a relative 1e-3 or, for a decimal fraction, one unit in
    its last printed digit, whichever is larger, so that figures printed to a few digits survive
    the last bit of rounding; an integer (a count) matches only itself;
  - a number followed by `` s`` or `` ms`` is a timing and matches any number;
  - numbers are only taken where they stand alone: the digits in ``a9a`` or ``10x16`` are text.
  An empty expected output means the command prints nothing.
* The commands of one page run in order, each in a fresh ``bash -c`` (a ``cd`` or a variable does
  not carry over), in one temporary directory that holds a copy of ``data/``, ``slurm/`` and the ``Makefile``: a
  page's commands run as from the top of the source tree, and the files one writes are there
  for the next. The built ``svmtrain`` and ``svmtools`` (beside the Python running the tests)
  come first on ``PATH``; ``LC_ALL=C``, ``PYTHONUNBUFFERED=1`` (so that standard output and
  standard error interleave as on a terminal) and ``COLUMNS=80``.

To write a page's expected output, run its commands as the test does and paste what they print:
``.venv/bin/python tests/test_docs.py docs/PAGE.md`` prints every console example of the page
with its actual output and status in the block syntax above (then put ``...`` where the output
is not the point).

Besides the examples, the pages' relative links must point at files that exist, and the README
keeps to what a new user needs: at most 300 lines, no development history.
"""
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("data", "slurm", "Makefile")
COMMAND_TIMEOUT = 300


def pages():
    found = [ROOT / "README.md"]
    docs = ROOT / "docs"
    if docs.is_dir():
        found += sorted(docs.rglob("*.md"))
    return found


# --- parsing the pages ---------------------------------------------------------------------

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


def fenced_blocks(text):
    """(info string, first line number, lines) of every fenced block, in page order."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3)
        body = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        blocks.append((info, i + 2, body))
        i = j + 1
    return blocks


class Example:
    def __init__(self, command, expected, status, line):
        self.command, self.expected, self.status, self.line = command, expected, status, line


EXIT = re.compile(r"^\[exit (\d+)\]$")


def console_examples(text):
    """The commands of a page's console blocks with their expected output and status."""
    examples = []
    for info, first, body in fenced_blocks(text):
        if info != "console":
            continue
        i = 0
        while i < len(body):
            if not body[i].startswith("$ "):
                raise ValueError(f"line {first + i}: a console block's output follows a '$ ' command")
            line_no = first + i
            command = body[i][2:]
            while command.endswith("\\") and i + 1 < len(body):
                i += 1
                command += "\n" + body[i]
            i += 1
            expected = []
            while i < len(body) and not body[i].startswith("$ "):
                expected.append(body[i])
                i += 1
            while expected and not expected[-1].strip():
                expected.pop()
            status = 0
            if expected and EXIT.match(expected[-1].strip()):
                status = int(EXIT.match(expected.pop().strip()).group(1))
            examples.append(Example(command, expected, status, line_no))
    return examples


# --- matching output -----------------------------------------------------------------------

NUMBER = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
TOKEN = re.compile(r"(\.\.\.)|(?<![\w.])(" + NUMBER + r")(?![\w])(\s*m?s\b)?")


def normalise(line):
    return " ".join(line.split())


def last_digit_unit(number):
    mantissa, _, exponent = number.lower().partition("e")
    if "." not in mantissa:
        return 0.0
    decimals = len(mantissa.split(".")[1])
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_agree(expected, actual):
    e, a = float(expected), float(actual)
    if e == a:
        return True
    if re.fullmatch(r"[-+]?\d+", expected):
        return e == a
    return abs(a - e) <= max(1e-3 * abs(e), last_digit_unit(expected)) * (1 + 1e-9)


@functools.lru_cache(maxsize=None)
def line_pattern(expected):
    """A regex for an expected line and, per group, the expected number (None: any number)."""
    parts, numbers, end = [], [], 0

    def literal(text):
        return r"\s+".join(re.escape(word) for word in text.split(" "))

    for m in TOKEN.finditer(expected):
        parts.append(literal(expected[end:m.start()]))
        if m.group(1):
            parts.append(".*?")
        else:
            parts.append("(" + NUMBER + ")")
            numbers.append(None if m.group(3) else m.group(2))
            if m.group(3):
                parts.append(literal(m.group(3)))
        end = m.end()
    parts.append(literal(expected[end:]))
    return re.compile("".join(parts)), numbers


def line_matches(expected, actual):
    pattern, numbers = line_pattern(normalise(expected))
    m = pattern.fullmatch(normalise(actual))
    if not m:
        return False
    return all(e is None or numbers_agree(e, a) for e, a in zip(numbers, m.groups()))


def output_matches(expected, actual):
    """Expected lines (with `...` lines) against actual lines."""
    actual = list(actual)
    while actual and not actual[-1].strip():
        actual.pop()

    @functools.lru_cache(maxsize=None)
    def match(i, j):
        if i == len(expected):
            return j == len(actual)
        if expected[i].strip() == "...":
            return match(i + 1, j) or (j < len(actual) and match(i, j + 1))
        return j < len(actual) and line_matches(expected[i], actual[j]) and match(i + 1, j + 1)

    return match(0, 0)


# --- running -------------------------------------------------------------------------------


def copy_tree_for_examples(where):
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, where / name)
        elif (ROOT / name).is_file():
            shutil.copy(ROOT / name, where / name)


def run_example(example, where, env):
    """(exit status, output lines) of one example run in the directory where."""
    run = subprocess.run(
        ["bash", "-c", example.command], cwd=where, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT,
    )
    return run.returncode, run.stdout.decode("utf-8", "replace").splitlines()


def environment():
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.update(LC_ALL="C", PYTHONUNBUFFERED="1", COLUMNS="80")
    # not a cluster of the caller's, nor the make that runs the tests (a sub-make prints more)
    for name in ("DASK_SCHEDULER_ADDRESS", "MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"):
        env.pop(name, None)
    return env


def page_id(path):
    return str(path.relative_to(ROOT))


def pages_with_examples():
    return [page for page in pages() if "```console" in page.read_text(encoding="utf-8")]


@pytest.mark.parametrize("page", pages_with_examples(), ids=page_id)
def test_page_examples_run_and_print_what_the_page_shows(page, tmp_path):
    examples = console_examples(page.read_text(encoding="utf-8"))
    assert examples, f"{page_id(page)}: a console block without a '$ ' command"
    if shutil.which("svmtrain", path=environment()["PATH"]) is None:
        pytest.fail("svmtrain is not built: run `make build`")
    copy_tree_for_examples(tmp_path)
    env = environment()
    for ex in examples:
        where = f"{page_id(page)}:{ex.line}: $ {ex.command}"
        status, output = run_example(ex, tmp_path, env)
        shown = "\n".join(output[:60])
        assert status == ex.status, (
            f"{where}\nexit status {status}, the page expects {ex.status}\n{shown}")
        assert output_matches(ex.expected, output), (
            f"{where}\nthe page shows:\n" + "\n".join(ex.expected) + f"\nthe command printed:\n{shown}")


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_relative_links_point_at_files_that_exist(page):
    text = page.read_text(encoding="utf-8")
    outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
    outside_code = re.sub(r"`[^`\n]*`", "", outside_code)
    broken = []
    for target in LINK.findall(outside_code):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page_id(page)}: links to missing files: {broken}"


def test_readme_is_short_and_has_no_development_history():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    history = re.findall(r"\bstops?[- ]\d+\b|\bthis stop\b", text, flags=re.I)
    assert not history, history


def test_user_guide_has_no_development_history():
    for page in pages():
        if "design" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        assert not re.findall(r"\bstops?[- ]\d+\b|\bthis stop\b", text, flags=re.I), page_id(page)


# --- the matcher itself --------------------------------------------------------------------


def test_numbers_match_within_the_printed_precision_and_no_further():
    assert line_matches("relative gap 0.000992", "relative gap 0.000993")
    assert not line_matches("relative gap 0.000992", "relative gap 0.000995")
    assert line_matches("primal 702.8142456", "primal 702.81")
    assert not line_matches("primal 702.8142456", "primal 703.9")
    assert line_matches("154 epochs", "154 epochs")
    assert not line_matches("154 epochs", "155 epochs")
    assert line_matches("gap 1.5e-3", "gap 1.501e-3")
    assert not line_matches("gap 1.5e-3", "gap 1.7e-3")


def test_timings_text_and_ellipses():
    assert line_matches("features: 154 epochs, 0.0302 s, primal 1", "features: 154 epochs, 12.5 s, primal 1")
    assert not line_matches("data/a9a.model", "data/a8a.model")
    assert line_matches("svmtrain: binary ... relative gap 0.001", "svmtrain: binary n-slack, 3 s, relative gap 0.001")
    assert line_matches("primal       1.5", "primal 1.5")
    assert not line_matches("Accuracy = 81.7% (817/1000)", "Accuracy = 81.7% (817/1001)")
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "...", "d"], ["a", "d"])
    assert not output_matches(["a", "...", "d"], ["a", "b", "c"])
    assert not output_matches(["a"], ["a", "b"])
    assert output_matches([], [])
    assert not output_matches([], ["something"])


def test_console_blocks_parse_into_commands_outputs_and_statuses():
    page = "\n".join([
        "text", "```console", "$ echo a \\", "  b", "a b", "$ false", "[exit 1]", "```",
        "```sh", "$ not run", "```",
    ])
    examples = console_examples(page)
    assert [(e.command, e.expected, e.status) for e in examples] == [
        ("echo a \\\n  b", ["a b"], 0), ("false", [], 1)]


def print_transcript(page):
    """Run a page's console examples and print them with their actual output, in block syntax."""
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        copy_tree_for_examples(Path(where))
        env = environment()
        for ex in console_examples(page.read_text(encoding="utf-8")):
            status, output = run_example(ex, Path(where), env)
            agrees = status == ex.status and output_matches(ex.expected, output)
            print(f"<!-- line {ex.line}: {'as the page shows' if agrees else 'DIFFERS from the page'} -->")
            print("$ " + ex.command)
            if output:
                print("\n".join(output))
            if status:
                print(f"[exit {status}]")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["README.md"]:
        print_transcript(Path(name).resolve())
