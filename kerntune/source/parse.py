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
from kerntune.source.names import KernelName, KernelNameError, parse_kernel_name

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


@dataclass(frozen=True)
class TemplateParam:
    name: str
    kind: str                  # "type" (typename/class T) or "value" (int N, bool B, ...)
    ctype: str = ""            # the value parameter's type
    default: str | None = None


@dataclass
class KernelFunction:
    name: str
    params: list[Param]
    node: object = field(repr=False)       # the function_definition node
    body: object = field(repr=False)       # its compound_statement
    extern_c: bool = False
    launch_bounds: str | None = None
    namespace: tuple[str, ...] = ()        # enclosing namespaces, outermost first
    template_params: tuple[TemplateParam, ...] | None = None   # None: not a template

    @property
    def start(self) -> int:
        return self.node.start_byte

    @property
    def qualified_name(self) -> str:
        return "::".join((*self.namespace, self.name))

    @property
    def is_template(self) -> bool:
        return self.template_params is not None

    def matches(self, name: KernelName) -> bool:
        """Whether a spec's kernel name refers to this function (a plain name matches in any namespace)."""
        if name.base != self.name:
            return False
        ns = name.namespace
        if name.rooted:
            return tuple(self.namespace) == ns
        return not ns or tuple(self.namespace[len(self.namespace) - len(ns):]) == ns

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
    # kernels a function-like macro defines (name -> "DEFINE_X (line 7)"), from invocations that stand
    # alone on a line: blanked before parsing, they are not kernels kerntune can read
    macro_kernels: dict[str, str] = field(default_factory=dict)

    @property
    def has_errors(self) -> bool:
        return self.tree.root_node.has_error

    def find(self, name: str) -> KernelFunction:
        """The kernel function ``name`` refers to (``k`` or ``ns::k``; template arguments are ignored)."""
        try:
            kn = parse_kernel_name(name)
        except KernelNameError as e:
            raise KerntuneError(ErrorCode.SPEC, f"bad kernel name: {e}") from None
        found = [k for k in self.kernels if k.matches(kn)]
        if not found and kn.base in self.macro_kernels:
            raise KerntuneError(ErrorCode.SPEC, f"{kn.base} is defined through the macro "
                                                f"{self.macro_kernels[kn.base]}: kerntune reads a kernel's code as "
                                                "written in the file",
                                hint="write the kernel out (expand the macro for it) in the kernel file")
        if not found:
            names = ", ".join(k.qualified_name + ("<...>" if k.is_template else "") for k in self.kernels) or "none"
            more = f"; defined through macros, which kerntune cannot read: {', '.join(self.macro_kernels)}" \
                if self.macro_kernels else ""
            raise KerntuneError(ErrorCode.SPEC, f"no kernel named {kn.qualified!r} in the source (kernels found: "
                                                f"{names}{more})")
        if len(found) > 1:
            raise KerntuneError(ErrorCode.SPEC, f"{kn.qualified!r} names {len(found)} kernels in the source: "
                                                f"{', '.join(k.qualified_name for k in found)}",
                                hint="qualify it with its namespace (ns::kernel"
                                     + (f"; ::{kn.base} for the one outside any namespace)"
                                        if any(not k.namespace for k in found) else ")"))
        return found[0]

    def kernel(self, name: str) -> KernelFunction:
        """The kernel a spec names: ``k``, ``ns::k`` or ``ns::k<float, 128>`` (template arguments are
        checked against the template's parameters)."""
        k = self.find(name)
        kn = parse_kernel_name(name)
        if k.is_template and kn.template_args is None:
            raise KerntuneError(ErrorCode.SPEC, f"{k.qualified_name} is a template: name an instantiation, e.g. "
                                                f"{example_instantiation(k)}",
                                hint="`kerntune extract FILE --kernel NAME` lists the instantiations the launcher uses")
        if not k.is_template and kn.template_args is not None:
            raise KerntuneError(ErrorCode.SPEC, f"{k.qualified_name} is not a template, but the spec gives template "
                                                f"arguments: {kn.text}", hint=f"write kernel: {k.qualified_name}")
        if k.is_template:
            required = [p for p in k.template_params if p.default is None]
            if not len(required) <= len(kn.template_args) <= len(k.template_params):
                want = ", ".join(("typename " if p.kind == "type" else p.ctype + " ") + p.name
                                 for p in k.template_params)
                raise KerntuneError(ErrorCode.SPEC, f"{kn.text} gives {len(kn.template_args)} template arguments; "
                                                    f"{k.qualified_name} takes <{want}>")
        return k


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


