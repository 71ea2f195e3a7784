"""The catalog's static shared-memory estimate: a lower bound on what an instance declares, in the
template's parameters, so that the tuner prunes a configuration that cannot fit before compiling it."""

from __future__ import annotations

import random

import pytest

from kerntune.agents.bake import bake
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.agents.rules.sharedmem import element_bytes
from kerntune.hardware import load_profile
from kerntune.kernelfile import load_kernel
from kerntune.spec import expr
from kerntune.spec.shapes import spec_shapes
from kerntune.tuner.feasibility import before_compile
from kerntune.tuner.kernel_files import resolve_launch_params
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO

CLASSIC = REPO / "kernels/classic"


@pytest.mark.parametrize("type_text, lang, size", [
    ("float", "cuda", 4), ("unsigned int", "cuda", 4), ("volatile float", "cuda", 4), ("__half", "cuda", 2),
    ("float4", "cuda", 16), ("float3", "cuda", 12), ("float3", "opencl", 16), ("ulong", "opencl", 8),
    ("double2", "opencl", 16), ("long", "cuda", None), ("MyStruct", "cuda", None), ("float8", "cuda", None),
])
def test_element_sizes(type_text, lang, size):
    assert element_bytes(type_text, lang) == size


def _template(path, lang, source=None, launch=None):
    kf = load_kernel(path)
    result = apply_catalog(source or kf.source, lang, kf.spec, kernel=kf.kernel_name,
                           launch=launch or kf.instance("original").launch, compute_units=132)
    return kf, parse_template(result.template, lang, str(path))


def _estimate(t, spec, config) -> int:
    return expr.evaluate_int(str(t.decl.shared_estimate), {**spec.constants, **config}, "shared_estimate")


def test_a_tile_tied_to_the_block_is_estimated_and_pruned_before_compiling():
    """transpose optimized.cu, round 2 from BLOCK_X = 64: the tile is BLOCK_X x (BLOCK_X + 1) floats;
    at 128 that is 66 KB, past the 48 KB of static shared memory a CUDA block may have."""
    kf, t1 = _template(CLASSIC / "transpose/optimized.cu", "cuda")
    assert t1.decl.shared_estimate is not None
    first = {**Space.of(t1).baseline(), "BLOCK_X": 64}
    assert _estimate(t1, kf.spec, first) == 64 * 65 * 4
    baked = bake(t1.render(first, kf.spec), "cuda")
    _, t2 = _template(CLASSIC / "transpose/optimized.cu", "cuda", baked, resolve_launch_params(t1.decl.launch, first))
    space = Space.of(t2)
    assert 128 in space.params["BLOCK_X"]
    h100 = load_profile("h100")
    shapes = tuple(spec_shapes(kf.spec))[:1]
    big = {**space.baseline(), "BLOCK_X": 128, "BLOCK_Y": 8}
    assert _estimate(t2, kf.spec, big) == 128 * 129 * 4
    why = before_compile(t2, space, big, kf.spec, shapes, h100)
    assert why is not None and why.reason == "shared_memory", why
    assert before_compile(t2, space, {**big, "BLOCK_X": 64}, kf.spec, shapes, h100) is None


def test_an_array_under_a_conditional_is_not_counted():
    source = """
    #define KT_X 8
    __global__ void k(float* out) {
    #if KT_X > 4
        __shared__ float a[KT_X * 64];
    #endif
        __shared__ int b[KT_X];
        __shared__ float c[n_runtime];
        extern __shared__ float dyn[];
        out[0] = 0.0f;
    }
    """
    from kerntune.agents.rules.base import Param, RewriteState
    from kerntune.agents.rules.sharedmem import shared_estimate
    from kerntune.spec.load import load_file

    spec = load_file(CLASSIC / "transpose/spec.yaml").spec
    st = RewriteState(lang="cuda", source=source.replace("#define KT_X 8\n", ""), kernel="k", spec=spec,
                      launch=spec.launch)
    st.add_param(Param("X", (8, 16), "#define KT_X {{ X }}"))
    assert shared_estimate(st) == "(X) * 4"


def test_a_helper_called_only_under_a_conditional_is_not_counted():
    from kerntune.agents.rules.base import Param, RewriteState
    from kerntune.agents.rules.sharedmem import shared_estimate
    from kerntune.spec.load import load_file

    source = """
    __device__ float staged(float v) { __shared__ float s[KT_X * 32]; s[0] = v; return s[0]; }
    __device__ float other(float v) { __shared__ double t[KT_X]; t[0] = v; return t[0]; }
    __global__ void k(float* out) {
    #if KT_X > 4
        out[0] = staged(out[0]);
    #endif
        out[1] = other(out[1]);
    }
    """
    spec = load_file(CLASSIC / "transpose/spec.yaml").spec
    st = RewriteState(lang="cuda", source=source, kernel="k", spec=spec, launch=spec.launch)
    st.add_param(Param("X", (8, 16), "#define KT_X {{ X }}"))
    assert shared_estimate(st) == "(X) * 8"
    st2 = RewriteState(lang="cuda", source=source.replace("#if KT_X > 4\n", "").replace("    #endif\n", ""),
                       kernel="k", spec=spec, launch=spec.launch)
    st2.add_param(Param("X", (8, 16), "#define KT_X {{ X }}"))
    assert shared_estimate(st2) == "(X * 32) * 4 + (X) * 8"


def _sampled(t, spec, n, seed=1):
    space = Space.of(t)
    rng = random.Random(seed)
    out = [space.baseline()]
    for _ in range(50 * n):
        c = space.random_config(rng)
        if len(out) < n and c not in out and not space.violated(c, tuple(spec_shapes(spec))[:1], spec.constants):
            out.append(c)
    return out


KERNELS = ["transpose/optimized", "reduce_sum/optimized", "stencil7/optimized", "sgemm/optimized",
           "histogram/optimized"]


@pytest.mark.nvcc
@pytest.mark.parametrize("name", KERNELS)
def test_the_estimate_never_exceeds_what_ptxas_reports(name):
    from kerntune.backends.nvcc import compile_offline

    kf, t = _template(CLASSIC / f"{name}.cu", "cuda")
    assert t.decl.shared_estimate is not None
    exact = 0
    for config in _sampled(t, kf.spec, 6):
        inst = t.instance(config, kf.spec)
        got = compile_offline(inst.source, inst.name, options=inst.options).resources.static_shared_bytes or 0
        want = _estimate(t, kf.spec, config)
        assert want <= got, (config, want, got)
        exact += want == got
    assert exact >= 1


@pytest.mark.parametrize("name", KERNELS)
def test_the_estimate_never_exceeds_the_opencl_local_memory(worker, name):
    kf, t = _template(CLASSIC / f"{name}.cl", "opencl")
    assert t.decl.shared_estimate is not None
    for config in _sampled(t, kf.spec, 4):
        inst = t.instance(config, kf.spec)
        resources, _ = worker.compile(inst.source, inst.name, inst.options, 120)
        assert _estimate(t, kf.spec, config) <= resources.static_shared_bytes, config
