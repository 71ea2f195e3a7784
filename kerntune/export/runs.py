"""Read finished ``kerntune optimize`` run directories for export and scoring:
the manifest, the tester's report, the kernels the run wrote, each round's
template and the chain of rounds (which round's best each round started from)."""

from __future__ import annotations

import hashlib

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from kerntune.agents.rundir import MANIFEST, Manifest, RoundRecord, RunDir
from kerntune.agents.tester import CandidateResult, TestReport
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import EvalResult, Record
from kerntune.source.normalize import source_hash
from kerntune.spec.load import LoadedSpec, parse
from kerntune.tuner.kernel_files import EXT, launch_dict, resolve_launch_params

def expand(paths: list[Path]) -> list[Path]:
    """Run directories: each PATH that holds run.json, or else the folders directly inside it that do."""
    out: list[Path] = []
    for p in paths:
        if not p.exists():
            raise KerntuneError(ErrorCode.FILE, f"no such run directory: {p}",
                                hint="pass directories written by `kerntune optimize` (they hold run.json)")
        if (p / MANIFEST).exists():
            out.append(p)
            continue
        inner = sorted(c for c in p.iterdir() if c.is_dir() and (c / MANIFEST).exists()) if p.is_dir() else []
        if not inner:
            hint = "pass directories written by `kerntune optimize` (they hold run.json), or a folder of them"
            if p.is_dir() and (p / "tuning.db").exists():
                hint = "this is a `kerntune tune` run: pairs and traces come from `kerntune optimize` runs"
            raise KerntuneError(ErrorCode.RUN, f"no optimize run in {p} (no {MANIFEST})", hint=hint)
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

    def __post_init__(self) -> None:
        self.rd = RunDir.open(self.path)
        self.manifest = self.rd.load_manifest()

    # --- identity ---------------------------------------------------------------
    @property
    def ext(self) -> str:
        return EXT[self.manifest.lang]

    @cached_property
    def run_id(self) -> str:
        m = self.manifest
        return hashlib.sha256(f"{m.created!r}|{m.kernel_path}|{m.device.get('id')}".encode()).hexdigest()[:16]

    @property
    def finished(self) -> bool:
        return self.manifest.status == "done"

    @property
    def device(self) -> dict[str, Any]:
        d = self.manifest.device
        return {k: d.get(k) for k in ("name", "id", "backend", "kind", "arch", "driver")}

    # --- files --------------------------------------------------------------------
    def text(self, rel: str) -> str:
        p = self.path / rel
        try:
            return p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise KerntuneError(ErrorCode.RUN, f"{p} is missing: the run directory is incomplete",
                                hint="export only finished runs (kerntune optimize --resume RUN_DIR finishes one)") \
                from None
        except (OSError, UnicodeDecodeError) as e:
            raise KerntuneError(ErrorCode.RUN, f"cannot read {p}: {e}") from None

    def has(self, rel: str) -> bool:
        return (self.path / rel).exists()

    @cached_property
    def original_source(self) -> str:
        return self.text(f"original/{Path(self.manifest.kernel_path).name}")

    @cached_property
    def spec_text(self) -> str:
        return self.text("original/spec.yaml")

    @cached_property
    def loaded_spec(self) -> LoadedSpec:
        return parse(self.spec_text, origin=self.path / "original/spec.yaml", base_dir=self.path / "original")

    @cached_property
    def test(self) -> Optional[TestReport]:
        data = self.rd.read_json("test.json")
        return None if data is None else _validate(TestReport, data, self.path / "test.json")

    @cached_property
    def baseline(self) -> Optional[EvalResult]:
        data = self.rd.read_json("baseline.json")
        return None if data is None else _validate(EvalResult, data, self.path / "baseline.json")

    def summary(self, r: int) -> Optional[dict[str, Any]]:
        return self.rd.read_json(f"rounds/{r:02d}/summary.json")

    def proposal(self, r: int) -> dict[str, Any]:
        return self.rd.read_json(f"rounds/{r:02d}/proposal.json") or {}

    def round(self, r: int) -> Optional[RoundRecord]:
        return next((x for x in self.manifest.rounds if x.round == r), None)

    # --- kernels ----------------------------------------------------------------------
    def original_launch(self) -> dict[str, Any]:
        spec = self.loaded_spec.spec
        stem = Path(self.manifest.kernel_path).name.split(".")[0]
        return launch_dict(spec.launches.get(stem) or spec.launch)

    def original_options(self) -> list[str]:
        return list(getattr(self.loaded_spec.spec.compile_options, self.manifest.lang))

    def candidate(self, r: int, key: str) -> Optional[CandidateResult]:
        if self.test is None:
            return None
        return next((c for c in self.test.candidates if c.round == r and c.key == key), None)

    def template(self, r: int):
        from kerntune.tuner.template import parse_template

        rel = f"rounds/{r:02d}/template{self.ext}.j2"
        return parse_template(self.text(rel), self.manifest.lang, str(self.path / rel))

    def launch_and_options(self, r: int, config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The launch (sizes still symbolic) and compile options of a round's template at ``config``."""
        t = self.template(r)
        return launch_dict(resolve_launch_params(t.decl.launch, config)), list(t.options(config, self.loaded_spec.spec))

    @cached_property
    def parents(self) -> dict[int, Optional[int]]:
        """For every round with an input kernel: the round whose best it started from (None: the original)."""
        best: dict[int, str] = {}
        out: dict[int, Optional[int]] = {}
        original = source_hash(self.original_source)
        for rec in sorted(self.manifest.rounds, key=lambda x: x.round):
            r = rec.round
            if self.has(f"rounds/{r:02d}/input{self.ext}"):
                h = source_hash(self.text(f"rounds/{r:02d}/input{self.ext}"))
                earlier = [m for m, bh in best.items() if bh == h and m < r]
                out[r] = max(earlier) if earlier and h != original else None
            if self.has(f"rounds/{r:02d}/best{self.ext}"):
                best[r] = source_hash(self.text(f"rounds/{r:02d}/best{self.ext}"))
        return out

    def lineage(self, r: int) -> list[int]:
        """The rounds whose rewrites a kernel of round ``r`` carries, oldest first."""
        chain = [r]
        while self.parents.get(chain[-1]) is not None:
            chain.append(self.parents[chain[-1]])
        return list(reversed(chain))

    def transformations(self, r: int) -> list[dict[str, Any]]:
        out = []
        for m in self.lineage(r):
            rec = self.round(m)
            for t in (rec.transformations if rec is not None else []):
                out.append({"round": m, **t})
        return out


def _validate(model, data: Any, where: Path):
    try:
        return model.model_validate(data)
    except Exception as e:
        raise KerntuneError(ErrorCode.RUN, f"{where} is not a valid kerntune record: {str(e).splitlines()[0]}",
                            hint="was it written by another kerntune version?") from None
