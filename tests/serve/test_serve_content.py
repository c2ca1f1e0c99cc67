"""What a request body must be (dolda.serve.content) and the OpenAPI page's labels."""

import numpy as np
import pytest

from dolda import DOLDA
from dolda.datasets import simulate

pytest.importorskip("fastapi", reason="dolda serve needs fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from dolda.serve import Limits, create_app  # noqa: E402

LABELS = np.array(['"><img src=x onerror=alert(1)>', "\x1b[2J", "plain"], dtype=object)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    sim = simulate(n_docs=60, n_topics=3, n_classes=3, vocab_size=40, doc_length=20,
                   n_signal=1, covariates=False, random_state=2)
    y = LABELS[np.searchsorted(np.unique(sim.y), sim.y)]
    path = tmp_path_factory.mktemp("content") / "model"
    DOLDA(n_topics=3, n_iter=20, random_state=0, n_jobs=1, progress=False).fit(
        sim.texts, y).save(path)
    app = create_app(path, threads=1, limits=Limits(max_body_bytes=2_000), warm_up=False)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.bad_input
@pytest.mark.parametrize("body, headers, status, message", [
    (b'{"texts": ["x"]}', {"content-type": "text/plain"}, 415, "application/json"),
    (b"texts=x", {"content-type": "application/x-www-form-urlencoded"}, 415,
     "application/json"),
    ('{"texts": ["caf\xe9"]}'.encode("latin-1"),
     {"content-type": "application/json; charset=latin-1"}, 400, "'latin-1'"),
    ('{"texts": ["x"]}'.encode("utf-16"), {"content-type": "application/json; charset=utf-16"},
     400, "'utf-16'"),
    (b'{"texts": ["\xff"]}', {"content-type": "application/json"}, 400, "offset 12"),
    (b'{"texts": ["' + b"a" * 3000 + b'"]}', {"content-type": "application/json"}, 413,
     "the limit is 2000 bytes"),
])
def test_bad_bodies_say_what_to_change(client, body, headers, status, message):
    r = client.post("/predict", content=body, headers=headers)
    assert r.status_code == status, r.text
    assert message in r.json()["error"]


@pytest.mark.bad_input
def test_a_chunked_body_over_the_limit(client):
    r = client.post("/predict", content=iter([b'{"texts": ["', b"a" * 3000, b'"]}']),
                    headers={"content-type": "application/json"})
    assert r.status_code == 413 and "the limit is 2000 bytes" in r.json()["error"]


def test_json_with_utf8_charset_is_served(client):
    r = client.post("/predict", content='{"texts": ["w0001 é"]}'.encode(),
                    headers={"content-type": "application/json; charset=UTF-8"})
    assert r.status_code == 200, r.text


def test_openapi_description_escapes_the_labels(client):
    text = client.get("/openapi.json").json()["info"]["description"]
    assert "<" not in text and "\x1b" not in text and "&#60;img" in text
    assert client.get("/redoc").status_code == 200
