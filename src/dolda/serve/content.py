"""What a request body must be: JSON (``application/json``) in UTF-8.

FastAPI would parse any body as JSON whatever its ``Content-Type`` (a form, or
``text/plain``, ends in a confusing 422 about a missing object) and answers a
body in another charset or with an undecodable byte with "There was an error
parsing the body".  :class:`JSONBodyOnly` answers before the application: 415
naming the accepted type, 400 naming the charset that is not UTF-8, 400 naming
the offset of a byte that is not UTF-8.
"""

from __future__ import annotations

from .limits import _send_error, replaying

__all__ = ["JSONBodyOnly", "ACCEPTED_TYPE"]

ACCEPTED_TYPE = "application/json"
_UTF8 = ("utf-8", "utf8")


def _media_type(value: str):
    """``(type, charset)`` of a Content-Type header value, both lower case."""
    parts = [p.strip() for p in value.split(";")]
    charset = None
    for p in parts[1:]:
        key, _, val = p.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip('"').lower()
    return parts[0].lower(), charset


class JSONBodyOnly:
    """ASGI middleware: a request with a body (POST, PUT, PATCH) must be JSON in UTF-8."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        header = None
        for name, value in scope.get("headers", ()):
            if name == b"content-type":
                header = value.decode("latin-1")
        if header is None:
            await _send_error(send, 415, f"the request has no Content-Type; send the body as "
                                         f"{ACCEPTED_TYPE} (Content-Type: {ACCEPTED_TYPE})")
            return
        media, charset = _media_type(header)
        if media != ACCEPTED_TYPE and not (media.startswith("application/")
                                           and media.endswith("+json")):
            await _send_error(send, 415, f"Content-Type {media or header!r} is not accepted; "
                                         f"send the body as {ACCEPTED_TYPE}")
            return
        if charset is not None and charset not in _UTF8:
            await _send_error(send, 400, f"the body's charset is {charset!r}; JSON bodies must "
                                         "be UTF-8 (send charset=utf-8 or none)")
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            await _send_error(send, 400, f"the body is not valid UTF-8: byte "
                                         f"0x{body[exc.start]:02x} at offset {exc.start}; "
                                         "JSON bodies must be UTF-8")
            return
        await self.app(scope, replaying(body, receive), send)
