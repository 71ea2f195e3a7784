"""Templated kernels: kernel names as template instantiations, looked up in the source,
instantiated by nvcc (offline, for real) and checked against the spec's arguments."""

import pytest
import yaml

from kerntune.errors import KerntuneError
from kerntune.kernelfile import load_kernel
from kerntune.source.names import KernelNameError, base_name, parse_kernel_name
from kerntune.source.parse import parse
from kerntune.spec.load import load_file
from tests.conftest import run_cli, write

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too


TEMPLATED = """
#include <cuda_bf16.h>
#include <cuda_fp16.h>
namespace ext {
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

template <typename scalar_t, unsigned NUM_THREADS, int SCALE = 2>
__global__ void scale_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ in, const unsigned n) {
  const unsigned i = blockIdx.x * NUM_THREADS + threadIdx.x;
  if (i >= n) return;
  out[i] = from_f<scalar_t>(to_f(in[i]) * SCALE);
}
}  // namespace ext
"""

SPEC = """
kernel: "{kernel}"
args:
  - {{name: out, dtype: {dt}, shape: [n], intent: out}}
  - {{name: in, dtype: {dt}, shape: [n], intent: in}}
  - {{name: n, dtype: uint32, value: n}}
launch: {{grid: ["ceil_div(n, 128)"], block: [128]}}
shapes: [{{n: 4096}}]
"""


def test_kernel_names():
    kn = parse_kernel_name(" ext::merge_attn_states_kernel< __nv_bfloat16 ,128 > ")
    assert kn.text == "ext::merge_attn_states_kernel<__nv_bfloat16, 128>"
    assert kn.base == "merge_attn_states_kernel" and kn.namespace == ("ext",) and kn.template_args == (
        "__nv_bfloat16", "128")
    assert parse_kernel_name("k<vec_t<float, 4>, 2>").template_args == ("vec_t<float, 4>", "2")
    assert parse_kernel_name("vector_add").is_plain and not parse_kernel_name("ns::k").is_plain
    for bad in ("k<>", "k<float", "a b", "3k", "k<float>>"):
        with pytest.raises(KernelNameError):
            parse_kernel_name(bad)
    assert base_name("ns::k<__nv_bfloat16, {{ BLOCK }}>") == "k"


def test_spec_kernel_field_takes_instantiations(tmp_path):
    spec = write(tmp_path, "s.yaml", SPEC.format(kernel="ext::scale_kernel<__nv_bfloat16,128>", dt="bf16"))
    assert load_file(spec).spec.kernel == "ext::scale_kernel<__nv_bfloat16, 128>"
    spec = write(tmp_path, "bad.yaml", SPEC.format(kernel="scale kernel", dt="bf16"))
    with pytest.raises(KerntuneError) as e:
        load_file(spec)
    assert "bad.yaml:1: kernel:" in e.value.message and "template instantiation" in e.value.message


def test_lookup_checks_template_arguments():
    p = parse(TEMPLATED, "cuda")
    k = p.kernel("scale_kernel<float, 64>")          # unqualified: found in its namespace
    assert k.qualified_name == "ext::scale_kernel" and [t.name for t in k.template_params] == [
        "scalar_t", "NUM_THREADS", "SCALE"]
    assert k.template_params[2].default == "2"
    with pytest.raises(KerntuneError, match="is a template: name an instantiation"):
        p.kernel("ext::scale_kernel")
    with pytest.raises(KerntuneError, match="gives 4 template arguments"):
        p.kernel("ext::scale_kernel<float, 64, 2, 1>")
    with pytest.raises(KerntuneError, match="no kernel named 'other::scale_kernel'"):
        p.kernel("other::scale_kernel<float, 64>")


@pytest.mark.nvcc
def test_nvcc_instantiates_and_finds_each_entry(tmp_path):
    from kerntune.backends.nvcc import compile_offline

    seen = set()
    for name in ("ext::scale_kernel<__nv_bfloat16, 128>", "scale_kernel<half, 64, 3>", "ext::scale_kernel<float, 256>"):
        r = compile_offline(TEMPLATED, name, cache_dir=tmp_path)
        assert r.entry.startswith("_ZN3ext12scale_kernelI") and r.resources.registers > 0
        seen.add(r.entry)
    assert len(seen) == 3
    # a source that already instantiates several: the demangled arguments pick the right entry
    more = TEMPLATED + "\ntemplate __global__ void ext::scale_kernel<float, 32>(float*, const float*, unsigned);\n"
    a = compile_offline(more, "ext::scale_kernel<float, 32>", cache_dir=tmp_path)
    b = compile_offline(more, "ext::scale_kernel<__half, 32>", cache_dir=tmp_path)
    assert a.entry != b.entry and "6__half" in b.entry and "IfLj32E" in a.entry