_MACRO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(((?:[^\n]*\\\n)*[^\n]*)", re.M)
_KERNEL_WORD = re.compile(r"\b(__kernel|kernel|__global__)\b")


def _blank_macro_calls(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with every invocation of a function-like macro of the file whose body defines a kernel
    that stands alone on a line at its start, with no semicolon (``DEFINE_SCALE(scale_f32, float)``),
    blanked byte for byte: the parser read one as the start of a declaration and swallowed the kernel
    after it (a user tour). The kernels they define (each invocation's first argument), by name."""
    macros = {m.group(1): True for m in _MACRO_DEF.finditer(text) if _KERNEL_WORD.search(m.group(2))}
    if not macros:          # only macros that define kernels: another's invocation may define a helper
        return text, {}
    defined: dict[str, str] = {}
    call = re.compile(r"^(" + "|".join(map(re.escape, macros)) + r")[ \t]*\(([^;\n]*)\)[ \t]*$", re.M)

    def repl(m: re.Match) -> str:
        first = m.group(2).split(",")[0].strip()
        if re.fullmatch(r"\w+", first):
            defined[first] = f"{m.group(1)} (line {text.count(chr(10), 0, m.start()) + 1})"
        return " " * len(m.group(0))

    return call.sub(repl, text), defined


def parse(text: str, lang: str) -> ParsedSource:
    keywords: dict[int, str] = {}
    src, macro_kernels = _blank_macro_calls(text)
    if lang == "opencl":
        src, keywords = _blank_opencl(src)
    data = src.encode()
    tree = _parse_comparisons(data)
    kernels = []
    for node in walk(tree.root_node):
        if node.type != "function_definition":
            continue
        k = _kernel_of(node, data, keywords, lang)
        if k is not None:
            kernels.append(k)
    return ParsedSource(lang, text, data, tree, kernels, keywords, macro_kernels)


_DECLARATORS = ("init_declarator", "declaration", "parameter_declaration", "pointer_declarator",
                "reference_declarator")


def _parse_comparisons(data: bytes):
    """The tree of ``data``, with a comparison the grammar read as a template argument list read as
    a comparison: in ``(ix >= 0 && ix < width && iy >= 0)`` it took ``ix<width && iy>`` for a template
    (a tour: the convolution's input lost its shape). Where the name before the ``<`` is a variable of
    the file and no template, that ``<`` is parsed as ``>`` (same precedence, same length, so the tree
    has the comparison's shape and every offset); readers take the operator's text from the source."""
    tree = _parser().parse(data)
    text = lambda n: data[n.start_byte:n.end_byte]  # noqa: E731
    variables, templates = set(), set()
    for n in walk(tree.root_node):
        if n.type in _DECLARATORS:
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                variables.add(text(d))
        elif n.type == "template_declaration":
            for d in walk(n):
                if d.type in ("function_declarator", "class_specifier", "struct_specifier"):
                    name = d.child_by_field_name("declarator") or d.child_by_field_name("name")
                    if name is not None:
                        templates.add(text(name))
    parsed = bytearray(data)
    for _ in range(data.count(b"<")):
        wrong = [n.child_by_field_name("arguments").start_byte for n in walk(tree.root_node)
                 if n.type == "template_function" and n.child_by_field_name("name").type == "identifier"
                 and text(n.child_by_field_name("name")) in variables - templates]
        if not wrong:
            break
        for at in wrong:
            parsed[at:at + 1] = b">"
        tree = _parser().parse(bytes(parsed))
    return tree


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
    template = None
    if parent is not None and parent.type == "template_declaration":
        plist_node = parent.child_by_field_name("parameters")
        template = tuple(_template_params(plist_node, data)) if plist_node is not None else ()
    return KernelFunction(name=name, params=params, node=node, body=node.child_by_field_name("body"),
                          extern_c=bool(extern_c),
                          launch_bounds=data[lb.start_byte:lb.end_byte].decode() if lb is not None else None,
                          namespace=namespace_of(node, data), template_params=template)


def namespace_of(node, data: bytes) -> tuple[str, ...]:
    """The names of the namespaces enclosing ``node``, outermost first (anonymous ones skipped)."""
    names = []
    n = node.parent
    while n is not None:
        if n.type == "namespace_definition":
            nm = n.child_by_field_name("name")
            if nm is not None:
                names.extend(reversed(data[nm.start_byte:nm.end_byte].decode().replace(" ", "").split("::")))
        n = n.parent
    return tuple(reversed(names))


def _template_params(plist, data: bytes) -> list[TemplateParam]:
    text = lambda n: data[n.start_byte:n.end_byte].decode()  # noqa: E731
    out = []
    for c in plist.named_children:
        if c.type in ("type_parameter_declaration", "optional_type_parameter_declaration",
                      "variadic_type_parameter_declaration"):
            name_node = c.child_by_field_name("name") or next(
                (x for x in c.named_children if x.type == "type_identifier"), None)
            default = c.child_by_field_name("default_type")
            out.append(TemplateParam(text(name_node) if name_node is not None else "", "type",
                                     default=text(default) if default is not None else None))
        elif c.type in ("parameter_declaration", "optional_parameter_declaration"):
            t = c.child_by_field_name("type")
            d = c.child_by_field_name("declarator")
            default = c.child_by_field_name("default_value")
            out.append(TemplateParam(text(d) if d is not None else "", "value",
                                     ctype=" ".join(text(t).split()) if t is not None else "",
                                     default=text(default) if default is not None else None))
    return out


def example_instantiation(k: KernelFunction) -> str:
    args = [p.default or ("__nv_bfloat16" if p.kind == "type" else "128" if "int" in p.ctype else "true"
                          if p.ctype == "bool" else "1")
            for p in k.template_params or () if p.default is None]
    return f"{k.qualified_name}<{', '.join(args)}>"


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
