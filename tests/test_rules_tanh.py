"""tanh-exp: tanh through one exp, as a parameter. Where it applies, what it writes, that its
instances verify against the original on the CPU's OpenCL device (scalar and vector arguments) and
compile with nvcc for CUDA."""

import textwrap

import pytest

from kerntune.agents.bake import bake
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import verification_shapes
from kerntune.tuner.template import parse_template
from tests.conftest import REPO, write

GELU = REPO / "kernels/heldout3/gelu_tanh"

VECTOR_TANH = """
#define GELU(v) (0.5f * (v) * (1.0f + tanh(0.7978845608f * ((v) + 0.044715f * (v) * (v) * (v)))))
__kernel void tanh4(__global float* out, __global const float* x, const int n)
{
    int i = get_global_id(0);
    if (4 * i + 3 < n) {
        float4 v = vload4(i, x);
        vstore4(GELU(v), i, out);
    } else {
        for (int j = 4 * i; j < n; ++j)
            out[j] = GELU(x[j]);
    }
}
"""

VECTOR_SPEC = """
kernel: tanh4
args:
  - {name: out, dtype: fp32, shape: [n], intent: out}
  - {name: x, dtype: fp32, shape: [n], intent: in}
  - {name: n, dtype: int32, value: n}
launch: {grid: ["ceil_div(n, 256)"], block: [64]}
shapes: [{label: s, n: 4099}]
holdout_shapes: [{label: odd, n: 1023}]
reference: ref.py:gelu
"""

REF = """import numpy as np

def gelu(x, n):
    x = x.astype(np.float64)
    return {"out": (0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))).astype(np.float32)}

def tanh(x, n):
    return {"out": np.tanh(x.astype(np.float64)).astype(np.float32)}
"""


def _template(source: str, lang: str, spec):
    r = apply_catalog(source, lang, spec, rules=None)
    return r, parse_template(r.template, lang, "tanh-exp")


def test_it_applies_to_tanh_and_writes_one_exp():
    spec = load_file(GELU / "spec.yaml").spec
    for ext, lang, exp, tanh in ((".cl", "opencl", "exp", "tanh"), (".cu", "cuda", "expf", "tanhf")):
        r, t = _template((GELU / f"gelu_tanh{ext}").read_text(), lang, spec)
        assert "tanh-exp" in r.applied_names and r.params["TANH_EXP"] == (False, True)
        off = bake(t.render(t.baseline, spec), lang)
        on = bake(t.render({**t.baseline, "TANH_EXP": True}, spec), lang)
        # off, baked: the original call again (round 2's input, where the rule applies anew)
        assert "KT_TANH" not in off and f"{tanh}(inner)" in off
        assert f"#define KT_TANH(t) (1.0f - 2.0f / ({exp}(2.0f * (t)) + 1.0f))" in on


def test_it_declines_without_tanh_or_on_fp64(tmp_path):
    spec = load_file(GELU / "spec.yaml").spec
    source = (GELU / "gelu_tanh.cl").read_text()
    r = apply_catalog(source.replace("tanh(inner)", "inner"), "opencl", spec)
    assert "no call to tanh" in dict(r.skipped)["tanh-exp"]
    fp64 = spec.model_copy(update={"args": [a.model_copy(update={"dtype": "fp64"}) if a.name == "x" else a
                                            for a in spec.args]})
    r = apply_catalog(source, "opencl", fp64)
    assert "fp64" in dict(r.skipped)["tanh-exp"]


@pytest.mark.runtime
@pytest.mark.parametrize("case", ["gelu", "vector", "bare"])
def test_its_instances_verify_against_the_original(worker, tmp_path, case):
    """On the device's own exp, within the spec's tolerance, on every input distribution and held-out
    shape; the vector case passes a float4 to the macro (after expand-macros wrote GELU out). A bare
    tanh of small inputs is where the form's relative error shows (absolute about 1e-7): there the
    tolerance refuses it, as it must."""
    if case == "gelu":
        loaded = load_file(GELU / "spec.yaml")
        source = (GELU / "gelu_tanh.cl").read_text()
    else:
        write(tmp_path, "ref.py", REF)
        loaded = load_file(write(tmp_path, "spec.yaml", textwrap.dedent(VECTOR_SPEC)))
        source = textwrap.dedent(VECTOR_TANH)
        if case == "bare":
            source = source.replace("vstore4(GELU(v)", "vstore4(tanh(v)").replace("= GELU(x[j])", "= tanh(x[j])")
            loaded = load_file(write(tmp_path, "spec.yaml", textwrap.dedent(VECTOR_SPEC).replace(":gelu", ":tanh")))
    spec = loaded.spec
    r, t = _template(source, "opencl", spec)
    assert "tanh-exp" in r.applied_names
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    shapes = tuple(verification_shapes(spec, "cpu" if "cpu" in spec.shape_sets else None))
    res = worker.evaluate(EvalRequest(t.instance({**t.baseline, "TANH_EXP": True}, spec), spec,
                                      str(loaded.base_dir), shapes, (), seed=7, reference=original, timing=None), 300)
    if case == "bare":
        assert res.status is Status.WRONG_RESULT and "tolerance" in res.message and "small" in res.message
    else:
        assert res.status is Status.OK, res.message


@pytest.mark.nvcc
def test_the_cuda_form_compiles():
    from kerntune.backends.nvcc import compile_offline

    spec = load_file(GELU / "spec.yaml").spec
    _, t = _template((GELU / "gelu_tanh.cu").read_text(), "cuda", spec)
    inst = t.instance({**t.baseline, "TANH_EXP": True}, spec)
    compile_offline(inst.source, inst.name, "sm_90", inst.options)
