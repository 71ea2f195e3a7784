"""The kernel spec: how to call a kernel, on which shapes, and how to judge it.

Validated with pydantic for structure and types; :func:`semantic_problems`
checks what pydantic cannot (every name an expression uses is a declared size,
every shape binds every size, and so on). Both report a path such as
``args[2].dtype`` so the loader can point at the YAML line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kerntune.dtypes import DTYPE_NAMES, DTYPES, DType
from kerntune.source.names import KernelName, KernelNameError, parse_kernel_name
from kerntune.spec import expr

# what `kerntune init` writes where it could not infer a field; a problem that names it says STILL_TODO
TODO = "TODO"
STILL_TODO = "is still TODO"

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
Intent = Literal["in", "out", "inout"]
Dim = Union[int, str]
RESERVED_SHAPE_KEYS = ("label",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeSpec(_Strict):
    """Constraints on a named size; used to make held-out verification shapes."""

    multiple_of: int = Field(1, ge=1)
    min: int = Field(1, ge=0)
    max: int | None = None


class ToleranceSpec(_Strict):
    rel_l2: float | None = Field(None, ge=0)
    atol: float | None = Field(None, ge=0)
    rtol: float | None = Field(None, ge=0)


class ArgSpec(_Strict):
    name: str
    dtype: str
    shape: list[Dim] | None = Field(None, description="array shape as expressions of sizes; omit for a scalar")
    intent: Intent = "in"
    value: int | float | str | None = Field(None, description="scalar value: a number or an expression of sizes")
    range: tuple[float, float] | None = Field(None, description="inputs drawn uniformly from [lo, hi)")
    tolerance: ToleranceSpec | None = None

    @field_validator("name")
    @classmethod
    def _ident(cls, v: str) -> str:
        if not IDENT.match(v):
            raise ValueError(f"expected a C identifier, found {v!r}")
        return v

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, v: str) -> str:
        if v == TODO:
            raise ValueError(f"the dtype {STILL_TODO}: write one of {', '.join(DTYPE_NAMES)}")
        if v not in DTYPES:
            raise ValueError(f"expected one of {', '.join(DTYPE_NAMES)}; found {v!r}")
        return v

    @field_validator("shape")
    @classmethod
    def _shape(cls, v: list[Dim] | None) -> list[Dim] | None:
        if v is not None and len(v) == 0:
            raise ValueError("an array needs at least one dimension; omit 'shape' for a scalar")
        return v

    @model_validator(mode="after")
    def _scalar_or_array(self) -> "ArgSpec":
        if self.shape is None:
            if self.value is None:
                raise ValueError(f"scalar argument {self.name!r} needs a 'value' (a number or an expression of sizes), "
                                 "or give it a 'shape' to make it an array")
            if self.intent != "in":
                raise ValueError(f"scalar argument {self.name!r} can only have intent 'in', found {self.intent!r}")
        elif self.value is not None:
            raise ValueError(f"array argument {self.name!r} cannot have a 'value'; use 'range' or an inputs generator")
        if self.range is not None and not self.range[0] < self.range[1]:
            raise ValueError(f"range of {self.name!r} must be [lo, hi) with lo < hi, found {list(self.range)}")
        return self

    @property
    def is_array(self) -> bool:
        return self.shape is not None

    @property
    def dt(self) -> DType:
        return DTYPES[self.dtype]


class LaunchSpec(_Strict):
    grid: list[Dim] = Field(min_length=1, max_length=3)
    block: list[Dim] = Field(min_length=1, max_length=3)
    shared_mem: Dim = 0


class ImplementationLaunch(LaunchSpec):
    """How one implementation of the spec is launched (and, optionally, built)."""

    compile_options: list[str] = Field([], description="extra compiler options for this implementation")
    kernel: str | None = Field(None, description="this implementation's entry point when it differs from the "
                                                 "spec's `kernel` (a tuned template argument: ns::k<half, 256>)")

    @field_validator("kernel")
    @classmethod
    def _kernel_name(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            return parse_kernel_name(v).text
        except KernelNameError as e:
            raise ValueError(str(e)) from None


class FunctionRef(_Strict):
    """A Python function from the user's own file (trusted, like a test file)."""

    file: str | None = None
    code: str | None = None
    function: str

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        if isinstance(v, str):
            if ":" not in v:
                raise ValueError(f"expected 'file.py:function' or a mapping with file/code and function, found {v!r}")
            file, _, func = v.rpartition(":")
            return {"file": file, "function": func}
        return v

    @model_validator(mode="after")
    def _one_source(self) -> "FunctionRef":
        if (self.file is None) == (self.code is None):
            raise ValueError("give exactly one of 'file' and 'code'")
        if not IDENT.match(self.function):
            raise ValueError(f"function must be a Python identifier, found {self.function!r}")
        return self


