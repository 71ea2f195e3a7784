"""The `vectorize` rule: a block-strided loop whose body touches memory at ``base + i`` takes VEC consecutive
elements per step (16-byte accesses in CUDA where the address allows), with a scalar tail."""

from __future__ import annotations

import re

from kerntune.agents.rules.access import (
    accessor_call, accessor_functions, affine_base, every_trip, identifiers, squash,
)
from kerntune.agents.rules.base import (
    BARRIERS, Applied, Edit, Param, RewriteState, Rule, RuleDeclined, apply_edits, builtin_x, guarded,
    indent_before, int_literal, is_block_dim_x, is_thread_x, line_indent, pragma_start, unwrap,
)
from kerntune.agents.rules.generic import GENERATED, is_generated
from kerntune.source.parse import walk


def block_strided(st: RewriteState, fn, loop):
    """(variable, bound node) of ``for (T i = thread x; i < bound; i += block size x)`` (the bound
    free of ``i``), else None."""
    init, cond, upd = (loop.child_by_field_name(k) for k in ("initializer", "condition", "update"))
    if init is None or cond is None or upd is None or init.type != "declaration":
        return None
    d = init.child_by_field_name("declarator")
    if d is None or d.type != "init_declarator":
        return None
    start = unwrap(d.child_by_field_name("value"))
    split = _split_share(st, fn, start)
    if not is_thread_x(st, fn, start) and split is None:
        return None
    var = st.text(d.child_by_field_name("declarator"))
    c = unwrap(cond)
    if c.type != "binary_expression" or st.text(c.child_by_field_name("operator")) != "<" or \
            st.text(unwrap(c.child_by_field_name("left"))) != var:
        return None
    bound_node = c.child_by_field_name("right")
    if any(n.type == "identifier" and st.text(n) == var for n in walk(bound_node)):
        return None
    u = unwrap(upd)
    if not (u.type == "assignment_expression" and st.text(u.child_by_field_name("operator")) == "+="
            and st.text(u.child_by_field_name("left")) == var):
        return None
    step = u.child_by_field_name("right")
    if not (is_block_dim_x(st, step, fn) if split is None else squash(st.text(step)) == squash(split[1])):
        return None
    return var, bound_node


def _split_share(st: RewriteState, fn, start):
    """split-groups' start of a block-strided loop, ``tid + (group % K) * block`` stepping ``block * K``
    (K the parameter KT_SPLIT, or the number a later round baked in): (start, step) as text; else None.
    The split replaced every other use of the group index by ``group / K``, so the loop is a block of K
    times as many threads; a number other than 1 counts only where the function's every read of the
    group index is such a quotient or remainder."""
    from kerntune.agents.rules.groupsplit import split_factor, split_start

    if start is None or start.type != "binary_expression" or st.text(start.child_by_field_name("operator")) != "+":
        return None
    k = split_factor(st, start.child_by_field_name("right"))
    if k is None or not is_thread_x(st, fn, start.child_by_field_name("left")):
        return None
    if k not in ("KT_SPLIT", "1"):
        from kerntune.agents.rules.groupsplit import group_reads, quotient_or_remainder

        if any(quotient_or_remainder(st, g) != k for g in group_reads(st, fn)):
            return None
    return st.text(start), split_start(st, k)[1]


def loop_share(st: RewriteState, fn, loop) -> tuple[str, str] | None:
    """(start, step) of a block-strided loop split-groups dealt out, else None."""
    d = loop.child_by_field_name("initializer").child_by_field_name("declarator")
    return _split_share(st, fn, unwrap(d.child_by_field_name("value")))


def _strided_loops(st: RewriteState):
    """Loops `for (int i = tid; i < N; i += blockDim)` whose body touches memory only as P[i]."""
    out, reasons = [], []
    for fn in st.functions():
        for loop in (n for n in walk(fn) if n.type == "for_statement" and not is_generated(st, n)):
            head = block_strided(st, fn, loop)
            if head is None:
                continue
            var, bound_node = head
            body = loop.child_by_field_name("body")
            why = _vectorizable_body(st, body, var)
            if why:
                reasons.append(why)
                continue
            out.append((fn, loop, var, st.text(bound_node), body))
    return out, reasons


