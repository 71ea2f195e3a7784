"""Kernel names as a spec writes them: a plain identifier (``vector_add``), a
qualified one (``ext::rms_norm_kernel``) or a template instantiation
(``ext::merge_attn_states_kernel<__nv_bfloat16, 128>``).

The text is kept as the user wrote it (normalized whitespace): CuPy's
``RawModule(name_expressions=...)`` needs exactly that string, and nvcc gets an
explicit instantiation built from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUALIFIED = re.compile(r"^(::)?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")
# characters a template argument may use: types, numbers, expressions, nested templates
_ARG_CHARS = re.compile(r"^[A-Za-z0-9_:<>()*&,.+\-/%|^!~ \[\]]+$")


@dataclass(frozen=True)
class KernelName:
    text: str                           # normalized: "ns::kernel<__nv_bfloat16, 128>"
    qualified: str                      # "ns::kernel"
    template_args: tuple[str, ...] | None = None   # None: not a template instantiation
    rooted: bool = False                # written "::kernel": in exactly this namespace (the global one)

    @property
    def base(self) -> str:
        """The unqualified function name: what the source defines."""
        return self.qualified.rsplit("::", 1)[-1]

    @property
    def namespace(self) -> tuple[str, ...]:
        parts = self.qualified.lstrip(":").split("::")
        return tuple(parts[:-1])

    @property
    def is_plain(self) -> bool:
        """A C identifier: usable as an extern "C" symbol or an OpenCL kernel name."""
        return self.template_args is None and "::" not in self.qualified and not self.rooted

    @property
    def spelled(self) -> str:
        """The qualified name as a lookup needs it: with the leading "::" of a rooted name."""
        return ("::" if self.rooted else "") + self.qualified

    def with_args(self, args: tuple[str, ...]) -> "KernelName":
        return KernelName(f"{self.spelled}<{', '.join(args)}>", self.qualified, tuple(args), self.rooted)


class KernelNameError(ValueError):
    pass


def split_args(text: str) -> list[str]:
    """Split a template argument list at top-level commas (nested <>, (), [] kept whole)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
            if depth < 0:
                raise KernelNameError(f"unbalanced {ch!r} in template arguments {text!r}")
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise KernelNameError(f"unbalanced brackets in template arguments {text!r}")
    out.append("".join(cur).strip())
    return out


def normalize_arg(arg: str) -> str:
    """One spelling per argument: single spaces, none around brackets, ", " between nested arguments."""
    arg = " ".join(arg.split())
    arg = re.sub(r"\s*([<>,()])\s*", r"\1", arg)
    return arg.replace(",", ", ")


def parse_kernel_name(text: str) -> KernelName:
    """Parse and normalize a kernel name; raise KernelNameError with what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise KernelNameError("expected a kernel name, found an empty value")
    s = " ".join(text.split())
    lt = s.find("<")
    if lt < 0:
        qualified, args = re.sub(r"\s*::\s*", "::", s).strip(), None
    else:
        if not s.endswith(">"):
            raise KernelNameError(f"expected NAME<ARGS> with the arguments closed by '>', found {text!r}")
        qualified = re.sub(r"\s*::\s*", "::", s[:lt]).strip()
        inner = s[lt + 1:-1]
        if not inner.strip():
            raise KernelNameError(f"empty template argument list in {text!r} (write the arguments, e.g. "
                                  f"{qualified}<float>)")
        if not _ARG_CHARS.match(inner):
            raise KernelNameError(f"unexpected characters in the template arguments of {text!r}")
        args = tuple(normalize_arg(a) for a in split_args(inner))
        if any(not a for a in args):
            raise KernelNameError(f"an empty template argument in {text!r}")
    if not _QUALIFIED.match(qualified):
        raise KernelNameError(f"expected a C identifier, a qualified name (ns::kernel) or a template "
                              f"instantiation (ns::kernel<float, 128>); found {text!r}")
    rooted = qualified.startswith("::")
    qualified = qualified.lstrip(":")
    spelled = ("::" if rooted else "") + qualified
    norm = spelled if args is None else f"{spelled}<{', '.join(args)}>"
    return KernelName(norm, qualified, args, rooted)


def base_name(text: str) -> str:
    """The unqualified function name of a kernel name (lenient: any text)."""
    try:
        return parse_kernel_name(text).base
    except KernelNameError:   # e.g. a template's kernel name with Jinja in its arguments
        return text.split("<", 1)[0].split("::")[-1].strip()
