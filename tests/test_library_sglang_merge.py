"""The SGLang kernel merge_attn_states_lse in the kernel library: the NumPy
reference and its input generator, the baseline kernels (OpenCL verified on the
CPU, CUDA compiled offline) and both templates (every OpenCL instance verified
on the CPU, every CUDA instance compiled for sm_90), with the both -inf case
defined as v = v_a, s = -inf and checked on the kernels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kerntune.engine.evaluate import EvalRequest, KernelInstance, resolve_launch
from kerntune.engine.userfunc import load_function
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import spec_shapes, verification_shapes
from kerntune.tuner.template import load_template
from tests.conftest import REPO, run_cli
from tests.library import compile_every_instance, verify_every_instance

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too

KDIR = REPO / "kernels" / "sglang" / "merge_attn_states_lse"
BASE_CU = KDIR / "merge_attn_states_lse.cu"
BASE_CL = KDIR / "merge_attn_states_lse.cl"
CU_TEMPLATE = REPO / "templates" / "sglang" / "merge_attn_states_lse.cu.j2"
CL_TEMPLATE = REPO / "templates" / "sglang" / "merge_attn_states_lse.cl.j2"
SPECS = {"bf16": KDIR / "spec.yaml", "fp16": KDIR / "fp16.yaml", "fp32": KDIR / "fp32.yaml"}
ITEMSIZE = {"bf16": 2, "fp16": 2, "fp32": 4}
DTYPES = list(SPECS)


def reference_module():
    spec = load_file(SPECS["bf16"]).spec
    merge = load_function(spec.reference, KDIR, "reference")
    make = load_function(spec.inputs, KDIR, "inputs")
    return merge, make


def spec_variant(tmp_path: Path, dtype: str, inputs: str | None = None, head_dims: tuple[int, ...] = ()) -> Path:
    """A copy of a dtype's spec in tmp_path (reference paths made absolute), with
    another input generator or with small shapes of the given head dims."""
    text = SPECS[dtype].read_text().replace("reference.py:", f"{KDIR / 'reference.py'}:")
    if inputs:
        text = text.replace(":make_inputs", f":{inputs}")
    if head_dims:
        text = text.replace("  D: {multiple_of: 8}", "  D: {multiple_of: 1}")
        head = text[:text.index("shapes:\n")]
        shapes = "".join(f"  - {{label: d{d}-{i}, N: {n}, H: {h}, D: {d}}}\n"
                         for i, d in enumerate(head_dims) for n, h in ((3, 5), (1, 16)))
        text = head + "shapes:\n" + shapes + "reference" + text.split("\nreference", 1)[1]
    path = tmp_path / f"{dtype}.yaml"
    path.write_text(text)
    return path


# --- the reference and the input generator ------------------------------------------------------

def test_reference_matches_the_formula_on_finite_lses():
    merge, _ = reference_module()
    rng = np.random.default_rng(0)
    n, h, d = 3, 4, 8
    v_a, v_b = rng.uniform(-1, 1, (n, h, d)), rng.uniform(-1, 1, (n, h, d))
    s_a, s_b = rng.normal(0, 5, (n, h)), rng.normal(0, 5, (n, h))
    out = merge(v_a=v_a, s_a=s_a, v_b=v_b, s_b=s_b, num_tokens=n, num_heads=h, head_dim=d)
    w_a = 1.0 / (1.0 + np.exp(s_b - s_a))
    np.testing.assert_allclose(out["v"], v_a * w_a[..., None] + v_b * (1 - w_a)[..., None], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["s"], np.logaddexp(s_a, s_b), rtol=1e-12)


def test_reference_defines_the_special_cases():
    merge, _ = reference_module()
    inf = np.inf
    s_a = np.array([[-inf, -inf, inf, inf, 2.0, -inf, 100.0]])
    s_b = np.array([[-inf, inf, -inf, inf, -inf, 3.0, 0.0]])
    h, d = s_a.shape[1], 4
    v_a = np.arange(h * d, dtype=np.float64).reshape(1, h, d) + 1
    v_b = -v_a
    out = merge(v_a=v_a, s_a=s_a, v_b=v_b, s_b=s_b, num_tokens=1, num_heads=h, head_dim=d)
    v, s = out["v"][0], out["s"][0]
    # both -inf (+inf counts as -inf): v = v_a exactly, s = -inf, no NaN
    for i in range(4):
        assert np.array_equal(v[i], v_a[0, i]) and s[i] == -inf
    assert np.array_equal(v[4], v_a[0, 4]) and s[4] == 2.0        # only s_b empty
    assert np.array_equal(v[5], v_b[0, 5]) and s[5] == 3.0        # only s_a empty
    np.testing.assert_allclose(v[6], v_a[0, 6], rtol=1e-40)         # difference of 100: w_b = e^-100
    assert s[6] == 100.0
    assert not np.isnan(v).any() and not np.isnan(s).any()


def test_input_generator_injects_every_special_case():
    _, make = reference_module()
    x = make({"N": 16, "H": 32, "D": 8}, np.random.default_rng(5))
    assert x["v_a"].shape == (16, 32, 8) and x["s_a"].shape == (16, 32)
    assert x["v_a"].min() >= -1 and x["v_a"].max() <= 1
    s_a, s_b = x["s_a"].astype(np.float64), x["s_b"].astype(np.float64)
    finite = np.isfinite(s_a) & np.isfinite(s_b)
    assert (np.isneginf(s_a) & np.isfinite(s_b)).any()
    assert (np.isneginf(s_b) & np.isfinite(s_a)).any()
    assert (np.isneginf(s_a) & np.isneginf(s_b)).any()
    assert (np.isposinf(s_a) & np.isfinite(s_b)).any()
    with np.errstate(invalid="ignore"):
        diff = np.where(finite, s_a - s_b, 0.0)
    assert (diff > 80).any() and (diff < -80).any()
    assert 2 < np.median(np.abs(s_a[finite])) < 6          # normal with scale 5: median |x| about 3.4
    # small shapes still get the both -inf case
    small = make({"N": 1, "H": 8, "D": 8}, np.random.default_rng(1))
    assert (np.isneginf(small["s_a"]) & np.isneginf(small["s_b"])).any()


# --- the specs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_spec_shapes_and_bytes(dtype):
    spec = load_file(SPECS[dtype]).spec
    assert spec.kernel == f"merge_attn_states_lse_{dtype}"
    shapes = spec_shapes(spec)
    assert 10 <= len(shapes) <= 14 and all(s.label and "=" not in s.label for s in shapes)
    assert {s.as_dict()["H"] for s in shapes} == {8, 32, 64}
    assert min(s.as_dict()["N"] for s in shapes) == 1 and max(s.as_dict()["N"] for s in shapes) == 16384
    assert 4 <= len(spec_shapes(spec, "cpu")) <= 6
    from kerntune.engine.inputs import bytes_moved

    n, h, d = 7, 5, 128
    assert bytes_moved(spec, {"N": n, "H": h, "D": d}) == 3 * n * h * d * ITEMSIZE[dtype] + 3 * n * h * 4


@pytest.mark.parametrize("template", [CU_TEMPLATE, CL_TEMPLATE], ids=["cuda", "opencl"])
def test_template_baseline_has_the_baseline_launch(template):
    t = load_template(template)
    for spec_path in SPECS.values():
        spec = load_file(spec_path).spec
        inst = t.instance(t.baseline, spec)
        base = KernelInstance("", spec.kernel, t.lang)
        for shape in verification_shapes(spec):
            assert resolve_launch(spec, inst, shape) == resolve_launch(spec, base, shape)
        assert "__expf" not in inst.source and "native_" not in inst.source and "__launch_bounds__" not in inst.source


# --- OpenCL on the CPU ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_opencl_baseline_verifies_on_cpu(dtype):
    r = run_cli("bench", str(BASE_CL), "--spec", str(SPECS[dtype]), "--device", "cpu", "--shape-set", "cpu",
                "--repeats", "2", "--warmup", "1", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["kernel"]["status"] == "ok"
    assert report["kernel"]["verification"]["ok"]


def _evaluate(worker, source: str, name: str, spec_path: Path, launch=None, params=()) -> "object":
    loaded = load_file(spec_path)
    spec = loaded.spec
    inst = KernelInstance(source, name, "opencl", launch=launch, params=tuple(params))
    return worker.evaluate(EvalRequest(inst, spec, str(loaded.base_dir), tuple(verification_shapes(spec, "cpu")),
                                       (), seed=23, timing=None), 300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_both_neg_inf_gives_v_a_and_neg_inf_on_the_kernels(worker, tmp_path, dtype):
    """Every pair empty (-inf, or +inf counted as -inf): the baseline and template
    instances must return v = v_a and s = -inf (verification compares -inf exactly)."""
    spec_path = spec_variant(tmp_path, dtype, inputs="make_empty_inputs")
    spec = load_file(spec_path).spec
    r = _evaluate(worker, BASE_CL.read_text(), spec.kernel, spec_path)
    assert r.status is Status.OK, r.message
    t = load_template(CL_TEMPLATE)
    for change in ({}, {"VEC": 8, "HPB": 8, "WEIGHTS": "shared"}, {"VEC": 4, "HPB": 4, "FAST_MATH": True}):
        config = {**t.baseline, **change}
        inst = t.instance(config, spec)
        r = _evaluate(worker, inst.source, inst.name, spec_path, t.decl.launch, config.items())
        assert r.status is Status.OK, f"{config}: {r.message}"


def test_production_nan_behaviour_is_caught(worker, tmp_path):
    """Control: a kernel that leaves the both -inf case to the formula (NaN, as the
    production kernels do) fails verification on the all-empty inputs."""
    spec_path = spec_variant(tmp_path, "fp32", inputs="make_empty_inputs")
    source = BASE_CL.read_text()
    guard = "if (m == -INFINITY) {"
    assert guard in source
    nan_source = source.replace(guard, "if (0) {")
    r = _evaluate(worker, nan_source, "merge_attn_states_lse_fp32", spec_path)
    assert r.status is Status.WRONG_RESULT


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_opencl_template_instance_verifies_on_cpu(worker, dtype):
    # every instance in bf16 (the serving dtype); in fp16 and fp32, which differ from it only in the loads'
    # and stores' conversions, a subset holding every pair of parameter values (a third of the instances:
    # each sweep took 50-60 s on a 2-core EPYC)
    assert verify_every_instance(worker, CL_TEMPLATE, SPECS[dtype], shape_set="cpu", every=dtype == "bf16") == []


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_instances_fall_back_to_scalar_steps_on_odd_head_dims(worker, tmp_path, dtype):
    """head_dim not a multiple of VEC: the vector configurations take their scalar path."""
    spec_path = spec_variant(tmp_path, dtype, head_dims=(20, 37))
    spec = load_file(spec_path).spec
    t = load_template(CL_TEMPLATE)
    changes = ({"VEC": 8, "HPB": 0}, {"VEC": 8, "HPB": 16, "EPT": 2, "WEIGHTS": "shared"},
               {"VEC": 4, "THREADS": 64, "HPB": 2, "FAST_MATH": True})
    for change in changes:
        config = {**t.baseline, **change}
        inst = t.instance(config, spec)
        loaded = load_file(spec_path)
        r = worker.evaluate(EvalRequest(inst, spec, str(loaded.base_dir), tuple(verification_shapes(spec)), (),
                                        seed=29, timing=None), 300)
        assert r.status is Status.OK, f"{config}: {r.message}"


# --- CUDA, compiled offline -----------------------------------------------------------------------

@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_baseline_compiles_offline(dtype):
    r = run_cli("check", str(BASE_CU), "--spec", str(SPECS[dtype]), "--offline", "--json")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_cuda_template_instance_compiles(dtype):
    report, bad = compile_every_instance(CU_TEMPLATE, SPECS[dtype])
    assert bad == [], [(e.key, e.message) for e in bad[:5]]
    counts = report.counts()
    assert counts.get("compiled", 0) >= 100, counts
    baseline = report.entries[0]
    assert baseline.status == "compiled" and baseline.resources.spill_store_bytes == 0
