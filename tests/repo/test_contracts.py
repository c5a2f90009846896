"""The contracts between packages, kept by the tree itself (issue 29): a gate's check ids are
written only inside its own package (other code imports them from the gate's `checks.py`), the
live shadow proxy builds on gate 5's library and never on a gate, and the verdict→exit-code
table exists once."""

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


def test_the_live_proxy_imports_no_gate() -> None:
    graph = import_graph()
    bad = {m: sorted(i for i in imported if i == "gatekeeper.gates" or i.startswith("gatekeeper.gates."))
           for m, imported in graph.items() if m.startswith(("gatekeeper.live", "gatekeeper.traffic"))}
    assert {m: i for m, i in bad.items() if i} == {}


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
