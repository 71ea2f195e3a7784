"""private-helpers: the spec's kernel gets its own copy of every function it
shares with the file's other code.

A file often holds one kernel per dtype, each a thin entry point calling the
same template or inline helper (``merge_baseline<T>``, ``silu_and_mul_row``,
``merge_weights``). The catalog rewrites the spec's kernel and the functions
it calls; where such a function is also called by another entry point, the
rewrite would reach that entry point too, which nobody measured or verified:
fast intrinsics in an fp32 kernel's helper, a block size the other kernel is
not launched with, a grid split the other launch does not make.

So the functions the kernel reaches that are reached from elsewhere as well
are copied first, each right after its original (template header, overloads
and forward declarations with it), named ``<name>_for_<kernel>``, and the
kernel and the copies call the copies. The other entry points keep the
originals. At the end of the catalog, a copy that no rule changed (equal to
its original once the copies' names are read back) is dropped again and its
calls renamed back, unless it calls a copy that stays: the handed-back file
grows only where a rewrite made the kernel's helper differ from the other
entry points'.
"""

from __future__ import annotations

import re

from kerntune.agents.rules.base import (
    Applied, Edit, Rule, RewriteState, apply_edits, callee, function_name, is_helper,
)
from kerntune.agents.rules.macros import code_identifiers
from kerntune.source.parse import walk


def _outer(node):
    """A definition with its template header (``template <typename T> __device__ void f(...)``)."""
    return node.parent if node.parent is not None and node.parent.type == "template_declaration" else node


def _prototype_name(st: RewriteState, node) -> str:
    """The name a top-level function declaration (a prototype) declares, else ''."""
    if node.type != "declaration":
        return ""
    d = node.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator")
    if d is None or d.type != "function_declarator":
        return ""
    return function_name(st, node)


def definitions(st: RewriteState) -> dict[str, list]:
    """name -> the outer nodes that define or declare it (definitions and prototypes, in file order)."""
    out: dict[str, list] = {}
    for n in walk(st.parsed.tree.root_node):
        name = ""
        if n.type == "function_definition":
            name = function_name(st, n)
        elif n.parent is not None and n.parent.type in ("translation_unit", "template_declaration",
                                                        "declaration_list", "linkage_specification"):
            name = _prototype_name(st, n)
        if name and not is_helper(name):
            out.setdefault(name, []).append(_outer(n))
    return out


def _call_graph(st: RewriteState) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type != "function_definition":
            continue
        name = function_name(st, n)
        if not name or is_helper(name):
            continue
        called = graph.setdefault(name, set())
        for c in walk(n):
            if c.type == "call_expression":
                f = callee(st, c)
                if f is not None:
                    called.add(st.text(f))
    return graph


def _named_elsewhere(st: RewriteState, mine: set[str], defs: dict[str, list]) -> set[str]:
    """Every name the file's code outside the kernel's functions mentions, macros written out: an
    entry point whose body is a macro invocation (``MERGE(v_a[idx], ...)``, which does not even
    parse as a function) uses the helpers the macro's body names."""
    defines, skip = {}, []
    for n in walk(st.parsed.tree.root_node):
        if n.type in ("preproc_function_def", "preproc_def") and n.child_by_field_name("name") is not None:
            v = n.child_by_field_name("value")
            defines[st.text(n.child_by_field_name("name"))] = st.text(v) if v is not None else ""
            skip.append((n.start_byte, n.end_byte))
    for name, nodes in defs.items():
        if name in mine:
            skip += [(n.start_byte, n.end_byte) for n in nodes]
    raw, pieces, at = st.raw, [], 0
    for a, b in sorted(skip):
        if a >= at:
            pieces.append(raw[at:a].decode())
            at = b
    pieces.append(raw[at:].decode())
    found, seen, todo = set(), set(), ["\n".join(pieces)]
    while todo:
        for _, _, word in code_identifiers(todo.pop()):
            found.add(word)
            if word in defines and word not in seen:
                seen.add(word)
                todo.append(defines[word])
    return found


def _reach(graph: dict[str, set[str]], roots) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        todo.extend(graph[name])
    return seen


def shared_helpers(st: RewriteState) -> list[str]:
    """The functions the spec's kernel reaches that code outside its reach calls as well."""
    graph = _call_graph(st)
    if st.kernel_fn not in graph:
        return []
    mine = _reach(graph, [st.kernel_fn])
    defs = definitions(st)
    others = _reach(graph, _named_elsewhere(st, mine, defs) & mine)
    return sorted(s for s in (mine & others) - {st.kernel_fn} if all(_copyable(n) for n in defs.get(s, [])))


