"""Finished ``kerntune optimize`` run directories for export and scoring,
read through :class:`kerntune.record.store.RunDir`: the manifest, the
tester's report, the kernels the run wrote, each round's template, and the
rewrites a round's kernel carries (its ``parent_round`` chain)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.record.audit import audit, untrusted
from kerntune.record.ending import unfinished
from kerntune.record.models import Manifest, ProposalRecord, RoundRecord
from kerntune.record.outcome import CandidateResult, DispatchEntry, TestReport
from kerntune.record.store import RunDir
from kerntune.results import EvalResult, Record
from kerntune.spec.load import LoadedSpec, parse
from kerntune.tuner.kernel_files import EXT, launch_dict, resolve_launch_params
from kerntune.tuner.summary import TuneSummary
from kerntune.fmt import shell


def expand(paths: list[Path], uses: str = "`kerntune export` takes pairs and traces from") -> list[Path]:
    """Run directories: each PATH that holds run.json, or else the folders directly inside it that do.
    ``uses``: what the command the user ran does with them, for the refusal of a `kerntune tune` run."""
    out: list[Path] = []
    for p in paths:
        if not p.exists():
            raise KerntuneError(ErrorCode.FILE, f"no such run directory: {p}",
                                hint="pass directories written by `kerntune optimize` (they hold run.json)")
        if RunDir.is_run(p):
            out.append(p)
            continue
        inner = sorted(c for c in p.iterdir() if c.is_dir() and RunDir.is_run(c)) if p.is_dir() else []
        if not inner:
            hint = "pass directories written by `kerntune optimize` (they hold run.json), or a folder of them"
            if p.is_dir() and (p / "tuning.db").exists():
                hint = f"this is a `kerntune tune` run: {uses} `kerntune optimize` runs"
            raise KerntuneError(ErrorCode.RUN, f"no optimize run in {p} (no run.json)", hint=hint)
        out += inner
    seen, unique = set(), []
    for p in out:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


class Skip(Record):
    """A run that contributed nothing, and why."""
    run_dir: str
    reason: str


@dataclass
class Run:
    """One optimize run directory, read lazily."""

    path: Path
    rd: RunDir = field(init=False)
    manifest: Manifest = field(init=False)
    _templates: dict = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.rd = RunDir.open(self.path)
        self.manifest = self.rd.manifest()

    # --- identity ---------------------------------------------------------------
    @property
    def ext(self) -> str:
        return EXT[self.manifest.lang]

    @cached_property
    def run_id(self) -> str:
        m = self.manifest
        return hashlib.sha256(f"{m.created!r}|{m.kernel_path}|{m.device.id}".encode()).hexdigest()[:16]

    @cached_property
    def ending(self) -> Optional[KerntuneError]:
        """Why the run is not finished, as `kerntune show` says it (record.ending); None once it is."""
        return unfinished(self.rd)

    @cached_property
    def problems(self) -> list[str]:
        """Where the run's record does not hold together (record.audit); read once."""
        return audit(self.rd)

    @cached_property
    def refusal(self) -> Optional[KerntuneError]:
        """Why the run's claims cannot be used, as `kerntune show` says it: a run not finished (run.json
        not done, results.json or its headline or report.md missing), or a record that does not hold
        together (:attr:`problems`); None when they can."""
        return self.ending if self.ending is not None else untrusted(str(self.path), self.problems)

    @cached_property
    def unusable(self) -> Optional[str]:
        """The refusal as one line: why the run is left out."""
        e = self.refusal
        if e is None:
            return None
        if self.ending is None:       # finished: a record that does not hold together, its first problem
            more = f" and {len(self.problems) - 1} more" if len(self.problems) > 1 else ""
            return (f"its record does not hold together ({self.problems[0]}{more}; `kerntune show "
                    f"{shell(self.path)}` lists them): not used")
        return f"not finished: {e.message}; {e.hint}"

    @property
    def device(self) -> dict[str, Any]:
        d = self.manifest.device
        return {"name": d.name, "id": d.id, "backend": d.backend, "kind": d.kind, "arch": d.arch, "driver": d.driver}

    # --- files --------------------------------------------------------------------
    def text(self, rel: str) -> str:
        text = self.rd.text(rel)
        if text is None:
            raise KerntuneError(ErrorCode.RUN, f"{self.path / rel} is missing: the run directory is incomplete",
                                hint="export only finished runs (kerntune optimize --resume RUN_DIR finishes one)")
        return text

    def maybe(self, rel: str) -> str:
        return self.rd.text(rel) or ""

    def has(self, rel: str) -> bool:
        return self.rd.has(rel)

    @cached_property
    def original_source(self) -> str:
        return self.text(self.rd.original(self.manifest))

    @cached_property
    def spec_text(self) -> str:
        return self.text(self.rd.original_spec)

    @cached_property
    def loaded_spec(self) -> LoadedSpec:
        origin = self.rd.file(self.rd.original_spec)
        return parse(self.spec_text, origin=origin, base_dir=origin.parent)

    @cached_property
    def test(self) -> Optional[TestReport]:
        return self.rd.test()

    @cached_property
    def baseline(self) -> Optional[EvalResult]:
        return self.rd.baseline()

    @cached_property
    def dispatch(self) -> list[DispatchEntry]:
        return self.rd.dispatch()

    def summary(self, r: int) -> Optional[TuneSummary]:
        return self.rd.summary(r)

    def proposal(self, r: int) -> Optional[ProposalRecord]:
        return self.rd.proposal(r)

    def round(self, r: int) -> Optional[RoundRecord]:
        return self.manifest.round(r)

    # --- kernels ----------------------------------------------------------------------
    def original_launch(self) -> dict[str, Any]:
        spec = self.loaded_spec.spec
        stem = self.manifest.kernel_file.split(".")[0]
        return launch_dict(spec.launches.get(stem) or spec.launch)

    def original_options(self) -> list[str]:
        return list(getattr(self.loaded_spec.spec.compile_options, self.manifest.lang))

    def candidate(self, r: int, key: str) -> Optional[CandidateResult]:
        return self.test.candidate(r, key) if self.test is not None else None

    def template(self, r: int):
        """Round ``r``'s template, parsed once (each pair renders it and reads its launch)."""
        from kerntune.tuner.template import parse_template

        if r not in self._templates:
            rel = self.rd.template_rel(r, self.manifest.lang)
            self._templates[r] = parse_template(self.text(rel), self.manifest.lang, str(self.path / rel))
        return self._templates[r]

    def rendered(self, r: int, config: dict[str, Any]) -> str:
        """Round ``r``'s template at ``config`` as the run wrote it out (parameters baked in, no header):
        the kernel the tester verified."""
        from kerntune.agents.bake import bake

        return bake(self.template(r).render(config, self.loaded_spec.spec), self.manifest.lang)

    def launch_and_options(self, r: int, config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The launch (sizes still symbolic) and compile options of a round's template at ``config``."""
        t = self.template(r)
        return launch_dict(resolve_launch_params(t.decl.launch, config)), list(t.options(config, self.loaded_spec.spec))

    @cached_property
    def adopted(self) -> set[int]:
        """Rounds a later round started from."""
        return {rec.parent_round for rec in self.manifest.rounds if rec.parent_round is not None}

    def transformations(self, r: int) -> list[dict[str, Any]]:
        """Every rewrite a kernel of round ``r`` carries, oldest first, with the round that applied it."""
        out = []
        for m in self.manifest.lineage(r):
            rec = self.round(m)
            for t in (rec.transformations if rec is not None else []):
                out.append({"round": m, **t.model_dump()})
        return out


def require_usable(runs: list[Run]) -> None:
    """Refuse an export or a score with nothing to read: every run given is unfinished or does not hold
    together. The first one's refusal is raised, with its hint (runs among usable ones are left out and
    listed instead)."""
    bad = [r for r in runs if r.refusal is not None]
    if runs and len(bad) == len(runs):
        e = bad[0].refusal
        more = f" (and {len(bad) - 1} more run(s) that cannot be used either)" if len(bad) > 1 else ""
        raise KerntuneError(e.code, e.message + more, hint=e.hint, detail=e.detail)


__all__ = ["Run", "Skip", "expand", "require_usable"]
