"""private-helpers and split-groups.

private-helpers: the spec's kernel gets its own copies of the functions it shares with the file's other
entry points, so that no rewrite reaches an entry point nobody verified; copies no rule changed are
dropped again. split-groups: a kernel giving each work-group one item of work (a token) gets SPLIT
groups per item, as a parameter: its block-strided loop becomes the loop of a block SPLIT times larger,
its row loop is dealt row by row. Each decline with its reason; the rewrites verified on the CPU against
the original kernel on every input distribution (row lengths the block does not divide, SPLIT larger
than the rows); the split merge kernel under Oclgrind; CUDA instances compiled with nvcc."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from kerntune.agents.bake import bake
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.engine.evaluate import KernelInstance
from kerntune.spec.load import load_file
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.kernel_files import resolve_launch_params
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO
from tests.test_rules_rowloop import _failures, assert_merge_clean

MERGE = REPO / "kernels/sglang/merge_attn_states_lse"
SILU = REPO / "kernels/sglang/silu_and_mul"


def _definition(text: str, name: str) -> str:
    """The text of the first definition of function ``name`` in ``text`` (up to its closing brace at
    the start of a line)."""
    m = re.search(r"^(?![ \t]*//)[^\n]*\b" + re.escape(name) + r"\s*\([^;{]*\)\s*\{.*?^\}", text, re.S | re.M)
    assert m is not None, name
    return m.group(0)


# --- private-helpers -------------------------------------------------------------------------------------

def test_the_other_entry_points_keep_the_original_helpers():
    """CUDA merge: the bf16 kernel calls its own copies of the template and the helpers the rules
    changed; the fp32 and fp16 kernels call the originals, which are what the file had."""
    spec = load_file(MERGE / "spec.yaml").spec
    source = (MERGE / "merge_attn_states_lse.cu").read_text()
    result = apply_catalog(source, "cuda", spec)
    assert "private-helpers" in result.applied_names, result.skipped
    t = parse_template(result.template, "cuda", "merge")
    c = {**Space.of(t).baseline(), "FAST_MATH": True, "RESTRICT": True, "ROW_LOOP": True, "SPLIT": 4}
    text = t.render(c, spec)
    for name in ("merge_weights", "merge_attn_states_lse_baseline"):
        assert _definition(text, name) == _definition(source, name)
    assert "merge_attn_states_lse_baseline<float>(v, s" in text
    assert "merge_attn_states_lse_baseline_for_merge_attn_states_lse_bf16<__nv_bfloat16>(v, s" in text
    own = _definition(text, "merge_weights_for_merge_attn_states_lse_bf16")
    assert "KT_FM_EXPF(sa - m)" in own and "#define KT_FM_EXPF __expf" in text


def test_a_copy_no_rule_changed_is_dropped():
    """OpenCL merge: the helpers fast-math and restrict rewrite (merge_weights) are copied, the bf16
    conversions no rule touches are not; a kernel that shares nothing has the rule skipped."""
    spec = load_file(MERGE / "spec.yaml").spec
    result = apply_catalog((MERGE / "merge_attn_states_lse.cl").read_text(), "opencl", spec)
    assert "merge_weights_for_merge_attn_states_lse_bf16(" in result.template
    assert "_for_" not in re.sub(r"merge_weights_for_merge_attn_states_lse_bf16", "", result.template)
    only = textwrap.dedent("""
        inline float twice(float v) { return 2.0f * v; }
        __kernel void merge_attn_states_lse_bf16(__global float* v) { v[get_global_id(0)] = twice(1.0f); }
    """)
    result = apply_catalog(only, "opencl", spec)
    assert "shares no function" in dict(result.skipped)["private-helpers"]


def test_copies_nobody_changed_are_dropped_and_their_callers_kept():
    """A shared helper the rules change (a loop: unroll) is copied with the helper calling it; a shared
    helper no rule changes is dropped and its calls renamed back."""
    spec = load_file(MERGE / "spec.yaml").spec
    source = textwrap.dedent("""
        inline float same(float v) { return v + 1.0f; }
        inline float sum(__global const float* p, int n) {
            float acc = 0.0f;
            for (int i = 0; i < n; ++i) acc += p[i];
            return same(acc);
        }
        inline float outer(__global const float* p, int n) { return sum(p, n); }
        __kernel void merge_attn_states_lse_bf16(__global float* v, __global const float* p, const int n)
        { v[get_global_id(0)] = outer(p, n); }
        __kernel void other(__global float* v, __global const float* p, const int n) { v[0] = outer(p, n); }
    """)
    result = apply_catalog(source, "opencl", spec)
    assert "unroll" in result.applied_names, result.skipped
    assert "inline float sum_for_merge_attn_states_lse_bf16(" in result.template
    assert "inline float outer_for_merge_attn_states_lse_bf16(" in result.template
    assert "same_for_" not in result.template and result.template.count("inline float same(") == 1
    t = parse_template(result.template, "opencl", "copies")
    text = t.render({**Space.of(t).baseline(), "UNROLL_0": 4}, spec)
    assert _definition(text, "sum") == _definition(source, "sum")
    assert "{ v[0] = outer(p, n); }" in text


# --- split-groups: where it applies and where it declines -------------------------------------------------

SPEC = """
kernel: k
args:
  - {name: out, dtype: fp32, shape: [rows, cols], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: [rows], block: [64]}
