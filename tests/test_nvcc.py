"""Offline CUDA compilation: real nvcc/ptxas reports, no GPU needed."""

import shutil

import pytest

from kerntune.backends.base import CompileFailed
from kerntune.backends.nvcc import compile_offline, parse_ptxas
from tests.conftest import REPO

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

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


@needs_nvcc
def test_real_compile_reports_resources(tmp_path):
    src = (REPO / "kernels/examples/row_sum.cu").read_text()
    r = compile_offline(src, "row_sum", "sm_90", cache_dir=tmp_path)
    assert r.resources.source == "ptxas" and r.resources.arch == "sm_90"
    assert r.resources.registers and r.resources.static_shared_bytes == 256 * 4
    assert r.resources.barriers == 1 and not r.resources.spills
    again = compile_offline(src, "row_sum", "sm_90", cache_dir=tmp_path)   # served from the cache
    assert again.resources == r.resources


@needs_nvcc
def test_real_compile_sees_spills(tmp_path):
    src = (REPO / "tests/data/spill.cu").read_text()
    r = compile_offline(src, "spill", "sm_90", options=["-maxrregcount=16"], cache_dir=tmp_path)
    assert r.resources.spills and r.resources.spill_store_bytes > 0


@needs_nvcc
def test_compile_errors_and_missing_kernels(tmp_path):
    with pytest.raises(CompileFailed, match="error"):
        compile_offline("__global__ void f( {", "f", cache_dir=tmp_path)
    with pytest.raises(CompileFailed, match="no kernel named 'g'.*entries: f"):
        compile_offline('extern "C" __global__ void f(float* a) { a[0] = 1; }', "g", cache_dir=tmp_path)
