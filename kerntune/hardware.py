"""Device limits r(h) and resource use u(θ; h): stored device profiles,
occupancy, and the launch-feasibility checks made before any launch."""

from __future__ import annotations

import importlib.resources
import math
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import DeviceInfo, ResourceUsage

REGISTER_ALLOC_UNIT = 256        # registers are allocated per warp in units of 256
MAX_REGISTERS_PER_THREAD = 255
SHARED_RESERVED_PER_BLOCK = 1024  # sm_80 and newer reserve 1 KB of shared memory per block


def _profile_dir() -> Path:
    return Path(str(importlib.resources.files("kerntune.configs.devices")))


def list_profiles() -> list[str]:
    return sorted(p.stem for p in _profile_dir().glob("*.yaml"))


def load_profile(name: str) -> DeviceInfo:
    """A stored device profile (``h100``, ``a100``...) or a YAML file path."""
    path = Path(name)
    if not (path.suffix in (".yaml", ".yml") and path.exists()):
        path = _profile_dir() / f"{name.lower()}.yaml"
    if not path.exists():
        raise KerntuneError(ErrorCode.USAGE, f"unknown device profile {name!r}",
                            hint=f"known profiles: {', '.join(list_profiles())}; or pass a profile YAML file")
    try:
        data = yaml.safe_load(path.read_text())
        return DeviceInfo(id=f"profile:{path.stem}", backend="profile", lang="cuda", kind="gpu",
                          vendor="NVIDIA", **data)
    except (yaml.YAMLError, TypeError, ValidationError) as e:
        raise KerntuneError(ErrorCode.FILE, f"device profile {path} is invalid: {e}") from None


def _arch_number(arch: str | None) -> int:
    if arch and arch.startswith("sm_"):
        digits = "".join(ch for ch in arch[3:] if ch.isdigit())
        return int(digits) if digits else 0
    return 0


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float      # active warps / maximum warps per SM
    limiter: str          # "threads", "registers", "shared memory", "blocks"


def occupancy(info: DeviceInfo, threads_per_block: int, registers: int | None, shared_bytes: int) -> Occupancy | None:
    """Theoretical occupancy of a CUDA launch (None where the device does not
    publish the limits, e.g. OpenCL CPU devices)."""
    if not (info.max_threads_per_sm and info.registers_per_sm and info.max_shared_per_sm):
        return None
    warp = info.warp_size
    warps = max(1, math.ceil(threads_per_block / warp))
    max_warps = info.max_threads_per_sm // warp
    limits = {"threads": max_warps // warps, "blocks": info.max_blocks_per_sm or 32}
    if registers:
        per_warp = math.ceil(registers * warp / REGISTER_ALLOC_UNIT) * REGISTER_ALLOC_UNIT
        limits["registers"] = (info.registers_per_sm // per_warp) // warps
    reserved = SHARED_RESERVED_PER_BLOCK if _arch_number(info.arch) >= 80 else 0
    if shared_bytes:
        limits["shared memory"] = info.max_shared_per_sm // (shared_bytes + reserved)
    limiter = min(limits, key=lambda k: limits[k])
    blocks = max(0, limits[limiter])
    return Occupancy(blocks, blocks * warps, blocks * warps / max_warps if max_warps else 0.0, limiter)


def max_threads_for_registers(info: DeviceInfo, registers: int) -> int:
    """The largest block (a multiple of the warp size) whose registers fit the per-block file."""
    if not info.registers_per_block or not registers:
        return info.max_threads_per_block
    per_warp = math.ceil(registers * info.warp_size / REGISTER_ALLOC_UNIT) * REGISTER_ALLOC_UNIT
    warps = info.registers_per_block // per_warp
    return min(info.max_threads_per_block, warps * info.warp_size)


@dataclass(frozen=True)
class LaunchProblem:
    reason: str       # threads_per_block, block_dims, grid_dims, registers, shared_memory, occupancy, launch
    message: str

    def __str__(self) -> str:
        return self.message


def launch_problems(info: DeviceInfo, res: ResourceUsage | None, grid: tuple[int, ...], block: tuple[int, ...],
                    dynamic_shared: int = 0, static_shared_estimate: int | None = None) -> list[LaunchProblem]:
    """Why this launch cannot run on this device (empty when it can). With
    ``res`` None (before compiling) only what the launch itself and
    ``static_shared_estimate`` tell is checked."""
    out: list[LaunchProblem] = []
    add = lambda reason, msg: out.append(LaunchProblem(reason, msg))  # noqa: E731
    threads = math.prod(block)
    if any(b < 1 for b in block) or any(g < 1 for g in grid):
        add("launch", f"grid {tuple(grid)} and block {tuple(block)} must be positive")
        return out
    if threads > info.max_threads_per_block:
        add("threads_per_block", f"{threads} threads per block exceed the device limit of {info.max_threads_per_block}")
    for i, (b, lim) in enumerate(zip(block, info.max_block_dims)):
        if b > lim:
            add("block_dims", f"block dimension {'xyz'[i]} = {b} exceeds the device limit of {lim}")
    for i, (g, lim) in enumerate(zip(grid, info.max_grid_dims)):
        if g > lim:
            add("grid_dims", f"grid dimension {'xyz'[i]} = {g} exceeds the device limit of {lim}")
    static = (res.static_shared_bytes or 0) if res is not None else (static_shared_estimate or 0)
    shared = static + dynamic_shared
    limit = info.max_shared_per_block_optin or info.max_shared_per_block
    if shared > limit:
        add("shared_memory", f"{shared} B of shared memory per block exceed the device limit of {limit} B")
    elif info.lang == "cuda" and static > info.max_shared_per_block:
        add("shared_memory", f"{static} B of static shared memory exceed {info.max_shared_per_block} B "
                             "(only dynamic shared memory may use the opt-in limit)")
    if res is None:
        return out
    if res.max_threads_per_block is not None and threads > res.max_threads_per_block:
        add("threads_per_block", f"{threads} threads per block exceed this kernel's compiled limit of "
                                 f"{res.max_threads_per_block}")
    if res.registers and info.registers_per_block:
        fit = max_threads_for_registers(info, res.registers)
        if threads > fit:
            add("registers", f"{res.registers} registers x {threads} threads exceed the register file "
                             f"({info.registers_per_block} per block; at most {fit} threads fit)")
    if not out:
        occ = occupancy(info, threads, res.registers, shared)
        if occ is not None and occ.blocks_per_sm == 0:
            add("occupancy", f"no block fits on an SM (limited by {occ.limiter})")
    return out


def cache_floor(device) -> int:
    """Bytes a call must move to leave the device's caches: below that, a kernel can look faster
    than the copy (measured on a buffer larger than the caches) without being at any limit."""
    cache = (device.l2_bytes or 0) if device is not None else 0
    if device is not None and device.kind == "cpu":
        return max(4 * cache, 128 * 2**20)      # a CPU's last-level cache is not what OpenCL reports
    return max(2 * cache, 8 * 2**20)