class Stream:
    """The elements of one array at ``base + i`` for the loop's ``i``: loaded or stored VEC at a time."""

    def __init__(self, array: str, base: str, name: str):
        self.array, self.base, self.name = array, base, name
        self.read = self.write = self.cond_write = False
        self.every_trip = False         # some access of it is made on every trip (not only under a branch)
        self.nodes: list = []           # subscripts p[base + i]
        self.calls: list = []           # accessor calls' (pointer, index) arguments

    def address(self, start: str) -> str:
        return f"{self.array} + {self.base} + {start}" if self.base else f"{self.array} + {start}"

    def element(self, start: str) -> str:
        return f"{self.array}[{self.base} + {start}]" if self.base else f"{self.array}[{start}]"


_IMPURE = ("call_expression", "subscript_expression", "assignment_expression", "update_expression",
           "pointer_expression", "comma_expression")


def _substituted(text: str, consts: dict[str, str]) -> str:
    if not consts:
        return text
    return re.sub(r"\b(" + "|".join(map(re.escape, consts)) + r")\b", lambda m: consts[m.group(1)], text)


def _local_constants(st: RewriteState, body, var: str, assigned: set[str]):
    """What the body's leading declarations compute: (constants, aliases). A constant is a name declared
    once at the top of the body from names the loop does not change, with no load or call (the same
    value for every element): name -> its definition, cast to its type and parenthesized, to be used
    outside the body. An alias is a name declared once as ``base + var`` (``idx = row * cols + c``):
    name -> base, the constants in it written out."""
    counts: dict[str, int] = {}
    for n in walk(body):
        if n.type == "init_declarator" and n.child_by_field_name("declarator").type == "identifier":
            name = st.text(n.child_by_field_name("declarator"))
            counts[name] = counts.get(name, 0) + 1
    consts: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for stmt in body.named_children if body.type == "compound_statement" else []:
        if stmt.type != "declaration":
            continue
        ds = [d for d in stmt.named_children if d.type == "init_declarator"]
        if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
            continue
        name, value = st.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
        if value is None or name in assigned or counts.get(name) != 1 or any(n.type in _IMPURE for n in walk(value)):
            continue
        names = identifiers(st, value)
        locals_ = {x for x in names if x in counts} - {var}
        if not locals_ <= consts.keys():
            continue
        if var not in names:
            ctype = " ".join(st.text(stmt.child_by_field_name("type")).split())
            consts[name] = f"(({ctype})({_substituted(st.text(value), consts)}))"
        else:
            base = affine_base(st, value, var)
            if base is not None:
                aliases[name] = _substituted(base, consts)
    return consts, aliases


def _conditional(node, body) -> bool:
    """Whether ``node`` runs under a condition (or a loop) inside ``body``."""
    p = node.parent
    while p is not None and p != body:
        if p.type in ("if_statement", "conditional_expression", "while_statement", "for_statement"):
            return True
        p = p.parent
    return False


