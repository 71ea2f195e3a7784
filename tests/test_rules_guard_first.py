"""guard-first: declarations between a kernel's global index and its bounds check move before the
index (those that do not use it) or after the check (those that do), so that the element-wise rules
see ``index; check; element``. The moves on both forms of the check, each decline with its reason,
and the catalog's templates (which row-column-grid or elements-per-thread then take apart) verified
on the CPU against the original on every input distribution, odd held-out shapes included."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from kerntune.agents.rules.catalog import apply_catalog, default_rules
from kerntune.agents.rules.guardfirst import GuardFirst
from kerntune.agents.rules.base import RewriteState
from kerntune.kernelfile import load_kernel
from kerntune.spec.load import load_file
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import write
from tests.test_rules_rowloop import _failures

SPEC = """
kernel: scale_cols
args:
  - {name: out, dtype: fp32, shape: [rows, cols], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: w, dtype: fp32, shape: [cols], intent: in}
  - {name: alpha, dtype: fp32, value: 0.5}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch:
  grid: ["ceil_div(rows * cols, 128)"]
  block: [128]
shapes:
  - {rows: 64, cols: 200}
  - {rows: 7, cols: 1000}
reference: ref.py:scale_cols
noalias: true
"""
REF = """
import numpy as np
def scale_cols(x, w, alpha, rows, cols):
    x = x.reshape(rows, cols).astype(np.float64)
    return x * w.astype(np.float64) * np.float64(np.float32(2.0) * np.float32(alpha))
