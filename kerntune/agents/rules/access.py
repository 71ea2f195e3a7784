"""What the row and loop rules need to know about a kernel's code: the flat
thread index, affine array indices (``base + i``), canonical counted loops,
and which arrays a piece of code reads and writes, at which index.

Everything here reads the tree-sitter parse of a :class:`RewriteState`; text
comparisons are made on whitespace-free text, so two spellings of one index
count as different (the rules that use them then decline: conservative)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kerntune.agents.rules.base import RewriteState, RuleDeclined, builtin_dim, int_literal, unwrap
from kerntune.source import calls
from kerntune.source.parse import walk

LOOPS = ("for_statement", "while_statement", "do_statement")
BARRIER_CALLS = {"__syncthreads", "__syncwarp", "barrier", "work_group_barrier", "sub_group_barrier",
                 "mem_fence", "__threadfence", "__threadfence_block"}
ATOMIC_PREFIXES = ("atomic", "atom_")
INDEX_BUILTINS = ("thread", "block", "block_dim", "global", "grid_dim")
_OPENCL_INDEX_CALLS = {"get_global_id", "get_local_id", "get_group_id", "get_local_size", "get_global_size",
                       "get_num_groups", "get_global_offset", "get_sub_group_id", "get_sub_group_local_id",
                       "get_sub_group_size", "get_num_sub_groups", "get_enqueued_local_size"}
_CUDA_INDEX_VARS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}


def reindent(text: str, indent: str) -> str:
    """``text`` (whole lines) with its common indentation replaced by ``indent``; preprocessor
    directives stay in the first column."""
    lines = text.split("\n")
    code = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    common = min((len(ln) - len(ln.lstrip()) for ln in code), default=0)
    out = []
    for ln in lines:
        if not ln.strip():
            out.append("")
        elif ln.lstrip().startswith("#"):
            out.append(ln.lstrip())
        else:
            out.append(indent + ln[common:])
    return "\n".join(out)


_SPACES = re.compile(rb"\b(__global|global|__local|local|__constant|constant|__private|private|__kernel|kernel)\b")
_SPACE_AT_END = re.compile(_SPACES.pattern + rb"\Z")


def statement_start(raw: bytes, offset: int) -> int:
    """Where the statement whose node starts at ``offset`` starts, the OpenCL address spaces written
    directly in front of it (which the parser sees blanked out) included."""
    while (m := _SPACE_AT_END.search(raw[:offset].rstrip())) is not None:
        offset = m.start()
    return offset


def line_start(raw: bytes, offset: int) -> int:
    """Where the line of ``offset`` starts when only whitespace precedes it there, else ``offset``. An
    OpenCL address space in front counts as part of the statement (the parser sees it blanked out,
    so a declaration's node starts after it)."""
    ls = raw.rfind(b"\n", 0, offset) + 1
    return ls if not _SPACES.sub(b"", raw[ls:offset]).strip() else offset


def is_kt_conditional(st: RewriteState, node) -> bool:
    """An ``#if`` whose condition tests only rule parameters (KT_* macros): a rule's choice between
    two versions of the same code."""
    if node is None or node.type != "preproc_if":
        return False
    cond = node.child_by_field_name("condition")
    names = identifiers(st, cond) if cond is not None else set()
    if cond is not None and cond.type == "identifier":
        names = {st.text(cond)}
    return bool(names) and all(n.startswith("KT_") for n in names)


def foreign_conditionals(st: RewriteState, node) -> bool:
    """Preprocessor conditionals in ``node`` other than a rule's KT_* choices."""
    return any((n.type == "preproc_if" and not is_kt_conditional(st, n)) or n.type == "preproc_ifdef"
               for n in walk(node))


def row_statements(st: RewriteState, stmts: list, flatten: bool = True) -> list:
    """``stmts`` with comments dropped and, when ``flatten``, the statements of both branches of a
    rule's ``#if KT_...`` in place of it (each branch is straight-line code of its own)."""
    out = []
    for s in stmts:
        if s.type == "comment":
            continue
        if flatten and is_kt_conditional(st, s):
            inner = [c for c in s.named_children if c is not s.child_by_field_name("condition")]
            for c in inner:
                if c.type in ("preproc_else", "preproc_elif"):
                    out += row_statements(st, [x for x in c.named_children
                                               if x is not c.child_by_field_name("condition")])
                else:
                    out += row_statements(st, [c])
            continue
        out.append(s)
    return out


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def call_name(st: RewriteState, node) -> str:
    if node is None or node.type != "call_expression":
        return ""
    f = node.child_by_field_name("function")
    return st.text(f) if f is not None and f.type == "identifier" else ""


def reads_thread_index(st: RewriteState, node) -> bool:
    """Whether ``node`` mentions any thread, group or size builtin."""
    for n in walk(node):
        if st.lang == "opencl" and n.type == "call_expression" and call_name(st, n) in _OPENCL_INDEX_CALLS:
            return True
        if st.lang == "cuda" and n.type == "identifier" and st.text(n) in _CUDA_INDEX_VARS:
            return True
    return False


def independent_kernel(st: RewriteState, unlike: str, any_preproc_if: bool = False):
    """(kernel, body) of the spec's kernel when its threads run independently (no barrier or atomic,
    no preprocessor conditional of its own; with ``any_preproc_if`` none at all) on a 1-D launch;
    otherwise the rule declines (``unlike``: what such a kernel is not)."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        raise RuleDeclined(f"no kernel named {st.kernel}")
    body = kernel.node.child_by_field_name("body")
    if synchronizes(st, body):
        raise RuleDeclined(f"the kernel synchronizes or uses atomics: {unlike}")
    if foreign_conditionals(st, body) or (any_preproc_if and any(n.type == "preproc_if" for n in walk(body))):
        raise RuleDeclined("the kernel body has preprocessor conditionals")
    if any(str(b) != "1" for b in st.launch.block[1:]) or any(str(g) != "1" for g in st.launch.grid[1:]):
        raise RuleDeclined("the launch is not one-dimensional")
    return kernel, body


_JUMPS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_LOOPS = ("for_statement", "while_statement", "do_statement")


def every_trip(st: RewriteState, node, body) -> bool:
    """Whether each trip of the loop whose body is ``body`` evaluates ``node``: not in a branch (an if's
    arms, a conditional expression's arms, the right side of && or ||, a switch's cases), not in a
    loop nested in the body, and after no jump of the body. An access that only some trips make may
    be guarded by its condition (``if (r < rows) ... scale[r]``): a rewrite that makes it on every
    trip (before the loop, or for a whole vector of elements) reads or writes memory the original
    never touches, past an array's end for the threads the branch leaves out."""
    if any(n.type in _JUMPS and n.start_byte < node.start_byte for n in walk(body)):
        return False
    child, n = node, node.parent
    while n is not None and n.id != body.id:
        condition = n.child_by_field_name("condition") if n.type in ("if_statement", "conditional_expression",
                                                                      "switch_statement") else None
        if n.type in ("if_statement", "conditional_expression", "switch_statement") and \
                (condition is None or child.id != condition.id):
            return False
        if n.type in ("case_statement", *_LOOPS):
            return False
        if n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) in ("&&", "||") and \
                child.id == getattr(n.child_by_field_name("right"), "id", None):
            return False
        child, n = n, n.parent
    return n is not None