shapes: [{rows: 3, cols: 300}]
holdout_shapes: [{rows: 2, cols: 37}]
noalias: true
"""

ROW_KERNEL = """
__kernel void k(__global float* out, __global const float* x, const int cols)
{
PRE
    const long base = (long)get_group_id(0) * cols;
    for (int i = get_local_id(0); i < cols; i += get_local_size(0))
        BODY
POST
}
"""
ELEMENT = "out[base + i] = x[base + i] * 2.0f + (float)i;"


def _kernel(body: str = ELEMENT, pre: str = "", post: str = "") -> str:
    return ROW_KERNEL.replace("PRE", pre).replace("BODY", body).replace("POST", post)


def _catalog(tmp_path: Path, kernel: str, spec: str = SPEC, lang: str = "opencl"):
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(spec))
    loaded = load_file(p)
    return loaded, apply_catalog(textwrap.dedent(kernel), lang, loaded.spec)


def test_a_block_per_row_kernel_is_split(tmp_path):
    _, result = _catalog(tmp_path, _kernel())
    assert "split-groups" in result.applied_names, result.skipped
    assert result.params["SPLIT"] == (1, 2, 4, 8, 16, 32)
    assert "(long)(get_group_id(0) / KT_SPLIT) * cols" in result.template
    assert "get_local_id(0) + (get_group_id(0) % KT_SPLIT) * get_local_size(0)" in result.template
    assert "i += get_local_size(0) * KT_SPLIT" in result.template
    assert "(rows) * fixed(SPLIT)" in result.template
    # vectorize takes the split loop: VEC elements per thread of the SPLIT times larger block
    assert "kt_i0 = (get_local_id(0) + (get_group_id(0) % KT_SPLIT) * get_local_size(0)) * KT_VEC" in \
        result.template


ROWS_SPEC = SPEC.replace("[rows, cols]", "[rows, heads, cols]").replace(
    "  - {name: cols, dtype: int32, value: cols}",
    "  - {name: heads, dtype: int32, value: heads}\n  - {name: cols, dtype: int32, value: cols}").replace(
    "shapes: [{rows: 3, cols: 300}]", "shapes: [{rows: 3, heads: 5, cols: 100}]").replace(
    "holdout_shapes: [{rows: 2, cols: 37}]", "holdout_shapes: [{rows: 2, heads: 3, cols: 37}]")

ROWS_KERNEL = """
__kernel void k(__global float* out, __global const float* x, const int heads, const int cols)
{
    const long first = (long)get_group_id(0) * heads;
    for (int h = 0; h < heads; ++h) {
        const long pair = first + h;
        for (int c = get_local_id(0); c < cols; c += get_local_size(0))
            BODY
    }
}
"""


@pytest.mark.parametrize("kernel, why", [
    (_kernel("{ out[base + i] = x[base + i]; barrier(CLK_LOCAL_MEM_FENCE); }"), "synchronizes"),
    (_kernel(pre="    __local float tile[64];", body="out[base + i] = x[base + i];"), "shared (local) memory"),
    (_kernel(post="    if (get_local_id(0) == 0) out[base] = 0.0f;"), "out is written in the loop and accessed"),
    (_kernel(pre="    float keep[2];\n    *(__global float*)x = 0.0f;"), "writes memory outside the loops"),
    (_kernel("out[get_global_id(0)] = x[base + i];"), "get_global_id(0)"),
    (_kernel("out[base + i] = x[base + i] + (float)get_num_groups(0);"), "get_num_groups(0)"),
    (_kernel().replace("get_group_id(0) * cols", "7 * cols"), "does not read its group index"),
    # the same column of every row accumulated: rows dealt to different groups would race on out[c]
    (ROWS_KERNEL.replace("BODY", "out[c] += x[pair * cols + c];"), "is not a multiple of the row"),
    # a row's columns overlap the next row's (row h + 1 at column 0 is row h at column 1)
    (ROWS_KERNEL.replace("BODY", "out[pair + c] = x[pair * cols + c];"), "a column below it"),
])
def test_split_groups_declines(tmp_path, kernel, why):
    spec = ROWS_SPEC if "heads" in kernel else SPEC
    _, result = _catalog(tmp_path, kernel, spec)
    assert "split-groups" not in result.applied_names
    reason = dict(result.skipped)["split-groups"]
    assert why in reason, reason


def test_a_two_dimensional_launch_is_not_split(tmp_path):
    _, result = _catalog(tmp_path, _kernel(), SPEC.replace("grid: [rows]", "grid: [rows, 2]"))
    assert "one-dimensional" in dict(result.skipped)["split-groups"]


def test_rows_are_dealt_row_by_row(tmp_path):
    _, result = _catalog(tmp_path, ROWS_KERNEL.replace("BODY", "out[pair * cols + c] = x[pair * cols + c];"),
                         ROWS_SPEC)
    assert "split-groups" in result.applied_names, result.skipped
    assert "for (int h = (get_group_id(0) % KT_SPLIT); h < heads; h += KT_SPLIT)" in result.template


def test_a_baked_split_is_not_split_again(tmp_path):
    """Round 2 after a winner with SPLIT = 4: the grid is the split one and the rule declines."""
    loaded, result = _catalog(tmp_path, _kernel())
    t = parse_template(result.template, "opencl", "split")
    c = {**Space.of(t).baseline(), "SPLIT": 4}
    launch = resolve_launch_params(t.decl.launch, c)
    again = apply_catalog(bake(t.render(c, loaded.spec), "opencl"), "opencl", loaded.spec, launch=launch)
    assert "split-groups" not in again.applied_names
    assert "split already" in dict(again.skipped)["split-groups"]
    assert "vectorize" in again.applied_names          # the split loop is still one vectorize takes


def test_a_round_baked_with_split_1_is_split_again(tmp_path):
    """SPLIT = 1 bakes to the group index divided by 1: the next round offers the split again (and the
    grid is the original one times 1)."""
    loaded, result = _catalog(tmp_path, _kernel())
    t = parse_template(result.template, "opencl", "split")
    c = Space.of(t).baseline()
    launch = resolve_launch_params(t.decl.launch, c)
    assert launch.grid[0] == "rows * fixed(1)"
    again = apply_catalog(bake(t.render(c, loaded.spec), "opencl"), "opencl", loaded.spec, launch=launch)
    assert {"split-groups", "vectorize"} <= set(again.applied_names), again.skipped
    assert "(long)(get_group_id(0) / KT_SPLIT) * cols" in again.template


# --- the rewrites, run ------------------------------------------------------------------------------------

@pytest.mark.runtime
def test_split_rows_verify_against_the_original(worker, tmp_path):
    """A block-per-row kernel at SPLIT 1 to 32 (more groups than a 37-column row has blocks of threads),
    with and without vectorize, at blocks that divide the row and do not."""
    kernel = _kernel()
    loaded, result = _catalog(tmp_path, kernel)
    assert {"split-groups", "vectorize"} <= set(result.applied_names), result.skipped
    t = parse_template(result.template, "opencl", "split")
    space = Space.of(t)
    original = KernelInstance(textwrap.dedent(kernel), loaded.spec.kernel, "opencl", label="original")
    shapes = (*spec_shapes(loaded.spec), *holdout_shapes(loaded.spec))
    configs = [{**space.baseline(), "SPLIT": split, "VEC": vec, "BLOCK": block}
               for split, vec, block in ((2, 1, 64), (4, 4, 16), (32, 1, 32), (8, 2, 64), (16, 8, 32))]
    assert _failures(worker, loaded, t, original, configs, shapes, seed=5) == []


@pytest.mark.runtime
def test_merge_attn_states_split_groups_verify_against_the_original(worker):
    """The catalog's merge_attn_states with SPLIT groups per token: the flat loop and the row loop,
    vectorized and not, SPLIT beyond the heads of the held-out shape."""
    loaded = load_file(MERGE / "spec.yaml")
    spec = loaded.spec
    source = (MERGE / "merge_attn_states_lse.cl").read_text()
    result = apply_catalog(source, "opencl", spec)
    assert "split-groups" in result.applied_names, result.skipped
    t = parse_template(result.template, "opencl", "merge")
    base = Space.of(t).baseline()
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    shapes = (min(spec_shapes(spec, "cpu"), key=lambda s: dict(s.sizes)["N"]), *holdout_shapes(spec))
    configs = [{**base, "SPLIT": 4},
               {**base, "SPLIT": 2, "ROW_LOOP": True},
               {**base, "SPLIT": 32, "ROW_LOOP": True, "VEC": 8, "HOIST": True},
               {**base, "SPLIT": 8, "ROW_LOOP": True, "VEC": 2, "BLOCK": 256, "RESTRICT": True}]
    assert _failures(worker, loaded, t, original, configs, shapes, seed=11) == []


@pytest.mark.runtime
def test_a_row_loop_round_2_after_a_split_1_round_1_verifies(worker):
    """Round 1's winner has the flat loop split with SPLIT = 1 (baked: start tid + (group % 1) * block, step
    block * 1); round 2's row-loop copies that start and step into its column loop, and split-groups deals
    the rows out. The column loop's share of one group must stay 0: it was made (group % SPLIT) * block
    while its step stayed block * 1, and every group skipped the first columns of its rows (the catalog
    audit's finding of 2026-12-03: 'v: unwritten')."""
    loaded = load_file(MERGE / "spec.yaml")
    spec = loaded.spec
    source = (MERGE / "merge_attn_states_lse.cl").read_text()
    first = apply_catalog(source, "opencl", spec, compute_units=132)
    t1 = parse_template(first.template, "opencl", "merge round 1")
    c1 = {**Space.of(t1).baseline(), "BLOCK": 512, "SPLIT": 1, "VEC": 2, "HOIST": True}
    launch = resolve_launch_params(t1.decl.launch, c1)
    second = apply_catalog(bake(t1.render(c1, spec), "opencl"), "opencl", spec, launch=launch, compute_units=132)
    assert {"row-loop", "split-groups"} <= set(second.applied_names), second.skipped
    t2 = parse_template(second.template, "opencl", "merge round 2")
    base = Space.of(t2).baseline()
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    shapes = (min(spec_shapes(spec, "cpu"), key=lambda s: dict(s.sizes)["N"]), *holdout_shapes(spec))
    configs = [{**base, "BLOCK": 128, "ROW_LOOP": True, "SPLIT": split, "VEC": vec, "HOIST": hoist}
               for split, vec, hoist in ((4, 1, True), (32, 1, False), (4, 2, True), (8, 4, False))]
    assert _failures(worker, loaded, t2, original, configs, shapes, seed=11) == []


@pytest.mark.runtime
@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
def test_merge_attn_states_split_groups_are_clean_under_the_memory_checker(worker):
    assert_merge_clean(worker, ROW_LOOP=True, BLOCK=32, VEC=4, SPLIT=8)
    assert_merge_clean(worker, SPLIT=4)           # the flat loop, split


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel_dir", [MERGE, SILU])
def test_cuda_split_instances_compile_with_nvcc(kernel_dir):
    """The SGLang CUDA kernels keep their loop in a template shared by three dtypes: the spec's kernel
    gets its own copy, split; every entry point still compiles."""
    from kerntune.backends.nvcc import compile_offline

    spec = load_file(kernel_dir / "spec.yaml").spec
    source = next(kernel_dir.glob("*.cu")).read_text()
    result = apply_catalog(source, "cuda", spec)
    assert {"private-helpers", "split-groups"} <= set(result.applied_names), result.skipped
    t = parse_template(result.template, "cuda", kernel_dir.name)
    base = Space.of(t).baseline()
    for c in ({**base, "SPLIT": 8}, {**base, "SPLIT": 4, "VEC": 4, **({"ROW_LOOP": True} if "ROW_LOOP" in base
                                                                       else {})}):
        inst = t.instance(c, spec)
        compile_offline(inst.source, inst.name, "sm_90", inst.options)


def test_the_split_goes_as_far_as_the_device_has_compute_units(tmp_path):
    """Up to the first power of two that reaches the device's compute units (16 on 16, 32 on an H100's
    132 SMs); not offered below 8 compute units (a 2-core CPU: measured not to pay), nor where every
    shape's grid already has a group per compute unit."""
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(SPEC))
    spec = load_file(p).spec
    kernel = textwrap.dedent(_kernel())
    assert apply_catalog(kernel, "opencl", spec, compute_units=16).params["SPLIT"] == (1, 2, 4, 8, 16)
    assert apply_catalog(kernel, "opencl", spec, compute_units=132).params["SPLIT"] == (1, 2, 4, 8, 16, 32)
    two = apply_catalog(kernel, "opencl", spec, compute_units=2)
    assert "SPLIT" not in two.params and "2 compute unit(s)" in dict(two.skipped)["split-groups"]
    many = SPEC.replace("shapes: [{rows: 3, cols: 300}]", "shapes: [{rows: 300, cols: 300}]").replace(
        "holdout_shapes: [{rows: 2, cols: 37}]", "holdout_shapes: [{rows: 200, cols: 37}]")
    p.write_text(textwrap.dedent(many))
    busy = apply_catalog(kernel, "opencl", load_file(p).spec, compute_units=132)
    assert "at least 132 work-groups" in dict(busy.skipped)["split-groups"]


