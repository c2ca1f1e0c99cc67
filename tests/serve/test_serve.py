"""The prediction service: every endpoint, every kind of bad request, a real server, the page."""

import contextlib
import json
import threading
import time

import numpy as np
import pytest
from click.testing import CliRunner

from _browser import browser, console_errors, save_screenshot, wait_for
from dolda import DOLDA
from dolda.datasets import simulate
from dolda import Text

fastapi = pytest.importorskip("fastapi", reason="dolda serve needs fastapi (pip install "
                                                "-e .[test])")
uvicorn = pytest.importorskip("uvicorn", reason="dolda serve needs uvicorn")
from fastapi.testclient import TestClient  # noqa: E402

from dolda.serve import Limits, create_app  # noqa: E402

N_TRAIN = 150
LIMITS = Limits(max_body_bytes=20_000, max_texts=5, max_explain_texts=3, max_text_chars=2_000)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=190, n_topics=4, n_classes=3, vocab_size=120, doc_length=40,
                    n_signal=1, covariates=True, random_state=1)


@pytest.fixture(scope="module")
def model_dir(sim, tmp_path_factory):
    model = DOLDA(n_topics=4, alpha=0.5, n_iter=80, random_state=0, progress=False, n_jobs=1, text=Text(rare_share=0.0)).fit(sim.texts[:N_TRAIN], sim.y[:N_TRAIN],
                                                X=sim.X.iloc[:N_TRAIN])
    path = tmp_path_factory.mktemp("serve") / "model"
    model.save(path)
    return path


@pytest.fixture(scope="module")
def app(model_dir):
    return create_app(model_dir, threads=1, limits=LIMITS)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def _cov(sim, d):
    return {"x_num": float(sim.X["x_num"].iloc[d]), "x_cat": str(sim.X["x_cat"].iloc[d])}


def test_health_and_model(client, sim):
    h = client.get("/health")
    assert h.status_code == 200 and h.json()["status"] == "ok" and h.json()["classes"] == 3
    m = client.get("/model").json()
    assert m["classes"] == ["class0", "class1", "class2"]
    assert [c["name"] for c in m["covariates"]] == ["x_num", "x_cat"]
    cat = m["covariates"][1]
    assert cat["type"] == "categorical" and set(cat["levels"]) == set(sim.X["x_cat"].unique())
    assert len(m["topics"]) == 4 and all(t["words"] for t in m["topics"])
    assert m["summary"]["n_topics"] == 4 and m["summary"]["kept_draws"] > 0
    assert any(t["signal_for"] for t in m["topics"])
    spec = client.get("/openapi.json").json()
    assert {"/predict", "/explain", "/health", "/model"} <= set(spec["paths"])
    assert client.get("/docs").status_code == 200


def test_model_names_the_probability_rule_and_the_calibration_map(client, app):
    """``GET /model``'s summary: ``proba`` and, for "calibrated", the map ``stacking_``
    holds (each width; null without one, as in files saved before 0.2, and for "ovr")."""
    from dolda.posterior.calibration import stacking_map

    model = app.state.service.model
    fitted, L = model.stacking_, len(model.classes_)
    s = client.get("/model").json()["summary"]
    assert (s["proba"], s["calibration_map"]) == ("calibrated", stacking_map(fitted))
    cases = [(np.zeros((L, L + 1)), "calibrated", "mu"),
             (np.zeros((L, 2 * L + 1)), "calibrated", "mu, log F(mu)"),
             (None, "calibrated", None), (np.zeros((L, 2 * L + 1)), "ovr", None)]
    try:
        for stacking, rule, kind in cases:
            model.stacking_, model.proba = stacking, rule
            s = client.get("/model").json()["summary"]
            assert (s["proba"], s["calibration_map"]) == (rule, kind)
    finally:
        model.stacking_, model.proba = fitted, "calibrated"


def test_predict_matches_the_model(client, sim, model_dir):
    from dolda import load

    model = load(model_dir)
    rows = list(range(N_TRAIN, N_TRAIN + 4))
    texts = [sim.texts[d] for d in rows]
    r = client.post("/predict", json={"texts": texts, "covariates": [_cov(sim, d) for d in rows],
                                      "top": 0})
    assert r.status_code == 200, r.text
    preds = r.json()["predictions"]
    want = model.predict_proba(texts, sim.X.iloc[rows])
    for p, w in zip(preds, want):
        got = {c["label"]: c["probability"] for c in p["classes"]}
        np.testing.assert_allclose([got[f"class{i}"] for i in range(3)], w, atol=1e-6)
        assert p["predicted"] == f"class{int(np.argmax(w))}"
        probs = [c["probability"] for c in p["classes"]]
        assert probs == sorted(probs, reverse=True)
    top1 = client.post("/predict", json={"texts": texts[:1], "covariates": [_cov(sim, rows[0])],
                                         "top": 1}).json()
    assert len(top1["predictions"][0]["classes"]) == 1


