"""vector-columns (OpenCL): a work-item takes VW consecutive values of its
global index, as one vector

    c = get_global_id(0);  if (c >= n) return;
    float acc = 0;  for (r...) acc += A[r * n + c] * x[r];  y[c] = acc;

becomes, with c0 = get_global_id(0) * vec_step(floatVW) and the grid divided by VW,

    floatVW acc = 0;  for (r...) acc += vloadVW(0, A + r * n + c0) * x[r];  vstoreVW(acc, 0, y + c0);

and the last work-item, where fewer than VW values are left, runs the
original code once per value. The kernels it is for walk a loop per
work-item with the global index as the column (a transposed GEMV, a
column reduction): a CPU runtime then loads a whole vector per row where it
otherwise gathers one element per SIMD lane, and a GPU thread issues one
wide load instead of VW narrow ones.

Precondition: ``c`` = ``get_global_id(0)``, then a bounds check (an early
``return`` or one ``if (c < n)`` around the rest), nothing modifies ``c``, no
barrier, atomic or other ``return``; the body has a loop that touches memory
at ``c``; every use of ``c`` is an access ``p[base + c]`` (``base`` free of
``c``) to arrays of one element type (float, double or int), a store being a
whole statement ``p[base + c] = E;`` (or ``+=``); a variable that takes such a
value (directly or through another) is a plain scalar of that type, and no
condition, index or call other than a math function sees one; the grid's x
size is ``ceil_div(n, threads)``. Each vector lane computes exactly what its
work-item computed: the results are bit for bit the same (OpenCL's vector
operations and math functions are defined lane by lane).
"""

from __future__ import annotations

from kerntune.agents.rules.access import affine_base, assigned_names, identifiers
from kerntune.agents.rules.base import (Applied, Edit, Param, Rule, RewriteState, RuleDeclined, apply_edits, unwrap,
                                        why_not)
from kerntune.agents.rules.generic import GENERATED
from kerntune.agents.rules.base import line_indent
from kerntune.agents.rules.ept import elementwise, scale_grid
from kerntune.agents.rules.vectorize import pointee_type
from kerntune.agents.rules.vacc import MATH, at_offset, is_double_constant
from kerntune.source.parse import walk

TYPES = ("float", "double", "int")
HEADER = ("#define KT_VW {{ VW }}\n#define KT_VW_LOAD vload{{ VW }}\n#define KT_VW_STORE vstore{{ VW }}\n"
          "#define KT_VW_float float{{ VW }}\n#define KT_VW_double double{{ VW }}\n#define KT_VW_int int{{ VW }}")
CONDITIONS = ("if_statement", "while_statement", "do_statement", "for_statement", "conditional_expression")


def _base_type(text: str) -> str:
    return " ".join(text.replace("const", " ").replace("__global", " ").replace("global", " ").split())


