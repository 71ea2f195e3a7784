"""cooperative-rows on arg-max and arg-min rows (`if (x > m) { m = x; i = c; }`): the first column
holding the row's maximum, found by a warp (sub-group) or a block (work-group) instead of one thread.

Preconditions on small kernels; every mode verified against the original kernel on every input
distribution (the `ties` one repeats eight values, so the first-index rule is exercised); the
cooperative instances clean under Oclgrind; the CUDA instances compiled with nvcc for sm_90. And
hoist-invariants leaving alone a load through a pointer the loop itself declares."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kerntune.agents.rules.catalog import apply_catalog
from kerntune.agents.rules.hoist import HoistInvariants
from kerntune.spec.load import load_file
from kerntune.spec.model import Shape
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO, catalog_of, wrong_configs

pytestmark = pytest.mark.runtime

ARGMAX = REPO / "kernels/heldout/row_argmax"

# a row's minimum and the first column holding it, written as `best > v` (the value on the left),
# starting from +infinity and column -1, with the loop's load in a declaration of its own
ARGMIN_CL = """
__kernel void k(__global float* vals, __global int* at, __global const float* x, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    float best = INFINITY;
    int where = -1;
    for (int c = 0; c < cols; ++c) {
        const float v = x[r * cols + c];
        if (best > v) {
            where = c;
            best = v;
        }
    }
    vals[r] = best;
    at[r] = where;
}
"""
ARGMIN_CU = ARGMIN_CL.replace("__kernel void", 'extern "C" __global__ void').replace("__global ", "") \
    .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x").replace("INFINITY", "__int_as_float(0x7f800000)")
ARGMIN_SPEC = """
kernel: k
args:
  - {name: vals, dtype: fp32, shape: [rows], intent: out}
  - {name: at, dtype: int32, shape: [rows], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: ["ceil_div(rows, 128)"], block: [128]}
shapes: [{rows: 37, cols: 1000}, {rows: 5, cols: 77}]
tolerance: {rel_l2: 0.0, atol: 0.0, rtol: 0.0}
noalias: true
"""


def _argmin(tmp_path: Path, lang: str, subgroups: bool = True, source: str | None = None):
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(ARGMIN_SPEC))
    loaded = load_file(tmp_path / "spec.yaml")
    src = textwrap.dedent(source or (ARGMIN_CL if lang == "opencl" else ARGMIN_CU))
    result = apply_catalog(src, lang, loaded.spec, subgroups=subgroups)
    return loaded, src, result


def _argmax(lang: str, subgroups: bool = True):
    return catalog_of(ARGMAX, lang, subgroups)


@pytest.mark.parametrize("lang", ["opencl", "cuda"])
def test_cooperative_rows_takes_an_argmax_and_an_argmin(tmp_path, lang):
    for loaded, _, result in (_argmax(lang), _argmin(tmp_path, lang)):
        assert "cooperative-rows" in result.applied_names, dict(result.skipped)
        assert result.params["ROWS"] == ("thread", "warp", "block")
    # the arg-min: the row's minimum, then the smallest column among the threads holding it
    assert "kt_rows_warp_min(best)" in _argmin(tmp_path, "cuda")[2].template
    assert "sub_group_reduce_min((best == kt_m || kt_m != kt_m) ? where : (int)0x7fffffff)" in \
        _argmin(tmp_path, "opencl")[2].template


@pytest.mark.parametrize("change, why", [
    # a non-strict comparison keeps the last column on ties: the first-column combination would be wrong
    (("if (best > v)", "if (best >= v)"), "other than by accumulating"),
    # the column read elsewhere in the loop
    (("const float v = x[r * cols + c];", "const float v = x[r * cols + c] + where;"), "outside its argmin update"),
    # the column is not the loop's
    (("where = c;", "where = c + 1;"), "other than by accumulating"),
    # a column of a type the reduction does not cover
    (("int where = -1;", "long where = -1;"), "has type long"),
])
def test_cooperative_rows_declines_what_is_not_an_argmin(tmp_path, change, why):
    _, _, result = _argmin(tmp_path, "opencl", source=ARGMIN_CL.replace(*change))
    assert "cooperative-rows" not in result.applied_names
    assert why in dict(result.skipped)["cooperative-rows"]


def _modes(result, lang: str, spec):
    t = parse_template(result.template, lang, "argmax")
    space = Space.of(t)
    base = space.baseline()
    configs = [{**base, "ROWS": rows, "BLOCK": b} for rows in space.params["ROWS"] for b in (32, 128)
               if b in space.params["BLOCK"]]
    configs.append({**base, **{p: v[-1] for p, v in space.params.items() if p not in ("BLOCK",)}, "ROWS": "block"})
    return t, configs


@pytest.mark.parametrize("kernel", ["argmax", "argmin"])
@pytest.mark.parametrize("mode", ["device", "local-only"])
def test_every_mode_verifies_against_the_original(worker, tmp_path, kernel, mode):
    """Each ROWS value at two block sizes, and every parameter at its last value, on every input
    distribution (ties included): exactly the original's columns and values."""
    subgroups = mode == "device" and worker.info.subgroups
    if mode == "device" and not worker.info.subgroups:
        pytest.skip(f"{worker.info.name} has no sub-groups: its templates are the local-only case's")
    loaded, src, result = _argmax("opencl", subgroups) if kernel == "argmax" else \
        _argmin(tmp_path, "opencl", subgroups)
    spec = loaded.spec
    t, configs = _modes(result, "opencl", spec)
    shapes = (Shape.of({"rows": 37, "cols": 1000}), Shape.of({"rows": 5, "cols": 77}))
    bad = wrong_configs(worker, t, configs, loaded, shapes, src, seed=13)
    assert bad == [], bad[:3]


