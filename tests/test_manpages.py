"""The committed man pages are what `make man` makes from the CLI now, and they are complete."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from svmtools import manpages

ROOT = Path(__file__).resolve().parent.parent
MAN = ROOT / "man"
SECTIONS = MAN / "sections"


def _source_date_epoch():
    """As `make` sets it: the environment's, else the Makefile's default."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return os.environ["SOURCE_DATE_EPOCH"]
    m = re.search(r"SOURCE_DATE_EPOCH\s*\?=\s*(\d+)", (ROOT / "Makefile").read_text())
    assert m, "the Makefile no longer sets SOURCE_DATE_EPOCH"
    return m.group(1)


@pytest.fixture(scope="module")
def pages():
    date = manpages._date({"SOURCE_DATE_EPOCH": _source_date_epoch()})
    return manpages.render_pages(SECTIONS, date=date)


def _commands():
    """(page name, click command, its context) for every group and command."""
    out = []
    for prog, spec in manpages.PROGRAMS:
        group = manpages._load(spec)
        gctx = click.Context(group, info_name=prog, **group.context_settings)
        out.append((prog, group, gctx))
        for name in group.list_commands(gctx):
            cmd = group.get_command(gctx, name)
            out.append((f"{prog}-{name}", cmd, click.Context(cmd, info_name=name, parent=gctx)))
    return out


def test_committed_pages_are_up_to_date(pages):
    committed = {p.name for p in MAN.glob("*.1")}
    assert committed == set(pages), (
        f"man/ holds {sorted(committed)} but the CLI has {sorted(pages)}: run `make man` "
        f"and commit man/")
    stale = [name for name, text in pages.items() if (MAN / name).read_text() != text]
    assert not stale, f"man/{', man/'.join(stale)} out of date with the CLI: run `make man`"


def test_the_expected_pages_exist(pages):
    assert {"svmtrain.1", "svmtrain-train.1", "svmtrain-predict.1", "svmtrain-verify-bound.1",
            "svmtools.1", "svmtools-check.1"} <= set(pages)


@pytest.mark.parametrize("page, cmd, ctx", _commands(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_option_is_documented(pages, page, cmd, ctx):
    text = pages[f"{page}.1"]
    options = text[text.index(".SH OPTIONS"):text.index(".SH", text.index(".SH OPTIONS") + 1)]
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Option):
            for opt in param.opts + param.secondary_opts:
                assert f"\\fB{manpages.escape(opt)}\\fR" in options, f"{opt} missing from {page}.1"
        else:
            assert manpages.escape(param.human_readable_name) in text


@pytest.mark.parametrize("name", [f"{page}.1" for page, _, _ in _commands()])
def test_every_page_has_its_sections(pages, name):
    text = pages[name]
    titles = re.findall(r"^\.SH (.+)$", text, re.M)
    for title in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES",
                  "SEE ALSO"):
        assert title in titles, f"{name}: no {title}"
    assert len(titles) == len(set(titles)), f"{name}: a section appears twice: {titles}"
    if name.startswith("svmtrain-"):
        assert "FILES" in titles


def test_date_is_source_date_epoch_and_nothing_else_varies():
    a = manpages.render_pages(SECTIONS, date=manpages._date({"SOURCE_DATE_EPOCH": "0"}))
    b = manpages.render_pages(SECTIONS, date=manpages._date({"SOURCE_DATE_EPOCH": "0"}))
    assert a == b
    assert '"1970-01-01"' in a["svmtrain.1"].splitlines()[2]
    with pytest.raises(manpages.ManPageError):
        manpages._date({"SOURCE_DATE_EPOCH": "yesterday"})


def test_escape():
    assert manpages.escape("--max-epochs") == "\\-\\-max\\-epochs"
    assert manpages.escape(".start") == "\\&.start"
    assert manpages.escape("'quote\nnext .not") == "\\&'quote\nnext .not"
    assert manpages.escape("a\\b") == "a\\eb"


def test_missing_or_unknown_sections_file_is_an_error(tmp_path):
    for f in SECTIONS.glob("*.roff"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "svmtrain-predict.roff").unlink()
    with pytest.raises(manpages.ManPageError, match="svmtrain-predict.roff: missing"):
        manpages.render_pages(tmp_path, date="2000-01-01")
    shutil.copy(SECTIONS / "svmtrain-predict.roff", tmp_path)
    (tmp_path / "svmtrain-fit.roff").write_text(".SH EXIT STATUS\n.SH EXAMPLES\n")
    with pytest.raises(manpages.ManPageError, match="no command has this page"):
        manpages.render_pages(tmp_path, date="2000-01-01")


def test_cli_writes_pages_and_removes_stale_ones(tmp_path):
    (tmp_path / "svmtrain-fit.1").write_text("old")
    (tmp_path / "other.1").write_text("not ours")
    env = dict(os.environ, SOURCE_DATE_EPOCH=_source_date_epoch())
    r = subprocess.run([sys.executable, "-m", "svmtools.manpages", str(tmp_path),
                        "--sections", str(SECTIONS)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "svmtrain-fit.1").exists() and (tmp_path / "other.1").exists()
    for page in MAN.glob("*.1"):
        assert (tmp_path / page.name).read_text() == page.read_text()
    r = subprocess.run([sys.executable, "-m", "svmtools.manpages", str(tmp_path / "x")],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "missing" in r.stderr


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_groff_reports_no_warnings():
    for page in sorted(MAN.glob("*.1")):
        r = subprocess.run(["groff", "-man", "-ww", "-z", str(page)], capture_output=True, text=True)
        assert r.returncode == 0 and not r.stderr, f"{page.name}: {r.stderr}"
