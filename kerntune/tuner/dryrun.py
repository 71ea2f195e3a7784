"""`kerntune tune --dry-run`: render and compile every feasible CUDA instance
with nvcc/ptxas for a named device profile, with no GPU, and count what was
pruned and why."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from kerntune.backends.base import CompileFailed
from kerntune.backends.nvcc import compile_offline
from kerntune.results import DeviceInfo, Record, ResourceUsage
from kerntune.spec.model import KernelSpec, Shape
from kerntune.tuner.feasibility import after_compile, before_compile
from kerntune.tuner.space import Config, Space
from kerntune.tuner.template import Template, TemplateRenderError, config_key


class DryRunEntry(Record):
    config: dict
    key: str
    status: str                      # compiled, pruned, compile_error, render_error, duplicate
    reason: str = ""
    message: str = ""
    resources: ResourceUsage | None = None
    duplicate_of: str = ""


class DryRunReport(Record):
    template: str
    device: DeviceInfo
    arch: str
    space_size: int
    entries: list[DryRunEntry] = []

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.entries:
            out[e.status] = out.get(e.status, 0) + 1
        return out

    def pruned_by_reason(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.entries:
            if e.status == "pruned":
                out[e.reason] = out.get(e.reason, 0) + 1
        return out


@dataclass
class _Pending:
    config: Config
    key: str
    source: str
    options: tuple[str, ...]
    digest: str
    entries: list[DryRunEntry] = field(default_factory=list)


def dry_run(template: Template, spec: KernelSpec, device: DeviceInfo, arch: str, shapes: tuple[Shape, ...],
            jobs: int | None = None, reject_spills: bool = False,
            progress: Callable[[int, int], None] = lambda done, total: None) -> DryRunReport:
    space = Space.of(template)
    entries: list[DryRunEntry] = []
    by_digest: dict[str, str] = {}
    todo: list[_Pending] = []
    for config in space.configs():
        key = config_key(config)
        rejected = before_compile(template, space, config, spec, shapes, device)
        if rejected:
            entries.append(DryRunEntry(config=config, key=key, status="pruned", reason=rejected.reason,
                                       message=rejected.message))
            continue
        try:
            inst = template.instance(config, spec)
        except TemplateRenderError as e:
            entries.append(DryRunEntry(config=config, key=key, status="render_error", reason=e.kind, message=e.message))
            continue
        if inst.digest in by_digest:
            entries.append(DryRunEntry(config=config, key=key, status="duplicate", duplicate_of=by_digest[inst.digest],
                                       message="renders to the same source as another configuration"))
            continue
        by_digest[inst.digest] = key
        todo.append(_Pending(config, key, inst.source, inst.options, inst.digest))

    total, done = len(todo), 0
    progress(0, total)

    def work(p: _Pending) -> DryRunEntry:
        try:
            result = compile_offline(p.source, template.kernel_name(spec, p.config), arch=arch, options=p.options)
        except CompileFailed as e:
            first = next((ln for ln in e.log.splitlines() if "error" in ln), e.log[:200])
            return DryRunEntry(config=p.config, key=p.key, status="compile_error", message=first.strip(),
                               reason="compile")
        rejected = after_compile(template, p.config, spec, shapes, device, result.resources, reject_spills)
        if rejected:
            return DryRunEntry(config=p.config, key=p.key, status="pruned", reason=rejected.reason,
                               message=rejected.message, resources=result.resources)
        return DryRunEntry(config=p.config, key=p.key, status="compiled", resources=result.resources)

    with ThreadPoolExecutor(max_workers=jobs or max(1, os.cpu_count() or 1)) as pool:
        for entry in pool.map(work, todo):
            entries.append(entry)
            done += 1
            progress(done, total)
    order = {config_key(c): i for i, c in enumerate(space.configs())}
    entries.sort(key=lambda e: order[e.key])
    return DryRunReport(template=template.origin, device=device, arch=arch, space_size=space.size, entries=entries)
