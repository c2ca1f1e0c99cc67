"""Issue 34: the prediction service attacked again (types, warnings, spans, timeouts).

Each row of :data:`CASES` is one request and what it must get; the classes of
``tests/_bad_input.py`` are counted per endpoint ("silent": a lax coercion or a
dropped warning answered 200 without a word).  The span and timeout cases follow.
Every case failed on the code before this change.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time

import pytest
from _bad_input import class_summary, tally

from dolda import DOLDA
from dolda.datasets import simulate
from dolda import Text

pytestmark = pytest.mark.bad_input

fastapi = pytest.importorskip("fastapi", reason="dolda serve needs fastapi")
uvicorn = pytest.importorskip("uvicorn", reason="dolda serve needs uvicorn")
from fastapi.testclient import TestClient  # noqa: E402

from dolda.serve import Limits, create_app  # noqa: E402


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=80, n_topics=3, n_classes=2, vocab_size=60, doc_length=20,
                    n_signal=1, covariates=True, random_state=2)


@pytest.fixture(scope="module")
def model_dir(sim, tmp_path_factory):
    model = DOLDA(n_topics=3, alpha=0.5, n_iter=20, random_state=0, progress=False, n_jobs=1, text=Text(rare_share=0.0)).fit(sim.texts, sim.y, X=sim.X)
    path = tmp_path_factory.mktemp("serve34") / "model"
    model.save(path)
    return path


@pytest.fixture(scope="module")
def client(model_dir):
    app = create_app(model_dir, threads=1, warm_up=False)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def _body(sim, **extra):
    body = {"texts": [sim.texts[0]], "covariates": [
        {"x_num": float(sim.X["x_num"].iloc[0]), "x_cat": str(sim.X["x_cat"].iloc[0])}]}
    for key, value in extra.items():
        if key in ("x_num", "x_cat"):
            body["covariates"][0][key] = value
        else:
            body[key] = value
    return body


# (endpoint, case, body changes, status, what the error or a warning must say, class found)
CASES = [
    ("/predict", "top true (bool as int)", {"top": True}, 422, "top: Input should be a valid "
     "integer", "silent"),
    ("/predict", "top 2.0 (float as int)", {"top": 2.0}, 422, "top: Input should be a valid "
     "integer", "silent"),
    ("/predict", "top '2' (string as int)", {"top": "2"}, 422, "top: Input should be a valid "
     "integer", "silent"),
    ("/explain", "classes true", {"classes": True}, 422, "classes: Input should be a valid "
     "integer", "silent"),
    ("/explain", "words false", {"words": False}, 422, "words: Input should be a valid "
     "integer", "silent"),
    ("/predict", "numeric covariate true", {"x_num": True}, 422,
     "covariates[0]['x_num'] must be a number, got true", "silent"),
    ("/explain", "numeric covariate true", {"x_num": True}, 422,
     "covariates[0]['x_num'] must be a number, got true", "silent"),
    ("/predict", "numeric covariate as a string", {"x_num": "1.5"}, 422,
     "covariates[0]['x_num'] must be a number, got \"1.5\"", "silent"),
    ("/predict", "a number as a category", {"x_cat": 3}, 200,
     "covariates[0]['x_cat']: the int 3 was read as the category '3'", "silent"),
    ("/explain", "a number as a category", {"x_cat": 1.5}, 200,
     "the float 1.5 was read as the category '1.5'", "silent"),
    ("/predict", "a bool as a category", {"x_cat": True}, 200,
     "the bool true was read as the category 'true'", "silent"),
    ("/predict", "an unseen category", {"x_cat": "never seen"}, 200,
     "not seen in fit", "silent"),
    ("/explain", "an unseen category", {"x_cat": "never seen"}, 200, "not seen in fit",
     "silent"),
    ("/predict", "no known word", {"texts": ["zzzz qqqq"]}, 200, "empty", "silent"),
    ("/predict", "a missing category (null), as in fit", {"x_cat": None}, 200,
     "column 'x_cat': 1 missing value", "unclear"),
]


@pytest.mark.parametrize("path, name, change, status, message, kind", CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_service_case(client, sim, path, name, change, status, message, kind):
    r = client.post(path, json=_body(sim, **change))
    if r.status_code >= 500 or "Traceback" in r.text:
        result = "traceback"
    elif r.status_code != status:
        result = "silent" if r.status_code == 200 else "unclear"
    else:
        said = r.json()["error"] if status != 200 else " | ".join(r.json().get("warnings", []))
        result = "as expected" if message in said else kind
    tally(f"serve {path}", result)
    assert result == "as expected", (r.status_code, r.text[:2000])


def test_spans_are_highlighted_right_after_an_emoji_in_the_page(client, sim):
    """The page slices UTF-16 units; the service sends code points: the page converts
    (run the page's own conversion in node on the service's spans)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("needs node to run the page's script")
    from dolda.serve.page import PAGE

    words = sim.texts[1].split()[:6]
    text = "\U0001F600 caf\u00e9 \U0001F680\U0001F680 " + " \U0001F3B5 ".join(words)
    r = client.post("/explain", json=_body(sim, texts=[text]))
    assert r.status_code == 200, r.text
    tokens = r.json()["explanations"][0]["tokens"]
    assert tokens
    start = PAGE.index("function utf16Offsets") if "function utf16Offsets" in PAGE else -1
    if start < 0:
        tally("serve page", "silent")
        pytest.fail("the page slices the code-point spans as UTF-16 units")
    end = PAGE.index("\n  }\n", start) + 4
    script = (PAGE[start:end] + "\nvar text = " + json.dumps(text) + ", tokens = "
              + json.dumps(tokens) + ", at = utf16Offsets(text);\n"
              "console.log(JSON.stringify(tokens.map(function (t) "
              "{ return text.slice(at[t[0]], at[t[1]]); })));\n")
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    expected = [text[s:e] for s, e, _ in tokens]
    result = "as expected" if shown == expected else "silent"
    tally("serve page", result)
    assert shown == expected
    assert all(w.lower() in [x.lower() for x in words] for w in shown)


