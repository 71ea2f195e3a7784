"""The SGLang kernels silu_and_mul and fused_add_rmsnorm in the kernel library
(kernels/sglang/{silu_and_mul,fused_add_rmsnorm}, templates/sglang/): the specs describe serving
shapes plus a CPU shape set, the OpenCL baselines verify on the CPU against the NumPy references in
every dtype, every OpenCL template instance verifies on the CPU, the CUDA baselines and every CUDA
template instance compile for sm_90 with nvcc, and the bf16 conversions round to nearest even."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from kerntune.dtypes import bf16_from_float
from kerntune.engine.evaluate import EvalRequest, KernelInstance, resolve_launch
from kerntune.kernelfile import load_kernel
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import spec_shapes, verification_shapes
from kerntune.tuner.space import Space
from kerntune.tuner.template import check_against_spec, load_template
from tests.conftest import REPO, run_cli
from tests.library import compile_every_instance, verify_every_instance

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too

KERNELS = REPO / "kernels" / "sglang"
TEMPLATES = REPO / "templates" / "sglang"
NAMES = ["silu_and_mul", "fused_add_rmsnorm"]
SPECS = {"bf16": "spec.yaml", "fp16": "fp16.yaml", "fp32": "fp32.yaml"}
CASES = [(name, dtype) for name in NAMES for dtype in SPECS]
IDS = [f"{name}-{dtype}" for name, dtype in CASES]


def _spec_path(name: str, dtype: str):
    return KERNELS / name / SPECS[dtype]


def _padded(launch: tuple) -> tuple:
    grid, block, shared = launch
    return grid + (1,) * (3 - len(grid)), block + (1,) * (3 - len(block)), shared


# --- specs -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_spec_has_serving_and_cpu_shapes(name, dtype):
    spec = load_file(_spec_path(name, dtype)).spec
    assert spec.kernel == f"{name}_{dtype}"
    assert all(a.dtype == dtype for a in spec.arrays)
    assert spec.sizes["d"].multiple_of == 8
    serving = spec_shapes(spec)
    assert 12 <= len(serving) <= 16
    assert {s.as_dict()["d"] for s in serving} == ({11008, 13824, 28672, 18944} if name == "silu_and_mul"
                                                   else {4096, 5120, 8192, 3584})
    tokens = [s.as_dict()["T"] for s in serving]
    assert any(t == 1 for t in tokens) and all(t <= 64 or 512 <= t <= 16384 for t in tokens)
    assert all(("-decode-T" in s.label) == (s.as_dict()["T"] <= 64) for s in serving)
    cpu = spec_shapes(spec, "cpu")
    assert 4 <= len(cpu) <= 6
    assert all(1 <= s.as_dict()["T"] <= 64 and 64 <= s.as_dict()["d"] <= 4096 for s in cpu)


def test_each_kernel_file_finds_its_folder_spec():
    for name in NAMES:
        for ext in ("cu", "cl"):
            assert load_kernel(KERNELS / name / f"{name}.{ext}").loaded.origin == KERNELS / name / "spec.yaml"


# --- references --------------------------------------------------------------------------------------

def _load_reference(name: str, function: str):
    from kerntune.engine.userfunc import load_function
    from kerntune.spec.model import FunctionRef

    return load_function(FunctionRef(file="reference.py", function=function), KERNELS / name, "reference")


def test_silu_reference_matches_the_formula():
    fn = _load_reference("silu_and_mul", "silu_and_mul")
    x = np.array([[0.0, 1.0, -2.0, 100.0, -100.0, 3.0, 0.5, -1.0]], dtype=np.float32)
    out = fn(input=x, d=4)
    a = x[0, :4].astype(np.float64)
    np.testing.assert_allclose(out[0], a / (1 + np.exp(-a)) * x[0, 4:], rtol=1e-12)
    assert out.shape == (1, 4) and np.isfinite(out).all()


@pytest.mark.parametrize("dtype", list(SPECS))
def test_rmsnorm_reference_rounds_the_residual_to_the_storage_type(dtype):
    fn = _load_reference("fused_add_rmsnorm", f"fused_add_rmsnorm_{dtype}")
    rng = np.random.default_rng(3)
    inp, res = rng.uniform(-1, 1, (2, 3, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, 16).astype(np.float32)
    out = fn(input=inp, residual=res, weight=w, eps=1e-6, d=16)
    x = inp + res
    expected_res = {"bf16": (bf16_from_float(x).astype(np.uint32) << 16).view(np.float32),
                    "fp16": x.astype(np.float16).astype(np.float32), "fp32": x}[dtype]
    np.testing.assert_array_equal(out["residual"], expected_res)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out["input"], x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * w,
                               rtol=1e-12)


# --- templates: baseline configuration = baseline kernel -------------------------------------------

@pytest.mark.parametrize("ext", ["cu", "cl"])
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_template_baseline_uses_the_spec_launch(name, dtype, ext):
    spec = load_file(_spec_path(name, dtype)).spec
    template = load_template(TEMPLATES / f"{name}.{ext}.j2")
    check_against_spec(template, spec)
    inst = template.instance(template.baseline, spec)
    assert inst.name == spec.kernel and f" {spec.kernel}(" in inst.source
    plain = KernelInstance("", spec.kernel, template.lang)
    for set_name in (None, "cpu"):
        for shape in verification_shapes(spec, set_name):
            assert _padded(resolve_launch(spec, inst, shape)) == _padded(resolve_launch(spec, plain, shape)), shape


@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_opencl_template_baseline_reproduces_the_baseline_kernel_bit_for_bit(worker, name, dtype):
    """Same algorithm, same order of operations: the outputs of the template's first configuration
    equal those of the hand-written baseline exactly on every CPU shape."""
    path = _spec_path(name, dtype)
    loaded = load_file(path)
    template = load_template(TEMPLATES / f"{name}.cl.j2")
    baseline = load_kernel(KERNELS / name / f"{name}.cl", path).instance()
    candidate = template.instance(template.baseline, loaded.spec)
    req = EvalRequest(candidate, loaded.spec, str(loaded.base_dir), tuple(verification_shapes(loaded.spec, "cpu")),
                      (), seed=7, reference=baseline, timing=None)
    r = worker.evaluate(req, 300)
    assert r.status is Status.OK, r.message
    assert r.verification.reference == "kernel"
    assert all(a.max_abs_err == 0 for s in r.verification.shapes for a in s.args if a.max_abs_err is not None)


@pytest.mark.parametrize("ext,limit", [("cu", 120), ("cl", 48)])
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_template_spaces_stay_moderate(name, dtype, ext, limit):
    spec = load_file(_spec_path(name, dtype)).spec
    template = load_template(TEMPLATES / f"{name}.{ext}.j2")
    space = Space.of(template)
    shapes = tuple(verification_shapes(spec, None if ext == "cu" else "cpu"))
    feasible = [c for c in space.configs() if not space.violated(c, shapes)]
    assert feasible[0] == template.baseline
    assert 8 <= len(feasible) <= limit


@pytest.mark.parametrize("dtype", list(SPECS))
def test_rmsnorm_register_cache_reloads_what_does_not_fit(worker, dtype):
    """A cached configuration applied to rows longer than its cache (which the size restriction keeps
    out of tuning) still computes the right thing: the cache covers the start of the row and the rest
    is read again in pass 2."""
    path = _spec_path("fused_add_rmsnorm", dtype)
    loaded = load_file(path)
    template = load_template(TEMPLATES / "fused_add_rmsnorm.cl.j2")
    config = {**template.baseline, "VEC": 2, "CACHE_VECS": 4}          # 128 x 2 x 4 = 1024 elements cached
    shapes = tuple(verification_shapes(loaded.spec, "cpu"))
    assert Space.of(template).violated(config, shapes)                   # d = 4096 and 1368 exceed the cache
    req = EvalRequest(template.instance(config, loaded.spec), loaded.spec, str(loaded.base_dir), shapes, (), seed=3,
                      timing=None)
    r = worker.evaluate(req, 300)
    assert r.status is Status.OK, r.message


# --- OpenCL on the CPU -------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_opencl_baseline_verifies_on_cpu(name, dtype):
    r = run_cli("bench", str(KERNELS / name / f"{name}.cl"), "--spec", str(_spec_path(name, dtype)),
                "--device", "cpu", "--shape-set", "cpu", "--repeats", "3", "--warmup", "1", "--json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    result = report["kernel"]
    assert result["status"] == "ok"
    assert result["verification"]["reference"] == "numpy"
    checked = result["verification"]["shapes"]
    # 5 shapes and a held-out one, each on 7 input distributions
    assert len(checked) == 6 * 7 and any(s["holdout"] for s in checked)
    assert {s["distribution"] for s in checked} == {"spec", "shifted", "negative", "large", "small", "ties", "wide"}
    assert {a["name"] for s in checked for a in s["args"]} >= (
        {"out", "input"} if name == "silu_and_mul" else {"input", "residual", "weight"})
    assert len(report["rows"]) == 5 and all(row["kernel"] for row in report["rows"])


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_every_opencl_template_instance_verifies_on_cpu(worker, name, dtype):
    failures = verify_every_instance(worker, TEMPLATES / f"{name}.cl.j2", _spec_path(name, dtype), shape_set="cpu")
    assert not failures, "\n".join(failures)


BF16_PROBE = """
__kernel void to_bf16(__global ushort* out, __global const float* x, const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        out[i] = float_to_bf16(x[i]);
}
"""

BF16_PROBE_V8 = """
__kernel void to_bf16(__global ushort* out, __global const float* x, const int n)
{
    const int i = get_global_id(0);
    if (i * 8 < n)
        vstore8(float_to_bf16_v(vload8(i, x)), i, out);
}
"""


def _bf16_helpers(source: str) -> str:
    """The float -> bf16 functions of a kernel source (scalar, and the vector one when present)."""
    out = []
    for head in ("inline ushort float_to_bf16(", "float_to_bf16_v("):
        if head not in source:
            continue
        start = source.rindex("inline", 0, source.index(head) + 1)
        out.append(source[start:source.index("\n}\n", start) + 3])
    return "\n".join(out)


def _tie_cases() -> np.ndarray:
    """Ties (both parities), values just off ties, the largest finite values, infinities, NaN,
    subnormals and signed zeros, as float32."""
    bits = []
    for hi in (0x3F80, 0x3F81, 0xBF80, 0xBF81, 0x4049, 0x7F7F, 0xFF7F, 0x0001, 0x8000, 0x0000):
        for lo in (0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF):
            bits.append((hi << 16) | lo)
    bits += [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00000]
    values = np.array(bits, dtype=np.uint32).view(np.float32)
    rng = np.random.default_rng(5)
    extra = rng.uniform(-4, 4, 4096 - len(values)).astype(np.float32)
    return np.concatenate([values, extra])


@pytest.mark.parametrize("source", ["silu_and_mul.cl", "fused_add_rmsnorm.cl", "silu_and_mul.cl.j2",
                                    "fused_add_rmsnorm.cl.j2", "silu_and_mul.cl.j2@8", "fused_add_rmsnorm.cl.j2@8"])
def test_opencl_float_to_bf16_rounds_to_nearest_even(worker, tmp_path, source):
    """The OpenCL float -> bf16 conversions give exactly __float2bfloat16's bits (round to nearest
    even; NaN stays NaN), scalar and 8-wide."""
    name = source.split(".")[0]
    if source.endswith(".cl"):
        text = (KERNELS / name / source).read_text()
        helpers, probe = _bf16_helpers(text), BF16_PROBE
    else:
        template = load_template(TEMPLATES / source.split("@")[0])
        spec = load_file(_spec_path(name, "bf16")).spec
        vec = int(source.split("@")[1]) if "@" in source else 1
        text = template.render({**template.baseline, "VEC": vec}, spec)
        helpers, probe = _bf16_helpers(text), BF16_PROBE_V8 if vec == 8 else BF16_PROBE
    (tmp_path / "probe.cl").write_text(helpers + probe)
    values = _tie_cases()
    np.save(tmp_path / "values.npy", values)
    (tmp_path / "probe.yaml").write_text(textwrap.dedent(f"""
        kernel: to_bf16
        sizes: {{n: {{multiple_of: 8}}}}
        args:
          - {{name: out, dtype: bf16, shape: [n], intent: out}}
          - {{name: x, dtype: fp32, shape: [n], intent: in}}
          - {{name: n, dtype: int32, value: n}}
        launch: {{grid: ["ceil_div(n, 64)"], block: [64]}}
        shapes: [{{n: {len(values)}}}]
        holdout_shapes: []
        inputs:
          code: |
            import numpy as np
            def make(sizes):
                return {{"x": np.load({str(tmp_path / "values.npy")!r})}}
          function: make
        reference:
          code: |
            import numpy as np
            def ref(x):
                u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
                r = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16) << 16
                return np.where(np.isnan(x), np.float32("nan"), r.astype(np.uint32).view(np.float32))
          function: ref
        tolerance: {{rel_l2: 0.0, atol: 0.0, rtol: 0.0}}
        """))
    loaded = load_file(tmp_path / "probe.yaml")
    inst = KernelInstance((tmp_path / "probe.cl").read_text(), "to_bf16", "opencl")
    r = worker.evaluate(EvalRequest(inst, loaded.spec, str(tmp_path), tuple(spec_shapes(loaded.spec)), (), seed=1,
                                    timing=None), 120)
    assert r.status is Status.OK, r.message


# --- CUDA, offline -----------------------------------------------------------------------------------

@pytest.mark.nvcc
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_cuda_baseline_compiles_offline(name, dtype):
    r = run_cli("check", str(KERNELS / name / f"{name}.cu"), "--spec", str(_spec_path(name, dtype)), "--offline",
                "--json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["resources"]["source"] == "ptxas"
    assert report["resources"]["spill_store_bytes"] == 0
    assert all(not launch["problems"] for launch in report["launches"])


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_every_cuda_template_instance_compiles(name, dtype):
    report, bad = compile_every_instance(TEMPLATES / f"{name}.cu.j2", _spec_path(name, dtype))
    assert not bad, "\n".join(f"{e.key}: {e.status}: {e.message}" for e in bad)
    compiled = [e for e in report.entries if e.status == "compiled"]
    assert compiled and compiled[0].config == load_template(TEMPLATES / f"{name}.cu.j2").baseline
    assert all(not e.resources.spills for e in compiled)
    assert len([e for e in report.entries if e.status != "pruned" or e.reason != "restriction"]) <= 120
