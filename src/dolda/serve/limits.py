"""Request size limits of the prediction service, and the ASGI middleware for body bytes."""

from __future__ import annotations

import json
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
    """

    max_body_bytes: int = 2_000_000
    max_texts: int = 256
    max_explain_texts: int = 32
    max_text_chars: int = 100_000

    def __post_init__(self):
        for name in ("max_body_bytes", "max_texts", "max_explain_texts", "max_text_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")


class BodySizeLimit:
    """Refuse request bodies above ``max_bytes`` with 413, before the application reads them.

    A ``Content-Length`` above the limit is refused at once; a body without
    one (chunked) is read up to the limit and refused when it goes beyond.
    The accepted body is replayed to the application.
    """

    def __init__(self, app, max_bytes):
        self.app = app
        self.max_bytes = int(max_bytes)

    async def _refuse(self, send, size=None):
        told = f"{size} bytes" if size is not None else f"more than {self.max_bytes} bytes"
        body = json.dumps({"error": f"request body is {told}; the limit is {self.max_bytes} "
                                    "bytes (dolda serve --max-body-bytes)"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

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
        while True:
            message = await receive()
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
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