# ------------------------------------------------------------------ timeouts
@pytest.fixture
def slow_limits(request):
    """Half-second timeouts (a case of its own for every test that uses them)."""
    try:
        return Limits(body_timeout=0.5, header_timeout=0.5)
    except TypeError:
        if "what" in request.fixturenames:
            tally("serve timeouts", "silent")
        pytest.fail("no request-body or header timeout can be set")


def _server(app, limits):
    from dolda.serve.timeouts import header_timeout_protocol

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                            lifespan="off", http=header_timeout_protocol(limits.header_timeout))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    return server, thread, server.servers[0].sockets[0].getsockname()[1]


def _read_all(sock, seconds):
    sock.settimeout(seconds)
    chunks = []
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return b"".join(chunks), True
            chunks.append(data)
    except socket.timeout:
        return b"".join(chunks), False


@pytest.mark.parametrize("what", ["headers never finish", "body never finishes",
                                  "nothing sent"])
def test_timeouts_close_slow_clients(model_dir, slow_limits, what):
    app = create_app(model_dir, threads=1, warm_up=False, limits=slow_limits)
    server, thread, port = _server(app, slow_limits)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            tic = time.monotonic()
            if what == "headers never finish":
                sock.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
            elif what == "body never finishes":
                sock.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: "
                             b"application/json\r\nContent-Length: 100\r\n\r\n{\"texts\": [")
            answer, closed = _read_all(sock, 10)
            seconds = time.monotonic() - tic
    finally:
        server.should_exit = True
        thread.join(10)
    result = "as expected" if closed and seconds < 5 and b" 408 " in answer else "silent"
    tally("serve timeouts", result)
    assert closed and seconds < 5, (answer, seconds)
    assert b" 408 " in answer.split(b"\r\n", 1)[0], answer
    assert b"--header-timeout" in answer or b"--body-timeout" in answer


def test_a_normal_request_passes_the_timeouts(model_dir, slow_limits, sim):
    import httpx

    app = create_app(model_dir, threads=1, warm_up=False, limits=slow_limits)
    server, thread, port = _server(app, slow_limits)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
            for _ in range(2):  # the second on the same (kept-alive) connection
                r = c.post("/predict", json=_body(sim))
                assert r.status_code == 200, r.text
            time.sleep(1.0)  # idle between requests: closed by the keep-alive/headers timer
            r = c.post("/predict", json=_body(sim))
            assert r.status_code == 200, r.text
    finally:
        server.should_exit = True
        thread.join(10)


def test_zz_service_classes():
    from _bad_input import CLASSES

    print("\n" + class_summary("issue 34 (service)"))
    bad = {w: dict(c) for w, c in CLASSES.items()
           if w.startswith("serve") and set(c) - {"as expected"}}
    assert not bad, bad
