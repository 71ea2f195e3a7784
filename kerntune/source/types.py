"""C types as kernels spell them: template parameters substituted, qualifiers
removed, sizes of scalars, CUDA vector types and the source's own structs.
Used by the spec-vs-signature check and by ``kerntune init``'s analysis."""

from __future__ import annotations

import re

from kerntune.dtypes import C_TYPE_NAMES

QUALIFIERS = {"const", "volatile", "__restrict__", "restrict", "__restrict", "struct", "typename", "class",
              "__global", "global", "__local", "local", "__constant", "constant", "__private", "private"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

SCALAR_SIZES = {
    "float": 4, "double": 8, "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2, "bfloat16": 2,
    "__bf16": 2, "bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "uchar": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "ushort": 2, "int16_t": 2, "uint16_t": 2, "int": 4, "signed": 4,
    "signed int": 4, "unsigned": 4, "unsigned int": 4, "uint": 4, "int32_t": 4, "uint32_t": 4, "long": 8,
    "long long": 8, "unsigned long": 8, "unsigned long long": 8, "ulong": 8, "int64_t": 8, "uint64_t": 8,
    "size_t": 8, "ptrdiff_t": 8, "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
}
_VECTOR_BASE = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "long": 8, "ulong": 8,
                "longlong": 8, "ulonglong": 8, "float": 4, "double": 8}
_VECTOR = re.compile(r"^(" + "|".join(_VECTOR_BASE) + r")([1234]|8|16)$")
OTHER_SIZES = {"__half2": 4, "half2": 4, "__nv_bfloat162": 4, "nv_bfloat162": 4}


def strip(ctype: str) -> str:
    """``const scalar_t* __restrict__`` -> ``scalar_t`` (qualifiers, pointers and references removed)."""
    text = ctype.replace("*", " ").replace("&", " ")
    words = [w for w in text.split() if w not in QUALIFIERS]
    return " ".join(words)


def substitute(ctype: str, bindings: dict[str, str]) -> str:
    """Replace template parameter names by their arguments, word by word."""
    if not bindings:
        return ctype
    return _WORD.sub(lambda m: bindings.get(m.group(0), m.group(0)), ctype)


def dtype_of(ctype: str) -> str | None:
    """The spec dtype of a C element type, or None when it is not one of kerntune's dtypes."""
    base = strip(ctype)
    base = re.sub(r"^(std|c10|at)::", "", base)
    if base == "bool":
        return "bool"
    return C_TYPE_NAMES.get(base)


def sizeof(ctype: str, structs: dict[str, int] | None = None) -> int | None:
    """Size in bytes of a scalar, a CUDA/OpenCL vector type, or a struct whose size the caller knows."""
    base = strip(ctype)
    if base in SCALAR_SIZES:
        return SCALAR_SIZES[base]
    if base in OTHER_SIZES:
        return OTHER_SIZES[base]
    m = _VECTOR.match(base.replace(" ", ""))
    if m:
        return _VECTOR_BASE[m.group(1)] * int(m.group(2))
    if structs and base.replace(" ", "") in structs:
        return structs[base.replace(" ", "")]
    return None


def compatible(spec_dtype: str, param_dtype: str) -> bool:
    """A spec dtype may be passed for a parameter of this dtype: the same, or a 16-bit float
    passed as its raw 16-bit pattern (bf16 travels as ``ushort`` in OpenCL)."""
    if spec_dtype == param_dtype:
        return True
    raw16 = {"uint16", "int16"}
    return (spec_dtype in ("bf16", "fp16") and param_dtype in raw16) or \
        (param_dtype in ("bf16", "fp16") and spec_dtype in raw16) or \
        (param_dtype == "bool" and spec_dtype in ("uint8", "int8"))
