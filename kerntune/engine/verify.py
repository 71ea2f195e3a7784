"""Element-wise comparison of a kernel's outputs against expected values.

Every check reports both the normalized error ||out - ref|| / ||ref|| and the
element-wise bound |out - ref| <= atol * max(1, max |ref|) + rtol * |ref| (a float
output's atol is in units of its largest value, once that is above 1: rounding
errors grow with the values, and where large terms cancel an element near zero
carries them); NaN or Inf where the reference is finite always fails; outputs still holding the poison pattern are
reported as unwritten.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kerntune.dtypes import DType, Tolerance, bits_dtype, decode
from kerntune.results import ArgCheck
from kerntune.spec.model import ArgSpec, KernelSpec

CHUNK = 1 << 23
MAX_THREADS = 8       # threads comparing chunks of one large output


def tolerance_for(spec: KernelSpec, arg: ArgSpec) -> Tolerance:
    base = arg.dt.tolerance
    for override in (spec.tolerance, arg.tolerance):
        if override is not None:
            base = Tolerance(
                rel_l2=base.rel_l2 if override.rel_l2 is None else override.rel_l2,
                atol=base.atol if override.atol is None else override.atol,
                rtol=base.rtol if override.rtol is None else override.rtol,
            )
    return base


def unwritten_mask(dt: DType, got: np.ndarray, which: int) -> np.ndarray:
    return got.view(bits_dtype(dt)) == np.array(dt.poison[which], dtype=bits_dtype(dt))


def _slow_chunk(dt: DType, got: np.ndarray, expected: np.ndarray, expected_is_storage: bool, tol: Tolerance):
    """Every case, non-finite values included: (sq_diff, sq_ref, max_abs, max_rel, bad, first, kind,
    nonfinite), ``bad`` counting the ``nonfinite`` elements (NaN or Inf unlike the reference) too."""
    g = decode(dt, got).astype(np.float64)
    e = (decode(dt, expected) if expected_is_storage else expected).astype(np.float64)
    ef, gf = np.isfinite(e), np.isfinite(g)
    # where the reference is not finite, the output must be the same non-finite value
    same_nonfinite = (np.isnan(e) & np.isnan(g)) | (np.isinf(e) & (g == e))
    nf_bad = (ef & ~gf) | (~ef & ~same_nonfinite)
    both = ef & gf
    diff = np.where(both, np.abs(g - e), 0.0)
    ae = np.where(both, np.abs(e), 0.0)
    tol_bad = both & (diff > tol.atol + tol.rtol * ae)
    rel = np.where(both & (ae > 0), diff / np.maximum(ae, np.finfo(np.float64).tiny), 0.0)
    nb, tb = int(nf_bad.sum()), int(tol_bad.sum())
    first, kind = None, ""
    if nb or tb:
        i_nf = int(np.flatnonzero(nf_bad)[0]) if nb else None
        i_tb = int(np.flatnonzero(tol_bad)[0]) if tb else None
        first = min(i for i in (i_nf, i_tb) if i is not None)
        kind = "nonfinite" if first == i_nf else "tolerance"
    return (float(np.sum(diff * diff)), float(np.sum(ae * ae)), float(diff.max()), float(rel.max()),
            nb + tb, first, kind, nb)


def _wide_int(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 64-bit integer array as (high 32 bits, low 32 bits), both int64: each exact."""
    hi = (x >> 32).astype(np.int64)
    lo = (x & 0xFFFFFFFF).astype(np.int64)
    return hi, lo


def _int64_chunk(dt: DType, got: np.ndarray, expected: np.ndarray, tol: Tolerance):
    """64-bit integers, compared exactly: a float64 holds integers only up to 2**53, so two
    different values above that would convert to the same float and pass. Each difference is
    formed from the high and low 32 bits (both differences exact) and rounded once, so a
    difference is never zero unless the values are equal."""
    e = expected.astype(dt.storage)
    gh, gl = _wide_int(got)
    eh, el = _wide_int(e)
    diff = np.abs((gh - eh).astype(np.float64) * 4294967296.0 + (gl - el).astype(np.float64))
    ae = np.abs(e.astype(np.float64))
    bad = diff > tol.atol + tol.rtol * ae        # zero exactly where the values are equal
    tb = int(np.count_nonzero(bad))
    rel = np.divide(diff, ae, out=np.zeros_like(diff), where=ae > 0)
    return (float(np.dot(diff, diff)), float(np.dot(ae, ae)), float(diff.max(initial=0.0)),
            float(rel.max(initial=0.0)), tb, int(np.argmax(bad)) if tb else None, "tolerance" if tb else "", 0)