class CompileOptions(_Strict):
    cuda: list[str] = []
    opencl: list[str] = []


class KernelSpec(_Strict):
    kernel: str = Field(description="the kernel entry function: an identifier, a qualified name (ns::kernel) or a "
                                    "template instantiation (ns::kernel<__nv_bfloat16, 128>)")
    sizes: dict[str, SizeSpec] = {}
    args: list[ArgSpec] = Field(min_length=1)
    launch: LaunchSpec
    launches: dict[str, ImplementationLaunch] = Field({}, description="launch (and extra compile options) of a "
                                                                      "particular implementation, by file stem "
                                                                      "(optimized.cu -> optimized); default: `launch`")
    shapes: list[dict[str, Union[int, str]]] = Field(min_length=1)
    shape_sets: dict[str, list[dict[str, Union[int, str]]]] = {}   # extra named sets, chosen with --shape-set
    holdout_shapes: list[dict[str, Union[int, str]]] | None = None
    tolerance: ToleranceSpec | None = None
    accuracy_ratio: float | None = Field(2.0, ge=1, description="where there is a NumPy reference, a candidate "
                                         "whose relative L2 error against it is more than this many times the "
                                         "original kernel's (and above a quarter of the tolerance) fails as less "
                                         "accurate (and one scaled or shifted against it, the same way "
                                         "everywhere, more than the original: biased); null: any candidate "
                                         "within the tolerance passes")
    reference: FunctionRef | None = None
    inputs: FunctionRef | None = None
    bytes_moved: Dim | None = None
    compile_options: CompileOptions = CompileOptions()
    noalias: bool = Field(False, description="the array arguments never overlap in memory (for every caller), so "
                                             "rewrites may mark pointers restrict")
    include_dirs: list[str] = Field([], description="folders searched for the kernel file's local headers "
                                                     "(relative to the spec), for extension sources")
    distributions: list[str] | None = Field(None, description="input distributions every shape is verified on "
                                                              "(default: all of spec, shifted, negative, large, "
                                                              "small, ties, wide)")
    special_values: bool = Field(False, description="also verify on inputs mixed with 0, -0, inf, -inf, NaN, "
                                                    "subnormals and the largest finite value")

    @field_validator("distributions")
    @classmethod
    def _distributions(cls, v: list[str] | None) -> list[str] | None:
        from kerntune.engine.distributions import NAMES

        if v is None:
            return v
        if not v:
            raise ValueError("give at least one distribution (e.g. [spec])")
        unknown = [d for d in v if d not in NAMES]
        if unknown:
            raise ValueError(f"unknown distribution {unknown[0]!r}; expected some of {', '.join(NAMES)}")
        return list(dict.fromkeys(v))

    @field_validator("kernel")
    @classmethod
    def _kernel_name(cls, v: str) -> str:
        try:
            return parse_kernel_name(v).text
        except KernelNameError as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="after")
    def _fill_sizes(self) -> "KernelSpec":
        every = list(self.shapes) + [s for group in self.shape_sets.values() for s in group]
        names = {k for s in every for k in s if k not in RESERVED_SHAPE_KEYS}
        missing = sorted(names - set(self.sizes))
        if missing:
            sizes = dict(self.sizes)
            for n in missing:
                sizes[n] = SizeSpec()
            object.__setattr__(self, "sizes", sizes)
        return self

    @property
    def kernel_name(self) -> KernelName:
        return parse_kernel_name(self.kernel)

    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def constants(self) -> dict[str, int]:
        """Names template expressions may use besides sizes and parameters: ``itemsize_<arg>``."""
        return {f"itemsize_{a.name}": a.dt.itemsize for a in self.args}

    @property
    def input_distributions(self) -> tuple[str, ...]:
        """The distributions this spec's kernels are verified on, in order ("spec" first when present)."""
        from kerntune.engine.distributions import DEFAULT, SPECIAL

        names = tuple(self.distributions) if self.distributions is not None else DEFAULT
        if self.special_values and SPECIAL not in names:
            names += (SPECIAL,)
        return names

    @property
    def arrays(self) -> list[ArgSpec]:
        return [a for a in self.args if a.is_array]

    @property
    def outputs(self) -> list[ArgSpec]:
        return [a for a in self.args if a.is_array and a.intent in ("out", "inout")]