def test_the_rules_read_the_devices_limits_and_a_keyword_overrides_one(tmp_path):
    """apply_catalog(device=...) takes the compute units, sub-groups, vector width and threads per block
    from the device's info; a keyword limit given beside it wins over the device's value."""
    from kerntune.results import DeviceInfo

    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(SPEC))
    spec = load_file(p).spec
    kernel = textwrap.dedent(_kernel())
    h100 = DeviceInfo(id="offline:sm_90", backend="nvcc", lang="opencl", name="an H100's limits", sm_count=132)
    by_device = apply_catalog(kernel, "opencl", spec, device=h100)
    assert by_device.template == apply_catalog(kernel, "opencl", spec, compute_units=132).template
    assert by_device.params["SPLIT"] == (1, 2, 4, 8, 16, 32)
    small = h100.model_copy(update={"sm_count": 2, "subgroups": False, "vector_width": 8})
    declined = apply_catalog(kernel, "opencl", spec, device=small)
    assert "SPLIT" not in declined.params and "2 compute unit(s)" in dict(declined.skipped)["split-groups"]
    assert declined.template == apply_catalog(kernel, "opencl", spec, compute_units=2, subgroups=False,
                                              vector_width=8).template
    overridden = apply_catalog(kernel, "opencl", spec, device=small, compute_units=16)
    assert overridden.params["SPLIT"] == (1, 2, 4, 8, 16)