def _chunk(dt: DType, got: np.ndarray, expected: np.ndarray, expected_is_storage: bool, tol: Tolerance):
    """One chunk's (sq_diff, sq_ref, max_abs, max_rel, bad, first, kind, nonfinite). Two fast paths give
    the same answers as ``_slow_chunk`` with fewer passes over the data: outputs bit for bit
    equal to stored expected values (no error at all), and outputs where every difference
    is finite (no NaN or Inf on either side); anything else takes the slow path."""
    if dt.storage.kind in "iu" and dt.itemsize == 8 and (expected_is_storage or expected.dtype.kind in "iu"):
        return _int64_chunk(dt, got, expected, tol)
    if expected_is_storage and np.array_equal(got.view(bits_dtype(dt)), expected.view(bits_dtype(dt))):
        e = decode(dt, expected).astype(np.float64)
        sq_ref = float(np.dot(e, e))
        if math.isfinite(sq_ref):
            return 0.0, sq_ref, 0.0, 0.0, 0, None, "", 0
    g = decode(dt, got).astype(np.float64)
    ae = (decode(dt, expected) if expected_is_storage else expected).astype(np.float64)
    diff = np.subtract(g, ae, out=g)
    np.abs(diff, out=diff)
    max_abs = float(diff.max())
    if not math.isfinite(max_abs):       # a NaN or an Inf on either side (or an overflow)
        return _slow_chunk(dt, got, expected, expected_is_storage, tol)
    np.abs(ae, out=ae)
    bound = np.multiply(ae, tol.rtol)        # the few arrays made here are reused in place
    bound += tol.atol
    bad = diff > bound
    tb = int(np.count_nonzero(bad))
    first = int(np.argmax(bad)) if tb else None
    rel = bound
    rel.fill(0.0)
    np.divide(diff, ae, out=rel, where=ae > 0)
    return (float(np.dot(diff, diff)), float(np.dot(ae, ae)), max_abs, float(rel.max()),
            tb, first, "tolerance" if tb else "", 0)


def _threads() -> int:
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


@functools.lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="kerntune-compare")


def _scalar(v: np.generic) -> float | int:
    """A reported value: integers exactly (a float64 would round those above 2**53), else a float."""
    return int(v) if isinstance(v, np.integer) else float(v)


def magnitude(dt: DType, expected: np.ndarray, expected_is_storage: bool) -> float:
    """The largest finite |expected| of a float output: the unit its absolute tolerance is in, once above
    1 (``compare``). The rounding error of a sum grows with the terms, not with the result: where large
    terms cancel, an element near zero carries the error of the large ones."""
    size = 0.0
    for s in range(0, expected.size, CHUNK):
        part = expected[s:s + CHUNK]
        v = np.abs((decode(dt, part) if expected_is_storage else part).astype(np.float64))
        v = v[np.isfinite(v)]
        if v.size:
            size = max(size, float(v.max()))
    return size


def _parts(dt: DType, g_flat: np.ndarray, e_flat: np.ndarray, expected_is_storage: bool, tol: Tolerance,
           starts: range) -> list[tuple]:
    """Each chunk's ``_chunk`` answer, in order."""
    def one(s: int):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            return _chunk(dt, g_flat[s:s + CHUNK], e_flat[s:s + CHUNK], expected_is_storage, tol)
    # NumPy releases the GIL in its loops: large outputs are compared a chunk per thread (in order)
    return list(_pool().map(one, starts)) if len(starts) > 1 and _threads() > 1 else [one(s) for s in starts]


