"""Parse CUDA and OpenCL kernels with tree-sitter's CUDA grammar.

OpenCL C is parsed with the same grammar after its keywords that CUDA lacks
(``__kernel``, address-space qualifiers) are blanked out, byte for byte, so
every node keeps its offset in the original text; the blanked keywords are
remembered and attached to the functions and parameters they belonged to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator

from kerntune.errors import ErrorCode, KerntuneError

OPENCL_KERNEL = ("__kernel", "kernel")
OPENCL_SPACES = {"__global": "global", "global": "global", "__local": "local", "local": "local",
                 "__constant": "constant", "constant": "constant", "__private": "private", "private": "private"}
_OPENCL_WORDS = re.compile(r"\b(" + "|".join(sorted(set(OPENCL_KERNEL) | set(OPENCL_SPACES), key=len, reverse=True)) + r")\b")


@lru_cache(maxsize=1)
def _parser():
    try:
        import tree_sitter
        import tree_sitter_cuda
    except ImportError as e:  # pragma: no cover - hard dependencies
        raise KerntuneError(ErrorCode.BACKEND, f"tree-sitter is not importable ({e})",
                            hint="pip install tree-sitter tree-sitter-cuda") from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str                 # base type as written, qualifiers removed ("float", "__nv_bfloat16")
    pointer: bool
    const: bool                # const-qualified pointee (or value)
    restrict: bool
    space: str = ""            # OpenCL address space ("global", "local", ...)
    start: int = 0             # byte span of the declaration in the source
    end: int = 0


@dataclass
class KernelFunction:
    name: str
    params: list[Param]
    node: object = field(repr=False)       # the function_definition node
    body: object = field(repr=False)       # its compound_statement
    extern_c: bool = False
    launch_bounds: str | None = None

    @property
    def start(self) -> int:
        return self.node.start_byte

    def text(self, source: bytes) -> str:
        return source[self.node.start_byte:self.node.end_byte].decode()


@dataclass
class ParsedSource:
    lang: str
    text: str
    source: bytes            # what tree-sitter parsed (OpenCL keywords blanked)
    tree: object
    kernels: list[KernelFunction]
    keywords: dict[int, str] = field(default_factory=dict)  # offset -> blanked OpenCL keyword

    @property
    def has_errors(self) -> bool:
        return self.tree.root_node.has_error

    def kernel(self, name: str) -> KernelFunction:
        for k in self.kernels:
            if k.name == name:
                return k
        names = ", ".join(k.name for k in self.kernels) or "none"
        raise KerntuneError(ErrorCode.SPEC, f"no kernel named {name!r} in the source (kernels found: {names})")


def _blank_opencl(text: str) -> tuple[str, dict[int, str]]:
    keywords: dict[int, str] = {}

    def repl(m: re.Match) -> str:
        keywords[m.start()] = m.group(1)
        return " " * len(m.group(1))

    return _OPENCL_WORDS.sub(repl, text), keywords


def walk(node) -> Iterator:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def parse(text: str, lang: str) -> ParsedSource:
    keywords: dict[int, str] = {}
    src = text
    if lang == "opencl":
        src, keywords = _blank_opencl(text)
    data = src.encode()
    tree = _parser().parse(data)
    kernels = []
    for node in walk(tree.root_node):
        if node.type != "function_definition":
            continue
        k = _kernel_of(node, data, keywords, lang)
        if k is not None:
            kernels.append(k)
    return ParsedSource(lang, text, data, tree, kernels, keywords)


def _kernel_of(node, data: bytes, keywords: dict[int, str], lang: str) -> KernelFunction | None:
    declarator = node.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    if declarator is None or body is None:
        return None
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return None
    if lang == "cuda":
        if not any(c.type == "__global__" for c in node.children):
            return None
    else:
        def qualifies(off: int, kw: str) -> bool:
            if kw not in OPENCL_KERNEL:
                return False
            if node.start_byte <= off < declarator.start_byte:
                return True
            # blanked keywords are whitespace, so the definition starts after them
            return off < node.start_byte and not data[off + len(kw):node.start_byte].strip()

        if not any(qualifies(off, kw) for off, kw in keywords.items()):
            return None
    name_node = declarator.child_by_field_name("declarator")
    name = data[name_node.start_byte:name_node.end_byte].decode()
    params = []
    plist = declarator.child_by_field_name("parameters")
    for p in plist.children if plist is not None else []:
        if p.type == "parameter_declaration":
            params.append(_param(p, data, keywords))
    lb = next((c for c in node.children if c.type == "launch_bounds"), None)
    parent = node.parent
    extern_c = parent is not None and parent.type == "linkage_specification" or (
        parent is not None and parent.type == "declaration_list" and parent.parent is not None
        and parent.parent.type == "linkage_specification")
    return KernelFunction(name=name, params=params, node=node, body=node.child_by_field_name("body"),
                          extern_c=bool(extern_c),
                          launch_bounds=data[lb.start_byte:lb.end_byte].decode() if lb is not None else None)


def _param(p, data: bytes, keywords: dict[int, str]) -> Param:
    text = lambda n: data[n.start_byte:n.end_byte].decode()  # noqa: E731
    type_node = p.child_by_field_name("type")
    ctype = text(type_node) if type_node is not None else ""
    const = any(c.type == "type_qualifier" and text(c) == "const" for c in p.children)
    pointer = restrict = False
    decl = p.child_by_field_name("declarator")
    name = ""
    while decl is not None:
        if decl.type == "pointer_declarator":
            pointer = True
            for c in decl.children:
                if c.type == "type_qualifier" and text(c) in ("__restrict__", "restrict", "__restrict"):
                    restrict = True
            decl = decl.child_by_field_name("declarator")
        elif decl.type in ("identifier", "field_identifier"):
            name = text(decl)
            break
        elif decl.type == "array_declarator":
            pointer = True
            decl = decl.child_by_field_name("declarator")
        else:
            decl = decl.child_by_field_name("declarator")
    space = ""
    lo = p.prev_sibling.end_byte if p.prev_sibling is not None else p.start_byte  # blanked keywords precede p
    for off, kw in keywords.items():
        if lo <= off < p.end_byte and kw in OPENCL_SPACES:
            space = OPENCL_SPACES[kw]
    return Param(name=name, ctype=" ".join(ctype.split()), pointer=pointer, const=const, restrict=restrict,
                 space=space, start=p.start_byte, end=p.end_byte)


def param_uses(kernel: KernelFunction, data: bytes, name: str) -> tuple[bool, bool]:
    """(read, written) for a pointer parameter, from its uses in the body: a
    store is ``p[i] = ...`` (or ``*p = ...``); any other use counts as a read,
    including compound assignments and passing the pointer on."""
    read = written = False
    for node in walk(kernel.body):
        if node.type != "identifier" or data[node.start_byte:node.end_byte].decode() != name:
            continue
        parent = node.parent
        access = parent if parent is not None and parent.type in ("subscript_expression", "pointer_expression") else None
        if access is not None and access.parent is not None and access.parent.type == "assignment_expression":
            assign = access.parent
            op = assign.child_by_field_name("operator")
            if assign.child_by_field_name("left") == access:
                if op is not None and data[op.start_byte:op.end_byte].decode() == "=":
                    written = True
                    continue
                written = read = True
                continue
        read = True
    return read, written
