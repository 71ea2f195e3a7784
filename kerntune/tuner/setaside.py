"""Parameter values set aside: a value every measured configuration of which
failed verification for the same reason is not measured again.

Fast-math flags outside the tolerance, a vector width that reads past an
odd-sized row: once a value of a parameter has failed verification the same
way in ``SET_ASIDE_AFTER`` measured configurations and passed in none, the
tuner answers every later proposal that contains it with that failure,
without compiling or measuring (a pruned row with reason ``set_aside`` in the
run database), for every strategy alike; configurations already compiled
ahead (``lookahead``) are checked again before they are measured. So a round
spends at most ``SET_ASIDE_AFTER`` measured evaluations on such a value.

"The same reason" is structured, not read from messages: the status is
``wrong_result`` and one (output argument, check) pair (``ArgCheck.reason``:
tolerance, nonfinite, unwritten, input modified) is among the failures of
every configuration counted. Evidence is counted only from measured
configurations that are not duplicates; a configuration that contains a value
already set aside does not count against its other values (that value
explains its failure). A parameter's first value (the baseline, which
reproduces the kernel the round started from) is never set aside.

A failure counts against a value only when it is that value's alone: every
other value of the configuration is a first value or has passed verification
in some measured configuration. Three failures that each hold a 2-D grid and
a fast-math flag say nothing about the grid: counted against both, they once
set aside a rewrite worth 3x on the naive SiLU (bench/results/naive-cpu-*), and
the fast-math flag, the real culprit, is set aside as soon as it fails beside
values known to pass. Failures are kept and counted again as values pass.
A value that has failed ``SET_ASIDE_AFTER`` times, never alone, is tried once
alone (the round's first values with it; :meth:`SetAside.probe`, which the
tuner measures next): failing there the same way sets it aside, passing clears
it. So a failing value costs a round at most ``SET_ASIDE_AFTER + 1`` measured
evaluations.

Two approximations together can miss the tolerance where each alone holds it
(tanh-exp's exp under the fast-math flag on Intel's OpenCL runtime): a failure
with two or more of the rule catalog's approximation parameters
(``APPROXIMATIONS``) on is the pair's, never another value's alone. Counted
against the others, such failures once set aside a vector width and an unroll
factor that were innocent (naive gelu_tanh_and_mul_rows, 2026-12-04); now a
value whose failures all had a pair of approximations on is tried alone first.
The pair itself is set aside as a value is: after ``SET_ASIDE_AFTER`` failures
for one reason with both on and no configuration with both passing, at least
one of them the pair's alone (exactly those two approximations on, every other
value a first value or one that has passed). Later proposals holding both are
answered with the failure; each alone is still measured (on PoCL the same pair
passes, and is never set aside there). Before this, the pair tanh-exp +
fast-math flag cost round 1 of naive gelu_tanh_and_mul_rows about a dozen
failed measurements on Intel's runtime.

Across rounds of one optimize run, a value set aside earlier (same parameter
name, same value, same reason) is set aside after ``SET_ASIDE_AFTER_KNOWN``
failure in the new round: the new template may have changed what it means, so
it is confirmed once, not assumed.

Everything is derived from the run database (the evaluations, and the
``set_aside_earlier`` meta entry the optimize loop writes), so a resumed run
makes the same decisions.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import combinations
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from kerntune.results import EvalResult, Record, Status
from kerntune.tuner.store import Evaluation

SET_ASIDE_AFTER = 3          # measured configurations failing the same way before a value is set aside
SET_ASIDE_AFTER_KNOWN = 1    # ... for a value an earlier round of the run set aside for that reason
REASON = "set_aside"         # the reason of the pruned rows that answer proposals of a set-aside value
EARLIER_KEY = "set_aside_earlier"   # run-database meta: values set aside by earlier rounds (optimize)
# the rule catalog's approximation parameters: off reproduces the kernel, on approximates within the tolerance
APPROXIMATIONS = frozenset({"FAST_MATH", "FAST_FLAGS", "TANH_EXP"})


@dataclass(frozen=True, order=True)
class FailureReason:
    """One way verification failed: the output argument and the check (``ArgCheck.reason``)."""

    arg: str
    check: str

    def __str__(self) -> str:
        return f"{self.arg}: {self.check}" if self.arg else self.check


def failure_reasons(result: Optional[EvalResult]) -> frozenset[FailureReason]:
    """The (argument, check) pairs a wrong result failed on; empty for any other outcome."""
    if result is None or result.status is not Status.WRONG_RESULT or result.verification is None:
        return frozenset()
    out = set()
    for shape in result.verification.shapes:
        if shape.ok:
            continue
        bad = [a for a in shape.args if not a.ok]
        out |= {FailureReason(a.name, a.reason or "mismatch") for a in bad}
        if not bad:
            out.add(FailureReason("", "shape check"))
    return frozenset(out)


class SetAsideValue(Record):
    """A parameter value set aside, and why (in tuning summaries and run records)."""

    param: str
    value: Any
    reason: str                  # "out: tolerance"
    failed: int                  # measured configurations with the value that failed for that reason
    measured: int                # measured configurations with the value
    answered: int = 0            # later proposals answered with the failure, not measured
    earlier: bool = False        # an earlier round had set it aside too (confirmed here after one failure)
    also: dict[str, Any] = {}    # a combination: set aside only together with these values (a pair of approximations)

    def describe(self) -> str:
        what = f"{self.param}={self.value!r}" + "".join(f" with {k}={v!r}" for k, v in self.also.items())
        return (f"{what}: {self.failed} of {self.measured} measured configuration(s) failed "
                f"verification ({self.reason})" + ("; set aside in an earlier round too" if self.earlier else ""))


def _vkey(value: Any) -> str:
    return json.dumps(value)


Key = tuple[str, str]            # (parameter, its value as JSON)
Pair = tuple[Key, Key]           # two approximation values, in order


def _earlier_key(param: str, value: Any, also: dict[str, Any]) -> tuple:
    return param, _vkey(value), _vkey(sorted(also.items()))


@dataclass
class _Tally:
    measured: int = 0
    passed: int = 0
    reasons: Counter = field(default_factory=Counter)     # of every failure with the value


class SetAside:
    """The tuner's record of failing parameter values, fed every evaluation as it is recorded."""

    def __init__(self, params: dict[str, tuple], earlier: Iterable[dict[str, Any]] = ()):
        self.first = {name: values[0] for name, values in params.items() if values}
        self.earlier = {_earlier_key(e["param"], e["value"], e.get("also") or {}): e["reason"] for e in earlier}
        self.tallies: dict[Key, _Tally] = {}
        self.values: dict[Key, Any] = {}
        self.aside: dict[Key, SetAsideValue] = {}
        self.pair_tallies: dict[Pair, _Tally] = {}
        self.pairs_aside: dict[Pair, SetAsideValue] = {}
        self.answered: Counter = Counter()
        # each failure: the non-first values it had, its reasons, and whether two approximations were on
        self.failures: list[tuple[list[tuple[str, str]], frozenset[FailureReason], bool]] = []
        self.probed: set[tuple[str, str]] = set()

    @classmethod
    def from_store(cls, params: dict[str, tuple], store) -> "SetAside":
        """The record a run database implies (for a resumed run, and for its summary)."""
        ledger = cls(params, store.get(EARLIER_KEY, []) or [])
        for e in store.evaluations():
            ledger.observe(e)
        return ledger

    def observe(self, e: Evaluation) -> None:
        if e.status == Status.PRUNED.value:
            if e.reason == REASON:
                hit = self.blocks(e.config)
                if hit is not None:
                    self.answered[_earlier_key(hit.param, hit.value, hit.also)] += 1
            return
        if not e.counted or e.duplicate_of is not None:
            return
        if self.blocks(e.config) is not None:
            return     # explained by a value already set aside: no evidence against the others
        reasons = failure_reasons(e.result)
        keys = []
        for name, value in e.config.items():
            if name not in self.first or value == self.first[name]:
                continue
            k = (name, _vkey(value))
            keys.append(k)
            self.values[k] = value
            t = self.tallies.setdefault(k, _Tally())
            t.measured += 1
            if e.status == Status.OK.value:
                t.passed += 1
            t.reasons.update(reasons)
        approximations = sorted(k for k in keys if k[0] in APPROXIMATIONS)
        for pair in combinations(approximations, 2):
            t = self.pair_tallies.setdefault(pair, _Tally())
            t.measured += 1
            if e.status == Status.OK.value:
                t.passed += 1
            t.reasons.update(reasons)
        if reasons:
            self.failures.append((keys, reasons, len(approximations) >= 2))
        self._decide()

    def _alone(self) -> dict[tuple[str, str], Counter]:
        """Per value, the reasons of the failures that are its alone (every other value of the
        configuration a first value or one that has passed)."""
        out: dict[tuple[str, str], Counter] = {}
        for keys, reasons, paired in self.failures:
            if paired:
                continue       # two approximations on: the pair may be the culprit, not the value left over
            unproven = [k for k in keys if not self.tallies[k].passed]
            if len(unproven) == 1:
                out.setdefault(unproven[0], Counter()).update(reasons)
        return out

    def _pairs_alone(self) -> dict[Pair, Counter]:
        """Per pair of approximation values, the reasons of the failures that are the pair's alone
        (exactly those two approximations on, every other value a first value or one that has passed)."""
        out: dict[Pair, Counter] = {}
        for keys, reasons, paired in self.failures:
            if not paired:
                continue
            pair = tuple(sorted(k for k in keys if k[0] in APPROXIMATIONS))
            if len(pair) == 2 and all(self.tallies[k].passed for k in keys if k not in pair):
                out.setdefault(pair, Counter()).update(reasons)     # type: ignore[arg-type]
        return out

    def _earlier(self, k: Key, also: dict[str, Any] | None = None) -> Optional[str]:
        return self.earlier.get((k[0], k[1], _vkey(sorted((also or {}).items()))))

    def _need(self, k: Key, reason: FailureReason, also: dict[str, Any] | None = None) -> int:
        return SET_ASIDE_AFTER_KNOWN if self._earlier(k, also) == str(reason) else SET_ASIDE_AFTER

    def _decide(self) -> None:
        """Set aside each value with enough failures for one reason, at least one of them its alone."""
        alone = self._alone()
        for k, t in self.tallies.items():
            if k in self.aside or t.passed:
                continue
            mine = alone.get(k, Counter())
            for reason, n in sorted(t.reasons.items(), key=lambda x: (-x[1], x[0])):
                if n >= self._need(k, reason) and mine[reason]:
                    self.aside[k] = SetAsideValue(param=k[0], value=self.values[k], reason=str(reason), failed=n,
                                                  measured=t.measured, earlier=self._earlier(k) == str(reason))
                    break
        pairs = self._pairs_alone()
        for pair, t in self.pair_tallies.items():
            if pair in self.pairs_aside or t.passed or pair not in pairs:
                continue
            (k, other) = pair
            also = {other[0]: self.values[other]}
            for reason, n in sorted(t.reasons.items(), key=lambda x: (-x[1], x[0])):
                if n >= self._need(k, reason, also) and pairs[pair][reason]:
                    self.pairs_aside[pair] = SetAsideValue(
                        param=k[0], value=self.values[k], also=also, reason=str(reason), failed=n,
                        measured=t.measured, earlier=self._earlier(k, also) == str(reason))
                    break

    def probe(self) -> Optional[dict[str, Any]]:
        """The configuration that tries alone a value with enough failures, none of them its alone
        (the first values with it), once per value; None when there is none to try."""
        for k, t in self.tallies.items():
            if k in self.aside or k in self.probed or t.passed:
                continue
            if any(n >= self._need(k, reason) for reason, n in t.reasons.items()):
                self.probed.add(k)
                return {**self.first, k[0]: self.values[k]}
        return None

    def blocks(self, config: dict[str, Any]) -> Optional[SetAsideValue]:
        """The set-aside value (or pair of values) this configuration contains, if any."""
        for name, value in config.items():
            hit = self.aside.get((name, _vkey(value)))
            if hit is not None:
                return hit
        for ((p1, v1), (p2, v2)), hit in self.pairs_aside.items():
            if p1 in config and p2 in config and _vkey(config[p1]) == v1 and _vkey(config[p2]) == v2:
                return hit
        return None

    def entries(self) -> list[SetAsideValue]:
        return [v.model_copy(update={"answered": self.answered[_earlier_key(v.param, v.value, v.also)]})
                for v in (*self.aside.values(), *self.pairs_aside.values())]


__all__ = ["EARLIER_KEY", "REASON", "SET_ASIDE_AFTER", "SET_ASIDE_AFTER_KNOWN", "FailureReason", "SetAside",
           "SetAsideValue", "failure_reasons"]
