"""The header timeout of ``dolda serve``: uvicorn's HTTP protocol with a deadline for the
request line and headers.

uvicorn arms no timer on a new connection, and its keep-alive timer stops at the
first byte, so a client sending its headers a byte at a time (or nothing at all)
holds a connection for ever.  :func:`header_timeout_protocol` returns its h11
protocol with a timer armed when the connection opens and after every response,
and stopped once the headers of a request are complete; when it fires, the
client gets a 408 and the connection is closed.  The body has its own deadline
(:class:`dolda.serve.limits.BodySizeLimit`).
"""

from __future__ import annotations

import json

__all__ = ["header_timeout_protocol"]


def header_timeout_protocol(seconds: float):
    """uvicorn's ``H11Protocol`` closing connections whose headers take over ``seconds``
    (pass it as ``uvicorn.run(..., http=...)``)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    seconds = float(seconds)
    body = json.dumps({"error": f"the request headers did not arrive within {seconds:g} s "
                                "(dolda serve --header-timeout)"}).encode()
    response = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: " + str(len(body)).encode()
                + b"\r\n\r\n" + body)

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer = None

        def _arm(self):
            self._disarm()
            self._header_timer = self.loop.call_later(seconds, self._header_timeout)

        def _disarm(self):
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self):
            self._header_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return  # the headers are in: the body has its own deadline
            self.transport.write(response)
            self.transport.close()

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def handle_events(self):
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:
                self._disarm()

        def on_response_complete(self):
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
