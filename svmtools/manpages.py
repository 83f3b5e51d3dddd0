"""Man pages from the click CLI, completed by hand-written sections (click-man, plus what it omits).

    python -m svmtools.manpages OUTDIR [--sections DIR]

For each group (``svmtrain``, ``svmtools``) and each of its commands, one roff page ``GROUP.1`` /
``GROUP-COMMAND.1`` is written to OUTDIR:

- generated from click's introspection: NAME, SYNOPSIS, DESCRIPTION (the docstring), OPTIONS (every
  option with its metavar, and its help with click's ``[default: ...]`` and range, as ``--help``
  prints them), and for a group the list of COMMANDS;
- then, verbatim, the hand-written roff of ``DIR/PAGE.roff`` (default ``OUTDIR/sections``): EXIT
  STATUS, FILES, EXAMPLES, SEE ALSO. Every page must have one, with at least EXIT STATUS and
  EXAMPLES, and every sections file must belong to a page: a new or renamed command fails here
  until its sections are written. A line ``.so _NAME.roff`` includes a shared part (the input and
  model formats) from the same directory; files named ``_*.roff`` are only such parts.

The output is reproducible: the date is SOURCE_DATE_EPOCH (UTC; the Makefile exports it; the
current date when unset), the version is the package's, and nothing else varies. Pages are written
only when all of them render; stale ``svmtrain*.1`` / ``svmtools*.1`` pages in OUTDIR are removed.
Exit status 0, or 2 with a message on standard error.
"""
from __future__ import annotations

import datetime
import inspect
import os
import re
import sys
from pathlib import Path

import click

#: The command-line programs documented: (name, "module:attribute" of the click group).
PROGRAMS = (("svmtrain", "svmtrain.cli:main"), ("svmtools", "svmtools.cli:main"))
#: Sections the hand-written files must contain, and the ones generated here (never hand-written).
REQUIRED_SECTIONS = ("EXIT STATUS", "EXAMPLES")
GENERATED_SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS")
MANUAL = "svmtrain manual"


class ManPageError(Exception):
    """A page cannot be made (a missing or malformed sections file, a bad SOURCE_DATE_EPOCH)."""


# ---------------------------------------------------------------------------------------------
# roff text


def escape(text: str) -> str:
    """Plain text as roff: backslashes and hyphen-minus escaped (so options and commands copy and
    paste as typed), and a leading '.' or "'" kept from being read as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^(?=[.'])", r"\\&", text, flags=re.M)


def _inline(text: str, args=()) -> str:
    """Docstring prose: escaped, `code` spans in bold, the command's ARGUMENT names in italics."""
    def prose(part):
        part = escape(part)
        if args:
            words = "|".join(re.escape(escape(a)) for a in sorted(args, key=len, reverse=True))
            part = re.sub(rf"(?<![\\w\\\\])({words})(?!\\w)", r"\\fI\1\\fR", part)
        return part

    parts = text.split("`")
    if len(parts) % 2 == 0:   # unbalanced backquote: leave it as text
        return prose(text)
    return "".join(prose(p) if k % 2 == 0 else f"\\fB{escape(p)}\\fR" for k, p in enumerate(parts))


def _paragraphs(doc: str, args=()) -> list:
    """Roff lines for a click docstring: paragraphs filled, a paragraph opened by click's \\b marker
    kept line for line, everything after \\f dropped (as click's --help does)."""
    doc = inspect.cleandoc(doc.split("\f", 1)[0])
    out = []
    for para in re.split(r"\n\s*\n", doc):
        if not para.strip():
            continue
        if out:
            out.append(".PP")
        lines = para.splitlines()
        if lines[0].strip() == "\b":
            out.append(".nf")
            out.extend(_inline(line, args) or "\\&" for line in lines[1:])
            out.append(".fi")
        else:
            out.append(_inline(" ".join(line.strip() for line in lines), args))
    return out


