"""The CuPy backend on a real CUDA GPU (skipped cleanly without one)."""

import pytest

from kerntune.backends import DeviceRef
from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import spec_shapes, verification_shapes
from tests.conftest import REPO, write

pytestmark = pytest.mark.gpu

BF16_SPEC = """
kernel: scale_bf16
args:
  - {name: y, dtype: bf16, shape: [n], intent: out}
  - {name: x, dtype: bf16, shape: [n], intent: in}
  - {name: alpha, dtype: fp32, value: 0.5}
  - {name: n, dtype: int32, value: n}
launch: {grid: ["ceil_div(n, 256)"], block: [256]}
shapes: [{n: 4096}, {n: 1048576}]
reference: {code: "def ref(x, alpha):\\n    return x * alpha\\n", function: ref}
"""
BF16_KERNEL = """
#include <cuda_bf16.h>
extern "C" __global__ void scale_bf16(__nv_bfloat16* y, const __nv_bfloat16* x, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(__bfloat162float(x[i]) * alpha);
}
"""


@pytest.fixture(scope="module")
def gpu():
    with DeviceWorker(DeviceRef("cupy", 0)) as w:
        yield w


def _req(spec_path, source, name, timing=None, seed=5):
    spec = load_file(spec_path).spec
    return EvalRequest(candidate=KernelInstance(source, name, "cuda"), spec=spec, base_dir=str(spec_path.parent),
                       verify_shapes=tuple(verification_shapes(spec)),
                       time_shapes=tuple(spec_shapes(spec)) if timing else (), seed=seed, timing=timing)


def test_vector_add_verifies_and_times(gpu):
    r = gpu.evaluate(_req(REPO / "kernels/examples/vector_add.yaml",
                          (REPO / "kernels/examples/vector_add.cu").read_text(), "vector_add",
                          TimingOptions(warmup=5, repeats=20)), 300)
    assert r.status is Status.OK, r.message
    assert r.resources.source == "cupy" and r.resources.registers > 0
    assert r.copy_bandwidth.gbs > 100
    # 4K elements (48 KB) are a few microseconds of launch latency; 16M elements (200 MB) stream
    big = max(r.timings, key=lambda t: t.bytes_moved)
    assert big.pct_of_copy > 30, big


def test_bf16_arguments(gpu, tmp_path):
    spec = write(tmp_path, "scale.yaml", BF16_SPEC)
    r = gpu.evaluate(_req(spec, BF16_KERNEL, "scale_bf16"), 300)
    assert r.status is Status.OK, r.message


def test_illegal_address_is_a_crash_and_the_worker_recovers(gpu, tmp_path):
    spec = write(tmp_path, "scale.yaml", BF16_SPEC)
    wild = BF16_KERNEL.replace("if (i < n) y[i]", "y[(long long)i * 1099511627776LL]")
    r = gpu.evaluate(_req(spec, wild, "scale_bf16"), 300)
    assert r.status is Status.CRASH
    assert gpu.evaluate(_req(spec, BF16_KERNEL, "scale_bf16"), 300).status is Status.OK


def test_hung_kernel_times_out(gpu, tmp_path):
    spec = write(tmp_path, "scale.yaml", BF16_SPEC)
    hang = BF16_KERNEL.replace("if (i < n) y[i] =", "while (true) y[i] =")
    r = gpu.evaluate(_req(spec, hang, "scale_bf16"), 20)
    assert r.status is Status.TIMEOUT
    assert gpu.evaluate(_req(spec, BF16_KERNEL, "scale_bf16"), 300).status is Status.OK


def test_compile_error(gpu, tmp_path):
    spec = write(tmp_path, "scale.yaml", BF16_SPEC)
    broken = BF16_KERNEL.replace("int i = blockIdx.x", "int i = undeclared_name + blockIdx.x")
    assert broken != BF16_KERNEL
    r = gpu.evaluate(_req(spec, broken, "scale_bf16"), 300)
    assert r.status is Status.COMPILE_ERROR and "error" in r.compile_log


# --- templated kernels and extension sources (CuPy RawModule with name_expressions) ------------------
TEMPLATED_SPEC = """
kernel: "{kernel}"
args:
  - {{name: y, dtype: {dt}, shape: [n], intent: out}}
  - {{name: x, dtype: {dt}, shape: [n], intent: in}}
  - {{name: n, dtype: uint32, value: n}}
launch: {{grid: ["ceil_div(n, {block})"], block: [{block}]}}
shapes: [{{n: 4096}}, {{n: 100003}}]
reference: {{code: "def ref(x):\\n    return 3 * x\\n", function: ref}}
"""
TEMPLATED_KERNEL = """
#include <cuda_bf16.h>
namespace ext {
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <typename T, unsigned THREADS, int K = 3>
__global__ void scale(T* y, const T* x, unsigned n) {
  const unsigned i = blockIdx.x * THREADS + threadIdx.x;
  if (i < n) y[i] = from_f<T>(K * to_f(x[i]));
}
}
"""


