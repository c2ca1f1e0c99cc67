"""Request size limits of the prediction service, and the ASGI middleware for body bytes."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass

__all__ = ["Limits", "BodySizeLimit"]


@dataclass(frozen=True)
class Limits:
    """What one request may hold.

    Attributes
    ----------
    max_body_bytes : int
        Bytes of a request body (413 above).
    max_texts : int
        Texts in one ``/predict`` request (413 above).
    max_explain_texts : int
        Texts in one ``/explain`` request (its answer is much larger).
    max_text_chars : int
        Characters of one text (413 above).
    body_timeout : float
        Seconds a client has to send the whole request body, counted from the
        first read of it (408 after).
    header_timeout : float
        Seconds a client has to send the request line and headers, from the
        connection (or the end of the previous response) on; the connection is
        closed with a 408 after.  Enforced by the server protocol of ``dolda
        serve`` (:mod:`dolda.serve.timeouts`); behind another server, set that
        server's or the proxy's.
    """

    max_body_bytes: int = 2_000_000
    max_texts: int = 256
    max_explain_texts: int = 32
    max_text_chars: int = 100_000
    body_timeout: float = 30.0
    header_timeout: float = 10.0

    def __post_init__(self):
        for name in ("max_body_bytes", "max_texts", "max_explain_texts", "max_text_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("body_timeout", "header_timeout"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


class BodySizeLimit:
    """Refuse request bodies above ``max_bytes`` with 413, before the application reads them,
    and bodies not received within ``timeout`` seconds with 408.

    A ``Content-Length`` above the limit is refused at once; a body without
    one (chunked) is read up to the limit and refused when it goes beyond.
    The accepted body is replayed to the application.
    """

    def __init__(self, app, max_bytes, timeout=None):
        self.app = app
        self.max_bytes = int(max_bytes)
        self.timeout = None if timeout is None else float(timeout)

    async def _refuse(self, send, size=None):
        told = f"{size} bytes" if size is not None else f"more than {self.max_bytes} bytes"
        await _send_error(send, 413, f"request body is {told}; the limit is {self.max_bytes} "
                                     "bytes (dolda serve --max-body-bytes)")

    async def _receive(self, receive, deadline):
        if deadline is None:
            return await receive()
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise asyncio.TimeoutError
        return await asyncio.wait_for(receive(), left)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    size = int(value)
                except ValueError:
                    size = None
                if size is not None and size > self.max_bytes:
                    await self._refuse(send, size)
                    return
        chunks, total = [], 0
        deadline = (None if self.timeout is None
                    else asyncio.get_running_loop().time() + self.timeout)
        while True:
            try:
                message = await self._receive(receive, deadline)
            except asyncio.TimeoutError:
                await _send_error(send, 408, f"the request body did not arrive within "
                                             f"{self.timeout:g} s (dolda serve --body-timeout)")
                return
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        await self.app(scope, replaying(body, receive), send)


def replaying(body: bytes, receive):
    """An ASGI ``receive`` that hands the app the ``body`` already read, then defers to
    ``receive`` (a middleware that read the body must give it to the app again)."""
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _send_error(send, status, message):
    """A one-line JSON error response that closes the connection."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
