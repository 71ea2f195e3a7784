"""A chat client for any OpenAI-compatible endpoint, over the official
`openai` package, with kerntune's own retries so that every attempt can be
recorded: HTTP 429, 5xx, timeouts and connection failures are retried with
exponential backoff (honouring Retry-After), a bounded number of times.

Structured output: requests first carry `response_format={"type":
"json_schema", ...}`; an endpoint that refuses it (HTTP 400/422) is asked
again without it, and for the rest of the session, the answer then being
found in the text (the prompt always describes the JSON object).

The API key lives only in the `openai.OpenAI` object: it is never part of a
record, a message or an exception (text that comes back from the endpoint is
scrubbed of it too, in case a proxy echoes headers)."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence
from urllib.parse import urlsplit, urlunsplit

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
PLACEHOLDER_KEY = "kerntune-no-key"        # sent to local servers that need none
FALLBACK = "fall back to JSON in the text"

Message = dict[str, str]                   # {"role": "system" | "user" | "assistant", "content": text}


MAX_REPLY_CHARS = 10**7    # a longer reply is not an answer to read: its first 2000 characters are kept, and a note
TOO_LONG = "\n[kerntune: the reply was {n} characters, over the {limit} read; the rest was dropped]"


@dataclass(frozen=True)
class ChatReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str = ""


@dataclass(frozen=True)
class Attempt:
    """One HTTP request and how it ended (what the recorder writes)."""

    try_no: int                            # 1, 2, ... within one complete() call
    mode: str                              # "json_schema" or "text"
    ok: bool
    seconds: float
    reply: Optional[ChatReply] = None
    status: Optional[int] = None           # HTTP status of a failed request
    error: str = ""                        # what went wrong ("" when ok)
    next_step: str = ""                    # "retry in 1.0 s", "fall back to JSON in the text", "give up"


OnAttempt = Callable[[Any, dict[str, Any], Attempt], None]     # (key, request, attempt)


def display_url(url: str) -> str:
    """The URL without user:password@ or a query string (safe to print and record)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in LOCAL_HOSTS or host.endswith(".localhost") or host.startswith("127.")


def check_base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KerntuneError(ErrorCode.USAGE, f"--llm-base-url {url!r} is not an http(s) URL",
                            hint="give the endpoint's base URL, e.g. http://localhost:8000/v1 or "
                                 "https://api.openai.com/v1")
    return url


