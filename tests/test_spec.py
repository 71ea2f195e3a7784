"""The spec format: valid specs load from every place a spec can live, and every
mistake is reported with the file, line, field path, what was expected and
what was found."""

from pathlib import Path

import pytest

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec import load_for_kernel
from kerntune.spec.load import load_file
from kerntune.spec.shapes import holdout_shapes, verification_shapes
from tests.conftest import REPO, run_cli, write

GOOD = """
kernel: vadd
args:
  - {name: c, dtype: fp32, shape: [n], intent: out}
  - {name: a, dtype: fp32, shape: [n]}
  - {name: n, dtype: int32, value: n}
launch:
  grid: ["ceil_div(n, 256)"]
  block: [256]
shapes:
  - {n: 1024}
  - {label: big, n: 65536}
"""
KERNEL = "__kernel void vadd(__global float* c, __global const float* a, int n) { }\n"


def spec_error(tmp_path: Path, text: str) -> str:
    p = write(tmp_path, "k.yaml", text)
    with pytest.raises(KerntuneError) as e:
        load_file(p)
    assert e.value.code is ErrorCode.SPEC and e.value.exit_status == 2
    return e.value.message


def test_sidecar_and_inline(tmp_path):
    k = write(tmp_path, "vadd.cl", KERNEL)
    write(tmp_path, "vadd.yaml", GOOD)
    loaded = load_for_kernel(k)
    assert loaded.spec.kernel == "vadd" and not loaded.inline
    assert set(loaded.spec.sizes) == {"n"}
    assert [s.label for s in verification_shapes(loaded.spec)] == ["n=1024", "big", "holdout n=1025"]

    k2 = write(tmp_path, "inl.cl", "/* kerntune\n" + GOOD.lstrip() + "*/\n" + KERNEL)
    loaded2 = load_for_kernel(k2)
    assert loaded2.inline and loaded2.spec == loaded.spec


def test_both_inline_and_sidecar_is_an_error(tmp_path):
    k = write(tmp_path, "vadd.cl", "/* kerntune\n" + GOOD.lstrip() + "*/\n" + KERNEL)
    write(tmp_path, "vadd.yaml", GOOD)
    with pytest.raises(KerntuneError, match="both an inline spec block and a sidecar"):
        load_for_kernel(k)


def test_missing_spec_points_at_init(tmp_path):
    k = write(tmp_path, "lonely.cl", KERNEL)
    with pytest.raises(KerntuneError) as e:
        load_for_kernel(k)
    assert "kerntune init" in e.value.hint


def test_yaml_syntax_error_has_line_and_a_hint(tmp_path):
    msg = spec_error(tmp_path, "kernel: vadd\nargs: [\n  - oops: {\n")
    assert "k.yaml:" in msg and "not valid YAML" in msg
    with pytest.raises(KerntuneError) as e:                # what to look for (a user tour: no hint)
        load_file(tmp_path / "k.yaml")
    assert "unclosed bracket" in e.value.hint


def test_unknown_field_lists_allowed(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace("intent: out}", "intent: out, intnt: in}"))
    assert "k.yaml:3: args[0].intnt: unknown field 'intnt'; allowed: name, dtype, shape, intent" in msg


def test_bad_dtype_says_expected_and_found(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace("dtype: fp32, shape: [n]}", "dtype: float, shape: [n]}"))
    assert "args[1].dtype: expected one of fp64, fp32, fp16, bf16" in msg and "found 'float'" in msg


def test_bad_intent(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace("intent: out", "intent: output"))
    assert "args[0].intent" in msg and "'output'" in msg


def test_undeclared_size_in_expression(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace('"ceil_div(n, 256)"', '"ceil_div(m, 256)"'))
    assert "launch.grid[0]: 'm' is not a declared size (sizes: n)" in msg