def _accesses(st: RewriteState, body, var: str):
    """The streams (one per array and base) the body touches as ``p[base + var]``, with ``base`` loop
    invariant, and whether ``var`` has other uses; None (with why) when an access is of another form.
    An index may also be a name the body declares as ``base + var`` (``p[idx]`` after
    ``const long idx = row * cols + c;``), and a base may use names the body declares from values the
    loop does not change (:func:`_local_constants`: they are written out in the stream's address)."""
    assigned = {st.text(unwrap(n.child_by_field_name("left") or n.child_by_field_name("argument")))
                for n in walk(body) if n.type in ("assignment_expression", "update_expression")}
    declared = {st.text(n.child_by_field_name("declarator")) for n in walk(body) if n.type == "init_declarator"}
    consts, aliases = _local_constants(st, body, var, assigned)
    # CUDA only: an OpenCL accessor's pointer parameter has an address space, and a lane's buffer is private
    accessors = accessor_functions(st) if st.lang == "cuda" else {}
    streams: dict[tuple[str, str], Stream] = {}
    other_uses = False
    subs = set()
    for n in walk(body):
        call = accessor_call(st, n, accessors)
        if call is not None:
            index, arr = call[2], unwrap(call[1])
        elif n.type == "subscript_expression":
            idx = n.child_by_field_name("indices")
            if idx is None or len(idx.named_children) != 1:
                continue
            index, arr = idx.named_children[0], n.child_by_field_name("argument")
        else:
            continue
        alias = unwrap(index)
        alias = aliases.get(st.text(alias)) if alias is not None and alias.type == "identifier" else None
        if alias is None and var not in identifiers(st, index):
            continue
        if arr is None or arr.type != "identifier":
            return None, f"{st.text(n)} indexes something other than an array with the loop index {var}"
        if alias is not None:
            base = alias
        else:
            base = affine_base(st, index, var)
            if base is None or ((identifiers(st, index) - {var}) & (assigned | declared)) - consts.keys():
                return None, f"the loop index {var} is used in {st.text(n)}, not as p[base + {var}]"
            base = _substituted(base, consts)
        key = (st.text(arr), squash(base))
        if key not in streams:
            streams[key] = Stream(st.text(arr), base, f"kt_v_{st.text(arr)}{len([k for k in streams if k[0] == key[0]]) or ''}")
        stream = streams[key]
        stream.every_trip = stream.every_trip or every_trip(st, n, body)
        if call is not None:          # an accessor: its pointer and index arguments become the lane's buffer
            stream.calls.append((call[1], call[2]))
            subs.add(call[2].id)
            stream.read = stream.read or call[0].read
            if call[0].write:
                stream.write = True
                stream.cond_write = stream.cond_write or _conditional(n, body)
            continue
        stream.nodes.append(n)
        subs.add(n.id)
        parent = n.parent
        if parent is not None and parent.type == "assignment_expression" and parent.child_by_field_name("left") == n:
            stream.write = True
            if st.text(parent.child_by_field_name("operator")) != "=":
                stream.read = True
            stream.cond_write = stream.cond_write or _conditional(parent, body)
        elif parent is not None and parent.type == "update_expression":
            stream.read = stream.write = True
        else:
            stream.read = True
    for n in walk(body):
        if n.type == "identifier" and st.text(n) == var:
            p = n
            while p is not None and p != body and p.id not in subs:
                p = p.parent
            if p is None or p == body:
                other_uses = True
    for s in streams.values():
        if not s.every_trip:
            return None, (f"{s.element(var)} is accessed only under a branch of the loop body: a vector step would "
                          "touch elements the original skips (past an array's end when the branch is a bounds check)")
    written = {s.array for s in streams.values() if s.write}
    for arr in written:
        if len([s for s in streams.values() if s.array == arr]) > 1:
            return None, f"{arr} is written at one offset from {var} and accessed at another"
    return (list(streams.values()), other_uses), ""


def _vectorizable_body(st: RewriteState, body, var: str) -> str:
    for n in walk(body):
        if n.type in ("return_statement", "break_statement", "continue_statement", "goto_statement"):
            return "the loop body leaves the loop"
        if n.type == "call_expression" and st.text(n.child_by_field_name("function")) in (
                BARRIERS[st.lang], "atomicAdd", "atomic_add", "atomic_inc"):
            return "the loop body synchronizes or uses atomics"
        if n.type == "for_statement" or n.type == "while_statement":
            return "the loop body has an inner loop"
    acc, why = _accesses(st, body, var)
    if acc is None:
        return why
    if not acc[0]:
        return "the loop body does not access memory through the index"
    return ""


CUDA_VEC = """template <typename T, int N> struct kt_vec { alignas(16) T v[N]; };
template <typename R> struct kt_elem { typedef R type; };
template <typename R> struct kt_elem<R&> { typedef R type; };
template <typename R> struct kt_elem<const R&> { typedef R type; };
template <typename R> struct kt_elem<const R> { typedef R type; };
template <int N, typename T>
__device__ __forceinline__ void kt_vload(const T* p, T* v)
{
    // 16-byte loads when the address allows, else element by element
    if ((sizeof(T) * N) % 16 == 0 && (reinterpret_cast<unsigned long long>(p) & 15ull) == 0ull) {
#pragma unroll
        for (int k = 0; k < (int)(sizeof(T) * N / 16); ++k)
            reinterpret_cast<uint4*>(v)[k] = reinterpret_cast<const uint4*>(p)[k];
    } else if (sizeof(T) * N == 8 && (reinterpret_cast<unsigned long long>(p) & 7ull) == 0ull) {
        *reinterpret_cast<uint2*>(v) = *reinterpret_cast<const uint2*>(p);
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) v[k] = p[k];
    }
}
template <int N, typename T>
__device__ __forceinline__ void kt_vstore(T* p, const T* v)
{
    if ((sizeof(T) * N) % 16 == 0 && (reinterpret_cast<unsigned long long>(p) & 15ull) == 0ull) {
#pragma unroll
        for (int k = 0; k < (int)(sizeof(T) * N / 16); ++k)
            reinterpret_cast<uint4*>(p)[k] = reinterpret_cast<const uint4*>(v)[k];
    } else if (sizeof(T) * N == 8 && (reinterpret_cast<unsigned long long>(p) & 7ull) == 0ull) {
        *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(v);
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) p[k] = v[k];
    }
}"""


