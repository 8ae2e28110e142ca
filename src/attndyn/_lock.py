"""The one lock of a folder that a process writes (a sweep, a sentiment run): a non-blocking ``flock``.

A ``flock`` is an OS-level advisory lock (POSIX). The operating system releases it when its holder ends,
however it ends (killed, out of memory, a full disk), so a lock is never stale. Taking it writes nothing:
it is held on the folder itself, or on a lock file inside it that is made empty on first use and never
deleted once used (deleting a lock file another process has open would let two processes hold "the" lock
at once); a file left behind, empty or written by an older attndyn, blocks nothing. An exclusive lock is
held while a process writes the folder, shared ones while processes read it. A refused process is told
who holds the lock, from ``/proc/locks`` (Linux; "another process" elsewhere). This is the only module of
attndyn that calls ``fcntl.flock``.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder, FolderLock(folder) as lock:
...     lock.held, lock_holder(lock.path) == os.getpid()
(True, True)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ._validation import InputError

__all__ = ["FolderLock", "lock_holder"]


def _default_busy(path: Path, who: str, exclusive: bool) -> str:
    return f"{str(path)!r} is {'written' if exclusive else 'read'} by {who}; wait for it to finish, or stop it"


class FolderLock:
    """A non-blocking ``flock`` on ``folder`` (``file=None``) or on the lock file ``folder/file``.

    ``with FolderLock(folder): ...`` (or :meth:`acquire` / :meth:`release`) takes an exclusive lock, or a
    shared one with ``shared=True``; if it cannot, an :class:`InputError` says who holds it, in the words
    ``busy(path, who, exclusive)`` gives (``who``: ``"process 1234"`` or ``"another process"``; ``exclusive``:
    whether the holder writes). With ``create=True`` a missing folder is made (and its parents); ``created``
    tells whether the lock made the folder (``file=None``) or the lock file, and :meth:`undo` removes what
    was added to the folder since an exclusive lock was taken (the folder too, if the lock made it).
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        shared: bool = False,
        file: str | None = None,
        create: bool = False,
        busy: Callable[[Path, str, bool], str] = _default_busy,
    ) -> None:
        self.folder = Path(folder)
        self.path = self.folder if file is None else self.folder / file
        self.shared = shared
        self.create = create
        self.created = False
        self._busy = busy
        self._top = self.folder  # the outermost folder this lock made
        self._fd: int | None = None
        self._before: set[Path] = set()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> FolderLock:
        import fcntl

        self._make_folder()
        fd = self._open()
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid, exclusive = _lock_entry(self.path) or (None, True)
            who = f"process {pid}" if pid is not None else "another process"
            raise InputError(self._busy(self.folder, who, exclusive)) from None
        except OSError as exc:
            os.close(fd)
            raise InputError(
                f"could not lock {str(self.path)!r} ({exc.strerror}); use a folder on a local disk"
            ) from None
        self._fd = fd
        if not self.shared and self.path == self.folder:
            self._before = {p.relative_to(self.folder) for p in self.folder.rglob("*")}
        return self

    def _make_folder(self) -> None:
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(f"{str(self.folder)!r} is a file, not a folder; give a folder path")
        if self.create and not self.folder.exists():
            top = self.folder
            while not top.parent.exists():
                top = top.parent
            self.folder.mkdir(parents=True)
            self.created, self._top = self.path == self.folder, top

    def _open(self) -> int:
        if self.path == self.folder:
            return os.open(self.folder, os.O_RDONLY)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self.created = True
            return fd
        except FileExistsError:
            self.created = False
            return os.open(self.path, os.O_RDWR)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def undo(self) -> None:
        """Remove what was added to the folder since the exclusive lock was taken (the folder too if this lock
        made it): a run that fails before it has written anything leaves the folder as it was."""
        for p in sorted(self.folder.rglob("*"), key=lambda q: -len(q.parts)):  # deepest first
            if p.relative_to(self.folder) not in self._before:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        if self.created and self.path == self.folder:
            d = self.folder
            while True:
                d.rmdir()
                if d == self._top:
                    break
                d = d.parent

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_holder(path: Path) -> int | None:
    """The pid holding a ``flock`` on ``path``, from ``/proc/locks`` (Linux); None when unknown."""
    entry = _lock_entry(path)
    return None if entry is None else entry[0]


def _lock_entry(path: Path) -> tuple[int, bool] | None:
    """(pid, exclusive) of a ``flock`` held on ``path``, from ``/proc/locks`` (Linux); None when unknown."""
    try:
        st = path.stat()
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        f = line.split()
        if "->" in f or len(f) < 6 or f[1] != "FLOCK":
            continue
        try:
            maj, mn, ino = f[5].split(":")
            if (int(maj, 16), int(mn, 16), int(ino)) == want:
                return int(f[4]), f[3] == "WRITE"
        except ValueError:
            continue
    return None
