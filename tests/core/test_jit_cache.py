"""numba's cache of attndyn's kernels is keyed on the sources of all of them (attndyn._jit_cache): an edit of the
phase functions in _kernels.py compiles the planar run of _planar_run.py again instead of loading the old one."""

import os

import numba
import numpy as np

from attndyn import _distinct, _jit_cache, _kernels, _planar_run, margins


def _locator(dispatcher):
    return dispatcher._cache._impl._locator


def test_every_cached_kernel_is_keyed_on_every_kernel_source():
    kernels = [
        d
        for module in (_distinct, _kernels, _planar_run, margins)
        for d in vars(module).values()
        if isinstance(d, numba.core.registry.CPUDispatcher) and d._cache._enabled
    ]
    assert _planar_run._run_seqs in kernels and _kernels._planar_fix in kernels
    for d in kernels:
        assert isinstance(_locator(d), _jit_cache._AllSources), d
        own, digest = _locator(d).get_source_stamp()
        assert digest == _jit_cache.sources_digest()


def test_the_stamp_changes_with_a_source_the_kernel_does_not_live_in(tmp_path, monkeypatch):
    """The planar run's stamp follows _kernels.py's contents (a file of a module it only calls into)."""
    for name in _jit_cache.SOURCES:
        (tmp_path / name).write_bytes((_jit_cache._HERE / name).read_bytes())
    digest = _jit_cache.sources_digest(tmp_path)
    assert digest == _jit_cache.sources_digest()  # same contents, same digest
    kernels = tmp_path / "_kernels.py"
    kernels.write_text(kernels.read_text() + "\n# an edit\n")
    os.utime(kernels, ns=(1, 1))  # (a new time, whatever the file system's resolution)
    assert _jit_cache.sources_digest(tmp_path) != digest
    monkeypatch.setattr(_jit_cache, "_HERE", tmp_path)
    assert _locator(_planar_run._run_seqs).get_source_stamp()[1] == _jit_cache.sources_digest(tmp_path)


def test_other_functions_keep_numbas_own_locators(tmp_path):
    """A cached function of another package (here, a test module) is left to numba's locators."""
    module = tmp_path / "elsewhere.py"
    module.write_text("from numba import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    namespace: dict = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)
    twice = namespace["twice"]
    assert twice(np.float64(2.0)) == 4.0
    assert not isinstance(_locator(twice), _jit_cache._AllSources)


def test_every_module_with_a_cached_kernel_is_a_source():
    """A new module that defines a cached kernel must be in SOURCES (and import _jit_cache), or an edit of it would
    leave the kernels that call into it compiled from its old text."""
    cached = {p.name for p in _jit_cache._HERE.glob("*.py") if "cache=True" in p.read_text()}
    assert cached <= set(_jit_cache.SOURCES), cached - set(_jit_cache.SOURCES)
    for name in cached:
        assert "import _jit_cache" in (_jit_cache._HERE / name).read_text() or name == "_jit_cache.py", name