def compare(arg: ArgSpec, tol: Tolerance, got: np.ndarray, expected: np.ndarray, expected_is_storage: bool,
            unwritten: np.ndarray | None = None) -> ArgCheck:
    """Compare ``got`` (storage dtype) with ``expected`` (storage dtype when
    ``expected_is_storage``, else values in any numeric dtype). A float output's ``atol`` is in units
    of its :func:`magnitude` where that is above 1: the element bound is
    |out - ref| <= atol * max(1, max |ref|) + rtol * |ref|. (Compared at ``atol`` first; the
    magnitude is read only where an element misses that, which the larger bound can only pass.)"""
    dt = arg.dt
    g_flat = got.reshape(-1)
    e_flat = expected.reshape(-1)
    n = g_flat.size
    if unwritten is not None and unwritten.any():
        idx = np.unravel_index(int(np.flatnonzero(unwritten.reshape(-1))[0]), got.shape)
        return ArgCheck(name=arg.name, ok=False, bad_elements=int(unwritten.sum()),
                        first_bad_index=[int(i) for i in idx], reason="unwritten")
    starts = range(0, n, CHUNK)
    parts = _parts(dt, g_flat, e_flat, expected_is_storage, tol, starts)
    atol = tol.atol
    if dt.is_float and any(p[4] > p[7] for p in parts):       # elements out of bounds: at this size's atol?
        if expected_is_storage:        # decoded once, for the magnitude and the second comparison both
            e_flat, expected_is_storage = decode(dt, e_flat), False
        size = magnitude(dt, e_flat, expected_is_storage)
        if size > 1.0:
            atol = tol.atol * size
            parts = _parts(dt, g_flat, e_flat, expected_is_storage, replace(tol, atol=atol), starts)
    sq_diff = sq_ref = 0.0
    max_abs = max_rel = 0.0
    bad = nonfinite = 0
    first_bad: int | None = None
    first_kind = ""
    for s, part in zip(starts, parts):
        c_sq_diff, c_sq_ref, c_max_abs, c_max_rel, c_bad, c_first, c_kind, c_nonfinite = part
        sq_diff += c_sq_diff
        sq_ref += c_sq_ref
        max_abs, max_rel = max(max_abs, c_max_abs), max(max_rel, c_max_rel)
        bad += c_bad
        nonfinite += c_nonfinite
        if first_bad is None and c_first is not None:
            first_bad, first_kind = s + c_first, c_kind
    rel_l2 = math.sqrt(sq_diff) / math.sqrt(sq_ref) if sq_ref > 0 else (0.0 if sq_diff == 0 else math.inf)
    l2_bad = rel_l2 > tol.rel_l2
    ok = bad == 0 and not l2_bad
    reason = "" if ok else (first_kind or "tolerance")
    got_v = exp_v = None
    idx = None
    if first_bad is not None:
        idx = [int(i) for i in np.unravel_index(first_bad, got.shape)]
        got_v = _scalar(decode(dt, g_flat[first_bad:first_bad + 1])[0])
        ev = e_flat[first_bad:first_bad + 1]
        exp_v = _scalar((decode(dt, ev) if expected_is_storage else ev)[0])
    return ArgCheck(name=arg.name, ok=ok, max_abs_err=max_abs, max_rel_err=max_rel, rel_l2_err=rel_l2,
                    bad_elements=bad, nonfinite_elements=nonfinite, first_bad_index=idx, got=got_v, expected=exp_v,
                    reason=reason, atol=atol if bad > nonfinite else None)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same bytes (NaNs included), compared a chunk at a time: a
    run whose outputs are bit-identical to a run already judged, on the same inputs and
    against the same expected values, gets the same verdict without a second comparison."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    x, y = (np.ascontiguousarray(v).reshape(-1).view(np.uint8) for v in (a, b))
    whole = x.size // 8 * 8          # compared as 8-byte words: several times faster than byte by byte
    if not np.array_equal(x[whole:], y[whole:]):
        return False
    xw, yw = x[:whole].view(np.uint64), y[:whole].view(np.uint64)
    return all(np.array_equal(xw[s:s + CHUNK], yw[s:s + CHUNK]) for s in range(0, xw.size, CHUNK))


def unchanged(arg: ArgSpec, before: np.ndarray, after: np.ndarray) -> ArgCheck:
    """An ``in`` argument must be bit-for-bit what was uploaded."""
    b, a = before.view(np.uint8).reshape(-1), after.view(np.uint8).reshape(-1)
    if np.array_equal(b, a):
        return ArgCheck(name=arg.name, ok=True)
    changed = np.flatnonzero((before.view(bits_dtype(arg.dt)) != after.view(bits_dtype(arg.dt))).reshape(-1))
    first = [int(i) for i in np.unravel_index(int(changed[0]), before.shape)] if changed.size else None
    return ArgCheck(name=arg.name, ok=False, bad_elements=int(changed.size), first_bad_index=first,
                    reason="input modified")
