"""atomic_output: the target appears whole on success, and nothing changes on failure."""
import io
import os
import stat
import sys

import pytest

from svmtrain.atomic import atomic_output


def umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_success_creates_file_with_open_permissions(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_output(path) as f:
        f.write("hello\n")
        assert not path.exists()  # nothing visible until the block ends
        assert [p.name.startswith(".out.txt.tmp-") for p in tmp_path.iterdir()] == [True]
    assert path.read_text() == "hello\n"
    assert os.listdir(tmp_path) == ["out.txt"]
    assert mode_of(path) == 0o666 & ~umask()


def test_success_replaces_existing_file_keeping_its_mode(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    with atomic_output(str(path), "wb") as f:
        f.write(b"new\x00bytes")
    assert path.read_bytes() == b"new\x00bytes"
    assert mode_of(path) == 0o640
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt(), SystemExit(3)])
def test_failure_leaves_nothing(tmp_path, exc):
    path = tmp_path / "out.txt"
    with pytest.raises(type(exc)):
        with atomic_output(path) as f:
            f.write("partial")
            raise exc
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt()])
def test_failure_keeps_existing_file_untouched(tmp_path, exc):
    path = tmp_path / "out.txt"
    path.write_text("precious")
    before = os.stat(path)
    with pytest.raises(type(exc)):
        with atomic_output(path) as f:
            f.write("partial")
            raise exc
    assert path.read_text() == "precious"
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert os.listdir(tmp_path) == ["out.txt"]


def test_failed_rename_removes_temp_file(tmp_path):
    target = tmp_path / "adir"
    target.mkdir()
    (target / "inside").write_text("x")
    with pytest.raises(OSError):
        with atomic_output(target) as f:
            f.write("data")
    assert sorted(os.listdir(tmp_path)) == ["adir"]
    assert os.listdir(target) == ["inside"]


def test_no_force_refuses_existing_file(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_output(path, force=False) as f:
        f.write("first")
    with pytest.raises(FileExistsError):
        with atomic_output(path, force=False) as f:
            f.write("second")
    assert path.read_text() == "first"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_no_force_refuses_file_that_appears_meanwhile(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(FileExistsError):
        with atomic_output(path, force=False) as f:
            f.write("mine")
            path.write_text("theirs")
    assert path.read_text() == "theirs"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_missing_directory_raises_and_creates_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_output(tmp_path / "no" / "such" / "file"):
            pass
    assert os.listdir(tmp_path) == []


def test_bad_mode():
    with pytest.raises(ValueError):
        with atomic_output("x", "a"):
            pass


@pytest.mark.parametrize("binary", [False, True])
def test_dash_writes_to_stdout_without_closing_it(monkeypatch, binary):
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stream)
    with atomic_output("-", "wb" if binary else "w") as f:
        f.write(b"bytes\n" if binary else "text\n")
    assert not stream.closed
    stream.flush()
    assert raw.getvalue() == (b"bytes\n" if binary else b"text\n")


def test_device_target_is_written_through_not_replaced(tmp_path):
    """/dev/null (or /dev/stdout, a FIFO) as the output: written to, never renamed over (as root,
    the rename replaced the device node with a regular file)."""
    before = os.stat("/dev/null")
    with atomic_output("/dev/null") as f:
        f.write("model\n")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_temporary_name_taken_by_another_file_is_skipped(tmp_path, monkeypatch):
    # another writer's temporary file (or anything) at the first name drawn is never opened
    draws = iter([b"\x00" * 4, b"\x00" * 4, b"\x00\x00\x00\x01"])
    monkeypatch.setattr("svmtrain.atomic.os.urandom", lambda n: next(draws))
    taken = tmp_path / ".out.txt.tmp-00000000"
    taken.write_text("someone else's")
    path = tmp_path / "out.txt"
    with atomic_output(path) as f:
        f.write("mine\n")
        assert (tmp_path / ".out.txt.tmp-00000001").exists()
    assert path.read_text() == "mine\n"
    assert taken.read_text() == "someone else's"


def test_no_free_temporary_name_raises_naming_the_target(tmp_path, monkeypatch):
    monkeypatch.setattr("svmtrain.atomic.os.urandom", lambda n: b"\x00" * 4)
    (tmp_path / ".out.txt.tmp-00000000").write_text("")
    with pytest.raises(FileExistsError, match="out.txt"):
        with atomic_output(tmp_path / "out.txt") as f:
            f.write("x")
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("durable", [True, False])
def test_durable_output_is_synced_and_the_rest_only_renamed(tmp_path, monkeypatch, durable):
    # models and states are fsynced (file, then directory); predictions (durable=False) are not,
    # and still appear whole or not at all
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr("svmtrain.atomic.os.fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    path = tmp_path / "out.txt"
    with atomic_output(path, durable=durable) as f:
        f.write("whole\n")
        assert not path.exists()
    assert path.read_text() == "whole\n" and os.listdir(tmp_path) == ["out.txt"]
    assert len(synced) == (2 if durable else 0)
    with pytest.raises(RuntimeError):
        with atomic_output(path, durable=durable) as f:
            f.write("half")
            raise RuntimeError
    assert path.read_text() == "whole\n" and os.listdir(tmp_path) == ["out.txt"]