@pytest.mark.runtime
@pytest.mark.parametrize("kernel, vec, block", [
    ("flat", 1, 32), ("flat", 4, 32),
    ("rows", 1, 32),
    ("flat", 1, 64), ("rows", 1, 64),
])
def test_a_baked_split_is_not_taken_for_the_block_size(worker, tmp_path, kernel, vec, block):
    """Round 2 after a winner whose 1-D block of 32 equals its SPLIT: baked, the split's 32 (group / 32,
    group % 32, the step block size * 32 or a row loop's += 32, the grid rows * 32) were numbers round 2's
    launch-config took for the block and rewrote into KT_BLOCK: the split followed the block (up to 1024
    groups per item) and vectorize no longer saw the split loop. With a block of 64, twice the split,
    launch-config declined instead ('32, a number derived from the block size 64'): round 2 lost its
    BLOCK. launch-config must apply and rewrite no literal, the grid keep fixed(32), vectorize take the
    flat loop again, and every round-2 block size verify against the original kernel."""
    if kernel == "flat":
        source, spec = _kernel(), SPEC
    else:
        source, spec = ROWS_KERNEL.replace("BODY", "out[pair * cols + c] = x[pair * cols + c];"), ROWS_SPEC
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(spec).replace("block: [64]", f"block: [{block}]"))
    loaded = load_file(p)
    source = textwrap.dedent(source)
    first = apply_catalog(source, "opencl", loaded.spec, compute_units=132)
    assert {"launch-config", "split-groups"} <= set(first.applied_names), first.skipped
    t1 = parse_template(first.template, "opencl", "split round 1")
    c1 = {**Space.of(t1).baseline(), "BLOCK": block, "SPLIT": 32, **({"VEC": vec} if "VEC" in t1.decl.params else {})}
    assert c1.get("VEC", 1) == vec
    launch = resolve_launch_params(t1.decl.launch, c1)
    second = apply_catalog(bake(t1.render(c1, loaded.spec), "opencl"), "opencl", loaded.spec, launch=launch,
                           compute_units=132)
    lc = next((a for a in second.trace if a.rule == "launch-config"), None)
    assert lc is not None, dict(second.skipped)["launch-config"]
    assert "literal" not in lc.summary, lc.summary      # the kernel has no literal block size of its own
    assert "is split already" in dict(second.skipped)["split-groups"]
    if kernel == "flat" and vec == 1:     # (a loop vectorized in round 1 is not vectorized again)
        assert "vectorize" in second.applied_names, second.skipped
    t2 = parse_template(second.template, "opencl", f"split round 2 from BLOCK={block}, SPLIT=32 ({kernel}, VEC={vec})")
    assert t2.decl.launch.grid[0] == "rows * fixed(32)", t2.decl.launch.grid
    space2 = Space.of(t2)
    configs = [{**space2.baseline(), "BLOCK": b} for b in space2.params["BLOCK"]]
    assert len(configs) > 1
    original = KernelInstance(source, loaded.spec.kernel, "opencl", label="original")
    shapes = (*spec_shapes(loaded.spec), *holdout_shapes(loaded.spec))
    bad = _failures(worker, loaded, t2, original, configs, shapes, seed=5)
    assert bad == [], [(c["BLOCK"], status, msg[:300]) for c, status, msg in bad]


