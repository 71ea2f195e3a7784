"""Offline CUDA compilation: real nvcc/ptxas reports, no GPU needed."""

import shutil

import pytest

from kerntune.backends.base import CompileFailed
from kerntune.backends.nvcc import compile_offline, parse_ptxas
from tests.conftest import REPO


LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z7mangledPfi' for 'sm_90'
ptxas info    : Function properties for _Z7mangledPfi
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
"""


def test_parse_ptxas_report():
    entry, res = parse_ptxas(LOG, "mangled", "sm_90")
    assert entry == "_Z7mangledPfi"
    assert (res.registers, res.static_shared_bytes, res.stack_bytes) == (40, 2048, 16)
    assert (res.spill_store_bytes, res.spill_load_bytes, res.const_bytes, res.barriers) == (8, 12, 380, 1)
    assert res.spills
    _, other = parse_ptxas(LOG, "other", "sm_90")
    assert other.registers == 8 and not other.spills
    assert parse_ptxas(LOG, "missing", "sm_90") is None


@pytest.mark.nvcc
def test_real_compile_reports_resources(tmp_path):
    src = (REPO / "kernels/examples/row_sum.cu").read_text()
    r = compile_offline(src, "row_sum", "sm_90", cache_dir=tmp_path)
    assert r.resources.source == "ptxas" and r.resources.arch == "sm_90"
    assert r.resources.registers and r.resources.static_shared_bytes == 256 * 4
    assert r.resources.barriers == 1 and not r.resources.spills
    again = compile_offline(src, "row_sum", "sm_90", cache_dir=tmp_path)   # served from the cache
    assert again.resources == r.resources


@pytest.mark.nvcc
def test_real_compile_sees_spills(tmp_path):
    src = (REPO / "tests/data/spill.cu").read_text()
    r = compile_offline(src, "spill", "sm_90", options=["-maxrregcount=16"], cache_dir=tmp_path)
    assert r.resources.spills and r.resources.spill_store_bytes > 0


@pytest.mark.nvcc
def test_compile_errors_and_missing_kernels(tmp_path):
    with pytest.raises(CompileFailed, match="error"):
        compile_offline("__global__ void f( {", "f", cache_dir=tmp_path)
    with pytest.raises(CompileFailed, match="no kernel named 'g'.*entries: f"):
        compile_offline('extern "C" __global__ void f(float* a) { a[0] = 1; }', "g", cache_dir=tmp_path)


def test_nvrtc_gets_the_glibc_type_names_and_stdint_that_nvcc_has(tmp_path):
    """NVRTC has no C library headers: vLLM's merge_attn_states (an extension source) uses `uint`
    and <stdint.h>, and failed to compile on the first GPU run. The CuPy backend declares the
    names the code uses (keeping its line numbers) and puts <stdint.h>/<cstdint> on NVRTC's path.
    nvcc checks here that the result is still valid CUDA C++ beside the real glibc headers."""
    import subprocess

    from kerntune.backends.cupy import NVRTC_INCLUDE, nvrtc_source
    from kerntune.kernelfile import load_kernel

    kf = load_kernel(REPO / "tests/data/extensions/csrc/attention/merge_attn_states.cu",
                     REPO / "tests/data/extensions/expected/merge_attn_states_kernel.yaml")
    assert "#include <stdint.h>" in kf.source and " uint " in kf.source
    text = nvrtc_source(kf.source, kf.kernel_name)
    head, _, rest = text.partition("#line 1\n")
    assert rest == kf.source and "typedef unsigned int uint;" in head and "ushort" not in head
    # a source that declares the name itself, or only mentions it in a comment, is left as it is
    own = "typedef unsigned int uint;\n__global__ void k(uint* p) { p[0] = 1; }\n"
    assert nvrtc_source(own, "k") == own
    assert nvrtc_source("// uint\n__global__ void k(int* p) {}\n", "k").startswith("//")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    src = tmp_path / "k.cu"
    src.write_text(text)
    r = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", "-o", str(tmp_path / "k.o"), f"-I{NVRTC_INCLUDE}",
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
