"""The answer an LLM must give: one JSON object with the template, why it
should be faster, and the transformations it applied. Asked for with a JSON
schema where the endpoint supports structured output, and found in the text
(bare, or in a ```json fence) where it does not."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class TemplateAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    template: str            # the whole template file: declaration comment plus Jinja kernel
    rationale: str           # why the parameters should make it faster, in a few sentences
    transformations: list[str]   # one short line per semantics-preserving transformation


class AnswerError(Exception):
    """An answer that is not the JSON object we asked for (told back to the LLM)."""


SCHEMA_NAME = "kerntune_template"
MAX_STARTS = 200


def answer_schema() -> dict[str, Any]:
    """The `json_schema` part of an OpenAI `response_format` (strict: every field required, no others)."""
    return {"name": SCHEMA_NAME, "strict": True, "schema": TemplateAnswer.model_json_schema()}


_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.S)


def _objects(text: str):
    """Every JSON object in `text`: the whole text, then fenced blocks, then from each '{' on."""
    candidates = [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    for c in candidates:
        try:
            value = json.loads(c)
        except (ValueError, RecursionError):     # not JSON, or nested past the parser's depth
            continue
        if isinstance(value, dict):
            yield value
    for i, m in enumerate(re.finditer(r"\{", text)):
        if i >= MAX_STARTS:                  # an answer is the first object: do not scan a huge text quadratically
            return
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):     # not JSON, or nested past the parser's depth
            continue
        if isinstance(value, dict):
            yield value


def parse_answer(text: str) -> TemplateAnswer:
    """The first JSON object in the reply that has a `template`, checked against TemplateAnswer."""
    if not text or not text.strip():
        raise AnswerError("the answer was empty")
    cut = re.search(r"\[kerntune: the reply was (\d+) characters, over the (\d+) read", text)
    if cut:
        raise AnswerError(f"the answer was {int(cut.group(1)):,} characters, over the {int(cut.group(2)):,} "
                          "kerntune reads; answer with the JSON object alone")
    first = None
    for obj in _objects(text):
        if "template" in obj:
            first = obj
            break
        first = first if first is not None else obj
    if first is None:
        raise AnswerError("the answer contains no JSON object; answer with exactly one JSON object with the keys "
                          "template, rationale and transformations")
    first = {k: v for k, v in first.items() if k in TemplateAnswer.model_fields}   # extra keys are ignored
    if isinstance(first.get("transformations"), str):      # a common slip: one string instead of a list
        first["transformations"] = [first["transformations"]]
    try:
        answer = TemplateAnswer.model_validate(first)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}"
                             for err in e.errors(include_url=False))
        raise AnswerError(f"the JSON object is not the requested answer: {problems}") from None
    if not answer.template.strip():
        raise AnswerError("the `template` field is empty")
    return answer
