"""From a kernel's code to the parts of a spec: what ``kerntune init`` writes.

:mod:`kerntune.source.analysis` says which elements of which arrays the
kernel reads and writes; this module turns that into intents, array shapes
(element counts as expressions of the kernel's sizes), size constraints
(``multiple_of`` from the divisions the kernel makes), a launch (block size
from ``__launch_bounds__`` or the index arithmetic, grid from the bounds the
kernel checks its indices against) and default shapes that fit a small memory
budget. Whatever it cannot determine is returned as a TODO with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kerntune.source.analysis import GRID, Analyzer, _Ceil
from kerntune.source.launcher import evaluate
from kerntune.source.parse import KernelFunction
from kerntune.source.poly import Poly, max_at
from kerntune.source.types import dtype_of, strip, substitute
from kerntune.source.values import Access

TODO = "TODO"
SMALL_BUDGET = 1 << 20          # bytes of all arrays in the small default shape
LARGE_BUDGET = 64 << 20         # ... and in the larger one
DEFAULT_BLOCK = 256

# typical values of sizes, by name (serving shapes: head_dim 128, heads 8..64, hidden 4096)
_TYPICAL = [
    (r"head_?(size|dim)|rot_?dim", 128), (r"kv_?heads", 8), (r"heads", 32), (r"experts", 8),
    (r"top_?k", 2), (r"block_?size|page_?size", 16), (r"vocab", 32000), (r"words", 1000),
    (r"tokens|seqs?|batch|rows|num_?t\b|^t$|^m$|^b$", 64), (r"numel|^n$|count|elems", 1 << 20),
    (r"hidden|cols|^d$|dim|size|width|^k$", 4096),
]
_SCALABLE = re.compile(r"tokens|seq|batch|rows|numel|^n$|count|elems|blocks|grid|hidden|cols|^d$|vocab|width", re.I)


@dataclass
class ArgGuess:
    name: str
    ctype: str
    dtype: str                      # a spec dtype or TODO
    array: bool
    shape: list[str] | None = None  # None with array=True: unknown (TODO)
    intent: str = "in"
    value: str | None = None        # scalars
    range: tuple[int, int] | None = None   # input values (an index array's values must stay in bounds)
    why: str = ""                   # comment: how the guess was made
    todo: str = ""                  # what the user must decide


@dataclass
class Inference:
    kernel: str
    args: list[ArgGuess]
    sizes: dict[str, int]                     # size -> multiple_of (1: none)
    size_min: dict[str, int]                  # size -> smallest value (index ranges rely on it)
    extra_sizes: list[str]                    # sizes that are not kernel parameters (e.g. the number of rows)
    grid: list[str]
    block: list[int]
    shared_mem: str
    shapes: list[dict[str, int]]
    launch_why: str = ""
    noalias: bool = False                     # every pointer parameter is restrict-qualified
    todos: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def choose_block(kernel: KernelFunction, source: str, consts: dict[str, int],
                 launcher: tuple[tuple[int, ...] | None, str] | None = None) -> tuple[tuple[int, ...], str]:
    """The block the kernel is written for: reqd_work_group_size, __launch_bounds__, the constant
    block its launcher launches it with (``launcher``: see launcher.launcher_block), a constant it
    multiplies blockIdx by, or a constant loop stride; else a default (which names the launcher's
    expression when it computes one)."""
    body = source[kernel.node.start_byte:kernel.node.end_byte] if kernel.node is not None else source
    cs = {k: str(v) for k, v in consts.items()}
    # OpenCL's reqd_work_group_size: any other work-group size fails at launch (INVALID_WORK_GROUP_SIZE)
    m = re.search(r"reqd_work_group_size\s*\(([^)]*)\)", body.split("{", 1)[0])
    if m:
        dims = [evaluate(x.strip(), cs, {}) for x in m.group(1).split(",")]
        if dims and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in dims):
            while len(dims) > 1 and dims[-1] == 1:
                dims.pop()
            return tuple(dims), "reqd_work_group_size"
    if kernel.launch_bounds:
        m = re.search(r"\(\s*([^,)]+)", kernel.launch_bounds)
        v = evaluate(m.group(1), cs, {}) if m else None
        if isinstance(v, int) and v > 0:
            return (v,), "__launch_bounds__"
    if launcher is not None and launcher[0] is not None:
        return launcher[0], launcher[1]
    sized = _local_array_block(body, cs, _helpers(kernel, source))
    if sized is not None:
        return sized
    for pat in (_group_times(0), r"threadIdx\.x\s*;[^;]*;[^)]*\+=\s*([A-Za-z_]\w*|\d+)\s*\)"):
        for m in re.finditer(pat, body):
            c = m.group(1) or m.group(2)
            v = _threads(c, cs)
            tiled = _tile_threads(body, 0, v, cs) if v is not None and "+=" not in m.group(0) else None
            if tiled is not None:
                ys = [_tile_threads(body, 1, _threads(y.group(1) or y.group(2), cs), cs)
                      for y in re.finditer(_group_times(1), body)]
                y = next((n for n in ys if n is not None and tiled * n <= 1024), None)
                why = f"a thread covers {v // tiled} elements of a {v}-wide tile, {tiled} apart, in x"
                if y is not None:
                    return (tiled, y), why + f" (and {y} threads in y)"
                if re.search(r"threadIdx\.y|get_local_id\s*\(\s*1", body):
                    return (tiled, max(1, min(8, 1024 // tiled))), why
                return (tiled,), why
            if v is not None and "blockIdx" not in m.group(0) and _tile_not_threads(body, v, cs):
                continue        # OpenCL's group * C, new here: only where nothing says a thread covers more
            if v is not None:
                why = f"the kernel's index arithmetic uses {c} = {v} threads per block"
                if re.search(r"threadIdx\.y|get_local_id\s*\(\s*1", body):
                    # the same arithmetic in y (conv3x3.cl's get_group_id(1) * TS) sets the rows
                    ys = [(y.group(1) or y.group(2), _threads(y.group(1) or y.group(2), cs))
                          for y in re.finditer(_group_times(1), body)]
                    ys = [(t, n) for t, n in ys if n is not None and not _tile_not_threads(body, n, cs)]
                    y = next(((t, n) for t, n in ys if n is not None and v * n <= 1024), None)
                    if y is not None:
                        return (v, y[1]), why + f" in x, {y[0]} = {y[1]} in y"
                    return (v, max(1, min(8, 1024 // v))), why + " in x"
                return (v,), why
    default = "default" if launcher is None else f"default (the launcher's is {launcher[1]}: check it)"
    if re.search(r"threadIdx\.z|get_local_id\s*\(\s*2", body):
        return (16, 8, 4), default
    if re.search(r"threadIdx\.y|get_local_id\s*\(\s*1", body):
        return (32, 8), default
    return (DEFAULT_BLOCK,), default


def _group_times(axis: int) -> str:
    """A pattern for a block's index times a name or number (group 1 or 2): CUDA's ``blockIdx.x * C`` and
    OpenCL's ``get_group_id(0) * C``, either way round."""
    gid = rf"(?:blockIdx\.{'xyz'[axis]}\b|get_group_id\s*\(\s*{axis}\s*\))"
    return rf"{gid}\s*\*\s*([A-Za-z_]\w*|\d+)|([A-Za-z_]\w*|\d+)\s*\*\s*{gid}"


