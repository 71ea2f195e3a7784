"""The rule catalog's machinery.

A rule is a semantics-preserving transformation with a precondition. Rules
work on plain C source (CUDA or OpenCL), parsed with tree-sitter, and never
emit Jinja: a tunable choice becomes a ``KT_*`` macro, so the rewritten source
stays parseable and the next rule sees real code. At the end the catalog
turns the parameters into a ``#define`` header rendered by Jinja, and the
result is an ordinary kerntune template whose first parameter values
reproduce the original kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kerntune.source import calls
from kerntune.source.names import base_name
from kerntune.source.parse import ParsedSource, parse, walk
from kerntune.spec.model import KernelSpec, LaunchSpec


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: str


def apply_edits(source: bytes, edits: list[Edit]) -> str:
    """Apply non-overlapping byte-range edits (any order)."""
    out = bytearray(source)
    last = None
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if last is not None and e.end > last:
            raise ValueError(f"overlapping edits at {e.start}..{e.end}")
        out[e.start:e.end] = e.text.encode()
        last = e.start
    return out.decode()


@dataclass(frozen=True)
class Param:
    """A template parameter and how it becomes macros in the rendered header."""

    name: str
    values: tuple[Any, ...]         # the first value reproduces the original kernel
    header: str                     # Jinja lines defining the macros, e.g. "#define KT_BLOCK {{ BLOCK }}"
    why: str = ""


@dataclass(frozen=True)
class Applied:
    """One entry of a run's transformation trace."""

    rule: str
    summary: str
    params: tuple[str, ...] = ()


@dataclass
class RewriteState:
    lang: str
    source: str                       # plain C with KT_* macros (no Jinja)
    kernel: str                       # the entry function the spec names
    spec: KernelSpec
    launch: LaunchSpec                # may reference parameters
    device_max_threads: int = 1024
    subgroups: bool = True            # the device has sub-groups (OpenCL cl_khr_subgroups; CUDA: warps)
    compute_units: int = 0            # the device's SMs / compute units (0: not known)
    vector_width: int = 16            # OpenCL: the widest vector its compiler takes natively (DeviceInfo.vector_width)
    params: dict[str, Param] = field(default_factory=dict)
    restrictions: list[str] = field(default_factory=list)
    flags: dict[str, dict[str, str]] = field(default_factory=dict)
    prelude: list[str] = field(default_factory=list)   # helper code inserted after the macro header
    snippets: dict[str, str] = field(default_factory=dict)  # marker id -> Jinja text that replaces it
    trace: list[Applied] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (rule, why its precondition failed)
    clones: dict[str, str] = field(default_factory=dict)   # private-helpers: the kernel's copy -> original

    _parsed: ParsedSource | None = field(default=None, repr=False)

    @property
    def parsed(self) -> ParsedSource:
        if self._parsed is None or self._parsed.text != self.source:
            self._parsed = parse(self.source, self.lang)
        return self._parsed

    @property
    def raw(self) -> bytes:
        """The source as bytes, with OpenCL keywords intact (node offsets index into it)."""
        return self.source.encode()

    def text(self, node) -> str:
        return self.raw[node.start_byte:node.end_byte].decode()

    def statement_text(self, node) -> str:
        """``node``'s text with the OpenCL address spaces in front of it: the parser blanks them, so
        ``__global const float* p = ...;`` parses as a declaration that starts at ``const``, and
        re-emitting the node's text alone would drop the ``__global``."""
        from kerntune.agents.rules.access import statement_start

        if self.lang != "opencl":
            return self.text(node)
        return self.raw[statement_start(self.raw, node.start_byte):node.end_byte].decode()

    @property
    def kernel_fn(self) -> str:
        """The function the kernel name refers to (``ns::k<float, 128>`` -> ``k``)."""
        return base_name(self.kernel)

    def add_param(self, p: Param) -> None:
        self.params[p.name] = p

    def opencl_vector_widths(self) -> tuple[int, ...]:
        """1, 4, 8, 16 lanes, up to the widest vector the device's compiler takes (``vector_width``)."""
        return tuple(w for w in (1, 4, 8, 16) if w <= self.vector_width)

    def has_macro(self, name: str) -> bool:
        """Whether the source mentions ``name`` as a whole word (a macro an earlier round defined)."""
        return re.search(r"\b" + re.escape(name) + r"\b", self.source) is not None

    def fresh(self, base: str) -> str:
        """A parameter name not used yet (UNROLL_0, UNROLL_1, ...)."""
        i = 0
        while f"{base}_{i}" in self.params:
            i += 1
        return f"{base}_{i}"

    # --- what rules look at -------------------------------------------------------------
    def functions(self) -> list:
        """The spec's kernel and every function it calls, directly or not (other
        entry points in the file, e.g. other dtypes, are left alone; so are the
        helpers earlier rounds' rules wrote, see :func:`is_helper`)."""
        defs: dict[str, list] = {}
        for n in walk(self.parsed.tree.root_node):
            if n.type == "function_definition":
                name = function_name(self, n)
                if name and not is_helper(name):
                    defs.setdefault(name, []).append(n)
        if self.kernel_fn not in defs:
            return [n for group in defs.values() for n in group]
        seen, order, todo = set(), [], [self.kernel_fn]
        while todo:
            name = todo.pop()
            if name in seen or name not in defs:
                continue
            seen.add(name)
            for fn in defs[name]:
                order.append(fn)
                for c in walk(fn):
                    if c.type == "call_expression":
                        f = callee(self, c)
                        if f is not None:
                            todo.append(self.text(f))
        return sorted(order, key=lambda n: n.start_byte)

    def macro_value(self, name: str) -> str | None:
        for n in walk(self.parsed.tree.root_node):
            if n.type == "preproc_def" and self.text(n.child_by_field_name("name")) == name:
                v = n.child_by_field_name("value")
                return self.text(v).strip() if v is not None else ""
        return None

