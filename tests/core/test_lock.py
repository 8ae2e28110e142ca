"""The one folder lock (attndyn._lock): exclusive writers, shared readers, never stale, who holds it named in one
line, and the only ``fcntl.flock`` of the package (sweeps and sentiment runs both use it)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import attndyn
from attndyn import InputError
from attndyn._lock import FolderLock, lock_holder


def test_only_one_module_calls_flock():
    src = Path(attndyn.__file__).parent
    callers = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "flock":
                callers.add(str(path.relative_to(src)))
    assert callers == {"_lock.py"}


def test_an_exclusive_lock_refuses_a_second_and_names_the_holder(tmp_path):
    with FolderLock(tmp_path) as lock:
        assert lock.held and lock_holder(tmp_path) == os.getpid()
        with pytest.raises(InputError, match=rf"^'{tmp_path}' is written by process {os.getpid()}; wait for it"):
            FolderLock(tmp_path).acquire()
        with pytest.raises(InputError, match=r"is written by process"):
            FolderLock(tmp_path, shared=True).acquire()  # no reader while a writer holds it
    assert not lock.held
    with FolderLock(tmp_path, shared=True), FolderLock(tmp_path, shared=True):  # readers share it
        with pytest.raises(InputError, match=rf"^'{tmp_path}' is read by process {os.getpid()}"):
            FolderLock(tmp_path).acquire()
    FolderLock(tmp_path).acquire().release()  # released: free again


def test_a_lock_file_is_made_empty_once_and_blocks_nothing_when_left_behind(tmp_path):
    lock = FolderLock(tmp_path, file=".lock")
    lock.acquire()
    assert lock.created and (tmp_path / ".lock").read_bytes() == b""
    with pytest.raises(InputError, match=rf"^{tmp_path.name} busy: process {os.getpid()}$"):
        FolderLock(tmp_path, file=".lock", busy=lambda p, who, ex: f"{p.name} busy: {who}").acquire()
    lock.release()
    (tmp_path / ".lock").write_text("pid 4194303 of an older attndyn")
    again = FolderLock(tmp_path, file=".lock").acquire()
    assert not again.created and again.held
    again.release()


def test_undo_removes_what_was_added_and_the_folders_it_made(tmp_path):
    run = tmp_path / "a" / "b" / "run"
    with FolderLock(run, create=True) as lock:
        assert lock.created and run.is_dir()
        (run / "sub").mkdir()
        (run / "sub" / "x.txt").write_text("new")
        lock.undo()
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "mine.txt").write_text("mine")
    with FolderLock(tmp_path / "keep") as lock:
        (tmp_path / "keep" / "new.txt").write_text("new")
        lock.undo()
    assert [p.name for p in (tmp_path / "keep").iterdir()] == ["mine.txt"]


def test_a_file_is_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match=r"'.*f' is a file, not a folder; give a folder path"):
        FolderLock(tmp_path / "f").acquire()