def _tile_threads(body: str, axis: int, c: int | None, consts: dict[str, str]) -> int | None:
    """The threads of a block that cover its ``c``-wide tile in ``axis`` a few elements each, where the
    code says so exactly: an index ``v = <group> * c + <local id>`` used only as ``v + i * S`` with
    ``for (int i = 0; i < n; ...)`` and ``S * n == c`` (sgemm's `row0 + i * 16`, i < 4, over a 64-row
    tile: 16 threads, not the 64 that `blockIdx.y * 64` alone suggests, which made threads compute the
    same elements of C, an inout array, twice)."""
    if c is None:
        return None
    lid = rf"(?:get_local_id\s*\(\s*{axis}\s*\)|threadIdx\.{'xyz'[axis]}\b)"
    origin = rf"(?:{_group_times(axis)})"
    names = [m.group(1) for m in re.finditer(
        rf"\b(\w+)\s*=\s*(?:{origin}\s*\+\s*{lid}|{lid}\s*\+\s*{origin})\s*;", body)
        if evaluate(m.group(2) or m.group(3) or m.group(4) or m.group(5) or "", consts, {}) == c]
    found: set[int] = set()
    for name in names:
        uses = list(re.finditer(rf"\b{name}\b", body))[1:]
        for use in uses:
            after = re.match(rf"{name}\s*\+\s*(?:(\w+)\s*\*\s*(\w+))", body[use.start():])
            if after is None:
                return None          # used another way too: nothing exact to read
            for var, step in ((after.group(1), after.group(2)), (after.group(2), after.group(1))):
                loop = re.search(rf"for\s*\(\s*(?:int\s+)?{var}\s*=\s*0\s*;\s*{var}\s*<\s*(\w+)\s*;", body)
                n, s = (evaluate(loop.group(1), consts, {}), evaluate(step, consts, {})) if loop else (None, None)
                if isinstance(n, int) and isinstance(s, int) and n > 1 and s * n == c:
                    found.add(s)
                    break
            else:
                return None
    return found.pop() if len(found) == 1 else None