def test_explain_adds_up(client, sim):
    d = N_TRAIN + 2
    text = "Some UNKNOWN words, then: " + sim.texts[d]
    r = client.post("/explain", json={"texts": [text], "covariates": [_cov(sim, d)],
                                      "classes": 2, "features": 4, "words": 3})
    assert r.status_code == 200, r.text
    ex = r.json()["explanations"][0]
    assert len(ex["classes"]) == 2 and len(ex["probabilities"]) == 3
    assert ex["predicted"] == ex["classes"][0]["label"] == ex["probabilities"][0]["label"]
    assert ex["known_words"] == len(sim.texts[d].split())
    for start, end, topic in ex["tokens"]:
        assert text[start:end] in sim.texts[d] and 0 <= topic < 4
    for c in ex["classes"]:
        assert len(c["weights"]) == len(ex["tokens"])
        assert abs(sum(c["weights"]) + c["rest"] - c["score"]) < 1e-3
        assert len(c["features"]) == 4 and len(c["toward"]) <= 3
        topics = [f for f in c["features"] if f["name"].startswith("topic ")]
        assert all(f["words"] for f in topics)


@pytest.mark.parametrize("body, status, message", [
    (b"{", 422, "not valid JSON"),
    (b"[1, 2]", 422, "invalid request"),
    (b'{"texts": []}', 422, "texts: List should have at least 1 item"),
    (b'{"texts": "one text"}', 422, "texts: Input should be a valid list"),
    (b'{"texts": [3]}', 422, "texts[0]: Input should be a valid string"),
    (b'{"texts": ["a b"], "top": -1}', 422, "top: Input should be greater than or equal to 0"),
    (b'{"texts": ["a b"], "extra": 1}', 422, "extra: Extra inputs are not permitted"),
    (b'{"texts": ["  "], "covariates": [{"x_num": 1, "x_cat": "a"}]}', 422, "texts[0] is empty"),
    (b'{"texts": ["w0001"]}', 422, "this model needs covariates"),
    (b'{"texts": ["w0001"], "covariates": [{"x_num": 1}]}', 422, "missing covariate 'x_cat'"),
    (b'{"texts": ["w0001"], "covariates": [{"x_num": "high", "x_cat": "a"}]}', 422,
     "covariates[0]['x_num'] must be a number"),
    (b'{"texts": ["w0001"], "covariates": [{"x_num": 1, "x_cat": "a", "age": 3}]}', 422,
     "no covariate 'age'"),
    (b'{"texts": ["w0001", "w0002"], "covariates": [{"x_num": 1, "x_cat": "a"}]}', 422,
     "has 1 entries for 2 texts"),
    (json.dumps({"texts": ["w0001"] * 6}).encode(), 413, "6 texts in one request; the limit "
                                                         "is 5"),
    (json.dumps({"texts": ["w0001 " * 400]}).encode(), 413, "has 2400 characters; the limit "
                                                            "is 2000"),
    (b'{"texts": ["' + b"x" * 30_000 + b'"]}', 413, "the limit is 20000 bytes"),
])
def test_bad_requests_get_a_clear_4xx(client, body, status, message):
    for path in ("/predict", "/explain") if b'"top"' not in body else ("/predict",):
        r = client.post(path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == status, (path, r.status_code, r.text)
        error = r.json()["error"]
        assert message in error, error
        assert "Traceback" not in r.text


def test_other_bad_requests(client, sim):
    assert client.post("/explain", json={"texts": ["w0001"] * 4, "covariates":
                                         [_cov(sim, 0)] * 4}).status_code == 413
    r = client.get("/predict")
    assert r.status_code == 405 and r.json()["error"] == "Method Not Allowed"
    assert client.get("/nothing").status_code == 404
    r = client.post("/predict", content=b"texts=a", headers={"content-type": "text/plain"})
    assert r.status_code == 415 and "application/json" in r.json()["error"]
    # a body without Content-Length (chunked) above the limit
    r = client.post("/predict", content=iter([b'{"texts": ["', b"x" * 25_000, b'"]}']),
                    headers={"content-type": "application/json"})
    assert r.status_code == 413
    # an unknown category is pooled or refused by the model, never a 500
    r = client.post("/predict", json={"texts": ["w0001"], "covariates": [
        {"x_num": 0.1, "x_cat": "never seen"}]})
    assert r.status_code in (200, 422), r.text


def test_unexpected_errors_are_500_without_traceback(model_dir, monkeypatch):
    app = create_app(model_dir, threads=1, warm_up=False)
    service = app.state.service

    def boom(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(service, "predict", boom)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.post("/predict", json={"texts": ["a"], "covariates": [
            {"x_num": 1, "x_cat": "a"}]})
    assert r.status_code == 500
    assert "secret" not in r.text and "Traceback" not in r.text


def test_create_app_refuses_a_non_model(tmp_path):
    from dolda.io import ModelFormatError

    with pytest.raises(ModelFormatError):
        create_app(tmp_path)
    with pytest.raises(ValueError, match="max_texts"):
        Limits(max_texts=0)


@contextlib.contextmanager
def running(app):
    """The app served by uvicorn on 127.0.0.1 (a free port) in a thread."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_real_server_concurrent_requests(app, sim):
    import httpx

    texts = [sim.texts[d] for d in range(N_TRAIN, N_TRAIN + 16)]
    covs = [_cov(sim, d) for d in range(N_TRAIN, N_TRAIN + 16)]
    with running(app) as url:
        results = [None] * 16

        def call(i):
            with httpx.Client(base_url=url, timeout=30) as c:
                results[i] = c.post("/predict", json={"texts": [texts[i]],
                                                      "covariates": [covs[i]]})

        threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert all(r is not None and r.status_code == 200 for r in results)
        with httpx.Client(base_url=url, timeout=30) as c:
            batch = c.post("/predict", json={"texts": texts[:4], "covariates": covs[:4]}).json()
        single = [r.json()["predictions"][0] for r in results[:4]]
        assert [p["predicted"] for p in batch["predictions"]] == \
            [p["predicted"] for p in single]


def test_page_in_headless_chromium(app, sim):
    """Paste a text, set covariates, press Explain: ranked classes, highlighted words."""
    d = N_TRAIN + 5
    with running(app) as url, browser(1200, 1400) as driver:
        driver.get(url + "/")
        wait_for(driver, "document.querySelectorAll('[data-covariate]').length === 2")
        driver.find_element("id", "text").send_keys(sim.texts[d])
        num = driver.find_element("css selector", "[data-covariate='x_num']")
        num.send_keys(str(round(float(sim.X["x_num"].iloc[d]), 3)))
        driver.execute_script(
            "var s = document.querySelector(\"[data-covariate='x_cat']\"); s.value = "
            f"{json.dumps(str(sim.X['x_cat'].iloc[d]))};")
        driver.find_element("id", "go").click()
        wait_for(driver, "!document.getElementById('result').hidden", timeout=60)
        rows = driver.find_elements("css selector", "#ranked .cls")
        assert len(rows) == 3
        probs = [float(r.find_element("css selector", ".p").text) for r in rows]
        assert probs == sorted(probs, reverse=True) and abs(sum(probs) - 1) < 0.01
        marks = driver.find_elements("css selector", "#text-out mark.tok")
        assert marks and all(m.text in sim.texts[d] for m in marks)
        assert driver.find_element("id", "text-out").text.strip() == sim.texts[d].strip()
        assert "topic" in driver.find_element("id", "features").text
        driver.find_elements("css selector", "#tabs button")[1].click()
        wait_for(driver, "document.querySelectorAll('#tabs button')[1].classList.contains('on')")
        # an error is shown in the page, not thrown
        driver.execute_script("document.getElementById('text').value = '   '")
        driver.find_element("id", "go").click()
        assert "paste a text" in driver.find_element("id", "error").text
        driver.execute_script("document.getElementById('text').value = "
                              f"{json.dumps(sim.texts[d])}")
        driver.find_element("id", "go").click()
        wait_for(driver, "document.getElementById('error').textContent === ''")
        save_screenshot(driver, "serve.png")
        errors = console_errors(driver)
        assert not errors, errors


def test_cli_serve(model_dir, monkeypatch, tmp_path):
    from dolda.cli import main

    seen = {}

    def fake_run(app, host, port, log_level, http):
        seen.update(app=app, host=host, port=port, http=http)

    monkeypatch.setattr(uvicorn, "run", fake_run)
    result = CliRunner().invoke(main, ["serve", str(model_dir), "--port", "8123",
                                       "--max-texts", "7", "--threads", "1",
                                       "--body-timeout", "12", "--header-timeout", "3"])
    assert result.exit_code == 0, result.output
    assert seen["host"] == "127.0.0.1" and seen["port"] == 8123
    assert seen["app"].state.limits.max_texts == 7
    assert seen["app"].state.limits.body_timeout == 12.0
    assert seen["app"].state.limits.header_timeout == 3.0
    assert seen["http"].__name__ == "HeaderTimeoutProtocol"
    result = CliRunner().invoke(main, ["serve", str(tmp_path)])
    assert result.exit_code != 0 and "not a dolda model" in result.output
