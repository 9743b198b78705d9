"""A loopback OpenAI-compatible chat server for tests (stdlib only, runs in a thread).

Serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 at a free port, and
Anthropic's ``POST /v1/messages`` (same script; point the SDK at ``srv.root_url``).
Replies come from a script written by us for the test (never recordings of a real model):

* a list of replies, consumed in request order, or
* a callable ``(request_body: dict, index: int) -> reply``.

A reply is a ``str`` (usage estimated at 4 characters per token) or a :class:`ServerReply`
(exact text, usage, cached/reasoning tokens, finish_reason, delay, or a scripted HTTP error).

Failure injection for the transport's error paths::

    srv.fail_next(500, times=2)         # two 500s, then the script resumes (SDK retries)
    srv.fail_next(401)                  # auth error (not retried by the SDK)
    srv.fail_next(429, times=1)         # rate limit
    srv.malformed_next()                # HTTP 200 with a body that is not JSON
    srv.delay_s = 2.0                   # every reply waits 2 s (client timeouts)

A provider's prompt cache, emulated: ``LLMServer(script, prefix_cache=True)`` reports, for a
chat completion whose script reply leaves usage unset, ``prompt_tokens`` (4 characters a token
of the request's messages, each as its role then its content) and, as
``prompt_tokens_details.cached_tokens``, the whole tokens of its longest common prefix with any
request answered before it arrived (a request in flight serves no other: as at a provider, a
prefix is cached once a request with it has been processed).

Every request is recorded (``srv.requests``), including the ones answered with an error, so a
test can count retries and inspect exactly which parameters the client sent.

Usage::

    from llm_server import LLMServer          # tests/ is on sys.path under pytest
    with LLMServer(["hello"]) as srv:
        model = OpenAICompatModel("m", base_url=srv.url, api_key="x")

or the ``llm_server`` fixture: ``from llm_server import llm_server  # noqa: F401``.
A list script that runs out answers 400 naming the request number (not retried by the SDK).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

import pytest


@dataclass
class ServerReply:
    text: str = ""
    finish_reason: str = "stop"
    prompt_tokens: int | None = None  # None: estimated from the request (4 chars/token)
    completion_tokens: int | None = None  # None: estimated from text
    cached_tokens: int | None = None  # reported as usage.prompt_tokens_details.cached_tokens
    cache_write_tokens: int | None = None  # Anthropic's cache_creation_input_tokens
    reasoning_tokens: int | None = None  # usage.completion_tokens_details.reasoning_tokens
    model: str | None = None  # None: echo the requested model
    delay_s: float = 0.0
    status: int = 200  # != 200: answer with an OpenAI-style error body instead
    error_message: str = "scripted error"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    status: int = 0  # status the server answered with
    time: float = field(default_factory=time.monotonic)


ScriptFn = Callable[[dict, int], Union[str, ServerReply]]


def _estimate(text: str) -> int:
    return math.ceil(len(text) / 4)


def common_prefix(a: str, b: str) -> int:
    """Characters two requests share from their start (what a provider's prefix cache can
    serve)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest n with a[:n] == b[:n]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class LLMServer:
    def __init__(self, script: Sequence[str | ServerReply] | ScriptFn | None = None,
                 *, models: Sequence[str] = ("test-model",), api_key: str | None = None,
                 prefix_cache: bool = False):
        self.script = script if callable(script) else list(script or [])
        self.models = list(models)
        self.api_key = api_key  # when set, requests without "Bearer <api_key>" get 401
        self.delay_s = 0.0
        self.requests: list[RecordedRequest] = []
        self._failures: list[tuple[int, str]] = []  # (status, body) queued before the script
        self._served = 0  # chat completions answered from the script
        self.prefix_cache = prefix_cache
        self._answered: list[str] = []  # requests answered so far, as the cache sees them
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def root_url(self) -> str:
        """Without "/v1": the base URL the Anthropic SDK expects."""
        return self.url[: -len("/v1")]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Chat requests of either protocol (OpenAI chat completions, Anthropic messages)."""
        return [r for r in self.requests
                if r.path.rstrip("/").endswith(("/chat/completions", "/messages"))]

    def fail_next(self, status: int = 500, times: int = 1, message: str | None = None) -> None:
        body = json.dumps({"error": {"message": message or f"scripted HTTP {status}",
                                     "type": "test_error", "code": status}})
        with self._lock:
            self._failures.extend([(status, body)] * times)

    def malformed_next(self, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([(200, "{this is not json")] * times)

    def start(self) -> "LLMServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, the client's delayed ACK
            # adds ~40 ms to every reply.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_GET(self):
                server._record(self, None)
                if self.path.rstrip("/").endswith("/models"):
                    data = {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "test"}
                        for m in server.models]}
                    self._send(200, json.dumps(data))
                else:
                    self._send(404, json.dumps({"error": {"message": "not found"}}))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = None
                rec = server._record(self, body)
                status, payload = server._answer(self, body)
                rec.status = status
                try:
                    self._send(status, payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up

            def _send(self, status: int, payload: str):
                data = payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "LLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- request handling (server threads) ----------------------------------------------------
    def _record(self, handler: BaseHTTPRequestHandler, body: dict | None) -> RecordedRequest:
        rec = RecordedRequest(method=handler.command, path=handler.path,
                              headers={k.lower(): v for k, v in handler.headers.items()}, body=body)
        with self._lock:
            self.requests.append(rec)
        return rec

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict | None) -> tuple[int, str]:
        path = handler.path.rstrip("/")
        anthropic = path.endswith("/v1/messages")
        if not (anthropic or path.endswith("/chat/completions")):
            return 404, json.dumps({"error": {"message": f"no route {handler.path}"}})
        # OpenAI clients send "Authorization: Bearer KEY"; Anthropic clients "x-api-key: KEY"
        # (older SDKs) or the bearer header (newer ones).
        key = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
        if anthropic and handler.headers.get("x-api-key"):
            key = handler.headers["x-api-key"]
        if self.api_key is not None and key != self.api_key:
            return 401, json.dumps({"error": {"message": "Incorrect API key provided",
                                              "type": "invalid_request_error", "code": "invalid_api_key"}})
        if body is None:
            return 400, json.dumps({"error": {"message": "request body is not JSON"}})
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
            if failure is None:
                index = self._served
                self._served += 1
        if failure is not None:
            if self.delay_s:
                time.sleep(self.delay_s)
            return failure
        reply = self._scripted(body, index)
        text = ""
        if self.prefix_cache and not anthropic:
            text = "".join(f"<|{m.get('role')}|>{m.get('content')}"
                           for m in body.get("messages", []))
            with self._lock:
                served = max((common_prefix(text, a) for a in self._answered), default=0)
            if reply.prompt_tokens is None:
                reply.prompt_tokens = _estimate(text)
            if reply.cached_tokens is None:
                reply.cached_tokens = served // 4
        delay = reply.delay_s or self.delay_s
        if delay:
            time.sleep(delay)
        if reply.status != 200:
            return reply.status, json.dumps({"error": {"message": reply.error_message,
                                                       "type": "test_error"}})
        if anthropic:
            return 200, json.dumps(self._anthropic_message(body, reply, index))
        answer = json.dumps(self._completion(body, reply, index))
        if text:
            with self._lock:
                self._answered.append(text)
        return 200, answer

    def _scripted(self, body: dict, index: int) -> ServerReply:
        if callable(self.script):
            item = self.script(body, index)
        elif index < len(self.script):
            item = self.script[index]
        else:
            # 400, not 5xx: the SDK does not retry it, so the test fails at once with this message.
            item = ServerReply(status=400, error_message=(
                f"test server script exhausted: request #{index} but only "
                f"{len(self.script)} scripted replies"))
        return ServerReply(text=item) if isinstance(item, str) else item

    @staticmethod
    def _anthropic_message(body: dict, reply: ServerReply, index: int) -> dict:
        prompt_text = str(body.get("system", "")) + "".join(
            str(m.get("content", "")) for m in body.get("messages", []))
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _estimate(prompt_text)
        cached = reply.cached_tokens or 0
        written = reply.cache_write_tokens or 0
        stop = {"stop": "end_turn", "length": "max_tokens"}.get(reply.finish_reason,
                                                                reply.finish_reason)
        return {
            "id": f"msg_test_{index}", "type": "message", "role": "assistant",
            "model": reply.model or body.get("model", "unknown"),
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": stop, "stop_sequence": None,
            # Anthropic counts cache reads outside input_tokens.
            "usage": {"input_tokens": prompt - cached - written,
                      "cache_read_input_tokens": cached,
                      "cache_creation_input_tokens": written,
                      "output_tokens": (reply.completion_tokens if reply.completion_tokens
                                        is not None else _estimate(reply.text))},
        }

    @staticmethod
    def _completion(body: dict, reply: ServerReply, index: int) -> dict:
        prompt_text = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _estimate(prompt_text)
        completion = (reply.completion_tokens if reply.completion_tokens is not None
                      else _estimate(reply.text))
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        if reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        if reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        return {
            "id": f"chatcmpl-test-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or body.get("model", "unknown"),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.text}}],
            "usage": usage,
        }


@pytest.fixture
def llm_server():
    """A started :class:`LLMServer` with an empty script (set ``llm_server.script``).

    Use it from any test module with ``from llm_server import llm_server  # noqa: F401``."""
    with LLMServer() as srv:
        yield srv
