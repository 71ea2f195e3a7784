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
Jinja's immutable sandbox with strict undefined variables, under a time limit,
an output size limit and a memory limit (operators and filters that would
build huge values are refused before they run), and nothing in them is ever
executed as Python. Every mistake in a template is a :class:`KerntuneError`
(exit status 2) naming the template's file and line.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import signal
import threading
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Optional, Union

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
MAX_POWER_BITS = 4096                   # the largest integer ``**`` may build
RENDER_MEMORY = 512 * 2**20             # address space a render may add (Linux), beyond what the process uses
TEMPLATE_HINT = "the template format and its sandbox are described in docs/templates.md"


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


class TemplateRenderError(KerntuneError):
    """A configuration of a template that cannot be rendered: a template error (exit status 2)
    that names the template's file and, where it can be known, the line."""

    def __init__(self, kind: str, message: str, origin: str = "", line: Optional[int] = None):
        where = f"{origin}:{line}: " if origin and line else f"{origin}: " if origin else ""
        super().__init__(ErrorCode.TEMPLATE, where + message, hint=TEMPLATE_HINT)
        self.kind = kind          # "syntax", "undefined", "security", "limit", "error"
        self.reason = message     # the problem without the place
        self.origin = origin
        self.line = line

    def __reduce__(self):
        return (TemplateRenderError, (self.kind, self.reason, self.origin, self.line))


def _too_big(n: int, what: str) -> None:
    if n > MAX_OUTPUT:
        raise SecurityError(f"{what} would build {n} items (the limit is {MAX_OUTPUT})")


_SIZED = (str, bytes, list, tuple)
_PRINTF_SIZES = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _bounded_filter(f: Any, name: str) -> Any:
    """A filter whose integer arguments are widths: refused above the output limit."""

    def bounded(*args: Any, **kwargs: Any) -> Any:
        for v in (*args[1:], *kwargs.values()):
            if isinstance(v, int) and not isinstance(v, bool):
                _too_big(v, f"the filter {name}")
        return f(*args, **kwargs)

    return bounded


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, with the operators and filters that build values of a size
    the template chooses (``'A' * n``, ``x ** n``, ``'%*s' % ...``, ``center(n)``) bounded."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                         trim_blocks=True, lstrip_blocks=True)
        self.globals = {"range": self._range}
        for name in ("center", "indent", "wordwrap", "truncate", "format"):
            self.filters[name] = _bounded_filter(self.filters[name], name)

    @staticmethod
    def _range(*args: int) -> range:
        r = range(*args)
        if len(r) > MAX_RANGE:
            raise SecurityError(f"range() of {len(r)} items exceeds the limit of {MAX_RANGE}")
        return r

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, _SIZED) and isinstance(n, int):
                    _too_big(len(seq) * n, "'*'")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 \
                and abs(left) > 1 and abs(left).bit_length() * right > MAX_POWER_BITS:
            raise SecurityError(f"'**' would build an integer of about {abs(left).bit_length() * right} bits "
                                f"(the limit is {MAX_POWER_BITS})")
        elif operator == "%" and isinstance(left, str):
            for m in _PRINTF_SIZES.finditer(left):
                for size in m.groups():
                    if size is not None and size != "*":
                        _too_big(int(size), "'%' formatting")
            if "*" in left:
                for v in (right if isinstance(right, tuple) else (right,)):
                    if isinstance(v, int) and not isinstance(v, bool):
                        _too_big(v, "'%' formatting")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if isinstance(getattr(__obj, "__self__", None), (str, bytes)):   # e.g. 'x'.ljust(n), 'x'.zfill(n)
            for v in (*args, *kwargs.values()):
                if isinstance(v, int) and not isinstance(v, bool):
                    _too_big(v, f"{getattr(__obj, '__name__', 'a string method')}()")
        return super().call(__context, __obj, *args, **kwargs)


_ENV = _Sandbox()


@functools.lru_cache(maxsize=32)
def _compiled(body: str):
    """The sandbox's compiled template for ``body``: compiled once, rendered for every configuration (a
    search renders hundreds; compiling each time was most of a replay's cost)."""
    return _ENV.from_string(body)


