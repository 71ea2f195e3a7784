"""Helpers for the kernel-library tests: every instance of a template's
default space must verify on the CPU (OpenCL form) and compile for sm_90
(CUDA form)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from kerntune.engine.evaluate import EvalRequest
from kerntune.hardware import load_profile
from kerntune.results import Status
from kerntune.spec.load import load_file
from kerntune.spec.shapes import verification_shapes
from kerntune.tuner.dryrun import dry_run
from kerntune.tuner.space import Space
from kerntune.tuner.template import TemplateRenderError, check_against_spec, config_key, load_template


def verify_every_instance(worker, template_path: Path, spec_path: Path, shape_set: str | None = None,
                          seed: int = 11, limit: int | None = None, every: bool = True) -> list[str]:
    """Failures (empty when every feasible instance verifies) on the worker's device; with ``every``
    false (or KERNTUNE_TEST_INSTANCES=pairs), of a pairwise-covering subset of the instances."""
    template = load_template(template_path)
    loaded = load_file(spec_path)
    spec = loaded.spec
    check_against_spec(template, spec)
    shapes = tuple(verification_shapes(spec, shape_set))
    space = Space.of(template)
    feasible = [c for c in space.configs() if not space.violated(c, shapes, spec.constants)]
    if not every or os.environ.get("KERNTUNE_TEST_INSTANCES") == "pairs":
        feasible = covering_pairs(feasible)
    failures, checked = [], 0
    for config in feasible:
        try:
            inst = template.instance(config, spec)
        except TemplateRenderError as e:
            failures.append(f"{config_key(config)}: render: {e.message}")
            continue
        r = worker.evaluate(EvalRequest(inst, spec, str(loaded.base_dir), shapes, (), seed=seed, timing=None), 300)
        if r.status is not Status.OK and r.status is not Status.RESOURCE_LIMIT:
            failures.append(f"{config_key(config)}: {r.status.value}: {r.message}")
        checked += 1
        if limit and checked >= limit:
            break
    assert checked > 0, f"no feasible instance of {template_path}"
    return failures


def covering_pairs(configs: list[dict]) -> list[dict]:
    """A subset of ``configs`` (the first one, then greedily the one covering most pairs still missing) in
    which every pair of parameter values that occurs together in ``configs`` occurs at least once: about a
    third of the instances, keeping each value and each two-parameter interaction. merge_attn_states'
    fp16 and fp32 sweeps verify these; KERNTUNE_TEST_INSTANCES=pairs makes every sweep do so (a quicker
    run on a second runtime: .ci/run's PoCL pass did until 2026-12-02)."""
    def pairs(c: dict) -> set:
        return set(itertools.combinations(sorted((k, repr(v)) for k, v in c.items()), 2))
    if not configs:
        return []
    covers = [pairs(c) for c in configs]
    chosen = [configs[0]]
    missing = set().union(*covers) - covers[0]
    while missing:
        best = max(range(len(configs)), key=lambda i: len(covers[i] & missing))
        chosen.append(configs[best])
        missing -= covers[best]
    return chosen


def compile_every_instance(template_path: Path, spec_path: Path, arch: str = "sm_90", profile: str = "h100",
                           shape_set: str | None = None):
    """Dry-run report; the test asserts there are no compile or render errors."""
    template = load_template(template_path)
    spec = load_file(spec_path).spec
    check_against_spec(template, spec)
    report = dry_run(template, spec, load_profile(profile), arch, tuple(verification_shapes(spec, shape_set)))
    bad = [e for e in report.entries if e.status in ("compile_error", "render_error")]
    return report, bad