def _bold(text: str) -> str:
    return f"\\fB{escape(text)}\\fR"


def _italic(text: str) -> str:
    return f"\\fI{escape(text)}\\fR"


# ---------------------------------------------------------------------------------------------
# click introspection


def _metavar(param: click.Parameter, ctx: click.Context) -> str:
    try:
        return param.make_metavar(ctx)   # click >= 8.2
    except TypeError:
        return param.make_metavar()      # click 8.1


def _option_heading(opt: click.Option, ctx: click.Context) -> str:
    """`-t, --task [binary]` in roff, as --help spells it: names bold, metavar italic (none for
    flags)."""
    metavar = "" if opt.is_flag or opt.count else " " + _italic(_metavar(opt, ctx))

    heading = ", ".join(map(_bold, opt.opts))
    if opt.secondary_opts:
        heading += " / " + ", ".join(map(_bold, opt.secondary_opts))
    return heading + metavar


def _option_help(opt: click.Option, ctx: click.Context) -> str:
    """The help text with click's own [default: ...; range] suffix, exactly as --help shows it."""
    record = opt.get_help_record(ctx)
    text = record[1] if record else ""
    return re.sub(r"\s+", " ", text).strip()


def _options(cmd: click.Command, ctx: click.Context) -> list:
    """The options, under a sub-heading per group where the command groups them (svmtrain train:
    svmtrain.cli.help), each with its help sentence and then its longer `details`, which --help
    leaves out."""
    lines, group = [], None
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden:
            continue
        title = getattr(param, "group", None)
        if title is not None and title != group:
            lines += [".SS", escape(title if title.endswith("options") else f"{title} options")]
            group = title
        lines += [".TP", _option_heading(param, ctx)]
        help_text = _option_help(param, ctx)
        details = getattr(param, "details", None)
        if details:
            help_text = f"{help_text} {details}".strip()
        lines.append(_inline(help_text) if help_text else "\\&")
    return lines


def _synopsis(cmd: click.Command, ctx: click.Context, prog: str) -> list:
    pieces = []
    for piece in cmd.collect_usage_pieces(ctx):
        # click spells them OPTIONS, [OPTIONS], ARG, [ARG], ARG..., COMMAND [ARGS]...
        pieces.append(re.sub(r"[A-Z][A-Z0-9_]*", lambda m: f"\\fI{m.group(0)}\\fR",
                             escape(piece)))
    return [".SY " + escape(prog).replace(" ", "\\ "), " ".join(pieces), ".YS"]


def _argument_names(cmd: click.Command, ctx: click.Context) -> tuple:
    """The metavars of the command's arguments (TRAIN_FILE, MODEL_FILE...), as usage shows them."""
    names = []
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Argument):
            names.append(_metavar(param, ctx).strip("[]").rstrip("."))
    return tuple(n for n in names if n)


def _name_line(cmd: click.Command, page: str) -> str:
    short = cmd.get_short_help_str(limit=200).rstrip(".")
    if short[:1].isupper() and short[1:2].islower():
        short = short[0].lower() + short[1:]
    return f"{escape(page)} \\- {_inline(short)}"


def _load(spec: str) -> click.Group:
    module, _, attr = spec.partition(":")
    __import__(module)
    return getattr(sys.modules[module], attr)


