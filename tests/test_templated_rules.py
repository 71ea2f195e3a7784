"""The rule catalog, templates and tuned kernel files on templated kernels (C++ templates from
extension sources), compiled offline with nvcc for sm_90."""

import json

import pytest

from kerntune.agents.rules.catalog import apply_catalog
from kerntune.backends.nvcc import compile_offline
from kerntune.kernelfile import load_kernel
from kerntune.tuner.space import Space
from kerntune.tuner.template import check_against_spec, parse_template
from tests.conftest import REPO, run_cli, write

pytestmark = pytest.mark.nvcc

CORPUS = REPO / "tests/data/extensions"


def _catalog(kernel_file, spec):
    kf = load_kernel(kernel_file, spec)
    result = apply_catalog(kf.source, kf.lang, kf.spec, kernel=kf.kernel_name)
    t = parse_template(result.template, "cuda", "catalog")
    check_against_spec(t, kf.spec)
    return kf, result, t


def test_block_size_template_argument_follows_the_block_parameter():
    """merge_attn_states_kernel<scalar_t, NUM_THREADS> indexes with blockIdx.x * NUM_THREADS: a block of 256
    is only right with NUM_THREADS = 256, so the rule ties the instantiation to BLOCK."""
    kf, result, t = _catalog(CORPUS / "csrc/attention/merge_attn_states.cu",
                             CORPUS / "expected/merge_attn_states_kernel.yaml")
    assert {"launch-config", "launch-bounds"} <= set(result.applied_names)
    assert t.decl.kernel == "ext::merge_attn_states_kernel<__nv_bfloat16, {{ BLOCK }}>"
    assert "NUM_THREADS follows it" in result.trace[0].summary
    seen = set()
    for config in Space.of(t).configs():
        if config["FAST_FLAGS"] or config["BLOCK"] in seen:
            continue
        seen.add(config["BLOCK"])
        inst = t.instance(dict(config), kf.spec)
        assert inst.name == f"ext::merge_attn_states_kernel<__nv_bfloat16, {config['BLOCK']}>"
        r = compile_offline(inst.source, inst.name, options=inst.options)
        assert r.resources.registers > 0
    assert seen == {32, 64, 128, 256, 512, 1024}


def test_every_rule_sees_through_the_template_header():
    """A block-stride templated kernel: launch-config, unroll and launch-bounds all apply to the
    `template <...> __global__` function; every instance compiles."""
    kf, result, t = _catalog(CORPUS / "csrc/activation/act_and_mul.cu", CORPUS / "expected/silu_and_mul_kernel.yaml")
    assert {"launch-config", "unroll", "launch-bounds", "fast-math"} <= set(result.applied_names)
    assert t.decl.kernel == "ext::silu_and_mul_kernel<__nv_bfloat16, true>"    # no block argument to tie
    configs = list(Space.of(t).configs())
    for config in configs[:: max(1, len(configs) // 8)]:
        inst = t.instance(dict(config), kf.spec)
        assert "__global__ void" in inst.source and "template <typename T, bool USE_FAST_EXP>" in inst.source
        compile_offline(inst.source, inst.name, options=inst.options)


def test_tune_dry_run_and_kernel_files_name_their_instantiation(tmp_path):
    """A hand-written .cu.j2 template of a templated kernel whose template argument is a parameter:
    the dry run compiles each instantiation; the kernel files it writes say their entry point."""
    spec = write(tmp_path, "spec.yaml", """
        kernel: "scale_kernel<float, 128>"
        args:
          - {name: y, dtype: fp32, shape: [n], intent: out}
          - {name: x, dtype: fp32, shape: [n], intent: in}
          - {name: n, dtype: int32, value: n}
        launch: {grid: ["ceil_div(n, 128)"], block: [128]}
        shapes: [{n: 5000}]
    """)
    template = write(tmp_path, "scale.cu.j2", """
        {# kerntune-template
        kernel: "scale_kernel<float, {{ BLOCK }}>"
        params:
          BLOCK: [128, 256, 64]
        launch:
          grid: ["ceil_div(n, BLOCK)"]
          block: [BLOCK]
        #}
        template <typename T, int THREADS>
        __global__ void __launch_bounds__(THREADS) {{ kernel_function }}(T* y, const T* x, int n) {
            const int i = blockIdx.x * THREADS + threadIdx.x;
            if (i < n) y[i] = 2 * x[i];
        }
    """)
    r = run_cli("tune", str(template), "--spec", str(spec), "--dry-run", "--target", "h100", "--json")
    assert r.returncode == 0, r.stderr
    entries = json.loads(r.stdout)["entries"]
    assert [e["status"] for e in entries] == ["compiled"] * 3
    from kerntune.spec.load import load_file
    from kerntune.tuner.kernel_files import instance_file, launch_dict, own_kernel
    from kerntune.tuner.template import load_template

    t, sp = load_template(template), load_file(spec).spec
    text, launch, options = instance_file(t, {"BLOCK": 256}, sp, "best")
    assert "// entry point: scale_kernel<float, 256>" in text
    assert launch_dict(launch, options, own_kernel(t, {"BLOCK": 256}, sp))["kernel"] == "scale_kernel<float, 256>"
    assert own_kernel(t, {"BLOCK": 128}, sp) is None
    # a spec's launches entry carries it: bench and check launch that file with its own instantiation
    best = tmp_path / "best.cu"
    best.write_text(t.render({"BLOCK": 256}, sp))
    (tmp_path / "run.yaml").write_text(spec.read_text() + "launches:\n  best: {grid: [\"ceil_div(n, 256)\"], "
                                                          "block: [256], kernel: \"scale_kernel<float, 256>\"}\n")
    kf = load_kernel(best, tmp_path / "run.yaml")
    assert kf.kernel_name == "scale_kernel<float, 256>" and kf.instance().name == "scale_kernel<float, 256>"
    r = run_cli("check", str(best), "--spec", str(tmp_path / "run.yaml"), "--json")
    assert r.returncode == 0, r.stderr