@dataclass(frozen=True)
class Shape:
    """One binding of the named sizes, with a label for tables."""

    sizes: tuple[tuple[str, int], ...]
    label: str = ""
    holdout: bool = False

    @classmethod
    def of(cls, mapping: dict[str, int], label: str = "", holdout: bool = False) -> "Shape":
        items = tuple((k, int(v)) for k, v in mapping.items())
        return cls(items, label or " ".join(f"{k}={v}" for k, v in items), holdout)

    def as_dict(self) -> dict[str, int]:
        return dict(self.sizes)

    @property
    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.sizes)


@dataclass
class Problem:
    path: tuple[Any, ...]
    message: str


@dataclass
class _Checker:
    spec: KernelSpec
    problems: list[Problem] = field(default_factory=list)

    def expr_names(self, path: tuple, text: Dim | float, allowed: set[str]) -> None:
        if isinstance(text, (int, float)):
            return
        try:
            used = expr.names(text)
        except expr.ExprError as e:
            self.problems.append(Problem(path, str(e)))
            return
        if TODO in used - allowed:
            self.problems.append(Problem(path, self._still_todo(path)))
        unknown = sorted(used - allowed - {TODO})
        if unknown:
            self.problems.append(Problem(path, f"{', '.join(map(repr, unknown))} is not a declared size "
                                               f"(sizes: {', '.join(sorted(allowed)) or 'none'})"))

    def _still_todo(self, path: tuple) -> str:
        """A TODO `kerntune init` left in the field at ``path`` (a user who did not fill it in got "'TODO'
        is not a declared size" from bench): what to write there."""
        if path[0] == "args" and len(path) > 2:
            a = self.spec.args[path[1]]
            if path[2] == "shape":
                return (f"{a.name}'s shape {STILL_TODO}: write the array's dimensions, as numbers or "
                        "expressions of the sizes (e.g. [rows, cols])")
            return f"{a.name}'s {path[2]} {STILL_TODO}: write the value to pass, a number or an expression of the sizes"
        return f"{STILL_TODO}: write a number or an expression of the sizes"

    def launch_names(self, where: tuple, launch: LaunchSpec, sizes: set[str]) -> None:
        for key in ("grid", "block"):
            for j, d in enumerate(getattr(launch, key)):
                self.expr_names(where + (key, j), d, sizes)
        self.expr_names(where + ("shared_mem",), launch.shared_mem, sizes)

    def stray_sizes(self) -> dict[str, str]:
        """Sizes that only some shapes bind and no expression of the spec uses, with the size they look
        like a typo of: a typo in one shape (`colss: 3`) made every other shape 'not bound', and not
        the shape with the typo (a user tour). Each is reported once, where it is bound."""
        import difflib

        spec = self.spec
        every = list(spec.shapes) + [s for g in spec.shape_sets.values() for s in g] + list(spec.holdout_shapes or [])
        texts = [d for a in spec.args for d in (a.shape or [])] + [a.value for a in spec.args if a.value is not None]
        for launch in [spec.launch, *spec.launches.values()]:
            texts += [*launch.grid, *launch.block, launch.shared_mem]
        texts.append(spec.bytes_moved)
        used: set[str] = set()
        for t in texts:
            if isinstance(t, str):
                try:
                    used |= expr.names(t)
                except expr.ExprError:
                    pass
        out = {}
        for n in spec.sizes:
            binding = sum(n in s for s in every)
            if n not in used and 0 < binding < len(every) - binding:
                like = difflib.get_close_matches(n, sorted(used & set(spec.sizes)), n=1)
                out[n] = f" (a typo of {like[0]!r}?)" if like else ""
        return out

    def shape_list(self, key: str, shapes: list[dict[str, Any]]) -> None:
        stray = self.stray_sizes()
        sizes = set(self.spec.sizes) - set(stray)
        for i, s in enumerate(shapes):
            label = s.get("label")
            if label is not None and not isinstance(label, str):
                self.problems.append(Problem((key, i, "label"), f"expected a string, found {label!r}"))
            for n in sorted(set(s) & set(stray)):
                self.problems.append(Problem((key, i, n), f"{n!r} is bound by some shapes only, and no argument or "
                                                          f"launch uses it{stray[n]}"))
            bound = {k for k in s if k not in RESERVED_SHAPE_KEYS and k not in stray}
            for n in sorted(sizes - bound):
                self.problems.append(Problem((key, i), f"size {n!r} is not bound (every shape binds {', '.join(sorted(sizes))})"))
            for n in sorted(bound - sizes):
                self.problems.append(Problem((key, i, n), f"{n!r} is not a declared size"))
            for n in sorted(bound & sizes):
                v = s[n]
                if isinstance(v, bool) or not isinstance(v, int):
                    self.problems.append(Problem((key, i, n), f"expected an integer, found {v!r}"))
                    continue
                c = self.spec.sizes[n]
                if v < c.min or (c.max is not None and v > c.max) or v % c.multiple_of:
                    rule = f">= {c.min}" + (f", <= {c.max}" if c.max is not None else "") + \
                        (f", multiple of {c.multiple_of}" if c.multiple_of > 1 else "")
                    self.problems.append(Problem((key, i, n), f"expected an integer {rule}, found {v}"))


