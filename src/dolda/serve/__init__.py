"""``dolda serve``: explained predictions of a fitted DOLDA model over HTTP.

>>> from dolda.serve import create_app            # doctest: +SKIP
>>> app = create_app("model/")                     # doctest: +SKIP
>>> # uvicorn.run(app, host="127.0.0.1", port=8000)

Needs the ``serve`` extra (``pip install dolda[serve]``: FastAPI and uvicorn).
See ``docs/SERVING.md`` for the endpoints and for running it behind a
production server or in a container.
"""

from __future__ import annotations

from .limits import Limits

__all__ = ["create_app", "Limits"]


def create_app(model_dir, threads=None, limits=None, warm_up=True):
    """The FastAPI application serving the model in ``model_dir`` (see :mod:`dolda.serve.app`)."""
    try:
        from .app import create_app as _create
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("dolda serve needs FastAPI and uvicorn: pip install "
                          "'dolda[serve]'") from exc
    return _create(model_dir, threads=threads, limits=limits, warm_up=warm_up)


def app_from_env():
    """An application configured by environment variables, for ASGI servers.

    ``DOLDA_MODEL`` (required): the model directory; ``DOLDA_THREADS``,
    ``DOLDA_MAX_BODY_BYTES``, ``DOLDA_MAX_TEXTS``, ``DOLDA_MAX_TEXT_CHARS``,
    ``DOLDA_BODY_TIMEOUT`` (seconds; optional).  The header timeout is the ASGI
    server's (uvicorn has none: put a proxy in front, see docs/SERVING.md).  Use as a factory:
    ``uvicorn --factory dolda.serve:app_from_env`` or
    ``gunicorn -k uvicorn.workers.UvicornWorker 'dolda.serve:app_from_env()'``.
    """
    import os

    model = os.environ.get("DOLDA_MODEL")
    if not model:
        raise RuntimeError("set DOLDA_MODEL to the model directory")
    kwargs = {}
    for env, key in (("DOLDA_MAX_BODY_BYTES", "max_body_bytes"),
                     ("DOLDA_MAX_TEXTS", "max_texts"),
                     ("DOLDA_MAX_TEXT_CHARS", "max_text_chars")):
        if os.environ.get(env):
            kwargs[key] = int(os.environ[env])
    if os.environ.get("DOLDA_BODY_TIMEOUT"):
        kwargs["body_timeout"] = float(os.environ["DOLDA_BODY_TIMEOUT"])
    threads = int(os.environ["DOLDA_THREADS"]) if os.environ.get("DOLDA_THREADS") else None
    return create_app(model, threads=threads, limits=Limits(**kwargs))
