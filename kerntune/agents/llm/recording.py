"""The record of a run's LLM conversation, and the clients that serve it back.

Every HTTP attempt is written to `RUN/llm/NNNN.json` the moment it ends:
the request (endpoint without credentials, model, messages, response
format), the reply text and token counts or the error, the time it took,
what happened next (retry, fall back, give up), and later the verdict on the
answer ("accepted" or why it was unusable). No API key and no header is
ever part of a record.

Each request carries a key: (round, turn, kernel) where `turn` counts the
attempts of one proposal (1 = first answer, 2 = the answer after the first
error was told back, ...) and `kernel` is a hash of the original kernel's
source. Replies are looked up by that key:

- `ReplayClient` (`--llm replay:RUN_DIR`) serves another run's replies. It
  is strict about the essentials: the same original kernel, the same round
  and turn, and the same conversation shape (the roles of the messages).
  It does not compare the message text, which quotes timings and compile
  logs that differ from run to run. A request the recording has no reply
  for ("ran out") or that differs in an essential is a clear error.
- `ReusingClient` serves, on `--resume`, the replies this run already
  received, so an interrupted conversation costs nothing to repeat; what
  is not recorded goes to the live client.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from kerntune.agents.llm.client import FALLBACK, Attempt, ChatReply, Message
from kerntune.record.models import LLMUsage
from kerntune.record.store import RunDir
from kerntune.errors import ErrorCode, KerntuneError

FOLDER = "llm"


@dataclass(frozen=True)
class RequestKey:
    round: int
    turn: int
    kernel: str                           # sha256 prefix of the original kernel source

    @classmethod
    def of(cls, round: int, turn: int, original_source: str) -> "RequestKey":
        return cls(round, turn, hashlib.sha256(original_source.encode()).hexdigest()[:16])

    def as_dict(self) -> dict[str, Any]:
        return {"round": self.round, "turn": self.turn, "kernel": self.kernel}

    @classmethod
    def from_dict(cls, d: Any) -> Optional["RequestKey"]:
        try:
            return cls(int(d["round"]), int(d["turn"]), str(d["kernel"]))
        except (TypeError, KeyError, ValueError):
            return None

    def __str__(self) -> str:
        return f"round {self.round}, turn {self.turn}"


def _roles(messages: Sequence[Message]) -> list[str]:
    return [str(m.get("role", "")) for m in messages]


def _records(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """(name, record) of every NNNN.json in `folder`, in order; a corrupt one is an error."""
    run = RunDir(folder.parent)
    out = []
    for p in sorted(folder.glob("*.json"), key=lambda p: p.name):
        if not p.stem.isdigit():
            continue
        data = run.read_json(f"{folder.name}/{p.name}")
        if not isinstance(data, dict):
            raise KerntuneError(ErrorCode.RUN, f"{p} is not an LLM record")
        out.append((p.name, data))
    return out


class Recorder:
    """Writes one file per attempt and keeps the run's totals (over all its records, earlier sessions
    included, so a resumed run reports what the whole run spent)."""

    def __init__(self, run: RunDir):
        self.run = run
        (run.path / FOLDER).mkdir(parents=True, exist_ok=True)
        existing = _records(run.path / FOLDER)
        self.next_n = max((int(name.split(".")[0]) for name, _ in existing), default=0) + 1
        self.totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "failed_attempts": 0, "replayed": 0}
        self._answers: dict[RequestKey, str] = {}          # key -> file of the answer it got
        self.fell_back = False                             # the endpoint refused json_schema once
        for name, rec in existing:
            self._count(rec)
            self.fell_back |= rec.get("next") == FALLBACK
            key = RequestKey.from_dict(rec.get("key"))
            if rec.get("ok") and key is not None:
                self._answers.setdefault(key, name)

    def _count(self, rec: dict[str, Any]) -> None:
        if rec.get("ok"):
            self.totals["calls"] += 1
            resp = rec.get("response") or {}
            self.totals["prompt_tokens"] += int(resp.get("prompt_tokens") or 0)
            self.totals["completion_tokens"] += int(resp.get("completion_tokens") or 0)
            self.totals["replayed"] += 1 if rec.get("replayed_from") else 0
        else:
            self.totals["failed_attempts"] += 1

    def attempt(self, key: Any, request: dict[str, Any], attempt: Attempt, replayed_from: str = "") -> None:
        name = f"{self.next_n:04d}.json"
        self.next_n += 1
        r = attempt.reply
        rec = {
            "n": int(name[:-5]), "key": key.as_dict() if isinstance(key, RequestKey) else None,
            "endpoint": request.get("endpoint", ""), "model": request.get("model", ""),
            "mode": attempt.mode, "try": attempt.try_no, "ok": attempt.ok, "seconds": round(attempt.seconds, 4),
            "status": attempt.status, "error": attempt.error, "next": attempt.next_step,
            "request": {"messages": request.get("messages", []),
                        "response_format": request.get("response_format")},
            "response": None if r is None else {"text": r.text, "prompt_tokens": r.prompt_tokens,
                                                "completion_tokens": r.completion_tokens,
                                                "finish_reason": r.finish_reason},
        }
        if replayed_from:
            rec["replayed_from"] = replayed_from
        self.run.write_json(f"{FOLDER}/{name}", rec)
        self._count(rec)
        self.fell_back |= attempt.next_step == FALLBACK
        if attempt.ok and isinstance(key, RequestKey):
            self._answers[key] = name

    def verdict(self, key: RequestKey, verdict: str) -> None:
        """Note on the answer's record whether it was accepted, or why not."""
        name = self._answers.get(key)
        if name is None:
            return
        rec = self.run.read_json(f"{FOLDER}/{name}")
        if isinstance(rec, dict) and rec.get("verdict") != verdict:
            rec["verdict"] = verdict
            self.run.write_json(f"{FOLDER}/{name}", rec)

    def usage(self) -> LLMUsage:
        return LLMUsage(**self.totals)