class OpenAIChatClient:
    def __init__(self, *, model: str, base_url: Optional[str], api_key: str, key_source: str = "",
                 timeout_s: float = 300.0, retries: int = 3, backoff_s: float = 0.5, max_wait_s: float = 60.0,
                 on_attempt: Optional[OnAttempt] = None, sleep: Callable[[float], None] = time.sleep,
                 run_dir: str = "RUN_DIR"):
        import openai

        self.model = model
        self.base_url = check_base_url(base_url or DEFAULT_BASE_URL)
        self.endpoint = display_url(self.base_url)
        self.key_source = key_source
        self.timeout_s, self.retries, self.backoff_s, self.max_wait_s = timeout_s, retries, backoff_s, max_wait_s
        self.on_attempt = on_attempt
        self.sleep = sleep
        self.run_dir = run_dir             # for the hint after a failure
        self.structured = True             # until the endpoint refuses json_schema
        self._secret = api_key
        self._openai = openai
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout_s, max_retries=0)

    # --- helpers --------------------------------------------------------------------
    def _scrub(self, text: str, limit: int = 600) -> str:
        if self._secret and len(self._secret) >= 6:
            text = text.replace(self._secret, "[redacted]")
        return text if len(text) <= limit else text[:limit] + "..."

    def _retry_after(self, error: Any) -> Optional[float]:
        headers = getattr(getattr(error, "response", None), "headers", None) or {}
        try:
            if headers.get("retry-after-ms") is not None:
                return float(headers["retry-after-ms"]) / 1000
            value = headers.get("retry-after")
            if value is None:
                return None
            try:
                return max(0.0, float(value))
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            return None

    def _record(self, key: Any, request: dict[str, Any], attempt: Attempt) -> None:
        if self.on_attempt is not None:
            self.on_attempt(key, request, attempt)

    def _fatal(self, status: int, detail: str) -> KerntuneError:
        where = f"the LLM endpoint {self.endpoint}"
        if status in (401, 403):
            return KerntuneError(ErrorCode.LLM, f"{where} refused the API key (HTTP {status}): {detail}",
                                 hint=f"check the key in {self.key_source or 'the API key variable'} "
                                      "(--llm-api-key-env names the variable)")
        if status == 404:
            return KerntuneError(ErrorCode.LLM, f"{where} answered HTTP 404 for model {self.model!r}: {detail}",
                                 hint="check --llm-base-url (OpenAI-compatible servers usually end in /v1) and "
                                      "--model (the name the server serves)")
        return KerntuneError(ErrorCode.LLM, f"{where} rejected the request (HTTP {status}): {detail}",
                             hint="check --model and --llm-base-url; the request is recorded in the run's llm/ "
                                  "folder")

    # --- the call -------------------------------------------------------------------
    def complete(self, messages: Sequence[Message], *, key: Any = None,
                 schema: Optional[dict[str, Any]] = None) -> ChatReply:
        """One answer to `messages`, retrying transient failures; KerntuneError(LLM) when it cannot."""
        oa = self._openai
        failures, try_no, last = 0, 0, ""
        while True:
            try_no += 1
            mode = "json_schema" if schema is not None and self.structured else "text"
            extra = {"response_format": {"type": "json_schema", "json_schema": schema}} if mode == "json_schema" \
                else {}
            request = {"endpoint": self.endpoint, "model": self.model, "messages": list(messages), **extra}
            t0 = time.monotonic()
            status: Optional[int] = None
            wait: Optional[float] = None
            try:
                resp = self._client.chat.completions.create(model=self.model, messages=list(messages), **extra)
            except oa.APIStatusError as e:
                seconds = time.monotonic() - t0
                status = e.status_code
                detail = self._scrub(_error_text(e))
                if mode == "json_schema" and status in (400, 422):
                    self.structured = False
                    self._record(key, request, Attempt(try_no, mode, False, seconds, status=status, error=detail,
                                                       next_step=FALLBACK))
                    continue
                if status not in (408, 409, 429) and status < 500:
                    self._record(key, request, Attempt(try_no, mode, False, seconds, status=status, error=detail,
                                                       next_step="give up"))
                    raise self._fatal(status, detail) from None
                last = f"HTTP {status}: {detail}"
                wait = self._retry_after(e)
            except oa.APITimeoutError:
                seconds = time.monotonic() - t0
                last = f"no answer within the {self.timeout_s:g} s timeout"
            except oa.APIConnectionError as e:
                seconds = time.monotonic() - t0
                cause = e.__cause__ or e.__context__
                last = "could not connect" + (f": {self._scrub(str(cause), 300)}" if cause else "")
            except (oa.OpenAIError, ValueError, TypeError) as e:
                # a reply the package cannot read (a body that is not JSON, say): not an OpenAI-compatible endpoint
                raise self._not_a_completion(key, request, try_no, mode, time.monotonic() - t0,
                                             f"{type(e).__name__}: {e}") from None
            else:
                try:
                    reply = self._reply(resp, time.monotonic() - t0)
                except _NotACompletion as e:
                    raise self._not_a_completion(key, request, try_no, mode, time.monotonic() - t0, str(e)) from None
                if reply is not None:
                    self._record(key, request, Attempt(try_no, mode, True, reply.seconds, reply=reply))
                    return reply
                seconds = time.monotonic() - t0
                last = "the reply has no choices"
            failures += 1
            if failures > self.retries:
                self._record(key, request, Attempt(try_no, mode, False, seconds, status=status, error=last,
                                                   next_step="give up"))
                raise KerntuneError(
                    ErrorCode.LLM, f"the LLM endpoint {self.endpoint} failed {failures} times in a row "
                                   f"(last: {last})",
                    hint="check that the server is running and reachable at --llm-base-url (and --llm-timeout for "
                         "slow models); the run keeps what it did: continue it with "
                         f"`kerntune optimize --resume {shell(self.run_dir)}`")
            if wait is None:
                wait = self.backoff_s * 2 ** (failures - 1)
            wait = min(wait, self.max_wait_s)
            self._record(key, request, Attempt(try_no, mode, False, seconds, status=status, error=last,
                                               next_step=f"retry in {wait:.1f} s"))
            self.sleep(wait)

    def _not_a_completion(self, key: Any, request: dict[str, Any], try_no: int, mode: str, seconds: float,
                          what: str) -> KerntuneError:
        detail = self._scrub(what, limit=300)
        self._record(key, request, Attempt(try_no, mode, False, seconds, error=detail, next_step="give up"))
        return KerntuneError(ErrorCode.LLM, f"the LLM endpoint {self.endpoint} sent a reply that is not an OpenAI "
                                            f"chat completion: {detail}",
                             hint="--llm-base-url must point at an OpenAI-compatible API (e.g. "
                                  "http://localhost:8000/v1); the run keeps what it did: continue it with "
                                  f"`kerntune optimize --resume {shell(self.run_dir)}`")

    def _reply(self, resp: Any, seconds: float) -> Optional[ChatReply]:
        """The reply, None when it has no choices (retried); a body of another shape is not a completion."""
        if isinstance(resp, (str, bytes, dict, list)) or not hasattr(resp, "choices"):
            raise _NotACompletion(f"the body is {type(resp).__name__} {self._scrub(str(resp), 120)!r}")
        choices = resp.choices
        if not choices:
            return None
        if not isinstance(choices, list):
            raise _NotACompletion(f"'choices' is {type(choices).__name__}, not a list")
        msg = getattr(choices[0], "message", None)
        if msg is None:
            raise _NotACompletion("the first choice has no message")
        text = getattr(msg, "content", None) or getattr(msg, "refusal", None) or ""
        if not isinstance(text, str):
            raise _NotACompletion(f"the message content is {type(text).__name__}, not text")
        usage = getattr(resp, "usage", None)
        if len(text) > MAX_REPLY_CHARS:       # kept short, and said so (the answer parser tells the model)
            text = text[:2000] + TOO_LONG.format(n=len(text), limit=MAX_REPLY_CHARS)
        return ChatReply(text=self._scrub(text, limit=MAX_REPLY_CHARS + 200),
                         prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                         completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                         seconds=seconds, finish_reason=str(choices[0].finish_reason or ""))


class _NotACompletion(Exception):
    """A 200 reply whose body is not an OpenAI chat completion."""


def _error_text(e: Any) -> str:
    """The endpoint's own error message where it sent one, else the package's."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(e, "message", "") or e)