@pytest.mark.nvcc
def test_per_dtype_specs_share_one_templated_source(tmp_path):
    k = write(tmp_path, "scale.cu", TEMPLATED)
    for dt, ctype in (("bf16", "__nv_bfloat16"), ("fp16", "__half"), ("fp32", "float")):
        write(tmp_path, f"{dt}.yaml", SPEC.format(kernel=f"ext::scale_kernel<{ctype}, 128>", dt=dt))
        r = run_cli("check", str(k), "--spec", str(tmp_path / f"{dt}.yaml"), "--json")
        assert r.returncode == 0, r.stderr
        rep = yaml.safe_load(r.stdout)
        assert rep["mode"] == "offline" and rep["resources"]["registers"] > 0


def test_spec_against_signature(tmp_path):
    k = write(tmp_path, "scale.cu", TEMPLATED)
    cases = {
        # element type of the instantiation: scalar_t = __nv_bfloat16, the spec says fp16
        SPEC.format(kernel="ext::scale_kernel<__nv_bfloat16, 128>", dt="fp16"): ["'out' is fp16", "(bf16)"],
        # order: the spec swaps two arrays
        SPEC.format(kernel="ext::scale_kernel<float, 128>", dt="fp32").replace("name: out", "name: tmp").replace(
            "name: in,", "name: out,").replace("name: tmp", "name: in"): ["reorder args"],
        # a pointer given as a scalar
        SPEC.format(kernel="ext::scale_kernel<float, 128>", dt="fp32").replace(
            "{name: in, dtype: fp32, shape: [n], intent: in}", "{name: in, dtype: fp32, value: 1.0}"):
            ["is a pointer"],
        # fewer arguments than parameters
        SPEC.format(kernel="ext::scale_kernel<float, 128>", dt="fp32").replace(
            "  - {name: n, dtype: uint32, value: n}\n", ""): ["lists 2 arguments", "takes 3 (out, in, n)"],
    }
    for i, (text, needles) in enumerate(cases.items()):
        spec = write(tmp_path, f"case{i}.yaml", text)
        with pytest.raises(KerntuneError) as e:
            load_kernel(k, spec)
        assert e.value.exit_status == 2
        assert f"case{i}.yaml:" in e.value.message, e.value.message
        for needle in needles:
            assert needle in e.value.message, e.value.message


def test_bench_with_fewer_args_is_a_clear_error_not_a_traceback(tmp_path):
    """The issue's crash: a spec with fewer arguments than the kernel passed check and crashed bench."""
    from tests.conftest import VECTOR_ADD

    (tmp_path / "vector_add.cl").write_text(VECTOR_ADD.read_text())
    text = (VECTOR_ADD.parent / "vector_add.yaml").read_text().replace("  - {name: n, dtype: int32, value: n}\n", "")
    write(tmp_path, "vector_add.yaml", text.replace("reference: reference.py:vector_add", ""))
    for cmd in ("check", "bench", "optimize"):
        r = run_cli(cmd, str(tmp_path / "vector_add.cl"), "--device", "cpu")
        assert r.returncode == 2, (cmd, r.stderr)
        assert "takes 4 (c, a, b, n)" in r.stderr and "Traceback" not in r.stderr


def test_shapes_that_do_not_fit_memory_are_refused(tmp_path):
    """The issue's crash: a shape needing terabytes passed check and died with MemoryError."""
    from tests.conftest import VECTOR_ADD

    (tmp_path / "vector_add.cl").write_text(VECTOR_ADD.read_text())
    text = (VECTOR_ADD.parent / "vector_add.yaml").read_text().split("shapes:")[0]
    text = text.replace('grid: ["ceil_div(n, 256)"]', "grid: [1024]")
    # the kernel's int n cannot hold 549755813888: since specs are evaluated on their shapes at load, that
    # alone is refused first; the scalar passed here fits, so the arrays' 6 TiB are what is refused
    huge = text + "shapes:\n  - {label: huge, n: 549755813888}\n"
    write(tmp_path, "vector_add.yaml", huge.replace("{name: n, dtype: int32, value: n}",
                                                    '{name: n, dtype: int32, value: "n // 4096"}'))
    for cmd in ("check", "bench", "optimize"):
        r = run_cli(cmd, str(tmp_path / "vector_add.cl"), "--device", "cpu")
        assert r.returncode == 2, (cmd, r.stderr)
        assert "shape huge: the arrays need 6.0 TiB" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "runs").exists()       # optimize refused before making a run directory
    write(tmp_path, "vector_add.yaml", huge)
    r = run_cli("check", str(tmp_path / "vector_add.cl"), "--device", "cpu")
    assert r.returncode == 2 and "int32 value 'n' is 549755813888" in r.stderr, r.stderr
