"""u(θ; h) <= r(h): why a configuration cannot run on a device.

Checked before compiling (restrictions, launch dimensions, a declared static
shared-memory estimate) and after compiling, before any launch (registers x
threads against the register file, shared memory against per-block and
per-SM limits, spills when rejected). Every rejection carries a reason from
a closed set, so runs can be summarized by reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerntune.engine.evaluate import resolve_launch
from kerntune.hardware import launch_problems
from kerntune.results import DeviceInfo, ResourceUsage
from kerntune.spec import expr
from kerntune.spec.model import KernelSpec, Shape
from kerntune.tuner.space import Config, Space
from kerntune.tuner.template import Template

REASONS = ("restriction", "launch", "threads_per_block", "block_dims", "grid_dims", "shared_memory",
           "registers", "occupancy", "spills")


@dataclass(frozen=True)
class Rejection:
    reason: str
    message: str


def before_compile(template: Template, space: Space, config: Config, spec: KernelSpec,
                   shapes: tuple[Shape, ...], device: DeviceInfo) -> Rejection | None:
    why = space.violated(config, shapes, spec.constants)
    if why:
        return Rejection("restriction", why)
    from kerntune.engine.evaluate import KernelInstance

    probe = KernelInstance("", template.kernel_name(spec), template.lang, launch=template.decl.launch,
                           params=tuple(config.items()))
    estimate = None
    for shape in shapes:
        try:
            grid, block, shared = resolve_launch(spec, probe, shape)
            if template.decl.shared_estimate is not None:
                estimate = expr.evaluate_int(template.decl.shared_estimate,
                                             {**spec.constants, **shape.as_dict(), **config}, "shared_estimate")
        except expr.ExprError as e:
            return Rejection("launch", f"{shape.label}: {e}")
        problems = launch_problems(device, None, grid, block, shared, static_shared_estimate=estimate)
        if problems:
            return Rejection(problems[0].reason, f"{shape.label}: {problems[0].message}")
    return None


def after_compile(template: Template, config: Config, spec: KernelSpec, shapes: tuple[Shape, ...],
                  device: DeviceInfo, res: ResourceUsage, reject_spills: bool = False) -> Rejection | None:
    from kerntune.engine.evaluate import KernelInstance

    probe = KernelInstance("", template.kernel_name(spec), template.lang, launch=template.decl.launch,
                           params=tuple(config.items()))
    for shape in shapes:
        grid, block, shared = resolve_launch(spec, probe, shape)
        problems = launch_problems(device, res, grid, block, shared)
        if problems:
            return Rejection(problems[0].reason, f"{shape.label}: {problems[0].message}")
    if reject_spills and res.spills:
        return Rejection("spills", f"spills {res.spill_store_bytes} B stores / {res.spill_load_bytes} B loads")
    return None
