"""Extraction of a kernel's device code from PyTorch extension sources (the look-alike corpus
in tests/data/extensions: templated kernels, the launcher in the same file, local headers)."""

import json

import pytest

from kerntune.errors import KerntuneError
from kerntune.source.extract import extract, needs_extraction
from kerntune.source.includes import flatten
from kerntune.source.launcher import choose, instantiations
from kerntune.source.parse import parse
from tests.conftest import REPO, run_cli, write

CORPUS = REPO / "tests/data/extensions"
MERGE = CORPUS / "csrc/attention/merge_attn_states.cu"


def test_device_code_kept_host_code_dropped():
    ex = extract(MERGE, MERGE.read_text(), "merge_attn_states_kernel<__nv_bfloat16, 128>")
    src = ex.source
    body = src[src.index("\n\n") + 2:]          # after the header comment, which lists what was dropped
    # kept: the kernel, the helpers it calls (from the inlined header), the macro they use
    assert "__global__ void merge_attn_states_kernel" in src
    assert "from_float<__nv_bfloat16>" in src and "to_float(__half x)" in src
    assert "#define EXT_DEVICE_INLINE __device__ __forceinline__" in src
    assert "#include <cuda_bf16.h>" in src
    # dropped: torch/ATen includes, the launcher, host helpers, host-only macros, unused device code
    for gone in ("torch/", "ATen/", "c10/", "TORCH_CHECK", "merge_attn_states_launcher", "ext_num_sms",
                 "EXT_CHECK_INPUT", "LAUNCH_MERGE_ATTN_STATES", "pack_traits", "#include <optional>"):
        assert gone not in body, gone
    kinds = {(d.kind, d.name) for d in ex.dropped}
    assert ("host function", "merge_attn_states_launcher") in kinds and ("host function", "ext_num_sms") in kinds
    assert ("include", "<torch/all.h>") in kinds and ("macro", "EXT_CHECK_INPUT") in kinds
    assert ("type", "pack_traits") in kinds
    origins = {d.name: d.origin for d in ex.dropped}
    assert origins["ext_num_sms"].endswith("include/ext_common.h:31")       # file:line of the header
    assert ex.inlined == ("../../include/ext_common.h", "../../include/ext_vec.cuh")
    assert not parse(src, "cuda").kernel("merge_attn_states_kernel<__nv_bfloat16, 128>").extern_c


def test_which_files_need_extraction():
    assert needs_extraction(MERGE.read_text())
    assert not needs_extraction((REPO / "kernels/sglang/silu_and_mul/silu_and_mul.cu").read_text())


def test_launcher_instantiations():
    flat = flatten(MERGE, MERGE.read_text())
    k = parse(flat.text, "cuda").find("merge_attn_states_kernel")
    found = instantiations(k, flat.text, flat.origin)
    # NUM_THREADS comes from the launcher's constexpr; scalar_t from the dispatch: chosen, and said so
    assert found[0].args == ("__nv_bfloat16", "128") and found[0].guessed == ("scalar_t",)
    assert found[0].where == "the launcher at merge_attn_states.cu:76"
    rms = CORPUS / "csrc/layernorm/fused_add_rms_norm.cu"
    flat = flatten(rms, rms.read_text())
    k = parse(flat.text, "cuda").find("fused_add_rms_norm_kernel")
    assert instantiations(k, flat.text)[0].args == ("__nv_bfloat16", "8")      # 16 / sizeof(scalar_t)
    soft = CORPUS / "csrc/softmax/row_softmax.cu"
    flat = flatten(soft, soft.read_text())
    k = parse(flat.text, "cuda").find("row_softmax_kernel")
    assert [i.args for i in instantiations(k, flat.text)] == [("256",), ("1024",)]
    c = choose(parse(flat.text, "cuda"), flat.text, None, "512", "row_softmax.cu")
    assert c.name == "row_softmax_kernel<512>" and c.others == ("row_softmax_kernel<256>", "row_softmax_kernel<1024>")


@pytest.mark.nvcc
@pytest.mark.parametrize("path", sorted((CORPUS / "csrc").rglob("*.cu")), ids=lambda p: p.stem)
def test_every_corpus_kernel_extracts_and_compiles(path):
    from kerntune.backends.nvcc import compile_offline

    flat = flatten(path, path.read_text())
    parsed = parse(flat.text, "cuda")
    assert parsed.kernels
    for k in parsed.kernels:
        c = choose(parsed, flat.text, k.qualified_name, None, str(path), flat.origin)
        ex = extract(path, path.read_text(), c.name, flat=flat)
        body = ex.source[ex.source.index("\n\n") + 2:]
        assert "TORCH_CHECK" not in body and "at::Tensor" not in body and "torch::" not in body
        assert not any(inc.startswith(("<torch", "<ATen", "<c10")) for inc in ex.includes)
        r = compile_offline(ex.source, c.name)
        assert r.resources.registers > 0 and r.resources.spill_store_bytes == 0