"""

# the index, then what the check needs (n), a value of neither (k), and the row and column, which
# use the index: n and k go before the index, r and c after the check
EXIT = """
__kernel void scale_cols(__global float* out, __global const float* x, __global const float* w,
                         const float alpha, const int rows, const int cols)
{
    const int i = get_global_id(0);
    const int n = rows * cols;
    const float k = 2.0f * alpha;
    const int r = i / cols;
    const int c = i - r * cols;
    if (i >= n)
        return;
    out[r * cols + c] = x[r * cols + c] * w[c] * k;
}
"""
GUARD = """
__kernel void scale_cols(__global float* out, __global const float* x, __global const float* w,
                         const float alpha, const int rows, const int cols)
{
    const int i = get_global_id(0);
    const int c = i % cols;
    const int n = rows * cols;
    if (i < n) {
        out[i] = x[i] * w[c] * (2.0f * alpha);
    }
}
"""


def space_baseline(t):
    return Space.of(t).baseline()


def _state(source: str, tmp_path, lang: str = "opencl") -> RewriteState:
    spec = load_file(write(tmp_path, "scale_cols.yaml", SPEC)).spec
    return RewriteState(lang=lang, source=textwrap.dedent(source), kernel="scale_cols", spec=spec, launch=spec.launch)


def test_what_the_check_needs_goes_before_the_index_and_what_uses_the_index_after_the_check(tmp_path):
    st = _state(EXIT, tmp_path)
    assert GuardFirst().run(st), st.skipped
    body = [ln.strip() for ln in st.source.split("{", 1)[1].splitlines() if ln.strip()]
    assert body[:6] == ["const int n = rows * cols;", "const float k = 2.0f * alpha;", "const int i = get_global_id(0);",
                        "if (i >= n)", "return;", "const int r = i / cols;"]
    assert body[6] == "const int c = i - r * cols;"


def test_in_the_guarded_form_what_uses_the_index_opens_the_guarded_block(tmp_path):
    st = _state(GUARD, tmp_path)
    assert GuardFirst().run(st), st.skipped
    assert "const int n = rows * cols;\n    const int i = get_global_id(0);\n    if (i < n) {\n" \
           "        const int c = i % cols;\n        out[i]" in st.source


@pytest.mark.parametrize("change, why", [
    (("const int n = rows * cols;", "const int n = i < 0 ? 0 : rows * cols;"), "the bounds check uses n, which depends on i"),
    (("const float k = 2.0f * alpha;", "float k = 2.0f * alpha; k += 1.0f;"), "a statement other than a declaration"),
    (("const float k = 2.0f * alpha;", "const float k = helper(alpha);"), "the initializer of k has side effects"),
    (("const float k = 2.0f * alpha;", "int m = 0; const float k = (m = 2) * alpha;"), "side effects"),
    (("if (i >= n)\n        return;", "if (i >= n) { out[0] = 0.0f; return; }"), "no bounds check on i"),
])
def test_declines_with_the_reason(tmp_path, change, why):
    st = _state(EXIT.replace(*change), tmp_path)
    assert not GuardFirst().run(st)
    assert why in st.skipped[-1][1]


def test_a_kernel_already_in_order_is_left_alone(tmp_path):
    src = EXIT.replace("    const int n = rows * cols;\n", "").replace("const int i = get_global_id(0);\n",
                                                                       "const int n = rows * cols;\n    const int i = "
                                                                       "get_global_id(0);\n")
    src = src.replace("    const float k = 2.0f * alpha;\n    const int r = i / cols;\n    const int c = i - r * cols;\n",
                      "").replace("    out[r", "    const float k = 2.0f * alpha;\n    const int r = i / cols;\n"
                                           "    const int c = i - r * cols;\n    out[r")
    st = _state(src, tmp_path)
    assert not GuardFirst().run(st)
    assert "follows the index i already" in st.skipped[-1][1]


# a pointer declared with its address space: the parser blanks '__global', so the declaration's node
# starts at 'const'; moved (guard-first) or re-emitted (elements-per-thread) it keeps the keyword
POINTER = EXIT.replace("    const float k = 2.0f * alpha;\n", "    __global const float* src = x + i;\n") \
    .replace("x[r * cols + c] * w[c] * k", "src[0] * w[c] * (2.0f * alpha)")
POINTER_AFTER = """
__kernel void scale_cols(__global float* out, __global const float* x, __global const float* w,
                         const float alpha, const int rows, const int cols)
{
    const int n = rows * cols;
    const int i = get_global_id(0);
    if (i >= n)
        return;
    __global const float* src = x + i;
    const int c = i % cols;
    out[i] = src[0] * w[c] * (2.0f * alpha);
}
"""


# the element-wise rules guard-first lets in: row-column-grid takes these kernels (their bound n is
# rows * cols, declared before the index once guard-first has moved it), elements-per-thread others
ELEMENT_WISE = {"elements-per-thread", "row-column-grid"}


@pytest.mark.parametrize("source", [EXIT, GUARD, POINTER, POINTER_AFTER],
                         ids=["exit", "guard", "pointer", "pointer-after-check"])
def test_the_element_wise_rules_now_apply_and_every_template_instance_verifies(worker, tmp_path, source):
    write(tmp_path, "ref.py", REF)
    kfile = write(tmp_path, "scale_cols.cl", textwrap.dedent(source))
    loaded = load_file(write(tmp_path, "scale_cols.yaml", SPEC))
    without = [r for r in default_rules() if r.name != "guard-first"]
    before = apply_catalog(textwrap.dedent(source), "opencl", loaded.spec, compute_units=2, rules=without)
    assert bool(ELEMENT_WISE & set(before.applied_names)) == (source is POINTER_AFTER)
    result = apply_catalog(textwrap.dedent(source), "opencl", loaded.spec, compute_units=2)
    assert (source is POINTER_AFTER or "guard-first" in result.applied_names) \
        and ELEMENT_WISE & set(result.applied_names), result.skipped
    t = parse_template(result.template, "opencl", "scale_cols")
    assert "__global const float* src" in t.render(space_baseline(t), loaded.spec) or "src" not in source
    space = Space.of(t)
    original = load_kernel(kfile).instance()
    shapes = tuple(spec_shapes(loaded.spec)) + tuple(holdout_shapes(loaded.spec))
    configs = [space.baseline()] + [c for c in space.configs() if c.get("FAST_FLAGS") is False
                                     and c.get("BLOCK") in (32, 256)]
    assert len(configs) > 4
    assert _failures(worker, loaded, t, original, configs, shapes, seed=9) == []


def test_cuda_instances_compile(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    from kerntune.backends.nvcc import compile_offline

    src = textwrap.dedent(EXIT).replace("__kernel void", 'extern "C" __global__ void').replace("__global ", "") \
        .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x")
    spec = load_file(write(tmp_path, "scale_cols.yaml", SPEC)).spec
    result = apply_catalog(src, "cuda", spec)
    assert "guard-first" in result.applied_names and ELEMENT_WISE & set(result.applied_names), result.skipped
    t = parse_template(result.template, "cuda", "scale_cols")
    base = Space.of(t).baseline()
    for c in (base, {**base, "EPT": 4} if "EPT" in base else {**base, "GRID2D": True}):
        inst = t.instance(c, spec)
        compile_offline(inst.source, inst.name, options=inst.options)
