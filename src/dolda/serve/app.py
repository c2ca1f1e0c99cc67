"""The prediction service: a FastAPI application around one loaded DOLDA model.

Endpoints (OpenAPI schema at ``/openapi.json``, interactive docs at ``/docs``):

``POST /predict``
    ``{"texts": [...], "covariates": [{...}, ...] | null, "top": 5}`` ->
    the ranked classes and probabilities of every text (``predict_proba``).
``POST /explain``
    Same input plus ``classes`` and ``features``: probabilities, the feature
    contributions to the explained class scores, and every word's
    contribution (character spans into the text), see :mod:`dolda.interpret.explain`.
``GET /health``, ``GET /model``
    Liveness, and the model's classes, topics (top words, signal classes) and
    summary.
``GET /``
    A page where a person pastes a text (and covariates) and sees the ranked
    classes, the highlighted words and the signal topics.

The model is loaded once, at :func:`create_app`.  Requests are computed on a
worker thread (never on the event loop), one at a time under a lock, each on
all the numba threads given (``threads``): the sampler kernels are parallel
already, and the lock keeps concurrent requests from oversubscribing the
cores.  Bad input gets a 4xx with a one-line ``error`` message; an unexpected
failure a 500 with no traceback (the traceback goes to the log).
"""

import contextlib
import json
import logging
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from .content import JSONBodyOnly
from .limits import BodySizeLimit, Limits
from .schemas import ExplainRequest, PredictRequest, make_response_models
from ..evaluate.diagnostics import prior_name

logger = logging.getLogger(__name__)

__all__ = ["create_app", "Limits"]


class RequestError(ValueError):
    """Bad input found after schema validation; ``status`` 413 or 422."""

    def __init__(self, message, status=422):
        super().__init__(message)
        self.status = status