def pointee_type(st: RewriteState, fn, name: str) -> str | None:
    """The element type of pointer ``name`` (OpenCL needs it spelled out)."""
    for n in walk(fn):
        if n.type in ("parameter_declaration", "declaration"):
            for d in walk(n):
                if d.type == "pointer_declarator":
                    inner = d.child_by_field_name("declarator")
                    while inner is not None and inner.type not in ("identifier",):
                        inner = inner.child_by_field_name("declarator")
                    if inner is not None and st.text(inner) == name:
                        t = n.child_by_field_name("type")
                        return st.text(t) if t is not None else None
    return None


def _times_literal(st: RewriteState, node):
    """The literal K of ``X * K``."""
    n = unwrap(node)
    if n is not None and n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) == "*":
        k = unwrap(n.child_by_field_name("right"))
        return k if int_literal(st, k) is not None else None
    return None


def baked_vec_literals(st: RewriteState, fn) -> list:
    """The numbers K of a VEC an earlier round baked in ``fn``, in the loops this rule wrote (known by
    their names): ``kt_i0 = (tid) * K``, ``kt_i0 += (block) * K``, ``kt_i0 + K <= bound``, ``kt_v < K``,
    and CUDA's ``kt_vec<T, K>``, ``kt_vload<K>``, ``kt_vstore<K>`` (the arrays' sizes are left alone
    already: a rule's own arrays). They are the elements per step, not the block's: a later round's
    launch-config leaves them alone (a 1-D block of 4 beside VEC = 4 once made the loops over the
    kt_v_ arrays of 4 run to the block size, and a block of 8 beside VEC = 4, half of it, made
    launch-config decline)."""
    out = []
    for loop in walk(fn):
        if loop.type != "for_statement":
            continue
        init = loop.child_by_field_name("initializer")
        d = init.child_by_field_name("declarator") if init is not None and init.type == "declaration" else None
        if d is None or d.type != "init_declarator" or st.text(d.child_by_field_name("declarator")) != "kt_i0":
            continue
        upd = unwrap(loop.child_by_field_name("update"))
        k0 = _times_literal(st, d.child_by_field_name("value"))
        k1 = _times_literal(st, upd.child_by_field_name("right")) if upd is not None and \
            upd.type == "assignment_expression" and st.text(upd.child_by_field_name("operator")) == "+=" else None
        if k0 is None or k1 is None or int_literal(st, k0) != int_literal(st, k1):
            continue
        k = int_literal(st, k0)
        found = [k0, k1]
        for n in walk(loop.child_by_field_name("body")):
            if n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) in ("+", "<"):
                left, right = unwrap(n.child_by_field_name("left")), unwrap(n.child_by_field_name("right"))
                if left is not None and st.text(left) == ("kt_i0" if st.text(n.child_by_field_name("operator")) == "+"
                                                          else "kt_v") and int_literal(st, right) == k:
                    found.append(right)
            elif n.type == "template_function" or n.type == "template_type":
                name = n.child_by_field_name("name")
                if name is not None and st.text(name) in ("kt_vec", "kt_vload", "kt_vstore"):
                    args = n.child_by_field_name("arguments")
                    found += [a for a in walk(args) if a.type == "number_literal" and int_literal(st, a) == k]
        out += found
    return out


