"""The `privatize-atomics` rule: additive atomics into a small global array count into a per-block
shared/local copy first, each non-zero entry added to the global array once."""

from __future__ import annotations

from kerntune.agents.rules.base import (
    Applied, Edit, Param, RewriteState, Rule, RuleDeclined, apply_edits, unwrap, why_not,
)
from kerntune.agents.rules.generic import GENERATED
from kerntune.source.parse import walk


ATOMICS = {"cuda": {"atomicAdd": "add"}, "opencl": {"atomic_add": "add", "atomic_inc": "inc", "atom_add": "add",
                                                    "atom_inc": "inc"}}
PRIVATE_LIMIT = 4096           # elements of a privatized copy (16 KB of 32-bit counters)


def _atomic_targets(st: RewriteState):
    """(kernel, {array: [(call, subscript)]}, why) for additive atomics on kernel parameters."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        return None, {}, f"no kernel named {st.kernel}"
    body = kernel.node.child_by_field_name("body")
    found: dict[str, list] = {}
    for n in walk(body):
        if n.type != "call_expression":
            continue
        fname = st.text(n.child_by_field_name("function"))
        if fname not in ATOMICS[st.lang]:
            continue
        args = n.child_by_field_name("arguments").named_children
        target = unwrap(args[0]) if args else None
        if target is None or target.type != "pointer_expression":
            continue
        sub = unwrap(target.named_children[0]) if target.named_children else None
        if sub is None or sub.type != "subscript_expression":
            continue
        arr = sub.child_by_field_name("argument")
        if arr is not None and arr.type == "identifier":
            found.setdefault(st.text(arr), []).append((n, sub))
    return kernel, found, "" if found else "no atomic add on a global array"


class PrivatizeAtomics(Rule):
    name = "privatize-atomics"
    summary = "atomic adds into a small global array go to a per-block shared (local) copy first, as a parameter"

    def _plan(self, st: RewriteState):
        kernel, found, why = _atomic_targets(st)
        if not found:
            raise RuleDeclined(why)
        if any(n.type == "return_statement" for n in walk(kernel.node.child_by_field_name("body"))):
            raise RuleDeclined("the kernel returns early: not every thread would reach the merge")
        block = list(st.launch.block)
        if len(block) > 1 and any(str(b) != "1" for b in block[1:]):
            raise RuleDeclined("the block is not one-dimensional")
        names = [p.name for p in kernel.params]
        plans = []
        for array, uses in found.items():
            if array not in names or names.index(array) >= len(st.spec.args):
                continue
            arg = st.spec.args[names.index(array)]
            dims = [int(d) if isinstance(d, int) or str(d).isdigit() else None for d in (arg.shape or [])]
            if not dims or None in dims:
                continue
            size = 1
            for d in dims:
                size *= d
            if size > PRIVATE_LIMIT or arg.dtype not in ("int32", "uint32", "fp32"):
                continue
            # the array must be touched only through these atomics
            other = [n for n in walk(kernel.node.child_by_field_name("body"))
                     if n.type == "identifier" and st.text(n) == array
                     and not any(sub.start_byte <= n.start_byte < sub.end_byte for _, sub in uses)]
            if other:
                continue
            if st.has_macro(f"kt_priv_{array}"):
                raise RuleDeclined(f"the atomics on {array} are privatized already (an earlier round's rewrite)")
            plans.append((array, uses, size, arg.dt.ctype(st.lang)))
        if not plans:
            raise RuleDeclined("the atomics target no small array of constant size used only through atomics")
        return kernel, plans

    def check(self, st: RewriteState) -> str:
        return why_not(self._plan, st)

    def apply(self, st: RewriteState) -> Applied:
        kernel, plans = self._plan(st)
        body = kernel.node.child_by_field_name("body")
        cuda = st.lang == "cuda"
        tid, bdim = ("threadIdx.x", "blockDim.x") if cuda else ("get_local_id(0)", "get_local_size(0)")
        barrier = "__syncthreads();" if cuda else "barrier(CLK_LOCAL_MEM_FENCE);"
        space = "__shared__" if cuda else "__local"
        merge_fn = "atomicAdd" if cuda else "atomic_add"
        edits = []
        head, tail = [], []
        for array, uses, size, ctype in plans:
            priv = f"kt_priv_{array}"
            # the loops count the copy's size from the declaration: a literal there could be taken for
            # the block size by a later round's launch-config
            n = f"(int)(sizeof({priv}) / sizeof({priv}[0]))"
            head += [f"    {space} {ctype} {priv}[{size}];", f"    {GENERATED}",
                     f"    for (int kt_b = {tid}; kt_b < {n}; kt_b += {bdim}) {priv}[kt_b] = 0;",
                     f"    {barrier}"]
            tail += [f"    {barrier}", f"    {GENERATED}",
                     f"    for (int kt_b = {tid}; kt_b < {n}; kt_b += {bdim})",
                     f"        if ({priv}[kt_b] != 0) {merge_fn}(&{array}[kt_b], {priv}[kt_b]);"]
            for _, sub in uses:
                arr = sub.child_by_field_name("argument")
                edits.append(Edit(arr.start_byte, arr.end_byte, f"KT_ATOMICS_{array}"))
            st.add_param(Param("PRIVATE", (False, True), "#define KT_PRIVATE {{ 1 if PRIVATE else 0 }}",
                               why=f"{array}[{size}] ({ctype}) counted per block, merged once per element"))
        macros = "\n".join(f"#if KT_PRIVATE\n#define KT_ATOMICS_{a} kt_priv_{a}\n#else\n#define KT_ATOMICS_{a} {a}\n#endif"
                           for a, *_ in plans)
        open_brace = body.start_byte + 1
        close_brace = body.end_byte - 1
        edits.append(Edit(open_brace, open_brace, "\n#if KT_PRIVATE\n" + "\n".join(head) + "\n#endif"))
        edits.append(Edit(close_brace, close_brace, "#if KT_PRIVATE\n" + "\n".join(tail) + "\n#endif\n"))
        st.source = apply_edits(st.raw, edits)
        st.prelude.append(macros)
        return Applied(self.name, ", ".join(f"atomics on {a}[{n}] privatized per block" for a, _, n, _ in plans),
                       ("PRIVATE",))
