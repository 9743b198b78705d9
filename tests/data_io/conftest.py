"""A loopback HTTP file server with Range support, for testing downloads without a network."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class FileServerState:
    files: dict[str, bytes] = field(default_factory=dict)  # URL path -> body
    extra_headers: dict[str, dict[str, str]] = field(default_factory=dict)  # on the redirect hop
    redirects: dict[str, str] = field(default_factory=dict)  # URL path -> URL path
    truncate_next: dict[str, int] = field(default_factory=dict)  # path -> bytes to send, once
    ignore_range: bool = False
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)


class _Handler(BaseHTTPRequestHandler):
    state: FileServerState

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        st = self.state
        st.requests.append((self.path, self.headers.get("Range")))
        if self.path in st.redirects:
            self.send_response(302)
            self.send_header("Location", st.redirects[self.path])
            for k, v in st.extra_headers.get(self.path, {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = st.files.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and not st.ignore_range:
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Accept-Ranges", "bytes")
        for k, v in st.extra_headers.get(self.path, {}).items():
            self.send_header(k, v)
        self.end_headers()
        cut = st.truncate_next.pop(self.path, None)
        if cut is not None:
            # Send part of the body and drop the connection, as a flaky network would.
            self.wfile.write(payload[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(payload)


@pytest.fixture
def file_server():
    """Yields (base_url, state); the server runs in a daemon thread on 127.0.0.1."""
    state = FileServerState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
