"""Kernel templates: Jinja2 kernels with a declared parameter space.

A template file (``foo.cu.j2`` or ``foo.cl.j2``) opens with a Jinja comment
holding its declaration in YAML::

    {# kerntune-template
    params:                       # name: candidate values; the FIRST value of
      BLOCK: [256, 128, 512]      # every parameter reproduces the original kernel
      VEC: [1, 2, 4]
    restrictions:                 # expressions of parameters and sizes
      - "d % VEC == 0"
    launch:
      grid: ["ceil_div(d, BLOCK * VEC)", T]
      block: [BLOCK]
    #}

Templates are untrusted input (an LLM may have written one): they render in
Jinja's immutable sandbox with strict undefined variables, under a time limit
and an output size limit, and nothing in them is ever executed as Python.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import yaml
from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kerntune.engine.evaluate import KernelInstance
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.kernelfile import language_of
from kerntune.source.names import KernelNameError, base_name, parse_kernel_name
from kerntune.spec import expr
from kerntune.spec.load import read_text
from kerntune.spec.model import IDENT, Dim, KernelSpec, LaunchSpec

Value = Union[bool, int, float, str]
DECL_OPEN = re.compile(r"^\s*\{#-?\s*kerntune-template\s*\n")
RENDER_SECONDS = 5.0
MAX_OUTPUT = 2_000_000
MAX_RANGE = 4096


class TemplateDecl(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kernel: str | None = Field(None, description="entry function (default: the spec's kernel)")
    description: str = ""
    params: dict[str, list[Value]] = Field(min_length=1)
    restrictions: list[str] = []
    launch: LaunchSpec
    flags: dict[str, dict[str, str]] = {}          # language -> {compiler option: condition expression}
    shared_estimate: Dim | None = None             # static shared memory bytes, for pruning before compile

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, list[Value]]) -> dict[str, list[Value]]:
        for name, values in v.items():
            if not IDENT.match(name):
                raise ValueError(f"parameter name {name!r} is not an identifier")
            if not values:
                raise ValueError(f"parameter {name!r} has no values")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"parameter {name!r} lists a value twice: {values}")
        return v

    @field_validator("flags")
    @classmethod
    def _flags(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        unknown = set(v) - {"cuda", "opencl"}
        if unknown:
            raise ValueError(f"flags are keyed by language (cuda, opencl), found {sorted(unknown)}")
        return v


class TemplateRenderError(Exception):
    """A configuration of a template that cannot be rendered."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind          # "undefined", "security", "limit", "error"
        self.message = message


class _Sandbox(ImmutableSandboxedEnvironment):
    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                         trim_blocks=True, lstrip_blocks=True)
        self.globals = {"range": self._range}

    @staticmethod
    def _range(*args: int) -> range:
        r = range(*args)
        if len(r) > MAX_RANGE:
            raise SecurityError(f"range() of {len(r)} items exceeds the limit of {MAX_RANGE}")
        return r


_ENV = _Sandbox()


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a runaway render (only possible on the main thread)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _alarm(signum: int, frame: Any) -> None:
        raise TemplateRenderError("limit", f"rendering took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def config_key(config: dict[str, Value]) -> str:
    """A stable text key for a configuration (parameter order as declared)."""
    return ",".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in config.items())


@dataclass(frozen=True)
class Template:
    origin: str
    lang: str
    body: str                 # the Jinja source after the declaration block
    decl: TemplateDecl
    text: str                 # the whole file

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    @property
    def baseline(self) -> dict[str, Value]:
        """The first value of every parameter: the original kernel's choices."""
        return {k: v[0] for k, v in self.decl.params.items()}

    def kernel_name(self, spec: KernelSpec, config: dict[str, Value] | None = None) -> str:
        """The entry point: the declaration's ``kernel`` (which may use parameters, e.g. a template
        argument ``ns::k<__nv_bfloat16, {{ BLOCK }}>``, rendered for ``config``), else the spec's."""
        name = self.decl.kernel or spec.kernel   # spec is only read when the declaration names no kernel
        if "{{" in name:
            try:
                name = _ENV.from_string(name).render(config if config is not None else self.baseline)
            except (TemplateError, SecurityError, ArithmeticError, TypeError, ValueError) as e:
                raise TemplateRenderError("error", f"the kernel name {self.decl.kernel!r} does not render: {e}") \
                    from None
        return " ".join(name.split())

    def context(self, config: dict[str, Value], spec: KernelSpec) -> dict[str, Any]:
        args = {a.name: {"dtype": a.dtype, "ctype": a.dt.ctype(self.lang), "itemsize": a.dt.itemsize}
                for a in spec.args}
        name = self.kernel_name(spec, config)
        return {**config, "args": args, "lang": self.lang, "kernel_name": name, "kernel_function": base_name(name)}

    def render(self, config: dict[str, Value], spec: KernelSpec) -> str:
        try:
            compiled = _ENV.from_string(self.body)
        except TemplateSyntaxError as e:
            raise TemplateRenderError("syntax", f"line {e.lineno}: {e.message}") from None
        try:
            with _time_limit(RENDER_SECONDS):
                out = compiled.render(self.context(config, spec))
        except TemplateRenderError:
            raise
        except SecurityError as e:
            raise TemplateRenderError("security", f"the template tried something the sandbox forbids: {e}") from None
        except UndefinedError as e:
            raise TemplateRenderError("undefined", f"undefined variable: {e.message}") from None
        except (TemplateError, ArithmeticError, TypeError, ValueError, AttributeError) as e:
            raise TemplateRenderError("error", f"{type(e).__name__}: {e}") from None
        if len(out) > MAX_OUTPUT:
            raise TemplateRenderError("limit", f"rendered source is {len(out)} characters (limit {MAX_OUTPUT})")
        return out

    def options(self, config: dict[str, Value], spec: KernelSpec) -> tuple[str, ...]:
        base = list(getattr(spec.compile_options, self.lang))
        for option, condition in self.decl.flags.get(self.lang, {}).items():
            if expr.evaluate(condition, config):
                base.append(option)
        return tuple(base)

    def instance(self, config: dict[str, Value], spec: KernelSpec, label: str | None = None) -> KernelInstance:
        return KernelInstance(source=self.render(config, spec), name=self.kernel_name(spec, config), lang=self.lang,
                              options=self.options(config, spec), launch=self.decl.launch,
                              params=tuple(config.items()), label=label or config_key(config))


