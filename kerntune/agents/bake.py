"""Bake a template instance into plain kernel source: the ``KT_*`` macros the
rule catalog introduced are replaced by their values, ``#if`` blocks that
test only them keep just their live branch, and the macro header goes away.
The result is the drop-in kernel (``best.cu``) and the starting point of the
next round of rewrites."""

from __future__ import annotations

import re

from kerntune.source.parse import parse, walk
from kerntune.spec import expr

_DEFINE = re.compile(r"^[ \t]*#define[ \t]+(KT_[A-Za-z0-9_]+)[ \t]+(.*?)[ \t]*$", re.MULTILINE)
_OBJECT_LIKE = re.compile(r"^[A-Za-z0-9_.]+$")
# a function-like KT_ macro that only renames a call (KT_TANH(t) -> tanh(t), tanh-exp off): baked to the call
_ALIAS = re.compile(r"^[ \t]*#define[ \t]+(KT_[A-Za-z0-9_]+)\(([A-Za-z_]\w*)\)[ \t]+([A-Za-z_]\w*)\(\2\)[ \t]*\n?",
                    re.MULTILINE)


def _macros(source: str) -> dict[str, str]:
    """Object-like KT_* macros defined once (function-like ones, e.g. KT_VEC_DECL(...), stay as
    they are; one defined in both branches of an ``#if`` waits until that ``#if`` is resolved)."""
    found: dict[str, set[str]] = {}
    for m in _DEFINE.finditer(source):
        name, value = m.group(1), m.group(2)
        if name.startswith("KT_HAVE_") or not value or not _OBJECT_LIKE.match(value):
            continue   # include guards of helper code stay; only parameter macros are baked
        found.setdefault(name, set()).add(value)
    return {name: values.pop() for name, values in found.items() if len(values) == 1}


def _eval_condition(text: str, macros: dict[str, str]) -> bool | None:
    cond = text.strip()
    names = set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", cond))
    if not names or not all(n in macros for n in names):
        return None
    env = {}
    for n in names:
        try:
            env[n] = int(macros[n], 0)
        except ValueError:
            return None
    cond = cond.replace("&&", " and ").replace("||", " or ").replace("!", " not ").replace(" not =", "!=")
    try:
        return bool(expr.evaluate(cond, env))
    except expr.ExprError:
        return None


def bake(rendered: str, lang: str) -> str:
    if not _macros(rendered) and not _ALIAS.search(rendered):
        return rendered
    text = rendered
    # resolve #if blocks that only test KT_ macros, outermost first (re-parse after each pass; a
    # macro defined differently in the two branches of an #if is known once that #if is resolved)
    for _ in range(200):
        macros = _macros(text)
        parsed = parse(text, lang)
        data = text.encode()
        target = None
        for n in walk(parsed.tree.root_node):
            if n.type == "preproc_if":
                cond = n.child_by_field_name("condition")
                live = _eval_condition(data[cond.start_byte:cond.end_byte].decode(), macros) if cond else None
                if live is not None:
                    target = (n, live)
                    break
        if target is None:
            break
        n, live = target
        alt = n.child_by_field_name("alternative")
        body_start = n.child_by_field_name("condition").end_byte
        body_end = alt.start_byte if alt is not None else n.end_byte - len("#endif")
        if live:
            keep = data[body_start:body_end].decode()
        elif alt is not None:
            a_start = alt.start_byte + len("#else")
            keep = data[a_start:n.end_byte - len("#endif")].decode() if alt.type == "preproc_else" else ""
        else:
            keep = ""
        text = (data[:n.start_byte].decode() + keep.strip("\n") + "\n" + data[n.end_byte:].decode())
    # drop the object-like KT_ defines and substitute their values
    macros = _macros(text)
    text = _DEFINE.sub(lambda m: "" if m.group(1) in macros else m.group(0), text)
    for name in sorted(macros, key=len, reverse=True):
        text = re.sub(r"\b" + re.escape(name) + r"\b", macros[name], text)
    aliases = {m.group(1): m.group(3) for m in _ALIAS.finditer(text)}
    text = _ALIAS.sub("", text)
    for name, function in aliases.items():
        text = re.sub(r"\b" + re.escape(name) + r"(?=\s*\()", function, text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text
