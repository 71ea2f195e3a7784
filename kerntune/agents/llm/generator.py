"""The LLM generator: asks an OpenAI-compatible endpoint (or a recording of
one) for a template, checks the answer, and tells every problem back in the
conversation until the answer is usable or the attempts are spent.

LLM output is data: the template text is only ever parsed, rendered in
kerntune's Jinja sandbox and compiled in a worker process (by the
Optimizer's `validate` and the tuner); nothing in it is executed here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from kerntune.agents.generator import GenerationRequest, Proposal, Validate
from kerntune.agents.llm.answer import AnswerError, answer_schema, parse_answer
from kerntune.agents.llm.client import (PLACEHOLDER_KEY, ChatReply, OpenAIChatClient, check_base_url, display_url,
                                        is_local)
from kerntune.agents.llm.prompts import build_messages, feedback_message
from kerntune.agents.llm.recording import (Recorder, RecordedReplies, ReplayClient, RequestKey, ReusingClient)
from kerntune.record.models import LLMSettings, LLMUsage, Transformation
from kerntune.record.store import RunDir
from kerntune.errors import ErrorCode, KerntuneError

PROVIDERS = ("openai", "replay:RUN_DIR")
MAX_TEMPLATE_CHARS = 200_000


class LLMGenerator:
    name = "llm"

    def __init__(self, client: Any, recorder: Optional[Recorder] = None, max_attempts: int = 3):
        self.client = client                 # anything with complete(messages, key=, schema=) -> ChatReply
        self.recorder = recorder
        self.max_attempts = max(1, max_attempts)

    # --- construction from the run's settings -----------------------------------------------
    @staticmethod
    def check_settings(settings: LLMSettings) -> LLMSettings:
        """Validate before anything is created (run directory, client), and normalize what is
        stored in the run's manifest: an absolute replay path, a base URL without credentials."""
        provider = settings.provider
        if provider.startswith("replay:"):
            source = provider[len("replay:"):]
            if not source:
                raise KerntuneError(ErrorCode.USAGE, "--llm replay: needs a run directory",
                                    hint="e.g. --llm replay:runs/vector_add-20250101-120000")
            if not (Path(source) / "run.json").exists():
                raise KerntuneError(ErrorCode.USAGE, f"--llm replay: no optimize run in {source}",
                                    hint="name the run directory of an earlier `kerntune optimize --llm ...` run")
            return settings.model_copy(update={"provider": "replay:" + str(Path(source).resolve())})
        if provider != "openai":
            raise KerntuneError(ErrorCode.USAGE, f"unknown LLM provider {provider!r}",
                                hint="--llm takes one of: rules, " + ", ".join(PROVIDERS))
        if not settings.model:
            raise KerntuneError(ErrorCode.USAGE, "--llm openai needs --model NAME",
                                hint="the model the endpoint serves, e.g. --model gpt-4.1, or the name a local "
                                     "vLLM/Ollama server was started with")
        base_url = check_base_url(settings.base_url) if settings.base_url else None
        _api_key(settings.api_key_env, base_url)
        # never keep user:password@ in the manifest
        return settings.model_copy(update={"base_url": display_url(base_url) if base_url else None})

    @classmethod
    def from_settings(cls, settings: LLMSettings, run: RunDir) -> "LLMGenerator":
        """The generator the settings describe. The API key is read here, from the variable
        ``settings.api_key_env`` names, and kept only inside the HTTP client."""
        settings = cls.check_settings(settings)
        recorder = Recorder(run)
        if settings.provider == "openai":
            client: Any = _openai_client(settings, recorder)
        else:
            source = Path(settings.provider[len("replay:"):])
            if source.resolve() == run.path.resolve():
                raise KerntuneError(ErrorCode.USAGE, "--llm replay: names this run's own directory",
                                    hint="replay another run (a resumed run reuses its own replies by itself)")
            client = ReplayClient(source, recorder)
        own = RecordedReplies(run.path)
        if own:
            client = ReusingClient(client, own)
        return cls(client, recorder, settings.max_attempts)

    # --- the Generator protocol -------------------------------------------------------------
    def usage(self) -> LLMUsage:
        return self.recorder.usage() if self.recorder is not None else LLMUsage()

    def propose(self, req: GenerationRequest, validate: Validate) -> Proposal | None:
        messages = build_messages(req)
        calls_at_start = self.usage().calls
        for turn in range(1, self.max_attempts + 1):
            if req.llm_calls_left is not None and self.usage().calls - calls_at_start >= req.llm_calls_left:
                return None                  # the run's LLM call budget is spent: no correction turn
            key = RequestKey.of(req.round, turn, req.original_source)
            reply: ChatReply = self.client.complete(messages, key=key, schema=answer_schema())
            why, answer = None, None
            try:
                answer = parse_answer(reply.text)
            except AnswerError as e:
                why = f"the answer is not the requested JSON object: {e}"
            if answer is not None:
                if len(answer.template) > MAX_TEMPLATE_CHARS:
                    why = f"the template is {len(answer.template)} characters long (limit {MAX_TEMPLATE_CHARS})"
                else:
                    why = validate(answer.template)
            if self.recorder is not None:
                self.recorder.verdict(key, "accepted" if why is None else why)
            if why is None and answer is not None:
                return Proposal(template=answer.template, source="llm", rationale=answer.rationale.strip(),
                                transformations=tuple(Transformation(rule="llm", summary=t.strip())
                                                      for t in answer.transformations if t.strip()),
                                attempts=turn)
            messages = messages + [{"role": "assistant", "content": reply.text},
                                   {"role": "user", "content": feedback_message(why or "", self.max_attempts - turn,
                                                                                reply.finish_reason)}]
        return None


def _api_key(env: str, base_url: Optional[str]) -> str:
    """The API key from the environment ("" for a local server that needs none)."""
    key = os.environ.get(env, "").strip()
    if not key and not (base_url is not None and is_local(base_url)):
        where = display_url(base_url) if base_url else "the OpenAI API"
        raise KerntuneError(ErrorCode.LLM, f"no API key for {where}: the environment variable {env} is not set",
                            hint=f"export {env}=<your key> (--llm-api-key-env names another variable), point "
                                 "--llm-base-url at a local server (no key needed), or use --llm rules")
    return key


def _openai_client(settings: LLMSettings, recorder: Recorder) -> OpenAIChatClient:
    key = _api_key(settings.api_key_env, settings.base_url)
    client = OpenAIChatClient(model=str(settings.model), base_url=settings.base_url, api_key=key or PLACEHOLDER_KEY,
                              key_source=f"the environment variable {settings.api_key_env}",
                              timeout_s=settings.timeout_s, on_attempt=recorder.attempt,
                              run_dir=str(recorder.run.path))
    if recorder.fell_back:
        client.structured = False            # this run's endpoint already refused json_schema
    return client


__all__ = ["LLMGenerator", "PROVIDERS"]