def split_declaration(text: str, origin: str) -> tuple[str, str, int]:
    """(YAML declaration, Jinja body, line where the body starts)."""
    m = DECL_OPEN.match(text)
    if not m:
        raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: a template must open with a "
                                                "'{# kerntune-template' block declaring its parameters",
                            hint="see docs/templates.md for the format")
    end = text.find("#}", m.end())
    if end < 0:
        raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: the '{{# kerntune-template' block is never closed with '#}}'")
    decl = text[m.end():end].rstrip("-").rstrip()
    body_start = end + 2
    if text[body_start:body_start + 1] == "\n":
        body_start += 1
    return decl, text[body_start:], text.count("\n", 0, body_start) + 1


def parse_template(text: str, lang: str, origin: str = "<template>") -> Template:
    decl_text, body, _ = split_declaration(text, origin)
    try:
        data = yaml.safe_load(decl_text)
    except yaml.YAMLError as e:
        raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: the declaration is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: the declaration must be a YAML mapping")
    try:
        decl = TemplateDecl.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg'].removeprefix('Value error, ')}"
                             for err in e.errors(include_url=False))
        raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: invalid template declaration: {problems}") from None
    for where, text_expr in [("restrictions", r) for r in decl.restrictions] + \
            [("flags", c) for f in decl.flags.values() for c in f.values()] + \
            [("launch", str(d)) for d in [*decl.launch.grid, *decl.launch.block, decl.launch.shared_mem]]:
        try:
            expr.parse(str(text_expr))
        except expr.ExprError as e:
            raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: {where}: {e}") from None
    try:
        _ENV.parse(body)
    except TemplateSyntaxError as e:
        raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: Jinja syntax error at body line {e.lineno}: {e.message}") from None
    t = Template(origin=origin, lang=lang, body=body, decl=decl, text=text)
    if decl.kernel is not None:
        try:
            parse_kernel_name(t.kernel_name(None, t.baseline))   # type: ignore[arg-type]
        except (KernelNameError, TemplateRenderError) as e:
            raise KerntuneError(ErrorCode.TEMPLATE, f"{origin}: kernel: {e}") from None
    return t


def load_template(path: Path) -> Template:
    lang = language_of(path)
    return parse_template(read_text(path, "template"), lang, str(path))


def check_against_spec(t: Template, spec: KernelSpec) -> None:
    """Names a template's expressions use must be its parameters or the spec's sizes."""
    known = set(t.decl.params) | set(spec.sizes) | set(spec.constants)
    clashes = sorted(set(t.decl.params) & set(spec.sizes))
    if clashes:
        raise KerntuneError(ErrorCode.TEMPLATE, f"{t.origin}: parameters {clashes} have the names of spec sizes")
    exprs = list(t.decl.restrictions) + [str(d) for d in [*t.decl.launch.grid, *t.decl.launch.block,
                                                          t.decl.launch.shared_mem]]
    if t.decl.shared_estimate is not None:
        exprs.append(str(t.decl.shared_estimate))
    for e in exprs:
        unknown = expr.names(e) - known
        if unknown:
            raise KerntuneError(ErrorCode.TEMPLATE, f"{t.origin}: {e!r} uses {sorted(unknown)}, which are neither "
                                                    f"parameters ({', '.join(t.decl.params)}) nor sizes "
                                                    f"({', '.join(spec.sizes)})")