@contextlib.contextmanager
def _memory_limit(extra: int) -> Iterator[None]:
    """Cap the process's address space at what it uses now plus ``extra`` (Linux), so that a
    runaway render ends in a MemoryError instead of exhausting the machine."""
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as f:
            used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, StopIteration, ValueError):
        yield
        return
    cap = used + extra
    if (hard != resource.RLIM_INFINITY and cap > hard) or (soft != resource.RLIM_INFINITY and cap > soft):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


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
    body_line: int = 1        # the file line where the body starts
    # an untrusted template (an LLM's): the #include lines its instances may have (those of the kernel it
    # rewrites), and its instances must take the spec's arguments (kerntune.agents.proposal_checks)
    allowed_includes: Optional[frozenset[str]] = None

    def confined_to(self, source: str) -> "Template":
        """This template, its instances held to the includes of ``source`` and to the spec's signature."""
        from kerntune.agents.proposal_checks import includes

        return replace(self, allowed_includes=frozenset(includes(source)))

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
                raise TemplateRenderError("error", f"the kernel name {self.decl.kernel!r} does not render: {e}",
                                          self.origin, line_of(self.text, "kernel:")) from None
        return " ".join(name.split())

    def context(self, config: dict[str, Value], spec: KernelSpec) -> dict[str, Any]:
        args = {a.name: {"dtype": a.dtype, "ctype": a.dt.ctype(self.lang), "itemsize": a.dt.itemsize}
                for a in spec.args}
        name = self.kernel_name(spec, config)
        return {**config, "args": args, "lang": self.lang, "kernel_name": name, "kernel_function": base_name(name)}

    def _line(self, e: BaseException) -> Optional[int]:
        """The file line of the template code that raised ``e`` (Jinja maps its frames to template lines)."""
        line = None
        for frame, lineno in traceback.walk_tb(e.__traceback__):
            if frame.f_code.co_filename == "<template>":
                line = lineno
        return self.body_line + line - 1 if line else None

    def _error(self, kind: str, message: str, e: Optional[BaseException] = None,
               line: Optional[int] = None) -> TemplateRenderError:
        if line is None and e is not None:
            line = self._line(e)
        return TemplateRenderError(kind, message, self.origin, line)

    def render(self, config: dict[str, Value], spec: KernelSpec) -> str:
        try:
            compiled = _compiled(self.body)
        except TemplateSyntaxError as e:
            raise self._error("syntax", f"Jinja syntax error: {e.message}",
                              line=self.body_line + (e.lineno or 1) - 1) from None
        context = self.context(config, spec)
        try:
            with _time_limit(RENDER_SECONDS), _memory_limit(RENDER_MEMORY):
                out = compiled.render(context)
        except TemplateRenderError:
            raise
        except SecurityError as e:
            raise self._error("security", f"the template tried something the sandbox forbids: {e}", e) from None
        except UndefinedError as e:
            raise self._error("undefined", f"undefined variable: {e.message}", e) from None
        except MemoryError as e:
            raise self._error("limit", "rendering ran out of memory (the template builds a value too large)",
                              e) from None
        except RecursionError as e:
            raise self._error("limit", "rendering recursed too deeply", e) from None
        except (TemplateError, ArithmeticError, TypeError, ValueError, AttributeError, LookupError) as e:
            raise self._error("error", f"{type(e).__name__}: {e}", e) from None
        if len(out) > MAX_OUTPUT:
            raise self._error("limit", f"rendered source is {len(out)} characters (limit {MAX_OUTPUT})")
        if self.allowed_includes is not None:
            from kerntune.agents.proposal_checks import include_problem, includes, signature_problem

            why = include_problem(out, "\n".join(f"#{i}" for i in self.allowed_includes)) \
                or signature_problem(out, self.lang, spec, self.kernel_name(spec, config))
            if why:
                kind = "include" if includes(out) and why.startswith("the template adds") else "signature"
                raise self._error(kind, why)
        return out

    def options(self, config: dict[str, Value], spec: KernelSpec) -> tuple[str, ...]:
        base = list(getattr(spec.compile_options, self.lang))
        for option, condition in self.decl.flags.get(self.lang, {}).items():
            try:
                on = expr.evaluate(condition, config)
            except expr.ExprError as e:
                raise self._error("error", f"flags: {option}: {e}", line=line_of(self.text, condition)) from None
            if on and option not in base:     # a flag the spec already gives is not given twice
                base.append(option)
        return tuple(base)

    def instance(self, config: dict[str, Value], spec: KernelSpec, label: str | None = None) -> KernelInstance:
        return KernelInstance(source=self.render(config, spec), name=self.kernel_name(spec, config), lang=self.lang,
                              options=self.options(config, spec), launch=self.decl.launch,
                              params=tuple(config.items()), label=label or config_key(config))


def line_of(text: str, needle: str, start: int = 0) -> Optional[int]:
    """The 1-based line of ``text`` where ``needle`` first appears (after character ``start``)."""
    i = text.find(needle, start) if needle else -1
    return text.count("\n", 0, i) + 1 if i >= 0 else None


def _where(origin: str, line: Optional[int]) -> str:
    return f"{origin}:{line}" if line else origin


def _template_error(origin: str, message: str, line: Optional[int] = None) -> KerntuneError:
    return KerntuneError(ErrorCode.TEMPLATE, f"{_where(origin, line)}: {message}", hint=TEMPLATE_HINT)