class _Plan:
    """What the body's rewrite needs: the accesses at the index, the variables that become vectors."""

    def __init__(self, st: RewriteState, kernel, var: str, body: list):
        self.st, self.var, self.body = st, var, body
        fn = kernel.node
        self.loads, self.stores, types = [], [], set()
        subs = set()
        for stmt in body:
            for n in walk(stmt):
                if n.type != "subscript_expression":
                    continue
                idx = n.child_by_field_name("indices")
                index = idx.named_children[0] if idx is not None and len(idx.named_children) == 1 else None
                if index is None or var not in identifiers(st, index):
                    continue
                arr = n.child_by_field_name("argument")
                base = affine_base(st, index, var)
                if arr is None or arr.type != "identifier" or base is None:
                    raise RuleDeclined(f"the index {var} is used in {st.text(n)}, not as p[base + {var}]")
                types.add(_base_type(pointee_type(st, fn, st.text(arr)) or "?"))
                subs.add(n.id)
                parent = n.parent
                if parent is not None and parent.type == "assignment_expression" and \
                        parent.child_by_field_name("left") == n:
                    op = st.text(parent.child_by_field_name("operator"))
                    holder = parent.parent
                    if op not in ("=", "+=") or holder is None or holder.type != "expression_statement":
                        raise RuleDeclined(f"{st.text(parent)} is not a whole statement p[base + {var}] = ...")
                    self.stores.append((holder, n, st.text(arr), base, op, parent.child_by_field_name("right")))
                elif parent is not None and parent.type == "update_expression":
                    raise RuleDeclined(f"{st.text(parent)} updates an element in place")
                else:
                    self.loads.append((n, st.text(arr), base))
        if not self.loads and not self.stores:
            raise RuleDeclined(f"the index {var} is never an access p[base + {var}]")
        if len(types) != 1 or not types <= set(TYPES):
            raise RuleDeclined(f"the arrays accessed at {var} are not all of one type among float, double, int "
                               f"({', '.join(sorted(types)) or 'none'})")
        self.ctype = types.pop()
        for stmt in body:
            for n in walk(stmt):
                if n.type == "identifier" and st.text(n) == var:
                    p = n
                    while p is not None and p.id not in subs and p not in body:
                        p = p.parent
                    if p is None or p.id not in subs:
                        raise RuleDeclined(f"the index {var} is used other than as p[base + {var}]")
        self.vectors = self._vector_vars(subs)
        self._check_uses(subs)

    def _depends(self, node, subs: set, vectors: set) -> bool:
        st = self.st
        return any(n.id in subs or (n.type == "identifier" and st.text(n) in vectors) for n in walk(node))

    def _vector_vars(self, subs: set) -> set[str]:
        """Variables that hold a value taken at the index, directly or through another."""
        st, vectors = self.st, set()
        writes = []                      # (name, value node)
        for stmt in self.body:
            for name, nodes in assigned_names(st, stmt).items():
                writes += [(name, n.child_by_field_name("right")) for n in nodes if n.type == "assignment_expression"]
            for n in walk(stmt):
                if n.type == "init_declarator" and n.child_by_field_name("declarator").type == "identifier":
                    writes.append((st.text(n.child_by_field_name("declarator")), n.child_by_field_name("value")))
        changed = True
        while changed:
            changed = False
            for name, value in writes:
                if name not in vectors and value is not None and self._depends(value, subs, vectors):
                    vectors.add(name)
                    changed = True
        return vectors

    def _check_uses(self, subs: set) -> None:
        st = self.st
        for stmt in self.body:
            for n in walk(stmt):
                if n.type in CONDITIONS:
                    cond = n.child_by_field_name("condition")
                    if cond is not None and self._depends(cond, subs, self.vectors):
                        raise RuleDeclined(f"a condition depends on a value taken at {self.var}: {st.text(cond)}")
                if n.type == "subscript_expression" and n.id not in subs:
                    idx = n.child_by_field_name("indices")
                    if idx is not None and self._depends(idx, subs, self.vectors):
                        raise RuleDeclined(f"an index depends on a value taken at {self.var}: {st.text(n)}")
                if n.type == "call_expression" and self._depends(n, subs, self.vectors) and \
                        st.text(n.child_by_field_name("function")) not in MATH["opencl"]:
                    raise RuleDeclined(f"{st.text(n.child_by_field_name('function'))} is called with a value taken "
                                       f"at {self.var}")
                if n.type in ("cast_expression", "pointer_expression", "field_expression") and \
                        self._depends(n, subs, self.vectors):
                    raise RuleDeclined(f"{st.text(n)} takes a value taken at {self.var} apart")
                if self.ctype == "float" and is_double_constant(st, n):
                    raise RuleDeclined(f"the double constant {st.text(n)} beside float vectors")
                if n.type == "declaration":
                    names = [d for d in n.named_children if d.type in ("init_declarator", "identifier")]
                    mine = [d for d in names if st.text(d.child_by_field_name("declarator") if d.type ==
                                                        "init_declarator" else d) in self.vectors]
                    if mine and (len(names) != 1 or _base_type(st.text(n.child_by_field_name("type"))) != self.ctype):
                        raise RuleDeclined(f"{st.text(n)} is not one scalar {self.ctype}")
                if n.type in ("return_statement", "goto_statement"):
                    raise RuleDeclined("the body returns")

    def vector_body(self, start: str) -> str:
        """The body with every access at the index a vector load or store at ``start``, and the
        variables that hold such values declared as vectors."""
        st = self.st
        vtype = f"KT_VW_{self.ctype}"

        loads = [Edit(n.start_byte, n.end_byte, f"KT_VW_LOAD(0, {at_offset(a, b, start)})") for n, a, b in self.loads]
        decls = []
        for stmt in self.body:
            for n in walk(stmt):
                if n.type == "declaration":
                    d = n.named_children[-1]
                    name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                    if st.text(name) in self.vectors:
                        t = n.child_by_field_name("type")
                        decls.append(Edit(t.start_byte, t.end_byte, vtype))
                        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                        if value is not None and not self._depends(value, set(x[0].id for x in self.loads),
                                                                   self.vectors):
                            decls.append(Edit(value.start_byte, value.start_byte, f"({vtype})("))
                            decls.append(Edit(value.end_byte, value.end_byte, ")"))
        edits = loads + decls
        stores = []
        for holder, n, arr, base, op, right in self.stores:
            inner = [e for e in edits if right.start_byte <= e.start and e.end <= right.end_byte]
            value = apply_edits(st.raw[:right.end_byte], [Edit(0, right.start_byte, "")] +
                                [e for e in inner])
            value = f"({vtype})({value})"
            if op == "+=":
                value = f"KT_VW_LOAD(0, {at_offset(arr, base, start)}) + {value}"
            stores.append(Edit(holder.start_byte, holder.end_byte, f"KT_VW_STORE({value}, 0, {at_offset(arr, base, start)});"))
        held = [s for s in stores]
        edits = [e for e in edits if not any(s.start <= e.start and e.end <= s.end for s in held)] + held
        first, last = self.body[0].start_byte, self.body[-1].end_byte
        inside = [Edit(e.start - first, e.end - first, e.text) for e in edits if first <= e.start and e.end <= last]
        return apply_edits(st.raw[first:last], inside)


