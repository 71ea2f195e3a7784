"""The optimize run directory: a versioned record of everything a run did.

    run.json              the manifest: inputs, settings, device, every round, the outcome
    original/             the kernel and spec as given
    baseline.json         the original kernel's verification and timing
    rounds/NN/            input kernel, template, proposal.json (plan, trace, rationale),
                          tuning.db (every evaluation), summary.json, best kernel of the round
    llm/NNNN.json         LLM requests and responses (no API key), token counts
    test.json             the tester's final verification and re-timing
    best.<ext>            the general configuration, parameters baked in
    per_shape/            one kernel per shape, and dispatch.json (shape -> kernel and launch)
    report.md, results.json
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fsutil import write_atomic
from kerntune.results import Record

MANIFEST = "run.json"


class RoundRecord(Record):
    round: int
    source: str = ""
    status: str = "running"              # running, done, no-proposal, failed
    plan: dict[str, Any] = {}
    template: str = ""                   # path relative to the run directory
    space_size: int = 0
    measured: int = 0
    tuner_stop: str = ""
    best_key: str = ""
    best_config: dict[str, Any] = {}
    best_speedup: Optional[float] = None  # geomean over the baseline, from tuning
    transformations: list[dict[str, Any]] = []
    rationale: str = ""
    message: str = ""
    seconds: float = 0.0
    set_aside: list[str] = []             # parameter values the tuner stopped measuring, and why


class Manifest(Record):
    version: int = 1
    created: float
    kernel_path: str
    kernel_name: str
    lang: str
    spec_path: str
    device: dict[str, Any]
    settings: dict[str, Any]
    status: str = "running"              # running, done, interrupted
    stop_reason: str = ""
    rounds: list[RoundRecord] = []
    llm: dict[str, Any] = {}             # calls, prompt_tokens, completion_tokens


class RunDir:
    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, path: Path) -> "RunDir":
        if (path / MANIFEST).exists():
            raise KerntuneError(ErrorCode.USAGE, f"{path} already holds an optimize run",
                                hint=f"continue it with --resume {path}, or choose another --run-dir")
        path.mkdir(parents=True, exist_ok=True)
        for sub in ("original", "rounds", "llm", "per_shape"):
            (path / sub).mkdir(exist_ok=True)
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        if not (path / MANIFEST).exists():
            raise KerntuneError(ErrorCode.RUN, f"no optimize run in {path} ({MANIFEST} is missing)")
        return cls(path)

    def round_dir(self, r: int) -> Path:
        d = self.path / "rounds" / f"{r:02d}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write(self, rel: str, text: str) -> Path:
        p = self.path / rel
        write_atomic(p, text)     # never leave a half-written file behind
        return p

    def write_json(self, rel: str, value: Any) -> Path:
        if isinstance(value, Record):
            text = value.model_dump_json(indent=2)
        else:
            text = json.dumps(value, indent=2, default=str)
        return self.write(rel, text + "\n")

    def read_json(self, rel: str) -> Any:
        p = self.path / rel
        try:
            return json.loads(p.read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as e:
            raise KerntuneError(ErrorCode.RUN, f"{p} is corrupt: {e}") from None

    def save_manifest(self, m: Manifest) -> None:
        self.write_json(MANIFEST, m)

    def load_manifest(self) -> Manifest:
        data = self.read_json(MANIFEST)
        try:
            return Manifest.model_validate(data)
        except Exception as e:
            raise KerntuneError(ErrorCode.RUN, f"{self.path / MANIFEST} is not a valid manifest: {e}") from None


def now() -> float:
    return time.time()
