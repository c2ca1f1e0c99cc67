"""The documentation: README's promises, the generated tables, and a strict MkDocs build."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SETUP_COMMANDS = (
    'python -m pip install -e . && dolda demo',
    'python -m pip install -e ".[test]" && python -m pytest -n 2 --dist loadfile',
)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _gen_tables():
    spec = importlib.util.spec_from_file_location("gen_tables", ROOT / "docs" / "gen_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_short_and_starts_with_the_two_set_up_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    blocks = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    # CI runs the second command as written; both are the first code after the intro
    assert blocks[:2] == list(SETUP_COMMANDS)


def test_readme_links_resolve_and_at_most_one_points_into_a_results_folder():
    links = _LINK.findall(README.read_text(encoding="utf-8"))
    local = [link.split("#")[0] for link in links if "://" not in link and not link.startswith("#")]
    assert local, "README links into docs/"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert missing == []
    into_results = [link for link in links if re.search(r"(^|/)results(/|\.md)", link)]
    assert len(into_results) <= 1, into_results


def test_the_committed_tables_are_what_the_result_files_give():
    assert _gen_tables().stale_pages() == []


def _copy_results(gen, tmp_path: Path) -> None:
    names = {f for _, files, svm in gen.ACCURACY_ROWS for f in [*files, svm]}
    for name in names:
        (tmp_path / gen.EXPERIMENTS).mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / gen.EXPERIMENTS / name, tmp_path / gen.EXPERIMENTS / name)
    (tmp_path / gen.BENCHMARKS).mkdir(parents=True)
    for name in ("dolda_throughput", "lda_throughput", "startup", "serve", "scaling"):
        shutil.copy(ROOT / gen.BENCHMARKS / f"{name}.json", tmp_path / gen.BENCHMARKS)


def test_a_changed_result_file_changes_the_table_and_stales_the_page(tmp_path):
    gen = _gen_tables()
    _copy_results(gen, tmp_path)
    page = "<!-- generated:accuracy -->\n<!-- /generated:accuracy -->"
    before = gen.render(page, tmp_path)
    label, files, _ = gen.ACCURACY_ROWS[0]
    path = tmp_path / gen.EXPERIMENTS / files[0]
    data = json.loads(path.read_text())
    data["test_accuracy"] = 0.1234
    path.write_text(json.dumps(data))
    after = gen.render(page, tmp_path)
    assert f"| {label} |" in after and "0.123 |" in after and "0.123 |" not in before
    assert gen.render(after, tmp_path) == after  # rendering is idempotent


def test_a_missing_result_file_is_a_one_line_error_naming_it(tmp_path):
    gen = _gen_tables()
    _copy_results(gen, tmp_path)
    (tmp_path / gen.BENCHMARKS / "startup.json").unlink()
    with pytest.raises(SystemExit, match=r"^gen_tables: result file benchmarks/results/"
                                         r"startup\.json is missing$"):
        gen.render("<!-- generated:throughput -->\nold\n<!-- /generated:throughput -->",
                   tmp_path)


def test_an_unknown_table_name_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown table 'nope'"):
        _gen_tables().render("<!-- generated:nope -->\n\n<!-- /generated:nope -->", tmp_path)


def test_the_site_builds_without_warnings(tmp_path):
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (it comes with the 'test' extra)")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log
    assert "WARNING" not in log, log
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    headings = {re.sub(r"<[^>]+>|&para;", "", h).strip()
                for h in re.findall(r'<h2 id="dolda\.[^"]*"[^>]*>(.*?)</h2>', api, re.S)}
    # rendered from the docstrings, with the public names users import
    assert {"dolda.DOLDA", "dolda.LDA", "dolda.DOProbit", "dolda.load"} <= headings, headings
    assert "Parameters" in api and ":::" not in api
