"""The planner role: owns the budget (evaluations, wall time, LLM calls,
rounds), the schedule of rounds, the stopping rules, and each round's choice
of rewrite directions, from the last round's measurements."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from kerntune.hardware import cache_floor
from kerntune.record.models import Budget, RoundPlan
from kerntune.results import EvalResult, Record, ResourceUsage
from kerntune.speedup import THRESHOLD
from kerntune.tuner.strategies import DEFAULT_STRATEGY


class Decision(Record):
    stop: bool
    reason: str = ""
    plan: Optional[RoundPlan] = None


@dataclass
class Progress:
    rounds_done: int = 0
    evaluations: int = 0
    llm_calls: int = 0
    best_speedup: float = 1.0
    gains: list[float] = field(default_factory=list)     # best speedup after each round
    measured: list[int] = field(default_factory=list)    # evaluations measured in each round (0: no template)
    set_aside: list[str] = field(default_factory=list)   # parameter values set aside in the rounds so far
    started: float = field(default_factory=time.monotonic)


def directions_from(baseline: EvalResult, resources: ResourceUsage | None, lang: str) -> tuple[list[str], str]:
    """Rewrite directions from measurements: what limits the kernel, most important first."""
    pct = [t.pct_of_copy for t in baseline.timings if t.pct_of_copy is not None]
    worst = min(pct) if pct else None
    out, why = [], []
    if worst is not None and worst < 60:
        out += ["vectorize memory accesses (16-byte loads and stores)", "more elements per thread",
                "launch configuration (threads per block, blocks per row)"]
        why.append(f"{worst:.0f}% of the measured copy bandwidth on the worst shape: far from the memory roofline")
    elif worst is not None:
        out += ["launch configuration (threads per block)", "unrolling"]
        why.append(f"already at {worst:.0f}% of copy bandwidth or better: fine-tuning only")
    if resources is not None and resources.spills:
        out.append("reduce register pressure (spills)")
        why.append("the kernel spills registers")
    out += ["warp-shuffle reductions instead of shared-memory trees", "fast-math intrinsics within tolerance"]
    if lang == "cuda":
        out.append("__launch_bounds__")
    return out, "; ".join(why) or "no timing yet: the generic directions"


def roofline_timings(last: EvalResult) -> list:
    """The timings the hardware-limit stop may judge by: shapes that move more than the caches hold."""
    floor = cache_floor(last.device)
    return [t for t in last.timings if t.bytes_moved >= floor]


class Planner:
    def __init__(self, budget: Budget, patience: int = 1, roofline: float = 0.9, strategy: str | None = None):
        self.budget = budget
        self.strategy = strategy
        self.patience = patience
        self.roofline = roofline
        self.progress = Progress()

    def elapsed(self) -> float:
        return time.monotonic() - self.progress.started

    def decide(self, round_no: int, last: EvalResult, resources: ResourceUsage | None, lang: str) -> Decision:
        b, p = self.budget, self.progress
        if p.rounds_done >= b.rounds:
            return Decision(stop=True, reason=f"all {b.rounds} rounds done")
        if b.evaluations is not None and p.evaluations >= b.evaluations:
            return Decision(stop=True, reason="evaluation budget spent")
        if b.time_s is not None and self.elapsed() >= b.time_s:
            return Decision(stop=True, reason="time limit reached")
        if b.llm_calls is not None and p.llm_calls >= b.llm_calls:
            return Decision(stop=True, reason="LLM call budget spent")
        pct = [t.pct_of_copy for t in roofline_timings(last) if t.pct_of_copy is not None]
        if pct and min(pct) >= 100 * self.roofline:
            return Decision(stop=True, reason=f"at the hardware limit: every shape that leaves the caches runs at >= "
                                              f"{100 * self.roofline:.0f}% of the measured copy bandwidth")
        if len(p.gains) > self.patience:
            recent = p.gains[-(self.patience + 1):]
            if recent[-1] < recent[0] * THRESHOLD:
                if not any(p.measured[-(self.patience + 1):]):
                    return Decision(stop=True, reason=f"no usable template in the last {self.patience + 1} "
                                                      "round(s)")
                return Decision(stop=True, reason=f"no gain of {100 * (THRESHOLD - 1):.0f}% or more over the last "
                                                  f"{self.patience} round(s)")
        rounds_left = b.rounds - p.rounds_done
        evals = None
        if b.evaluations is not None:
            evals = max(4, (b.evaluations - p.evaluations) // rounds_left)
        time_s = None
        if b.time_s is not None:
            time_s = max(30.0, (b.time_s - self.elapsed()) / rounds_left)
        directions, why = directions_from(last, resources, lang)
        if p.set_aside:
            why += ("; set aside after failing verification in earlier rounds (confirmed by one failure in this "
                    "round, then not measured again): " + "; ".join(p.set_aside))
        plan = RoundPlan(round=round_no, directions=directions, evaluations=evals or 100, time_s=time_s,
                         why=why + (f"; budget for this round: {evals} evaluations" if evals else ""))
        return Decision(stop=False, plan=plan)

    def strategy_for(self, space_size: int, evaluations: int) -> str:
        """The strategy the user chose, else the tuner's default (the one `kerntune tune` uses), whatever
        the space size: when the space fits the round's budget it measures everything all the same, best
        candidates first, which matters when the time limit ends the round early."""
        return self.strategy or DEFAULT_STRATEGY

    def record_round(self, evaluations: int, llm_calls: int, best_speedup: float,
                     set_aside: Sequence[str] = ()) -> None:
        p = self.progress
        p.set_aside += [v for v in set_aside if v not in p.set_aside]
        p.rounds_done += 1
        p.evaluations += evaluations
        p.llm_calls += llm_calls
        p.best_speedup = max(p.best_speedup, best_speedup if math.isfinite(best_speedup) else 1.0)
        p.gains.append(p.best_speedup)
        p.measured.append(evaluations)