@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
@pytest.mark.parametrize("subgroups", [True, False], ids=["subgroups", "local-only"])
def test_argmin_instances_are_clean_under_the_memory_checker(worker, tmp_path, subgroups):
    """Two reductions in a row through the same local scratch (the value's, then the column's): no
    race, no barrier divergence, no access out of bounds."""
    from kerntune.engine.checker import MemoryChecker, check_shapes
    from kerntune.results import CheckStatus

    if subgroups and not worker.info.subgroups:
        pytest.skip(f"{worker.info.name} has no sub-groups")
    loaded, _, result = _argmin(tmp_path, "opencl", subgroups)
    spec = loaded.spec
    t = parse_template(result.template, "opencl", "argmin")
    space = Space.of(t)
    checker = MemoryChecker(worker.info)
    findings = []
    for rows in space.params["ROWS"][1:]:
        c = {**space.baseline(), "ROWS": rows, "BLOCK": 64}
        report = checker.check(t.instance(c, spec), spec, str(loaded.base_dir), check_shapes(spec), 5)
        if report.status is not CheckStatus.CLEAN:
            findings.append((c, report.status.value, report.message))
    assert findings == [], findings


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel", ["argmax", "argmin"])
def test_cuda_argmax_instances_compile(tmp_path, kernel):
    from kerntune.backends.base import CompileFailed
    from kerntune.backends.nvcc import compile_offline

    loaded, _, result = _argmax("cuda") if kernel == "argmax" else _argmin(tmp_path, "cuda")
    t, configs = _modes(result, "cuda", loaded.spec)
    failures = []
    for c in configs:
        inst = t.instance(c, loaded.spec)
        try:
            compile_offline(inst.source, inst.name, "sm_90", inst.options)
        except CompileFailed as e:
            failures.append((c, str(e)[:400]))
    assert failures == [], failures[:2]


HOIST_PTR = """
__kernel void k(__global float* out, __global const float* x, const int rows, const int cols)
{
    for (int r = 0; r < rows; ++r) {
        __global const float* p = x + r * cols;
        const float first = p[0];
        float s = 0.0f;
        for (int c = 0; c < cols; ++c) s += p[c] - first;
        out[r] = s;
    }
}
"""


HOIST_SPEC = """
kernel: k
args:
  - {name: out, dtype: fp32, shape: [rows], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: [1], block: [1]}
shapes: [{rows: 5, cols: 77}]
noalias: true
"""


def test_hoist_leaves_a_load_through_a_pointer_the_loop_declares(tmp_path):
    """p[0] is at an index the row loop does not change, but p itself is set anew on every row: moving
    the load before the loop would read a pointer not yet declared (or another one of that name)."""
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(HOIST_SPEC))
    result = apply_catalog(textwrap.dedent(HOIST_PTR), "opencl", load_file(p).spec, rules=[HoistInvariants()])
    assert "? p[0] :" not in result.template, result.template
    # the same load through the parameter itself moves
    result = apply_catalog(textwrap.dedent(HOIST_PTR).replace("p[0]", "x[0]"), "opencl", load_file(p).spec,
                           rules=[HoistInvariants()])
    assert "? x[0] :" in result.template, result.template
