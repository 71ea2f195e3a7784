"""expand-macros and row-loop: a kernel whose body is a macro invocation is written out so that the
rules see it (SGLang's merge_attn_states_lse in OpenCL is one body for three dtypes), and a
block-strided loop over a flattened rows x cols range becomes a loop over the rows around a
block-strided loop over the columns.

The macro expansion against the C preprocessor's semantics (argument pre-expansion, rescanning, no
expansion inside its own expansion, literals untouched) and the cases it leaves alone; row-loop's
preconditions, each decline with its reason; vectorize through an index the body names
(``idx = row * cols + c``) and row constants it declares; the rewrites verified on the CPU against
the original kernel on every input distribution, with a row length that the block does not divide;
the split merge kernel clean under Oclgrind; a CUDA instance compiled with nvcc."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kerntune.agents.rules.base import RewriteState
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.agents.rules.macros import expand, function_macros
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.results import Status
from kerntune.source.parse import parse
from kerntune.spec.load import load_file
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO

MERGE = REPO / "kernels/sglang/merge_attn_states_lse"


def _state(source: str, spec_path: Path = MERGE / "spec.yaml") -> RewriteState:
    spec = load_file(spec_path).spec
    return RewriteState(lang="opencl", source=textwrap.dedent(source), kernel=spec.kernel, spec=spec,
                        launch=spec.launch)


def _failures(worker, loaded, t, original, configs, shapes, seed: int) -> list:
    """The configurations of template ``t`` that do not verify against ``original`` on ``shapes``
    (those a restriction rules out on them are skipped), with the status and message of each."""
    spec, bad = loaded.spec, []
    space = Space.of(t)
    for c in configs:
        if space.violated(c, shapes):
            continue
        r = worker.evaluate(EvalRequest(t.instance(c, spec), spec, str(loaded.base_dir), shapes, (), seed=seed,
                                        reference=original, timing=None), 300)
        if r.status is not Status.OK:
            bad.append((c, r.status.value, r.message))
    return bad


# --- expand-macros -----------------------------------------------------------------------------------

def test_expansion_follows_the_preprocessor():
    """Arguments expanded first, the result scanned again, a macro not expanded inside itself, string
    and character literals and comments left alone, a name without '(' not an invocation."""
    st = _state("""
        #define SQ(x) ((x) * (x))
        #define TWICE(f, y) (f(y) + f(y))
        #define SELF(x) (SELF + (x))
        #define NAMED(x) "x is " x
        void k(float* p) {}
    """)
    macros, bad = function_macros(st)
    assert set(macros) == {"SQ", "TWICE", "SELF", "NAMED"} and bad == {}
    assert expand("SQ(a + 1)", macros) == "((a + 1) * (a + 1))"
    assert expand("SQ(SQ(b))", macros) == "((((b) * (b))) * (((b) * (b))))"
    assert expand("TWICE(SQ, c)", macros) == "(((c) * (c)) + ((c) * (c)))"
    assert expand("SELF(SELF(1))", macros) == "(SELF + ((SELF + (1))))"
    assert expand('NAMED(q) "SQ(2)" /* SQ(3) */ SQ', macros) == '"x is " q "SQ(2)" /* SQ(3) */ SQ'
    assert expand("f(a, (b, c))", {**macros}) == "f(a, (b, c))"


@pytest.mark.parametrize("defs, why", [
    ("#define CAT(a, b) a ## b\n", "CAT: uses # or ##"),
    ("#define STR(a) #a\n", "STR: uses # or ##"),
    ("#define VA(...) f(__VA_ARGS__)\n", "VA: variadic"),
    ("#define TWO(a) (a)\n#undef TWO\n#define TWO(a) (a + 1)\n", "TWO: defined more than once"),
    ("#define GONE(a) (a)\n#undef GONE\n", "GONE: #undef-ined in the file"),
])
def test_macros_that_do_not_expand_the_same_everywhere_are_left(defs, why):
    st = _state(defs + "__kernel void merge_attn_states_lse_bf16(__global float* v) { v[0] = 1.0f; }\n")
    macros, bad = function_macros(st)
    assert macros == {} and why in ", ".join(f"{k}: {v}" for k, v in bad.items())


def test_a_use_before_the_definition_and_a_wrong_count_are_not_expansions():
    spec = MERGE / "spec.yaml"
    early = """
        __kernel void merge_attn_states_lse_bf16(__global float* v) { v[0] = LATE(1.0f); }
        #define LATE(x) (x)
    """
    st = _state(early, spec)
    result = apply_catalog(st.source, "opencl", st.spec)
    assert "expand-macros" not in result.applied_names
    assert "invokes no function-like macro" in dict(result.skipped)["expand-macros"]
    wrong = """
        #define ONE(x) (x)
        __kernel void merge_attn_states_lse_bf16(__global float* v) { v[0] = ONE(1.0f, 2.0f); }
    """
    result = apply_catalog(textwrap.dedent(wrong), "opencl", st.spec)
    assert "invoked with 2 argument(s); it takes 1" in dict(result.skipped)["expand-macros"]


def test_merge_attn_states_is_written_out_and_its_loop_split():
    """The OpenCL merge kernel's body is one macro invocation (the same body for three dtypes): before
    the expansion no rule found the kernel; after it the bf16 kernel parses, its flattened loop over
    heads x head_dim is split, and the fp32 and fp16 kernels still invoke the macro."""
    loaded = load_file(MERGE / "spec.yaml")
    source = (MERGE / "merge_attn_states_lse.cl").read_text()
    assert loaded.spec.kernel not in [k.name for k in parse(source, "opencl").kernels]
    result = apply_catalog(source, "opencl", loaded.spec)
    assert result.applied_names[:5] == ["expand-macros", "private-helpers", "launch-config", "row-loop",
                                        "split-groups"], result.skipped
    assert "ROW_LOOP" in result.params and result.params["ROW_LOOP"] == (False, True)
    t = parse_template(result.template, "opencl", "merge")
    text = t.render(Space.of(t).baseline(), loaded.spec)
    assert loaded.spec.kernel in [k.name for k in parse(text, "opencl").kernels]
    assert text.count("MERGE_BASELINE(") == 3      # the definition and the fp32 and fp16 kernels
    assert "for (int h = (get_group_id(0) % KT_SPLIT); h < num_heads; h += KT_SPLIT)" in result.template


# --- row-loop's preconditions ---------------------------------------------------------------------------

FLAT_SPEC = """
kernel: k
args:
  - {name: out, dtype: fp32, shape: [rows, cols], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: scale, dtype: fp32, shape: [rows], intent: in}
  - {name: rows, dtype: int32, value: rows}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: [1], block: [64]}
