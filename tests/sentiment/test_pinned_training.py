"""The same trained weights on every processor (issue 30): training pinned to one code path.

Each case trains the small model of ``pinned_training.py`` in a fresh interpreter whose environment stands
for another processor: ``ATEN_CPU_CAPABILITY`` caps the kernels torch may choose (``default`` is a processor
without AVX2, ``avx2`` one without AVX-512), ``MKL_CBWR`` sets MKL's branch as a processor would, and
``NUMBA_CPU_NAME=generic`` compiles the hardmax kernel for a processor without this one's extensions. Pinned,
every case gives one set of bytes, and that set is the one recorded here: a change of the model (the recipe,
the loop, torch's kernels) shows at once. Unpinned (``ATTNDYN_KERNELS=native``), torch's plain and AVX2 builds
give different bytes, so the comparison can fail.
"""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("pinned_training.py")

#: sha256 of the small model's weights, trained pinned (torch 2.13.0; recorded on an AMD EPYC with AVX-512,
#: and equal under every emulated processor below).
RECORDED = {
    2: "64504da6a54738cc671e54815c9b23edd314373b247835ebcb3b4d68e6bb2e31",
    16: "b674582b9d6524dfee2e2a2a1d1ca98082aca94c85d0fc1072e878629d7c689e",
}

EMULATED = [
    {},
    {"ATEN_CPU_CAPABILITY": "default"},
    {"ATEN_CPU_CAPABILITY": "avx2"},
    {"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AVX512"},
    {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},
    {"MKL_CBWR": "AUTO"},
    {"NUMBA_CPU_NAME": "generic"},
]


def _train(d: int, env: dict[str, str]) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ATTNDYN_KERNELS")}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(d)],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _requires_avx2() -> None:
    from attndyn.sentiment._pinning import _has_avx2

    if _has_avx2() is False:
        pytest.skip("the pin needs AVX2, which this processor lacks")


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 16])
def test_pinned_training_gives_one_set_of_bytes_on_every_emulated_processor(d):
    _requires_avx2()
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda env: _train(d, env), EMULATED))
    for env, run in zip(EMULATED, runs):
        assert run["kernels"]["pinned"], (env, run["kernels"])
        assert (run["kernels"]["aten"], run["kernels"]["mkl"]) == ("AVX2", "COMPATIBLE"), env
    assert {run["sha256"] for run in runs} == {RECORDED[d]}


@pytest.mark.slow
def test_unpinned_training_depends_on_the_processor():
    _requires_avx2()
    plain, avx2 = (_train(2, {"ATTNDYN_KERNELS": "native", "ATEN_CPU_CAPABILITY": cap}) for cap in ("default", "avx2"))
    assert not plain["kernels"]["pinned"] and "ATTNDYN_KERNELS=native" in plain["kernels"]["reason"]
    assert plain["kernels"]["aten"] == "DEFAULT" and avx2["kernels"]["aten"] == "AVX2"
    assert plain["sha256"] != avx2["sha256"]


def test_kernel_paths_say_why_a_late_pin_is_not_in_force():
    """torch is already imported in this process (the suite pinned through the environment first), so a pin with
    other values set in between is late: kernel_paths says so instead of claiming the pin."""
    from attndyn.sentiment import _pinning

    saved = {k: os.environ.get(k) for k in _pinning.PINNED_KERNELS}
    try:
        os.environ["MKL_CBWR"] = "AUTO"
        _pinning.pin_kernels()
        paths = _pinning.kernel_paths()
        assert not paths.pinned
        assert "torch was imported before pin_kernels()" in paths.reason
        assert paths.line().startswith("kernels: NOT pinned")
    finally:
        _pinning._late.clear()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_the_suite_runs_pinned():
    from attndyn.sentiment import kernel_paths

    _requires_avx2()
    paths = kernel_paths()
    assert paths.pinned, paths.reason
