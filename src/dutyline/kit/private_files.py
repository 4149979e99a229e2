"""Files only the server's own user may read: the data directory (0700), the SQLite files
and the generated secret key (0600).

They hold every account's data and the key that decrypts stored third-party secrets, so
another local user must not read them whatever the umask. SQLite creates its -wal and -shm
files with the mode of the database file, so creating that file 0600 first covers them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> None:
    """Create `path` (and missing parents) 0700; a directory that already exists is left as
    the operator made it."""
    if path.is_dir():
        return
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    # mkdir's mode passes through the umask; set it exactly.
    with contextlib.suppress(OSError):
        os.chmod(path, DIR_MODE)


def private_file(path: Path) -> None:
    """Create `path` empty and 0600 in a private directory unless it exists."""
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.close(fd)
        os.chmod(path, FILE_MODE)
