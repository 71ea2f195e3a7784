"""Calls in a kernel body, for :mod:`kerntune.source.analysis`: casts, atomics and cache
intrinsics, ``min``/``max``, OpenCL index builtins, methods (judged by name), and the source's
own ``__device__`` functions, followed into with their arguments bound."""

from __future__ import annotations

import re

from kerntune.source.parse import walk
from kerntune.source.poly import Poly
from kerntune.source.types import strip
from kerntune.source.values import DATA, UNKNOWN, Ptr, Val, index_range, mul, union

READS = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"}
WRITES = {"__stcg", "__stcs", "__stwb", "__stwt"}
ATOMICS = re.compile(r"^atomic(Add|Sub|Max|Min|Exch|CAS|And|Or|Xor|Inc|Dec)(_block|_system)?$|^atomic_")
_NAME_WRITE = re.compile(r"store|write|set|put", re.I)
GRID = {"x": "@grid_x", "y": "@grid_y", "z": "@grid_z"}
_OCL_AXIS = {"0": "x", "1": "y", "2": "z"}
_VECTOR_IO = re.compile(r"^v(load|store)(a?_half)?(2|3|4|8|16)?(_rte|_rtz|_rtp|_rtn)?$")


class Calls:
    """The call-handling half of the analyzer (mixed into :class:`~kerntune.source.analysis.Analyzer`)."""

    MAX_DEPTH = 6

    def call(self, n):
        fn = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        arg_nodes = args.named_children if args is not None else []
        name, targs = self.callee(fn)
        if name in ("reinterpret_cast", "static_cast", "const_cast", "dynamic_cast") and arg_nodes:
            v = self.ev(arg_nodes[0])
            return self.cast(targs[0] if targs else "", v)
        typ = self.t(fn) if fn is not None and fn.type in ("primitive_type", "type_identifier", "identifier") else None
        if typ is not None and len(arg_nodes) == 1 and typ not in self.functions and self._is_int_type(typ):
            # a functional cast, `int64_t(token) * k + j`: the value itself (read as an unknown call, its
            # index made the array's shape a TODO and a plain write `inout`)
            return self.cast(typ, self.ev(arg_nodes[0]))
        if fn is not None and fn.type == "field_expression" and not arg_nodes:
            self.ev(fn.child_by_field_name("argument"))
            return DATA
        if fn is not None and fn.type == "field_expression":
            self.ev(fn.child_by_field_name("argument"))
            method = self.t(fn.child_by_field_name("field"))
            values = [self.ev(a) for a in arg_nodes]
            for v in values:
                if isinstance(v, Ptr):
                    self.access(v, None, "w" if _NAME_WRITE.search(method) else "r", n)
                    self.facts.notes.append(f"{v.root}: passed to .{method}(); assumed to "
                                            f"{'write' if _NAME_WRITE.search(method) else 'read'} one element")
            return DATA
        if name in ("min", "max", "umin", "umax", "llmin", "llmax") and len(arg_nodes) == 2:
            a, b = self.ev(arg_nodes[0]), self.ev(arg_nodes[1])
            if isinstance(a, Val) and isinstance(b, Val):
                if name.endswith("min"):
                    hi = a.hi if (a.hi is not None and (b.hi is None or self._smaller(a.hi, b.hi))) else b.hi
                    return Val(None, hi, a.data or b.data)
                return union(a, b, self.samples)
            return UNKNOWN
        if ATOMICS.match(name or "") and arg_nodes:
            p = self.ev(arg_nodes[0])
            for a in arg_nodes[1:]:
                self.ev(a)
            if isinstance(p, Ptr):
                self.access(p, None, "atomic", n)
            return DATA
        if name in READS and arg_nodes:
            p = self.ev(arg_nodes[0])
            return self.access(p, None, "r", n) if isinstance(p, Ptr) else DATA
        if name in WRITES and len(arg_nodes) >= 2:
            p = self.ev(arg_nodes[0])
            self.ev(arg_nodes[1])
            if isinstance(p, Ptr):
                self.access(p, None, "w", n)
            return UNKNOWN
        if name in ("get_global_id", "get_local_id", "get_group_id", "get_local_size", "get_num_groups",
                    "get_global_size") and arg_nodes:
            return self.opencl_index(name, self.t(arg_nodes[0]).strip())
        vec = _VECTOR_IO.match(name or "")
        if vec and len(arg_nodes) >= 2:
            return self.vector_io(vec, arg_nodes, n)
        defs = self.functions.get(name or "", [])
        used_before = set(self.facts.used_params)
        values = [self.ev(a) for a in arg_nodes]
        if defs:
            # a kernel parameter passed on counts as used only if the helper uses it
            passed = {i: self.t(a) for i, a in enumerate(arg_nodes) if a.type == "identifier"
                      and self.t(a) in self.params and self.t(a) not in used_before}
            self.facts.used_params -= set(passed.values())
            return self.follow(defs, values, targs, passed)
        for v in values:
            if isinstance(v, Ptr):
                self.access(v, None, "r", n)
                self.facts.notes.append(f"{v.root}: passed to {name}(), which the source does not define; "
                                        "assumed read")
        return Val(data=any(_data(v) for v in values) or True)

    def vector_io(self, m: re.Match, arg_nodes: list, n):
        """OpenCL ``vloadN(offset, p)`` / ``vstoreN(data, offset, p)`` (``_half`` variants too):
        N elements at ``p + offset * N`` (one for the scalar ``_half`` forms)."""
        store = m.group(1) == "store"
        width = int(m.group(3) or 1)
        if store:
            self.ev(arg_nodes[0])
        offset, p = self.ev(arg_nodes[-2]), self.ev(arg_nodes[-1])
        if not isinstance(p, Ptr):
            return DATA
        if not isinstance(offset, Val):
            offset = UNKNOWN
        q = p.shifted(mul(offset, Val.const(width), self.samples), self.samples)
        q = q.retyped(q.root_item * width if q.root_item else None)
        return self.access(q, None, "w" if store else "r", n)

    def callee(self, fn) -> tuple[str | None, list[str]]:
        targs: list[str] = []
        node = fn
        if node is not None and node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
        if node is not None and node.type == "template_function":
            al = node.child_by_field_name("arguments")
            targs = [self.t(c) for c in al.named_children] if al is not None else []
            node = node.child_by_field_name("name")
        if node is not None and node.type == "identifier":
            return self.t(node), targs
        return None, targs

    def opencl_index(self, name: str, arg: str) -> Val:
        axis = _OCL_AXIS.get(arg.rstrip("uU"))
        if axis is None:
            return UNKNOWN
        b = self.block["xyz".index(axis)]
        g = Poly.sym(GRID[axis])
        if name in ("get_group_id", "get_num_groups", "get_global_size", "get_global_id"):
            self.facts.grid_axes.add(axis)
        tid, bid = "tid." + axis, "bid." + axis
        return {"get_local_id": index_range(Poly.const(b), tid),
                "get_group_id": index_range(g, bid),
                "get_local_size": Val.const(b),
                "get_num_groups": Val.exact(g),
                "get_global_size": Val.exact(g * b),
                "get_global_id": index_range(g * b, tid, bid)}[name]

    def follow(self, defs: list, values: list, targs: list[str], passed: dict[int, str] | None = None):
        """Run the source's definitions of a called function with the arguments bound (each
        overload with enough parameters); template type parameters deduced from pointer arguments
        keep the pointee's size."""
        passed = passed or {}
        if len(self.stack) >= self.MAX_DEPTH:
            self.facts.used_params |= set(passed.values())
            return Val(data=True)
        candidates = [d for d in defs if d not in self.stack and len(_params(d, self.data)) >= len(values)]
        # overloads: keep those whose pointer parameters take the arguments' element sizes
        fitting = [d for d in candidates if self._fits(d, values)]
        for d in fitting or candidates:
            params = _params(d, self.data)
            saved_env, saved_bind, saved_consts = self.env, dict(self.types.bindings), self.consts
            saved_quot, self.quotients = self.quotients, {}
            tparams = _template_param_names(d, self.data)
            for tp, ta in zip(tparams, targs):
                self.types.bindings[tp] = self.types.resolve(ta)
                v = self.ev_text_const(ta)
                if v is not None:
                    self.consts = {**self.consts, tp: v}
            env: dict[str, object] = {}
            body = d.child_by_field_name("body")
            used_names = {self.t(x) for x in walk(body) if x.type == "identifier"} if body is not None else set()
            for i, (pname, ptype, is_ptr) in enumerate(params[:len(values)]):
                if i in passed and pname in used_names:
                    self.facts.used_params.add(passed[i])
            for (pname, ptype, is_ptr), v in zip(params, values):
                bare = strip(ptype)
                if is_ptr and isinstance(v, Ptr) and bare in tparams and bare not in self.types.bindings \
                        and v.item is not None:
                    self.types.bindings[bare] = f"@bytes{v.item}"      # T deduced from the argument
                if is_ptr and isinstance(v, Ptr):
                    size = self.types.size(ptype)
                    env[pname] = v.retyped(size) if size is not None else v
                elif isinstance(v, Val) and not is_ptr:
                    env[pname] = v if self._is_int_type(ptype) or v.known else Val(data=v.data)
                else:
                    env[pname] = UNKNOWN
            self.env = env
            self.stack.append(d)
            try:
                self.stmt(d.child_by_field_name("body"))
            finally:
                self.stack.pop()
                self.env = saved_env
                self.types.bindings = saved_bind
                self.consts = saved_consts
                self.quotients = saved_quot
        return Val(data=True)

    def _fits(self, d, values: list) -> bool:
        tparams = set(_template_param_names(d, self.data))
        for (_, ptype, is_ptr), v in zip(_params(d, self.data), values):
            if not is_ptr or not isinstance(v, Ptr) or strip(ptype) in tparams:
                continue
            size = self.types.size(ptype)
            if size is not None and v.item is not None and size != v.item:
                return False
        return True

    def ev_text_const(self, text: str) -> int | None:
        v = _int(text)
        if v is not None:
            return v
        if text in self.consts:
            return self.consts[text]
        if text in ("true", "false"):
            return 1 if text == "true" else 0
        return None


