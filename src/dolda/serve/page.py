"""The service's web page: paste a text, see the ranked classes and the words behind them.

One self-contained page (no external script, style or font): it reads the
model's covariates from ``GET /model`` and sends the form to ``POST /explain``.
Every piece of text from the user or the model is inserted with
``textContent``, never as markup.
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dolda: explain a prediction</title>
<link rel="icon" href="data:,">
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#f6f7f9}
header{background:#2c3e50;color:#fff;padding:10px 24px}
header h1{margin:0;font-size:1.25em}header p{margin:2px 0 0 0;color:#dfe6ee;font-size:.85em}
main{padding:8px 24px;max-width:1200px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:12px 0;padding:8px 16px}
h2{font-size:1.05em;color:#2c3e50;margin:6px 0}
textarea{width:100%;min-height:9em;font:inherit;padding:6px;box-sizing:border-box}
#covariates label{display:inline-block;margin:4px 14px 4px 0;font-size:.9em}
button{padding:5px 14px;border:1px solid #2c3e50;background:#2c3e50;color:#fff;border-radius:3px;cursor:pointer}
button.tab{background:#fff;color:#2c3e50;margin:0 4px 4px 0}button.tab.on{background:#2c3e50;color:#fff}
#error{color:#a93226;font-weight:600}
.cls{display:flex;align-items:center;font-size:.9em;height:22px}
.cls .l{width:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.cls .track{flex:1;background:#eef1f4;height:14px;margin:0 8px;position:relative}
.cls .bar{background:#2471a3;height:14px}.cls .p{width:4em;text-align:right;font-variant-numeric:tabular-nums}
#text-out{white-space:pre-wrap;background:#fbfbfb;border:1px solid #eee;padding:8px;line-height:1.5;max-height:420px;overflow-y:auto}
mark.tok{border-radius:3px;padding:0 1px;color:inherit}
table{border-collapse:collapse;font-size:.85em;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#f0f3f6}td.num{text-align:right}
.muted{color:#777;font-size:.85em}.pos{color:#c0392b}.neg{color:#2471a3}
</style></head>
<body>
<header><h1>dolda: explain a prediction</h1><p id="model-line">loading the model ...</p></header>
<main>
<section><h2>Text</h2>
<form id="form"><textarea id="text" placeholder="Paste a document here" required></textarea>
<div id="covariates"></div>
<button id="go" type="submit">Explain</button> <span id="status" class="muted"></span>
<p id="error" role="alert"></p></form></section>
<section id="result" hidden>
<h2>Classes</h2><div id="ranked"></div>
<h2>Why</h2>
<p class="muted">Words pushing toward (red) and against (blue) the class of the selected tab;
hover a word for its contribution to the class score.</p>
<div id="tabs"></div><div id="text-out"></div>
<p id="words"></p>
<h2>Signal topics and other features of this class</h2>
<p id="score" class="muted"></p><div id="features"></div>
</section>
</main>
<script>
(function () {
  "use strict";
  var LIMITS = __LIMITS__;
  var model = null, last = null, lastText = "";
  function byId(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var n = document.createElement(tag);
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    if (cls) { n.className = cls; }
    return n;
  }
  function fmt(x, d) { return (x >= 0 ? "+" : "") + x.toFixed(d === undefined ? 3 : d); }
  function showError(msg) { byId("error").textContent = msg || ""; }
  // UTF16-OFFSETS: the service's spans count code points (Python str indices); JS strings
  // count UTF-16 units, two for a character outside the BMP (an emoji): map one to the other.
  function utf16Offsets(text) {
    var at = [0], pos = 0;
    for (var ch of text) { pos += ch.length; at.push(pos); }
    return at;
  }

  fetch("model").then(function (r) { return r.json(); }).then(function (m) {
    model = m;
    byId("model-line").textContent = "model " + m.model_dir + ": " + m.classes.length +
      " classes, " + m.summary.n_topics + " topics";
    var box = byId("covariates");
    m.covariates.forEach(function (c) {
      var label = el("label", c.name + " ");
      var input;
      if (c.type === "categorical") {
        input = el("select");
        (c.levels || []).forEach(function (v) { var o = el("option", v); o.value = v; input.appendChild(o); });
      } else {
        input = el("input"); input.type = "number"; input.step = "any"; input.required = true;
      }
      input.setAttribute("data-covariate", c.name);
      input.setAttribute("data-type", c.type);
      label.appendChild(input);
      box.appendChild(label);
    });
  }).catch(function () { showError("could not read the model description"); });

  function covariates() {
    var inputs = document.querySelectorAll("[data-covariate]");
    if (!inputs.length) { return null; }
    var row = {};
    Array.prototype.forEach.call(inputs, function (i) {
      var v = i.value;
      row[i.getAttribute("data-covariate")] = i.getAttribute("data-type") === "numeric" ? Number(v) : v;
    });
    return [row];
  }

  function render(ex, text, ci) {
    last = ex; lastText = text;
    byId("result").hidden = false;
    var ranked = byId("ranked");
    ranked.textContent = "";
    ex.probabilities.slice(0, 10).forEach(function (c) {
      var row = el("div", null, "cls"), track = el("span", null, "track"), bar = el("div", null, "bar");
      bar.style.width = (100 * c.probability).toFixed(1) + "%";
      track.appendChild(bar);
      row.appendChild(el("span", c.label, "l")); row.appendChild(track);
      row.appendChild(el("span", c.probability.toFixed(3), "p"));
      ranked.appendChild(row);
    });
    if (ex.probabilities.length > 10) {
      ranked.appendChild(el("p", (ex.probabilities.length - 10) + " less probable classes not shown", "muted"));
    }
    var tabs = byId("tabs");
    tabs.textContent = "";
    ex.classes.forEach(function (c, i) {
      var b = el("button", c.label + " " + c.probability.toFixed(3), "tab" + (i === ci ? " on" : ""));
      b.type = "button";
      b.addEventListener("click", function () { render(last, lastText, i); });
      tabs.appendChild(b);
    });
    var c = ex.classes[ci], out = byId("text-out"), pos = 0, maxw = 1e-12;
    out.textContent = "";
    c.weights.forEach(function (w) { maxw = Math.max(maxw, Math.abs(w)); });
    var at = utf16Offsets(text);
    ex.tokens.forEach(function (t, i) {
      var w = c.weights[i], s = Math.abs(w) / maxw, start = at[t[0]], end = at[t[1]];
      out.appendChild(document.createTextNode(text.slice(pos, start)));
      var word = text.slice(start, end);
      if (s < 0.08) { out.appendChild(document.createTextNode(word)); }
      else {
        var m = el("mark", word, "tok " + (w > 0 ? "up" : "down"));
        m.style.background = "rgba(" + (w > 0 ? "192,57,43" : "36,113,163") + "," + (0.15 + 0.6 * s).toFixed(2) + ")";
        m.title = word + ": " + fmt(w, 4) + (w > 0 ? " toward " : " against ") + c.label + " (topic " + t[2] + ")";
        out.appendChild(m);
      }
      pos = end;
    });
    out.appendChild(document.createTextNode(text.slice(pos)));
    var words = byId("words");
    words.textContent = "";
    words.appendChild(el("span", "toward " + c.label + ": ", "pos"));
    words.appendChild(el("span", c.toward.map(function (x) { return x[0] + " " + fmt(x[1]); }).join(", ") || "none"));
    words.appendChild(el("br"));
    words.appendChild(el("span", "against: ", "neg"));
    words.appendChild(el("span", c.against.map(function (x) { return x[0] + " " + fmt(x[1]); }).join(", ") || "none"));
    byId("score").textContent = "score " + fmt(c.score) + " = words " + fmt(c.score - c.rest) +
      " + intercept and covariates " + fmt(c.rest) + "; " + ex.known_words + " words known to the model";
    var t = el("table"), h = el("tr");
    ["feature", "value", "coef", "contribution", "signal", "top words"].forEach(function (x) { h.appendChild(el("th", x)); });
    t.appendChild(h);
    c.features.forEach(function (f) {
      var r = el("tr");
      r.appendChild(el("td", f.name)); r.appendChild(el("td", f.value.toFixed(3), "num"));
      r.appendChild(el("td", fmt(f.coef), "num"));
      r.appendChild(el("td", fmt(f.contribution), "num " + (f.contribution >= 0 ? "pos" : "neg")));
      r.appendChild(el("td", f.signal ? "yes" : "")); r.appendChild(el("td", f.words));
      t.appendChild(r);
    });
    var feats = byId("features"); feats.textContent = ""; feats.appendChild(t);
  }

  byId("form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var text = byId("text").value;
    showError("");
    if (!text.trim()) { showError("paste a text first"); return; }
    if (text.length > LIMITS.max_text_chars) {
      showError("the text has " + text.length + " characters; the limit is " + LIMITS.max_text_chars);
      return;
    }
    byId("status").textContent = "computing ...";
    byId("go").disabled = true;
    fetch("explain", {method: "POST", headers: {"Content-Type": "application/json"},
                      body: JSON.stringify({texts: [text], covariates: covariates(), classes: 3})})
      .then(function (r) { return r.json().then(function (b) { return {ok: r.ok, body: b}; }); })
      .then(function (res) {
        byId("status").textContent = "";
        byId("go").disabled = false;
        if (!res.ok) { showError(res.body.error || "request failed"); return; }
        render(res.body.explanations[0], text, 0);
      })
      .catch(function (e) { byId("go").disabled = false; byId("status").textContent = ""; showError(String(e)); });
  });
})();
</script>
</body></html>
"""
