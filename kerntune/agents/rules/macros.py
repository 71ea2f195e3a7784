"""expand-macros: function-like macros that the kernel's code invokes are
written out in place, as the C preprocessor would expand them, so the rules
after it see real code.

A kernel whose body is a macro invocation (``MERGE(v_a[idx], v[idx] = out)``,
one body written once for several dtypes) does not parse as a function, and
a loop inside a macro is invisible to every rule. Expanding the invocations
in the spec's kernel (and in the functions it calls) changes nothing the
compiler sees: it is the preprocessor's own work, written out. The
definitions stay, for the file's other entry points.

Only what expands the same way everywhere is expanded: a macro defined once
in the file, before its first use, never ``#undef``-ined, without ``#``,
``##`` or ``...``. As in C, the arguments are expanded first, the body is
scanned again after the substitution, and a macro is not expanded inside its
own expansion. Object-like macros are left as they are (they parse).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerntune.agents.rules.base import Applied, Edit, Rule, RuleDeclined, RewriteState, apply_edits
from kerntune.source.parse import walk

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DEPTH = 16


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: str           # the replacement text, continuation lines joined (newlines kept)
    end: int            # where its definition ends in the source (uses before it are not expansions)


def _code_spans(text: str):
    """Yield (start, end, kind) for the pieces of ``text``: 'code', 'comment' or 'literal'."""
    i, n, start = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        if i > start:
            yield start, i, "code"
        yield i, j, "comment" if c == "/" else "literal"
        i = start = j
    if start < n:
        yield start, n, "code"


def code_identifiers(text: str):
    """(start, end, name) of every identifier outside comments and literals."""
    for a, b, kind in _code_spans(text):
        if kind == "code":
            for m in _IDENT.finditer(text, a, b):
                yield m.start(), m.end(), m.group()


def _skip_blank(text: str, i: int) -> int:
    """The first offset at or after ``i`` that is neither whitespace nor a comment."""
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = len(text) if j < 0 else j + 2
        else:
            break
    return i


def _code_chars(text: str, start: int):
    """(offset, character) of ``text`` from ``start`` on, comments and literals left out."""
    skip = {a: b for a, b, kind in _code_spans(text[start:]) if kind != "code"}
    i = start
    while i < len(text):
        if i - start in skip:
            i = start + skip[i - start]
            continue
        yield i, text[i]
        i += 1


def _arguments(text: str, open_paren: int) -> tuple[list[str], int] | None:
    """The comma-separated arguments of the invocation whose '(' is at ``open_paren`` and the offset
    after its ')'; None when the parentheses do not close."""
    depth, args, start = 0, [], open_paren + 1
    for i, c in _code_chars(text, open_paren):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
    return None


def _invocations(text: str, macros: dict[str, Macro], active: frozenset[str] = frozenset()):
    """(start, end, macro, arguments) of the invocations in ``text`` of macros not in ``active``."""
    out, after = [], 0
    for a, b, name in code_identifiers(text):
        if a < after or name not in macros or name in active:
            continue
        j = _skip_blank(text, b)
        if j >= len(text) or text[j] != "(":
            continue                # the name alone is not an invocation of a function-like macro
        parsed = _arguments(text, j)
        if parsed is None:
            continue
        args, end = parsed
        m = macros[name]
        if args == [""] and not m.params:
            args = []
        if len(args) != len(m.params):
            raise RuleDeclined(f"{name} is invoked with {len(args)} argument(s); it takes {len(m.params)}")
        out.append((a, end, m, args))
        after = end
    return out


def _substitute(body: str, params: tuple[str, ...], args: list[str]) -> str:
    value = dict(zip(params, args))
    pieces, pos = [], 0
    for a, b, name in code_identifiers(body):
        if name in value:
            pieces += [body[pos:a], value[name]]
            pos = b
    return "".join(pieces) + body[pos:]


def expand(text: str, macros: dict[str, Macro], active: frozenset[str] = frozenset(), depth: int = 0) -> str:
    """``text`` with every invocation of ``macros`` (outside ``active``) expanded, as C does."""
    if depth > _MAX_DEPTH:
        raise RuleDeclined("macros nest deeper than 16 levels")
    edits = []
    for a, b, m, args in _invocations(text, macros, active):
        args = [expand(x.strip(), macros, active, depth + 1) for x in args]
        done = expand(_substitute(m.body, m.params, args), macros, active | {m.name}, depth + 1)
        edits.append((a, b, done))
    for a, b, new in reversed(edits):
        text = text[:a] + new + text[b:]
    return text


def function_macros(st: RewriteState) -> tuple[dict[str, Macro], dict[str, str]]:
    """The function-like macros that expand the same way everywhere in the file, and why the others
    ({name: reason}) are left alone."""
    defs: dict[str, list] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type == "preproc_function_def" and n.child_by_field_name("name") is not None:
            defs.setdefault(st.text(n.child_by_field_name("name")), []).append(n)
    undefined = set(re.findall(r"^[ \t]*#[ \t]*undef[ \t]+([A-Za-z_][A-Za-z0-9_]*)", st.source, re.MULTILINE))
    ok: dict[str, Macro] = {}
    bad: dict[str, str] = {}
    for name, nodes in defs.items():
        if name.startswith(("KT_", "kt_")):
            continue            # the rules' own helpers
        if len(nodes) > 1:
            bad[name] = "defined more than once"
            continue
        if name in undefined:
            bad[name] = "#undef-ined in the file"
            continue
        n = nodes[0]
        params_node = n.child_by_field_name("parameters")
        params_text = st.text(params_node) if params_node is not None else "()"
        if "..." in params_text:
            bad[name] = "variadic"
            continue
        params = tuple(st.text(p) for p in params_node.named_children) if params_node is not None else ()
        value = n.child_by_field_name("value")
        body = st.text(value) if value is not None else ""
        body = "\n".join(line.rstrip().removesuffix("\\").rstrip() for line in body.split("\n")).strip()
        code = "".join(body[a:b] for a, b, kind in _code_spans(body) if kind == "code")
        if "#" in code:
            bad[name] = "uses # or ##"
            continue
        ok[name] = Macro(name, params, body, n.end_byte)
    return ok, bad


def _body_span(text: str, name: str) -> tuple[int, int] | None:
    """The byte span of the body (the braces included) of the function ``name`` defined in ``text``,
    found by its text: a kernel whose body is a macro invocation does not parse as a function."""
    for a, b, ident in code_identifiers(text):
        if ident != name:
            continue
        j = _skip_blank(text, b)
        if j >= len(text) or text[j] != "(":
            continue
        parsed = _arguments(text, j)
        if parsed is None:
            continue
        k = _skip_blank(text, parsed[1])
        if k >= len(text) or text[k] != "{":
            continue            # a call or a declaration, not the definition
        depth = 0
        for i, c in _code_chars(text, k):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return k, i + 1
        return None
    return None


def _line_indent(text: str, offset: int) -> str:
    ls = text.rfind("\n", 0, offset) + 1
    lead = text[ls:offset]
    return lead if not lead.strip() else ""


def _placed(expansion: str, indent: str) -> str:
    """A multi-line expansion laid out at the invocation's indentation."""
    lines = expansion.split("\n")
    if len(lines) == 1:
        return expansion
    rest = [ln for ln in lines[1:] if ln.strip()]
    common = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    return "\n".join([lines[0]] + [indent + ln[common:] if ln.strip() else "" for ln in lines[1:]])


