"""The house rules the file tree itself must keep: no folder-level import cycle, a gate side
that never imports torch or the bundled engine, no module over 400 lines, and no hand-escaped
HTML (every page is a template in the report package's autoescaping Jinja2 environment).

Folder-level acyclicity is checked at every level of the package: within each package, its
direct children (modules and sub-packages, each taken whole) must import one another without a
cycle. So `gatekeeper.gates.longctx` may import `gatekeeper.gates.interface`, and
`gatekeeper.gates.registry` may import `gatekeeper.gates.longctx`, but nothing under
`gatekeeper/golden/` may import `gatekeeper/gates/` while a gate imports `gatekeeper/golden/`.

The tests keep the package's shape too: every `tests/**/test_*.py` sits in a folder whose
counterpart under `gatekeeper/` is a package (`tests/gates/golden/` for `gatekeeper/gates/golden/`),
or in `tests/repo/` (rules for the whole repository: this file, the contracts, lint, the installed
wheel, the CI examples); every other module is a helper in `tests/helpers/` (imported by plain name,
pyproject.toml's `pythonpath`) or a `conftest.py`; and no two modules share a basename (pytest's
default import mode imports each by its basename).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "gatekeeper"
TESTS = ROOT / "tests"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str) -> set[str]:
    """Every gatekeeper module `path` imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # `from pkg import module`
    return {name for name in found if name == "gatekeeper" or name.startswith("gatekeeper.")}


def import_graph() -> dict[str, set[str]]:
    """Module -> the gatekeeper modules (or packages) it imports."""
    return {_module_name(p): _imports(p, _module_name(p)) for p in PACKAGE.rglob("*.py")}


def _child(package: str, name: str) -> str | None:
    """The direct child of `package` that `name` lies in (None when it lies outside)."""
    prefix = package + "."
    if not name.startswith(prefix):
        return None
    return prefix + name[len(prefix):].split(".")[0]


def folder_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per package whose direct children import each other in a circle."""
    packages = {_module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("__init__.py")}
    cycles = []
    for package in sorted(packages):
        edges: dict[str, set[str]] = defaultdict(set)
        for module, imported in graph.items():
            src = _child(package, module)
            if src is None:
                continue
            for name in imported:
                dst = _child(package, name)
                if dst is not None and dst != src:
                    edges[src].add(dst)
        cycle = _find_cycle(edges)
        if cycle:
            cycles.append(cycle)
    return cycles


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_folder_level_import_cycle() -> None:
    cycles = folder_cycles(import_graph())
    assert not cycles, "import cycles between sibling folders/modules:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = {"gatekeeper.a.x": {"gatekeeper.b.y"}, "gatekeeper.b.y": {"gatekeeper.a.z"}, "gatekeeper.a.z": set()}
    edges: dict[str, set[str]] = defaultdict(set)
    for module, imported in graph.items():
        for name in imported:
            src, dst = _child("gatekeeper", module), _child("gatekeeper", name)
            if src and dst and src != dst:
                edges[src].add(dst)
    assert _find_cycle(edges) == ["gatekeeper.a", "gatekeeper.b", "gatekeeper.a"]
    assert _find_cycle({"gatekeeper.a": {"gatekeeper.b"}}) is None


GATE_SIDE = ["gatekeeper.cli", "gatekeeper.run.runner", "gatekeeper.run.plan", "gatekeeper.gates.registry",
             "gatekeeper.report.run.files"]


def test_the_gate_side_imports_neither_torch_nor_the_engine() -> None:
    code = (
        "import sys, pkgutil, importlib, gatekeeper.gates\n"
        f"for name in {GATE_SIDE!r}: importlib.import_module(name)\n"
        "for m in pkgutil.walk_packages(gatekeeper.gates.__path__, 'gatekeeper.gates.'): importlib.import_module(m.name)\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'gatekeeper.engine')))\n"
        "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"the gate side imported: {r.stdout.strip()}"


def test_mypy_is_clean_on_the_gate_side() -> None:
    """pyproject.toml's [tool.mypy] checks gatekeeper/ without the engine and the training code."""
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr


MAX_MODULE_LINES = 400  # one concept per file (STYLE.md): a module past this holds two


