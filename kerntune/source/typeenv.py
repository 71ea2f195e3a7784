"""Sizes of the types a kernel's code names: scalars and vector types, aliases
(``using pack_t = uint4;``, typedefs), template parameters bound to an
instantiation, and the source's own structs (``template <typename T, int N>
struct vec_t { T data[N]; };`` -> ``sizeof(vec_t<__nv_bfloat16, 8>) == 16``)."""

from __future__ import annotations

import re

from kerntune.source.names import KernelNameError, split_args
from kerntune.source.parse import walk
from kerntune.source.types import sizeof, strip


class TypeEnv:
    def __init__(self, root, data: bytes, bindings: dict[str, str], consts: dict[str, int]):
        self.data = data
        self.bindings = dict(bindings)          # template type parameter -> type text
        self.consts = consts                    # names with known integer values (template values, macros)
        self.aliases: dict[str, str] = {}
        self.structs: dict[str, tuple[list[str], list[tuple[str, str]], str | None]] = {}
        for n in walk(root):
            if n.type == "alias_declaration":
                self.aliases[self.t(n.child_by_field_name("name"))] = self.t(n.child_by_field_name("type"))
            elif n.type == "type_definition":
                decl = n.child_by_field_name("declarator")
                typ = n.child_by_field_name("type")
                if decl is not None and typ is not None and decl.type == "type_identifier":
                    self.aliases[self.t(decl)] = self.t(typ)
            elif n.type in ("struct_specifier", "class_specifier") and n.child_by_field_name("body") is not None:
                self._struct(n)

    def t(self, n) -> str:
        return self.data[n.start_byte:n.end_byte].decode()

    def _struct(self, n) -> None:
        name = n.child_by_field_name("name")
        if name is None:
            return
        params: list[str] = []
        if n.parent is not None and n.parent.type == "template_declaration":
            plist = n.parent.child_by_field_name("parameters")
            for p in plist.named_children if plist is not None else []:
                nm = p.child_by_field_name("name") or p.child_by_field_name("declarator")
                if nm is None:
                    nm = next((c for c in p.named_children if c.type in ("type_identifier", "identifier")), None)
                params.append(self.t(nm) if nm is not None else "")
        fields = []
        for f in n.child_by_field_name("body").named_children:
            if f.type != "field_declaration" or any(c.type == "storage_class_specifier" for c in f.children):
                continue
            typ = f.child_by_field_name("type")
            if typ is None:
                continue
            # every declarator of the declaration: `float2 a, b;` is two fields (one made a 16-byte
            # struct of two float2 8 bytes, and init's shapes half what the kernel writes: a user tour)
            for d in f.children_by_field_name("declarator"):
                count = "1"
                while d is not None and d.type == "array_declarator":
                    size = d.child_by_field_name("size")
                    count = f"({count}) * ({self.t(size) if size is not None else '0'})"
                    d = d.child_by_field_name("declarator")
                fields.append((self.t(typ), count))
        align = re.search(r"alignas\s*\(([^)]*)\)", self.t(n))
        self.structs[self.t(name)] = (params, fields, align.group(1) if align else None)

    def resolve(self, ctype: str, depth: int = 0) -> str:
        """Follow aliases and template bindings to a spelled-out type (pointers stripped)."""
        base = strip(ctype)
        for _ in range(16):
            head = base.split("<")[0].strip().split("::")[-1]
            if base in self.bindings:
                base = strip(self.bindings[base])
            elif head in self.aliases and "<" not in base:
                base = strip(self.aliases[head])
            else:
                break
        return base

    def size(self, ctype: str, depth: int = 0) -> int | None:
        if depth > 8:
            return None
        base = self.resolve(ctype)
        if base.startswith("@bytes"):           # a template type deduced from an argument: its size only
            return int(base[6:])
        known = sizeof(base)
        if known is not None:
            return known
        head, _, rest = base.partition("<")
        head = head.strip().split("::")[-1]
        if head not in self.structs:
            return None
        params, fields, _align = self.structs[head]
        args: list[str] = []
        if rest:
            try:
                args = split_args(rest.rsplit(">", 1)[0])
            except KernelNameError:
                return None
        local = dict(zip(params, args))
        saved = dict(self.bindings)
        self.bindings.update({k: v for k, v in local.items()})
        try:
            total = 0
            for typ, count in fields:
                n = self.evaluate(count, local)
                s = self.size(typ, depth + 1)
                if n is None or s is None:
                    return None
                total += n * s
            return total
        finally:
            self.bindings = saved

    def evaluate(self, text: str, local: dict[str, str] | None = None) -> int | None:
        from kerntune.source.launcher import evaluate

        consts = {k: str(v) for k, v in self.consts.items()}
        consts.update(local or {})
        types = {**self.bindings, **(local or {})}
        v = evaluate(re.sub(r"\bsizeof\s*\(\s*([^()]+?)\s*\)",
                            lambda m: str(self.size(m.group(1)) or "None"), text), consts, types)
        return int(v) if v is not None else None