def launch_problems(spec: KernelSpec, where: tuple[Any, ...], launch: LaunchSpec) -> list[Problem]:
    """Names in a launch's expressions that are not the spec's sizes."""
    c = _Checker(spec)
    c.launch_names(where, launch, set(spec.sizes))
    return c.problems


def semantic_problems(spec: KernelSpec) -> list[Problem]:
    c = _Checker(spec)
    sizes = set(spec.sizes)
    seen: set[str] = set()
    for i, a in enumerate(spec.args):
        if a.name in seen:
            c.problems.append(Problem(("args", i, "name"), f"argument name {a.name!r} is used twice"))
        seen.add(a.name)
        for j, d in enumerate(a.shape or []):
            c.expr_names(("args", i, "shape", j), d, sizes)
        if a.value is not None:
            c.expr_names(("args", i, "value"), a.value, sizes)
    for where, launch in [(("launch",), spec.launch)] + [(("launches", k), v) for k, v in spec.launches.items()]:
        c.launch_names(where, launch, sizes)
    if spec.bytes_moved is not None:
        c.expr_names(("bytes_moved",), spec.bytes_moved, sizes)
    if not spec.outputs:
        c.problems.append(Problem(("args",), "no argument has intent 'out' or 'inout': there is nothing to verify"))
    c.shape_list("shapes", spec.shapes)
    for name, group in spec.shape_sets.items():
        if not IDENT.match(name):
            c.problems.append(Problem(("shape_sets", name), f"a shape set name must be an identifier, found {name!r}"))
        if not group:
            c.problems.append(Problem(("shape_sets", name), "a shape set needs at least one shape"))
        c.shape_list(f"shape_sets.{name}", group)
    if spec.holdout_shapes is not None:
        c.shape_list("holdout_shapes", spec.holdout_shapes)
    return c.problems


def format_path(path: tuple[Any, ...]) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "(top level)"
