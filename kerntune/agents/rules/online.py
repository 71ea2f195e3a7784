"""online-softmax: a row kernel that makes two passes over a row, one for its
maximum and one for the sum of exponentials relative to it

    m = -inf;  for (c...) m = max(m, x[c]);
    s = 0;     for (c...) s += exp(x[c] - m);

gets one pass instead (Milakov and Gimelshein's online normalizer): a running
maximum, with the sum rescaled whenever the maximum grows,

    for (c...) { mn = max(m, x[c]); s = s * exp(m - mn) + exp(x[c] - mn); m = mn; }

Same m; s equal up to rounding (each term is computed relative to the
maximum so far, then rescaled). One read of the row instead of two, for one
more exponential per element. The fused loop carries a marker comment
(``/*kt:online m s*/``) so that cooperative-rows can combine the pair across
the threads of a row (the maximum of the maxima, then each sum rescaled to it).
"""

from __future__ import annotations

from dataclasses import dataclass

from kerntune.agents.rules.access import (
    CountedLoop, any_loop, call_name, loop_step, identifiers, is_kt_conditional, line_start, row_statements, squash,
)
from kerntune.agents.rules.base import Applied, Edit, Param, Rule, RewriteState, apply_edits, unwrap
from kerntune.agents.rules.rows import MAX_OPS, ONLINE_MARK, _ctype_of, _is_zero
from kerntune.source.parse import walk

EXPS = {"cuda": ("expf", "exp", "__expf"), "opencl": ("exp", "native_exp", "half_exp")}


@dataclass
class Fusion:
    first: CountedLoop          # the maximum's loop
    second: CountedLoop         # the sum's loop
    m: str
    s: str
    ctype: str
    element: str                # the element's expression, in the first loop's variable
    exp: str
    s_decl: object | None       # the sum's declaration, when it sits between the loops (it moves up)
    between: list
    red_m: object | None = None    # cooperative code: m = <max over the row's threads>(m) after the first loop
    red_s: object | None = None    # and s = <sum over them>(s) after the second


MAX_REDUCERS = ("sub_group_reduce_max", "kt_rows_group_max_", "kt_rows_warp_max", "kt_rows_block_max")
SUM_REDUCERS = ("sub_group_reduce_add", "kt_rows_group_sum_", "kt_rows_warp_sum", "kt_rows_block_sum")


def _reducer(st: RewriteState, stmt, var: str, names: tuple[str, ...]):
    """The call when ``stmt`` is ``var = f(var, ...)`` with f one of cooperative-rows' reductions."""
    if stmt is None or stmt.type != "expression_statement" or not stmt.named_children:
        return None
    a = stmt.named_children[0]
    if a.type != "assignment_expression" or st.text(a.child_by_field_name("operator")) != "=" or \
            st.text(unwrap(a.child_by_field_name("left"))) != var:
        return None
    call = unwrap(a.child_by_field_name("right"))
    name = call_name(st, call)
    if not name or not any(name == n or (n.endswith("_") and name.startswith(n)) for n in names):
        return None
    args = call.child_by_field_name("arguments").named_children
    if not args or st.text(unwrap(args[0])) != var:
        return None
    return call


def declared_in(st: RewriteState, decl) -> set[str]:
    return {st.text(d.child_by_field_name("declarator")) for d in decl.named_children if d.type == "init_declarator"
            and d.child_by_field_name("declarator").type == "identifier"}


def _body_statements(st: RewriteState, body) -> list:
    if body.type == "compound_statement":
        return [c for c in body.named_children if c.type != "comment"]
    return [body]


def _locals(st: RewriteState, stmts) -> tuple[dict[str, str], list]:
    """Leading ``T v = e;`` declarations of a loop body: name -> e's text; and the statements after."""
    defs, i = {}, 0
    while i < len(stmts) and stmts[i].type == "declaration":
        ds = [d for d in stmts[i].named_children if d.type == "init_declarator"]
        if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
            return defs, stmts[i:]
        defs[st.text(ds[0].child_by_field_name("declarator"))] = ds[0].child_by_field_name("value")
        i += 1
    return defs, stmts[i:]