def test_no_module_is_over_400_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def stdlib_html_uses(source: str) -> list[str]:
    """Where `source` imports the stdlib `html` module or calls `html.escape`, as "line: what"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "html"]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "html":
            found.append(f"{node.lineno}: from {node.module} import …")
        elif (isinstance(node, ast.Attribute) and node.attr == "escape" and isinstance(node.value, ast.Name)
              and node.value.id == "html"):
            found.append(f"{node.lineno}: html.escape")
    return found


def test_no_module_escapes_html_by_hand() -> None:
    """Pages are Jinja2 templates rendered with autoescape (report/html.py); markup built with
    f-strings and `html.escape` is one forgotten call away from a `<script>` in a report."""
    found = {str(p.relative_to(PACKAGE)): uses for p in sorted(PACKAGE.rglob("*.py"))
             if (uses := stdlib_html_uses(p.read_text(encoding="utf-8")))}
    assert not found, f"modules using the stdlib html module (render a template instead): {found}"


def test_the_html_check_finds_each_use() -> None:
    source = "import html\nimport html.parser as hp\nfrom html import escape\nx = html.escape(y)\n"
    assert stdlib_html_uses(source) == ["1: import html", "2: import html.parser", "3: from html import …", "4: html.escape"]
    assert stdlib_html_uses("from gatekeeper.report.html import render_page\nhtml = render_page('x')\n") == []


WHOLE_REPOSITORY = "repo"  # tests/repo/: rules for the repository as a whole, mirroring no package
HELPERS = "helpers"  # tests/helpers/: every module of the tests that is neither a test nor a conftest.py


def misplaced_test_modules(tests: Path = TESTS, package: Path = PACKAGE) -> list[str]:
    """Each module under `tests` that breaks the layout rules, as "path: why"."""
    found, seen = [], {}
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        folder = rel.parent.as_posix()
        top = rel.parts[0] if len(rel.parts) > 1 else ""
        if path.name == "conftest.py":
            continue
        if path.name in seen:
            found.append(f"{rel}: the same basename as {seen[path.name]}")
        seen.setdefault(path.name, rel)
        if path.name.startswith("test_"):
            if top == HELPERS:
                found.append(f"{rel}: a test in {HELPERS}/")
            elif top != WHOLE_REPOSITORY and not (top and (package / folder / "__init__.py").is_file()):
                where = f"{package.name}/{folder}/ is no package" if top else "a test at the top of tests/"
                found.append(f"{rel}: {where} (put it in the folder of the package it tests, or in {WHOLE_REPOSITORY}/)")
        elif folder != HELPERS:
            found.append(f"{rel}: a helper outside {HELPERS}/")
    return found


def test_the_tests_mirror_the_package_and_helpers_are_in_one_folder() -> None:
    found = misplaced_test_modules()
    assert not found, "modules out of place under tests/:\n" + "\n".join(found)


def test_the_layout_check_finds_each_misplaced_module(tmp_path: Path) -> None:
    package, tests = tmp_path / "gatekeeper", tmp_path / "tests"
    for rel in ("__init__.py", "gates/__init__.py", "gates/golden/__init__.py", "models/gk-tiny/x.txt"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text("")
    for rel in ("conftest.py", "helpers/run_util.py", "repo/test_lint.py", "gates/golden/test_golden_gate.py",
                "gates/golden/conftest.py", "test_flat.py", "nowhere/test_x.py", "models/gk-tiny/test_y.py",
                "helpers/test_z.py", "gates/util.py", "gates/test_lint.py"):
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_text("")
    assert misplaced_test_modules(tests, package) == [
        "gates/util.py: a helper outside helpers/",
        "helpers/test_z.py: a test in helpers/",
        "models/gk-tiny/test_y.py: gatekeeper/models/gk-tiny/ is no package (put it in the folder of the "
        "package it tests, or in repo/)",
        "nowhere/test_x.py: gatekeeper/nowhere/ is no package (put it in the folder of the package it tests, "
        "or in repo/)",
        "repo/test_lint.py: the same basename as gates/test_lint.py",
        "test_flat.py: a test at the top of tests/ (put it in the folder of the package it tests, or in repo/)",
    ]