def test_an_original_group_modulo_the_block_size_is_still_the_blocks(tmp_path):
    """baked_split_literals keeps a split's K from launch-config only where the file both divides the
    group by K and takes it modulo K, as split-groups always writes: an original kernel's lone
    get_group_id(0) % 32 beside a block of 32 is a number launch-config rewrites into KT_BLOCK, as it
    did before baked splits were recognised (d73d44a took every group % K for a split's)."""
    lone = _kernel(pre="    const int lane = get_group_id(0) % 32;",
                   body="out[base + i] = x[base + i] * 2.0f + (float)lane;")
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(SPEC).replace("block: [64]", "block: [32]"))
    spec = load_file(p).spec       # (2 compute units: no split-groups in this round)
    result = apply_catalog(textwrap.dedent(lone), "opencl", spec, compute_units=2)
    lc = next((a for a in result.trace if a.rule == "launch-config"), None)
    assert lc is not None, dict(result.skipped)["launch-config"]
    assert "1 literal(s) rewritten" in lc.summary, lc.summary
    assert "get_group_id(0) % KT_BLOCK" in result.template
    # a baked split (both group / 32 and group % 32) stays the split's: see the test above
    both = lone.replace("(long)get_group_id(0) * cols", "(long)(get_group_id(0) / 32) * cols")
    result = apply_catalog(textwrap.dedent(both), "opencl", spec, compute_units=2)
    lc = next((a for a in result.trace if a.rule == "launch-config"), None)
    assert lc is not None and "literal" not in lc.summary, (lc and lc.summary, result.skipped)
