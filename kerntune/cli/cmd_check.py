"""`kerntune check`: validate the spec, compile, report resources and launch feasibility."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from kerntune.cli import checks
from kerntune.cli.output import err, fmt_bytes, fmt_pct, grid, out, print_json, print_table, set_json
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import DeviceInfo, Record, ResourceUsage

ARCH_PROFILES = {"sm_90": "h100", "sm_90a": "h100", "sm_80": "a100", "sm_89": "l4", "sm_75": "titan-rtx"}


class LaunchCheck(Record):
    label: str
    shape: dict[str, int]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    dynamic_shared_bytes: int
    problems: list[str] = []
    occupancy: Optional[float] = None
    occupancy_limiter: Optional[str] = None


class CheckReport(Record):
    kernel: str
    spec: str
    mode: str                      # "device" or "offline"
    device: DeviceInfo
    resources: ResourceUsage
    compile_log: str = ""
    launches: list[LaunchCheck] = []
    extracted: Optional[str] = None   # for an extension source: what extraction kept and dropped

    @property
    def ok(self) -> bool:
        return all(not launch.problems for launch in self.launches)


def check(
    kernel_file: Path = typer.Argument(..., help="The kernel source (.cu or .cl)."),
    spec: Optional[Path] = typer.Option(None, "--spec", "-s", help="The spec file (default: inline block or sidecar)."),
    device: Optional[str] = typer.Option(None, "--device", "-d", help="CUDA ordinal, 'cpu', or opencl:P:D."),
    offline: bool = typer.Option(False, "--offline", help="CUDA: compile with nvcc/ptxas for --arch, without a GPU "
                                                          "(the default when there is no CUDA GPU)."),
    arch: str = typer.Option("sm_90", "--arch", help="Offline compile target architecture."),
    target: Optional[str] = typer.Option(None, "--target", "-t",
                                         help="Device profile for offline feasibility (default: from --arch; "
                                              "see `kerntune devices --profiles`)."),
    timeout: float = typer.Option(300, "--timeout", callback=checks.seconds,
                                  help="Seconds allowed for the compile."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Validate the spec, compile the kernel and print its resource report.

    On a device: registers, static shared memory, local/private memory and
    the kernel's own max threads per block, from the compiled kernel. Offline
    (CUDA with no GPU, or --offline): nvcc/ptxas for --arch report registers,
    shared memory, stack and spills for real. Then every spec shape's launch
    is checked against the device's limits, with theoretical occupancy.
    """
    set_json(json)
    from kerntune.backends.compile_log import name_locations
    from kerntune.engine.evaluate import resolve_launch
    from kerntune.hardware import launch_problems, load_profile, occupancy
    from kerntune.kernelfile import load_kernel
    from kerntune.spec.shapes import verification_shapes
    from kerntune.spec.signature import require_fits

    kf = load_kernel(kernel_file, spec)
    from kerntune.engine.userfunc import require_functions

    require_functions(kf.spec, kf.loaded.base_dir)   # bench calls them; check only finds them
    inst = kf.instance()
    use_offline = kf.lang == "cuda" and (offline or device is None and not _has_cuda())
    if use_offline:
        from kerntune.backends.base import CompileFailed
        from kerntune.backends.nvcc import compile_offline

        checks.cuda_arch(arch)
        profile = target or ARCH_PROFILES.get(arch)
        info = load_profile(profile) if profile else DeviceInfo(id=f"offline:{arch}", backend="nvcc", lang="cuda",
                                                                name=f"offline {arch}", arch=arch)
        if info.arch and info.arch.rstrip("a") != arch.rstrip("a"):
            err.print(f"[yellow]note:[/] profile {profile} is {info.arch}, the compile targets {arch}")
        try:
            result = compile_offline(kf.source, kf.kernel_name, arch=arch, options=inst.options, timeout_s=timeout)
        except CompileFailed as e:
            if checks.unsupported_arch(e.log):
                raise checks.arch_error(arch) from None
            raise KerntuneError(ErrorCode.COMPILE, f"{kernel_file} does not compile for {arch}",
                                detail=name_locations(e.log, inst.file)) from None
        from kerntune.hardware import max_threads_for_registers

        res = result.resources.model_copy(update={
            "max_threads_per_block": max_threads_for_registers(info, result.resources.registers or 0)})
        log, mode = result.log, "offline"
    else:
        from kerntune.engine.devices import resolve
        from kerntune.engine.supervisor import DeviceWorker

        ref, info = resolve(device, kf.lang)
        try:
            with DeviceWorker(ref) as worker:
                res, log = worker.compile(kf.source, kf.kernel_name, inst.options, timeout)
        except KerntuneError as e:
            if e.code is not ErrorCode.COMPILE:
                raise
            raise KerntuneError(ErrorCode.COMPILE, f"{kernel_file} does not compile on {info.id}",
                                detail=name_locations(e.detail or "", inst.file)) from None
        mode = "device"
    require_fits(kf.spec, info)
    launches = []
    for shape in verification_shapes(kf.spec):
        grid, block, shared = resolve_launch(kf.spec, inst, shape)
        problems = [p.message for p in launch_problems(info, res, grid, block, shared)]
        occ = occupancy(info, _prod(block), res.registers, (res.static_shared_bytes or 0) + shared)
        launches.append(LaunchCheck(label=shape.label, shape=shape.as_dict(), grid=grid, block=block,
                                    dynamic_shared_bytes=shared, problems=problems,
                                    occupancy=occ.occupancy if occ else None,
                                    occupancy_limiter=occ.limiter if occ else None))
    extracted = None
    if kf.extraction is not None:
        ex = kf.extraction
        extracted = (f"device code of {kf.kernel_name} extracted: {len(ex.dropped)} items dropped (host code, "
                     f"host-only includes), {len(ex.inlined)} local headers inlined; `kerntune extract` lists them")
    report = CheckReport(kernel=str(kernel_file), spec=str(kf.loaded.origin) + (" (inline)" if kf.loaded.inline else ""),
                         mode=mode, device=info, resources=res, compile_log=log, launches=launches,
                         extracted=extracted)
    if json:
        print_json(report)
    else:
        _render(report)
    if not report.ok:
        bad = next(launch for launch in report.launches if launch.problems)
        raise KerntuneError(ErrorCode.RESOURCE, f"the launch at {bad.label} does not fit {info.name}: {bad.problems[0]}")