def synchronizes(st: RewriteState, node) -> bool:
    return any(n.type == "call_expression" and (call_name(st, n) in BARRIER_CALLS or
                                                 call_name(st, n).startswith(ATOMIC_PREFIXES))
               for n in walk(node))


def is_flat_index(st: RewriteState, value) -> bool:
    """The x axis's global work-item index: ``get_global_id(0)``, or group * size + local in either
    language and either order (casts allowed)."""
    v = unwrap(value)
    if v is None:
        return False
    if builtin_dim(st, v, "global") == "x":
        return True
    if v.type != "binary_expression" or st.text(v.child_by_field_name("operator")) != "+":
        return False
    parts = [unwrap(v.child_by_field_name("left")), unwrap(v.child_by_field_name("right"))]
    thread = [p for p in parts if builtin_dim(st, p, "thread") == "x"]
    prod = [p for p in parts if p is not None and p.type == "binary_expression"
            and st.text(p.child_by_field_name("operator")) == "*"]
    if len(thread) != 1 or len(prod) != 1:
        return False
    kinds = sorted(str(k) for k in (
        "block" if builtin_dim(st, prod[0].child_by_field_name(side), "block") == "x" else
        "dim" if builtin_dim(st, prod[0].child_by_field_name(side), "block_dim") == "x" else None
        for side in ("left", "right")))
    return kinds == ["block", "dim"]


