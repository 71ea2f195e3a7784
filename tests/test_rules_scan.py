"""cooperative-rows on a running sum read inside its loop (a row's prefix sum, a scan): the row goes to
a warp (sub-group), which takes as many consecutive columns per step as it has threads, scans them
across its threads and carries the step's total.

Preconditions on small kernels (each decline with its reason); every mode verified against the
original kernel on every input distribution, on rows shorter than, equal to and longer than a
sub-group; Oclgrind-clean; the CUDA instances compiled with nvcc for sm_90."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kerntune.agents.rules.catalog import apply_catalog
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.model import Shape
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO, catalog_of, wrong_configs

pytestmark = pytest.mark.runtime

PREFIX = REPO / "kernels/heldout/row_prefix_sum"

# a scan written another way: the load in a declaration before the update, `acc = acc + v`, an offset
# the row starts from, the running value used twice after it, and the total written after the loop
SCAN_CL = """
__kernel void k(__global float* out, __global float* total, __global const float* x, const float bias,
                const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r < rows) {
        float acc = bias;
        for (int c = 0; c < cols; ++c) {
            const float v = x[r * cols + c];
            acc = acc + v;
            out[r * cols + c] = acc * 0.5f + acc;
        }
        total[r] = acc;
    }
}
"""
SCAN_CU = SCAN_CL.replace("__kernel void", 'extern "C" __global__ void').replace("__global ", "") \
    .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x")
SCAN_SPEC = """
kernel: k
args:
  - {name: out, dtype: fp32, shape: [rows, cols], intent: out}
  - {name: total, dtype: fp32, shape: [rows], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: bias, dtype: fp32, value: 0.25}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: ["ceil_div(rows, 64)"], block: [64]}