def _tile_not_threads(body: str, c: int, consts: dict[str, str]) -> bool:
    """Whether a block's tile of ``c`` elements may be covered by fewer threads: a scaled local id
    (ew_pairs.cl's `get_group_id(0) * 512 + 2 * get_local_id(0)`: 256 work-items), a loop stepping by a
    constant below ``c`` (a transpose's `j += BLOCK_ROWS` over a 32-row tile: 8 rows of threads), or a
    constant below ``c`` times a loop variable added to an index (sgemm's `row0 + i * 16`: 16 threads a
    64-wide tile)."""
    lid = r"(?:get_local_id\s*\(\s*\d\s*\)|threadIdx\.[xyz])"
    if re.search(rf"(?:\w+\s*\*\s*{lid}|{lid}\s*\*\s*\w+)", body):
        return True
    loop_vars = set(re.findall(r"for\s*\(\s*(?:[\w:]+\s+)?(\w+)\s*=", body))
    steps = re.findall(r"\+=\s*(\w+)\s*\)", body)
    for v in loop_vars:
        steps += [m.group(1) or m.group(2) for m in
                  re.finditer(rf"\+\s*(?:\b{v}\s*\*\s*(\w+)|(\w+)\s*\*\s*{v}\b)", body)]
    for text in steps:
        n = evaluate(text, consts, {})
        if isinstance(n, int) and not isinstance(n, bool) and 1 < n < c:
            return True
    return False


def _threads(text: str, consts: dict[str, str]) -> int | None:
    """The number of threads a constant ``text`` (a number or a #define) stands for, if it can be a block's."""
    if text == "blockDim":
        return None
    v = evaluate(text, consts, {})
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1024 else None


# a __local/__shared__ array's declaration up to its name (group 1) and the first bracket
_LOCAL_ARRAY = r"(?:__local|__shared__)\s+(?:volatile\s+)?[\w:]+\s+(\w+)\s*"


def _local_array_block(body: str, consts: dict[str, str],
                       helpers: dict[str, tuple[list[str], str]] | None = None) -> tuple[tuple[int, ...], str] | None:
    """A fixed-size __local/__shared__ array indexed by the thread's own local id (``s[tid]``) holds one
    element per thread: the block is its size (a larger one writes past it; a guessed 256 for
    ``__local float s[64]`` crashed Intel's runtime). An array passed to a helper of the file
    (``helpers``: name -> parameter names and body) is followed into it: fused_add_rmsnorm.cl's
    `partial[THREADS]`, indexed by the local id in row_scale(partial, ...), got the default 256 for 128."""
    for m in re.finditer(_LOCAL_ARRAY + r"\[\s*(\w+)\s*\]\s*;", body):
        name, size = m.group(1), evaluate(m.group(2), consts, {})
        if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= 1024:
            continue
        found = _block_of_array(name, m.group(2), size, body, consts, "")
        for call in re.finditer(r"(?<![\w.])(\w+)\s*\(([^;{}]*)\)", body) if found is None else ():
            params, helper = (helpers or {}).get(call.group(1), ([], ""))
            args = [a.strip() for a in _top_level_split(call.group(2))]
            if name in args and args.index(name) < len(params):
                found = _block_of_array(params[args.index(name)], m.group(2), size, helper, consts,
                                        f" in {call.group(1)}()", shown=name)
                if found is not None:
                    break
        if found is not None:
            return None if found == "2-D" else found
    return None


def _top_level_split(args: str) -> list[str]:
    """A call's arguments, split at the commas outside parentheses and brackets."""
    out, depth, cur = [], 0, ""
    for c in args:
        depth += (c in "([") - (c in ")]")
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    return out + [cur]


def _block_of_array(name: str, size_text: str, size: int, body: str, consts: dict[str, str], where: str,
                    shown: str = "") -> tuple[tuple[int, ...], str] | str | None:
    """The block a local array ``name`` of ``size`` elements sets by how ``body`` indexes it: None when
    no access uses the local id, "2-D" when a 2-D block shares it."""
    ids = {"threadIdx.x", "get_local_id(0)"} | {
        m.group(1) for m in re.finditer(r"(\w+)\s*=\s*(?:\(\s*\w+\s*\)\s*)?(?:get_local_id\s*\(\s*0\s*\)|threadIdx\.x\b)",
                                        body)}
    accesses = [(re.sub(r"\s+", "", idx.group(1)), idx.start())
                for idx in re.finditer(r"(?<![\w.])" + re.escape(name) + r"\s*\[\s*([^\]]+?)\s*\]", body)]
    if not any(i in ids for i, _ in accesses):
        return None
    array = f"{shown or name}[{size_text}]"
    why = f"the kernel's {array} holds one element per thread (indexed by the local id{where})"
    if re.search(r"threadIdx\.y|get_local_id\s*\(\s*1", body):
        return "2-D"     # a 2-D block shares it: the defaults and the index arithmetic decide
    # an index a * id + b with constants a and b (s[lid + SEG / 2], s[2 * tid + 1]) that no `if` on the
    # local id guards must stay below the size too: a bitonic sort's s[lid + 128] of a
    # `__local uint s[256]` holds two elements per work-item, and the block of 256 guessed from s[lid]
    # alone wrote past it (Intel's runtime crashed); a reduction's `if (tid < 32) s[tid] += s[tid + 32]`
    # is guarded and bounds nothing
    block = size
    for i, at in accesses:
        if i in ids or _guarded_by_local_id(body, at, ids):
            continue
        for lid in ids:
            own = _use_of(lid)
            if not re.search(own, i):
                continue
            v = [evaluate(re.sub(own, f"({k})", i), consts, {}) for k in (0, 1, 2)]
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                continue
            a, b = v[1] - v[0], v[0]
            if a > 0 and b >= 0 and v[2] - v[1] == a and b < size and (size - 1 - b) // a + 1 < block:
                block = (size - 1 - b) // a + 1
                why = (f"the kernel's {array} holds {size} elements and is indexed by {i}{where}: "
                       f"{block} threads reach its end")
    return (block,), why