def _edits(st: RewriteState, macros: dict[str, Macro]) -> tuple[list[Edit], list[str]]:
    """Expansions of the invocations in the kernel's body and, once the kernel parses, in the functions
    it calls (until then nothing tells them from the file's other entry points, which stay as they are)."""
    text = st.source
    spans = []
    span = _body_span(text, st.kernel_fn)
    if span is not None:
        spans.append(span)
    if st.kernel_fn in {k.name for k in st.parsed.kernels}:
        for fn in st.functions():
            body = fn.child_by_field_name("body")
            if body is not None and not any(a <= body.start_byte < b for a, b in spans):
                spans.append((body.start_byte, body.end_byte))
    raw = st.raw
    edits, names = [], []
    for a, b in spans:
        # byte offsets of the parse and character offsets of the text agree only for ASCII text
        chunk = raw[a:b].decode() if raw.isascii() else text[a:b]
        for s, e, m, args in _invocations(chunk, macros):
            if m.end > a + s:
                continue            # used before its definition: not an expansion
            args = [expand(x.strip(), macros) for x in args]
            done = expand(_substitute(m.body, m.params, args), macros, frozenset({m.name}))
            edits.append(Edit(a + s, a + e, _placed(done, _line_indent(chunk, s))))
            names.append(m.name)
    return edits, names


class ExpandMacros(Rule):
    name = "expand-macros"
    summary = "function-like macros invoked in the kernel's code written out, as the preprocessor expands them"

    def check(self, st: RewriteState) -> str:
        if not st.source.isascii():
            return "the source is not ASCII"
        macros, bad = function_macros(st)
        if not macros:
            why = ", ".join(f"{k}: {v}" for k, v in sorted(bad.items()))
            return "no function-like macro" + (f" that expands the same way everywhere ({why})" if bad else " in the file")
        try:
            edits, _ = _edits(st, macros)
        except RuleDeclined as e:
            return str(e)
        return "" if edits else "the kernel's code invokes no function-like macro of the file"

    def apply(self, st: RewriteState) -> Applied:
        macros, _ = function_macros(st)
        count, names = 0, []
        for _ in range(4):      # the kernel's own body first; once it parses, the functions it calls
            edits, used = _edits(st, macros)
            if not edits:
                break
            st.source = apply_edits(st.raw, edits)
            count, names = count + len(edits), names + used
        return Applied(self.name, f"{count} invocation(s) of {', '.join(sorted(set(names)))} written out in "
                                  f"{st.kernel}")