shapes: [{rows: 7, cols: 100}]
holdout_shapes: [{rows: 3, cols: 37}]
noalias: NOALIAS
"""

FLAT_KERNEL = """
__kernel void k(__global float* out, __global const float* x, __global const float* scale, const int rows,
                const int cols)
{
PRE
    for (int i = get_local_id(0); i < rows * cols; i += get_local_size(0)) {
        const int r = i / cols;
        const int c = i % cols;
BODY
    }
POST
}
"""


def _flat(body: str, pre: str = "", post: str = "") -> str:
    return FLAT_KERNEL.replace("PRE", pre).replace("BODY", body).replace("POST", post)


def _rowloop(tmp_path: Path, kernel: str, noalias: bool = True, lang: str = "opencl"):
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(FLAT_SPEC).replace("NOALIAS", "true" if noalias else "false"))
    loaded = load_file(p)
    result = apply_catalog(textwrap.dedent(kernel), lang, loaded.spec)
    return loaded, result


ELEMENT = "        out[i] = x[r * cols + c] * scale[r];"


@pytest.mark.parametrize("kernel, why", [
    # a running sum: element i + 1 of a thread starts from what element i left
    (_flat("        acc += x[i];\n        out[i] = acc;", pre="    float acc = 0.0f;"), "carries acc"),
    # the address of a variable declared outside the loop goes to a function
    (_flat("        out[i] = x[i];\n        f(&acc);", pre="    float acc = 0.0f;"), "address of acc"),
    # element i reads what another element wrote
    (_flat("        out[i] = x[i] + out[i > 0 ? i - 1 : 0];"), "out is written at one index"),
    # the same thread reads before the loop what it writes in it (no barrier in between)
    (_flat(ELEMENT, post="    x2 = out[get_local_id(0)];", pre="    float x2;"), "written in the loop and accessed"),
    (_flat("        out[i] = x[i];\n        barrier(CLK_LOCAL_MEM_FENCE);"), "synchronizes"),
    (_flat("        if (x[i] < 0.0f) break;\n        out[i] = x[i];"), "leaves the loop"),
    # the loop's bound is not rows * cols
    (FLAT_KERNEL.replace("rows * cols", "rows * cols + 1").replace("PRE", "").replace("POST", "")
     .replace("BODY", ELEMENT), "is not rows * cols"),
    # the column is not recovered with the row's divisor
    (FLAT_KERNEL.replace("i % cols", "i % rows").replace("PRE", "").replace("POST", "").replace("BODY", ELEMENT),
     "column of i"),
])
def test_row_loop_declines(tmp_path, kernel, why):
    _, result = _rowloop(tmp_path, kernel)
    assert "row-loop" not in result.applied_names
    reason = dict(result.skipped)["row-loop"]
    assert why in reason, reason


def test_row_loop_needs_noalias_when_the_loop_reads_and_writes(tmp_path):
    _, result = _rowloop(tmp_path, _flat(ELEMENT), noalias=False)
    assert "noalias" in dict(result.skipped)["row-loop"]
    _, result = _rowloop(tmp_path, _flat(ELEMENT), noalias=True)
    assert "row-loop" in result.applied_names


def test_row_loop_takes_a_bound_held_in_a_variable_and_keeps_other_uses_of_the_index(tmp_path):
    kernel = _flat("        out[i] = x[r * cols + c] * scale[r] + (float)i;",
                   pre="    const int n = rows * cols;").replace("i < rows * cols", "i < n")
    _, result = _rowloop(tmp_path, kernel)
    assert "row-loop" in result.applied_names, result.skipped
    assert "out[(r * cols + c)]" in result.template and "(float)(r * cols + c)" in result.template



def test_row_loop_computes_the_row_constants_once_per_row(tmp_path):
    """Leading declarations of the row alone (+ - * and casts of the row and names from outside the loop)
    move before the column loop; one that divides, loads, or uses the column stays, and so does every
    statement after it."""
    body = ("        const long base = (long)r * cols;\n"
            "        const int twice = 2 * r + 1;\n"
            "        const int half = r / 2;\n"
            "        const long idx = base + c;\n"
            "        out[idx] = x[idx] * scale[r] + (float)(twice + half);")
    _, result = _rowloop(tmp_path, _flat(body))
    assert "row-loop" in result.applied_names, result.skipped
    nested = result.template.split("#else", 1)[1]
    outer, inner = nested.split("for (int c = ", 1)
    assert "const long base = (long)r * cols;" in outer and "const int twice = 2 * r + 1;" in outer
    assert "const int half = r / 2;" in inner and "const long idx = base + c;" in inner


# --- the rewrites, run ------------------------------------------------------------------------------------


@pytest.mark.runtime
def test_row_loop_instances_verify_against_the_original(worker, tmp_path):
    """Both values of ROW_LOOP at block sizes that divide the row length and do not (100 and 37
    columns, blocks of 16 to 256), against the original kernel on every input distribution; the row's
    offset is computed once per row, its scale (a load) per element."""
    kernel = _flat("        const long row = (long)r * cols;\n        const float s = scale[r] * 2.0f;\n"
                   "        out[i] = x[row + c] * s + (float)c;")
    loaded, result = _rowloop(tmp_path, kernel)
    assert "row-loop" in result.applied_names, result.skipped
    spec = loaded.spec
    t = parse_template(result.template, "opencl", "flat")
    space = Space.of(t)
    original = KernelInstance(textwrap.dedent(kernel), spec.kernel, "opencl", label="original")
    shapes = (*spec_shapes(spec), *holdout_shapes(spec))
    configs = [{**space.baseline(), "BLOCK": block, "ROW_LOOP": row_loop} for row_loop in (False, True)
               for block in (16, 64, 256) if block in space.params["BLOCK"]]
    bad = _failures(worker, loaded, t, original, configs, shapes, seed=7)
    assert bad == [], bad[:3]


@pytest.mark.runtime
def test_merge_attn_states_split_verifies_against_the_original(worker):
    """The rule catalog's merge_attn_states template: the row loop at block sizes that take one, two
    and eight columns of a head per thread (restrict on for the last), and vectorized through its
    ``idx`` at widths 8, 4 (offsets hoisted) and 2 (256 threads for 136 columns on the held-out shape:
    some threads take no whole vector), against the original kernel (all three dtypes' kernels in the
    file still compile)."""
    loaded = load_file(MERGE / "spec.yaml")
    spec = loaded.spec
    source = (MERGE / "merge_attn_states_lse.cl").read_text()
    result = apply_catalog(source, "opencl", spec)
    t = parse_template(result.template, "opencl", "merge")
    space = Space.of(t)
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    shapes = (min(spec_shapes(spec, "cpu"), key=lambda s: dict(s.sizes)["N"]), *holdout_shapes(spec))
    configs = [space.baseline(),
              {**space.baseline(), "ROW_LOOP": True},
              {**space.baseline(), "ROW_LOOP": True, "BLOCK": 64},
              {**space.baseline(), "ROW_LOOP": True, "BLOCK": 16, "RESTRICT": True},
              {**space.baseline(), "ROW_LOOP": True, "VEC": 8},
              {**space.baseline(), "ROW_LOOP": True, "VEC": 4, "HOIST": True, "BLOCK": 16},
              {**space.baseline(), "ROW_LOOP": True, "VEC": 2, "BLOCK": 256}]
    bad = _failures(worker, loaded, t, original, configs, shapes, seed=3)
    assert bad == [], bad[:3]


@pytest.mark.runtime
@pytest.mark.skipif(__import__("kerntune.engine.checker", fromlist=["x"]).oclgrind_library() is None,
                    reason="Oclgrind is not installed (apt-get install oclgrind; .ci/run does)")
def test_merge_attn_states_split_is_clean_under_the_memory_checker(worker):
    assert_merge_clean(worker, ROW_LOOP=True, BLOCK=32, VEC=8)


def assert_merge_clean(worker, **config) -> None:
    """The rule catalog's OpenCL merge_attn_states at ``config`` (the rest at their first values) is clean
    under the memory checker (Oclgrind)."""
    from kerntune.engine.checker import MemoryChecker, check_shapes
    from kerntune.results import CheckStatus

    loaded = load_file(MERGE / "spec.yaml")
    spec = loaded.spec
    result = apply_catalog((MERGE / "merge_attn_states_lse.cl").read_text(), "opencl", spec)
    t = parse_template(result.template, "opencl", "merge")
    c = {**Space.of(t).baseline(), **config}
    report = MemoryChecker(worker.info).check(t.instance(c, spec), spec, str(loaded.base_dir), check_shapes(spec), 5)
    assert report.status is CheckStatus.CLEAN, report.message


@pytest.mark.nvcc
def test_a_cuda_row_loop_compiles_with_nvcc(tmp_path):
    from kerntune.backends.nvcc import compile_offline

    kernel = """
    extern "C" __global__ void k(float* out, const float* x, const float* scale, int rows, int cols)
    {
        for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
            const int r = i / cols;
            const int c = i - r * cols;
            out[i] = x[r * cols + c] * scale[r];
        }
    }
    """
    loaded, result = _rowloop(tmp_path, kernel, lang="cuda")
    assert "row-loop" in result.applied_names, result.skipped
    t = parse_template(result.template, "cuda", "flat")
    c = {**Space.of(t).baseline(), "ROW_LOOP": True, "BLOCK": 32}
    inst = t.instance(c, loaded.spec)
    assert "for (int r = 0; r < rows; ++r)" in inst.source
    compile_offline(inst.source, inst.name, "sm_90", inst.options)


# --- vectorize through a named index ------------------------------------------------------------------------

ALIAS_KERNEL = """
__kernel void k(__global float* out, __global const float* x, __global const float* scale, const int rows,
                const int cols)
{
    const int r = get_group_id(0);
    for (int c = get_local_id(0); c < cols; c += get_local_size(0)) {
        const long row = (long)r * cols;
        const long idx = row + c;
        const float s = scale[r];
        out[idx] = x[idx] * s + (float)c;
    }
}
"""


def test_vectorize_reads_through_a_named_index_and_row_constants(tmp_path):
    """``idx = row + c`` with ``row`` a constant of the row: the streams are out and x at
    ``((long)((long)r * cols)) + c``; a name computed from a load is no constant (its value could
    differ per element), so an index built on it is not taken."""
    _, result = _rowloop(tmp_path, ALIAS_KERNEL)
    assert "vectorize" in result.applied_names, result.skipped
    assert "out[(((long)((long)r * cols))) + kt_i0 + kt_v]" in result.template
    loaded_from_memory = ALIAS_KERNEL.replace("const long row = (long)r * cols;", "const long row = (long)scale[0];")
    _, result = _rowloop(tmp_path, loaded_from_memory)
    assert "vectorize" not in result.applied_names


@pytest.mark.runtime
def test_vectorized_named_index_verifies_against_the_original(worker, tmp_path):
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(FLAT_SPEC).replace("NOALIAS", "true").replace('grid: [1]', 'grid: [rows]'))
    loaded = load_file(p)
    spec = loaded.spec
    source = textwrap.dedent(ALIAS_KERNEL)
    result = apply_catalog(source, "opencl", spec)
    assert "vectorize" in result.applied_names, result.skipped
    t = parse_template(result.template, "opencl", "alias")
    space = Space.of(t)
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    shapes = (*spec_shapes(spec), *holdout_shapes(spec))
    configs = [{**space.baseline(), "VEC": vec, "BLOCK": 16} for vec in space.params["VEC"]]
    bad = _failures(worker, loaded, t, original, configs, shapes, seed=5)
    assert bad == [], bad[:3]


# --- CUDA: accessor functions (load_value(p, i), store_value(p, i, x)) -----------------------------------------

def test_accessor_functions_are_recognized_only_when_every_overload_is_one():
    from kerntune.agents.rules.access import Accessor, accessor_functions

    src = (MERGE / "merge_attn_states_lse.cu").read_text()
    spec = load_file(MERGE / "spec.yaml").spec
    st = RewriteState(lang="cuda", source=src, kernel=spec.kernel, spec=spec, launch=spec.launch)
    found = accessor_functions(st)
    assert found["load_value"] == Accessor(0, 1, read=True, write=False)
    assert found["store_value"] == Accessor(0, 1, read=False, write=True)
    assert "merge_weights" not in found          # reference parameters, no pointer
    neighbour = src.replace("{ return __half2float(p[i]); }", "{ return __half2float(p[i + 1]); }")
    st = RewriteState(lang="cuda", source=neighbour, kernel=spec.kernel, spec=spec, launch=spec.launch)
    assert "load_value" not in accessor_functions(st)      # one overload reads another element


def test_a_reference_to_a_variable_outside_the_loop_declines(tmp_path):
    kernel = """
    __device__ void add(float& acc, float x) { acc += x; }
    extern "C" __global__ void k(float* out, const float* x, const float* scale, int rows, int cols)
    {
        float acc = 0.0f;
        for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
            const int r = i / cols;
            const int c = i % cols;
            add(acc, x[r * cols + c]);
            out[i] = acc;
        }
    }
    """
    _, result = _rowloop(tmp_path, kernel, lang="cuda")
    assert "binds a reference to a variable declared outside the loop" in dict(result.skipped)["row-loop"]


def test_cuda_merge_attn_states_goes_through_its_accessors():
    """merge_attn_states_lse.cu loads and stores through load_value / store_value: row-loop splits its
    loop, and vectorize loads VEC elements per thread into a buffer the accessors then index."""
    spec = load_file(MERGE / "spec.yaml").spec
    result = apply_catalog((MERGE / "merge_attn_states_lse.cu").read_text(), "cuda", spec)
    assert {"row-loop", "vectorize"} <= set(result.applied_names), result.skipped
    own = "_for_merge_attn_states_lse_bf16"          # private-helpers: the bf16 kernel's own accessors
    assert f"load_value{own}(kt_v_v_a.v, kt_v)" in result.template, result.template
    assert f"store_value{own}(kt_v_v.v, kt_v," in result.template


@pytest.mark.nvcc
def test_cuda_merge_attn_states_instances_compile_with_nvcc():
    from concurrent.futures import ThreadPoolExecutor

    from kerntune.backends.base import CompileFailed
    from kerntune.backends.nvcc import compile_offline

    spec = load_file(MERGE / "spec.yaml").spec
    result = apply_catalog((MERGE / "merge_attn_states_lse.cu").read_text(), "cuda", spec)
    t = parse_template(result.template, "cuda", "merge")
    base = Space.of(t).baseline()
    configs = [base, {**base, "ROW_LOOP": True}, {**base, "ROW_LOOP": True, "VEC": 8, "BLOCK": 32},
               {**base, "ROW_LOOP": True, "VEC": 4, "HOIST": True, "RESTRICT": True, "LAUNCH_BOUNDS": True}]

    def build(c):
        inst = t.instance(c, spec)
        try:
            compile_offline(inst.source, inst.name, "sm_90", inst.options)
        except CompileFailed as e:
            return c, str(e)[:400]
        return None

    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(build, configs) if f is not None]
    assert failures == [], failures[:2]


ACCESSOR_KERNEL = """
inline float load_value(__global const float* p, long i) { return p[i]; }
inline void store_value(__global float* p, long i, float x) { p[i] = x; }

