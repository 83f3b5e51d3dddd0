"""Write an output file all at once or not at all.

    with atomic_output("model.txt") as f:
        f.write(...)

Writes go to a temporary file ``.NAME.tmp-XXXXXXXX`` in the target's directory (same file
system, so the final rename is atomic). On success the temporary file is flushed, fsynced and
renamed over the target with ``os.replace``; the directory is then fsynced (best effort). With
``durable=False`` the two fsyncs are skipped: the file still appears whole or not at all to every
other process, but a power cut soon after may lose it. That is the trade for outputs that are
cheap to make again (predictions), where the fsyncs were most of what writing them cost above
LIBLINEAR, which does not sync; models, resume states and checkpoints stay durable. On any
exception -- including KeyboardInterrupt and SystemExit -- the temporary file is removed and the
target is left exactly as it was: absent, or the old file untouched. A crash or Ctrl-C therefore
never leaves a half-written model.

Permissions are those ``open(path, "w")`` would give: an existing target keeps its mode, a new file
gets ``0o666 & ~umask`` (the temporary file's private 0o600 is not kept).

``path == "-"`` writes to standard output (``sys.stdout``, or ``sys.stdout.buffer`` in binary
mode), which is flushed but never closed; nothing can be rolled back there.
"""

import errno
import os
import stat
import sys

__all__ = ["atomic_output"]

_MODES = {"w": "w", "wt": "w", "tw": "w", "wb": "wb", "bw": "wb"}


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux /proc)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # not thread-safe, hence only the fallback
    os.umask(mask)
    return mask


def _target_mode(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _fsync_dir(directory: str) -> None:
    """Persist the rename itself; best effort (not every platform / file system allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _publish_no_clobber(tmp: str, path: str) -> None:
    try:
        os.link(tmp, path)  # atomic, and fails with FileExistsError rather than clobber
    except FileExistsError:
        raise FileExistsError(f"{path}: file exists (refusing to overwrite)") from None
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(path):
            raise FileExistsError(f"{path}: file exists (refusing to overwrite)") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _create_temporary(directory: str, name: str):
    """A new file ``.NAME.tmp-XXXXXXXX`` in `directory`, created exclusively, mode 0o600: what
    ``tempfile.mkstemp`` gives, without importing tempfile (with shutil and random, 4-6 ms of every
    command's start-up)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.tmp-{os.urandom(4).hex()}")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", os.path.join(directory, name))


class atomic_output:
    """Context manager yielding a file object whose contents appear at ``path`` only on success.

    mode     -- "w" (text, ``encoding``, "\\n" newlines) or "wb" (binary).
    force    -- when False, refuse to replace an existing file: FileExistsError is raised before
                anything is written, and again at the end if the file appeared meanwhile (the
                final step is then an atomic link, never a clobber).
    durable  -- when False, do not fsync the file or its directory (see the module's docstring).

    (A class, not a contextlib generator: predict's lean path writes through it, and contextlib
    with the collections it imports is 3-5 ms of that command's start.)
    """

    def __init__(self, path, mode: str = "w", *, force: bool = True, encoding: str = "utf-8",
                 durable: bool = True):
        self._args = path, mode, force, encoding
        self._durable = durable
        self._file = self._tmp = None

    def __enter__(self):
        path, mode, force, encoding = self._args
        if mode not in _MODES:
            raise ValueError(f"atomic_output: mode must be 'w' or 'wb', not {mode!r}")
        binary = _MODES[mode] == "wb"
        if isinstance(path, str) and path == "-":
            self._file = sys.stdout.buffer if binary else sys.stdout
            return self._file

        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not force and os.path.lexists(path):
            raise FileExistsError(f"{path}: file exists (refusing to overwrite)")
        try:
            kind = os.stat(path).st_mode
        except OSError:
            kind = None
        if kind is not None and not stat.S_ISREG(kind) and not stat.S_ISDIR(kind):
            # a device or a pipe (/dev/null, /dev/stdout, a FIFO): there is nothing to replace
            # atomically, and renaming over it would replace the device node itself (as root)
            self._file = open(path, _MODES[mode], **({} if binary else {"encoding": encoding}))
            return self._file
        directory, name = os.path.split(os.path.abspath(path))
        if not name:
            raise IsADirectoryError(f"{path}: not a file name")
        perms = _target_mode(path)

        try:
            fd, tmp = _create_temporary(directory, name)
        except OSError as e:   # name the file the user asked for, not our temporary name
            raise type(e)(e.errno, f"cannot write: {e.strerror}", path) from None
        try:
            if binary:
                f = os.fdopen(fd, "wb")
            else:
                f = os.fdopen(fd, "w", encoding=encoding, newline="\n")
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        self._file, self._tmp = f, tmp
        self._target = path, directory, perms
        return f

    def __exit__(self, kind, value, traceback):
        f, tmp = self._file, self._tmp
        if tmp is None:                     # standard output, a device or a pipe
            if f is sys.stdout or f is getattr(sys.stdout, "buffer", None):
                if kind is None:
                    f.flush()
            else:
                f.close()
            return False
        path, directory, perms = self._target
        force = self._args[2]
        try:
            try:
                if kind is None:
                    f.flush()
                    if self._durable:
                        os.fsync(f.fileno())
                    os.fchmod(f.fileno(), perms)
            finally:
                f.close()
            if kind is None:
                if force:
                    os.replace(tmp, path)
                else:
                    _publish_no_clobber(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
        if kind is not None:
            _remove(tmp)
            return False
        if self._durable:
            _fsync_dir(directory)
        return False


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass
