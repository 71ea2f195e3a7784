"""Launch-configuration rules: the block size as a parameter, and
``__launch_bounds__`` as a parameter."""

from __future__ import annotations

import ast
import re

from kerntune.agents.rules.base import Applied, Edit, Param, Rule, RuleDeclined, RewriteState, apply_edits, marker
from kerntune.agents.rules.block_ties import find_ties
from kerntune.source.names import KernelNameError, parse_kernel_name
from kerntune.source.parse import walk
from kerntune.spec.model import LaunchSpec

BLOCK_CHOICES = (32, 64, 128, 256, 512, 1024)


def substitute_constant(expr_text, value: int, name: str):
    """Replace integer constants equal to ``value`` in a spec expression with ``name``; a number
    inside ``fixed(...)`` (a rule's parameter an earlier round baked, see kerntune.spec.expr) stays."""
    if isinstance(expr_text, int):
        return name if expr_text == value else expr_text
    tree = ast.parse(str(expr_text), mode="eval")

    class Sub(ast.NodeTransformer):
        def visit_Call(self, node):
            if isinstance(node.func, ast.Name) and node.func.id == "fixed":
                return node
            return self.generic_visit(node)

        def visit_Constant(self, node):
            if isinstance(node.value, int) and not isinstance(node.value, bool) and node.value == value:
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
            return node

    return ast.unparse(Sub().visit(tree))


def _literal_dims(launch: LaunchSpec) -> list[int] | None:
    dims = []
    for b in launch.block:
        if isinstance(b, int):
            dims.append(b)
        elif str(b).strip().isdigit():
            dims.append(int(str(b).strip()))
        else:
            return None
    return dims


def _tie_template_argument(st: RewriteState, dims: list[int], tunable: list[int], names: dict[int, str]) -> list[str]:
    """A templated kernel written for its block size (``template <int NUM_THREADS>`` with
    ``blockIdx.x * NUM_THREADS`` or ``__launch_bounds__(NUM_THREADS)``): the instantiation's
    argument becomes the block parameter, so kernel and launch change together."""
    try:
        kn = parse_kernel_name(st.kernel)
    except KernelNameError:
        return []
    k = next((k for k in st.parsed.kernels if k.name == st.kernel_fn and k.is_template), None)
    if kn.template_args is None or k is None:
        return []
    body = st.text(k.node)
    args, tied = list(kn.template_args), []
    for idx, (tp, a) in enumerate(zip(k.template_params, kn.template_args)):
        v = int_literal_text(a)
        hits = [i for i in tunable if v is not None and dims[i] == v]
        if tp.kind != "value" or not hits:
            continue
        name = re.escape(tp.name)
        if re.search(rf"__launch_bounds__\s*\(\s*{name}\b|blockIdx\.[xyz]\s*\*\s*{name}\b|\b{name}\s*\*\s*blockIdx"
                     rf"|\+=\s*{name}\s*\)", body):
            args[idx] = "{{ " + names[hits[0]] + " }}"
            tied.append(tp.name)
    if tied:
        st.kernel = f"{kn.qualified}<{', '.join(args)}>"
    return tied


def int_literal_text(text: str) -> int | None:
    try:
        return int(text.strip().rstrip("uUlL"), 0)
    except ValueError:
        return None


