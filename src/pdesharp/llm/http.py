"""One TLS context per process for the SDKs' HTTP clients.

The transports build a fresh SDK client per call (an HTTP connection pool belongs to the event
loop that opened it, and one outliving its loop fails noisily on close). Building a client is
cheap except for its TLS context: loading the CA bundle takes ~0.2 s. So the context is built
once, by the HTTP library the SDK itself uses, and shared (``ssl.SSLContext`` is thread-safe).
"""

from __future__ import annotations

import ssl
import sys

_contexts: dict[str, ssl.SSLContext] = {}


def shared_ssl_context(default_client_cls: type) -> ssl.SSLContext:
    """The TLS context ``default_client_cls`` (an SDK's ``DefaultAsyncHttpxClient``) would
    build by default, built once per HTTP library."""
    # The SDK's default client subclasses its HTTP library's AsyncClient; that library's own
    # factory gets the CA bundle and SSL_CERT_FILE handling exactly as the SDK would.
    base = default_client_cls.__mro__[1]
    library_name = base.__module__.split(".")[0]
    ctx = _contexts.get(library_name)
    if ctx is None:
        factory = getattr(sys.modules[library_name], "create_ssl_context", None)
        ctx = _contexts[library_name] = factory() if factory else ssl.create_default_context()
    return ctx
