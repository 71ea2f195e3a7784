"""Production implementations of the SGLang kernels, timed the way kerntune
times kernels (CUDA events, warm-up, L2 flushed before every timed run, median; the stream spins
before each timed call so the host's dispatch is not timed),
for the comparison table of scripts/bench_library.py. Needs a CUDA GPU and
PyTorch; FlashInfer and Liger Kernel are used when importable."""

from __future__ import annotations

import statistics
from typing import Callable


# GPU cycles the stream spins before each timed call (about 100 us at 2 GHz): the host's dispatch of
# the call (torch.compile's guards took 30-120 us on an H200) then happens while the GPU is busy, so
# the events time the call's kernels, not the host. Without it, torch.compile's event times on decode
# shapes ranged from 4 to 122 us for kernels of about 1.5 us (bench/results/gpu-h200-2026-11-28).
SPIN_CYCLES = 200_000


def _time(fn: Callable[[], object], warmup: int, repeats: int) -> float:
    import torch

    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    spin = getattr(torch.cuda, "_sleep", None)     # a private helper of PyTorch's: used when present
    samples = []
    for _ in range(repeats):
        flush.zero_()
        if spin is not None:
            spin(SPIN_CYCLES)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        samples.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in samples)


def _impls(kernel: str):
    """name -> factory(sizes, dtype) returning a zero-argument callable."""
    import torch
    import torch.nn.functional as F

    out: dict[str, Callable] = {}

    if kernel == "silu_and_mul":
        def eager(sizes, dtype):
            x = torch.randn(sizes["T"], 2 * sizes["d"], dtype=dtype, device="cuda")
            d = sizes["d"]
            return lambda: F.silu(x[:, :d]) * x[:, d:]
        out["torch eager"] = eager
        compiled = torch.compile(lambda x, d: F.silu(x[:, :d]) * x[:, d:])

        def comp(sizes, dtype):
            x = torch.randn(sizes["T"], 2 * sizes["d"], dtype=dtype, device="cuda")
            return lambda: compiled(x, sizes["d"])
        out["torch.compile"] = comp
        try:
            import flashinfer

            def fi(sizes, dtype):
                x = torch.randn(sizes["T"], 2 * sizes["d"], dtype=dtype, device="cuda")
                return lambda: flashinfer.activation.silu_and_mul(x)
            out["flashinfer"] = fi
        except ImportError:
            pass
        try:
            from liger_kernel.ops.swiglu import LigerSiLUMulFunction

            def liger(sizes, dtype):
                a = torch.randn(sizes["T"], sizes["d"], dtype=dtype, device="cuda")
                b = torch.randn(sizes["T"], sizes["d"], dtype=dtype, device="cuda")
                return lambda: LigerSiLUMulFunction.apply(a, b)
            out["liger"] = liger
        except ImportError:
            pass
    elif kernel == "fused_add_rmsnorm":
        def eager_rms(x, r, w, eps):
            y = x.float() + r.float()
            r.copy_(y.to(r.dtype))
            x.copy_((y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype))

        def eager(sizes, dtype):
            x = torch.randn(sizes["T"], sizes["d"], dtype=dtype, device="cuda")
            r, w = torch.randn_like(x), torch.randn(sizes["d"], dtype=dtype, device="cuda")
            return lambda: eager_rms(x, r, w, 1e-6)
        out["torch eager"] = eager
        compiled = torch.compile(eager_rms)

        def comp(sizes, dtype):
            x = torch.randn(sizes["T"], sizes["d"], dtype=dtype, device="cuda")
            r, w = torch.randn_like(x), torch.randn(sizes["d"], dtype=dtype, device="cuda")
            return lambda: compiled(x, r, w, 1e-6)
        out["torch.compile"] = comp
        try:
            import flashinfer

            def fi(sizes, dtype):
                x = torch.randn(sizes["T"], sizes["d"], dtype=dtype, device="cuda")
                r, w = torch.randn_like(x), torch.randn(sizes["d"], dtype=dtype, device="cuda")
                return lambda: flashinfer.norm.fused_add_rmsnorm(x, r, w, 1e-6)
            out["flashinfer"] = fi
        except ImportError:
            pass
    elif kernel == "merge_attn_states_lse":
        def eager_merge(va, sa, vb, sb):
            sa = torch.where(torch.isinf(sa) & (sa > 0), torch.full_like(sa, float("-inf")), sa)
            sb = torch.where(torch.isinf(sb) & (sb > 0), torch.full_like(sb, float("-inf")), sb)
            m = torch.maximum(sa, sb)
            ea, eb = torch.exp(sa - m), torch.exp(sb - m)
            tot = ea + eb
            v = va.float() * (ea / tot).unsqueeze(-1) + vb.float() * (eb / tot).unsqueeze(-1)
            return v.to(va.dtype), torch.log(tot) + m

        def eager(sizes, dtype):
            n, h, dd = sizes["N"], sizes["H"], sizes["D"]
            va, vb = (torch.randn(n, h, dd, dtype=dtype, device="cuda") for _ in range(2))
            sa, sb = (torch.randn(n, h, dtype=torch.float32, device="cuda") for _ in range(2))
            return lambda: eager_merge(va, sa, vb, sb)
        out["torch eager"] = eager
        compiled = torch.compile(eager_merge)

        def comp(sizes, dtype):
            n, h, dd = sizes["N"], sizes["H"], sizes["D"]
            va, vb = (torch.randn(n, h, dd, dtype=dtype, device="cuda") for _ in range(2))
            sa, sb = (torch.randn(n, h, dtype=torch.float32, device="cuda") for _ in range(2))
            return lambda: compiled(va, sa, vb, sb)
        out["torch.compile"] = comp
        try:
            from flashinfer.cascade import merge_state

            def fi(sizes, dtype):
                n, h, dd = sizes["N"], sizes["H"], sizes["D"]
                va, vb = (torch.randn(n, h, dd, dtype=dtype, device="cuda") for _ in range(2))
                sa, sb = (torch.randn(n, h, dtype=torch.float32, device="cuda") for _ in range(2))
                return lambda: merge_state(va, sa, vb, sb)
            out["flashinfer (log2 LSE)"] = fi
        except ImportError:
            pass
    return out


def time_production(kernel: str, shapes: list[dict[str, int]], dtype_name: str, warmup: int,
                    repeats: int) -> dict[str, dict[str, float]]:
    """{implementation: {shape key: median ms}}; implementations that fail are left out with a note."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    results: dict[str, dict[str, float]] = {}
    for name, factory in _impls(kernel).items():
        row = {}
        for sizes in shapes:
            key = ",".join(f"{k}={v}" for k, v in sizes.items())
            try:
                row[key] = _time(factory(sizes, dtype), warmup, repeats)
            except Exception as e:  # a production library that cannot run this shape is reported, not fatal
                row[key] = float("nan")
                print(f"{name} failed at {key}: {type(e).__name__}: {e}")
        results[name] = row
    return results