def _copy_name(st: RewriteState, name: str, taken: set[str]) -> str:
    base = f"{name}_for_{st.kernel_fn}"
    new, i = base, 2
    while new in taken:
        new, i = f"{base}{i}", i + 1
    return new


def _declared(declarator):
    """The identifier a function declarator names (``f``, or ``f`` of the specialization ``f<float>``);
    None for a qualified name (``ns::f``), which a copy could not declare where it stands."""
    d = declarator.child_by_field_name("declarator")
    if d is not None and d.type == "template_function":
        d = d.child_by_field_name("name")
    return d if d is not None and d.type == "identifier" else None


def _copyable(node) -> bool:
    """Whether every function declarator in a definition or prototype names the function plainly."""
    return all(_declared(n) is not None for n in walk(node) if n.type == "function_declarator"
               and n.parent is not None and n.parent.type != "parameter_declaration")


def _renamed(st: RewriteState, node, names: dict[str, str]) -> str:
    """The text of ``node`` with its own declarator name and its calls of ``names`` renamed."""
    edits = []
    for n in walk(node):
        if n.type == "call_expression":
            f = callee(st, n)
            if f is not None and st.text(f) in names:
                edits.append(Edit(f.start_byte - node.start_byte, f.end_byte - node.start_byte, names[st.text(f)]))
        elif n.type == "function_declarator":
            d = _declared(n)
            if d is not None and st.text(d) in names:
                edits.append(Edit(d.start_byte - node.start_byte, d.end_byte - node.start_byte, names[st.text(d)]))
    return apply_edits(st.raw[node.start_byte:node.end_byte], edits)


class PrivateHelpers(Rule):
    name = "private-helpers"
    summary = "the kernel's own copies of the functions it shares with the file's other entry points"

    def check(self, st: RewriteState) -> str:
        if not shared_helpers(st):
            return "the kernel shares no function with the file's other code"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        shared = shared_helpers(st)
        defs = definitions(st)
        names = {s: _copy_name(st, s, set(defs)) for s in shared}
        edits = []
        for s in shared:
            for node in defs.get(s, []):
                edits.append(Edit(node.end_byte, node.end_byte, "\n\n" + _renamed(st, node, names)))
        for node in defs.get(st.kernel_fn, []):
            edits.append(Edit(node.start_byte, node.end_byte, _renamed(st, node, names)))
        st.source = apply_edits(st.raw, edits)
        st.clones.update({new: old for old, new in names.items()})
        return Applied(self.name, f"{st.kernel_fn}'s own copies of {', '.join(shared)} (the file's other entry "
                                  "points keep theirs)")


def _words_renamed(text: str, names: dict[str, str]) -> str:
    """``text`` with every whole word that is a key of ``names`` replaced by its value."""
    if not names:
        return text
    return re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b", lambda m: names[m.group()], text)


def prune_copies(st: RewriteState) -> None:
    """Drop the copies no rule changed (see the module docstring) and record what stayed."""
    if not st.clones:
        return
    defs = definitions(st)
    kept = {c for c, o in st.clones.items()
            if [_words_renamed(st.text(n), st.clones) for n in defs.get(c, [])]
            != [st.text(n) for n in defs.get(o, [])]}
    graph = _call_graph(st)
    grown = True
    while grown:
        grown = False
        for c in set(st.clones) - kept:
            if graph.get(c, set()) & kept:
                kept.add(c)
                grown = True
    dropped = {c: o for c, o in st.clones.items() if c not in kept}
    edits = []
    for c in dropped:
        for node in defs.get(c, []):
            start = node.start_byte
            while start > 0 and st.raw[start - 1:start].isspace():
                start -= 1
            edits.append(Edit(start, node.end_byte, ""))
    st.source = _words_renamed(apply_edits(st.raw, edits), dropped)
    st.clones = {c: o for c, o in st.clones.items() if c in kept}
    for i, a in enumerate(st.trace):
        if a.rule != PrivateHelpers.name:
            continue
        if kept:
            originals = ", ".join(sorted(st.clones[c] for c in kept))
            st.trace[i] = Applied(a.rule, f"{st.kernel_fn}'s own copies of {originals}, which the rules after "
                                          "changed (the file's other entry points keep the originals)")
        else:
            del st.trace[i]
            st.skipped.append((a.rule, "no rule changed a function the kernel shares with the file's other code"))
        break
