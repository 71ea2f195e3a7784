"""The records of an optimize run's manifest (run.json) and of each round's
proposal (rounds/NN/proposal.json): settings, plans, rounds and statuses.
Nothing here reads or writes a file (that is :mod:`kerntune.record.store`)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal, Optional

from kerntune import __version__
from kerntune.results import DeviceInfo, Record

FORMAT = "kerntune.run/2"        # run.json's format; a run written in any other is refused (see store.RunDir)


class RunStatus(str, Enum):
    RUNNING = "running"              # in progress, or killed without a chance to say so
    DONE = "done"
    INTERRUPTED = "interrupted"      # Ctrl-C or a termination signal: continue with --resume
    FAILED = "failed"                # stopped on an error (``error`` says which): continue with --resume


class RoundStatus(str, Enum):
    RUNNING = "running"              # started; a resumed run finishes it
    DONE = "done"                    # tuned
    NO_PROPOSAL = "no-proposal"      # the generator had nothing usable to propose


# --- settings ------------------------------------------------------------------------------------
class Budget(Record):
    evaluations: Optional[int] = 200          # measured evaluations over all rounds
    time_s: Optional[float] = None            # wall time of the whole run
    llm_calls: Optional[int] = 20
    rounds: int = 3


class LLMSettings(Record):
    """How to reach the LLM (no secret: the key is read from the variable ``api_key_env`` names)."""

    provider: str                             # "openai", or "replay:RUN_DIR" (an absolute path)
    model: Optional[str] = None
    base_url: Optional[str] = None            # stored without credentials or query
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 300.0                  # per answer, before retrying
    max_attempts: int = 3                     # answers per round (the first, then corrections)


class OptimizeSettings(Record):
    budget: Budget = Budget()
    shape_set: Optional[str] = None
    seed: int = 0
    warmup: int = 20
    repeats: int = 100
    precision: float = 0.02                   # while tuning: timing stops once the median is known to +-2%
    final_repeats: int = 200
    timeout_s: float = 300.0
    top_k: int = 3
    patience: int = 1
    memcheck: Literal["best", "all", "off"] = "best"   # best: would-be bests and final candidates
    strategy: Optional[str] = None            # the tuner's search strategy (None: its default)
    priors: list[str] = []                    # --prior: earlier runs (absolute paths); each round starts from
                                              # those whose template declares its parameters and values
    generator: Literal["rules", "llm"] = "rules"
    llm: Optional[LLMSettings] = None         # with generator "llm"


# --- a round -------------------------------------------------------------------------------------
class RoundPlan(Record):
    """What the planner decided for a round."""

    round: int
    directions: list[str]
    strategy: str = "surrogate"     # kerntune.tuner.strategies.DEFAULT_STRATEGY
    evaluations: int = 50
    time_s: Optional[float] = None
    why: str = ""


class Transformation(Record):
    """One semantics-preserving rewrite of a round: the rule (``llm`` for an LLM's), what it did,
    and the template parameters it introduced."""

    rule: str
    summary: str = ""
    params: list[str] = []


class SkippedRule(Record):
    rule: str
    why: str


class ProposalRecord(Record):
    """rounds/NN/proposal.json: how the round's template came about (the template is beside it)."""

    source: str                               # "rules" or "llm"
    rationale: str = ""
    attempts: int = 1                         # answers it took (LLM)
    transformations: list[Transformation] = []
    skipped: list[SkippedRule] = []           # rules that did not apply, or were left out, with why
    plan: Optional[RoundPlan] = None


class RoundRecord(Record):
    round: int
    status: RoundStatus = RoundStatus.RUNNING
    parent_round: Optional[int] = None        # the round whose best kernel this round started from (None: original)
    source: str = ""                          # the generator: "rules" or "llm"
    plan: Optional[RoundPlan] = None
    llm_calls: int = 0                        # LLM requests this round made
    template: str = ""                        # path relative to the run directory
    space_size: int = 0
    measured: int = 0
    tuner_stop: str = ""
    best_key: str = ""
    best_config: dict[str, Any] = {}
    best_speedup: Optional[float] = None      # geomean over the original, from tuning
    transformations: list[Transformation] = []
    rationale: str = ""
    message: str = ""
    seconds: float = 0.0
    set_aside: list[str] = []                 # parameter values the tuner stopped measuring, and why
    priors: list[str] = []                    # what the search started from (--prior) and how each prior ranked it


class LLMUsage(Record):
    calls: int = 0                            # answered requests
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed_attempts: int = 0
    replayed: int = 0                         # answers served from a recording (--llm replay:...)


# --- the manifest --------------------------------------------------------------------------------
class Manifest(Record):
    format: str = FORMAT
    kerntune_version: str = __version__
    created: float
    kernel_path: str                          # the kernel file as given (absolute)
    kernel_file: str                          # its copy: original/<kernel_file>
    kernel_name: str
    lang: str
    spec_path: str                            # the spec as given (absolute; the kernel file for an inline spec)
    device: DeviceInfo
    settings: OptimizeSettings
    status: RunStatus = RunStatus.RUNNING
    stop_reason: str = ""
    error: str = ""                           # why a failed run stopped
    rounds: list[RoundRecord] = []
    llm: LLMUsage = LLMUsage()
    digests: bool = False                     # results.json records its files' digests (record.audit expects them)
    original_digests: dict[str, str] = {}     # original/<file> -> sha256 when the run started (resume checks them)

    def round(self, r: int) -> Optional[RoundRecord]:
        return next((x for x in self.rounds if x.round == r), None)

    def lineage(self, r: int) -> list[int]:
        """The rounds whose rewrites a kernel of round ``r`` carries, oldest first (``r`` last)."""
        chain, seen = [r], {r}
        rec = self.round(r)
        while rec is not None and rec.parent_round is not None and rec.parent_round not in seen:
            chain.append(rec.parent_round)
            seen.add(rec.parent_round)
            rec = self.round(rec.parent_round)
        return list(reversed(chain))


__all__ = ["FORMAT", "Budget", "LLMSettings", "LLMUsage", "Manifest", "OptimizeSettings", "ProposalRecord",
           "RoundPlan", "RoundRecord", "RoundStatus", "RunStatus", "SkippedRule", "Transformation"]
