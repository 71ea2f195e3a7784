"""The evaluation engine on the real CPU OpenCL device: verification catches
every way a kernel can be wrong, and isolation survives every way it can fail."""

import os
from pathlib import Path

import pytest

from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import spec_shapes, verification_shapes
from tests.conftest import write

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too

SPEC = """
kernel: vadd
args:
  - {name: c, dtype: fp32, shape: [n], intent: out}
  - {name: a, dtype: fp32, shape: [n], intent: in}
  - {name: b, dtype: fp32, shape: [n], intent: in}
  - {name: n, dtype: int32, value: n}
launch:
  grid: ["ceil_div(n, 64)"]
  block: [64]
shapes:
  - {n: 1024}
  - {n: 4096}
reference: ref.py:vadd
"""
REF = "def vadd(a, b):\n    return a + b\n"

GOOD = """
__kernel void vadd(__global float* c, __global const float* a, __global const float* b, const int n) {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
"""


def request(tmp_path: Path, source: str, spec_text: str = SPEC, timing: TimingOptions | None = None,
            reference: str | None = None, seed: int = 7) -> EvalRequest:
    write(tmp_path, "ref.py", REF)
    spec = load_file(write(tmp_path, "vadd.yaml", spec_text)).spec
    ref = KernelInstance(reference, "vadd", "opencl", label="original") if reference else None
    return EvalRequest(candidate=KernelInstance(source, "vadd", "opencl", label="candidate"), spec=spec,
                       base_dir=str(tmp_path), verify_shapes=tuple(verification_shapes(spec)),
                       time_shapes=tuple(spec_shapes(spec)) if timing else (), seed=seed, reference=ref,
                       timing=timing)


def test_correct_kernel_is_verified_and_timed(worker, tmp_path):
    r = worker.evaluate(request(tmp_path, GOOD, timing=TimingOptions(warmup=2, repeats=12)), 120)
    assert r.status is Status.OK, r.message
    v = r.verification
    assert v.ok and v.reference == "numpy" and v.seed == 7
    # every shape, and a shape the spec does not list, on every input distribution
    assert v.distributions == ["spec", "shifted", "negative", "large", "small", "ties", "wide"]
    assert [(s.holdout, s.distribution) for s in v.shapes] == [
        (h, d) for h in (False, False, True) for d in v.distributions]
    assert len({s.seed for s in v.shapes}) == 3 * 7                # fresh inputs per shape and distribution
    assert len(r.timings) == 2
    for t in r.timings:
        s = t.stats
        assert s.n == 12 and s.warmup == 2 and s.l2_flushed
        assert 0 < s.min_ms <= s.q1_ms <= s.median_ms <= s.q3_ms <= s.max_ms
        assert t.bytes_moved == 3 * 4 * t.shape["n"]
        assert t.achieved_gbs > 0 and t.pct_of_copy is not None and t.pct_of_copy > 0
    assert r.copy_bandwidth is not None and r.copy_bandwidth.gbs > 0


def test_candidate_against_original_kernel(worker, tmp_path):
    fused = GOOD.replace("c[i] = a[i] + b[i];", "{ float x = a[i]; float y = b[i]; c[i] = y + x; }")
    r = worker.evaluate(request(tmp_path, fused, reference=GOOD), 120)
    assert r.status is Status.OK and r.verification.reference == "kernel"


def test_64_bit_outputs_off_by_one_above_2_to_the_53_are_caught(worker, tmp_path):
    # both kernels write values above 2**53, where a float64 cannot tell n from n + 1
    spec = SPEC.replace("{name: c, dtype: fp32", "{name: c, dtype: int64").replace("reference: ref.py:vadd\n", "")
    original = GOOD.replace("__global float* c", "__global long* c").replace(
        "c[i] = a[i] + b[i];", "c[i] = (1L << 60) + 2L * i;")
    off = original.replace("2L * i;", "2L * i + (i & 1);")
    r = worker.evaluate(request(tmp_path, off, spec, reference=original), 120)
    assert r.status is Status.WRONG_RESULT, r.message
    c = r.verification.shapes[0].args[0]
    assert c.reason == "tolerance" and c.first_bad_index == [1] and c.got == 2**60 + 3 and c.expected == 2**60 + 2
    assert worker.evaluate(request(tmp_path, original, spec, reference=original), 120).status is Status.OK


def test_unwritten_outputs_are_caught(worker, tmp_path):
    lazy = GOOD.replace("if (i < n)", "if (i < n && i % 2 == 0)")
    r = worker.evaluate(request(tmp_path, lazy), 120)
    assert r.status is Status.WRONG_RESULT
    bad = [a for s in r.verification.shapes for a in s.args if not a.ok]
    assert bad[0].name == "c" and bad[0].reason == "unwritten" and bad[0].first_bad_index == [1]


