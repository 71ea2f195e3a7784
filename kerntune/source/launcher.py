"""Which instantiations of a templated kernel an extension's launcher uses.

The launcher writes ``kernel<scalar_t, NUM_THREADS><<<grid, block, 0, stream>>>(...)``
inside a dtype dispatch. Arguments that are literals are taken as they are;
names are looked up among the file's constants (``constexpr uint NUM_THREADS =
128;``, ``#define THREADS 256``), evaluated once the type arguments are known
(``16 / sizeof(scalar_t)``). A type argument the dispatch provides
(``scalar_t``) cannot be read off the source: it is chosen (bf16 when the code
handles ``__nv_bfloat16``, else fp16, else fp32; integer types for index
parameters) and marked as a guess. ``kerntune extract`` writes what it found
as ``// kerntune-instantiate: ...`` lines, so the extracted file keeps them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kerntune.source.names import split_args
from kerntune.source.parse import KernelFunction
from kerntune.source.types import SCALAR_SIZES, sizeof

MARK = re.compile(r"^//\s*kerntune-instantiate:\s*(.+?)\s*$", re.M)
_TYPE_WORDS = set(SCALAR_SIZES) | {"unsigned", "signed", "long", "short", "char", "int"}


@dataclass(frozen=True)
class Instantiation:
    args: tuple[str, ...]
    where: str            # "launcher line 88", "extracted file", "guessed"
    guessed: tuple[str, ...] = ()    # template parameters whose argument was chosen, not read

    def expression(self, kernel: KernelFunction) -> str:
        return f"{kernel.qualified_name}<{', '.join(self.args)}>"


def _constants(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in re.finditer(r"\b(?:static\s+)?(?:constexpr|const)\s+[A-Za-z_][\w:\s]*?\b([A-Za-z_]\w*)\s*=\s*([^;{}]+);",
                         text):
        out.setdefault(m.group(1), m.group(2).strip())
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]+)$", text, re.M):
        out.setdefault(m.group(1), m.group(2).strip())
    return out


def default_type(param: str, text: str) -> str:
    if re.search(r"index|idx|int", param, re.I):
        return "int32_t" if re.search(r"\bint32_t\b", text) else "int"
    if re.search(r"\b(__nv_bfloat16|nv_bfloat16|BFloat16|kBFloat16)\b", text):   # CUDA or ATen spelling
        return "__nv_bfloat16"
    if re.search(r"\b(__half|half|Half|kHalf)\b", text):
        return "__half"
    return "float"


def evaluate(text: str, consts: dict[str, str], types: dict[str, str], depth: int = 0) -> int | bool | None:
    """The integer (or bool) value of a constant expression, or None."""
    if depth > 8:
        return None
    t = text.strip()
    t = re.sub(r"\bsizeof\s*\(\s*([^()]+?)\s*\)", lambda m: str(sizeof(types.get(m.group(1), m.group(1))) or "None"),
               t)
    t = re.sub(r"(?<=\d)[uUlL]+\b", "", t)
    t = re.sub(r"\bstatic_cast<[^<>]+>", "", t)

    def name(m: re.Match) -> str:
        w = m.group(0)
        if w in ("true", "false"):
            return "True" if w == "true" else "False"
        if w in consts:
            v = evaluate(consts[w], consts, types, depth + 1)
            return "None" if v is None else str(v)
        return "None"

    t = re.sub(r"[A-Za-z_]\w*", name, t).replace("/", "//").replace("&&", " and ").replace("||", " or ")
    try:
        tree = ast.parse(t, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop, ast.BoolOp,
               ast.boolop, ast.Compare, ast.cmpop, ast.IfExp)
    if not all(isinstance(n, allowed) for n in ast.walk(tree)):
        return None
    try:
        v = eval(compile(tree, "<const>", "eval"), {"__builtins__": {}}, {})  # noqa: S307 - checked AST of literals
    except Exception:
        return None
    return v if isinstance(v, (int, bool)) else None


def _resolve(kernel: KernelFunction, raw: list[str], text: str, consts: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    params = list(kernel.template_params or ())
    types: dict[str, str] = {}
    args: list[str] = []
    guessed: list[str] = []
    for i, p in enumerate(params):
        a = raw[i].strip() if i < len(raw) else None
        if a is None:
            if p.default is None:
                return (), ()
            break
        if p.kind == "type":
            words = set(re.findall(r"[A-Za-z_]\w*", a))
            if words and (words <= _TYPE_WORDS or a in SCALAR_SIZES or "::" in a or "<" in a) \
                    and a not in consts:
                chosen = a
            elif re.search(r"\b(__half2?|half|__nv_bfloat16|float|double)\b", a):
                chosen = a
            else:
                chosen = default_type(p.name, text)
                guessed.append(p.name)
            types[p.name] = chosen
            types[a] = chosen
            args.append(chosen)
        else:
            v = evaluate(a, consts, types)
            if v is None:
                if p.default is not None and i >= len(raw):
                    break
                return (), ()
            args.append(("true" if v else "false") if isinstance(v, bool) or p.ctype == "bool" else str(v))
    return tuple(args), tuple(guessed)


def instantiations(kernel: KernelFunction, text: str, origin=None) -> list[Instantiation]:
    """The instantiations of ``kernel`` that ``text`` (the whole extension file, launcher
    included; or an extracted file with its ``kerntune-instantiate`` lines) uses, in order.
    ``origin(offset)`` names where an offset of ``text`` came from (file:line)."""
    if not kernel.is_template:
        return []
    out: list[Instantiation] = []
    seen: set[tuple[str, ...]] = set()
    for m in MARK.finditer(text):
        head, _, rest = m.group(1).partition("<")
        if head.strip().split("::")[-1] == kernel.name and rest.endswith(">"):
            args = tuple(a.strip() for a in split_args(rest[:-1]))
            if args not in seen:
                seen.add(args)
                out.append(Instantiation(args, "extracted file"))
    if out:
        return out
    consts = _constants(text)
    call = re.compile(r"\b" + re.escape(kernel.name) + r"\s*<")
    for m in call.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"<": 1, ">": -1}.get(text[i], 0)
            i += 1
        if depth or not re.match(r"\s*(<<<|\(|;|,|\))", text[i:]) or text[max(0, m.start() - 9):m.start()].rstrip().endswith("void"):
            continue
        inner = text[m.end():i - 1]
        if "\n#" in inner:
            continue
        try:
            raw = split_args(inner)
        except ValueError:
            continue
        args, guessed = _resolve(kernel, raw, text, consts)
        if args and args not in seen:
            seen.add(args)
            where = origin(m.start()) if origin else f"line {text.count(chr(10), 0, m.start()) + 1}"
            out.append(Instantiation(args, f"the launcher at {where}", guessed))
    if not out:
        raw = [p.name for p in kernel.template_params or ()]
        args, guessed = _resolve(kernel, raw, text, {**consts, **{p.name: p.default for p in kernel.template_params
                                                                    if p.default is not None}})
        if args:
            out.append(Instantiation(args, "guessed", tuple(p.name for p in kernel.template_params)))
    return out


def launcher_block(name: str, text: str) -> tuple[tuple[int, ...] | None, str] | None:
    """The block the launcher in ``text`` launches kernel ``name`` with (``k<<<grid, block, ...>>>``):
    (its dimensions, where it is), or (None, its expression) when it is not a constant (the launcher
    computes it from the sizes), or None when no launch of ``name`` is found. A ``dim3 block(...)``
    or a constant named by the launch is looked up in the file."""
    from kerntune.source.names import KernelNameError

    m = re.search(r"\b" + re.escape(name) + r"\s*(?:<[^;{}]*?>)?\s*<<<(.*?)>>>", text, re.S)
    if m is None:
        return None
    try:
        parts = split_args(m.group(1))
    except KernelNameError:
        return None
    if len(parts) < 2:
        return None
    expr, where = parts[1].strip(), f"the launcher at line {text.count(chr(10), 0, m.start()) + 1}"
    consts = _constants(text)
    dims = None
    inline = re.fullmatch(r"dim3\s*[({](.*)[)}]", expr, re.S)
    if inline:
        dims = inline.group(1)
    elif re.fullmatch(r"[A-Za-z_]\w*", expr):
        d = re.search(r"\bdim3\s+" + re.escape(expr) + r"\s*(?:=\s*dim3\s*)?[({]([^;]*)[)}]\s*;", text[:m.start()])
        dims = d.group(1) if d else None
    values = []
    for part in (split_args(dims) if dims is not None else [expr]):
        v = evaluate(part, consts, {})
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            return None, (f"dim3({dims})" if dims is not None else expr)
        values.append(v)
    while len(values) > 1 and values[-1] == 1:
        values.pop()
    return tuple(values), where


@dataclass(frozen=True)
class Choice:
    kernel: KernelFunction
    name: str                               # what the spec's `kernel` will say
    instantiation: Instantiation | None     # where the template arguments came from
    others: tuple[str, ...] = ()            # other instantiations the launcher uses


def _root(parsed, k: KernelFunction) -> str:
    """"::" for a kernel outside any namespace whose bare name also names a namespaced one: a spec
    saying just `scale` would be ambiguous to every later command."""
    from kerntune.source.names import parse_kernel_name

    if k.namespace:
        return ""
    bare = parse_kernel_name(k.name)
    return "::" if sum(x.matches(bare) for x in parsed.kernels) > 1 else ""


def choose(parsed, text: str, kernel: str | None, instantiate: str | None, origin: str, where=None) -> Choice:
    """The kernel (and instantiation) a command works on: ``--kernel`` (plain, qualified or
    instantiated), ``--instantiate ARGS``, else the only kernel and the launcher's first
    instantiation. ``text`` is the file with its headers inlined."""
    from kerntune.errors import ErrorCode, KerntuneError
    from kerntune.source.names import KernelNameError, parse_kernel_name

    if not parsed.kernels and parsed.macro_kernels:
        raise KerntuneError(ErrorCode.USAGE, f"{origin} defines its kernels only through macros "
                            f"({', '.join(f'{k}: {m}' for k, m in parsed.macro_kernels.items())}), and kerntune reads "
                            "a kernel's code as written in the file", hint="write the kernel out (expand the macro "
                                                                           "for it) in the kernel file")
    if not parsed.kernels:
        raise KerntuneError(ErrorCode.USAGE, f"no kernel found in {origin} (a __global__ function in CUDA, a "
                                             "__kernel one in OpenCL)", hint="pass the file that defines the kernel")
    if kernel is None:
        if len(parsed.kernels) > 1:
            names = ", ".join(k.qualified_name for k in parsed.kernels)
            raise KerntuneError(ErrorCode.USAGE, f"{origin} defines several kernels: {names}",
                                hint="choose one with --kernel NAME")
        k = parsed.kernels[0]
        kn = None
    else:
        k = parsed.find(kernel)
        kn = parse_kernel_name(kernel)
    root = _root(parsed, k)
    if not k.is_template:
        if instantiate:
            raise KerntuneError(ErrorCode.USAGE, f"{k.qualified_name} is not a template: --instantiate does not apply")
        if kn is not None and kn.template_args is not None:
            parsed.kernel(kernel)        # the error for template arguments on a plain function
        return Choice(k, root + k.qualified_name, None)
    found = instantiations(k, text, where)
    if kn is not None and kn.template_args is not None:
        if instantiate:
            raise KerntuneError(ErrorCode.USAGE, "give the template arguments once: in --kernel or in --instantiate")
        inst = Instantiation(kn.template_args, "--kernel")
    elif instantiate:
        try:
            inst = Instantiation(tuple(a.strip() for a in split_args(instantiate)), "--instantiate")
        except KernelNameError as e:
            raise KerntuneError(ErrorCode.USAGE, f"--instantiate: {e}") from None
    elif found:
        inst = found[0]
    else:
        from kerntune.source.parse import example_instantiation

        raise KerntuneError(ErrorCode.USAGE, f"{k.qualified_name} is a template and the file does not show which "
                                             "instantiation to use",
                            hint=f"pass --instantiate ARGS or --kernel '{example_instantiation(k)}'")
    name = root + inst.expression(k)
    try:
        parse_kernel_name(name)
    except KernelNameError as e:
        raise KerntuneError(ErrorCode.USAGE, str(e)) from None
    parsed.kernel(name)                  # template arguments against the template's parameters
    others = tuple(root + i.expression(k) for i in found if i.args != inst.args)
    return Choice(k, name, inst, others)