def identifiers(st: RewriteState, node) -> set[str]:
    return {st.text(n) for n in walk(node) if n.type == "identifier"}


def sum_terms(st: RewriteState, node, sign: str = "+") -> list[tuple[str, object]]:
    """``a + b - c`` as [('+', a), ('+', b), ('-', c)] (parentheses looked through)."""
    n = node
    while n is not None and n.type == "parenthesized_expression" and n.named_children:
        n = n.named_children[0]
    if n is not None and n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) in "+-":
        op = st.text(n.child_by_field_name("operator"))
        right_sign = sign if op == "+" else ("-" if sign == "+" else "+")
        return sum_terms(st, n.child_by_field_name("left"), sign) + \
            sum_terms(st, n.child_by_field_name("right"), right_sign)
    return [(sign, n)]


def affine_base(st: RewriteState, index, var: str, invariant: set[str] | None = None) -> str | None:
    """When ``index`` is ``base + var`` (terms in any order, ``var`` once with coefficient 1, possibly
    cast to a wider integer), the base's text ('' when the index is ``var`` alone); else None. With
    ``invariant``, every identifier of the base must be in it (names the loop does not assign)."""
    terms = sum_terms(st, index)
    hits = [(s, t) for s, t in terms if var in identifiers(st, t)]
    if len(hits) != 1:
        return None
    sign, term = hits[0]
    u = unwrap(term)
    if sign != "+" or u is None or u.type != "identifier" or st.text(u) != var:
        return None
    rest = [(s, t) for s, t in terms if t is not term]
    for _, t in rest:
        if any(n.type in ("call_expression", "subscript_expression", "assignment_expression", "update_expression",
                          "pointer_expression") for n in walk(t)):
            return None
        if invariant is not None and not identifiers(st, t) <= invariant:
            return None
    out = ""
    for s, t in rest:
        text = "(" + st.text(t) + ")"
        out = (out + " " + s + " " + text) if out else (text if s == "+" else "-" + text)
    return out


@dataclass
class CountedLoop:
    """``for (T v = start; v < bound; ++v)`` (also ``v++``, ``v += 1``, ``v = v + 1``)."""

    node: object
    var: str
    vtype: str
    start: object
    bound: object
    body: object


def _loop_head(st: RewriteState, loop):
    """(initializer, update, v, start, bound) of ``for (T v = start; v < bound; update)`` with v in
    neither start nor bound; None for any other loop."""
    if loop.type != "for_statement":
        return None
    init, cond, upd = (loop.child_by_field_name(k) for k in ("initializer", "condition", "update"))
    if init is None or cond is None or upd is None or init.type != "declaration":
        return None
    decls = [d for d in init.named_children if d.type == "init_declarator"]
    if len(decls) != 1 or decls[0].child_by_field_name("declarator").type != "identifier":
        return None
    var = st.text(decls[0].child_by_field_name("declarator"))
    start = decls[0].child_by_field_name("value")
    c = unwrap(cond)
    if c is None or c.type != "binary_expression" or st.text(c.child_by_field_name("operator")) != "<" or \
            st.text(unwrap(c.child_by_field_name("left"))) != var:
        return None
    bound = c.child_by_field_name("right")
    if var in identifiers(st, bound) or var in identifiers(st, start):
        return None
    return init, upd, var, start, bound