__kernel void k(__global float* out, __global const float* x, __global const float* scale, const int rows,
                const int cols)
{
    for (int i = get_local_id(0); i < rows * cols; i += get_local_size(0)) {
        const int r = i / cols;
        const int c = i - r * cols;
        const long idx = (long)r * cols + c;
        store_value(out, idx, load_value(x, idx) * scale[r] + 1.0f);
    }
}
"""


@pytest.mark.runtime
def test_accessor_rewrites_verify_against_the_original(worker, tmp_path):
    """The CUDA merge kernel's accessors, in OpenCL so that they run here: row-loop through
    load_value / store_value, at blocks that divide the row length and do not, against the original on
    100 and 37 columns. (Vectorize takes accessors in CUDA only: an OpenCL accessor's pointer has an
    address space, and a lane's buffer is private; the CUDA rewrite is compiled with nvcc above.)"""
    loaded, result = _rowloop(tmp_path, ACCESSOR_KERNEL)
    assert "row-loop" in result.applied_names, result.skipped
    assert "vectorize" not in result.applied_names
    spec = loaded.spec
    t = parse_template(result.template, "opencl", "accessors")
    space = Space.of(t)
    original = KernelInstance(textwrap.dedent(ACCESSOR_KERNEL), spec.kernel, "opencl", label="original")
    shapes = (*spec_shapes(spec), *holdout_shapes(spec))
    configs = [{**space.baseline(), "ROW_LOOP": True, "BLOCK": block} for block in (16, 64, 256)
               if block in space.params["BLOCK"]]
    bad = _failures(worker, loaded, t, original, configs, shapes, seed=9)
    assert bad == [], bad[:3]


def test_expansion_reaches_the_kernels_helpers_but_not_the_other_entry_points():
    """A kernel whose body is a macro invocation calls a helper that uses another macro: both are written
    out, in two steps (the helper is known once the kernel parses); a second entry point of the file that
    uses the helper's macro keeps it."""
    spec = load_file(MERGE / "spec.yaml").spec
    source = textwrap.dedent("""
        #define TWICE(x) (2.0f * (x))
        #define BODY(P) P[get_global_id(0)] = helper(P[get_global_id(0)]);
        inline float helper(float v) { return TWICE(v); }
        __kernel void merge_attn_states_lse_bf16(__global float* v) { BODY(v) }
        __kernel void other(__global float* v) { v[0] = TWICE(v[0]); }
    """)
    result = apply_catalog(source, "opencl", spec)
    assert "expand-macros" in result.applied_names, result.skipped
    assert "2 invocation(s) of BODY, TWICE" in result.trace[0].summary
    assert "{ return (2.0f * (v)); }" in result.template and "v[0] = TWICE(v[0]);" in result.template


@pytest.mark.runtime
def test_scale_rows_row_loop_with_every_other_parameter_is_correct_and_clean(worker):
    """tests/data/scale_rows.cl guards each row with `if (r < rows)` (four rows per work-group; 30 and 5
    rows leave the last group's later rows out). With the row loop on, every other parameter's values
    one at a time: verified against the original on every input distribution and clean under the memory
    checker. vectorize once read and wrote whole vectors of the rows past the last (the worker died of
    SIGSEGV) and hoist-invariants read scale[r] before the column loop for them (Oclgrind: an invalid
    read); both now leave an access that only a branch makes where it is."""
    from kerntune.engine.checker import MemoryChecker, check_shapes, oclgrind_library
    from kerntune.results import CheckStatus

    loaded = load_file(REPO / "tests/data/scale_rows.yaml")
    spec = loaded.spec
    source = (REPO / "tests/data/scale_rows.cl").read_text()
    result = apply_catalog(source, "opencl", spec, compute_units=132)
    t = parse_template(result.template, "opencl", "scale_rows")
    space = Space.of(t)
    base = {**space.baseline(), "ROW_LOOP": True}
    configs = [base] + [{**base, k: v} for k, vals in space.params.items() if k not in ("ROW_LOOP", "FAST_FLAGS")
                        for v in vals[1:]]
    original = KernelInstance(source, spec.kernel, "opencl", label="original")
    shapes = (*spec_shapes(spec), *holdout_shapes(spec))
    assert _failures(worker, loaded, t, original, configs, shapes, seed=5) == []
    if oclgrind_library() is None:
        return
    checker = MemoryChecker(worker.info)
    flagged = []
    for c in configs:
        if space.violated(c, shapes):
            continue
        report = checker.check(t.instance(c, spec), spec, str(loaded.base_dir), check_shapes(spec), 5)
        if report.status is not CheckStatus.CLEAN:
            flagged.append((space.key(c), report.message))
    assert flagged == []
