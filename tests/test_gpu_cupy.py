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
    assert all(t.pct_of_copy > 1 for t in r.timings)


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
    r = gpu.evaluate(_req(spec, BF16_KERNEL.replace("alpha;", "alpha"), "scale_bf16"), 300)
    assert r.status is Status.COMPILE_ERROR and "error" in r.compile_log
