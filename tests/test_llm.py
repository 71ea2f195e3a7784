"""The LLM generator against a real OpenAI-compatible HTTP server on
127.0.0.1 (stdlib http.server in a thread, scripted replies): every failure
an endpoint or a model can produce is handled and the run still finishes
with a verified result; the conversation is recorded (no API key anywhere),
replayed with no server, and reused on --resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kerntune.agents.generator import GenerationRequest, RoundNote
from kerntune.agents.llm.answer import AnswerError, parse_answer
from kerntune.agents.llm.client import OpenAIChatClient
from kerntune.agents.llm.generator import LLMGenerator
from kerntune.agents.llm.prompts import build_messages
from kerntune.agents.llm.recording import Recorder, ReplayClient, RequestKey
from kerntune.record.models import LLMSettings
from kerntune.record.store import RunDir
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import DeviceInfo
from kerntune.spec.load import load_file
from tests.conftest import KERNTUNE, REPO, VECTOR_ADD, vector_add_spec, write

pytestmark = pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves these out

SECRET = "sk-kerntune-test-SENTINEL-7f3a9c1e5b"
KERNEL = VECTOR_ADD
SMALL_SPEC = vector_add_spec({"4K": 4096, "64K": 65536})
FAST = ["--device", "cpu", "--evaluations", "6", "--repeats", "5", "--warmup", "1", "--final-repeats", "10"]


# --- the templates an LLM might write for vector_add.cl ----------------------------------------------
def template(statement: str = "c[base + {{ k }}] = a[base + {{ k }}] + b[base + {{ k }}];", extra: str = "") -> str:
    return """{# kerntune-template
description: vector_add with explicit work-group size and elements per work-item
params:
  BLOCK: [256, 128, 512]   # 256: the original launch
  EPT: [1, 2, 4]           # 1: one element per work-item, as the original
launch:
  grid: ["ceil_div(n, BLOCK * EPT)"]
  block: [BLOCK]
#}
__kernel void {{ kernel_name }}(__global float* c, __global const float* a, __global const float* b, const int n)
{
    const int base = get_global_id(0) * {{ EPT }};
%s{%% for k in range(EPT) %%}
    if (base + {{ k }} < n) %s
{%% endfor %%}
}
""" % (extra, statement)


GOOD = template()
UNDEFINED = template("c[base + {{ k }}] = a[base + {{ k }}] + b[base + {{ k }}] * {{ SCALE }};")
NO_COMPILE = template("c[base + {{ k }}] = a[base + {{ k }}] + b[base + {{ k }}]  /* no semicolon */")
WRONG = template("c[base + {{ k }}] = a[base + {{ k }}] - b[base + {{ k }}];")
ESCAPE = template(extra="    // {{ ''.__class__.__mro__[1].__subclasses__() }}\n")


def answer(t: str, fenced: bool = False) -> str:
    body = json.dumps({"template": t, "rationale": "more work per work-item amortizes index math",
                       "transformations": ["work-group size as a parameter", "EPT elements per work-item"]})
    return f"Here is the template.\n```json\n{body}\n```\nGood luck!" if fenced else body


MALFORMED = '{"template": "{# kerntune-template\\nparams: {BLOCK: [256]}\\n#}\\n__kernel void", "rationale": '


# --- the fake endpoint ---------------------------------------------------------------------------------
class FakeLLM:
    """POST /v1/chat/completions answered from a script of steps:
    ("reply", text) | ("status", code, headers) | ("sleep", seconds) | ("hang",) | ("echo_auth", code) |
    ("raw", body, content_type): HTTP 200 with that body."""

    def __init__(self, reject_json_schema: bool = False):
        self.script: deque = deque()
        self.received: list[dict] = []           # request bodies, with "_step" and "_auth_ok" added
        self.reject_json_schema = reject_json_schema
        self.release = threading.Event()
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:            # the client gave up (timeout) or was killed
                    pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                auth = self.headers.get("Authorization", "")
                body["_auth_ok"] = auth == f"Bearer {SECRET}"
                with fake.lock:
                    if self.path != "/v1/chat/completions":
                        step = ("status", 404, {})
                    elif fake.reject_json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
                        step = ("status", 400, {})
                    else:
                        step = fake.script.popleft() if fake.script else ("status", 599, {})
                    body["_step"] = step[0] if step[0] != "status" else f"status {step[1]}"
                    fake.received.append(body)
                if step[0] == "reply":
                    prompt = sum(len(m["content"]) for m in body["messages"]) // 4
                    done = len(step[1]) // 4
                    body["_usage"] = (prompt, done)
                    self._send(200, {"id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                                     "model": body["model"],
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": step[1]}}],
                                     "usage": {"prompt_tokens": prompt, "completion_tokens": done,
                                               "total_tokens": prompt + done}})
                elif step[0] == "status":
                    msg = "response_format json_schema is not supported" if step[1] == 400 else "scripted failure"
                    self._send(step[1], {"error": {"message": msg, "type": "test"}}, step[2])
                elif step[0] == "raw":             # 200 with a body that is not a chat completion
                    data = step[1].encode()
                    self.send_response(200)
                    self.send_header("Content-Type", step[2])
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                elif step[0] == "echo_auth":       # a badly behaved proxy that echoes the key
                    self._send(step[1], {"error": {"message": f"invalid key: {auth}"}})
                elif step[0] == "sleep":
                    time.sleep(step[1])
                    self._send(500, {"error": {"message": "too late"}})
                elif step[0] == "hang":
                    fake.release.wait(60)
                    self._send(500, {"error": {"message": "released"}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def push(self, *steps):
        self.script.extend(steps)


def kerntune(*args: str, key: str | None = SECRET, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run([*KERNTUNE, *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout)


def assert_no_secret(run_dir: Path, *texts: str) -> None:
    for p in run_dir.rglob("*"):
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), f"the API key leaked into {p}"
    for t in texts:
        assert SECRET not in t


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("spec")
    write(d, "vector_add.yaml", SMALL_SPEC)
    shutil.copy(REPO / "kernels/examples/reference.py", d / "reference.py")
    return d / "vector_add.yaml"


@pytest.fixture(scope="module")
def recorded(spec, tmp_path_factory):
    """The end-to-end run: every failure case, then a good template, through the real CLI."""
    run = tmp_path_factory.mktemp("llm") / "run"
    with FakeLLM(reject_json_schema=True) as fake:
        fake.push(("status", 429, {"Retry-After": "0"}), ("reply", MALFORMED),          # round 1, turn 1
                  ("status", 500, {}), ("reply", answer(ESCAPE)),                       # turn 2
                  ("sleep", 3.5), ("reply", answer(UNDEFINED)),                         # turn 3: no proposal
                  ("reply", answer(NO_COMPILE)),                                        # round 2, turn 1
                  ("reply", answer(WRONG, fenced=True)),                                # turn 2
                  ("reply", answer(GOOD, fenced=True)))                                 # turn 3: accepted
        r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", "openai", "--llm-base-url",
                     fake.url, "--model", "test", "--rounds", "2", "--llm-timeout", "1.5", "--run-dir", str(run),
                     "--json")
        left = list(fake.script)
    assert r.returncode == 0, r.stdout + r.stderr
    return {"run": run, "result": json.loads(r.stdout), "received": fake.received, "left": left, "cli": r,
            "url": fake.url}


def test_every_failure_is_handled_and_the_run_finishes(recorded):
    res, received = recorded["result"], recorded["received"]
    assert recorded["left"] == []                                          # the whole script was used
    steps = [b["_step"] for b in received]
    assert steps == ["status 400", "status 429", "reply", "status 500", "reply", "sleep", "reply",
                     "reply", "reply", "reply"]
    assert all(b["_auth_ok"] for b in received)                           # the key was sent, as a header
    # json_schema first; after the 400, JSON in the text for the rest of the session
    assert received[0]["response_format"]["type"] == "json_schema"
    assert all("response_format" not in b for b in received[1:])
    # what each unusable answer earned: the reason, told back in the conversation
    answers = [b for b in received if b["_step"] == "reply"]
    feedback = [a["messages"][-1]["content"] for a in answers]
    assert len(answers[0]["messages"]) == 2 and len(answers[2]["messages"]) == 6
    assert "not the requested JSON object" in feedback[1]                 # malformed JSON
    assert "sandbox forbids" in feedback[2]                               # the escape attempt
    assert len(answers[3]["messages"]) == 2                               # round 2: a fresh conversation
    assert "compile_error" in feedback[4]                                 # does not compile
    assert "wrong_result" in feedback[5]                                  # computes the wrong result
    # the rounds: one without a proposal, one tuned from the accepted template
    r1, r2 = res["rounds"]
    assert r1["status"] == "no-proposal" and r2["status"] == "done" and r2["source"] == "llm"
    assert r2["measured"] >= 1 and r2["transformations"][0]["rule"] == "llm"
    run = recorded["run"]
    assert (run / "rounds/02/template.cl.j2").read_text() == GOOD
    assert json.loads((run / "rounds/02/proposal.json").read_text())["attempts"] == 3
    # a valid result: every tested candidate verified, best.cl written
    assert res["status"] == "done" and res["test"] is not None
    assert all(c["verified"] for c in res["test"]["candidates"])
    assert (run / "best.cl").exists()


def test_the_recording_is_complete_and_holds_no_key(recorded):
    run, received = recorded["run"], recorded["received"]
    records = [json.loads(p.read_text()) for p in sorted((run / "llm").glob("*.json"))]
    assert len(records) == len(received) == 10
    assert [r["ok"] for r in records] == [b["_step"] == "reply" for b in received]
    assert records[0]["next"] == "fall back to JSON in the text" and records[0]["status"] == 400
    assert records[1]["next"].startswith("retry") and records[1]["status"] == 429
    assert "timeout" in records[5]["error"]
    for rec, body in zip(records, received):
        assert rec["model"] == "test" and rec["endpoint"] == recorded["url"]
        assert rec["request"]["messages"] == body["messages"]
        if rec["ok"]:
            assert (rec["response"]["prompt_tokens"], rec["response"]["completion_tokens"]) == tuple(body["_usage"])
    verdicts = [r.get("verdict") for r in records if r["ok"]]
    assert verdicts[-1] == "accepted" and all(v and v != "accepted" for v in verdicts[:-1])
    for verdict, needle in zip(verdicts, ("not the requested JSON object", "sandbox forbids", "(undefined)",
                                          "compile_error", "wrong_result")):
        assert needle in verdict, (needle, verdict)
    # totals per run: results.json, run.json and report.md
    ok = [r for r in records if r["ok"]]
    totals = recorded["result"]["llm"]
    assert totals["calls"] == 6 and totals["failed_attempts"] == 4
    assert totals["prompt_tokens"] == sum(r["response"]["prompt_tokens"] for r in ok) > 0
    assert totals["completion_tokens"] == sum(r["response"]["completion_tokens"] for r in ok) > 0
    assert json.loads((run / "run.json").read_text())["llm"] == totals
    assert f"{totals['calls']} calls, {totals['prompt_tokens']} prompt tokens" in (run / "report.md").read_text()
    assert_no_secret(run, recorded["cli"].stdout, recorded["cli"].stderr)


def test_replay_reproduces_the_run_with_no_server(recorded, spec, tmp_path):
    run = tmp_path / "replayed"
    r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", f"replay:{recorded['run']}",
                 "--rounds", "2", "--run-dir", str(run), "--json", key=None)
    assert r.returncode == 0, r.stdout + r.stderr
    res, orig = json.loads(r.stdout), recorded["result"]
    for name in ("rounds/02/template.cl.j2", "rounds/02/input.cl", "rounds/01/input.cl"):
        assert (run / name).read_text() == (recorded["run"] / name).read_text()
    essentials = ("round", "status", "source", "template", "space_size", "transformations", "rationale")
    assert [{k: x[k] for k in essentials} for x in res["rounds"]] == \
        [{k: x[k] for k in essentials} for x in orig["rounds"]]
    assert [x["llm_calls"] for x in res["rounds"]] == [x["llm_calls"] for x in orig["rounds"]]
    assert res["llm"]["calls"] == orig["llm"]["calls"] == res["llm"]["replayed"]
    assert res["llm"]["prompt_tokens"] == orig["llm"]["prompt_tokens"]
    records = [json.loads(p.read_text()) for p in sorted((run / "llm").glob("*.json"))]
    assert len(records) == 6 and all(x["replayed_from"].startswith(str(recorded["run"])) for x in records)


def test_replay_errors(recorded, spec, tmp_path):
    replay = ReplayClient(recorded["run"], Recorder(RunDir.create(tmp_path / "a")))
    first = [b for b in recorded["received"] if b["_step"] == "reply"][0]["messages"]
    assert replay.complete(first, key=RequestKey.of(1, 1, KERNEL.read_text())).text == MALFORMED
    with pytest.raises(KerntuneError, match="ran out: it has no reply for round 3, turn 1"):
        replay.complete(first, key=RequestKey.of(3, 1, KERNEL.read_text()))
    with pytest.raises(KerntuneError, match="of another kernel"):
        replay.complete(first, key=RequestKey.of(1, 1, "__kernel void other() {}"))
    with pytest.raises(KerntuneError, match="differs from the recorded one"):
        replay.complete(first, key=RequestKey.of(1, 2, KERNEL.read_text()))
    r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", f"replay:{tmp_path}",
                 "--run-dir", str(tmp_path / "b"), key=None)
    assert r.returncode == 2 and "no optimize run in" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "b").exists()          # refused before the run directory was made


def test_resume_reuses_recorded_replies(spec, tmp_path):
    run = tmp_path / "run"
    with FakeLLM() as fake:
        fake.push(("reply", answer(WRONG)), ("hang",))
        cmd = [*KERNTUNE, "optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm",
               "openai", "--llm-base-url", fake.url, "--model", "test", "--rounds", "1", "--run-dir", str(run),
               "--json"]
        env = {**os.environ, "OPENAI_API_KEY": SECRET}
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while len(fake.received) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)                  # interrupted while waiting for the second answer
        proc.wait(30)
        fake.release.set()
        assert len(fake.received) == 2, "the run never asked twice"
        assert len(list((run / "llm").glob("*.json"))) == 1   # the first answer was recorded as it came
        before = len(fake.received)
        fake.push(("reply", answer(GOOD)))
        r = kerntune("optimize", "--resume", str(run), "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        new = fake.received[before:]
    assert len(new) == 1                                     # turn 1 came from the record; only turn 2 was asked
    assert len(new[0]["messages"]) == 4 and "wrong_result" in new[0]["messages"][-1]["content"]
    res = json.loads(r.stdout)
    assert res["rounds"][0]["status"] == "done" and res["llm"]["calls"] == 2
    assert (run / "rounds/01/template.cl.j2").read_text() == GOOD
    assert_no_secret(run, r.stdout, r.stderr)


def test_resume_of_a_finished_llm_run_asks_nothing(recorded, tmp_path):
    run = tmp_path / "copy"
    shutil.copytree(recorded["run"], run)                    # its server is gone: any request would fail
    r = kerntune("optimize", "--resume", str(run), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(list((run / "llm").glob("*.json"))) == 10
    res = json.loads(r.stdout)
    assert res["llm"] == recorded["result"]["llm"] and [x["status"] for x in res["rounds"]] == ["no-proposal", "done"]


def test_the_llm_call_budget_holds_inside_a_round(spec, tmp_path):
    """--llm-calls 2 with three correction turns a round: the third request is never sent."""
    with FakeLLM() as fake:
        fake.push(*[("reply", MALFORMED)] * 6)
        r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", "openai", "--llm-base-url",
                     fake.url, "--model", "test", "--rounds", "3", "--llm-calls", "2", "--run-dir",
                     str(tmp_path / "r"), "--json")
        asked = len(fake.received)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert asked == 2 and res["llm"]["calls"] == 2
    assert res["stop_reason"] == "LLM call budget spent" and res["rounds"][0]["status"] == "no-proposal"


# --- user errors through the real CLI: one message and a hint, no traceback --------------------------
def test_unknown_provider_lists_the_choices(spec, tmp_path):
    r = kerntune("optimize", str(KERNEL), "--spec", str(spec), "--llm", "anthropic", "--run-dir", str(tmp_path / "r"))
    assert r.returncode == 2 and "unknown LLM provider 'anthropic'" in r.stderr
    assert "openai" in r.stderr and "replay:RUN_DIR" in r.stderr and "Traceback" not in r.stderr


def test_missing_key_or_model(spec, tmp_path):
    r = kerntune("optimize", str(KERNEL), "--spec", str(spec), "--llm", "openai", "--model", "gpt-x",
                 "--llm-base-url", "https://llm.example.com/v1", "--run-dir", str(tmp_path / "a"), key=None)
    assert r.returncode == 3 and "OPENAI_API_KEY is not set" in r.stderr and "hint" in r.stderr
    assert "Traceback" not in r.stderr
    r = kerntune("optimize", str(KERNEL), "--spec", str(spec), "--llm", "openai", "--run-dir", str(tmp_path / "b"),
                 "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["message"] == "--llm openai needs --model NAME"


def test_unreachable_endpoint_after_retries(spec, tmp_path):
    with FakeLLM() as fake:                                  # a port with nothing listening once it is closed
        url = fake.url
    r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", "openai", "--model", "test",
                 "--llm-base-url", url, "--run-dir", str(tmp_path / "r"), "--json")
    assert r.returncode == 3, r.stdout + r.stderr
    error = json.loads(r.stdout)["error"]
    assert error["code"] == "llm" and url in error["message"] and "failed 4 times" in error["message"]
    assert "--resume" in error["hint"] and "Traceback" not in r.stderr
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "r/llm").glob("*.json"))]
    assert len(records) == 4 and not any(x["ok"] for x in records) and records[-1]["next"] == "give up"
    assert_no_secret(tmp_path / "r", r.stdout, r.stderr)


# --- the pieces, without the CLI ------------------------------------------------------------------------
def test_parse_answer_finds_the_object():
    t = parse_answer(answer(GOOD, fenced=True))
    assert t.template == GOOD and t.transformations
    assert parse_answer("prose {not json} then " + answer(GOOD)).template == GOOD
    assert parse_answer(json.dumps({"template": "x", "rationale": "r", "transformations": "one", "extra": 1})
                        ).transformations == ["one"]
    with pytest.raises(AnswerError, match="rationale"):
        parse_answer(json.dumps({"template": "x", "transformations": []}))
    with pytest.raises(AnswerError, match="no JSON object"):
        parse_answer(MALFORMED)
    with pytest.raises(AnswerError, match="no JSON object"):
        parse_answer('{"template": ' * 50000)              # nested past the parser's depth: still just an error


def test_a_reply_too_long_to_read_is_said_so_and_not_kept_whole():
    # a 60 MB reply was cut to 10 MB, refused as "contains no JSON object", and each record held 10 MB
    from types import SimpleNamespace

    from kerntune.agents.llm.client import MAX_REPLY_CHARS

    client = OpenAIChatClient.__new__(OpenAIChatClient)
    client._secret = ""
    message = SimpleNamespace(content=answer(GOOD) + " " * MAX_REPLY_CHARS, refusal=None)
    resp = SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="stop")], usage=None)
    reply = client._reply(resp, 1.0)
    assert len(reply.text) < 3000
    with pytest.raises(AnswerError, match=f"the answer was {len(message.content):,} characters, over the "
                                          f"{MAX_REPLY_CHARS:,} kerntune reads"):
        parse_answer(reply.text)


def test_client_retries_honour_retry_after_and_never_show_the_key():
    with FakeLLM() as fake:
        waits: list[float] = []
        client = OpenAIChatClient(model="m", base_url=fake.url, api_key=SECRET, timeout_s=5, sleep=waits.append)
        fake.push(("status", 429, {"Retry-After": "7"}), ("status", 503, {}), ("reply", "hello"))
        assert client.complete([{"role": "user", "content": "hi"}]).text == "hello"
        assert waits == [7.0, 1.0]                           # Retry-After, then backoff 0.5 * 2**1
        fake.push(*[("status", 500, {})] * 4)
        with pytest.raises(KerntuneError) as e:
            client.complete([{"role": "user", "content": "hi"}])
        assert e.value.code is ErrorCode.LLM and fake.url in e.value.message and "4 times" in e.value.message
        assert waits[2:] == [0.5, 1.0, 2.0]
        fake.push(("echo_auth", 401))
        with pytest.raises(KerntuneError) as e:
            client.complete([{"role": "user", "content": "hi"}])
        assert "refused the API key" in e.value.message and SECRET not in str(e.value.message) + str(e.value.hint)


def test_local_endpoint_needs_no_key(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run = RunDir.create(tmp_path / "r")
    with FakeLLM() as fake:
        g = LLMGenerator.from_settings(LLMSettings(provider="openai", model="m", base_url=fake.url), run)
        fake.push(("reply", "ok"))
        assert g.client.complete([{"role": "user", "content": "x"}], key=None).text == "ok"
        assert fake.received[0]["_auth_ok"] is False
    with pytest.raises(KerntuneError) as e:
        LLMGenerator.from_settings(LLMSettings(provider="bogus"), run)
    assert e.value.code is ErrorCode.USAGE and "replay:RUN_DIR" in e.value.hint


@pytest.mark.parametrize("lang", ["opencl", "cuda"])
def test_the_prompt_example_is_a_valid_template(lang):
    from kerntune.agents.llm.prompts import _EXAMPLE
    from kerntune.spec.model import KernelSpec
    from kerntune.tuner.template import check_against_spec, parse_template

    spec = KernelSpec.model_validate({"kernel": "scale", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]},
                                      "args": [{"name": "y", "dtype": "fp32", "shape": ["n"], "intent": "out"},
                                               {"name": "x", "dtype": "fp32", "shape": ["n"]},
                                               {"name": "alpha", "dtype": "fp32", "value": 2.0},
                                               {"name": "n", "dtype": "int32", "value": "n"}],
                                      "shapes": [{"n": 1000}]})
    t = parse_template(_EXAMPLE[lang], lang, "example")
    check_against_spec(t, spec)
    assert "void scale(" in t.render(t.baseline, spec) and t.decl.launch.block == ["BLOCK"]


def test_prompt_carries_what_the_model_needs(spec):
    kspec = load_file(spec).spec
    device = DeviceInfo(id="cuda:0", backend="cupy", lang="cuda", name="NVIDIA H100", arch="sm_90", sm_count=132,
                        l2_bytes=50 * 2**20, registers_per_sm=65536, max_shared_per_sm=228 * 1024)
    req = GenerationRequest(round=2, lang="opencl", kernel_source="__kernel void vector_add() {}",
                            original_source=KERNEL.read_text(), launch=kspec.launch, spec=kspec,
                            spec_text=spec.read_text(), device=device,
                            directions=("vectorize memory accesses", "more elements per thread"),
                            measurements="4K: median 3.1 us, 12.0 GB/s",
                            history=(RoundNote(round=1, source="llm", description="EPT", space_size=9, measured=6,
                                               best_speedup=1.42, failures={"compile_error": 2},
                                               best_config={"BLOCK": 128}),))
    system, user = (m["content"] for m in build_messages(req))
    assert "{# kerntune-template" in system and "{{ kernel_name }}" in system and '"template"' in system
    assert "FIRST value" in system and "sandbox" in system
    for needle in ("Round 2", "vector_add", "ceil_div(n, 256)", "NVIDIA H100", "132 SMs", "sm_90", "L2 50 MiB",
                   "1. vectorize memory accesses", "12.0 GB/s", "1.420x", "compile_error: 2", "BLOCK=128",
                   "c[i] = a[i] + b[i]", "intent: out", "{{ kernel_name }}"):
        assert needle in user, needle


# --- an endpoint that answers 200 with something else; a template that would exhaust memory --------------
HUGE = template(extra="    // {{ 'A' * 10**12 }}\n")


@pytest.mark.parametrize("body,content_type", [("<html><body>gateway</body></html>", "text/html"),
                                               ("not json at all", "application/json"),
                                               ('{"choices": "none"}', "application/json")])
def test_a_200_reply_that_is_not_a_completion(spec, tmp_path, body, content_type):
    run = tmp_path / "r"
    with FakeLLM() as fake:
        fake.push(("raw", body, content_type))
        r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", "openai", "--model", "test",
                     "--llm-base-url", fake.url, "--run-dir", str(run), "--json")
        asked = len(fake.received)
    assert r.returncode == 3, r.stdout + r.stderr              # an LLM error, not a bug (70)
    error = json.loads(r.stdout)["error"]
    assert error["code"] == "llm" and "not an OpenAI chat completion" in error["message"] and "--resume" in error["hint"]
    assert asked == 1 and "Traceback" not in r.stderr           # no retries of a reply that cannot improve
    m = json.loads((run / "run.json").read_text())
    assert m["status"] == "failed" and "not an OpenAI chat completion" in m["error"]   # never left "running"


def test_a_template_that_would_exhaust_memory_is_told_back_and_resume_replays_it(spec, tmp_path):
    """The answer's template builds a terabyte string: a sandbox refusal told back to the model, not
    a crash; the run then ends on an LLM error (run.json: failed), and --resume replays the recorded
    answer (refused again, no crash) and finishes with a live one."""
    run = tmp_path / "run"
    with FakeLLM() as fake:
        fake.push(("reply", answer(HUGE)), ("status", 401, {}))
        r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", "openai", "--llm-base-url",
                     fake.url, "--model", "test", "--rounds", "1", "--run-dir", str(run))
        assert r.returncode == 3 and "refused the API key" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert json.loads((run / "run.json").read_text())["status"] == "failed"
        feedback = fake.received[1]["messages"][-1]["content"]
        assert "sandbox forbids" in feedback and "'*' would build 1000000000000 items" in feedback
        before = len(fake.received)
        fake.push(("reply", answer(GOOD)))
        r = kerntune("optimize", "--resume", str(run), "--json")
        new = fake.received[before:]
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(new) == 1 and len(new[0]["messages"]) == 4          # turn 1 replayed from the record, turn 2 live
    assert json.loads(r.stdout)["rounds"][0]["status"] == "done"
    assert json.loads((run / "run.json").read_text())["status"] == "done"


# --- a hostile endpoint (adversarial tour, 2026-12-04) --------------------------------------------------

SECRET_FILE_LINE = "TOPSECRET_LINE = hunter2 ;"
INCLUDES = template(extra='#include "SECRET_PATH"\n')
FLAG_INCLUDE = template(extra='#include "secret.txt"\n').replace(
    "launch:\n", 'flags: {opencl: {"-ISECRET_DIR": "True"}}\nlaunch:\n')
OTHER_SIGNATURE = template().replace("__global const float* b, const int n)", "const int n)").replace(
    "+ b[base + {{ k }}]", "")


def test_a_template_may_not_read_host_files_pass_paths_or_change_the_signature(spec, tmp_path):
    """An #include of a host file, or -I in the template's flags: the compiler's error quoted the file
    back to the endpoint and into the run's records. A kernel with fewer parameters than the spec's
    arguments: a traceback (exit 70), on every --resume again. Each is now told back to the model,
    and the run finishes with the good template."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET_FILE_LINE + "\n")
    run = tmp_path / "run"
    with FakeLLM() as fake:
        fake.push(("reply", answer(OTHER_SIGNATURE)),                                     # round 1: 3 turns
                  ("reply", answer(INCLUDES.replace("SECRET_PATH", str(secret)))),
                  ("reply", answer(FLAG_INCLUDE.replace("SECRET_DIR", str(tmp_path)))),
                  ("reply", answer(GOOD)))                                                # round 2
        r = kerntune("optimize", str(KERNEL), "--spec", str(spec), *FAST, "--llm", "openai", "--llm-base-url",
                     fake.url, "--model", "test", "--rounds", "2", "--run-dir", str(run), "--json")
        feedback = [m["messages"][-1]["content"] for m in fake.received[1:3]]
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "does not take the spec's arguments" in feedback[0]
    assert "the template adds #include" in feedback[1]
    record = "".join(p.read_text(errors="replace") for p in run.rglob("*.json"))
    assert "the compiler option '-I" in record and "never a path" in record      # the third turn's refusal
    for p in run.rglob("*"):
        if p.is_file():
            assert b"TOPSECRET_LINE" not in p.read_bytes(), f"the host file's text reached {p}"
    assert all("TOPSECRET_LINE" not in f for f in feedback)
    rounds = json.loads((run / "run.json").read_text())["rounds"]
    assert rounds[0]["status"] == "no-proposal" and rounds[1]["status"] == "done", rounds