def _plan(st: RewriteState):
    found, why = elementwise(st)
    if found is None:
        raise RuleDeclined(why)
    kernel, decl, var, rest, kind = found
    if kind == "guard":
        cond = unwrap(rest[0].child_by_field_name("condition"))
        cons = rest[0].child_by_field_name("consequence")
        body = [c for c in cons.named_children if c.type != "comment"] if cons.type == "compound_statement" else [cons]
    else:
        cond = unwrap(rest[0].child_by_field_name("condition"))
        body = [r for r in rest[1:] if r.type != "comment"]
    bound = st.text(cond.child_by_field_name("right"))
    if not body or not any(n.type in ("for_statement", "while_statement") for s in body for n in walk(s)):
        raise RuleDeclined("no loop per work-item (element-wise kernels: elements-per-thread and vectorize)")
    if scale_grid(st.launch.grid[0], "VW") is None:
        raise RuleDeclined("the grid's x size is not ceil_div(elements, threads per block)")
    return kernel, decl, var, rest, bound, _Plan(st, kernel, var, body)


class VectorColumns(Rule):
    name = "vector-columns"
    summary = "VW consecutive global indices per work-item as one vector (vloadN/vstoreN), OpenCL"
    langs = ("opencl",)

    def check(self, st: RewriteState) -> str:
        return why_not(_plan, st)

    def apply(self, st: RewriteState) -> Applied:
        kernel, decl, var, rest, bound, plan = _plan(st)
        vtype = " ".join(st.text(decl.child_by_field_name("type")).split())
        ind = line_indent(st, decl)
        start, end = decl.start_byte, rest[-1].end_byte
        original = st.raw[start:end].decode()
        body_text = st.raw[plan.body[0].start_byte:plan.body[-1].end_byte].decode()
        vec = plan.vector_body("kt_c0")
        # the width spelled only inside a name (vec_step of the vector type, baked vec_step(float16)),
        # never as a bare number: round 2's launch-config rewrites every literal equal to the block
        # size into KT_BLOCK (a block of 16 beside VW = 16 once made the columns per work-item follow
        # the block while vload16 stayed)
        width = f"vec_step(KT_VW_{plan.ctype})"
        new = (f"\n#if KT_VW > 1\n"
               f"{ind}const {vtype} kt_c0 = ({vtype})get_global_id(0) * ({vtype}){width};\n"
               f"{ind}if (kt_c0 >= {bound}) return;\n"
               f"{ind}if (kt_c0 + ({vtype}){width} <= {bound}) {{\n{ind}    {vec}\n{ind}}} else {{\n"
               f"{ind}    {GENERATED}\n"
               f"{ind}    for ({vtype} {var} = kt_c0; {var} < {bound}; ++{var}) {{\n{ind}        {body_text}\n"
               f"{ind}    }}\n{ind}}}\n#else\n{ind}{original}\n#endif\n{ind}")
        st.source = apply_edits(st.raw, [Edit(start, end, new)])
        # the grid's VW inside fixed(): baked, a width equal to the block size stays the width
        # (ceil_div(cols, 16 * fixed(16)), which launch-config leaves alone; not ceil_div(cols, BLOCK * BLOCK))
        st.launch = st.launch.model_copy(update={"grid": [scale_grid(st.launch.grid[0], "VW", fixed=True),
                                                          *st.launch.grid[1:]]})
        st.add_param(Param("VW", st.opencl_vector_widths(), HEADER,
                           why="consecutive global indices per work-item, as one vector; the grid divided by VW"))
        return Applied(self.name, f"{st.kernel}: VW consecutive values of {var} per work-item as a vector "
                                  f"({len(plan.loads)} load(s), {len(plan.stores)} store(s), "
                                  f"{len(plan.vectors)} vector variable(s))", ("VW",))
