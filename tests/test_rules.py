"""The rule catalog: every rule's precondition and rewrite on small kernels.
Rewrites are checked for real: OpenCL instances verified on the CPU against
the original kernel, CUDA instances compiled with nvcc for sm_90."""

import random
from pathlib import Path

import pytest

from kerntune.agents.bake import bake
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.results import Status
from kerntune.source.parse import parse
from kerntune.spec.load import load_file
from kerntune.spec.shapes import verification_shapes
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO, write

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too


def sample(space: Space, seed: int = 0, extra: int = 3) -> list[dict]:
    """The baseline, each parameter's other values one at a time, and a few random mixes."""
    base = space.baseline()
    out = [base] + [{**base, k: v} for k, vals in space.params.items() for v in vals[1:]]
    rng = random.Random(seed)
    return out + [space.random_config(rng) for _ in range(extra)]


def catalog(kernel: Path, spec: Path, lang: str, **kw):
    loaded = load_file(spec)
    s = loaded.spec.model_copy(update={"noalias": True})
    r = apply_catalog(kernel.read_text(), lang, s, **kw)
    return r, parse_template(r.template, lang, "generated"), s, loaded


def shuffle(worker) -> set[str]:
    """shuffle-reduction where the device has sub-groups (PoCL's CPU device has none: it declines)."""
    return {"shuffle-reduction"} if worker.info.subgroups else set()


def verify_sample(worker, kernel: Path, spec: Path, shape_set=None, expect_failures=()):
    r, t, s, loaded = catalog(kernel, spec, "opencl", subgroups=worker.info.subgroups,
                              vector_width=worker.info.vector_width)
    original = KernelInstance(kernel.read_text(), s.kernel, "opencl", label="original")
    shapes = tuple(verification_shapes(s, shape_set))
    space = Space.of(t)
    bad = []
    for c in sample(space):
        if space.violated(c, shapes):
            continue
        res = worker.evaluate(EvalRequest(t.instance(c, s), s, str(loaded.base_dir), shapes, (), seed=5,
                                          reference=original, timing=None), 300)
        if res.status is not Status.OK and not any(c.get(k) == v for k, v in expect_failures):
            bad.append((c, res.status.value, res.message))
    return r, bad


def test_baseline_of_every_generated_template_is_the_original(worker):
    r, bad = verify_sample(worker, REPO / "kernels/examples/row_sum.cl", REPO / "kernels/examples/row_sum.yaml")
    assert {"launch-config", "vectorize", "unroll", "restrict"} | shuffle(worker) <= set(r.applied_names)
    assert bad == []


def test_elementwise_kernel_gets_elements_per_thread(worker):
    r, bad = verify_sample(worker, REPO / "kernels/examples/vector_add.cl", REPO / "kernels/examples/vector_add.yaml",
                           shape_set="cpu")   # the 16M-element shape cost 92 s here, 148 s on PoCL, and adds no case
    assert "elements-per-thread" in r.applied_names and "EPT" in r.params
    assert bad == []


def test_sglang_activation_vectorized_and_fast_math(worker):
    spec = REPO / "kernels/sglang/silu_and_mul/spec.yaml"     # bf16: native_exp is within tolerance
    r, bad = verify_sample(worker, REPO / "kernels/sglang/silu_and_mul/silu_and_mul.cl", spec, shape_set="cpu")
    assert {"vectorize", "fast-math", "launch-config"} <= set(r.applied_names)
    assert bad == []


def test_rmsnorm_block_size_macro_and_local_tree(worker):
    spec = REPO / "kernels/sglang/fused_add_rmsnorm/spec.yaml"
    r, bad = verify_sample(worker, REPO / "kernels/sglang/fused_add_rmsnorm/fused_add_rmsnorm.cl", spec,
                           shape_set="cpu")
    assert {"launch-config", "vectorize"} | shuffle(worker) <= set(r.applied_names)
    assert "#define THREADS  KT_BLOCK" in r.template                  # the block-size macro follows the parameter
    assert bad == []


def test_block_size_entangled_with_other_constants_is_left_alone():
    r, t, s, _ = catalog(REPO / "kernels/classic/sgemm/naive.cl", REPO / "kernels/classic/sgemm/spec.yaml", "opencl")
    why = dict(r.skipped)["launch-config"]
    assert "derived from the block size" in why and "BLOCK" not in r.params


def test_rules_only_touch_the_specs_kernel():
    # the fp32 spec names silu_and_mul_fp32: the bf16 entry must come out unchanged
    src = (REPO / "kernels/sglang/silu_and_mul/silu_and_mul.cl").read_text()
    r, t, s, _ = catalog(REPO / "kernels/sglang/silu_and_mul/silu_and_mul.cl",
                         REPO / "kernels/sglang/silu_and_mul/fp32.yaml", "opencl")
    bf16 = src[src.index("__kernel void silu_and_mul_bf16"):]
    assert bf16.strip() in t.render(t.baseline, s)


def test_unrecognized_kernel_still_gets_generic_parameters(tmp_path):
    k = write(tmp_path, "odd.cl", """
        __kernel void odd(__global float* out, __global const float* a, const int n) {
            const int g = get_group_id(0);
            out[g] = a[g] * 2.0f;
        }
    """)
    spec = write(tmp_path, "odd.yaml", """
        kernel: odd
        args:
          - {name: out, dtype: fp32, shape: [n], intent: out}
          - {name: a, dtype: fp32, shape: [n], intent: in}
          - {name: n, dtype: int32, value: n}
        launch: {grid: [n], block: [1]}
        shapes: [{n: 100}]
    """)
    r, t, s, _ = catalog(k, spec, "opencl")
    assert r.applied_names == ["restrict", "compiler-flags"] and r.space_size == 4
    assert "launch-config" in dict(r.skipped) and "single-thread blocks" in dict(r.skipped)["launch-config"]