class Vectorize(Rule):
    name = "vectorize"
    summary = "VEC consecutive elements per thread in block-strided loops, with 16-byte loads and stores (CUDA)"

    def check(self, st: RewriteState) -> str:
        loops, reasons = _strided_loops(st)
        if loops:
            return ""
        return reasons[0] if reasons else "no block-strided loop (for (i = threadIdx.x; i < n; i += blockDim.x))"

    def apply(self, st: RewriteState) -> Applied:
        loops, _ = _strided_loops(st)
        edits = []
        for fn, loop, var, bound, body in loops:
            (streams, other_uses), _ = _accesses(st, body, var)
            ind = line_indent(st, loop)
            tid, bdim = loop_share(st, fn, loop) or (builtin_x(st, "thread"), builtin_x(st, "block_dim"))
            vtype = st.text(loop.child_by_field_name("initializer").child_by_field_name("type"))
            # rewrite each p[base + var] -> kt_v_p[kt_v] inside the body (by byte ranges)
            b0 = body.start_byte
            buf = ".v" if st.lang == "cuda" else ""
            sub_edits = [Edit(n.start_byte - b0, n.end_byte - b0, f"{s.name}{buf}[kt_v]") for s in streams for n in s.nodes]
            sub_edits += [Edit(a.start_byte - b0, a.end_byte - b0, text) for s in streams for ptr, idx in s.calls
                          for a, text in ((ptr, s.name + buf), (idx, "kt_v"))]
            vec_body = apply_edits(st.raw[body.start_byte:body.end_byte], sub_edits)
            if other_uses:       # the index itself is still needed (a position, a guard): define it per element
                vec_body = "{ const " + vtype + " " + var + " = kt_i0 + kt_v; " + vec_body + " }"
            lines = [f"for ({vtype} kt_i0 = ({tid}) * KT_VEC; kt_i0 < {bound}; kt_i0 += ({bdim}) * KT_VEC) {{",
                     f"    if (kt_i0 + KT_VEC <= {bound}) {{"]
            for s in streams:
                if st.lang == "cuda":
                    lines.append(f"        kt_vec<typename kt_elem<decltype({s.array}[0])>::type, KT_VEC> {s.name};")
                else:
                    t = pointee_type(st, fn, s.array)
                    if t is None:
                        raise RuleDeclined(f"cannot tell the element type of {s.array}")
                    lines.append(f"        {t} {s.name}[KT_VEC];")
            for s in streams:
                if s.read or s.cond_write:
                    if st.lang == "cuda":
                        lines.append(f"        kt_vload<KT_VEC>({s.address('kt_i0')}, {s.name}.v);")
                    else:
                        lines.append(f"        for (int kt_v = 0; kt_v < KT_VEC; ++kt_v) {s.name}[kt_v] = "
                                     f"{s.element('kt_i0 + kt_v')};")
            lines += ["#pragma unroll", "        for (int kt_v = 0; kt_v < KT_VEC; ++kt_v)",
                      "            " + vec_body]
            for s in streams:
                if s.write:
                    if st.lang == "cuda":
                        lines.append(f"        kt_vstore<KT_VEC>({s.address('kt_i0')}, {s.name}.v);")
                    else:
                        lines.append(f"        for (int kt_v = 0; kt_v < KT_VEC; ++kt_v) {s.element('kt_i0 + kt_v')} = "
                                     f"{s.name}[kt_v];")
            lines += ["    } else {", "        " + GENERATED, f"        for ({vtype} {var} = kt_i0; {var} < {bound}; ++{var})",
                      "            " + st.text(body), "    }", "}"]
            start = pragma_start(st, loop)         # the loop's unroll pragma goes with it into #else
            lead = indent_before(st, start)
            new = ("\n#if KT_VEC > 1\n" + "\n".join(ind + ln if not ln.startswith("#") else ln for ln in lines) +
                   "\n#else\n" + lead + st.raw[start:loop.end_byte].decode() + "\n#endif\n" + lead)
            edits.append(Edit(start, loop.end_byte, new))
        st.source = apply_edits(st.raw, edits)
        if st.lang == "cuda":
            st.prelude.append(guarded("VEC_HELPERS", CUDA_VEC))
        st.add_param(Param("VEC", (1, 2, 4, 8), "#define KT_VEC {{ VEC }}",
                           why="elements per thread per step; 16-byte accesses when VEC x element size is 16"))
        return Applied(self.name, f"{len(loops)} block-strided loop(s) take VEC consecutive elements per thread",
                       ("VEC",))
