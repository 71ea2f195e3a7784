"""Extraction: the device code a kernel needs, out of an extension source.

Production kernels live in files that also hold the PyTorch launcher (ATen and
torch includes, ``TORCH_CHECK``, dispatch macros, op registration). Such a file
cannot compile under NVRTC, nor under nvcc without the torch headers. The
extractor inlines local headers (:mod:`kerntune.source.includes`), splits the
result into top-level items (functions, types, aliases, constants, macros,
includes; namespaces, ``extern "C"`` blocks and ``#if`` blocks are containers
whose items are judged one by one), and keeps the items the kernel reaches by
name, transitively: the kernel, the ``__device__`` functions, types, constants
and macros it uses. Host-only functions are never kept; host-only headers
(torch, ATen, c10, pybind11, Python, and standard library headers that no kept
code uses) are dropped. Everything dropped is listed with where it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.source.includes import Flattened, flatten
from kerntune.source.names import parse_kernel_name
from kerntune.source.parse import KernelFunction, parse

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENTS_STRINGS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_DEVICE_WORDS = {"__device__", "__global__"}
HOST_ONLY_PREFIXES = ("torch/", "ATen/", "c10/", "caffe2/", "pybind11/", "Python.h", "THC/")
IMPLICIT = {"cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h"}
DEVICE_STD = {"cstdint", "cmath", "cfloat", "climits", "cstddef", "cassert", "cstdio", "type_traits", "limits",
              "utility", "cstdlib", "initializer_list"}
_CONTAINERS = ("namespace_definition", "linkage_specification", "preproc_if", "preproc_ifdef")
_PUNCT = (";",)


@dataclass(frozen=True)
class Dropped:
    kind: str          # include, host function, function, type, macro, variable, instantiation, other
    name: str
    origin: str        # file:line
    why: str


@dataclass(frozen=True)
class Extraction:
    source: str                      # the self-contained device code
    kernel: KernelFunction           # the kernel, as parsed in the extracted source
    kept: tuple[str, ...]            # names of what was kept, in source order
    dropped: tuple[Dropped, ...]
    inlined: tuple[str, ...]         # local headers inlined
    includes: tuple[str, ...]        # system includes kept

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.inlined)


@dataclass
class _Item:
    node: object
    start: int
    end: int
    kind: str = "other"
    names: set[str] = field(default_factory=set)      # what it defines
    refs: set[str] = field(default_factory=set)       # names it uses
    eligible: bool = True                             # may be kept (host-only functions may not)
    children: list["_Item"] = field(default_factory=list)
    head: str = ""                                    # container: opening text
    tail: str = ""                                    # container: closing text
    alternative: "_Item | None" = None                # #else / #elif branch of a conditional
    include: str | None = None                        # an include line's target
    kept: bool = False


class _Extractor:
    def __init__(self, flat: Flattened):
        self.flat = flat
        self.text = flat.text
        self.data = flat.text.encode()
        self.tree = parse(flat.text, "cuda").tree
        self.device_macros: set[str] = set()
        self._find_device_macros()

    def t(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode()

    def span(self, a: int, b: int) -> str:
        return self.data[a:b].decode()

    def _find_device_macros(self) -> None:
        """Object-like macros that expand (transitively) to __device__ or __global__."""
        defs = {}
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*)$", self.text, re.M):
            defs[m.group(1)] = set(_TOKEN.findall(m.group(2)))
        changed = True
        while changed:
            changed = False
            for name, toks in defs.items():
                if name not in self.device_macros and (toks & _DEVICE_WORDS or toks & self.device_macros):
                    self.device_macros.add(name)
                    changed = True

    # --- items ------------------------------------------------------------------------------
    def items(self, nodes) -> list[_Item]:
        out: list[_Item] = []
        comments: list = []
        for n in nodes:
            if n.type == "comment":
                if out and not comments and b"\n" not in self.data[out[-1].end:n.start_byte]:
                    out[-1].end = n.end_byte          # a comment on the line an item ends on belongs to it
                else:
                    comments.append(n)
                continue
            if n.type in _PUNCT or not n.is_named and n.type in ("{", "}"):
                if out:
                    out[-1].end = n.end_byte
                comments = []
                continue
            item = self.item(n)
            if comments:
                # a comment block directly above the item (no blank line between) belongs to it
                first = comments[-1]
                for c in reversed(comments):
                    if "\n\n" in self.span(c.end_byte, first.start_byte if c is not first else c.end_byte):
                        break
                    first = c
                if "\n\n" not in self.span(comments[-1].end_byte, n.start_byte) and \
                        not self.t(first).startswith("// >>> kerntune") and not self.t(first).startswith("// <<<"):
                    item.start = first.start_byte
            comments = []
            out.append(item)
        return out

    def item(self, n) -> _Item:
        it = _Item(node=n, start=n.start_byte, end=n.end_byte)
        if n.type in _CONTAINERS:
            return self.container(n, it)
        inner = n
        if n.type == "template_declaration":
            inner = next((c for c in n.named_children if c.type not in ("template_parameter_list", "comment")), n)
        if n.type == "linkage_specification":
            inner = n.child_by_field_name("body") or n
        t = inner.type
        if t == "preproc_include":
            path = inner.child_by_field_name("path")
            it.kind, it.include = "include", (self.t(path).strip() if path is not None else "")
            return it
        if t in ("preproc_def", "preproc_function_def"):
            it.kind = "macro"
            it.names = {self.t(inner.child_by_field_name("name"))}
            value = inner.child_by_field_name("value")
            params = inner.child_by_field_name("parameters")
            it.refs = self.tokens(self.t(value) if value is not None else "") - (
                self.tokens(self.t(params)) if params is not None else set())
            return it
        if t == "template_instantiation":
            it.kind, it.eligible = "instantiation", False
            return it
        if t == "function_definition" or (t == "declaration" and self._declares_function(inner)):
            return self.function(n, inner, it)
        if t in ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"):
            it.kind = "type"
            name = inner.child_by_field_name("name")
            it.names = {self.t(name).split("::")[-1]} if name is not None else set()
            if t == "enum_specifier":
                body = inner.child_by_field_name("body")
                it.names |= {self.t(e.child_by_field_name("name")) for e in (body.named_children if body else [])
                             if e.type == "enumerator"}
        elif t in ("type_definition", "alias_declaration"):
            it.kind = "type"
            it.names = self.declared_names(inner)
        elif t == "declaration":
            it.kind = "variable"
            it.names = self.declared_names(inner)
        elif t == "using_declaration":
            it.kind = "using"
        else:
            it.kind = "other"
            it.eligible = False
        it.refs = self.tokens(self.span(it.start, it.end)) - it.names
        return it

    def function(self, n, inner, it: _Item) -> _Item:
        decl = inner.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        name_node = decl.child_by_field_name("declarator") if decl is not None else None
        names = set()
        if name_node is not None:
            parts = [_TOKEN.findall(p) for p in re.sub(r"<.*", "", self.t(name_node)).split("::")]
            if parts and parts[-1]:
                names.add(parts[-1][-1])
            names |= {p[-1] for p in parts[:-1] if p}     # out-of-line members belong to their type
        head = self.span(inner.start_byte, name_node.start_byte if name_node is not None else inner.end_byte)
        words = self.tokens(head) | ({"__global__"} if any(c.type == "__global__" for c in inner.children) else set())
        words |= {c.type for c in inner.children if c.type in _DEVICE_WORDS}
        device = bool(words & _DEVICE_WORDS or words & self.device_macros or "constexpr" in words)
        it.kind = "kernel" if "__global__" in words else ("function" if device else "host function")
        it.eligible = device
        it.names = names
        it.refs = self.tokens(self.span(it.start, it.end)) - names
        return it

    def container(self, n, it: _Item) -> _Item:
        if n.type == "namespace_definition":
            body = n.child_by_field_name("body")
            it.kind = "namespace"
            name = n.child_by_field_name("name")
            it.names = {self.t(name)} if name is not None else set()
            it.head = self.span(n.start_byte, body.start_byte + 1)
            it.tail = "}"
            it.children = self.items(body.children[1:-1])
            self._close_comment(it, body)
        elif n.type == "linkage_specification":
            body = n.child_by_field_name("body")
            if body is None or body.type != "declaration_list":
                inner = self.item(body) if body is not None else _Item(node=n, start=n.start_byte, end=n.end_byte)
                inner.start, inner.end = n.start_byte, n.end_byte
                return inner
            it.kind = "extern block"
            it.head = self.span(n.start_byte, body.start_byte + 1)
            it.tail = "}"
            it.children = self.items(body.children[1:-1])
        else:
            it.kind = "conditional"
            alt = n.child_by_field_name("alternative")
            cond = n.child_by_field_name("condition") or n.child_by_field_name("name")
            first_line_end = self.data.find(b"\n", n.start_byte)
            it.head = self.span(n.start_byte, first_line_end if first_line_end >= 0 else n.end_byte)
            body = [c for c in n.children[1:] if c is not cond and c is not alt and c.type != "#endif"
                    and c.start_byte > (first_line_end if first_line_end >= 0 else n.start_byte)]
            it.children = self.items(body)
            if alt is not None:
                it.alternative = self.container(alt, _Item(node=alt, start=alt.start_byte, end=alt.end_byte))
            it.tail = "#endif" if n.type in ("preproc_if", "preproc_ifdef") else ""
            cond_refs = self.tokens(self.t(cond)) if cond is not None else set()
            for c in self._leaves(it):
                c.refs |= cond_refs
        return it

    def _close_comment(self, it: _Item, body) -> None:
        it.tail = "}" + self.span(body.end_byte, it.end)

    def _declares_function(self, node) -> bool:
        d = node.child_by_field_name("declarator")
        while d is not None:
            if d.type == "function_declarator":
                return True
            d = d.child_by_field_name("declarator")
        return False

    def declared_names(self, node) -> set[str]:
        out = set()
        for c in node.children:
            d = c
            while d is not None and d.type not in ("identifier", "type_identifier", "field_identifier"):
                d = d.child_by_field_name("declarator") if d.type != "type_descriptor" else None
            if d is not None and c.type not in ("primitive_type", "type_qualifier", "storage_class_specifier"):
                out.add(self.t(d))
        name = node.child_by_field_name("name")
        if name is not None:
            out.add(self.t(name))
        return out

    def tokens(self, text: str) -> set[str]:
        return set(_TOKEN.findall(_COMMENTS_STRINGS.sub(" ", text)))

    def _leaves(self, it: _Item):
        for c in it.children:
            if c.children or c.alternative is not None or c.kind in ("namespace", "extern block", "conditional"):
                yield from self._leaves(c)
            else:
                yield c
        if it.alternative is not None:
            yield from self._leaves(it.alternative)


def _all_leaves(items: list[_Item]):
    for it in items:
        if it.kind in ("namespace", "extern block", "conditional"):
            yield from _all_leaves(it.children)
            if it.alternative is not None:
                yield from _all_leaves([it.alternative])
        else:
            yield it


def _system_include_kept(target: str, uses_std: bool) -> tuple[bool, str]:
    name = target.strip("<>\"")
    if name in IMPLICIT:
        return False, "included implicitly by nvcc and NVRTC"
    if name.startswith(HOST_ONLY_PREFIXES):
        return False, "host-only (PyTorch/Python)"
    if "/" not in name and "." not in name and name not in DEVICE_STD and not uses_std:
        return False, "standard library header no kept code uses"
    return True, ""


def extract(path: Path, text: str, kernel: str, include_dirs: list[Path] = (), instantiations: list[str] = (),
            flat: Flattened | None = None) -> Extraction:
    """The device code ``kernel`` (a plain, qualified or instantiated name) needs from ``text``;
    ``instantiations`` (name expressions) are recorded in the header for later commands."""
    kn = parse_kernel_name(kernel)
    flat = flat or flatten(path, text, list(include_dirs))
    ex = _Extractor(flat)
    top = ex.items(ex.tree.root_node.children)
    leaves = list(_all_leaves(top))
    definers: dict[str, list[_Item]] = {}
    for it in leaves:
        for n in it.names:
            definers.setdefault(n, []).append(it)
    parsed = parse(flat.text, "cuda")
    target = parsed.find(kn.spelled)
    seeds = [it for it in leaves if it.kind == "kernel" and it.start <= target.node.start_byte < it.end]
    if not seeds:
        raise KerntuneError(ErrorCode.SPEC, f"no __global__ function {kn.qualified!r} in {path}")
    todo = list(seeds)
    while todo:
        it = todo.pop()
        if it.kept:
            continue
        it.kept = True
        for name in it.refs:
            todo.extend(d for d in definers.get(name, ()) if d.eligible and not d.kept)
    kept_text = " ".join(ex.span(it.start, it.end) for it in leaves if it.kept)
    uses_std = "std::" in kept_text
    dropped: list[Dropped] = []
    seen_includes: set[str] = set()
    includes: list[str] = []

    def keep_include(it: _Item) -> bool:
        target_ = it.include or ""
        if target_ in seen_includes:
            return False
        ok, why = _system_include_kept(target_, uses_std)
        if not ok:
            dropped.append(Dropped("include", target_, flat.origin(it.start), why))
            return False
        seen_includes.add(target_)
        includes.append(target_)
        return True

    def any_kept(it: _Item) -> bool:
        if it.kind in ("namespace", "extern block", "conditional"):
            return any(any_kept(c) for c in it.children) or (it.alternative is not None and any_kept(it.alternative))
        return it.kept

    def render(items: list[_Item]) -> list[str]:
        out: list[str] = []
        for it in items:
            if it.kind == "include":
                if keep_include(it):
                    out.append(ex.span(it.start, it.end).strip())
                continue
            if it.kind in ("namespace", "extern block"):
                if any_kept(it):
                    out.append(it.head + "\n\n" + "\n\n".join(render(it.children)) + "\n\n" + it.tail.strip())
                else:
                    _drop_all(it)
                continue
            if it.kind == "conditional":
                if any_kept(it):
                    out.append(render_conditional(it))
                else:
                    _drop_all(it)
                continue
            if it.kind == "using":
                words = ex.tokens(ex.span(it.start, it.end))
                if "namespace" in words and (words - {"using", "namespace"}) <= kept_namespaces_all:
                    out.append(ex.span(it.start, it.end))
                else:
                    dropped.append(Dropped("using", _short(ex.span(it.start, it.end)), flat.origin(it.start),
                                           "names a namespace the kept code does not define"))
                continue
            if it.kept:
                out.append(ex.span(it.start, it.end))
            else:
                _drop(it)
        return out

    def render_conditional(it: _Item) -> str:
        parts = [it.head] + render(it.children)
        if it.alternative is not None:
            parts.append(render_conditional(it.alternative))
        if it.tail:
            parts.append(it.tail)
        return "\n".join(parts)

    def _drop(it: _Item) -> None:
        name = ", ".join(sorted(it.names)) or _short(ex.span(it.start, it.end))
        why = {"host function": "host-only code", "instantiation": "explicit instantiation (kerntune instantiates "
               "the kernel the spec names)", "other": "host-only code"}.get(it.kind, f"not used by {kn.qualified}")
        dropped.append(Dropped(it.kind, name, flat.origin(it.start), why))

    def _drop_all(it: _Item) -> None:
        for leaf in _all_leaves([it]):
            if leaf.kind == "include":
                dropped.append(Dropped("include", leaf.include or "", flat.origin(leaf.start), "inside a dropped block"))
            else:
                _drop(leaf)

    kept_namespaces_all = {n for it in _containers(top) for n in it.names}
    body = "\n\n".join(render(top))
    header = _header(path, kn.qualified, flat, dropped, list(instantiations))
    source = header + re.sub(r"\n{3,}", "\n\n", body.strip()) + "\n"
    reparsed = parse(source, "cuda")
    kept_names = tuple(n for it in leaves if it.kept for n in sorted(it.names))
    return Extraction(source=source, kernel=reparsed.find(kn.spelled), kept=kept_names, dropped=tuple(dropped),
                      inlined=tuple(flat.inlined), includes=tuple(includes))


def _containers(items: list[_Item]):
    for it in items:
        if it.kind in ("namespace", "extern block", "conditional"):
            yield it
            yield from _containers(it.children)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 48 else text[:45] + "..."


def _header(path: Path, kernel: str, flat: Flattened, dropped: list[Dropped], insts: list[str]) -> str:
    lines = [f"// Device code of {kernel}, extracted by `kerntune extract` from {path.name}:",
             "// the kernel and the functions, types, constants and macros it uses."]
    if flat.inlined:
        lines.append("// Local headers inlined: " + ", ".join(flat.inlined) + ".")
    if dropped:
        by_kind: dict[str, list[str]] = {}
        for d in dropped:
            by_kind.setdefault(d.kind, []).append(d.name)
        lines.append("// Dropped: " + "; ".join(f"{k} {', '.join(v)}" for k, v in by_kind.items()))
    wrapped = []
    for line in lines:
        while len(line) > 118:
            cut = line.rfind(" ", 0, 118)
            wrapped.append(line[:cut])
            line = "//   " + line[cut + 1:]
        wrapped.append(line)
    wrapped += [f"// kerntune-instantiate: {e}" for e in insts]
    return "\n".join(wrapped) + "\n\n"


def needs_extraction(text: str) -> bool:
    """Whether a CUDA file is an extension source rather than a self-contained kernel file:
    it includes local headers or host-only (PyTorch, Python) ones."""
    from kerntune.source.includes import INCLUDE

    for m in INCLUDE.finditer(text):
        target = m.group(2).strip()
        if m.group(1) == '"' or target.startswith(HOST_ONLY_PREFIXES):
            return True
    return False