def _helpers(kernel: KernelFunction, source: str) -> dict[str, tuple[list[str], str]]:
    """The other functions of the kernel's file: name -> (parameter names, body)."""
    from kerntune.source.calls import _params, function_name
    from kerntune.source.parse import walk

    if kernel.node is None:
        return {}
    root, data, out = kernel.node, source.encode(), {}
    while root.parent is not None:
        root = root.parent
    for n in walk(root):
        b = n.child_by_field_name("body") if n.type == "function_definition" and n is not kernel.node else None
        if b is not None:
            out.setdefault(function_name(n, data), ([p[0] for p in _params(n, data)],
                                                    data[b.start_byte:b.end_byte].decode()))
    return out


def _guessed_block_notes(kernel: KernelFunction, source: str, block: tuple[int, ...], why: str) -> list[str]:
    """A note when the block is a default guess and the kernel keeps a fixed-size local array: such an
    array is sized for the block the kernel was written for (a 3x3 convolution's 16x16 work-groups loading
    an 18x18 `__local float tile[TS + 2][TS + 2]` got the 2-D default 32x8, and bench then called the
    kernel WRONG: the spec's guess, not the kernel, was wrong)."""
    if not why.startswith("default"):
        return []
    body = source[kernel.node.start_byte:kernel.node.end_byte] if kernel.node is not None else source
    m = re.search(_LOCAL_ARRAY + r"((?:\[[^\]]+\]\s*)+);", body)
    if m is None:
        return []
    array = m.group(1) + re.sub(r"\s*(\[)\s*|\s*(\])\s*", lambda x: x.group(1) or x.group(2), m.group(2))
    return [f"launch.block [{', '.join(map(str, block))}] is a default guess, and the kernel keeps a local array "
            f"{array}, often sized for the work-group it was written for: check block (and grid) against it; "
            "launched with another work-group size, such a kernel reads or writes past the array or leaves part "
            "of it unset, and bench calls it wrong"]


def _use_of(name: str) -> str:
    """A pattern for ``name`` used as a whole name (not a part of another, a member or a call)."""
    return r"(?<![\w.])" + re.escape(name) + r"(?![\w(])"


def _guarded_by_local_id(body: str, pos: int, ids: set[str]) -> bool:
    """Whether the statement at ``pos`` sits under an ``if`` whose condition names a local id (by the
    text: the headers of the blocks open at ``pos`` and the statement's own start)."""
    headers: list[str] = []
    last = 0
    for k, c in enumerate(body[:pos]):
        if c == "{":
            headers.append(body[last:k])
            last = k + 1
        elif c == "}":
            if headers:
                headers.pop()
            last = k + 1
        elif c == ";":
            last = k + 1
    for text in headers + [body[last:pos]]:
        for cond in re.finditer(r"\bif\s*\(([^{;]*)", text):
            if any(re.search(_use_of(lid), re.sub(r"\s+", "", cond.group(1))) for lid in ids):
                return True
    return False


def _typical(name: str) -> int:
    for pat, v in _TYPICAL:
        if re.search(pat, name, re.I):
            return v
    return 1024


def _row_lengths(source: str, kernel: KernelFunction, name: str) -> set[str]:
    """The names that multiply something in ``name``'s subscripts (`B[k * N + col]`: N): the length of
    the rows that subscript steps over."""
    body = source[kernel.node.start_byte:kernel.node.end_byte] if kernel.node is not None else source
    found: set[str] = set()
    for m in re.finditer(rf"\b{re.escape(name)}\s*\[([^\[\]]*)\]", body):
        for f in re.finditer(r"(\w+)\s*\*\s*(\w+)", m.group(1)):
            found.update(f.groups())
    return found


def _row_last(dims: list[str], row_lengths: set[str]) -> list[str]:
    """Two sizes of an array in the order its subscripts use them: the one that multiplies an index is
    the row length, the last dimension (sgemm's `B[k * N + col]` is [K, N]; by the parameters' order it
    was [N, K], the same count of elements, but not the layout a reference would be written for)."""
    if len(dims) != 2 or not all(d.isidentifier() for d in dims):
        return dims
    inner = [d for d in dims if d in row_lengths]
    return [dims[1], dims[0]] if inner == [dims[0]] else dims


def _dims(extent: Poly, order: list[str]) -> list[str]:
    """An extent as dimensions: ``[num_tokens, num_heads, head_size]`` for a product of sizes."""
    if len(extent.terms) == 1:
        (mono, coef), = extent.terms
        if coef.denominator == 1 and coef > 0 and mono:
            names = sorted((s for s, p in mono for _ in range(p)), key=lambda s: order.index(s) if s in order else 99)
            dims = list(names)
            if coef != 1:
                dims[-1] = f"{int(coef)} * {dims[-1]}"
            return dims
        if not mono and coef > 0 and coef.denominator == 1:
            return [str(int(coef))]
    return [extent.to_expr(order)]