class Rule:
    """A semantics-preserving transformation. ``check`` returns why it does not
    apply ('' when it does); ``apply`` rewrites the state in place."""

    name: str = ""
    summary: str = ""
    langs: tuple[str, ...] = ("cuda", "opencl")

    def check(self, st: RewriteState) -> str:
        raise NotImplementedError

    def apply(self, st: RewriteState) -> Applied:
        raise NotImplementedError

    def run(self, st: RewriteState) -> bool:
        if st.lang not in self.langs:
            st.skipped.append((self.name, f"not available for {st.lang}"))
            return False
        why = self.check(st)
        if why:
            st.skipped.append((self.name, why))
            return False
        before = st.source
        try:
            applied = self.apply(st)
        except RuleDeclined as e:
            st.source = before
            st.skipped.append((self.name, str(e)))
            return False
        if st.parsed.has_errors and not parse(before, st.lang).has_errors:
            st.source = before     # never leave the source unparseable
            st.skipped.append((self.name, "the rewrite did not parse; left out"))
            return False
        st.trace.append(applied)
        return True


class RuleDeclined(Exception):
    """A rule found, while applying, that its precondition does not hold after all."""


def why_not(plan, st: "RewriteState") -> str:
    """A rule's ``check`` from its plan: '' when ``plan(st)`` is made, else the reason it declined with."""
    try:
        plan(st)
    except RuleDeclined as e:
        return str(e)
    return ""


def function_name(st: "RewriteState", fn) -> str:
    """The name a function definition defines, without namespace or template arguments."""
    return calls.function_name(fn, st.raw)


def callee(st: "RewriteState", call) -> object | None:
    """The identifier node a call names (``f(...)``, ``f<T>(...)``), else None."""
    f = call.child_by_field_name("function")
    if f is not None and f.type == "template_function":
        f = f.child_by_field_name("name")
    return f if f is not None and f.type == "identifier" else None