def counted_loop(st: RewriteState, loop) -> CountedLoop | None:
    head = _loop_head(st, loop)
    if head is None:
        return None
    init, upd, var, start, bound = head
    u = unwrap(upd)
    step_one = False
    if u.type == "update_expression" and st.text(u.child_by_field_name("operator")) == "++" and \
            st.text(u.child_by_field_name("argument")) == var:
        step_one = True
    elif u.type == "assignment_expression" and st.text(u.child_by_field_name("left")) == var:
        op, right = st.text(u.child_by_field_name("operator")), unwrap(u.child_by_field_name("right"))
        if op == "+=" and int_literal(st, right) == 1:
            step_one = True
        elif op == "=" and right is not None and right.type == "binary_expression" and \
                st.text(right.child_by_field_name("operator")) == "+":
            a, b = unwrap(right.child_by_field_name("left")), unwrap(right.child_by_field_name("right"))
            step_one = (st.text(a) == var and int_literal(st, b) == 1) or (st.text(b) == var and int_literal(st, a) == 1)
    if not step_one:
        return None
    vtype = st.text(init.child_by_field_name("type"))
    quals = [st.text(q) for q in init.children if q.type == "type_qualifier" and st.text(q) != "const"]
    return CountedLoop(loop, var, " ".join([*quals, vtype]), start, bound, loop.child_by_field_name("body"))


def any_loop(st: RewriteState, loop) -> CountedLoop | None:
    """``for (T v = start; v < bound; <any update of v>)``: a counted loop of any step (the step is
    compared as text, with v written as @, by :func:`loop_step`)."""
    head = _loop_head(st, loop)
    if head is None:
        return None
    init, _, var, start, bound = head
    vtype = st.text(init.child_by_field_name("type"))
    return CountedLoop(loop, var, vtype, start, bound, loop.child_by_field_name("body"))


def loop_step(st: RewriteState, cl: CountedLoop) -> str:
    upd = cl.node.child_by_field_name("update")
    return re.sub(r"\b" + re.escape(cl.var) + r"\b", "@", squash(st.text(upd)))


def assignment_target(n):
    """What an assignment (=, op=) or an update (++, --) writes, parentheses and casts stripped; None for
    any other node."""
    if n.type == "assignment_expression":
        return unwrap(n.child_by_field_name("left"))
    if n.type == "update_expression":
        return unwrap(n.child_by_field_name("argument"))
    return None


def assigned_names(st: RewriteState, node) -> dict[str, list]:
    """Plain variables assigned in ``node`` (=, op=, ++, --): name -> the assignment nodes."""
    out: dict[str, list] = {}
    for n in walk(node):
        target = assignment_target(n)
        if target is not None and target.type == "identifier":
            out.setdefault(st.text(target), []).append(n)
    return out


def declared_names(st: RewriteState, node) -> set[str]:
    out = set()
    for n in walk(node):
        if n.type == "declaration":
            for d in n.named_children:
                d0 = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                while d0 is not None and d0.type not in ("identifier",):
                    d0 = d0.child_by_field_name("declarator")
                if d0 is not None:
                    out.add(st.text(d0))
    return out


@dataclass
class Access:
    array: str             # the pointer parameter (a local pointer is resolved to the parameter it points into)
    via: str               # the name written in the code
    offset: str            # the local pointer's offset ('' for a parameter)
    index: object          # the index node
    write: bool
    read: bool
    node: object


@dataclass
class Pointers:
    """Local pointers into parameters: ``T* p = param + e`` / ``&param[e]`` (never reassigned)."""

    params: set[str]
    local: dict[str, tuple[str, str]] = field(default_factory=dict)   # name -> (parameter, offset text)
    unknown: set[str] = field(default_factory=set)                     # pointers we cannot resolve

    def resolve(self, name: str) -> tuple[str, str] | None:
        if name in self.params:
            return name, ""
        return self.local.get(name)