def infer(source: str, kernel: KernelFunction, bindings: dict[str, str], lang: str,
          launcher: tuple[tuple[int, ...] | None, str] | None = None) -> Inference:
    params = kernel.params
    consts = {}
    for p in kernel.template_params or ():
        if p.kind == "value" and p.name in bindings:
            v = evaluate(bindings[p.name], {}, {})
            if isinstance(v, (int, bool)):
                consts[p.name] = int(v)
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?\s*(-?\d+)[uUlL]*\s*\)?[ \t]*$", source, re.M):
        consts.setdefault(m.group(1), int(m.group(2)))
    sizes = [p.name for p in params if not p.pointer and (dtype_of(substitute(p.ctype, bindings)) or "")
             .startswith(("int", "uint"))]
    modes = {n: c for n in sizes if (c := _compared_only(source, kernel, n))}
    sizes = [n for n in sizes if n not in modes]
    block, block_why = choose_block(kernel, source, consts, launcher)
    facts = Analyzer(source, kernel, bindings, block, sizes).run()
    bounds = _index_bounds(facts, sizes)           # index arrays -> a size their values stay below
    first = facts
    while bounds:
        facts = Analyzer(source, kernel, bindings, block, sizes + list(bounds.values()),
                         {src: Poly.sym(n) for src, n in bounds.items()}).run()
        # keep a bound only where it made the indexed array's extent known
        resolved = {src: n for src, n in bounds.items()
                    if all(a.hi is not None for t, sv in first.index_sources.items() if sv == src
                           for a in facts.accesses if a.root == t)}
        if resolved == bounds:
            break
        bounds, facts = resolved, first
    order = list(sizes)

    # --- the grid ----------------------------------------------------------------------------------
    extra: list[str] = []
    grid_polys: dict[str, Poly] = {}
    grid_exprs: list[str] = []
    unused = [s for s in sizes if s not in facts.used_params]
    launch_notes = []
    for axis in "xyz":
        g = GRID[axis]
        if axis not in facts.grid_axes:
            if axis == "x" or grid_exprs[-1:] != ["1"]:
                grid_exprs.append("1")
            continue
        cov = facts.coverage.get(axis, [])
        if cov:
            best = _best_ceil(cov, sizes)
            grid_polys[g] = best.poly_bound()
            grid_exprs.append(best.to_expr(order))
            continue
        var = facts.grid_vars.get(axis)
        if len(unused) == 1:
            pick = unused.pop()
            launch_notes.append(f"grid.{axis}: {pick} (the kernel never reads it; it counts the blocks)")
        else:
            stem = re.sub(r"_?(idx|id|index)$", "", var or "")
            pick = f"num_{stem}s" if var and stem and len(stem) > 2 else f"grid_{axis}"
            if pick in sizes or pick in extra:
                pick = f"grid_{axis}"
            extra.append(pick)
            launch_notes.append(f"grid.{axis}: {pick}, one block per {stem or 'block index'} (blockIdx.{axis} "
                                "is not checked against any size)")
        grid_polys[g] = Poly.sym(pick)
        grid_exprs.append(pick)
    while len(grid_exprs) > 1 and grid_exprs[-1] == "1":
        grid_exprs.pop()
    order = extra + list(bounds.values()) + order   # sizes counting blocks (rows) or indexed rows are outermost

    # --- what each array needs -------------------------------------------------------------------------
    def sub_grid(p: Poly | None) -> Poly | None:
        if p is None:
            return None
        for g, v in grid_polys.items():
            p = p.substitute(g, v)
        return None if any(s.startswith("@") for s in p.symbols()) else p

    samples = _samples(order)
    by_root: dict[str, list[Access]] = {}
    for a in facts.accesses:
        by_root.setdefault(a.root, []).append(a)
    ranged: dict[str, Poly] = {src: Poly.sym(n) for src, n in bounds.items()}   # index array -> values below
    extents: dict[str, tuple[Poly | None, str]] = {}
    for root in ["@shared"] + [p.name for p in params if p.pointer]:
        acc = by_root.get(root, [])
        src = facts.index_sources.get(root)
        ext = _extent(acc, sub_grid, samples, src) if acc else (None, "the kernel never accesses it")
        extents[root] = ext
        if ext[0] is not None and src and src not in ranged:
            ranged[src] = ext[0]
    dense = _dense_strides(sizes, extents)
    for st, row in dense.items():
        extents = {k: (e.substitute(st, row) if e is not None else None, w) for k, (e, w) in extents.items()}
        ranged = {k: v.substitute(st, row) for k, v in ranged.items()}
        order.remove(st)
    args: list[ArgGuess] = []
    todos: list[str] = []
    shared_mem = "0"
    if by_root.get("@shared"):
        ext, why = extents["@shared"]
        item = _shared_item(source, kernel)
        if ext is not None and item:
            shared_mem = (ext * item).to_expr(order)
        else:
            shared_mem = TODO
            todos.append(f"launch.shared_mem: the dynamic shared memory the kernel indexes ({why or 'unknown size'})")
    multiples = dict(facts.divisible)
    ushorts: list[str] = []
    for p in params:
        ctype = substitute(p.ctype, bindings)
        dt = dtype_of(ctype)
        if not p.name:       # a macro standing for parameters (#define KARGS float* out, ...): not expanded here
            g = ArgGuess(TODO, ctype, TODO, False, value=TODO,
                         todo=f"the signature's {ctype!r} is a macro: write out the arguments it stands for")
            todos.append(f"args: {g.todo}")
            args.append(g)
            continue
        if p.pointer:
            if p.space == "local":
                continue
            intent, why = _intent(p, by_root.get(p.name, []))
            ext, ext_why = extents[p.name]
            lanes = _vector_lanes(ctype) if dt is None else None
            if lanes is not None and lanes[1] != 3:
                # a float4* is an array of fp32 with a last dimension of 4 lanes: the spec has element types
                # only, and a TODO here left the array out of the shapes' memory budget (a float4 array of
                # the large shape's 16M elements, 256 MiB, where an fp32 one would have 64 MiB)
                dt, why = lanes[0], why + f"; {ctype} is {lanes[1]} {lanes[0]} lanes: the last dimension"
            g = ArgGuess(p.name, ctype, dt if dt and dt != "bool" else TODO, True, intent=intent, why=why)
            if dt is None or dt == "bool":
                g.todo = f"dtype: {ctype!r} is not one of kerntune's element types"
                if lanes is not None:      # 3 lanes: 12 bytes in CUDA, 16 (padded to 4) in OpenCL's arrays
                    g.todo += (f" (a vector of 3 {lanes[0]}: dtype {lanes[0]} with a last dimension of 3 in CUDA, "
                               "4 in OpenCL, whose 3-vectors take the room of 4)")
            if ext is not None:
                g.shape = _row_last(_dims(ext, order), _row_lengths(source, kernel, p.name))
                g.shape += [str(lanes[1])] if lanes is not None and dt is not None else []
            else:
                g.todo = (g.todo + "; " if g.todo else "") + f"shape: {ext_why}"
            if g.dtype == "uint16" and strip(ctype) in ("ushort", "unsigned short", "uint16_t"):
                # OpenCL has no bfloat16 type: a bf16 kernel stores its values as ushort bits
                g.why += ("; uint16 as written, but a ushort array often holds bf16 bits (OpenCL has no bf16 "
                          "type): if it does, write dtype: bf16")
                ushorts.append(p.name)
            if g.todo:
                todos.append(f"args.{p.name}: {g.todo}")
            args.append(g)
        elif p.name in dense:
            args.append(ArgGuess(p.name, ctype, dt, False, value=dense[p.name].to_expr(order),
                                 why=f"a stride: rows {STRIDE_PAD} elements longer than the kernel reaches, so "
                                     "that one using the row length instead fails; any at least that long works"))
        elif p.name in modes:
            args.append(ArgGuess(p.name, ctype, dt, False, value=modes[p.name][0],
                                 why=f"compared only with {', '.join(modes[p.name])}: a mode, not a size; set the "
                                     "value its callers pass (each value is another kernel to verify)"))
        elif p.name in sizes:
            g = ArgGuess(p.name, ctype, dt, False, value=p.name, why="a size")
            if STRIDE_NAME.search(p.name):
                g.todo = "a stride: make it at least the row length the kernel assumes"
                todos.append(f"args.{p.name}: {g.todo}")
            args.append(g)
        elif dt == "bool":
            args.append(ArgGuess(p.name, ctype, "uint8", False, value="1", why="a C bool travels as one byte"))
        elif dt is not None:
            guessed = sum(1 for a in args if not a.array and a.why.startswith("a guess"))
            value, why = _scalar_guess(p.name, dt, guessed)
            args.append(ArgGuess(p.name, ctype, dt, False, value=value, why=why))
        else:
            g = ArgGuess(p.name, ctype, TODO, False, value=TODO, todo=f"{ctype!r} is not a kerntune scalar type")
            todos.append(f"args.{p.name}: {g.todo}")
            args.append(g)
    shapes = default_shapes(args, order, multiples, grid_polys, _picked_among(order))
    size_min: dict[str, int] = {}
    for a in args:
        bound = ranged.get(a.name)
        if bound is None or not a.array or not a.dtype.startswith(("int", "uint")):
            continue
        low = min(int(bound.evaluate({k: v for k, v in sh.items() if k != "label"})) for sh in shapes)
        a.range = (0, low)
        a.why += f"; its values index another array: drawn from [0, {low})"
        if len(bound.terms) == 1 and len(bound.symbols()) == 1:
            size_min[next(iter(bound.symbols()))] = low
    todos = [t for t in todos if not any(f"loaded from {r}" in t for r in ranged)]
    for src, n in bounds.items():
        size_min.setdefault(n, 1)
    arg_notes = [f"{', '.join(ushorts)}: ushort, written as uint16; OpenCL kernels store bf16 values as ushort bits: "
                 "if these hold bf16, make the dtype bf16 (as uint16 the inputs are drawn as integers, whose bits "
                 "read as bf16 include NaNs and infinities)"] if ushorts else []
    launch_why = f"block: {block_why}" + ("; " + "; ".join(launch_notes) if launch_notes else "")
    launch_notes_out = _guessed_block_notes(kernel, source, block, block_why)
    pointers = [p for p in params if p.pointer and p.space != "local"]
    return Inference(kernel=kernel.qualified_name, args=args, sizes={s: multiples.get(s, 1) for s in order},
                     size_min=size_min, noalias=bool(pointers) and all(p.restrict for p in pointers),
                     extra_sizes=extra, grid=grid_exprs, block=list(block), shared_mem=shared_mem, shapes=shapes,
                     launch_why=launch_why, todos=todos,
                     notes=sorted(set(facts.notes)) + arg_notes + launch_notes_out)


