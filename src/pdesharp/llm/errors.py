"""Turning SDK exceptions into a :class:`ModelError` a user can act on.

Both the ``openai`` and the ``anthropic`` SDKs raise the same family of exceptions
(``APIConnectionError``, ``APITimeoutError``, ``APIStatusError`` subclasses with
``status_code``), so this works by duck typing and needs neither package imported.
The message always names the endpoint and the model, and says what to check.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

from pdesharp.llm.base import ModelError


@dataclass(frozen=True)
class Endpoint:
    """What an error message needs to know about where a call went."""

    url: str
    model: str
    key_env: str | None = None  # environment variable holding the API key (None: no key)
    timeout_s: float | None = None
    max_retries: int = 0
    has_key: bool = False  # an API key was passed (directly or through key_env)


def _root_causes(exc: BaseException):
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _connection_reason(exc: BaseException) -> str:
    """A short human reason for a failed connection, from the innermost OS error we can find."""
    for cause in _root_causes(exc):
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "host name not found"
    text = " ".join(str(c) for c in _root_causes(exc)).lower()
    for needle, reason in (
        ("connection refused", "connection refused"),
        ("name or service not known", "host name not found"),
        ("nodename nor servname", "host name not found"),
        ("temporary failure in name resolution", "host name not found"),
        ("certificate", "TLS certificate problem"),
        ("network is unreachable", "network unreachable"),
        ("connection reset", "connection reset"),
    ):
        if needle in text:
            return reason
    return type(exc).__name__


def _server_message(exc: BaseException, limit: int = 300) -> str:
    body = getattr(exc, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else str(err)
    msg = msg or getattr(exc, "message", None) or str(exc)
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def _key_hint(ep: Endpoint) -> str:
    if not ep.key_env and ep.has_key:
        return "check the API key you passed"
    if not ep.key_env:
        return "this endpoint is configured without an API key; pass --api-key-env NAME if it needs one"
    return f"check the API key in ${ep.key_env}"


def model_error(exc: BaseException, ep: Endpoint) -> ModelError:
    """A ModelError describing ``exc`` (raise it ``from exc``)."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    where = f"{ep.url} (model {ep.model!r})"
    retried = (f" after {ep.max_retries} {'retry' if ep.max_retries == 1 else 'retries'}"
               if ep.max_retries else "")

    if "Timeout" in name:
        return ModelError(
            f"timed out after {ep.timeout_s:g} s waiting for {where}{retried}: the server is slow "
            "or overloaded; raise --timeout, lower --concurrency, or ask for fewer max tokens"
            if ep.timeout_s else f"timed out waiting for {where}{retried}")
    if "Connection" in name and status is None:
        reason = _connection_reason(exc)
        return ModelError(f"cannot reach {ep.url} ({reason}): is the server running? "
                          f"Check --base-url and your network (model {ep.model!r}).")
    if status == 401:
        return ModelError(f"{where} rejected the credentials (401: {_server_message(exc)}): "
                          f"{_key_hint(ep)}.")
    if status == 403:
        return ModelError(f"{where} denied access (403: {_server_message(exc)}): does this key "
                          f"have access to the model? {_key_hint(ep)}.")
    if status == 404:
        return ModelError(f"{where} answered 404 ({_server_message(exc)}): check the model name "
                          f"(GET {ep.url.rstrip('/')}/models lists what the server offers) and "
                          "that --base-url ends where the API starts (often '/v1').")
    if status == 429:
        return ModelError(f"{where} is rate limiting or out of quota (429{retried}: "
                          f"{_server_message(exc)}): lower --concurrency, wait, or check billing.")
    if status in (400, 422):
        return ModelError(f"{where} rejected the request ({status}: {_server_message(exc)}). "
                          "If it names an unsupported parameter (temperature, max_tokens, system "
                          "role), declare the model's quirks (reasoning=True / system_role=False).")
    if status is not None and status >= 500:
        return ModelError(f"{where} failed with server error {status}{retried}: "
                          f"{_server_message(exc)}")
    if status is not None:
        return ModelError(f"{where} answered HTTP {status}: {_server_message(exc)}")
    if "ResponseValidation" in name or isinstance(exc, ValueError):
        return ModelError(f"{where} sent a response that is not a valid chat completion "
                          f"({name}: {_server_message(exc)}): is --base-url an OpenAI-compatible "
                          "API?")
    return ModelError(f"call to {where} failed: {name}: {_server_message(exc)}")