def _date(environ=os.environ) -> str:
    raw = environ.get("SOURCE_DATE_EPOCH")
    if raw is None:
        when = datetime.datetime.now(datetime.timezone.utc)
    else:
        try:
            when = datetime.datetime.fromtimestamp(int(raw), datetime.timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise ManPageError(f"SOURCE_DATE_EPOCH={raw!r}: expected seconds since 1970 "
                               "(an integer)") from None
    return when.strftime("%Y-%m-%d")


# ---------------------------------------------------------------------------------------------
# Pages


def _th(page: str, date: str, version: str) -> str:
    return f'.TH "{escape(page.upper())}" "1" "{date}" "{escape(version)}" "{MANUAL}"'


def _section_titles(roff: str) -> list:
    return [m.group(1).strip().strip('"') for m in re.finditer(r"^\.SH[ \t]+(.*)$", roff, re.M)]


_SO_RE = re.compile(r"^\.so[ \t]+(\S+)[ \t]*$", re.M)


def _include(sections_dir: Path, path: Path, text: str) -> str:
    """Replace each `.so _NAME.roff` line by that shared file of `sections_dir` (one level)."""
    def insert(m):
        name = m.group(1)
        if "/" in name or not name.startswith("_"):
            raise ManPageError(f"{path}: .so {name}: only shared files of the sections "
                               "directory (_NAME.roff) can be included")
        try:
            shared = (sections_dir / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ManPageError(f"{path}: .so {name}: {getattr(e, 'strerror', None) or e}") from None
        if _SO_RE.search(shared):
            raise ManPageError(f"{sections_dir / name}: includes are one level deep")
        return shared.rstrip("\n")
    return _SO_RE.sub(insert, text)


def _hand_sections(sections_dir: Path, page: str) -> str:
    path = sections_dir / f"{page}.roff"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManPageError(f"{path}: missing; write the page's hand sections "
                           f"({', '.join(REQUIRED_SECTIONS)}, ...) there") from None
    except OSError as e:
        raise ManPageError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ManPageError(f"{path}: not UTF-8 text") from None
    text = _include(sections_dir, path, text)
    first = next((line for line in text.splitlines() if line.strip()
                  and not line.startswith(('.\\"', "'\\\""))), "")
    if not first.startswith(".SH"):
        raise ManPageError(f"{path}: must start with a .SH section heading, found {first[:40]!r}")
    titles = _section_titles(text)
    for title in titles:
        if title in GENERATED_SECTIONS:
            raise ManPageError(f"{path}: section {title} is generated from the CLI; remove it here")
    for title in REQUIRED_SECTIONS:
        if title not in titles:
            raise ManPageError(f"{path}: no {title} section")
    return text if text.endswith("\n") else text + "\n"


def _page(cmd, ctx, page, prog, date, version, hand, commands=()):
    lines = [
        f'.\\" {page}.1 -- generated by `python -m svmtools.manpages` (make man) from the CLI',
        f'.\\" and man/sections/{page}.roff; edit those, not this file.',
        _th(page, date, version),
        ".SH NAME",
        _name_line(cmd, page),
        ".SH SYNOPSIS",
        *_synopsis(cmd, ctx, prog),
        ".SH DESCRIPTION",
        *_paragraphs(cmd.help or "", _argument_names(cmd, ctx)),
        ".SH OPTIONS",
        *_options(cmd, ctx),
    ]
    if commands:
        lines.append(".SH COMMANDS")
        for name, sub in commands:
            lines += [".TP", f"{_bold(name)}", f"{_inline(sub.get_short_help_str(limit=200))}",
                      f"See \\fB{escape(prog)}\\-{escape(name)}\\fR(1)."]
    return "\n".join(lines) + "\n" + hand


def render_pages(sections_dir, *, date: str | None = None) -> dict:
    """{page file name: roff text} for every program and command; raises ManPageError."""
    from svmtrain import __version__

    sections_dir = Path(sections_dir)
    date = date if date is not None else _date()
    pages = {}
    for prog, spec in PROGRAMS:
        group = _load(spec)
        version = f"{prog} {__version__}"
        gctx = click.Context(group, info_name=prog, **group.context_settings)
        commands = [(name, group.get_command(gctx, name)) for name in group.list_commands(gctx)]
        commands = [(name, c) for name, c in commands if c is not None and not c.hidden]
        pages[f"{prog}.1"] = _page(group, gctx, prog, prog, date, version,
                                   _hand_sections(sections_dir, prog), commands)
        for name, cmd in commands:
            page = f"{prog}-{name}"
            ctx = click.Context(cmd, info_name=name, parent=gctx, **cmd.context_settings)
            pages[f"{page}.1"] = _page(cmd, ctx, page, f"{prog} {name}", date, version,
                                       _hand_sections(sections_dir, page))
    known = {p[:-2] for p in pages}
    for extra in sorted(sections_dir.glob("*.roff")):
        if extra.stem not in known and not extra.name.startswith("_"):
            raise ManPageError(f"{extra}: no command has this page (renamed or removed?)")
    return pages


def _write_if_changed(path: Path, text: str) -> Path:
    """Write `text` to `path` (atomically), unless the file holds it already: an unchanged file
    keeps its mtime."""
    from svmtrain.atomic import atomic_output

    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    with atomic_output(str(path), "w") as f:
        f.write(text)
    return path


def write_pages(outdir, sections_dir=None) -> list:
    """Render every page, then write them all to `outdir` and remove stale ones; the paths written."""
    outdir = Path(outdir)
    pages = render_pages(sections_dir if sections_dir is not None else outdir / "sections")
    outdir.mkdir(parents=True, exist_ok=True)
    written = [_write_if_changed(outdir / name, text) for name, text in pages.items()]
    progs = tuple(prog for prog, _ in PROGRAMS)
    for old in sorted(outdir.glob("*.1")):
        if old.name not in pages and old.name.startswith(progs):
            old.unlink()
    return written


#: the console script's `svmtrain --help` without click (svmtrain/__main__.py)
USAGE_MODULE = Path(__file__).resolve().parent.parent / "svmtrain" / "_usage.py"
#: click's help width in a terminal of 80 columns or more (min(columns, 80) - 2)
USAGE_WIDTH = 78


def usage_module_text() -> str:
    """svmtrain/_usage.py: `svmtrain --help` as click renders it in a terminal of 80 columns or
    more, for svmtrain.__main__.run to print without importing click."""
    import click.formatting
    from svmtrain.cli import main as group
    forced, click.formatting.FORCED_WIDTH = click.formatting.FORCED_WIDTH, USAGE_WIDTH
    try:
        ctx = click.Context(group, info_name="svmtrain", **group.context_settings)
        text = group.get_help(ctx) + "\n"
    finally:
        click.formatting.FORCED_WIDTH = forced
    return ('"""`svmtrain --help` as click prints it in a terminal of 80 columns or more (written by\n'
            '`make man`, svmtools.manpages, from the CLI; tests/test_startup.py checks it against\n'
            'click: edit the CLI, not this file)."""\n\n'
            f"HELP = {_literal(text)}\n")


def _literal(text: str) -> str:
    """`text` as a Python literal, a triple-quoted one line for line where that is exact."""
    if ("\\" in text or '"""' in text or text.endswith('"')
            or any(c != "\n" and not c.isprintable() for c in text)):
        return repr(text)
    return '"""\\\n' + text + '"""'


def write_usage(path=USAGE_MODULE) -> Path:
    """Write svmtrain/_usage.py when its text changed; its path."""
    return _write_if_changed(Path(path), usage_module_text())


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("outdir", type=click.Path(file_okay=False))
@click.option("--sections", "sections_dir", type=click.Path(file_okay=False, exists=True),
              default=None, help="Hand-written sections, PAGE.roff each (default: OUTDIR/sections).")
def main(outdir, sections_dir):
    """Write the man pages of svmtrain and svmtools to OUTDIR, and svmtrain's pre-rendered --help
    (svmtrain/_usage.py)."""
    try:
        for path in write_pages(outdir, sections_dir):
            click.echo(str(path))
        click.echo(str(write_usage()))
    except ManPageError as e:
        click.echo(f"svmtools.manpages: {e}", err=True)
        sys.exit(2)
    except OSError as e:
        click.echo(f"svmtools.manpages: {e.filename or outdir}: {e.strerror or e}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main(prog_name="python -m svmtools.manpages")
