"""Progress bars (tqdm, imported only when a bar is shown) over the bytes a pass reads."""

import contextlib
import os
import sys


@contextlib.contextmanager
def byte_bar(path, show, desc, keep=None):
    """A tqdm bar over the bytes read while the block runs, when `show`; yields the reader's
    `progress` callback, or None when no bar is shown. `keep`, a list, receives the bar (or None)
    so that a caller can post figures to it."""
    if not show:
        if keep is not None:
            keep.append(None)
        yield None
        return
    from tqdm import tqdm
    total = None
    if isinstance(path, str) and path != "-" and not path.startswith("<"):
        with contextlib.suppress(OSError):
            with open(path, "rb") as f:
                compressed = f.read(6)[:2] in (b"\x1f\x8b", b"BZ", b"\xfd7")
            total = None if compressed else os.path.getsize(path)
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, leave=False, file=sys.stderr) as bar:
        if keep is not None:
            keep.append(bar)
        yield bar.update


def epoch_bar(show, total, desc="training"):
    """A tqdm bar over epochs, or None."""
    if not show:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="epoch", desc=desc, leave=False, file=sys.stderr)