def test_writing_into_an_input_is_caught(worker, tmp_path):
    sneaky = GOOD.replace("c[i] = a[i] + b[i];", "{ c[i] = a[i] + b[i]; ((__global float*)a)[i] = 0.0f; }")
    r = worker.evaluate(request(tmp_path, sneaky), 120)
    assert r.status is Status.WRONG_RESULT
    bad = [a for a in r.verification.shapes[0].args if not a.ok]
    assert [(a.name, a.reason) for a in bad] == [("a", "input modified")]


def test_right_on_listed_shapes_wrong_on_a_tail(worker, tmp_path):
    # four elements per work-item with no tail handling: fine when n % 4 == 0
    chunky = """
    __kernel void vadd(__global float* c, __global const float* a, __global const float* b, const int n) {
        int base = 4 * get_global_id(0);
        if (base + 3 < n) {
            for (int k = 0; k < 4; ++k) c[base + k] = a[base + k] + b[base + k];
        }
    }
    """
    spec = SPEC.replace('"ceil_div(n, 64)"', '"ceil_div(n, 256)"')
    r = worker.evaluate(request(tmp_path, chunky, spec), 120)
    assert r.status is Status.WRONG_RESULT
    listed = [s for s in r.verification.shapes if not s.holdout]
    held = [s for s in r.verification.shapes if s.holdout]
    assert all(s.ok for s in listed) and not any(s.ok for s in held)
    assert "holdout" in r.message


def test_wrong_values_report_errors(worker, tmp_path):
    off = GOOD.replace("a[i] + b[i]", "a[i] + b[i] + 0.001f")
    r = worker.evaluate(request(tmp_path, off), 120)
    assert r.status is Status.WRONG_RESULT
    c = r.verification.shapes[0].args[0]
    assert c.reason == "tolerance" and c.max_abs_err == pytest.approx(0.001, rel=0.05)
    assert c.rel_l2_err > 1e-5 and c.bad_elements > 0


def test_nan_where_reference_is_finite_fails(worker, tmp_path):
    nan = GOOD.replace("a[i] + b[i]", "(i == 5 ? NAN : a[i] + b[i])")
    r = worker.evaluate(request(tmp_path, nan), 120)
    assert r.status is Status.WRONG_RESULT
    c = r.verification.shapes[0].args[0]
    assert c.reason == "nonfinite" and c.first_bad_index == [5] and c.bad_elements == 1
    # the NaN is counted as such, and the error measures say they leave it out
    assert c.nonfinite_elements == 1
    assert "1 element(s) NaN or Inf unlike the reference" in c.describe() and "where both are finite" in c.describe()
    assert "off by more than" not in c.describe()


def test_compile_error_keeps_the_log(worker, tmp_path):
    r = worker.evaluate(request(tmp_path, GOOD.replace("int i =", "int i = undefined_thing +")), 120)
    assert r.status is Status.COMPILE_ERROR
    assert "undefined_thing" in r.compile_log


def test_resource_limit_before_launch(worker, tmp_path):
    spec = SPEC.replace("block: [64]", "block: [65536]").replace('"ceil_div(n, 64)"', "1")
    r = worker.evaluate(request(tmp_path, GOOD, spec), 120)
    assert r.status is Status.RESOURCE_LIMIT and "65536 threads per block" in r.message


def test_dynamic_shared_memory_is_refused_with_a_reason(worker, tmp_path):
    spec = SPEC.replace("block: [64]", "block: [64]\n  shared_mem: 256")
    r = worker.evaluate(request(tmp_path, GOOD, spec), 120)
    assert r.status is Status.LAUNCH_FAILURE and "256 B of dynamic shared memory" in r.message


def test_hung_kernel_times_out_and_the_next_evaluation_works(worker, tmp_path):
    hang = GOOD.replace("if (i < n) c[i] = a[i] + b[i];", "while (1) { c[i] = c[i] + 1.0f; }")
    restarts = worker.restarts
    r = worker.evaluate(request(tmp_path, hang), timeout_s=8)
    assert r.status is Status.TIMEOUT and "time limit of 8 s" in r.message
    assert worker.restarts == restarts + 1
    again = worker.evaluate(request(tmp_path, GOOD), 120)
    assert again.status is Status.OK


def test_out_of_bounds_write_crashes_only_its_worker(worker, tmp_path):
    # a write through a null pointer the compiler cannot see (c == a is false only at run time): a
    # segfault on every OpenCL CPU runtime, where a write merely far away may land in mapped memory
    wild = GOOD.replace("if (i < n) c[i] = a[i] + b[i];",
                        "__global float* p = (__global float*)((size_t)(c == (__global float*)a) * 64); "
                        "if (i < n) p[i] = a[i];")
    r = worker.evaluate(request(tmp_path, wild), 120)
    assert r.status is Status.CRASH and "killed by SIG" in r.message
    again = worker.evaluate(request(tmp_path, GOOD), 120)
    assert again.status is Status.OK