class RecordedReplies:
    """The answered requests of a recording, by key (the first answer for a key wins)."""

    def __init__(self, run_path: Path):
        self.path = run_path
        self.by_key: dict[RequestKey, tuple[str, dict[str, Any]]] = {}
        folder = run_path / FOLDER
        for name, rec in (_records(folder) if folder.is_dir() else []):
            key = RequestKey.from_dict(rec.get("key"))
            if rec.get("ok") and key is not None and isinstance(rec.get("response"), dict):
                self.by_key.setdefault(key, (name, rec))

    def __len__(self) -> int:
        return len(self.by_key)

    def get(self, key: RequestKey) -> Optional[tuple[str, dict[str, Any]]]:
        return self.by_key.get(key)

    @staticmethod
    def reply(rec: dict[str, Any]) -> ChatReply:
        resp = rec["response"]
        return ChatReply(text=str(resp.get("text") or ""), prompt_tokens=int(resp.get("prompt_tokens") or 0),
                         completion_tokens=int(resp.get("completion_tokens") or 0),
                         seconds=float(rec.get("seconds") or 0.0), finish_reason=str(resp.get("finish_reason") or ""))

    @staticmethod
    def roles(rec: dict[str, Any]) -> list[str]:
        return _roles((rec.get("request") or {}).get("messages") or [])


class ReplayClient:
    """Serves a recorded run's replies instead of an endpoint (no network); strict, see the module doc."""

    def __init__(self, source: Path, recorder: Recorder):
        if not (source / "run.json").exists() and not (source / FOLDER).is_dir():
            raise KerntuneError(ErrorCode.RUN, f"--llm replay:{source}: no optimize run there",
                                hint="give the run directory of an earlier `kerntune optimize --llm openai` run")
        self.source = source
        self.replies = RecordedReplies(source)
        if not self.replies:
            raise KerntuneError(ErrorCode.RUN, f"--llm replay:{source}: the run has no recorded LLM replies "
                                               f"({source / FOLDER} is empty)",
                                hint="replay a run made with --llm openai")
        self.recorder = recorder
        self.endpoint = f"replay:{source}"
        self.model = ""

    def complete(self, messages: Sequence[Message], *, key: RequestKey, schema: Optional[dict[str, Any]] = None
                 ) -> ChatReply:
        found = self.replies.get(key)
        if found is None:
            kernels = {k.kernel for k in self.replies.by_key}
            if key.kernel not in kernels:
                raise KerntuneError(ErrorCode.LLM, f"the recording in {self.source} is of another kernel (its "
                                                   "conversation does not match this run's original kernel)",
                                    hint="replay a recording of the same kernel, or use --llm openai")
            held = ", ".join(str(k) for k in sorted(self.replies.by_key, key=lambda k: (k.round, k.turn)))
            raise KerntuneError(ErrorCode.LLM, f"the recording in {self.source} ran out: it has no reply for "
                                               f"{key} (it holds {held})",
                                hint="the replayed run asked for more than the recorded one did (another budget "
                                     "or another outcome of a round); replay with the recorded run's options, "
                                     "or use --llm openai")
        name, rec = found
        if self.replies.roles(rec) != _roles(messages):
            raise KerntuneError(ErrorCode.LLM, f"the request for {key} differs from the recorded one "
                                               f"({self.source / FOLDER / name}): {len(messages)} messages "
                                               f"({'/'.join(_roles(messages))}) where the recording has "
                                               f"{'/'.join(self.replies.roles(rec))}",
                                hint="the recording was made by another version of kerntune's prompts; "
                                     "use --llm openai")
        reply = self.replies.reply(rec)
        request = {"endpoint": self.endpoint, "model": rec.get("model", ""), "messages": list(messages),
                   "response_format": (rec.get("request") or {}).get("response_format")}
        self.recorder.attempt(key, request, Attempt(1, str(rec.get("mode") or "text"), True, reply.seconds,
                                                    reply=reply), replayed_from=str(self.source / FOLDER / name))
        return reply


class ReusingClient:
    """On resume: a request this run already had answered is served from its record (no cost); any
    other goes to the live (or replay) client."""

    def __init__(self, inner: Any, own: RecordedReplies):
        self.inner = inner
        self.own = own
        self.endpoint = inner.endpoint

    def complete(self, messages: Sequence[Message], *, key: RequestKey, schema: Optional[dict[str, Any]] = None
                 ) -> ChatReply:
        found = self.own.get(key)
        if found is not None and self.own.roles(found[1]) == _roles(messages):
            return self.own.reply(found[1])
        return self.inner.complete(messages, key=key, schema=schema)