def split_declaration(text: str, origin: str) -> tuple[str, str, int]:
    """(YAML declaration, Jinja body, line where the body starts)."""
    m = DECL_OPEN.match(text)
    if not m:
        raise _template_error(origin, "a template must open with a '{# kerntune-template' block declaring its "
                                      "parameters", 1)
    end = text.find("#}", m.end())
    if end < 0:
        raise _template_error(origin, "the '{# kerntune-template' block is never closed with '#}'", 1)
    decl = text[m.end():end].rstrip("-").rstrip()
    body_start = end + 2
    if text[body_start:body_start + 1] == "\n":
        body_start += 1
    return decl, text[body_start:], text.count("\n", 0, body_start) + 1


def _decl_line(text: str, loc: tuple) -> Optional[int]:
    """The line of a declaration field (its last named key), for a validation error."""
    keys = [str(k) for k in loc if isinstance(k, str)]
    at = 0
    for k in keys:
        found = re.search(rf"(^|[\s{{,]){re.escape(k)}\s*:", text[at:], re.M)
        if found is None:
            break
        at += found.start()
    return text.count("\n", 0, at) + 1 if keys else None


def parse_template(text: str, lang: str, origin: str = "<template>") -> Template:
    decl_text, body, body_line = split_declaration(text, origin)
    try:
        data = yaml.safe_load(decl_text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None        # the declaration starts on line 2
        raise _template_error(origin, f"the declaration is not valid YAML: {getattr(e, 'problem', None) or e}",
                              line) from None
    if not isinstance(data, dict):
        raise _template_error(origin, "the declaration must be a YAML mapping", 2)
    try:
        decl = TemplateDecl.model_validate(data)
    except ValidationError as e:
        errors = e.errors(include_url=False)
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg'].removeprefix('Value error, ')}"
                             for err in errors)
        raise _template_error(origin, f"invalid template declaration: {problems}",
                              _decl_line(text, errors[0]["loc"]) if errors else None) from None
    params = set(decl.params)
    for where, text_expr in [("restrictions", r) for r in decl.restrictions] + \
            [("flags", c) for f in decl.flags.values() for c in f.values()] + \
            [("launch", str(d)) for d in [*decl.launch.grid, *decl.launch.block, decl.launch.shared_mem]]:
        try:
            expr.parse(str(text_expr))
        except expr.ExprError as e:
            raise _template_error(origin, f"{where}: {e}", line_of(text, str(text_expr))) from None
    for lang_, flags in decl.flags.items():      # a flag's condition is evaluated on the parameters alone
        for option, condition in flags.items():
            unknown = expr.names(condition) - params
            if unknown:
                raise _template_error(origin, f"flags: {lang_}: {option}: {condition!r} uses {sorted(unknown)}; "
                                              f"flag conditions may use the parameters ({', '.join(decl.params)})",
                                              line_of(text, condition))
    try:
        _ENV.parse(body)
    except TemplateSyntaxError as e:
        raise _template_error(origin, f"Jinja syntax error: {e.message}", body_line + (e.lineno or 1) - 1) from None
    t = Template(origin=origin, lang=lang, body=body, decl=decl, text=text, body_line=body_line)
    if decl.kernel is not None:
        try:
            parse_kernel_name(t.kernel_name(None, t.baseline))   # type: ignore[arg-type]
        except (KernelNameError, TemplateRenderError) as e:
            reason = e.reason if isinstance(e, TemplateRenderError) else str(e)
            raise _template_error(origin, f"kernel: {reason}", line_of(text, "kernel:")) from None
    return t


def stored_template(store: Any, origin: Optional[str] = None) -> Optional[Template]:
    """The template a run database records (its text, language and path), parsed; None where it records none.
    A recorded template that no longer parses raises, as any template would."""
    text, lang = store.get("template_text"), store.get("template_lang")
    if not text or not lang:
        return None
    return parse_template(text, lang, origin or store.get("template_path") or "recorded template")


def load_template(path: Path) -> Template:
    lang = language_of(path)
    return parse_template(read_text(path, "template"), lang, str(path))


def check_against_spec(t: Template, spec: KernelSpec) -> None:
    """Names a template's expressions use must be its parameters or the spec's sizes."""
    known = set(t.decl.params) | set(spec.sizes) | set(spec.constants)
    clashes = sorted(set(t.decl.params) & set(spec.sizes))
    if clashes:
        raise _template_error(t.origin, f"parameters {clashes} have the names of spec sizes",
                              line_of(t.text, f"{clashes[0]}:"))
    exprs = list(t.decl.restrictions) + [str(d) for d in [*t.decl.launch.grid, *t.decl.launch.block,
                                                          t.decl.launch.shared_mem]]
    if t.decl.shared_estimate is not None:
        exprs.append(str(t.decl.shared_estimate))
    for e in exprs:
        unknown = expr.names(e) - known
        if unknown:
            raise _template_error(t.origin, f"{e!r} uses {sorted(unknown)}, which are neither parameters "
                                            f"({', '.join(t.decl.params)}) nor sizes ({', '.join(spec.sizes)})",
                                  line_of(t.text, e))
