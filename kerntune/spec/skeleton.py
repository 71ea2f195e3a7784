"""`kerntune init`: a spec skeleton written from the kernel's own signature.

Types come from the parameter declarations; intents from how the body uses
each pointer (const or only read: in; only stored to: out; both: inout);
integer scalars become named sizes. What cannot be inferred is marked TODO,
which the validator then names precisely until the user fills it in.
"""

from __future__ import annotations

from kerntune.dtypes import C_TYPE_NAMES
from kerntune.source.parse import KernelFunction, ParsedSource, param_uses

TODO = "TODO"


def _dtype(ctype: str) -> str:
    words = [w for w in ctype.split() if w not in ("const", "volatile", "__restrict__", "restrict")]
    return C_TYPE_NAMES.get(" ".join(words), TODO)


def skeleton(parsed: ParsedSource, kernel: KernelFunction, source_name: str) -> str:
    sizes = [p.name for p in kernel.params if not p.pointer and _dtype(p.ctype).startswith(("int", "uint"))]
    dim = sizes[0] if len(sizes) == 1 else TODO
    lines = [
        f"# kerntune spec for {source_name}, written by `kerntune init` from the kernel's signature.",
        "# Check every guess, replace each TODO, then run `kerntune check` on the kernel.",
        f"kernel: {kernel.name}",
        "args:",
    ]
    for p in kernel.params:
        dt = _dtype(p.ctype)
        if p.pointer:
            if p.space == "local":
                lines.append(f"  # {p.name}: __local scratch memory is not supported as an argument; "
                             "make it a fixed-size __local array in the kernel")
                continue
            read, written = param_uses(kernel, parsed.source, p.name)
            intent = "in" if p.const or not written else ("inout" if read else "out")
            why = "const" if p.const else ("read and written" if intent == "inout" else
                                           "only written" if intent == "out" else "only read")
            lines.append(f"  - {{name: {p.name}, dtype: {dt}, shape: [{dim}], intent: {intent}}}"
                         f"    # {p.ctype}*: {why}")
        else:
            value = p.name if p.name in sizes else TODO
            comment = "  # a size" if p.name in sizes else "  # TODO: a number or an expression of sizes"
            lines.append(f"  - {{name: {p.name}, dtype: {dt}, value: {value}}}{comment}")
    grid_size = dim if dim != TODO else TODO
    lines += [
        "launch:                       # grid and block as expressions of sizes",
        f"  grid: [\"ceil_div({grid_size}, 256)\"]",
        "  block: [256]",
        "shapes:                       # the sizes to verify and time on",
    ]
    if sizes:
        lines.append("  - {" + ", ".join(f"{s}: 1048576" for s in sizes) + "}")
    else:
        lines.append("  - {n: 1048576}    # TODO: name the sizes the shapes and launch use")
    lines += [
        "# Optional:",
        "# reference: reference.py:my_function   # NumPy reference (file relative to this spec)",
        "# tolerance: {rel_l2: 1e-5, atol: 1e-5, rtol: 1e-4}",
        "# bytes_moved: \"3 * n * 4\"              # default: sum of argument sizes (inout twice)",
    ]
    return "\n".join(lines) + "\n"