def _vector_lanes(ctype: str) -> tuple[str, int] | None:
    """A CUDA or OpenCL vector type's element dtype and lane count (``float4`` -> ("fp32", 4)), or None."""
    from kerntune.source.types import _VECTOR

    m = _VECTOR.match(strip(ctype).replace(" ", ""))
    if m is None or int(m.group(2)) == 1:
        return None
    dt = dtype_of(m.group(1))
    return (dt, int(m.group(2))) if dt and dt != "bool" else None


def _index_bounds(facts, sizes: list[str]) -> dict[str, str]:
    """Arrays whose loaded values index another array that nothing else bounds: each gets a new
    size its values stay below (``positions`` -> ``max_position``)."""
    out: dict[str, str] = {}
    for target, src in facts.index_sources.items():
        if any(a.hi is not None for a in facts.accesses if a.root == target) or src in out:
            continue
        name = "max_" + re.sub(r"s$", "", src)
        while name in sizes or name in out.values():
            name += "_"
        out[src] = name
    return out


# a stride parameter is guessed this many elements longer than the row the kernel reaches: with the row
# length itself, a kernel indexing by the row length instead of the stride was verified correct (a tour,
# 2026-12-05); 16 keeps every row aligned for vector loads up to 64 bytes
STRIDE_PAD = 16
STRIDE_NAME = re.compile(r"stride|ld[abc]?$|pitch", re.I)


