"""hoist-invariants on calls of pure helpers: which helpers are pure, which calls move before the loop,
and that the moved call computes what the original did (runtime, Oclgrind, nvcc)."""

from __future__ import annotations

import textwrap

import pytest

from kerntune.agents.rules.base import RewriteState
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.agents.rules.hoist import HoistInvariants
from kerntune.agents.rules.purecall import OUT_PTR, OUT_REF, VALUE, pure_helpers
from kerntune.engine.checker import MemoryChecker, check_shapes, oclgrind_library
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.kernelfile import load_kernel
from kerntune.results import CheckStatus, Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO

MERGE = REPO / "kernels/sglang/merge_attn_states_lse"


def _pure(source: str, lang: str = "opencl") -> dict:
    spec = load_file(MERGE / "fp32.yaml").spec
    st = RewriteState(lang=lang, source=textwrap.dedent(source), kernel="k", spec=spec, launch=spec.launch)
    return pure_helpers(st)


@pytest.mark.parametrize("helper, kinds", [
    # results through pointers it only writes: pure
    ("void f(float s, float* a, float* b) { const float e = exp(-s); *a = e; *b = 1.0f - e; }",
     (VALUE, OUT_PTR, OUT_PTR)),
    # a parameter it changes is its own copy
    ("void f(float s, float* a) { if (s > 1.0f) s = 1.0f; *a = native_exp(s); }", (VALUE, OUT_PTR)),
    # reads its output: *a's value before the call decides
    ("void f(float s, float* a) { *a = *a + s; }", None),
    ("void f(float s, float* a) { *a += s; }", None),
    # memory: an array parameter, a pointer to const data, a global, an atomic
    ("void f(__global const float* x, float* a) { *a = x[0]; }", None),
    ("void f(int i, float* a) { *a = table[i]; }", None),
    ("void f(float s, __global int* n) { atomic_inc(n); }", None),
    ("void f(float s, float* a) { *a = s; printf(\"%f\", s); }", None),
    # the address of a local escapes
    ("void f(float s, float* a) { float t = s; float* p = &t; *a = t; }", None),
    # a value-returning helper with no output: pure, nothing to hoist as a statement
    ("float f(float s) { return tanh(s); }", (VALUE,)),
])
def test_which_opencl_helpers_are_pure(helper, kinds):
    source = "__constant float table[4] = {1, 2, 3, 4};\ninline " + helper + \
        "\n__kernel void k(__global float* out) { out[0] = 0.0f; }\n"
    assert _pure(source).get("f") == kinds


def test_helpers_calling_pure_helpers_are_pure_and_kernels_never_are():
    source = """
    inline float g(float x) { return exp(x); }
    inline void f(float s, float* a) { *a = g(s) + 1.0f; }
    inline void h(float s, float* a) { *a = s; bump(a); }
    __kernel void k(__global float* out) { out[0] = 0.0f; }
    """
    found = _pure(source)
    assert found.get("g") == (VALUE,) and found.get("f") == (VALUE, OUT_PTR)
    assert "h" not in found and "k" not in found


def test_cuda_reference_outputs_and_const_reference_inputs():
    source = """
    __device__ __forceinline__ void w(const float& sa, float sb, float& wa, float& lse)
    {
        const float m = fmaxf(sa, sb);
        wa = __expf(sa - m);
        lse = logf(wa) + m;
    }
    __device__ void reads(float s, float& a) { a = a * s; }
    __global__ void k(float* out) { out[0] = 0.0f; }
    """
    found = _pure(source, "cuda")
    # lse = logf(wa) + m reads the output wa: not pure
    assert "w" not in found and "reads" not in found and "k" not in found
    found = _pure(source.replace("lse = logf(wa) + m;", "lse = logf(__expf(sa - m)) + m;"), "cuda")
    assert found["w"] == (VALUE, VALUE, OUT_REF, OUT_REF)


HELPER_KERNEL = """
inline void weights(float s, float t, float* a, float* b)
{
    if (s > t) {
        const float e = exp(t - s);
        *a = 1.0f / (1.0f + e);
        *b = e / (1.0f + e);
    } else {
        *a = 0.5f;
        *b = 0.5f;
    }
}

__kernel void k(__global float* out, __global const float* x, __global const float* scale, const int rows,
                const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows)
        return;
    for (int c = 0; c < cols; c++) {
        BODY
    }
}
"""

HELPER_SPEC = """
kernel: k
args:
  - {name: out, dtype: fp32, shape: [rows, cols], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: scale, dtype: fp32, shape: [rows], intent: in}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: ["ceil_div(rows, 8)"], block: [8]}
shapes: [{rows: 61, cols: 37}]
holdout_shapes: [{rows: 3, cols: 1}]
noalias: true
"""

HOISTED = "float a, b;\n        weights(scale[r], 0.25f, &a, &b);\n        out[r * cols + c] = a * x[r * cols + c] + b;"