class ModelService:
    """The loaded model and everything computed once from it."""

    def __init__(self, model_dir, threads=None, level=0.95):
        from ..io import load
        from ..models.dolda.estimator import DOLDA

        model = load(model_dir)
        if not isinstance(model, DOLDA):
            raise ValueError(f"{model_dir} holds a {type(model).__name__}, not a DOLDA model")
        if threads is not None:
            model.n_jobs = int(threads)
        self.model = model
        self.model_dir = Path(model_dir)
        self.lock = threading.Lock()
        self.started = time.time()
        self.n_requests = 0
        encoder = getattr(model, "covariate_encoder_", None)
        if getattr(model, "_has_covariates", False) and encoder is not None:
            self.covariates = [str(c) for c in encoder.feature_names_in_]
            self.categorical = {str(c): sorted(str(v) for v in levels)
                                for c, levels in getattr(encoder, "categories_", {}).items()}
        else:
            self.covariates, self.categorical = [], {}
        words = model.top_words(10)
        self.top_words = {t: " ".join(words.loc[t]) for t in words.index}
        lo, hi = model.coef_interval(level)
        sig = (lo > 0) | (hi < 0)
        self.signal = sig
        self.level = level
        topics = list(words.index)
        coef = model.coef_[topics].to_numpy()
        sig_topics = sig[topics].to_numpy()
        self.topics = []
        for k, t in enumerate(topics):
            marks = [{"class": str(c), "sign": "+" if coef[l, k] > 0 else "-",
                      "coef": round(float(coef[l, k]), 4)}
                     for l, c in enumerate(model.classes_) if sig_topics[l, k]]
            self.topics.append({"name": t, "words": self.top_words[t], "signal_for": marks})

    # ------------------------------------------------------------ inputs
    def frame(self, covariates, n_texts, notes=None):
        """The covariates of a request as a DataFrame in the model's column order (or None).

        A numeric column takes a JSON number (not a bool, not a string); a categorical one
        a string, and a number (or bool) sent there is read as the level of its text with
        a line in ``notes`` (the response's ``warnings``); ``null`` there is a missing
        level (an all-zero row, with the encoder's warning), as in a table."""
        import pandas as pd

        notes = [] if notes is None else notes
        if not self.covariates:
            if covariates is not None and any(covariates):
                raise RequestError("this model has no covariates; do not send 'covariates'")
            return None
        if covariates is None:
            raise RequestError("this model needs covariates: send 'covariates', one object "
                               f"per text with the keys {self.covariates}")
        if len(covariates) != n_texts:
            raise RequestError(f"'covariates' has {len(covariates)} entries for {n_texts} "
                               "texts; send one object per text")
        rows = {c: [] for c in self.covariates}
        for i, given in enumerate(covariates):
            unknown = [k for k in given if k not in rows]
            if unknown:
                raise RequestError(f"covariates[{i}]: the model has no covariate "
                                   f"{unknown[0]!r} (its covariates: {self.covariates})")
            for col in self.covariates:
                if col not in given or (given[col] is None and col not in self.categorical):
                    raise RequestError(f"covariates[{i}]: missing covariate {col!r}")
                value = given[col]
                if value is None:  # a missing level: an all-zero row and a warning, as in fit
                    rows[col].append(None)
                elif col in self.categorical:
                    if not isinstance(value, str):
                        level = json.dumps(value)
                        notes.append(f"covariates[{i}][{col!r}]: the {type(value).__name__} "
                                     f"{level} was read as the category {level!r}; send "
                                     "categories as strings")
                        value = level
                    rows[col].append(value)
                else:
                    if isinstance(value, bool) or not isinstance(value, (int, float)):
                        raise RequestError(f"covariates[{i}][{col!r}] must be a number, got "
                                           f"{json.dumps(value)}")
                    number = float(value)
                    if not np.isfinite(number):
                        raise RequestError(f"covariates[{i}][{col!r}] must be finite")
                    rows[col].append(number)
        return pd.DataFrame(rows)

    # ------------------------------------------------------------ work
    def warm_up(self):
        """Load the compiled kernels (numba cache) with a one-word document."""
        from ..sampler.token_topics import token_topic_frequencies

        word = self.model.vocabulary_.words[0]
        with self.lock:
            self.model.transform([word])
            token_topic_frequencies(np.zeros(1, np.int32), np.array([0, 1]), self.model.phi_,
                                    self.model._alpha(), 2, 1, 0)

    def predict(self, texts, covariates, top, notes=None):
        notes = [] if notes is None else notes
        X = self.frame(covariates, len(texts), notes)
        with self.lock, _noted_warnings(notes):
            proba = self.model.predict_proba(texts, X)
            self.n_requests += 1
        labels = [str(c) for c in self.model.classes_]
        out = []
        for row in proba:
            order = np.argsort(-row, kind="stable")
            if top:
                order = order[:top]
            out.append({"predicted": labels[order[0]],
                        "classes": [{"label": labels[l], "probability": round(float(row[l]), 6)}
                                    for l in order]})
        return out

    def explain(self, texts, covariates, n_classes, n_features, n_words, notes=None):
        from ..interpret.explain import analyse, explain_documents

        notes = [] if notes is None else notes
        X = self.frame(covariates, len(texts), notes)
        with self.lock, _noted_warnings(notes):
            analysis = analyse(self.model, texts, X)
            self.n_requests += 1
            docs = explain_documents(self.model, texts, n_classes=n_classes,
                                     n_features=n_features, analysis=analysis)
        out = []
        for d, doc in enumerate(docs):
            n_known = int(analysis.doc_ptr[d + 1] - analysis.doc_ptr[d])
            classes = []
            for c in doc["classes"]:
                totals = {}
                for (start, end, _), w in zip(doc["tokens"], c["weights"]):
                    word = doc["text"][start:end].lower()
                    totals[word] = totals.get(word, 0.0) + w
                ranked = sorted(totals.items(), key=lambda kv: -kv[1])
                classes.append({
                    "label": c["label"], "probability": c["proba"], "score": c["score"],
                    "rest": c["rest"],
                    "features": [{"name": f, "value": v, "coef": b, "contribution": x,
                                  "signal": bool(self.signal.loc[self._label(c["label"]), f]),
                                  "words": self.top_words.get(f, "")}
                                 for f, v, b, x in c["features"]],
                    "weights": c["weights"],
                    "toward": [[w, round(v, 5)] for w, v in ranked if v > 0][:n_words],
                    "against": [[w, round(v, 5)] for w, v in reversed(ranked) if v < 0]
                    [:n_words]})
            out.append({"predicted": doc["predicted"],
                        "probabilities": [{"label": l, "probability": p}
                                          for l, p in doc["proba"]],
                        "known_words": n_known, "tokens": doc["tokens"], "classes": classes})
        return out

    def _label(self, text):
        for c in self.model.classes_:
            if str(c) == text:
                return c
        raise KeyError(text)

    def summary(self):
        from ..posterior.calibration import proba_rule

        m = self.model
        K = m.phi_.shape[0]
        rule, kind = proba_rule(m)
        return {
            "model_dir": str(self.model_dir.name),
            "classes": [str(c) for c in m.classes_],
            "covariates": [{"name": c, "type": "categorical" if c in self.categorical
                            else "numeric", "levels": self.categorical.get(c)}
                           for c in self.covariates],
            "topics": self.topics,
            "summary": {"n_topics": K, "n_classes": len(m.classes_),
                        "vocabulary": len(m.vocabulary_.words), "prior": prior_name(m),
                        "iterations": int(m.n_iter_), "chains": int(getattr(m, "n_chains_", 1)),
                        "kept_draws": int(m.eta_draws_.shape[0]),
                        "training_tokens": int(getattr(m, "n_tokens_", 0)),
                        "signal_level": self.level, "proba": rule, "calibration_map": kind},
        }