shapes: [{rows: 37, cols: 300}]
tolerance: {rel_l2: 1.0e-5, atol: 1.0e-3, rtol: 1.0e-4}
noalias: true
"""
# rows shorter than, as long as and longer than a sub-group or warp, and not a multiple of it
SHAPES = (Shape.of({"rows": 37, "cols": 300}), Shape.of({"rows": 5, "cols": 7}), Shape.of({"rows": 9, "cols": 32}),
          Shape.of({"rows": 3, "cols": 1}))


def _scan(tmp_path: Path, lang: str, subgroups: bool = True, source: str | None = None):
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SCAN_SPEC))
    loaded = load_file(tmp_path / "spec.yaml")
    src = textwrap.dedent(source or (SCAN_CL if lang == "opencl" else SCAN_CU))
    return loaded, src, apply_catalog(src, lang, loaded.spec, subgroups=subgroups)


def _prefix(lang: str, subgroups: bool = True):
    return catalog_of(PREFIX, lang, subgroups)


@pytest.mark.parametrize("lang", ["opencl", "cuda"])
def test_cooperative_rows_gives_a_scan_to_a_warp(tmp_path, lang):
    for _, _, result in (_prefix(lang), _scan(tmp_path, lang)):
        assert "cooperative-rows" in result.applied_names, dict(result.skipped)
        assert result.params["ROWS"] == ("thread", "warp")          # no work-group mode for a scan
    t = _scan(tmp_path, lang)[2].template
    assert ("sub_group_scan_inclusive_add" if lang == "opencl" else "kt_rows_warp_scan(") in t


def test_a_scan_needs_sub_groups(tmp_path):
    _, _, result = _scan(tmp_path, "opencl", subgroups=False)
    assert "cooperative-rows" not in result.applied_names
    assert "sub-group" in dict(result.skipped)["cooperative-rows"]


@pytest.mark.parametrize("change, why", [
    # subtracted: the scan adds
    (("acc = acc + v;", "acc -= v;"), "a subtraction"),
    # read before its update in the same step
    (("const float v = x[r * cols + c];", "const float v = x[r * cols + c] + acc;"), "read before its update"),
    # a statement with an effect before the update (a thread past the row's end would run it)
    (("const float v = x[r * cols + c];", "const float v = x[r * cols + c]; out[r * cols + c] = 0.0f;"),
     "other than a declaration"),
    # updated twice
    (("acc = acc + v;", "acc = acc + v; acc += 1.0f;"), "more than once"),
    # a continue would skip the step's carry
    (("out[r * cols + c] = acc * 0.5f + acc;", "if (v > 2.0f) continue; out[r * cols + c] = acc;"), "continue"),
])
def test_cooperative_rows_declines_what_is_not_a_scan(tmp_path, change, why):
    _, _, result = _scan(tmp_path, "opencl", source=SCAN_CL.replace(*change))
    assert "cooperative-rows" not in result.applied_names
    assert why in dict(result.skipped)["cooperative-rows"], dict(result.skipped)["cooperative-rows"]


def _configs(result, lang: str):
    t = parse_template(result.template, lang, "scan")
    space = Space.of(t)
    base = space.baseline()
    configs = [{**base, "ROWS": rows, "BLOCK": b} for rows in space.params["ROWS"] for b in (32, 64, 256)
               if b in space.params["BLOCK"]]
    configs.append({**base, **{p: v[-1] for p, v in space.params.items() if p != "BLOCK"}})
    return t, space, configs


@pytest.mark.parametrize("kernel", ["prefix", "scan"])
def test_every_mode_verifies_against_the_original(worker, tmp_path, kernel):
    if not worker.info.subgroups:
        pytest.skip(f"{worker.info.name} has no sub-groups: cooperative-rows declines a scan there")
    loaded, src, result = _prefix("opencl") if kernel == "prefix" else _scan(tmp_path, "opencl")
    t, space, configs = _configs(result, "opencl")
    bad = wrong_configs(worker, t, configs, loaded, SHAPES, src, seed=17)
    assert bad == [], bad[:3]


@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
def test_scan_instances_are_clean_under_the_memory_checker(worker, tmp_path):
    """Threads past the row's end read its last column and write nothing: no access out of bounds."""
    from kerntune.engine.checker import MemoryChecker, check_shapes
    from kerntune.results import CheckStatus

    if not worker.info.subgroups:
        pytest.skip(f"{worker.info.name} has no sub-groups")
    loaded, _, result = _scan(tmp_path, "opencl")
    spec = loaded.spec
    t = parse_template(result.template, "opencl", "scan")
    space = Space.of(t)
    report = MemoryChecker(worker.info).check(t.instance({**space.baseline(), "ROWS": "warp", "BLOCK": 64}, spec),
                                              spec, str(loaded.base_dir), check_shapes(spec), 5)
    assert report.status is CheckStatus.CLEAN, report.message


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel", ["prefix", "scan"])
def test_cuda_scan_instances_compile(tmp_path, kernel):
    from kerntune.backends.base import CompileFailed
    from kerntune.backends.nvcc import compile_offline

    loaded, _, result = _prefix("cuda") if kernel == "prefix" else _scan(tmp_path, "cuda")
    t, space, configs = _configs(result, "cuda")
    failures = []
    for c in configs:
        inst = t.instance(c, loaded.spec)
        try:
            compile_offline(inst.source, inst.name, "sm_90", inst.options)
        except CompileFailed as e:
            failures.append((c, str(e)[:400]))
    assert failures == [], failures[:2]


def test_a_scan_loop_keeps_an_earlier_rounds_unroll_pragma_on_the_loop(worker, tmp_path):
    """Round 2 starts from round 1's instance, whose loop carries `#pragma unroll 4`: the pragma stays
    on the new loop, not on the carry's declaration before it (which failed to compile: the audit's
    finding of 2026-12-04)."""
    if not worker.info.subgroups:
        pytest.skip(f"{worker.info.name} has no sub-groups")
    source = SCAN_CL.replace("        for (int c = 0;", "        #pragma unroll 4\n        for (int c = 0;")
    loaded, src, result = _scan(tmp_path, "opencl", source=source)
    spec = loaded.spec
    t = parse_template(result.template, "opencl", "scan")
    inst = t.instance({**Space.of(t).baseline(), "ROWS": "warp"}, spec)
    assert "#pragma unroll 4\n            for (" in inst.source or "#pragma unroll 4\n        for (" in inst.source, \
        inst.source
    r = worker.evaluate(EvalRequest(inst, spec, str(loaded.base_dir), SHAPES[:2], (), seed=3,
                                    reference=KernelInstance(src, spec.kernel, "opencl", label="original"),
                                    timing=None), 300)
    assert r.status is Status.OK, r.message
