"""The generator role: turn the current kernel into a template (Jinja kernel
plus parameter space). Two sources behind one interface: the built-in rule
catalog (offline, the default) and an LLM (kerntune.agents.llm)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from kerntune.record.models import SkippedRule, Transformation
from kerntune.results import DeviceInfo
from kerntune.spec.model import KernelSpec, LaunchSpec

Validate = Callable[[str], Optional[str]]   # template text -> why it is unusable, or None


@dataclass(frozen=True)
class RoundNote:
    """What the generator is told about an earlier round."""

    round: int
    source: str                         # "rules" or "llm"
    description: str
    space_size: int
    measured: int
    best_speedup: Optional[float]
    failures: dict[str, int] = field(default_factory=dict)
    best_config: dict[str, Any] = field(default_factory=dict)
    set_aside: tuple[str, ...] = ()     # parameter values the tuner stopped measuring: they kept failing verification


@dataclass(frozen=True)
class GenerationRequest:
    round: int
    lang: str
    kernel_source: str                  # the kernel this round starts from (the best so far, baked)
    original_source: str
    launch: LaunchSpec                  # how kernel_source is launched
    spec: KernelSpec
    spec_text: str
    device: DeviceInfo
    directions: tuple[str, ...]         # the planner's choice for this round, most important first
    measurements: str                   # a short text of the last measurements (times, % of copy, resources)
    history: tuple[RoundNote, ...] = ()
    llm_calls_left: Optional[int] = None  # the planner's LLM call budget left for the run (None: no limit)
    kernel: Optional[str] = None        # kernel_source's entry point, when not the spec's (a tuned instantiation)


@dataclass(frozen=True)
class Proposal:
    template: str
    source: str                         # "rules" or "llm"
    rationale: str
    transformations: tuple[Transformation, ...] = ()   # the trace: rule, summary, params
    skipped: tuple[SkippedRule, ...] = ()
    attempts: int = 1


class Generator(Protocol):
    name: str

    def propose(self, req: GenerationRequest, validate: Validate) -> Proposal | None: ...


class RuleGenerator:
    """The offline generator: every applicable rule of the catalog, on the current kernel."""

    name = "rules"

    def propose(self, req: GenerationRequest, validate: Validate) -> Proposal | None:
        """Every applicable rule; if the result's baseline does not validate (a rule's
        rewrite broke the kernel), leave out the applied rules one at a time, latest
        first, and record which one was dropped and why."""
        from kerntune.agents.rules.catalog import apply_catalog, default_rules

        def attempt(exclude: set[str]):
            rules = [r for r in default_rules() if r.name not in exclude]
            return apply_catalog(req.kernel_source, req.lang, req.spec, kernel=req.kernel, launch=req.launch, rules=rules,
                                 device=req.device, note=f"round {req.round}")

        result = attempt(set())
        if result.space_size <= 1:
            return None
        why = validate(result.template)
        dropped: list[tuple[str, str]] = []
        if why is not None:
            for rule in reversed(result.applied_names):
                retry = attempt({rule})
                if retry.space_size > 1 and validate(retry.template) is None:
                    dropped.append((rule, f"left out: with it the baseline failed validation ({why[:300]})"))
                    result, why = retry, None
                    break
        if why is not None:
            return None
        trace = tuple(Transformation(rule=a.rule, summary=a.summary, params=list(a.params)) for a in result.trace)
        return Proposal(template=result.template, source="rules",
                        rationale="; ".join(a.summary for a in result.trace), transformations=trace,
                        skipped=tuple(SkippedRule(rule=r, why=w) for r, w in [*result.skipped, *dropped]))