@pytest.mark.parametrize("kernel,dt,block", [("ext::scale<__nv_bfloat16, 128>", "bf16", 128),
                                             ("scale<float, 256>", "fp32", 256)])
def test_templated_kernel_through_name_expressions(gpu, tmp_path, kernel, dt, block):
    spec = write(tmp_path, "s.yaml", TEMPLATED_SPEC.format(kernel=kernel, dt=dt, block=block))
    r = gpu.evaluate(_req(spec, TEMPLATED_KERNEL, kernel, TimingOptions(warmup=2, repeats=5)), 300)
    assert r.status is Status.OK, r.message
    assert r.resources.registers > 0


def test_extension_source_bench_and_optimize(tmp_path):
    """The issue's kernel as an extension source: extracted implicitly, verified and timed, optimized."""
    from tests.conftest import run_cli

    src = REPO / "tests/data/extensions/csrc/attention/merge_attn_states.cu"
    spec = REPO / "tests/data/extensions/expected/merge_attn_states_kernel.yaml"
    r = run_cli("bench", str(src), "--spec", str(spec), "--device", "0", "--repeats", "10", "--warmup", "2")
    assert r.returncode == 0, r.stderr
    r = run_cli("optimize", str(src), "--spec", str(spec), "--device", "0", "--rounds", "1", "--evaluations", "12",
                "--repeats", "10", "--final-repeats", "10", "--run-dir", str(tmp_path / "run"), "--json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "run" / "best.cu").exists() and (tmp_path / "run" / "spec.yaml").exists()
    r = run_cli("bench", str(tmp_path / "run" / "original" / "merge_attn_states.cu"), "--against",
                str(tmp_path / "run" / "best.cu"), "--spec", str(tmp_path / "run" / "spec.yaml"), "--device", "0",
                "--repeats", "10")
    assert r.returncode == 0, r.stderr


def test_compute_sanitizer_finds_an_out_of_bounds_read(gpu, tmp_path):
    """The CUDA memory checker: a kernel that reads one element past its input (and gets the right answer
    from whatever lies there) is clean to verification and a memory error to compute-sanitizer."""
    from kerntune.engine.checker import MemoryChecker, check_shapes, compute_sanitizer
    from kerntune.results import CheckStatus

    if compute_sanitizer() is None:
        pytest.skip("compute-sanitizer is not on PATH")
    spec_path = write(tmp_path, "s.yaml", BF16_SPEC)
    spec = load_file(spec_path).spec
    clean = KernelInstance(BF16_KERNEL, "scale_bf16", "cuda", label="clean")
    oob = KernelInstance(BF16_KERNEL.replace("__bfloat162float(x[i]) * alpha",
                                             "__bfloat162float(x[i]) * alpha + 0.0f * __bfloat162float(x[i + 1])"),
                         "scale_bf16", "cuda", label="oob")
    checker = MemoryChecker(gpu.info)
    shapes = check_shapes(spec)
    assert checker.check(clean, spec, str(tmp_path), shapes, 1).status is CheckStatus.CLEAN
    report = checker.check(oob, spec, str(tmp_path), shapes, 1)
    assert report.status is CheckStatus.MEMORY_ERROR and report.tool == "compute-sanitizer"
    assert "Invalid __global__ read" in report.report


def test_compute_sanitizer_judges_the_source_not_the_optimizer(gpu):
    """reduce_sum naive.cu: `if (tid == 0) total += partial[0]` compiles (optimized) to a shared load by every
    thread; at n = 600 a block reduces three chunks, so thread 0's next write of partial[0] follows the
    other threads' reads without a barrier. The checker runs the -G build: clean. A real race (every
    thread writes partial[0]) is still found."""
    from dataclasses import replace

    from kerntune.engine.checker import MemoryChecker, compute_sanitizer
    from kerntune.kernelfile import load_kernel
    from kerntune.results import CheckStatus
    from kerntune.spec.shapes import Shape

    if compute_sanitizer() is None:
        pytest.skip("compute-sanitizer is not on PATH")
    kf = load_kernel(REPO / "kernels/classic/reduce_sum/naive.cu")
    shape = Shape.of({"n": 600}, label="n=600", holdout=True)
    original = kf.instance("original")
    checker = MemoryChecker(gpu.info)
    report = checker.check(original, kf.spec, str(kf.loaded.base_dir), [shape], 1)
    assert report.status is CheckStatus.CLEAN, report.report
    racy = original.source.replace("if (tid == 0)\n            total += partial[0];",
                                   "total += partial[0];\n        partial[0] = 0u;")
    assert racy != original.source
    report = checker.check(replace(original, source=racy), kf.spec, str(kf.loaded.base_dir), [shape], 1)
    assert report.status is CheckStatus.MEMORY_ERROR, report.message