def _data(v) -> bool:
    return isinstance(v, Val) and v.data


def _int(text: str) -> int | None:
    s = text.strip().rstrip("uUlL")
    try:
        return int(s, 0)
    except ValueError:
        return None


def function_name(n, data: bytes) -> str:
    d = n.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    if d is None:
        return ""
    name = d.child_by_field_name("declarator")
    if name is None:
        return ""
    text = data[name.start_byte:name.end_byte].decode()
    text = re.sub(r"<.*", "", text).split("::")[-1]
    words = re.findall(r"[A-Za-z_]\w*", text)
    return words[-1] if words else ""


def _params(n, data: bytes) -> list[tuple[str, str, bool]]:
    d = n.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    out = []
    for p in plist.named_children if plist is not None else []:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        typ = p.child_by_field_name("type")
        decl = p.child_by_field_name("declarator")
        is_ptr = False
        while decl is not None and decl.type in ("pointer_declarator", "reference_declarator", "array_declarator"):
            is_ptr = is_ptr or decl.type != "reference_declarator"
            nxt = decl.child_by_field_name("declarator")
            decl = nxt if nxt is not None else next((c for c in decl.named_children if c.type == "identifier"), None)
        name = data[decl.start_byte:decl.end_byte].decode() if decl is not None else ""
        out.append((name, data[typ.start_byte:typ.end_byte].decode() if typ is not None else "", is_ptr))
    return out


def _template_param_names(n, data: bytes) -> list[str]:
    parent = n.parent
    if parent is None or parent.type != "template_declaration":
        return []
    plist = parent.child_by_field_name("parameters")
    out = []
    for p in plist.named_children if plist is not None else []:
        nm = p.child_by_field_name("name") or p.child_by_field_name("declarator")
        if nm is None:
            nm = next((c for c in p.named_children if c.type in ("type_identifier", "identifier")), None)
        out.append(data[nm.start_byte:nm.end_byte].decode() if nm is not None else "")
    return out
