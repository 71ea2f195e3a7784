"""launch-config on a corpus of block-size-dependent kernels (tests/data/block_trees):
tree reductions written several ways (literal half blocks in local variables,
macros, constant expressions, while loops, unrolled tails, guards, helpers,
2-D blocks), strides, a histogram whose bin count equals the block, an
element-wise kernel whose groups cover two blocks' worth of elements.

The rule catalog is applied to each; when launch-config applies, every value
of its block parameters (the rest of the template at its first values) is
verified on the CPU OpenCL device against the original kernel and the NumPy
reference, with inputs drawn from four ranges. Every instance must verify,
or the rule must have declined."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kerntune.agents.rules.catalog import apply_catalog
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.results import Status
from kerntune.spec.load import load_for_kernel
from kerntune.spec.shapes import verification_shapes
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too

CORPUS = sorted((REPO / "tests/data/block_trees").glob("*.cl"))
RANGES = [(-1.0, 1.0), (-2.0, -1.0), (1.0, 3.0), (1.0e3, 1.0e4)]

# spellings the rule can rewrite correctly: the block size appears only as the literal itself (or a
# macro, or get_local_size), so everything that depends on it follows the parameter; or the code
# bounds the block (a fixed-size local array: at most its size; an unrolled tail from 32: at least 64)
APPLIES = {"tree_div_literal", "tree_define_shift", "tree_stride_literal", "tree_interleaved",
           "tree_local_size_var", "tree_2d_param", "tree_oversized_array", "tree_array_expr", "tree_warp_tail"}
# and the limits it must have found
LIMITS = {"tree_oversized_array": (256, 32, 64, 128), "tree_array_expr": (256, 32, 64, 128),
          "tree_warp_tail": (256, 64, 128, 512, 1024)}


def with_range(spec, lo: float, hi: float):
    args = [a.model_copy(update={"range": (lo, hi)}) if a.is_array and a.intent == "in" and a.dt.is_float else a
            for a in spec.args]
    return spec.model_copy(update={"args": args})


@pytest.mark.parametrize("kernel", CORPUS, ids=lambda p: p.stem)
def test_launch_config_declines_or_every_block_size_verifies(worker, kernel: Path):
    loaded = load_for_kernel(kernel)
    spec = loaded.spec
    source = kernel.read_text()
    result = apply_catalog(source, "opencl", spec, device=worker.info)
    skipped = dict(result.skipped)
    if kernel.stem not in APPLIES:
        assert "launch-config" not in result.applied_names, f"{kernel.stem}: the rule should have declined"
        assert "launch-config" in skipped
        return
    assert "launch-config" in result.applied_names, skipped.get("launch-config")
    t = parse_template(result.template, "opencl", kernel.stem)
    space = Space.of(t)
    launch = next(a for a in result.trace if a.rule == "launch-config")
    if kernel.stem in LIMITS:
        assert space.params["BLOCK"] == LIMITS[kernel.stem]
    shapes = tuple(verification_shapes(spec))
    configs = []
    for values in itertools.product(*(space.params[p] for p in launch.params)):
        c = {**space.baseline(), **dict(zip(launch.params, values))}
        if space.violated(c, shapes) is None:
            configs.append(c)
    assert len(configs) > 1
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    floats = any(a.is_array and a.intent == "in" and a.dt.is_float for a in spec.args)
    bad = []
    for lo, hi in RANGES if floats else [(None, None)]:
        s = with_range(spec, lo, hi) if floats else spec
        for c in configs:
            res = worker.evaluate(EvalRequest(t.instance(c, s), s, str(loaded.base_dir), shapes, (), seed=11,
                                              reference=original, timing=None), 120)
            if res.status is not Status.OK:
                bad.append(((lo, hi), c, res.status.value, res.message[:200]))
    assert bad == [], f"{kernel.stem}: {len(bad)} instance(s) wrong: {bad[:4]}"


CUDA_TREE = """
extern "C" __global__ void row_sum(float* out, const float* x, int rows, int cols)
{
    SHARED
    const int r = blockIdx.x;
    const int t = threadIdx.x;
    float acc = 0.0f;
    for (int c = t; c < cols; c += blockDim.x)
        acc += x[(long long)r * cols + c];
    sm[t] = acc;
    __syncthreads();
    TREE
    if (t == 0)
        out[r] = sm[0];
}
"""
HALF = """for (int s = 128; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }"""
PARAMETRIC = """for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }"""
TAIL = """for (int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    for (int s = 32; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }"""


@pytest.mark.parametrize("shared,tree,shared_mem,expect", [
    ("__shared__ float sm[256];", HALF, 0, None),
    ("__shared__ float sm[256];", PARAMETRIC, 0, (256, 32, 64, 128, 512, 1024)),
    ("__shared__ float sm[256];", TAIL, 0, (256, 64, 128, 512, 1024)),
    ("extern __shared__ float sm[];", PARAMETRIC, "4 * 256", (256, 32, 64, 128, 512, 1024)),
    ("extern __shared__ float sm[];", PARAMETRIC, 1024, None),
], ids=["literal-half", "parametric", "tail-from-32", "dynamic-follows", "dynamic-fixed"])
def test_cuda_spellings(shared, tree, shared_mem, expect):
    """The same analysis on CUDA (threadIdx/blockDim, __shared__, __syncthreads, dynamic shared memory)."""
    spec = load_for_kernel(REPO / "tests/data/block_trees/tree_stride_literal.cl").spec
    spec = spec.model_copy(update={"launch": spec.launch.model_copy(update={"shared_mem": shared_mem})})
    source = CUDA_TREE.replace("SHARED", shared).replace("TREE", tree)
    result = apply_catalog(source, "cuda", spec)
    if expect is None:
        assert "launch-config" not in result.applied_names, result.params
    else:
        assert result.params.get("BLOCK") == expect, dict(result.skipped).get("launch-config")


@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
@pytest.mark.parametrize("kernel", [p for p in CORPUS if p.stem in APPLIES], ids=lambda p: p.stem)
def test_every_block_size_instance_is_clean_under_the_memory_checker(worker, kernel: Path):
    """Right answers are not enough: every instance the rule offers also runs under Oclgrind (out-of-
    bounds local and global accesses, races, uninitialized reads, barrier divergence) on small shapes."""
    from kerntune.engine.checker import MemoryChecker, check_shapes
    from kerntune.results import CheckStatus

    loaded = load_for_kernel(kernel)
    spec = loaded.spec
    result = apply_catalog(kernel.read_text(), "opencl", spec, device=worker.info)
    t = parse_template(result.template, "opencl", kernel.stem)
    space = Space.of(t)
    launch = next(a for a in result.trace if a.rule == "launch-config")
    shapes = check_shapes(spec)
    checker = MemoryChecker(worker.info)
    findings = []
    for values in itertools.product(*(space.params[p] for p in launch.params)):
        c = {**space.baseline(), **dict(zip(launch.params, values))}
        if space.violated(c, tuple(verification_shapes(spec))) is not None:
            continue
        report = checker.check(t.instance(c, spec), spec, str(loaded.base_dir), shapes, 5)
        if report.status is not CheckStatus.CLEAN:
            findings.append((c, report.status.value, report.message))
    assert findings == [], f"{kernel.stem}: {findings[:3]}"


# the trees that are not the whole block's: a loop from a hand-unrolled first step, one over two values
# per thread, one down to 64 partials that other code adds up; shuffle-reduction once replaced each with a
# reduction of the whole block (wrong results: the audit, scripts/audit_rules.py, found them)
PARTIAL_TREES = {"tree_first_step_guard", "tree_two_per_thread", "tree_warp_tail"}


@pytest.mark.parametrize("kernel", CORPUS, ids=lambda p: p.stem)
def test_shuffle_reduction_declines_or_verifies(worker, kernel: Path):
    """Each tree of the corpus: shuffle-reduction declines (the partial trees, with the reason) or its
    sub-group reduction verifies against the original kernel at every block size of the template."""
    if not worker.info.subgroups:
        pytest.skip(f"{worker.info.name} has no sub-groups: shuffle-reduction declines on it")
    loaded = load_for_kernel(kernel)
    spec = loaded.spec
    source = kernel.read_text()
    result = apply_catalog(source, "opencl", spec, subgroups=True)
    skipped = dict(result.skipped)
    if kernel.stem in PARTIAL_TREES:
        assert "shuffle-reduction" not in result.applied_names
        assert "not the whole tree" in skipped["shuffle-reduction"], skipped["shuffle-reduction"]
        return
    if "shuffle-reduction" not in result.applied_names:
        return
    t = parse_template(result.template, "opencl", kernel.stem)
    space = Space.of(t)
    shapes = tuple(verification_shapes(spec))
    reduce = [p for p in space.params if p.startswith("REDUCE")]
    configs = [{**space.baseline(), **{p: "shuffle" for p in reduce}, **({"BLOCK": b} if "BLOCK" in space.params else {})}
               for b in (space.params.get("BLOCK") or [None])]
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    bad = []
    for c in configs:
        if space.violated(c, shapes) is not None:
            continue
        res = worker.evaluate(EvalRequest(t.instance(c, spec), spec, str(loaded.base_dir), shapes, (), seed=11,
                                          reference=original, timing=None), 120)
        if res.status is not Status.OK:
            bad.append((c, res.status.value, res.message[:200]))
    assert bad == [], f"{kernel.stem}: {bad[:3]}"


@pytest.mark.parametrize("tree, whole", [(HALF, True), (PARAMETRIC, True), (TAIL, False),
                                         (PARAMETRIC.replace("blockDim.x / 2", "blockDim.x"), False),
                                         (PARAMETRIC.replace("s >>= 1", "s = s / 2"), True),
                                         (PARAMETRIC.replace("if (t < s)", "if (t <= s)"), False)],
                         ids=["literal-half", "parametric", "tail-from-32", "from-the-block", "divided", "guard-off-by-one"])
def test_cuda_shuffle_reduction_takes_only_the_whole_tree(tree, whole):
    """In CUDA too: the warp-shuffle reduction replaces a loop only when it is the whole tree, however
    its steps are spelled."""
    spec = load_for_kernel(REPO / "tests/data/block_trees/tree_stride_literal.cl").spec
    source = CUDA_TREE.replace("SHARED", "__shared__ float sm[256];").replace("TREE", tree)
    result = apply_catalog(source, "cuda", spec)
    assert ("shuffle-reduction" in result.applied_names) is whole, dict(result.skipped).get("shuffle-reduction")