@contextlib.contextmanager
def _noted_warnings(notes):
    """The library's warnings raised inside the block, appended to ``notes`` once each
    (called under the service's lock: ``catch_warnings`` is process-wide)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        text = " ".join(str(w.message).split())
        if text not in notes:
            notes.append(text)


def _check_texts(texts, limits):
    if len(texts) > limits.max_texts:
        raise RequestError(f"{len(texts)} texts in one request; the limit is "
                           f"{limits.max_texts} (dolda serve --max-texts)", status=413)
    for i, text in enumerate(texts):
        if len(text) > limits.max_text_chars:
            raise RequestError(f"texts[{i}] has {len(text)} characters; the limit is "
                               f"{limits.max_text_chars} (dolda serve --max-text-chars)",
                               status=413)
        if not text.strip():
            raise RequestError(f"texts[{i}] is empty")


def _description(service) -> str:
    """The OpenAPI description: Markdown that ReDoc and Swagger UI render as HTML, so the
    model's directory name and class labels (from training data or a model file) go in
    through :func:`dolda.utils.escape.markdown_text` and show as the text they are."""
    from ..utils.escape import markdown_text

    classes = service.model.classes_
    shown = ", ".join(markdown_text(c) for c in classes[:8])
    more = " ..." if len(classes) > 8 else ""
    return (f"Explained predictions of the DOLDA model "
            f"{markdown_text(service.model_dir.name)}: classes {shown}{more}.")


def create_app(model_dir, threads=None, limits=None, warm_up=True):
    """The FastAPI application serving the DOLDA model saved in ``model_dir``.

    Parameters
    ----------
    model_dir : path
        A model directory written by ``DOLDA.save`` / ``dolda fit``; loaded once.
    threads : int or None
        numba threads per request (None: the model's ``n_jobs``, all cores).
    limits : Limits or None
        Request size limits (body bytes, texts per request, characters per text).
    warm_up : bool, default=True
        Run one tiny prediction at start-up, so the first request does not pay
        for loading the compiled kernels.

    Returns
    -------
    fastapi.FastAPI
        ``app.state.service`` holds the loaded model.
    """
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from .page import PAGE

    limits = limits or Limits()
    service = ModelService(model_dir, threads=threads)
    if warm_up:
        service.warm_up()
    from .. import __version__

    app = FastAPI(title="dolda prediction service", version=__version__,
                  description=_description(service))
    app.state.service = service
    app.state.limits = limits
    app.add_middleware(JSONBodyOnly)  # inside the size limit: it reads bounded bodies only
    app.add_middleware(BodySizeLimit, max_bytes=limits.max_body_bytes,
                       timeout=limits.body_timeout)
    Predictions, Explanations, Health, ModelInfo = make_response_models()

    @app.exception_handler(RequestError)
    async def _request_error(request: Request, exc: RequestError):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        problems = []
        for e in exc.errors():
            loc = [p for p in e.get("loc", ()) if p != "body"]
            if e.get("type") == "json_invalid":
                at = f" at character {loc[-1]}" if loc and isinstance(loc[-1], int) else ""
                problems.append(f"the body is not valid JSON{at}")
                continue
            where = ""
            for p in loc:
                where += f"[{p}]" if isinstance(p, int) else (f".{p}" if where else str(p))
            problems.append(f"{where}: {e.get('msg', 'invalid')}" if where
                            else str(e.get("msg", "invalid")))
        message = "invalid request: " + "; ".join(problems[:5])
        if len(problems) > 5:
            message += f"; and {len(problems) - 5} more"
        return JSONResponse({"error": message}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        logger.exception("unexpected error on %s", request.url.path)
        return JSONResponse({"error": "internal error (the server log has the details)"},
                            status_code=500)

    async def _run(func, *args):
        try:
            return await run_in_threadpool(func, *args)
        except RequestError:
            raise
        except ValueError as exc:  # the library's input errors are the caller's
            raise RequestError(" ".join(str(exc).split())) from None

    @app.post("/predict", response_model=Predictions, tags=["predictions"],
              summary="Ranked classes and probabilities of every text")
    async def predict(body: PredictRequest):
        _check_texts(body.texts, limits)
        notes = []
        preds = await _run(service.predict, body.texts, body.covariates, body.top, notes)
        return {"predictions": preds, "warnings": notes}

    @app.post("/explain", response_model=Explanations, tags=["predictions"],
              summary="Probabilities with feature- and word-level explanations")
    async def explain(body: ExplainRequest):
        _check_texts(body.texts, limits)
        if len(body.texts) > limits.max_explain_texts:
            raise RequestError(f"{len(body.texts)} texts to explain in one request; the limit "
                               f"is {limits.max_explain_texts}", status=413)
        n_classes = min(body.classes, len(service.model.classes_))
        notes = []
        docs = await _run(service.explain, body.texts, body.covariates, n_classes,
                          body.features, body.words, notes)
        return {"explanations": docs, "warnings": notes}

    @app.get("/health", response_model=Health, tags=["service"])
    async def health():
        return {"status": "ok", "model": service.model_dir.name,
                "classes": len(service.model.classes_),
                "uptime_seconds": round(time.time() - service.started, 1),
                "requests": service.n_requests}

    @app.get("/model", response_model=ModelInfo, tags=["service"],
             summary="Classes, topics (top words, signal classes) and a summary")
    async def model_info():
        return service.summary()

    page = PAGE.replace("__LIMITS__", json.dumps({"max_text_chars": limits.max_text_chars}))

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index():
        return HTMLResponse(page)

    return app

