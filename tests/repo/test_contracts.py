"""The contracts between packages, kept by the tree itself (issues 29 and 46): a gate's check ids
are written only inside its own package (other code imports them from the gate's `checks.py`);
outside gatekeeper/gates/ only the gates' public modules are imported — the interface, the
registry, the findings' base, each gate's `checks` and `settings` — not even through another
package; the live shadow proxy builds on gate 5's library and never on a gate, not even
indirectly; and the verdict→exit-code table exists once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gatekeeper.gates.registry import GATES as GATES_BY_ID
from test_architecture import PACKAGE, import_graph

GATES = tuple(GATES_BY_ID)
_CHECK_ID = re.compile(rf"^({'|'.join(GATES)})\.[\w.\-]*$")
_FILE_NAME = re.compile(r"\.(html|md|j2|json|jsonl|yaml|txt)$")


def _leading_text(node: ast.AST) -> str | None:
    """A string literal's text, or an f-string's text up to its first placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def foreign_check_ids(root: Path = PACKAGE) -> list[str]:
    """`path:line: 'id'` for each check-id literal of gate X written outside gatekeeper/gates/X/."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        for node in ast.walk(tree):
            text = _leading_text(node)
            match = _CHECK_ID.match(text) if text is not None and not _FILE_NAME.search(text) else None
            if match and not rel.startswith(f"gatekeeper/gates/{match.group(1)}/"):
                found.append(f"{rel}:{getattr(node, 'lineno', 0)}: {text!r}")
    return list(dict.fromkeys(found))  # an f-string's leading text is also a constant of its own


def test_no_check_id_literal_outside_its_gates_package() -> None:
    assert foreign_check_ids() == []


def test_the_check_id_scan_finds_a_foreign_id(tmp_path: Path) -> None:
    pkg = tmp_path / "gatekeeper"
    (pkg / "report").mkdir(parents=True)
    (pkg / "gates" / "golden").mkdir(parents=True)
    (pkg / "report" / "x.py").write_text('A = "golden.pass_rate"\nB = f"shadow.rule.{A}"\nC = "performance.html"\n'
                                         'D = "a sentence about startup.ready"\n')
    (pkg / "gates" / "golden" / "checks.py").write_text('PASS_RATE = "golden.pass_rate"\n')
    assert foreign_check_ids(pkg) == ["gatekeeper/report/x.py:1: 'golden.pass_rate'",
                                      "gatekeeper/report/x.py:2: 'shadow.rule.'"]


# What code outside gatekeeper/gates/ may import of it: the contract, the registry, the findings'
# base, and each gate's check ids and findings (`checks`) and settings (`settings`) — with the
# packages those sit in. Everything else in a gate's package is the gate's own.
_PUBLIC = re.compile(r"^gatekeeper\.gates(\.(interface|registry|finding)|\.\w+(\.(checks|settings))?)?$")
_NO_GATE_AT_ALL = ("gatekeeper.live", "gatekeeper.traffic")  # the live proxy and gate 5's library build on no gate


def _is_gate_module(name: str) -> bool:
    return name == "gatekeeper.gates" or name.startswith("gatekeeper.gates.")


def _imported(graph: dict[str, set[str]], module: str) -> set[str]:
    """The package modules `module` imports, with the packages whose `__init__` each import runs."""
    found = set()
    for name in graph[module]:
        parts = name.split(".")
        found.update(p for k in range(1, len(parts) + 1) if (p := ".".join(parts[:k])) in graph)
    return found - {module}


def gate_imports_outside_gates(graph: dict[str, set[str]]) -> list[str]:
    """`gate module <- ... <- module` for each gate module a module outside gatekeeper/gates/ reaches
    that it may not: walking its imports (function-level ones too) through modules outside the
    gates, a gate module other than the public ones (`_PUBLIC`), or from live/ and traffic/ any
    gate module at all. The walk stops at a gate module: what the gates import is theirs."""
    found = []
    for start in sorted(m for m in graph if not _is_gate_module(m)):
        by = {start: start}  # each module reached -> the module that imported it
        stack = [start]
        while stack:
            module = stack.pop()
            for name in _imported(graph, module) - by.keys():
                by[name] = module
                if not _is_gate_module(name):
                    stack.append(name)
        for name in sorted(by):
            if _is_gate_module(name) and (start.startswith(_NO_GATE_AT_ALL) or not _PUBLIC.match(name)):
                chain = [name]
                while chain[-1] != start:
                    chain.append(by[chain[-1]])
                found.append(" <- ".join(chain))
    return found


def test_outside_the_gates_only_their_public_modules_are_imported_even_indirectly() -> None:
    assert gate_imports_outside_gates(import_graph()) == []


def test_the_gate_import_walk_finds_an_indirect_one() -> None:
    graph = {"gatekeeper.live.admin": {"gatekeeper.run.plan"}, "gatekeeper.run.plan": {"gatekeeper.gates.registry"},
             "gatekeeper.run": set(), "gatekeeper.live": set(), "gatekeeper.gates": set(),
             "gatekeeper.gates.registry": {"gatekeeper.gates.golden.gate"}, "gatekeeper.gates.golden.gate": set(),
             "gatekeeper.report.x": {"gatekeeper.gates.golden.checks.CaseFinding", "gatekeeper.gates.golden.checks",
                                     "gatekeeper.run.plan"},
             "gatekeeper.gates.golden": set(), "gatekeeper.gates.golden.checks": set(),
             "gatekeeper.commands.y": {"gatekeeper.gates.performance.measure"}, "gatekeeper.gates.performance.measure": set()}
    assert gate_imports_outside_gates(graph) == [
        "gatekeeper.gates.performance.measure <- gatekeeper.commands.y",
        "gatekeeper.gates <- gatekeeper.run.plan <- gatekeeper.live.admin",
        "gatekeeper.gates.registry <- gatekeeper.run.plan <- gatekeeper.live.admin"]


def test_one_verdict_to_exit_code_table() -> None:
    """Only gatekeeper/exit_codes.py maps verdict names to codes; everyone else reads FOR_VERDICT."""
    tables = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                small = all(not isinstance(v, ast.Constant) or isinstance(v.value, int) and v.value < 100
                            for v in node.values)  # exit codes, not HTTP statuses or colours
                if {"PROMOTE", "ROLLBACK", "HOLD"} <= keys and small:
                    tables.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert tables == ["gatekeeper/exit_codes.py:19"]