def test_grid_with_more_dimensions_than_the_block(worker, tmp_path):
    # a 3-D grid with a 2-D block must stay a 3-D launch
    spec = SPEC.replace('grid: ["ceil_div(n, 64)"]', 'grid: ["ceil_div(n, 64)", 1, 2]').replace(
        "block: [64]", "block: [64, 1]")
    only_z1 = GOOD.replace("if (i < n)", "if (i < n && get_group_id(2) == 1)")  # only the second z-plane writes
    r = worker.evaluate(request(tmp_path, only_z1, spec), 120)
    assert r.status is Status.OK, r.message


def test_reference_may_ask_for_sizes_and_dtypes(worker, tmp_path):
    write(tmp_path, "ref.py", REF)
    spec = SPEC.replace("reference: ref.py:vadd", "reference: ref2.py:vadd")
    write(tmp_path, "ref2.py", "def vadd(a, b, sizes, dtypes):\n"
                               "    assert dtypes == {'c': 'fp32', 'a': 'fp32', 'b': 'fp32', 'n': 'int32'}\n"
                               "    assert sizes['n'] == a.size\n"
                               "    return a + b\n")
    r = worker.evaluate(request(tmp_path, GOOD, spec), 120)
    assert r.status is Status.OK, r.message


def test_flush_is_64_mib_on_a_cpu_whatever_cache_it_reports_and_twice_a_gpus_l2():
    from kerntune.backends.opencl import flush_bytes
    from kerntune.results import DeviceInfo

    def dev(kind, l2):
        return DeviceInfo(id="opencl:0:0", backend="opencl", lang="opencl", name="x", kind=kind, l2_bytes=l2)
    assert flush_bytes(dev("cpu", 480 * 2**20)) == flush_bytes(dev("cpu", 2 * 2**20)) == 64 * 2**20
    assert flush_bytes(dev("gpu", 50 * 2**20)) == 100 * 2**20
    assert flush_bytes(dev("gpu", 4 * 2**20)) == flush_bytes(dev("gpu", None)) == 64 * 2**20


def test_the_worker_of_a_cpu_device_does_its_host_math_on_one_thread(worker, monkeypatch):
    """NumPy's BLAS helper thread spins after each call (verification's np.dot, a reference's matmul)
    and took one of a 2-core host's cores from the timed kernels: 2x slower runs, medians that flipped
    between recordings. The OpenCL worker runs with one BLAS thread; a value the user set is kept."""
    from kerntune.backends import DeviceRef
    from kerntune.engine.supervisor import worker_env

    worker.start()
    environ = Path(f"/proc/{worker._p.proc.pid}/environ").read_bytes().split(b"\0")
    assert b"OPENBLAS_NUM_THREADS=1" in environ or "OPENBLAS_NUM_THREADS" in os.environ
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    assert worker_env(DeviceRef("opencl"), None) == {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert worker_env(DeviceRef("opencl"), {"X": "y"})["X"] == "y"
    assert worker_env(DeviceRef("cupy"), None) is None          # a GPU's host math keeps every core
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert "OPENBLAS_NUM_THREADS" not in worker_env(DeviceRef("opencl"), None)


def test_the_icd_file_is_replaced_never_rewritten_in_place(tmp_path, monkeypatch):
    """kerntune points the ICD loader at a folder of .icd files it writes. It rewrote them in place
    (write_text) in every process, while other kerntune processes' loaders read them: one that read the
    file truncated saw no Intel platform, took PoCL for opencl:0:0, and an optimize run recorded two devices
    ('pthread-AMD EPYC' in results.json, 'AMD EPYC' in run.json) and was refused by export and score. A
    hard link stands for a reader holding the file: it must keep what it had."""
    from kerntune.backends.opencl import intel_cpu_runtime, prepare_icd_environment

    lib = intel_cpu_runtime()
    if lib is None:
        pytest.skip("Intel's CPU OpenCL runtime is not installed in this environment")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("KERNTUNE_NO_EXTRA_ICD", raising=False)
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    prepare_icd_environment()
    icd = Path(os.environ["OCL_ICD_VENDORS"]) / "kerntune-intel-cpu.icd"
    assert icd.read_text() == f"{lib}\n"
    icd.write_text("/elsewhere/libintelocl.so\n")        # as another environment's kerntune left it
    held = tmp_path / "held.icd"
    os.link(icd, held)
    monkeypatch.delenv("OCL_ICD_VENDORS")
    prepare_icd_environment()
    assert icd.read_text() == f"{lib}\n"
    assert held.read_text() == "/elsewhere/libintelocl.so\n", "the .icd file was rewritten in place"
