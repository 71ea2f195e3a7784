"""The memory checker builds with the device's predefined macros (kerntune.engine.macros): a kernel
cannot take one path on the device and another under Oclgrind by testing a macro the two builds
define differently."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from kerntune.backends import parse_device
from kerntune.engine import macros
from kerntune.engine.checker import SANITIZER_BUILD_OPTIONS, MemoryChecker, check_shapes, oclgrind_library, sanitizer_options
from kerntune.engine.supervisor import run_isolated
from kerntune.kernelfile import load_kernel
from kerntune.results import CheckStatus
from tests.conftest import REPO

pytestmark = pytest.mark.runtime
needs_oclgrind = pytest.mark.skipif(oclgrind_library() is None, reason="Oclgrind is not installed")
VECTOR_ADD = REPO / "kernels/examples/vector_add.yaml"


@pytest.fixture(scope="module")
def checker(worker):
    return MemoryChecker(worker.info)


def _check(checker, path: Path):
    kf = load_kernel(path, VECTOR_ADD)
    return checker.check(kf.instance(), kf.spec, str(kf.loaded.base_dir), check_shapes(kf.spec, "cpu"), 1)


@needs_oclgrind
@pytest.mark.parametrize("name, finding", [
    ("vector_add_reads_past_when_optimized.cl", "Invalid read"),     # #ifdef __OPTIMIZE__
    ("vector_add_races_when_inlined.cl", "data race"),               # #ifndef __NO_INLINE__
    ("vector_add_reads_past_above_cl12.cl", "Invalid read")])        # #if __OPENCL_VERSION__ > 120
def test_a_kernel_misbehaving_only_under_the_devices_macros_is_found(checker, name, finding):
    """Each kernel reads past an array's end or races only where a predefined macro has the device's
    value, not Oclgrind's; each was called clean by `bench --against` on both CPU runtimes."""
    report = _check(checker, REPO / "tests/data" / name)
    assert report.status is CheckStatus.MEMORY_ERROR, (report.status, report.message)
    assert finding.lower() in report.message.lower(), report.message


@needs_oclgrind
def test_honest_kernels_testing_macros_stay_clean(checker, tmp_path):
    """Extension and version tests that do no harm on either path are still checked, and clean."""
    src = tmp_path / "vector_add.cl"
    src.write_text("""#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ACC double
#else
#define ACC float
#endif
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
#if defined(__OPTIMIZE__) && __OPENCL_VERSION__ >= 120
    if (i < n) c[i] = (float)((ACC)a[i] + (ACC)b[i]);
#else
    if (i < n) c[i] = a[i] + b[i];
#endif
}
""")
    report = _check(checker, src)
    assert report.status is CheckStatus.CLEAN, report.message
    assert _check(checker, REPO / "kernels/examples/vector_add.cl").status is CheckStatus.CLEAN


@needs_oclgrind
def test_the_device_and_oclgrind_predefine_different_macros(worker):
    names = ["__OPTIMIZE__", "__NO_INLINE__", "__OPENCL_VERSION__", "cl_khr_fp64", "not_a_macro"]
    ref = parse_device(worker.info.id)
    device = run_isolated(macros.measure, ref.platform, ref.index, names, ())
    with tempfile.TemporaryDirectory() as tmp:
        env = MemoryChecker(worker.info)._oclgrind_env(Path(tmp))
        oclgrind = run_isolated(macros.measure, 0, 0, names, ("-cl-opt-disable",), env=env)
    assert device["__OPTIMIZE__"] == 1 and oclgrind["__OPTIMIZE__"] is None
    assert device["__NO_INLINE__"] is None and oclgrind["__NO_INLINE__"] == 1
    assert device["__OPENCL_VERSION__"] >= 200 and oclgrind["__OPENCL_VERSION__"] == 120
    assert device["cl_khr_fp64"] == oclgrind["cl_khr_fp64"] == 1
    assert device["not_a_macro"] is oclgrind["not_a_macro"] is None
    options, cannot = macros.equalize(device, oclgrind, set())
    assert options == ["-U__NO_INLINE__", f"-D__OPENCL_VERSION__={device['__OPENCL_VERSION__']}", "-D__OPTIMIZE__=1"]
    assert not cannot


def test_source_names_are_the_ones_a_compiler_may_predefine():
    src = """// __IN_A_COMMENT__
#define ACC float            /* ACC: the file's own */
#if defined(__OPTIMIZE__) || (my_flag > 1)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif
__kernel void k(__global float* out, int n) { out[0] = FLT_MAX + get_local_id(0) + __OPENCL_VERSION__ + __LINE__; }
"""
    assert macros.source_names(src) == ["ACC", "FLT_MAX", "__OPENCL_VERSION__", "__OPTIMIZE__", "my_flag"]
    assert macros.presence_only(src) == {"__OPTIMIZE__"}
    assert macros.presence_only("#ifdef X\n#endif\n#if X > 2\n#endif\n") == set()


def test_equalize_gives_the_device_values_or_refuses():
    D = macros.DEFINED
    device = {"A": 1, "B": None, "C": D, "E": D, "F": D, "G": 7}
    checker = {"A": None, "B": 1, "C": None, "E": D, "F": None, "G": 7}
    options, cannot = macros.equalize(device, checker, presence={"C"})
    assert options == ["-DA=1", "-UB", "-DC"]       # E: the same macro in both; G: the same value
    assert cannot == ["F"]                           # defined, no integer value, used beyond #ifdef
    assert macros.refusal(cannot).startswith("refused: the source uses predefined macro(s) F whose value differs")


def test_macros_the_build_options_set_are_alike_in_both_builds():
    """-D/-U options come after either compiler's predefined macros: the names they set are not probed, and
    the probe builds with the rest, the same for every configuration of a template."""
    rest, names = macros.split_options(["-DBLOCK=256", "-D", "X", "-UY", "-cl-fast-relaxed-math", "-I", "inc"])
    assert rest == ("-cl-fast-relaxed-math", "-I", "inc") and names == {"BLOCK", "X", "Y"}


def test_a_cuda_kernel_naming_the_debug_builds_macro_is_sanitized_as_built():
    """compute-sanitizer checks a -G build, which alone defines __CUDACC_DEBUG__ (nvcc 13.0): a kernel testing it
    is checked as the device builds it. (No GPU here: the choice of build, not the sanitizer run.)"""
    honest = "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n"
    assert sanitizer_options(honest) == (SANITIZER_BUILD_OPTIONS, "")
    options, note = sanitizer_options("#ifndef __CUDACC_DEBUG__\n#define READ_PAST 1\n#endif\n" + honest)
    assert options == () and "__CUDACC_DEBUG__" in note and note.startswith("checked as built")