def unwrap(node):
    """Strip parentheses and casts: ((int)threadIdx.x) -> threadIdx.x."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression", "condition_clause"):
        if node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        else:
            node = node.child_by_field_name("value")
    return node


_CUDA_BUILTINS = {"thread": "threadIdx", "block_dim": "blockDim", "block": "blockIdx", "grid_dim": "gridDim"}
_OPENCL_BUILTINS = {"thread": "get_local_id", "block_dim": "get_local_size", "block": "get_group_id",
                    "grid_dim": "get_num_groups", "global": "get_global_id"}


def builtin_x(st: "RewriteState", kind: str) -> str:
    """The index builtin ``kind`` (thread, block_dim, block, grid_dim) of the x axis, as code."""
    return f"{_CUDA_BUILTINS[kind]}.x" if st.lang == "cuda" else f"{_OPENCL_BUILTINS[kind]}(0)"


def builtin_dim(st: "RewriteState", node, kind: str) -> str | None:
    """'x', 'y' or 'z' when ``node`` is the index builtin ``kind`` (thread, block_dim,
    block, grid_dim; OpenCL also global) for that dimension, else None."""
    node = unwrap(node)
    if node is None:
        return None
    if st.lang == "cuda":
        if node.type != "field_expression" or kind not in _CUDA_BUILTINS:
            return None
        arg, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
        if arg is not None and st.text(arg) == _CUDA_BUILTINS[kind] and st.text(field) in ("x", "y", "z"):
            return st.text(field)
        return None
    if node.type != "call_expression" or kind not in _OPENCL_BUILTINS:
        return None
    fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if fn is None or st.text(fn) != _OPENCL_BUILTINS[kind] or args is None or len(args.named_children) != 1:
        return None
    a = args.named_children[0]
    if a.type == "number_literal" and st.text(a).rstrip("uU") in ("0", "1", "2"):
        return "xyz"[int(st.text(a).rstrip("uU"))]
    return None


def int_literal(st: "RewriteState", node) -> int | None:
    if node is None or node.type != "number_literal":
        return None
    text = st.text(node).rstrip("uUlL")
    try:
        return int(text, 0)
    except ValueError:
        return None


def opencl_space(st: "RewriteState", node) -> str:
    """The OpenCL address space written in front of (or inside) a declaration: the
    parser sees these keywords blanked out, so they are looked up by offset."""
    if st.lang != "opencl":
        return ""
    lo = node.prev_sibling.end_byte if node.prev_sibling is not None else node.start_byte
    for off, kw in st.parsed.keywords.items():
        if lo <= off < node.end_byte and kw.strip("_") in ("global", "local", "constant", "private"):
            return kw.strip("_")
    return ""


def pragma_start(st: "RewriteState", loop) -> int:
    """Where ``loop`` starts once the ``#pragma`` lines directly above it are counted in: an unroll
    hint belongs to its loop, so a rewrite that wraps or replaces the loop takes them along (left
    behind above an ``#if``, it would attach to whatever that block's live branch starts with)."""
    start = loop.start_byte
    prev = loop.prev_sibling
    while prev is not None and prev.type == "preproc_call" and st.text(prev).lstrip().startswith("#pragma") \
            and not st.raw[prev.end_byte:start].strip():
        start = prev.start_byte
        prev = prev.prev_sibling
    return start


def is_helper(name: str) -> bool:
    """Helper functions the rules themselves write (``kt_block_reduce_sum``, ``kt_vload``...): a
    rewritten kernel carries them into the next round, where no rule may rewrite them again."""
    return name.startswith("kt_")


def marker(ident: str) -> str:
    """A placeholder comment the assembly replaces with the Jinja snippet ``ident``."""
    return f"/*@KT:{ident}*/"


# --- helpers the structural rules share ------------------------------------------------------

BARRIERS = {"cuda": "__syncthreads", "opencl": "barrier"}


def guarded(name: str, code: str) -> str:
    """Helper code that may meet a copy of itself in a later round (rewrites of rewritten kernels)."""
    return f"#ifndef KT_HAVE_{name}\n#define KT_HAVE_{name} 1\n{code}\n#endif"


def has_call(st: RewriteState, node, name: str) -> bool:
    return any(n.type == "call_expression" and st.text(n.child_by_field_name("function")) == name
               for n in walk(node))


def called_names(st: RewriteState, names) -> list:
    """The function-name nodes of every call, in the file's functions, of a function in ``names``
    (``exp(x)``'s ``exp``): what a rule renaming calls rewrites."""
    out = []
    for fn in st.functions():
        for node in walk(fn):
            if node.type == "call_expression":
                f = node.child_by_field_name("function")
                if f is not None and f.type == "identifier" and st.text(f) in names:
                    out.append(f)
    return out


def decl_value(st: RewriteState, fn, name: str):
    """The initializer of a local variable ``name`` in function ``fn``, if declared once."""
    found = []
    for n in walk(fn):
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier" and st.text(d) == name:
                found.append(n.child_by_field_name("value"))
    return found[0] if len(found) == 1 else None


def is_thread_x(st: RewriteState, fn, node) -> bool:
    node = unwrap(node)
    if builtin_dim(st, node, "thread") == "x":
        return True
    if node is not None and node.type == "identifier":
        value = decl_value(st, fn, st.text(node))
        return value is not None and builtin_dim(st, value, "thread") == "x"
    return False


def is_block_dim_x(st: RewriteState, node, fn=None) -> bool:
    node = unwrap(node)
    if node is None:
        return False
    if builtin_dim(st, node, "block_dim") == "x" or st.text(node) == "KT_BLOCK":
        return True
    if node.type != "identifier":
        return False
    # a macro standing for the block size (#define THREADS KT_BLOCK, after launch-config)
    if st.macro_value(st.text(node)) == "KT_BLOCK":
        return True
    # a local variable holding it (const int threads = get_local_size(0);)
    value = decl_value(st, fn, st.text(node)) if fn is not None else None
    return value is not None and builtin_dim(st, value, "block_dim") == "x"


def line_indent(st: RewriteState, node) -> str:
    start = st.raw.rfind(b"\n", 0, node.start_byte) + 1
    pre = st.raw[start:node.start_byte].decode()
    return pre if not pre.strip() else ""


def indent_before(st: RewriteState, offset: int) -> str:
    start = st.raw.rfind(b"\n", 0, offset) + 1
    pre = st.raw[start:offset].decode()
    return pre if not pre.strip() else ""
