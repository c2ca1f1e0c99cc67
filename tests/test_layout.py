"""The package's shape: no import cycle, no long module without a stated reason.

Read from the source with :mod:`ast` (nothing is imported): every ``import`` and
``from ... import`` inside ``src/dolda``, at module level or inside a function,
absolute or relative, becomes an edge between two of the package's modules.
``from . import x`` counts as an import of the submodule ``x`` when it is one.
"""

from __future__ import annotations

import ast
from pathlib import Path


PACKAGE = Path(__file__).resolve().parents[1] / "src" / "dolda"

#: A module longer than this states why at its top, in a line ``# size: <reason>``
#: within its first 30 lines.
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from`` import names (its level resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its body)."""
    modules = _modules() if modules is None else modules
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, name, is_package)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                # "import dolda.sampler.rng" names its module; an unknown tail
                # ("dolda.io.load") falls back to the longest known prefix
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and target != "dolda":
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    stack: list[str] = []

    def visit(node):
        colour[node] = grey
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt, black) == grey:
                return stack[stack.index(nxt):] + [nxt]
            if colour.get(nxt) == white:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        colour[node] = black
        return None

    for node in sorted(graph):
        if colour[node] == white:
            found = visit(node)
            if found:
                return found
    return None


def long_modules_without_reason(max_lines: int = MAX_LINES) -> list[str]:
    out = []
    for name, path in _modules().items():
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > max_lines and not any(
                line.startswith("# size:") and len(line) > len("# size: ") + 10
                for line in lines[:30]):
            out.append(f"{path.relative_to(PACKAGE.parent)} ({len(lines)} lines)")
    return out


# -------------------------------------------------------------- the checks themselves

def test_the_graph_sees_relative_absolute_and_function_level_imports(tmp_path):
    pkg = tmp_path / "dolda"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("import dolda.a\n")
    modules = {_module_name_at(p, tmp_path): p for p in pkg.rglob("*.py")}
    graph = import_graph(modules)
    assert graph["dolda.a"] == {"dolda.sub.b"}
    assert graph["dolda.sub.b"] == {"dolda.c"}
    assert graph["dolda.c"] == {"dolda.a"}
    assert find_cycle(graph) == ["dolda.a", "dolda.sub.b", "dolda.c", "dolda.a"]
    graph["dolda.c"].clear()
    assert find_cycle(graph) is None


def _module_name_at(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _cli_commands_importing_their_package(graph):
    return sorted(name for name in graph
                  if name.startswith("dolda.cli.") and "dolda.cli" in graph[name])


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    iteration = "dolda.sampler.gibbs_iteration"
    assert iteration in graph and graph[iteration], "empty graph"
    # the click commands import the group ``main`` from dolda.cli, which imports them to
    # register them: the test below holds that loop until it is opened
    for name in _cli_commands_importing_their_package(graph):
        graph[name].discard("dolda.cli")
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cli_commands_do_not_import_their_package():
    back = _cli_commands_importing_their_package(import_graph())
    assert not back, "they import dolda.cli, which imports them: " + ", ".join(back)


#: The stages of ``DOLDA.fit`` (``docs/ARCHITECTURE.md``, the road of one fit).
FIT_STAGES = ("params", "design_stage", "chain_stage", "extend", "two_step", "summary",
              "proportions", "state")


def _estimator_methods(path: Path, cls: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)
                and node.name == cls).body
    return {node.name for node in body if isinstance(node, ast.FunctionDef)}


def calls_back_into(module: Path, methods: set[str]) -> list[str]:
    """``model.m(...)`` / ``self.m(...)`` calls in ``module`` of private ``methods``."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return sorted({f"{node.func.value.id}.{node.func.attr}" for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and isinstance(node.func.value, ast.Name)
                   and node.func.value.id in ("model", "self")
                   and node.func.attr.startswith("_") and node.func.attr in methods})


def test_the_fit_stages_never_call_back_into_the_estimator(tmp_path):
    folder = PACKAGE / "models" / "dolda"
    graph = import_graph()
    methods = {m for m in _estimator_methods(folder / "estimator.py", "DOLDA")
               if m.startswith("_") and not m.startswith("__")}
    assert {"_make_corpus", "_regressor_matrix", "_set_loglik"} <= methods
    for stage in FIT_STAGES:
        name = f"dolda.models.dolda.{stage}"
        assert name in graph, name
        assert "dolda.models.dolda.estimator" not in graph[name], f"{name} imports it"
        back = calls_back_into(folder / f"{stage}.py", methods)
        assert not back, f"{stage}.py calls the estimator's " + ", ".join(back)
    # the check sees a call back (as chain.py's model._set_loglik(...) was)
    planted = tmp_path / "stage.py"
    planted.write_text("def pool(model, ll):\n    model._set_loglik(ll)\n")
    assert calls_back_into(planted, methods) == ["model._set_loglik"]


def test_no_long_module_without_a_reason_at_its_top():
    long = long_modules_without_reason()
    assert not long, "over %d lines without a '# size: <reason>' line at the top: %s" % (
        MAX_LINES, ", ".join(long))