def _dense_strides(sizes: list[str], extents: dict[str, tuple[Poly | None, str]]) -> dict[str, Poly]:
    """Stride parameters an array's extent is linear in (``(T - 1) * stride + row``): padded rows, the
    stride set to the row length ``row`` plus ``STRIDE_PAD``."""
    out: dict[str, Poly] = {}
    for s in sizes:
        if not STRIDE_NAME.search(s):
            continue
        for ext, _ in extents.values():
            if ext is None or s not in ext.symbols():
                continue
            lin = ext.linear_in(s)
            if lin is not None and lin[0] != Poly() and lin[1] != Poly() and not lin[1].is_const \
                    and s not in lin[1].symbols():
                out[s] = lin[1] + STRIDE_PAD
                break
    return out


def _best_ceil(cov: list[_Ceil], sizes: list[str]) -> _Ceil:
    samples = _samples(sizes)
    best = cov[0]
    for c in cov[1:]:
        if sum(c.poly_bound().evaluate(s) for s in samples) > sum(best.poly_bound().evaluate(s) for s in samples):
            best = c
    return best


def _samples(names: list[str]) -> list[dict[str, int]]:
    return [{n: base + 7 * i for i, n in enumerate(names)} for base in (1009, 4096, 65537)]


def _extent(acc: list[Access], sub_grid, samples, indexed_by: str | None = None) -> tuple[Poly | None, str]:
    """Elements an array needs: one past the largest element any access touches. Accesses
    indexed by values of another array (``indexed_by``) are left to that array's range when
    the other accesses bound the array."""
    his, unknown = [], None
    for a in acc:
        hi = sub_grid(a.hi) if a.hi is not None else None
        if hi is None:
            unknown = unknown or (a.why or "an index bounded only by the grid")
            continue
        his.append(hi + 1)
    if unknown and not (indexed_by and his and unknown.endswith(f"loaded from {indexed_by}")):
        return None, unknown
    if not his:
        return None, "the kernel never accesses it"
    return max_at(his, samples), ""


def _intent(p, acc: list[Access]) -> tuple[str, str]:
    reads = any(a.read for a in acc)
    writes = any(a.write for a in acc)
    if not acc:
        return "in", "never accessed"
    if any(a.atomic for a in acc):
        return "inout", "updated with atomics"
    if writes and reads:
        return "inout", "read and written"
    if writes:
        if any(a.partial for a in acc if a.write):
            return "inout", ("written only where loaded data says (a condition or an index from memory): the "
                             "other elements keep their values")
        if any(a.reread for a in acc):
            return "out", "written, and read only where it was written first"
        return "out", "only written"
    return "in", "const" if p.const else "only read"