def _expand(st: RewriteState, node, defs: dict, var: str, depth: int = 0) -> str:
    """The text of ``node`` with local constants (the loop's own and the block's: a hoisted row
    offset) replaced by their definitions and the loop variable by @, whitespace and redundant
    parentheses removed: two loops' element expressions compare by it."""
    text = st.raw[node.start_byte:node.end_byte]
    edits = []
    for n in walk(node):
        if n.type == "identifier":
            name = st.text(n)
            if name in defs and depth < 8:
                edits.append(Edit(n.start_byte - node.start_byte, n.end_byte - node.start_byte,
                                  _expand(st, defs[name], defs, var, depth + 1)))
            elif name == var:
                edits.append(Edit(n.start_byte - node.start_byte, n.end_byte - node.start_byte, "@"))
    out = squash(apply_edits(text, edits))
    while out.startswith("(") and out.endswith(")") and _balanced(out[1:-1]):
        out = out[1:-1]
    return out


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _block_constants(st: RewriteState, stmts) -> dict:
    """``const T name = e;`` declarations of a block whose names are never assigned: name -> e."""
    out = {}
    for x in stmts:
        if x.type != "declaration" or not any(q.type == "type_qualifier" and st.text(q) == "const" for q in x.children):
            continue
        for d in x.named_children:
            if d.type == "init_declarator" and d.child_by_field_name("declarator").type == "identifier":
                out[st.text(d.child_by_field_name("declarator"))] = d.child_by_field_name("value")
    return out


def _max_step(st: RewriteState, loop: CountedLoop):
    """(m, element node, defs) when the loop's body is ``m = max(m, e)`` (after local definitions)."""
    defs, rest = _locals(st, _body_statements(st, loop.body))
    if len(rest) != 1 or rest[0].type != "expression_statement" or not rest[0].named_children:
        return None
    a = rest[0].named_children[0]
    if a.type != "assignment_expression" or st.text(a.child_by_field_name("operator")) != "=":
        return None
    m = st.text(unwrap(a.child_by_field_name("left")))
    r = unwrap(a.child_by_field_name("right"))
    if r is None or r.type != "call_expression" or MAX_OPS.get(call_name(st, r)) != "max":
        return None
    args = r.child_by_field_name("arguments").named_children
    if len(args) != 2:
        return None
    other = [x for x in args if st.text(unwrap(x)) != m]
    if len(other) != 1 or m in identifiers(st, other[0]) or m in defs:
        return None
    if any(m in identifiers(st, v) for v in defs.values()):
        return None
    return m, other[0], defs


def _sum_step(st: RewriteState, loop: CountedLoop, m: str):
    """(s, element node, defs, exp name) when the body is ``s += exp(e - m)`` (or s = s + ...)."""
    defs, rest = _locals(st, _body_statements(st, loop.body))
    if len(rest) != 1 or rest[0].type != "expression_statement" or not rest[0].named_children:
        return None
    a = rest[0].named_children[0]
    if a.type != "assignment_expression":
        return None
    s = st.text(unwrap(a.child_by_field_name("left")))
    op, right = st.text(a.child_by_field_name("operator")), unwrap(a.child_by_field_name("right"))
    term = None
    if op == "+=":
        term = right
    elif op == "=" and right is not None and right.type == "binary_expression" and \
            st.text(right.child_by_field_name("operator")) == "+":
        left_, right_ = unwrap(right.child_by_field_name("left")), unwrap(right.child_by_field_name("right"))
        term = right_ if st.text(left_) == s else (left_ if st.text(right_) == s else None)
    term = unwrap(term)
    if term is None or term.type != "call_expression" or call_name(st, term) not in EXPS[st.lang]:
        return None
    args = term.child_by_field_name("arguments").named_children
    if len(args) != 1:
        return None
    diff = unwrap(args[0])
    if diff is None or diff.type != "binary_expression" or st.text(diff.child_by_field_name("operator")) != "-" or \
            st.text(unwrap(diff.child_by_field_name("right"))) != m:
        return None
    elem = diff.child_by_field_name("left")
    if s in identifiers(st, elem) or m in identifiers(st, elem) or any(
            s in identifiers(st, v) or m in identifiers(st, v) for v in defs.values()):
        return None
    return s, elem, defs, call_name(st, term)