def parameter_list(fn) -> list:
    """The named children of a function definition's parameter list ([] when it has none)."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    return list(params.named_children) if params is not None else []


def pointer_params(st: RewriteState, fn) -> list[str]:
    out = []
    for p in parameter_list(fn):
        pd = p.child_by_field_name("declarator")
        if pd is not None and pd.type == "pointer_declarator":
            inner = pd
            while inner is not None and inner.type != "identifier":
                inner = inner.child_by_field_name("declarator")
            if inner is not None:
                out.append(st.text(inner))
    return out


def local_pointers(st: RewriteState, fn) -> Pointers:
    ptrs = Pointers(set(pointer_params(st, fn)))
    assigned = assigned_names(st, fn)
    for n in walk(fn.child_by_field_name("body")):
        if n.type != "init_declarator" or n.child_by_field_name("declarator").type != "pointer_declarator":
            continue
        inner = n.child_by_field_name("declarator")
        while inner is not None and inner.type != "identifier":
            inner = inner.child_by_field_name("declarator")
        name = st.text(inner) if inner is not None else ""
        value = unwrap(n.child_by_field_name("value"))
        root = None
        if value is not None and value.type == "pointer_expression" and st.text(value).startswith("&"):
            sub = unwrap(value.named_children[0]) if value.named_children else None
            if sub is not None and sub.type == "subscript_expression":
                arr = sub.child_by_field_name("argument")
                idx = sub.child_by_field_name("indices")
                if arr is not None and arr.type == "identifier" and idx is not None and len(idx.named_children) == 1:
                    root = (st.text(arr), st.text(idx.named_children[0]))
        elif value is not None:
            terms = sum_terms(st, value)
            ptr_terms = [t for s, t in terms if unwrap(t) is not None and unwrap(t).type == "identifier"
                         and (st.text(unwrap(t)) in ptrs.params or st.text(unwrap(t)) in ptrs.local)]
            if len(ptr_terms) == 1 and all(s == "+" for s, t in terms):
                rest = [t for s, t in terms if t is not ptr_terms[0]]
                root = (st.text(unwrap(ptr_terms[0])), " + ".join("(" + st.text(t) + ")" for t in rest))
        if root is None or name in assigned:
            ptrs.unknown.add(name)
            continue
        base = ptrs.resolve(root[0])
        if base is None:
            ptrs.unknown.add(name)
            continue
        offset = " + ".join(x for x in (base[1], root[1]) if x)
        ptrs.local[name] = (base[0], offset)
    return ptrs


@dataclass(frozen=True)
class Accessor:
    """A function of the file that touches memory only as ``p[i]`` for its one pointer parameter ``p``
    and an integer parameter ``i`` (``load_value(p, i)``, ``store_value(p, i, x)``): a call is the
    access ``P[I]`` of its arguments at those positions."""

    pointer: int
    index: int
    read: bool
    write: bool


def _accessor(st: RewriteState, fn) -> Accessor | None:
    names, pointers = [], []
    for k, p in enumerate(c for c in parameter_list(fn) if c.type == "parameter_declaration"):
        pd = p.child_by_field_name("declarator")
        inner = pd
        while inner is not None and inner.type != "identifier":
            inner = inner.child_by_field_name("declarator")
        if inner is None or (pd is not None and pd.type == "reference_declarator"):
            return None             # an unnamed or a reference parameter: not a plain accessor
        names.append(st.text(inner))
        if pd is not None and pd.type == "pointer_declarator":
            pointers.append(k)
    body = fn.child_by_field_name("body")
    if len(pointers) != 1 or body is None:
        return None
    ptr = names[pointers[0]]
    if ptr in assigned_names(st, body):
        return None
    index, read, write = None, False, False
    for n in walk(body):
        if n.type == "pointer_expression":
            return None
        if n.type == "identifier" and st.text(n) == ptr:
            sub = n.parent
            if sub is None or sub.type != "subscript_expression" or sub.child_by_field_name("argument") != n:
                return None
            idx = sub.child_by_field_name("indices")
            at = unwrap(idx.named_children[0]) if idx is not None and len(idx.named_children) == 1 else None
            if at is None or at.type != "identifier" or st.text(at) not in names or \
                    (index is not None and names.index(st.text(at)) != index):
                return None
            index = names.index(st.text(at))
            up = sub.parent
            if up is not None and up.type == "assignment_expression" and up.child_by_field_name("left") == sub:
                write = True
                read = read or st.text(up.child_by_field_name("operator")) != "="
            elif up is not None and up.type == "update_expression":
                read = write = True
            else:
                read = True
    if index is None or names[index] in assigned_names(st, body):
        return None
    return Accessor(pointers[0], index, read, write)


def accessor_functions(st: RewriteState) -> dict[str, Accessor]:
    """The file's accessor functions by name; every definition of the name (overloads for each element
    type) must be one, alike."""
    found: dict[str, set] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type == "function_definition":
            name = calls.function_name(n, st.raw)
            if name:
                found.setdefault(name, set()).add(_accessor(st, n))
    return {k: next(iter(v)) for k, v in found.items() if len(v) == 1 and None not in v}


def accessor_call(st: RewriteState, node, accessors: dict[str, Accessor]):
    """(accessor, pointer argument, index argument) when ``node`` is a call of an accessor function."""
    if node is None or node.type != "call_expression" or not accessors:
        return None
    f = node.child_by_field_name("function")
    acc = accessors.get(st.text(f)) if f is not None and f.type == "identifier" else None
    args = node.child_by_field_name("arguments")
    if acc is None or args is None or len(args.named_children) <= max(acc.pointer, acc.index):
        return None
    return acc, args.named_children[acc.pointer], args.named_children[acc.index]


def accesses(st: RewriteState, node, ptrs: Pointers,
             accessors: dict[str, Accessor] | None = None) -> tuple[list[Access], str]:
    """Every array access in ``node`` (subscripts of parameters and local pointers into them, and, with
    ``accessors``, calls of those with a pointer), and why they cannot be analyzed ('' when they can):
    a dereference, a pointer passed to another function, a pointer we cannot resolve."""
    out: list[Access] = []
    for n in walk(node):
        if n.type == "pointer_expression" and st.text(n).lstrip().startswith("*"):
            return out, f"the code dereferences a pointer ({st.text(n)[:40]})"
        if n.type == "identifier" and (st.text(n) in ptrs.params or st.text(n) in ptrs.local
                                       or st.text(n) in ptrs.unknown):
            parent = n.parent
            call = accessor_call(st, parent.parent, accessors or {}) if parent is not None else None
            if call is not None and call[1] == n:
                root = ptrs.resolve(st.text(n))
                if root is None:
                    return out, f"cannot tell which array the pointer {st.text(n)} points into"
                acc = call[0]
                out.append(Access(root[0], st.text(n), root[1], call[2], acc.write, acc.read, parent.parent))
                continue
            if parent is not None and parent.type == "subscript_expression" and \
                    parent.child_by_field_name("argument") == n:
                continue
            if parent is not None and parent.type in ("init_declarator", "pointer_declarator", "array_declarator"):
                continue
            if parent is not None and parent.type in ("binary_expression",) and \
                    parent.parent is not None and parent.parent.type == "init_declarator":
                continue            # a local pointer's definition (p = x + r * cols)
            if parent is not None and parent.type == "parenthesized_expression":
                continue
            return out, f"the pointer {st.text(n)} is used other than by subscript ({st.text(parent)[:50]})"
        if n.type != "subscript_expression":
            continue
        arr = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices")
        if arr is None or arr.type != "identifier" or idx is None or len(idx.named_children) != 1:
            continue
        name = st.text(arr)
        if n.parent is not None and n.parent.type == "pointer_expression" and st.text(n.parent).startswith("&"):
            continue                 # an address (&x[e]), not an access
        root = ptrs.resolve(name)
        if root is None:
            if name in ptrs.unknown:
                return out, f"cannot tell which array the pointer {name} points into"
            continue                 # a private array
        parent = n.parent
        write = parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("left") == n
        update = parent is not None and parent.type == "update_expression"
        read = not write or st.text(parent.child_by_field_name("operator")) != "="
        out.append(Access(root[0], name, root[1], idx.named_children[0], write or update, read or update, n))
    return out, ""