# guessed values of float scalars, in argument order: never 0 or 1, which hide a kernel that ignores the
# argument (x * 1, pow(x, 1), clamp(x, 1, 1) is a constant: an adversarial tour had `bench` call such a
# kernel correct and 8.8x faster), each different from the others (clamp(x, lo, hi) with lo < hi) and
# exact in every float type
FLOAT_GUESSES = ("0.75", "1.25", "0.375", "1.625", "2.5", "0.625", "3.25", "1.875")


def _compared_only(source: str, kernel: KernelFunction, name: str) -> list[str] | None:
    """The integer constants an int parameter is compared with (``mode == 2``, ``2 != mode``), when that is
    all the kernel does with it: a mode or flag, which made a size of 1024 in every shape (a user tour).
    None when it is used any other way, or not at all."""
    body_node = kernel.node.child_by_field_name("body") if kernel.node is not None else None
    if body_node is None:
        return None
    body = source[body_node.start_byte:body_node.end_byte]
    found: list[str] = []
    for m in re.finditer(r"\b" + re.escape(name) + r"\b", body):
        after = re.match(r"\s*(?:==|!=)\s*(-?\d+)\b", body[m.end():])
        before = re.search(r"\b(-?\d+)\s*(?:==|!=)\s*$", body[:m.start()])
        if after is None and before is None:
            return None
        value = (after or before).group(1)
        if value not in found:
            found.append(value)
    return found or None


def _scalar_guess(name: str, dt: str, before: int) -> tuple[str, str]:
    """A value for a scalar that is not a size; ``before``: how many scalars were guessed before it."""
    if dt.startswith("fp"):
        if re.search(r"eps", name, re.I):
            return "1.0e-6", "epsilon"
        return (FLOAT_GUESSES[before % len(FLOAT_GUESSES)],
                "a guess, not 0 or 1 (a kernel that ignored it would pass): set the value its callers pass")
    return "3", "a guess, not 0 or 1 (a kernel that ignored it would pass): set the value its callers pass"


def _shared_item(source: str, kernel: KernelFunction) -> int | None:
    from kerntune.source.types import sizeof

    body = source[kernel.node.start_byte:kernel.node.end_byte]
    m = re.search(r"extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([\w:]+)\s+\w+\s*\[\s*\]", body)
    return sizeof(m.group(1)) if m else None


# a count of picks (top-k) and the count of what it picks from (experts): k <= num_experts
_PICKS = re.compile(r"(top_?)?k|num_?(top_?)?k|topk", re.I)
_PICKED_FROM = re.compile(r"experts", re.I)


def _picked_among(order: list[str]) -> dict[str, str]:
    """Sizes that count picks among others (``k`` of ``num_experts``: a top-k gating picks k distinct
    experts, and a k of 4096, the typical GEMM K, beside 8 experts made a meaningless spec) -> the size
    they cannot exceed."""
    among = [s for s in order if _PICKED_FROM.search(s)]
    return {s: among[0] for s in order if among and _PICKS.fullmatch(s)}


def default_shapes(args: list[ArgGuess], order: list[str], multiples: dict[str, int],
                   grid: dict[str, Poly], at_most: dict[str, str] | None = None) -> list[dict[str, int]]:
    """Two shapes that fit the memory budgets (1 MiB and 64 MiB of arrays) and respect ``multiples``
    and ``at_most`` (size -> a size it cannot exceed; it takes top-k's typical value)."""
    at_most = at_most or {}
    from kerntune.dtypes import DTYPES

    def bytes_at(values: dict[str, int]) -> int | None:
        total = 0
        for a in args:
            if not a.array or a.shape is None or a.dtype not in DTYPES:
                continue
            n = 1
            for d in a.shape:
                v = evaluate(d.replace("//", "/"), {k: str(x) for k, x in values.items()}, {})
                if not isinstance(v, int):
                    return None
                n *= max(v, 0)
            total += n * DTYPES[a.dtype].itemsize
        return total

    def fit(budget: int, grow: int) -> dict[str, int]:
        values = {s: _round(_typical("top_k" if s in at_most else s) * (grow if _SCALABLE.search(s) else 1),
                            multiples.get(s, 1)) for s in order}

        def capped() -> None:
            for s, cap in at_most.items():
                values[s] = min(values[s], max(multiples.get(s, 1), _round(values[cap], multiples.get(s, 1))))

        capped()
        for _ in range(200):
            b = bytes_at(values)
            if b is None or b <= budget:
                break
            scalable = [s for s in order if _SCALABLE.search(s) and values[s] > multiples.get(s, 1)] or \
                [s for s in order if values[s] > multiples.get(s, 1)]
            if not scalable:
                break
            s = max(scalable, key=lambda k: values[k])
            values[s] = max(multiples.get(s, 1), _round(values[s] // 2, multiples.get(s, 1)))
            capped()
        return values

    small, large = fit(SMALL_BUDGET, 1), fit(LARGE_BUDGET, 16)
    shapes = [{"label": "small", **small}]
    if large != small:
        shapes.append({"label": "large", **large})
    return shapes


def _round(v: int, m: int) -> int:
    return max(m, (v // m) * m)
