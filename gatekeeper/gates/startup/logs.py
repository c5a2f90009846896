"""Gate 1's startup-log checks: the policy's rules and the warnings only the candidate prints.

Both compare the candidate's log with the reference's after normalising away what differs
between any two runs (timestamps, ports, addresses, sizes), so a line both engines print is
never held against the candidate.
"""

from __future__ import annotations

import re

from gatekeeper.evidence import Log, Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.startup.settings import StartupSettings
from gatekeeper.results import Status
from gatekeeper.gates.startup.checks import LOG_RULES, NEW_WARNINGS, LogRulesFinding, NewWarningsFinding
from gatekeeper.detection import exact

_VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),
    (re.compile(r"\b(?:[IWEF]\d{4}|\d\d-\d\d) \d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),  # vLLM's and glog's (torch's C++)
    (re.compile(r"\S*/(?:site|dist)-packages/"), "<site-packages>/"),  # another venv per release
    (re.compile(r"(\.py|\.cpp|\.cc|\.h):\d+"), r"\1:<n>"),  # a source line moves between releases
    (re.compile(r"\b[0-9a-f]{16,}\b"), "<id>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|MiB|GiB|MB|GB)\b"), "<num>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(?:127\.0\.0\.1|localhost):\d+"), "<host>"),
    (re.compile(r"\bpid[ =:]*\d+", re.I), "pid <n>"),
]
_WARNING = re.compile(r"\b(WARN(?:ING)?|ERROR|CRITICAL|Traceback)\b")


def normalise(line: str) -> str:
    """A log line without timestamps, ports, addresses, sizes, venv paths, source line numbers and ids, for
    comparing two logs (two releases of one engine print their routine lines alike)."""
    for pattern, repl in _VOLATILE:
        line = pattern.sub(repl, line)
    return line.strip()


def check_logs(ctx: GateContext, s: StartupSettings) -> None:
    """`startup.log_rules` and `startup.new_warnings`; without a candidate log (a URL target
    that names no `log_file` or `log_command`) both SKIP as advisory, saying so."""
    cand, ref = ctx.run.runtimes["candidate"], ctx.run.runtimes["reference"]
    if not cand.has_log or not cand.log_lines:
        why = (cand.log_error or "the candidate's log is empty: no line to check") if cand.has_log else (
            "the candidate is a URL target without a log: name its log_file (or a log_command such as "
            "`docker logs <container>`) in the run config to have its startup log checked")
        ctx.skip(LOG_RULES, why, advisory=True)
        ctx.skip(NEW_WARNINGS, why, advisory=True)
        return
    ref_lines = {normalise(line) for line in ref.log_lines}
    hits: list[list[str]] = []
    matched: list[Status] = []
    for rule in s.log_rules:
        pattern, severity = re.compile(rule["pattern"]), Status(rule.get("severity", "WARN"))
        for line in cand.log_lines:
            if pattern.search(line) and normalise(line) not in ref_lines:
                hits.append([rule["pattern"], severity.value, line[:300]])
                matched.append(severity)
    worst = Status.worst(matched, default=Status.PASS)  # a rule's severity is FAIL or WARN (settings.py)
    ctx.check(LOG_RULES, worst, f"{len(hits)} candidate log line(s) matched a rule" if hits else "no rule matched",
              LogRulesFinding(matches=len(hits)),
              [Table("matched log lines", ["rule", "severity", "line"], hits[:50])] if hits else [],
              limit=exact("candidate log line matching a rule that the reference does not print", len(cand.log_lines)))
    new = sorted({normalise(line) for line in cand.log_lines if _WARNING.search(line)} - ref_lines)
    severity = Status(s.new_warnings_severity) if new else Status.PASS
    ctx.check(NEW_WARNINGS, severity, f"{len(new)} warning line(s) the reference did not print" if new
              else "no new warnings", NewWarningsFinding(new_warnings=len(new)),
              [Log("new warning lines (normalised)", new[:50])] if new else [])
