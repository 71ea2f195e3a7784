"""Classic kernel pairs of the library (kernels/classic/{sgemm,stencil7,reduce_sum}): the naive and
optimized OpenCL kernels agree on the CPU under one spec, every OpenCL template instance verifies on
the CPU, and the CUDA kernels and every CUDA template instance compile for sm_90 with nvcc."""

from __future__ import annotations

import itertools
import json

import pytest

from kerntune.engine.evaluate import KernelInstance, resolve_launch
from kerntune.kernelfile import load_kernel
from kerntune.spec.load import load_file
from kerntune.spec.shapes import verification_shapes
from kerntune.tuner.template import check_against_spec, load_template
from tests.conftest import REPO, run_cli
from tests.library import compile_every_instance, covering_pairs, verify_every_instance

pytestmark = pytest.mark.runtime   # the OpenCL runtime's compiler, numerics or limits decide these: .ci/run runs them on PoCL too

KERNELS = REPO / "kernels" / "classic"
TEMPLATES = REPO / "templates" / "classic"
NAMES = ["sgemm", "stencil7", "reduce_sum"]

# The template configuration that is the hand-written optimized kernel (other parameters at their first values).
OPTIMIZED = {
    "sgemm": {"MODE": "shared"},
    "stencil7": {"MODE": "march", "SHARED": True},
    "reduce_sum": {"LOAD": "stride", "TREE": "sequential"},   # FINAL: shuffle (CUDA) / unrolled (OpenCL)
}
OPTIMIZED_FINAL = {"cu": "shuffle", "cl": "unrolled"}


def _spec(name: str):
    return KERNELS / name / "spec.yaml"


def _optimized_config(template, name: str, ext: str) -> dict:
    config = {**template.baseline, **OPTIMIZED[name]}
    if name == "reduce_sum":
        config["FINAL"] = OPTIMIZED_FINAL[ext]
    return config


@pytest.mark.parametrize("name", NAMES)
def test_every_implementation_finds_the_folder_spec(name):
    specs = {load_kernel(KERNELS / name / f"{v}.{ext}").loaded.origin
             for v in ("naive", "optimized") for ext in ("cu", "cl")}
    assert specs == {_spec(name)}


@pytest.mark.parametrize("ext", ["cu", "cl"])
@pytest.mark.parametrize("name", NAMES)
def test_template_baseline_and_optimized_configs_use_the_spec_launch(name, ext):
    """The baseline (first values) is the naive kernel and the optimized configuration the optimized
    kernel: both must launch exactly like the spec says for every shape."""
    loaded = load_file(_spec(name))
    spec = loaded.spec
    template = load_template(TEMPLATES / f"{name}.{ext}.j2")
    check_against_spec(template, spec)
    plain = KernelInstance("", spec.kernel, template.lang)
    for config in (template.baseline, _optimized_config(template, name, ext)):
        inst = template.instance(config, spec)
        assert inst.name == spec.kernel and f" {spec.kernel}(" in inst.source
        for set_name in (None, "cpu"):
            for shape in verification_shapes(spec, set_name):
                assert resolve_launch(spec, inst, shape) == resolve_launch(spec, plain, shape), (config, shape.label)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_naive_and_optimized_opencl_agree_on_cpu(name):
    folder = KERNELS / name
    r = run_cli("bench", str(folder / "naive.cl"), "--against", str(folder / "optimized.cl"), "--device", "cpu",
                "--shape-set", "cpu", "--repeats", "3", "--warmup", "1", "--json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    naive, optimized = report["kernel"], report["against"]
    assert naive["status"] == "ok" and optimized["status"] == "ok"
    assert naive["verification"]["reference"] == "numpy"
    assert optimized["verification"]["reference"] == "kernel"
    assert any(s["holdout"] for s in optimized["verification"]["shapes"])
    assert len(report["rows"]) == 3 and all(row["speedup"] for row in report["rows"])


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_opencl_template_instance_verifies_on_cpu(worker, name):
    failures = verify_every_instance(worker, TEMPLATES / f"{name}.cl.j2", _spec(name), shape_set="cpu")
    assert not failures, "\n".join(failures)


def test_the_second_runtimes_instances_cover_every_pair_of_values():
    """.ci/run's PoCL pass verifies covering_pairs' subset: every pair of values that occurs together in
    the feasible instances occurs in one chosen instance, and the first (the baseline) is among them."""
    full = [dict(zip("ABCD", v)) for v in itertools.product([1, 2, 3], ["x", "y", "z"], [True, False], [8, 16, 32])]
    feasible = [c for c in full if not (c["A"] == 3 and c["B"] == "z")]     # a restriction
    chosen = covering_pairs(feasible)
    assert chosen[0] == feasible[0] and all(c in feasible for c in chosen) and len(chosen) <= len(feasible) / 3
    for a, b in itertools.combinations("ABCD", 2):
        assert {(c[a], c[b]) for c in chosen} == {(c[a], c[b]) for c in feasible}
    assert covering_pairs([]) == []


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", ["naive", "optimized"])
@pytest.mark.parametrize("name", NAMES)
def test_cuda_kernels_compile_offline(name, variant):
    r = run_cli("check", str(KERNELS / name / f"{variant}.cu"), "--offline", "--json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["resources"]["source"] == "ptxas"
    assert report["resources"]["spill_store_bytes"] == 0
    assert all(not launch["problems"] for launch in report["launches"])


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_cuda_template_instance_compiles(name):
    report, bad = compile_every_instance(TEMPLATES / f"{name}.cu.j2", _spec(name))
    assert not bad, "\n".join(f"{e.key}: {e.status}: {e.message}" for e in bad)
    compiled = [e for e in report.entries if e.status == "compiled"]
    assert compiled and compiled[0].config == load_template(TEMPLATES / f"{name}.cu.j2").baseline
    assert len(compiled) <= 120