@pytest.mark.parametrize("change,needle", [
    # a scalar outside its dtype: the host conversion raised OverflowError, a traceback and exit 70
    (('value: n}', 'value: "n + 4294967296"}'),
     "args[2].value: at shape n=1024: int32 value 'n + 4294967296' is 4294968320, expected between -2147483648 and "
     "2147483647"),
    # check called this 'unexpected ExprError ... a bug in kerntune' (exit 70), bench a kernel failure (exit 4)
    (('"ceil_div(n, 256)"', '"n / 0"'), "launch.grid[0]: at shape n=1024: cannot evaluate 'n / 0': division by zero"),
    (('block: [256]', 'block: [0]'), "launch.block[0]: at shape n=1024: block dimension is 0, expected at least 1"),
    (('"ceil_div(n, 256)"', '"n // 2048"'), "launch.grid[0]: at shape n=1024: grid dimension 'n // 2048' is 0"),
    (('value: n}', 'value: "n % 0"}'), "args[2].value: at shape n=1024: cannot evaluate 'n % 0'"),
    (('shape: [n]}', 'shape: ["n - 2000"]}'), "args[1].shape[0]: at shape n=1024: extent 'n - 2000' is -976"),
])
def test_expressions_are_evaluated_on_every_shape(tmp_path, change, needle):
    """Mistakes that only show on a shape's numbers are spec errors at load time (exit 2), for check
    and every other command, not a crash or a kernel failure later."""
    msg = spec_error(tmp_path, GOOD.replace(*change))
    assert needle in msg, msg


def test_unsafe_expression_rejected(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace('"ceil_div(n, 256)"', '"n.__class__"'))
    assert "launch.grid[0]" in msg and "not allowed" in msg


def test_shape_must_bind_every_size(tmp_path):
    text = GOOD.replace("shape: [n]}", "shape: [n, m]}", 1).replace("- {n: 1024}", "- {n: 1024, m: 2}")
    msg = spec_error(tmp_path, text)
    assert "shapes[1]: size 'm' is not bound" in msg


def test_size_constraints(tmp_path):
    text = GOOD.replace("shapes:", "sizes: {n: {multiple_of: 8}}\nshapes:").replace("n: 1024", "n: 1020")
    msg = spec_error(tmp_path, text)
    assert "shapes[0].n: expected an integer >= 1, multiple of 8, found 1020" in msg


def test_scalar_needs_value_and_arrays_cannot_have_one(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace("{name: n, dtype: int32, value: n}", "{name: n, dtype: int32}"))
    assert "scalar argument 'n' needs a 'value'" in msg
    msg = spec_error(tmp_path, GOOD.replace("shape: [n]}", "shape: [n], value: 3}"))
    assert "array argument 'a' cannot have a 'value'" in msg


def test_duplicate_names_and_no_outputs(tmp_path):
    msg = spec_error(tmp_path, GOOD.replace("{name: a,", "{name: c,"))
    assert "argument name 'c' is used twice" in msg
    msg = spec_error(tmp_path, GOOD.replace("intent: out", "intent: in"))
    assert "nothing to verify" in msg


def test_several_problems_reported_at_once(tmp_path):
    text = GOOD.replace("dtype: fp32, shape: [n]}", "dtype: float, shape: [n]}").replace("block: [256]", "blok: [256]")
    msg = spec_error(tmp_path, text)
    assert "problems" in msg and "args[1].dtype" in msg and "launch" in msg


def test_reference_shorthand(tmp_path):
    msg = spec_error(tmp_path, GOOD + "reference: no_colon_here\n")
    assert "reference" in msg and "file.py:function" in msg
    p = write(tmp_path, "ok.yaml", GOOD + "reference: ref.py:vadd\n")
    assert load_file(p).spec.reference.file == "ref.py"


def test_not_a_mapping(tmp_path):
    msg = spec_error(tmp_path, "- just\n- a list\n")
    assert "must be a YAML mapping" in msg