class LaunchConfig(Rule):
    name = "launch-config"
    summary = "threads per block as a parameter (the grid follows where it is written in terms of the block)"

    def check(self, st: RewriteState) -> str:
        dims = _literal_dims(st.launch)
        if dims is None:
            return "the spec's block size is an expression, not a number"
        if all(d == 1 for d in dims):
            return "the kernel runs single-thread blocks"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        dims = _literal_dims(st.launch)
        tunable = [i for i, d in enumerate(dims) if d > 1]
        square = len(tunable) == 2 and dims[tunable[0]] == dims[tunable[1]]
        if len(tunable) == 1 or square:   # a square block stays square: one parameter for both sides
            names = {i: "BLOCK" for i in tunable}
        else:
            names = {i: f"BLOCK_{'XYZ'[i]}" for i in tunable}
        # occurrences of the block size as a literal in the code (array sizes, loop bounds, launch
        # bounds) follow the parameter; numbers derived from it, local arrays that cannot follow it
        # and the like make the rule decline (see block_ties)
        ties = find_ties(st, dims, tunable, square)
        literals = ties.literals
        if ties.cooperative and str(st.launch.shared_mem).strip() not in ("0", "") and all(
                substitute_constant(st.launch.shared_mem, dims[i], "BLOCK") == st.launch.shared_mem for i in tunable):
            raise RuleDeclined(f"the kernel's dynamic shared memory ({st.launch.shared_mem}) is not written in terms "
                               "of the block size")
        edits = [Edit(n.start_byte, n.end_byte, f"KT_{names[i]}") for i in tunable for n in literals[i]]
        # macros whose whole value is the block size (#define THREADS 128)
        for n in walk(st.parsed.tree.root_node):
            if n.type == "preproc_def" and n.child_by_field_name("value") is not None:
                v = n.child_by_field_name("value")
                text = st.text(v).strip().rstrip("uU")
                hits = [i for i in tunable if text.isdigit() and int(text) == dims[i]]
                if hits:
                    literals[hits[0]].append(v)
                    edits.append(Edit(v.start_byte, v.end_byte, f" KT_{names[hits[0]]}"))
        if edits:
            st.source = apply_edits(st.raw, edits)
        limit = st.device_max_threads
        choices = {}
        for i in tunable:
            d = dims[i]
            if names[i] in st.params:
                continue
            if len(tunable) == 1:
                others = [v for v in BLOCK_CHOICES if v != d and v <= limit]
            elif square:
                others = [v for v in (4, 8, 16, 32) if v != d and v * v <= limit]
            else:
                others = [v for v in (d // 2, d * 2) if v >= 1 and v != d]
            if literals[i]:   # literal-sized code (shared arrays, unrolled trees): keep to powers of two
                others = [v for v in others if v & (v - 1) == 0]
            if ties.max_threads is not None:   # a fixed-size local array indexed by thread index
                others = [v for v in others if v <= ties.max_threads]
            others = [v for v in others if v >= ties.min_block.get(i, 0)]
            choices[i] = others
        if not any(choices.values()):
            raise RuleDeclined("no other block size fits what the code assumes (" + "; ".join(ties.limits) + ")")
        for i in tunable:
            d, others, coupled = dims[i], choices.get(i), bool(literals[i])
            if others is None or names[i] in st.params:
                continue
            st.add_param(Param(names[i], (d, *others), f"#define KT_{names[i]} {{{{ {names[i]} }}}}",
                               why=f"the original block {'xyz'[i]} size {d}"
                                   + (f"; it also appears as a literal {len(literals[i])} time(s) in the code, "
                                      "assumed to denote the block size" if coupled else "")
                                   + "".join(f"; {why}" for why in ties.limits)))
        tied = _tie_template_argument(st, dims, tunable, names)
        grid = list(st.launch.grid)
        shared = st.launch.shared_mem
        for i in tunable:
            grid = [substitute_constant(g, dims[i], names[i]) for g in grid]
            shared = substitute_constant(shared, dims[i], names[i])
        block = [names[i] if i in names else dims[i] for i in range(len(dims))]
        st.launch = LaunchSpec(grid=grid, block=block, shared_mem=shared)
        if len(set(names.values())) > 1:
            st.restrictions.append(" * ".join(names.values()) + f" <= {limit}")
        coupled_note = sum(len(v) for v in literals.values())
        return Applied(self.name, f"block {'x'.join(map(str, dims))} -> parameters {', '.join(dict.fromkeys(names.values()))}"
                                  + (f"; {coupled_note} literal(s) rewritten" if coupled_note else "")
                                  + (f"; template argument {', '.join(tied)} follows it" if tied else ""),
                       tuple(dict.fromkeys(names.values())))


class LaunchBounds(Rule):
    name = "launch-bounds"
    summary = "__launch_bounds__ with the block size, on or off"
    langs = ("cuda",)

    def check(self, st: RewriteState) -> str:
        k = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
        if k is None:
            return f"no kernel {st.kernel} in the source"
        if k.launch_bounds:
            return "the kernel already declares __launch_bounds__"
        if _literal_dims(st.launch) is None and not any(str(b).startswith("BLOCK") for b in st.launch.block):
            return "the block size is neither a number nor a parameter"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        k = next(k for k in st.parsed.kernels if k.name == st.kernel_fn)
        declarator = k.node.child_by_field_name("declarator")
        while declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        name_node = declarator.child_by_field_name("declarator")
        threads = " * ".join(f"KT_{b}" if isinstance(b, str) and b.startswith("BLOCK") else str(b)
                             for b in st.launch.block)
        st.snippets["LAUNCH_BOUNDS"] = "{% if LAUNCH_BOUNDS %}__launch_bounds__(" + threads + "){% endif %}"
        st.source = apply_edits(st.raw, [Edit(name_node.start_byte, name_node.start_byte,
                                                        marker("LAUNCH_BOUNDS") + " ")])
        st.add_param(Param("LAUNCH_BOUNDS", (False, True), "", why="let the compiler budget registers for the block"))
        return Applied(self.name, f"__launch_bounds__({threads}) on {st.kernel}, as a parameter", ("LAUNCH_BOUNDS",))