def find_fusions(st: RewriteState) -> tuple[list[Fusion], str]:
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        return [], f"no kernel named {st.kernel}"
    out, why = [], "no loop computing a maximum followed by a loop summing exp(element - maximum)"
    for block in (n for n in walk(kernel.node) if n.type == "compound_statement"):
        stmts = row_statements(st, [c for c in block.named_children if c.type != "comment"], flatten=False)
        consts = _block_constants(st, stmts)
        for i, a in enumerate(stmts):
            first = any_loop(st, a)
            step = _max_step(st, first) if first is not None else None
            if step is None:
                continue
            m, elem_a, defs_a = step
            red_m = stmts[i + 1] if i + 1 < len(stmts) and _reducer(st, stmts[i + 1], m, MAX_REDUCERS) else None
            for j in range(i + (2 if red_m is not None else 1), len(stmts)):
                b = stmts[j]
                second = any_loop(st, b)
                found = _sum_step(st, second, m) if second is not None else None
                if found is None:
                    if m in identifiers(st, b) and b.type != "declaration" or b.type in (
                            "for_statement", "while_statement", "do_statement") or is_kt_conditional(st, b):
                        break
                    continue
                s, elem_b, defs_b, exp = found
                between = stmts[i + (2 if red_m is not None else 1):j]
                after = stmts[j + 1] if j + 1 < len(stmts) else None
                red_s = after if _reducer(st, after, s, SUM_REDUCERS) is not None else None
                if (red_m is None) != (red_s is None):
                    why = "the maximum and the sum are not both reduced across the row's threads"
                    break
                if squash(st.text(first.start)) != squash(st.text(second.start)) or \
                        squash(st.text(first.bound)) != squash(st.text(second.bound)) or \
                        loop_step(st, first) != loop_step(st, second):
                    why = "the maximum's loop and the sum's loop run over different ranges"
                    break
                if _expand(st, elem_a, {**consts, **defs_a}, first.var) != \
                        _expand(st, elem_b, {**consts, **defs_b}, second.var):
                    why = "the sum's loop does not exponentiate the elements whose maximum the first loop takes"
                    break
                s_decl = next((x for x in between if x.type == "declaration" and s in identifiers(st, x)), None)
                if any(s in identifiers(st, x) for x in between if x is not s_decl) or \
                        any(m in identifiers(st, x) and x.type != "declaration" for x in between):
                    why = f"the code between the loops uses {s} or changes {m}"
                    break
                scope = kernel.node
                ctype = _ctype_of(st, scope, m) or ""
                if ctype.replace("const ", "") not in ("float", "double") or _ctype_of(st, scope, s) != ctype:
                    why = f"{m} and {s} are not both float (or both double)"
                    break
                moved = s_decl
                if s_decl is None:      # declared before the maximum's loop (an earlier round moved it there)
                    k = max((x for x in range(i) if stmts[x].type == "declaration"
                             and s in declared_in(st, stmts[x])), default=None)
                    if k is None or any(s in identifiers(st, x) for x in stmts[k + 1:i]):
                        why = f"the sum {s} is not declared in the same block before its loop"
                        break
                    s_decl = stmts[k]
                init = [d.child_by_field_name("value") for d in s_decl.named_children if d.type == "init_declarator"
                        and st.text(d.child_by_field_name("declarator")) == s]
                if len(init) != 1 or not _is_zero(st, init[0]):
                    why = f"the sum {s} does not start from zero"
                    break
                s_decl = moved
                out.append(Fusion(first, second, m, s, ctype, st.text(elem_a), exp, s_decl,
                                  [x for x in between if x is not s_decl], red_m, red_s))
                break
    return out, why