def test_holdout_shapes_respect_constraints(tmp_path):
    text = GOOD.replace("shapes:", "sizes: {n: {multiple_of: 8}}\nshapes:")
    spec = load_file(write(tmp_path, "k.yaml", text)).spec
    (h,) = holdout_shapes(spec)
    assert h.holdout and h.as_dict()["n"] % 8 == 0 and (h.as_dict()["n"] // 8) % 2 == 1
    explicit = load_file(write(tmp_path, "k2.yaml", GOOD + "holdout_shapes:\n  - {n: 77}\n")).spec
    assert [s.as_dict() for s in holdout_shapes(explicit)] == [{"n": 77}]


def test_shape_sets(tmp_path):
    from kerntune.spec.shapes import spec_shapes

    text = GOOD + "shape_sets:\n  cpu:\n    - {n: 64}\n  decode: []\n"
    msg = spec_error(tmp_path, text)
    assert "shape_sets.decode: a shape set needs at least one shape" in msg
    spec = load_file(write(tmp_path, "ok.yaml", GOOD + "shape_sets:\n  cpu:\n    - {n: 64}\n")).spec
    assert [s.as_dict() for s in spec_shapes(spec, "cpu")] == [{"n": 64}]
    assert len(spec_shapes(spec)) == 2
    with pytest.raises(KerntuneError, match="no shape set 'gpu'"):
        spec_shapes(spec, "gpu")


def test_folder_spec_serves_several_implementations(tmp_path):
    write(tmp_path, "spec.yaml", GOOD)
    for name in ("naive.cl", "tiled.cl"):
        assert load_for_kernel(write(tmp_path, name, KERNEL)).origin.name == "spec.yaml"
    write(tmp_path, "naive.yaml", GOOD.replace("big", "other"))
    assert load_for_kernel(tmp_path / "naive.cl").origin.name == "naive.yaml"


def test_per_implementation_launches(tmp_path):
    from kerntune.kernelfile import load_kernel

    text = GOOD + "launches:\n  tiled: {grid: ['ceil_div(n, 1024)'], block: [256]}\n"
    write(tmp_path, "spec.yaml", text)
    naive = load_kernel(write(tmp_path, "naive.cl", KERNEL))
    tiled = load_kernel(write(tmp_path, "tiled.cl", KERNEL))
    assert naive.instance().launch is None                      # the spec's `launch`
    assert tiled.instance().launch.grid == ["ceil_div(n, 1024)"]
    msg = spec_error(tmp_path, GOOD + "launches:\n  tiled: {grid: ['ceil_div(q, 4)'], block: [64]}\n")
    assert "launches.tiled.grid[0]: 'q' is not a declared size" in msg


def test_implementation_compile_options(tmp_path):
    from kerntune.kernelfile import load_kernel

    text = GOOD + "compile_options: {opencl: ['-cl-mad-enable']}\n" + \
        "launches:\n  fast: {grid: [1], block: [64], compile_options: ['-cl-fast-relaxed-math']}\n"
    write(tmp_path, "spec.yaml", text)
    assert load_kernel(write(tmp_path, "fast.cl", KERNEL)).instance().options == ("-cl-mad-enable",
                                                                                   "-cl-fast-relaxed-math")
    assert load_kernel(write(tmp_path, "plain.cl", KERNEL)).instance().options == ("-cl-mad-enable",)


def test_a_typo_in_one_shape_is_reported_there_not_against_every_other_shape(tmp_path):
    """`colss: 3` in one shape read as a new size that every other shape fails to bind: four problems,
    none at the typo's line (a user tour). Now one problem, at the typo."""
    text = (REPO / "kernels/examples/row_sum.yaml").read_text()
    first = next(line for line in text.splitlines() if line.strip().startswith("- {label:") and "cols:" in line)
    (tmp_path / "row_sum.yaml").write_text(text.replace(first, first.replace("}", ", colss: 3}"), 1))
    for name in ("row_sum.cl", "reference.py"):
        (tmp_path / name).write_text((REPO / "kernels/examples" / name).read_text())
    r = run_cli("check", str(tmp_path / "row_sum.cl"))
    assert r.returncode == 2, r.stdout
    assert "invalid kernel spec\n" in r.stderr and "is not bound" not in r.stderr, r.stderr
    assert "'colss' is bound by some shapes only, and no argument or launch uses it (a typo of 'cols'?)" in r.stderr
