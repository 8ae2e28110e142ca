"""The lock of a sweep folder: an exclusive ``flock`` on ``OUT/.lock``, held while a process writes the folder.

The operating system releases a ``flock`` when its holder ends, however it ends (killed, out of memory, a
full disk), so a lock is never stale: the file stays behind, and the next run takes it, whatever it holds
(an empty file, or an older attndyn's pid). Nothing is written into it (taking the lock changes no file);
a refused process names the holder from ``/proc/locks`` (Linux). The file is never deleted once it has been
used (deleting a lock file another process has open would let two processes hold "the" lock at once).
"""

from __future__ import annotations

import os
from pathlib import Path

from .._validation import InputError

__all__ = ["FolderLock"]


class FolderLock:
    """``FolderLock(folder).acquire()`` takes the lock of an existing folder or raises :class:`InputError`
    naming the process that holds it; :meth:`release` gives it back (also done by the OS at exit)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.path = Path(folder) / ".lock"
        self._fd: int | None = None
        self.created = False  # whether acquire made the file

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self.created = True
        except FileExistsError:
            fd = os.open(self.path, os.O_RDWR)
            self.created = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputError(
                f"{str(self.path.parent)!r} is being written by {self._holder()}; wait for it to finish, or stop it"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise InputError(
                f"could not lock {str(self.path)!r} ({exc.strerror}); use a folder on a local disk"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def _holder(self) -> str:
        from ..sentiment.runfolder import lock_holder  # (imported only to word a refusal)

        pid = lock_holder(self.path)
        return f"process {pid}" if pid is not None else "another process"
