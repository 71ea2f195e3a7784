"""`kerntune init`: a spec written from what the kernel's code does.

Types come from the parameter declarations (template parameters substituted);
intents, shapes, size constraints and the launch from the analysis of the
body (:mod:`kerntune.spec.infer`); default shapes fit a small memory budget.
Every guess carries a comment saying where it came from; what cannot be
known is marked TODO, which the validator then names precisely until the
user fills it in.
"""

from __future__ import annotations

import json

from kerntune.spec.infer import TODO, ArgGuess, Inference


def _q(text: str) -> str:
    """A YAML flow scalar: expressions with spaces or special characters quoted."""
    if text == TODO or text.replace("_", "").isalnum():
        return text
    return json.dumps(text)


def _arg_line(a: ArgGuess) -> str:
    if a.array:
        shape = ", ".join(_q(d) for d in a.shape) if a.shape is not None else TODO
        extra = f", range: [{a.range[0]}, {a.range[1]}]" if a.range else ""
        line = f"  - {{name: {a.name}, dtype: {a.dtype}, shape: [{shape}], intent: {a.intent}{extra}}}"
        why = f"{a.ctype}*: {a.why}"
    else:
        line = f"  - {{name: {a.name}, dtype: {a.dtype}, value: {_q(a.value or TODO)}}}"
        why = f"{a.ctype}: {a.why}" if a.why else a.ctype
    if a.todo:
        why += f"; TODO {a.todo}"
    return f"{line}    # {why}"


def skeleton(inf: Inference, kernel_name: str, source_name: str, origin_note: str = "",
             include_dirs: list[str] = ()) -> str:
    lines = [
        f"# kerntune spec for {source_name}, written by `kerntune init` from the kernel's code.",
        "# Check the guesses" + (", replace each TODO" if inf.todos else "") + f", then run `kerntune check {source_name}`.",
        f"kernel: {_q(kernel_name)}" + (f"    # {origin_note}" if origin_note else ""),
    ]
    if include_dirs:
        lines.append("include_dirs: [" + ", ".join(_q(d) for d in include_dirs) + "]")
    constrained = {s: m for s, m in inf.sizes.items() if m > 1 or s in inf.size_min}
    if constrained:
        lines.append("sizes:")
        for s in inf.sizes:
            if s not in constrained:
                continue
            parts, why = [], []
            if inf.sizes[s] > 1:
                parts.append(f"multiple_of: {inf.sizes[s]}")
                why.append(f"the kernel divides it by {inf.sizes[s]}")
            if s in inf.size_min:
                parts.append(f"min: {inf.size_min[s]}")
                why.append("index values are drawn below it")
            lines.append(f"  {s}: {{{', '.join(parts)}}}    # {'; '.join(why)}")
    lines.append("args:")
    lines += [_arg_line(a) for a in inf.args]
    lines.append(f"launch:                       # {inf.launch_why}")
    lines.append("  grid: [" + ", ".join(_q(g) for g in inf.grid) + "]")
    lines.append("  block: [" + ", ".join(str(b) for b in inf.block) + "]")
    if inf.shared_mem != "0":
        lines.append(f"  shared_mem: {_q(inf.shared_mem)}" + ("    # TODO the dynamic shared memory in bytes"
                                                               if inf.shared_mem == TODO else
                                                               "    # the kernel's extern __shared__ array"))
    if inf.noalias:
        lines.append("noalias: true                 # every pointer parameter is __restrict__: the arrays never overlap")
    lines.append("shapes:                       # defaults within 1 MiB and 64 MiB of arrays; use your real sizes")
    for sh in inf.shapes:
        lines.append("  - {" + ", ".join(f"{k}: {v}" for k, v in sh.items()) + "}")
    for note in inf.notes:
        lines.append(f"# note: {note}")
    lines += [
        "# Optional:",
        "# reference: reference.py:my_function   # NumPy reference (file relative to this spec)",
        "# tolerance: {rel_l2: 1e-5, atol: 1e-5, rtol: 1e-4}   # fp32's defaults; every element must satisfy",
        "#   |out - ref| <= atol * max(1, max |ref|) + rtol * |ref| (atol: in units of the output's largest value)",
    ]
    return "\n".join(lines) + "\n"