def test_missing_local_header_names_where_it_looked(tmp_path):
    k = write(tmp_path, "ext.cu", """
        #include <torch/all.h>
        #include "helpers.cuh"
        __global__ void k(float* y) { y[0] = 1.0f; }
    """)
    with pytest.raises(KerntuneError) as e:
        extract(k, k.read_text(), "k")
    assert e.value.exit_status == 2 and "ext.cu:2: local header 'helpers.cuh' not found" in e.value.message
    assert "--include-dir" in e.value.hint
    r = run_cli("extract", str(k), "--stdout")
    assert r.returncode == 2 and "helpers.cuh" in r.stderr and "Traceback" not in r.stderr
    # with the folder that holds it
    inc = tmp_path / "third_party"
    inc.mkdir()
    write(inc, "helpers.cuh", """
        #pragma once
        #define SCALE 2.0f
        __device__ inline float twice(float x) { return SCALE * x; }
        inline void host_only() {}
    """)
    write(tmp_path, "ext.cu", """
        #include <torch/all.h>
        #include "helpers.cuh"
        __global__ void k(float* y) { y[0] = twice(1.0f); }
    """)
    r = run_cli("extract", str(k), "--include-dir", str(inc), "--stdout", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    body = rep["source"][rep["source"].index("\n\n") + 2:]
    assert "#define SCALE 2.0f" in body and "twice" in body and "host_only" not in body
    assert {d["name"] for d in rep["dropped"]} == {"<torch/all.h>", "host_only"}


@pytest.mark.nvcc
def test_extract_command_writes_a_kernel_file(tmp_path):
    out = tmp_path / "merge.cu"
    r = run_cli("extract", str(MERGE), "--compile", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "instantiation from the launcher at merge_attn_states.cu:76" in r.stderr
    assert "merge_attn_states.cu:84: host function merge_attn_states_launcher" in r.stderr
    assert "compiled: sm_90:" in r.stderr
    text = out.read_text()
    assert "// kerntune-instantiate: ext::merge_attn_states_kernel<__nv_bfloat16, 128>" in text
    # the extracted file is a kernel file of its own: init finds the instantiation in it, check compiles it
    r = run_cli("init", str(out))
    assert r.returncode == 0, r.stderr
    r = run_cli("check", str(out))
    assert r.returncode == 0, r.stderr
    r = run_cli("extract", str(MERGE), "-o", str(out))
    assert r.returncode == 2 and "already exists" in r.stderr


def test_an_unknown_arch_is_a_usage_error_not_a_compile_failure(tmp_path):
    # was exit 4, 'does not compile' with a hint about a missing header; the form is checked before nvcc runs
    out = tmp_path / "merge.cu"
    for args in (["extract", str(MERGE), "--compile", "--arch", "sm_bogus", "-o", str(out)],
                 ["check", str(REPO / "kernels/examples/vector_add.cu"), "--offline", "--arch", "SM_90"]):
        r = run_cli(*args)
        assert r.returncode == 2, r.stderr
        assert f"unknown CUDA architecture '{args[-3] if args[0] == 'extract' else args[-1]}' for --arch" in r.stderr
        assert "hint: give a real architecture of the form sm_XY" in r.stderr and "header" not in r.stderr
    assert not out.exists()


@pytest.mark.nvcc
def test_an_arch_nvcc_does_not_know_is_a_usage_error(tmp_path):
    # the form is right but this nvcc has no such architecture (sm_91), or not with that suffix (sm_75a)
    for arch in ("sm_91", "sm_75a"):
        r = run_cli("extract", str(MERGE), "--compile", "--arch", arch, "-o", str(tmp_path / "m.cu"), "--json")
        assert r.returncode == 2, r.stderr
        err = json.loads(r.stdout)["error"]
        assert err["code"] == "usage" and f"'{arch}'" in err["message"] and "sm_90" in err["hint"]
    r = run_cli("tune", str(REPO / "templates/examples/vector_add.cu.j2"), "--spec",
                str(REPO / "kernels/examples/vector_add.yaml"), "--dry-run", "--arch", "sm_91")
    assert r.returncode == 2 and "unknown CUDA architecture 'sm_91'" in r.stderr, r.stderr
    r = run_cli("extract", str(MERGE), "--compile", "--arch", "sm_90a", "-o", str(tmp_path / "m.cu"))
    assert r.returncode == 0 and "compiled: sm_90a:" in r.stderr, r.stderr


def test_extract_refuses_what_it_cannot_do(tmp_path):
    r = run_cli("extract", str(CORPUS / "csrc/activation/act_and_mul.cu"))
    assert r.returncode == 2 and "defines several kernels" in r.stderr and "--kernel" in r.stderr
    r = run_cli("extract", str(MERGE), "--kernel", "merge_attn_states_kernel<float>")
    assert r.returncode == 2 and "gives 1 template arguments" in r.stderr
    r = run_cli("extract", str(REPO / "kernels/examples/vector_add.cl"))
    assert r.returncode == 2 and "not CUDA" in r.stderr


@pytest.mark.nvcc
def test_include_dirs_travel_in_the_spec(tmp_path):
    inc = tmp_path / "vendor" / "kernels"
    inc.mkdir(parents=True)
    write(inc, "scale.cuh", """
        #pragma once
        #define SCALE_BY 3.0f
        __device__ __forceinline__ float scaled(float x) { return SCALE_BY * x; }
    """)
    src = tmp_path / "csrc"
    src.mkdir()
    k = write(src, "scale.cu", """
        #include <torch/extension.h>
        #include "scale.cuh"
        extern "C" __global__ void scale(float* __restrict__ y, const float* __restrict__ x, int n) {
            const int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = scaled(x[i]);
        }
        torch::Tensor scale_op(torch::Tensor x) { return x; }
    """)
    r = run_cli("init", str(k))
    assert r.returncode == 2 and "scale.cuh" in r.stderr and "--include-dir" in r.stderr
    r = run_cli("init", str(k), "--include-dir", str(inc))
    assert r.returncode == 0, r.stderr
    text = (src / "scale.yaml").read_text()
    assert "include_dirs: [\"../vendor/kernels\"]" in text and "intent: out" in text
    r = run_cli("check", str(k), "--json")
    assert r.returncode == 0, r.stderr


SQSUM = """#include "common.h"
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sqsum(__global float* restrict out, __global const float* restrict x, const int cols) {
    __local float red[WG];
    const int r = get_group_id(0), t = get_local_id(0);
    float a = 0.f;
    for (int c = t; c < cols; c += WG) a += sq(x[r * cols + c]);
    red[t] = a;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) { if (t < s) red[t] += red[t + s]; barrier(CLK_LOCAL_MEM_FENCE); }
    if (t == 0) out[r] = red[0];
}
"""


@pytest.mark.runtime
def test_an_opencl_kernels_local_headers_are_its_own_from_any_folder(tmp_path):
    """Two folders hold the same OpenCL kernel text, each with its own common.h (the work-group size),
    one of them under include_dirs. Each is compiled with its own header, from any working folder: the
    header was looked up from the working folder only (the spec's include_dirs never reached the
    compiler), and the runtime's binary cache, keyed on the kernel's text, ran the other folder's
    binary (user tour). `init` reads the size from the header too."""
    for name, wg, inc in (("a", 64, ""), ("b", 16, "inc")):
        (tmp_path / name / (inc or ".")).mkdir(parents=True, exist_ok=True)
        write(tmp_path / name / (inc or "."), "common.h", f"#define WG {wg}\ninline float sq(float x) {{ return x * x; }}\n")
        write(tmp_path / name, "sqsum.cl", SQSUM)
        args = ("-I", str(tmp_path / name / inc)) if inc else ()
        r = run_cli("init", str(tmp_path / name / "sqsum.cl"), *args)
        assert r.returncode == 0, r.stderr
        assert f"block: [{wg}]" in (tmp_path / name / "sqsum.yaml").read_text()
    for name, local in (("a", 256), ("b", 64), ("a", 256)):
        r = run_cli("check", str(tmp_path / name / "sqsum.cl"), "--json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["resources"]["static_shared_bytes"] == local, (name, r.stdout)
    r = run_cli("bench", str(tmp_path / "b" / "sqsum.cl"), "--shape", "small", "--repeats", "3", "--no-memcheck",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_extracted_code_that_does_not_compile_is_written_and_its_errors_name_that_file(tmp_path):
    """`extract --compile` of a kernel nvcc refuses wrote nothing, and nvcc's errors named a temporary
    kernel.cu the user never sees (a user tour, cub::Sum gone in CUDA 13): the code is written all the
    same, the exit is non-zero, and the errors' line numbers are those of the written file."""
    write(tmp_path, "ext.cu", """
        #include <torch/extension.h>
        __global__ void broken_kernel(float* y, const float* x, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = not_declared_anywhere(x[i]);
        }
        void broken(torch::Tensor y, torch::Tensor x) {
          broken_kernel<<<1, 256>>>(y.data_ptr<float>(), x.data_ptr<float>(), (int)x.numel());
        }
        """)
    out = tmp_path / "broken.cu"
    r = run_cli("extract", str(tmp_path / "ext.cu"), "--compile", "-o", str(out))
    assert r.returncode == 4, r.stderr
    assert out.exists() and "not_declared_anywhere" in out.read_text()
    assert f"the device code is written to {out}, to be fixed there" in r.stderr, r.stderr
    line = next(i for i, text in enumerate(out.read_text().splitlines(), 1) if "not_declared_anywhere" in text)
    assert f"broken.cu({line}): error" in r.stderr and "kernel.cu" not in r.stderr, r.stderr