@pytest.mark.parametrize("body, hoisted", [
    (HOISTED, True),
    # inputs that change in the loop
    ("float a, b;\n weights(x[r * cols + c], 0.25f, &a, &b);\n out[r * cols + c] = a + b;", False),
    ("float a, b;\n weights(scale[r], (float)c, &a, &b);\n out[r * cols + c] = a + b;", False),
    # only some trips make the call
    ("float a = 0.0f, b = 0.0f;\n if (c > 2) weights(scale[r], 0.25f, &a, &b);\n out[r * cols + c] = a + b;",
     False),
    # an output with a value before the call, assigned again, read before the call, or handed on
    ("float a = 1.0f, b;\n weights(scale[r], 0.25f, &a, &b);\n out[r * cols + c] = a + b;", False),
    ("float a, b;\n weights(scale[r], 0.25f, &a, &b);\n a += 1.0f;\n out[r * cols + c] = a + b;", False),
    ("float a, b;\n out[r * cols + c] = 0.0f;\n weights(scale[r], 0.25f, &a, &b);\n weights(a, 0.5f, &a, &b);\n"
     " out[r * cols + c] = a + b;", False),
    # declared outside the loop: the last trip's value is seen after it
    ("weights(scale[r], 0.25f, &ga, &gb);\n out[r * cols + c] = ga + gb;", False),
])
def test_which_calls_move_before_the_loop(tmp_path, body, hoisted):
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(HELPER_SPEC))
    source = textwrap.dedent(HELPER_KERNEL).replace("BODY", body).replace(
        "    for (int c", "    float ga, gb;\n    for (int c")
    result = apply_catalog(source, "opencl", load_file(p).spec, rules=[HoistInvariants()])
    moved = "if (0 < cols) weights(" in result.template
    assert moved is hoisted, result.template
    if hoisted:
        assert "a = kt_r" in result.template and "pure call(s)" in result.trace[0].summary


def test_a_moved_call_computes_what_the_loop_did(worker, tmp_path):
    """HOIST on and off against the original (rows past the grid's last thread, a single column), and
    under Oclgrind: the call before the loop reads scale[r] only when the loop would have."""
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(HELPER_SPEC))
    loaded = load_file(p)
    spec = loaded.spec
    source = textwrap.dedent(HELPER_KERNEL).replace("BODY", HOISTED)
    result = apply_catalog(source, "opencl", spec, rules=[HoistInvariants()])
    t = parse_template(result.template, "opencl", "helper")
    original = KernelInstance(source, "k", "opencl", label="original")
    shapes = (*spec_shapes(spec), *holdout_shapes(spec))
    checker = MemoryChecker(worker.info) if oclgrind_library() else None
    for config in ({"HOIST": False}, {"HOIST": True}):
        inst = t.instance(config, spec)
        r = worker.evaluate(EvalRequest(inst, spec, str(tmp_path), shapes, (), seed=5, reference=original,
                                        timing=None), 300)
        assert r.status is Status.OK, f"{config}: {r.message}"
        if checker is not None:
            rep = checker.check(inst, spec, str(tmp_path), check_shapes(spec), 5)
            assert rep.status is CheckStatus.CLEAN, f"{config}: {rep.message}"


def _merge_row_loop_configs(space: Space) -> list[dict]:
    base = {**space.baseline(), "ROW_LOOP": True, "HOIST": True}
    return [{**base, "VEC": v} for v in space.params.get("VEC", (1,))]


def test_merge_weights_move_out_of_the_column_loop_and_stay_correct(worker):
    """merge_attn_states_lse.cl: with the row loop, the weights of a (token, head) pair are computed once per
    column loop; every vector width verified against the original and checked by Oclgrind."""
    kf = load_kernel(MERGE / "merge_attn_states_lse.cl")
    spec, base = kf.spec, str(kf.loaded.base_dir)
    result = apply_catalog(kf.source, "opencl", spec, kernel=kf.kernel_name, subgroups=worker.info.subgroups,
                           compute_units=2)
    assert "pure call(s)" in dict((a.rule, a.summary) for a in result.trace)["hoist-invariants"]
    t = parse_template(result.template, "opencl", "merge")
    space = Space.of(t)
    listed = sorted(spec_shapes(spec, "cpu"), key=lambda s: sum(v for _, v in s.sizes))
    shapes = (listed[0], *holdout_shapes(spec))
    checker = MemoryChecker(worker.info) if oclgrind_library() else None
    configs = _merge_row_loop_configs(space)
    assert len(configs) >= 2
    for config in configs:
        inst = t.instance(config, spec)
        assert "if (" in inst.source and "&kt_r" in inst.source
        r = worker.evaluate(EvalRequest(inst, spec, base, shapes, (), seed=7, reference=kf.instance("original"),
                                        timing=None), 300)
        assert r.status is Status.OK, f"{config}: {r.message}"
        if checker is not None:
            rep = checker.check(inst, spec, base, check_shapes(spec), 5)
            assert rep.status is CheckStatus.CLEAN, f"{config}: {rep.message}"


@pytest.mark.nvcc
def test_cuda_merge_weights_move_and_compile():
    """merge_attn_states_lse.cu (C++ reference outputs): the call moves, and the instances compile for sm_90."""
    from kerntune.backends.nvcc import compile_offline

    kf = load_kernel(MERGE / "merge_attn_states_lse.cu", spec_path=MERGE / "fp16.yaml")
    spec = kf.spec
    result = apply_catalog(kf.source, "cuda", spec, kernel=kf.kernel_name, compute_units=132)
    assert "pure call(s)" in dict((a.rule, a.summary) for a in result.trace)["hoist-invariants"]
    t = parse_template(result.template, "cuda", "merge.cu")
    for config in _merge_row_loop_configs(Space.of(t))[:2]:
        inst = t.instance(config, spec)
        assert ", kt_r" in inst.source
        compile_offline(inst.source, inst.name, options=inst.options)