class OnlineSoftmax(Rule):
    name = "online-softmax"
    summary = "a row's maximum and its sum of exponentials in one pass (online rescaling), as a parameter"

    def check(self, st: RewriteState) -> str:
        found, why = find_fusions(st)
        return "" if found else why

    def apply(self, st: RewriteState) -> Applied:
        found, _ = find_fusions(st)
        raw = st.raw
        edits = []
        for f in found:
            start = line_start(raw, f.first.node.start_byte)
            end = (f.red_s or f.second.node).end_byte
            ind = raw[start:f.first.node.start_byte].decode()
            t = f.ctype.replace("const ", "").strip()
            lp = f.first
            defs, _ = _locals(st, _body_statements(st, lp.body))
            lines = [st.statement_text(d) for d in _body_statements(st, lp.body)[:len(defs)]]
            lines += [f"const {t} kt_x = {f.element};", f"const {t} kt_m = {MAX_CALL[st.lang][t]}({f.m}, kt_x);",
                      f"{f.s} = ({f.m} == kt_m ? {f.s} : {f.s} * {f.exp}({f.m} - kt_m)) + {f.exp}(kt_x - kt_m);",
                      f"{f.m} = kt_m;"]
            header = st.text(lp.node)[:lp.body.start_byte - lp.node.start_byte].rstrip()
            fused = f"{ind}{ONLINE_MARK} {f.m} {f.s}*/\n{ind}{header} {{\n" + \
                "".join(f"{ind}    {ln}\n" for ln in lines) + f"{ind}}}"
            if f.red_m is not None:    # combine the threads' pairs: the maximum of maxima, each sum rescaled to it
                max_call = _reducer(st, f.red_m, f.m, MAX_REDUCERS)
                sum_call = _reducer(st, f.red_s, f.s, SUM_REDUCERS)
                first_arg = sum_call.child_by_field_name("arguments").named_children[0]
                scaled = f"{f.m} == kt_m ? {f.s} : {f.s} * {f.exp}({f.m} - kt_m)"
                total = apply_edits(raw[sum_call.start_byte:sum_call.end_byte],
                                    [Edit(first_arg.start_byte - sum_call.start_byte,
                                          first_arg.end_byte - sum_call.start_byte, scaled)])
                fused += (f"\n{ind}{{ const {t} kt_m = {st.text(max_call)}; {f.s} = {total}; "
                          f"{f.m} = kt_m; }}")
            between = "".join(raw[line_start(raw, x.start_byte):x.end_byte].decode() + "\n" for x in f.between)
            original = raw[start:end].decode()
            if f.s_decl is not None:        # the sum's declaration moves above both versions
                s0, e0 = line_start(raw, f.s_decl.start_byte) - start, f.s_decl.end_byte - start
                if raw[f.s_decl.end_byte:f.s_decl.end_byte + 1] == b"\n":
                    e0 += 1
                original = apply_edits(raw[start:end], [Edit(s0, e0, "")])
                decl = raw[line_start(raw, f.s_decl.start_byte):f.s_decl.end_byte].decode()
                decl = ind + decl.lstrip() + "\n"
            else:
                decl = ""
            new = f"{decl}#if KT_ONLINE\n{fused}\n{between}#else\n{original}\n#endif"
            edits.append(Edit(start, end, new))
        st.source = apply_edits(raw, edits)
        st.add_param(Param("ONLINE", (False, True), "#define KT_ONLINE {{ 1 if ONLINE else 0 }}",
                           why="one pass for a row's maximum and sum of exponentials (one more exponential per "
                               "element, one read of the row fewer)"))
        return Applied(self.name, f"{len(found)} maximum-then-sum-of-exponentials pair(s) of passes may fuse into "
                                  "one online pass", ("ONLINE",))


MAX_CALL = {"cuda": {"float": "fmaxf", "double": "fmax"}, "opencl": {"float": "fmax", "double": "fmax"}}
