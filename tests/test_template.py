"""Templates are untrusted input: declaration errors are precise, rendering is
sandboxed, strict and bounded."""

import pytest

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.spec.model import KernelSpec
from kerntune.tuner import template as tmpl
from kerntune.tuner.template import TemplateRenderError, check_against_spec, parse_template

SPEC = KernelSpec.model_validate({
    "kernel": "k", "args": [{"name": "out", "dtype": "bf16", "shape": ["n"], "intent": "out"},
                            {"name": "n", "dtype": "int32", "value": "n"}],
    "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 64}]})

HEAD = """{# kerntune-template
params:
  BLOCK: [128, 256]
  VEC: [1, 2]
launch:
  grid: ["ceil_div(n, BLOCK * VEC)"]
  block: [BLOCK]
#}
"""


def t(body: str, head: str = HEAD):
    return parse_template(head + body, "cuda", "t.cu.j2")


def test_render_and_context():
    text = t("__global__ void {{ kernel_name }}({{ args.out.ctype }}* out, int n) { /* {{ BLOCK }}x{{ VEC }} */ }\n")
    out = text.render({"BLOCK": 256, "VEC": 2}, SPEC)
    assert "void k(__nv_bfloat16* out, int n)" in out and "256x2" in out
    inst = text.instance(text.baseline, SPEC)
    assert inst.name == "k" and inst.params == (("BLOCK", 128), ("VEC", 1)) and inst.label == "BLOCK=128,VEC=1"


def test_jinja_syntax_error_at_load():
    with pytest.raises(KerntuneError) as e:
        t("{% for i in range(3) %} no end\n")
    assert e.value.code is ErrorCode.TEMPLATE and "syntax error" in e.value.message


def test_undefined_variable_is_an_error():
    with pytest.raises(TemplateRenderError) as e:
        t("{{ UNROLL }}\n").render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind == "undefined" and "UNROLL" in e.value.message


@pytest.mark.parametrize("body", [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ BLOCK.__class__ }}",
    "{{ args.__class__.__init__.__globals__ }}",
    "{{ cycler.__init__.__globals__.os }}",
])
def test_sandbox_escape_attempts_fail(body):
    with pytest.raises(TemplateRenderError) as e:
        t(body + "\n").render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind in ("security", "undefined")


def test_immutable_sandbox_refuses_mutation():
    with pytest.raises(TemplateRenderError) as e:
        t("{% set x = [] %}{{ x.append(1) }}\n").render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind == "security"


def test_resource_limits(monkeypatch):
    with pytest.raises(TemplateRenderError, match="exceeds the limit"):
        t("{% for i in range(100000) %}x{% endfor %}\n").render({"BLOCK": 128, "VEC": 1}, SPEC)
    monkeypatch.setattr(tmpl, "RENDER_SECONDS", 0.3)
    slow = "{% for i in range(4000) %}{% for j in range(4000) %}{% endfor %}{% endfor %}\n"
    with pytest.raises(TemplateRenderError) as e:
        t(slow).render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind == "limit"
    monkeypatch.setattr(tmpl, "MAX_OUTPUT", 100)
    with pytest.raises(TemplateRenderError, match="characters"):
        t("{% for i in range(50) %}xxxxx{% endfor %}\n").render({"BLOCK": 128, "VEC": 1}, SPEC)


@pytest.mark.parametrize("head,needle", [
    ("x = 1\n", "must open with"),
    ("{# kerntune-template\nparams: {}\nlaunch: {grid: [1], block: [1]}\n#}\n", "params"),
    ("{# kerntune-template\nparams: {B: [1, 1]}\nlaunch: {grid: [1], block: [1]}\n#}\n", "lists a value twice"),
    ("{# kerntune-template\nparams: {B: [1]}\nlaunch: {grid: [1], block: [B]}\nrestrictions: ['B.__x']\n#}\n",
     "not allowed"),
    ("{# kerntune-template\nparams: {B: [1]}\nlaunch: {grid: [1], block: [B]}\nflags: {hip: {}}\n#}\n",
     "keyed by language"),
    ("{# kerntune-template\nparams: {B: [1]}\nlaunch: {grid: [1], block: [B]}\n", "never closed"),
])
def test_declaration_errors(head, needle):
    with pytest.raises(KerntuneError) as e:
        parse_template(head + "body\n", "cuda", "t.cu.j2")
    assert needle in e.value.message and e.value.code is ErrorCode.TEMPLATE


def test_names_checked_against_the_spec():
    with pytest.raises(KerntuneError, match="neither parameters"):
        check_against_spec(t("x\n", HEAD.replace("ceil_div(n,", "ceil_div(m,")), SPEC)
    clash = HEAD.replace("VEC: [1, 2]", "n: [1, 2]").replace("BLOCK * VEC", "BLOCK")
    with pytest.raises(KerntuneError, match="names of spec sizes"):
        check_against_spec(t("x\n", clash), SPEC)