def _prod(xs: tuple[int, ...]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _has_cuda() -> bool:
    from kerntune.engine.devices import all_devices

    return any(d.backend == "cupy" and not d.problem for d in all_devices())


def _render(r: CheckReport) -> None:
    res = r.resources
    where = f"{r.device.name} ({r.device.id})" if r.mode == "device" else \
        f"offline nvcc/ptxas for {res.arch}, limits of {r.device.name}"
    out.print(f"[bold]{r.kernel}[/]: spec {r.spec} is valid; compiled on {where}")
    if r.extracted:
        out.print(r.extracted, markup=False)
    rows = [
        ("registers / thread", res.registers),
        ("static shared memory", fmt_bytes(res.static_shared_bytes) if res.static_shared_bytes is not None else None),
        ("local memory / thread" if r.device.lang == "cuda" else "private memory / work-item",
         fmt_bytes(res.local_bytes) if res.local_bytes is not None else None),
        ("stack frame", fmt_bytes(res.stack_bytes) if res.stack_bytes is not None else None),
        ("spills (stores / loads)", f"{res.spill_store_bytes} B / {res.spill_load_bytes} B"
         if res.spill_store_bytes is not None else None),
        ("barriers", res.barriers),
        ("constant memory", fmt_bytes(res.const_bytes) if res.const_bytes is not None else None),
        ("max threads / block", res.max_threads_per_block),
    ]
    print_table(grid(["", ""], [[name, str(value)] for name, value in rows if value is not None], show_header=False))
    if res.spills:
        out.print("[yellow]warning:[/] the kernel spills registers to local memory")
    rows = []
    for launch in r.launches:
        occ = f"{fmt_pct(launch.occupancy * 100)} ({launch.occupancy_limiter})" if launch.occupancy is not None else "-"
        fits = Text("yes", style="green") if not launch.problems else \
            Text.assemble(("no", "red"), f": {launch.problems[0]}")
        rows.append([launch.label, "x".join(map(str, launch.grid)), "x".join(map(str, launch.block)),
                     fmt_bytes(launch.dynamic_shared_bytes), occ, fits])
    print_table(grid(["shape", "grid", "block", "dyn. shared", "occupancy", "fits"], rows, title="Launches per shape"))


def register(app: typer.Typer) -> None:
    app.command("check")(check)
