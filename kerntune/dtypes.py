"""The element types a kernel argument can have, and everything kerntune needs
to know about each: host storage, C type names per language, default
verification tolerances, and the poison bit patterns written into outputs.

bf16 is stored on the host as its raw 16-bit pattern (``uint16``) so no extra
numpy extension is needed; :func:`decode` turns any stored array into values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """Verification bounds: ``rel_l2`` bounds ||out - ref|| / ||ref||, and every
    element must satisfy |out - ref| <= atol + rtol * |ref|."""

    rel_l2: float
    atol: float
    rtol: float


@dataclass(frozen=True)
class DType:
    name: str
    storage: np.dtype          # host/device storage dtype
    is_float: bool
    cuda_type: str
    opencl_type: str
    tolerance: Tolerance
    poison: tuple[int, int]    # two fixed bit patterns (NaN for floats); see also finite_poison

    @property
    def itemsize(self) -> int:
        return self.storage.itemsize

    def ctype(self, lang: str) -> str:
        return self.cuda_type if lang == "cuda" else self.opencl_type


_EXACT = Tolerance(0.0, 0.0, 0.0)

DTYPES: dict[str, DType] = {
    d.name: d
    for d in [
        DType("fp64", np.dtype(np.float64), True, "double", "double",
              Tolerance(1e-12, 1e-12, 1e-10), (0x7FF4A5A5A5A5A5A5, 0xFFF3B3C3D3E3F301)),
        DType("fp32", np.dtype(np.float32), True, "float", "float",
              Tolerance(1e-5, 1e-5, 1e-4), (0x7FA5A5A5, 0xFFB3C3D3)),
        DType("fp16", np.dtype(np.float16), True, "__half", "half",
              Tolerance(1e-3, 1e-3, 2e-3), (0x7D5A, 0xFD3B)),
        DType("bf16", np.dtype(np.uint16), True, "__nv_bfloat16", "ushort",
              Tolerance(1e-2, 1e-2, 1.6e-2), (0x7FA5, 0xFFB3)),
        DType("int8", np.dtype(np.int8), False, "signed char", "char", _EXACT, (0x5A, 0x3C)),
        DType("uint8", np.dtype(np.uint8), False, "unsigned char", "uchar", _EXACT, (0x5A, 0xC3)),
        DType("int16", np.dtype(np.int16), False, "short", "short", _EXACT, (0x5A5A, 0x3C3C)),
        DType("uint16", np.dtype(np.uint16), False, "unsigned short", "ushort", _EXACT, (0x5A5A, 0xC3C3)),
        DType("int32", np.dtype(np.int32), False, "int", "int", _EXACT, (0x5A5A5A5A, 0x3C3C3C3C)),
        DType("uint32", np.dtype(np.uint32), False, "unsigned int", "uint", _EXACT, (0x5A5A5A5A, 0xC3C3C3C3)),
        DType("int64", np.dtype(np.int64), False, "long long", "long", _EXACT,
              (0x5A5A5A5A5A5A5A5A, 0x3C3C3C3C3C3C3C3C)),
        DType("uint64", np.dtype(np.uint64), False, "unsigned long long", "ulong", _EXACT,
              (0x5A5A5A5A5A5A5A5A, 0xC3C3C3C3C3C3C3C3)),
    ]
}

DTYPE_NAMES = tuple(DTYPES)

# C type spellings (CUDA and OpenCL) mapped to dtype names; used by `kerntune init`.
C_TYPE_NAMES: dict[str, str] = {
    "float": "fp32", "double": "fp64",
    "half": "fp16", "__half": "fp16",
    "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16", "bfloat16": "bf16", "__bf16": "bf16",
    "char": "int8", "signed char": "int8", "int8_t": "int8",
    "unsigned char": "uint8", "uchar": "uint8", "uint8_t": "uint8",
    "short": "int16", "int16_t": "int16",
    "unsigned short": "uint16", "ushort": "uint16", "uint16_t": "uint16",
    "int": "int32", "int32_t": "int32", "signed": "int32", "signed int": "int32",
    "unsigned": "uint32", "unsigned int": "uint32", "uint": "uint32", "uint32_t": "uint32",
    "long": "int64", "long long": "int64", "int64_t": "int64", "size_t": "uint64",
    "unsigned long": "uint64", "unsigned long long": "uint64", "ulong": "uint64", "uint64_t": "uint64",
}


def bits_dtype(dt: DType) -> np.dtype:
    """The unsigned integer type with the same width, for bit-level comparisons."""
    return np.dtype(f"u{dt.itemsize}")


def bf16_from_float(values: np.ndarray) -> np.ndarray:
    """float32 values -> bf16 bit patterns, rounding to nearest even; NaN stays NaN."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    out = np.empty(f.shape, dtype=np.uint16)
    flat_f, flat_out = f.reshape(-1), out.reshape(-1)
    step = 1 << 22     # in chunks: a few temporaries that stay in cache (whole-array ones made 234M values take 9 s)
    for s in range(0, flat_f.size, step):
        part = flat_f[s:s + step]
        u = part.view(np.uint32)
        rounded = (u + (((u >> 16) & 1) + 0x7FFF)) >> 16
        nan = np.isnan(part)
        if nan.any():
            rounded[nan] = (u[nan] >> 16) | 0x40
        flat_out[s:s + step] = rounded
    return out


def bf16_to_float(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def encode(dt: DType, values: np.ndarray) -> np.ndarray:
    """Values (any float/int array) -> host storage array for this dtype."""
    if dt.name == "bf16":
        return bf16_from_float(np.asarray(values, dtype=np.float32))
    return np.ascontiguousarray(values).astype(dt.storage, copy=False)


def decode(dt: DType, stored: np.ndarray) -> np.ndarray:
    """Host storage array -> values (float32 for fp16/bf16, native otherwise)."""
    if dt.name == "bf16":
        return bf16_to_float(stored)
    if dt.name == "fp16":
        return stored.astype(np.float32)
    return stored


def poisoned(dt: DType, shape: tuple[int, ...], which: int = 0) -> np.ndarray:
    """An array of the given shape filled with poison pattern ``which`` (0 or 1)."""
    return filled(dt, shape, dt.poison[which])


def finite_poison(dt: DType, rng: np.random.Generator) -> int:
    """A finite value chosen at random, as a bit pattern: written into outputs so that a
    kernel which writes only where the output looks unwritten (NaN, say) leaves it
    there and fails, and no fixed value can be recognized and skipped."""
    bits = bits_dtype(dt)
    while True:
        if dt.is_float:
            value = float(rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-2.0, 3.0))
            pattern = int(encode(dt, np.array([value], dtype=np.float64 if dt.itemsize == 8 else np.float32))
                          .view(bits)[0])
        else:
            info = np.iinfo(dt.storage)
            pattern = int(np.array([rng.integers(info.min, info.max, endpoint=True, dtype=dt.storage)],
                                   dtype=dt.storage).view(bits)[0])
        if pattern not in dt.poison and pattern != 0:
            return pattern


def filled(dt: DType, shape: tuple[int, ...], pattern: int) -> np.ndarray:
    """An array of the given shape holding one bit pattern."""
    return np.full(shape, pattern, dtype=bits_dtype(dt)).view(dt.storage)