def test_flags_follow_parameters():
    head = HEAD.replace("launch:", "flags:\n  cuda: {'-use_fast_math': 'VEC == 2'}\nlaunch:")
    tt = t("x\n", head)
    assert tt.options({"BLOCK": 128, "VEC": 2}, SPEC) == ("-use_fast_math",)
    assert tt.options({"BLOCK": 128, "VEC": 1}, SPEC) == ()
    # a flag the spec already gives is not given twice: the instance with it is the original's options
    given = SPEC.model_copy(update={"compile_options": SPEC.compile_options.model_copy(
        update={"cuda": ["-use_fast_math"]})})
    assert tt.options({"BLOCK": 128, "VEC": 2}, given) == tt.options({"BLOCK": 128, "VEC": 1}, given) \
        == ("-use_fast_math",)


@pytest.mark.parametrize("body,needle", [
    ("{{ 'A' * 10**12 }}", "'*' would build"),
    ("{{ [0] * 10**12 }}", "'*' would build"),
    ("{{ 3 ** (10**9) }}", "'**' would build"),
    ("{{ '%1000000000s' % 'x' }}", "'%' formatting"),
    ("{{ 'x'.ljust(10**10) }}", "ljust()"),
    ("{{ 'x'|center(10**10) }}", "the filter center"),
])
def test_values_too_large_are_refused_before_they_are_built(body, needle):
    with pytest.raises(TemplateRenderError) as e:
        t(body + "\n").render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind == "security" and needle in e.value.message


def test_a_render_that_runs_out_of_memory_is_a_template_error():
    """Doubling a string by concatenation (not an operator the sandbox can bound) hits the memory cap."""
    body = "{% set a = 'A' * 2000000 %}" + "".join(
        f"{{% set a{i} = a{i - 1 if i else ''} ~ a{i - 1 if i else ''} %}}" for i in range(40)) + "{{ a39|length }}\n"
    with pytest.raises(TemplateRenderError) as e:
        t(body).render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind == "limit" and "memory" in e.value.message


@pytest.mark.parametrize("body,kind,line", [
    ("ok\nok\n{{ UNROLL }}\n", "undefined", 11),
    ("ok\n{{ BLOCK.__class__ }}\n", "security", 10),
    ("{{ BLOCK // 0 }}\n", "error", 9),
])
def test_render_errors_name_the_file_and_line(body, kind, line):
    with pytest.raises(TemplateRenderError) as e:
        t(body).render({"BLOCK": 128, "VEC": 1}, SPEC)
    assert e.value.kind == kind and e.value.line == line and e.value.message.startswith(f"t.cu.j2:{line}: ")
    assert isinstance(e.value, KerntuneError) and e.value.code is ErrorCode.TEMPLATE and e.value.exit_status == 2


def test_declaration_errors_name_the_line():
    head = HEAD.replace("launch:", "flags:\n  cuda: {'-use_fast_math': 'FAST == 1'}\nlaunch:")
    with pytest.raises(KerntuneError) as e:
        t("x\n", head)
    assert e.value.message.startswith("t.cu.j2:6: flags: cuda: -use_fast_math: 'FAST == 1' uses ['FAST']")
    with pytest.raises(KerntuneError) as e:
        t("x\n{% if %}\n")
    assert e.value.message.startswith("t.cu.j2:10: Jinja syntax error")
    with pytest.raises(KerntuneError, match=r"^t.cu.j2:6: 'ceil_div\(m, BLOCK \* VEC\)' uses \['m'\]"):
        check_against_spec(t("x\n", HEAD.replace("ceil_div(n,", "ceil_div(m,")), SPEC)


def test_compiler_options_a_template_may_set():
    from kerntune.agents.proposal_checks import include_problem, includes, option_problem

    for option, lang in (("-cl-fast-relaxed-math", "opencl"), ("-cl-mad-enable", "opencl"), ("-DTILE=16", "opencl"),
                         ("-use_fast_math", "cuda"), ("--use_fast_math", "cuda"), ("--ftz=true", "cuda"),
                         ("-maxrregcount=64", "cuda"), ("-O3", "cuda"), ("-D VEC=4", "cuda")):
        assert option_problem(option, lang) is None, option
    for option, lang in (("-I/etc", "opencl"), ("-I /tmp", "cuda"), ("-include /etc/passwd", "cuda"),
                         ("@/tmp/options.txt", "cuda"), ("-o /tmp/x", "cuda"), ("-DX=/etc/passwd", "opencl"),
                         ("--use_fast_math -I/etc", "cuda"), ("-cl-fast-relaxed-math -I.", "opencl")):
        assert "not one a template may set" in option_problem(option, lang), option
    original = '#include "common.h"\n#include <cuda_fp16.h>\n__global__ void k() {}\n'
    assert includes(original) == ['include "common.h"', "include <cuda_fp16.h>"]
    assert include_problem(original + "// a rewrite\n/* #include \"x.h\" */\n", original) is None
    assert "adds #include \"/etc/passwd\"" in include_problem('#  include "/etc/passwd"\n' + original, original)
    # the ways a directive can be spelled so that a line-by-line match misses it
    for hidden in ('#define F "/etc/passwd"\n#include F\n', '#/**/include "/etc/passwd"\n',
                   '%:include "/etc/passwd"\n', '??=include "/etc/passwd"\n', '#\\\ninclude "/etc/passwd"\n',
                   '#import "/etc/passwd"\n', '#embed "/etc/passwd"\n', '#include_next <x.h>\n',
                   'const char* s = "/*";\n#/**/include "/etc/passwd"\n// */\n'):
        assert include_problem(hidden + original, original), hidden
