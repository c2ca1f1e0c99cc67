"""``dolda serve``: explained predictions of a fitted model over HTTP."""

from __future__ import annotations

import click

from ._models import _load_model
from ._options import _MODEL, _FloatRange
from ._group import main


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; 0.0.0.0 exposes the service to the network (put a "
                   "reverse proxy in front, see docs/SERVING.md).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="numba threads per request  [default: all cores].")
@click.option("--max-body-bytes", type=click.IntRange(min=1), default=2_000_000,
              show_default=True, help="Largest request body (413 above).")
@click.option("--max-texts", type=click.IntRange(min=1), default=256, show_default=True,
              help="Most texts in one /predict request (413 above).")
@click.option("--max-explain-texts", type=click.IntRange(min=1), default=32,
              show_default=True, help="Most texts in one /explain request (413 above).")
@click.option("--max-text-chars", type=click.IntRange(min=1), default=100_000,
              show_default=True, help="Longest text in characters (413 above).")
@click.option("--body-timeout", type=_FloatRange(min=0, min_open=True), default=30.0,
              show_default=True, metavar="SECONDS",
              help="Time a client has to send a request body (408 after).")
@click.option("--header-timeout", type=_FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, metavar="SECONDS",
              help="Time a client has to send the request headers, from the connection or "
                   "the previous response on (408 and the connection closed after).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="info", show_default=True)
def serve(model_dir, host, port, threads, max_body_bytes, max_texts, max_explain_texts,
          max_text_chars, body_timeout, header_timeout, log_level):
    """Serve the model in MODEL_DIR over HTTP: a web page and a JSON API.

    \b
    GET  /         a page: paste a text, see the classes and the words behind them
    POST /predict  {"texts": [...], "covariates": [{...}]} -> ranked classes
    POST /explain  the same with word- and feature-level explanations
    GET  /model    classes, topics and a summary;  GET /health
    GET  /docs     the OpenAPI documentation
    The model is loaded once.  For production (several workers, TLS, a reverse
    proxy, a container) see docs/SERVING.md.

    \b
    Example:
      dolda serve model/ --port 8000     # then open http://127.0.0.1:8000/
    """
    try:
        import uvicorn

        from ..serve import Limits, create_app
        from ..serve.timeouts import header_timeout_protocol
    except ImportError:
        raise click.ClickException("dolda serve needs FastAPI and uvicorn: "
                                   "pip install 'dolda[serve]'") from None
    _load_model(model_dir)  # a clear one-line error for a directory that is no DOLDA model
    limits = Limits(max_body_bytes=max_body_bytes, max_texts=max_texts,
                    max_explain_texts=max_explain_texts, max_text_chars=max_text_chars,
                    body_timeout=body_timeout, header_timeout=header_timeout)
    app = create_app(model_dir, threads=threads, limits=limits)
    click.echo(f"Serving {model_dir} on http://{host}:{port}/  (Ctrl-C to stop)", err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level,
                http=header_timeout_protocol(header_timeout))