def test_bake_resolves_macros_and_branches():
    r, t, s, _ = catalog(REPO / "kernels/examples/row_sum.cu", REPO / "kernels/examples/row_sum.yaml", "cuda")
    config = {**t.baseline, "BLOCK": 512, "REDUCE_0": "shuffle", "VEC": 4, "RESTRICT": True}
    baked = bake(t.render(config, s), "cuda")
    assert "KT_BLOCK" not in baked and "KT_VEC" not in baked and "#if KT_" not in baked
    assert "partial[512]" in baked and "kt_block_reduce_sum(partial" in baked and "kt_vload<4>" in baked
    assert "for (int stride" not in baked           # the tree's dead branch is gone
    assert not parse(baked, "cuda").has_errors
    # and the baked kernel is itself a valid starting point for another round
    again = apply_catalog(baked, "cuda", s, launch=s.launch.model_copy(update={"block": [512]}))
    assert "launch-config" in again.applied_names and "KT_HAVE_VEC_HELPERS" in again.template


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel,spec", [
    ("kernels/examples/row_sum.cu", "kernels/examples/row_sum.yaml"),
    ("kernels/examples/vector_add.cu", "kernels/examples/vector_add.yaml"),
    ("kernels/sglang/silu_and_mul/silu_and_mul.cu", "kernels/sglang/silu_and_mul/spec.yaml"),
    ("kernels/sglang/fused_add_rmsnorm/fused_add_rmsnorm.cu", "kernels/sglang/fused_add_rmsnorm/spec.yaml"),
    ("kernels/classic/reduce_sum/naive.cu", "kernels/classic/reduce_sum/spec.yaml"),
])
def test_cuda_rewrites_compile(kernel, spec):
    from concurrent.futures import ThreadPoolExecutor

    from kerntune.backends.nvcc import compile_offline

    r, t, s, _ = catalog(REPO / kernel, REPO / spec, "cuda")
    assert {"launch-config", "launch-bounds"} <= set(r.applied_names)
    space = Space.of(t)
    shapes = tuple(verification_shapes(s))
    configs = [c for c in sample(space, extra=2) if not space.violated(c, shapes)]

    def build(c):
        inst = t.instance(c, s)
        compile_offline(inst.source, inst.name, "sm_90", inst.options)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(build, configs))


def test_atomics_privatized_per_block(worker):
    r, bad = verify_sample(worker, REPO / "kernels/classic/histogram/naive.cl",
                           REPO / "kernels/classic/histogram/spec.yaml", shape_set="cpu")
    assert "privatize-atomics" in r.applied_names and "PRIVATE" in r.params
    assert bad == []
    # generated loops (the fill and the merge) get no unroll parameters of their own
    assert sum(1 for p in r.params if p.startswith("UNROLL")) == 1


def test_atomics_on_arrays_read_elsewhere_are_left_alone(tmp_path):
    k = write(tmp_path, "h.cl", """
        __kernel void h(__global uint* counts, __global const uchar* data, const int n) {
            const int i = get_global_id(0);
            if (i < n) atomic_inc(&counts[data[i]]);
            if (i == 0) counts[0] += 0;
        }
    """)
    spec = write(tmp_path, "h.yaml", """
        kernel: h
        args:
          - {name: counts, dtype: uint32, shape: [256], intent: inout}
          - {name: data, dtype: uint8, shape: [n], intent: in}
          - {name: n, dtype: int32, value: n}
        launch: {grid: ["ceil_div(n, 256)"], block: [256]}
        shapes: [{n: 1000}]
    """)
    r, t, s, _ = catalog(k, spec, "opencl")
    assert "privatize-atomics" not in r.applied_names
    assert "used only through atomics" in dict(r.skipped)["privatize-atomics"]


def test_sub_group_reductions_only_where_the_device_has_sub_groups():
    """A rule asks the device for what it needs: without sub-groups (PoCL's CPU device, for one) the
    shuffle reduction declines, and with them the 'tree' baseline carries no sub-group code at all."""
    from kerntune.agents.rules.catalog import apply_catalog
    from kerntune.tuner.template import parse_template

    loaded = load_file(REPO / "kernels/examples/row_sum.yaml")
    source = (REPO / "kernels/examples/row_sum.cl").read_text()
    without = apply_catalog(source, "opencl", loaded.spec, subgroups=False)
    assert "shuffle-reduction" not in without.applied_names
    assert "no sub-groups" in dict(without.skipped)["shuffle-reduction"]
    with_ = apply_catalog(source, "opencl", loaded.spec, subgroups=True)
    assert "shuffle-reduction" in with_.applied_names
    t = parse_template(with_.template, "opencl", "row_sum")
    base = t.instance(t.baseline, loaded.spec).source
    shuffle = t.instance({**t.baseline, "REDUCE_0": "shuffle"}, loaded.spec).source
    assert "sub_group_reduce" not in bake(base, "opencl") and "sub_group_reduce" in bake(shuffle, "opencl")
