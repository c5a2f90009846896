"""Gate 1's settings and defaults (the `startup:` section of a policy)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.config.settings import SettingError, require

SEVERITIES = ("FAIL", "WARN")


def _default_log_rules() -> list[dict[str, Any]]:
    return [
        {"pattern": "Traceback \\(most recent call last\\)", "severity": "FAIL"},
        {"pattern": "(?i)\\b(nan|inf) (detected|values?)\\b", "severity": "FAIL"},
        {"pattern": "(?i)fall(ing)? ?back", "severity": "WARN"},
        {"pattern": "(?i)not supported", "severity": "WARN"},
    ]


@dataclass(frozen=True)
class StartupSettings:
    """The canary (prompt, expected answer, token budget), the startup-log rules (regex → FAIL or
    WARN; a rule fires only on lines the reference did not also print) and the status of warning
    lines only the candidate prints."""

    canary_prompt: str = "Reply with exactly: OK"
    canary_expect: str = "OK"
    canary_max_tokens: int = 8
    log_rules: list[dict[str, Any]] = field(default_factory=_default_log_rules)
    new_warnings_severity: str = "WARN"

    def __post_init__(self) -> None:
        require(self.canary_max_tokens > 0, "canary_max_tokens", "must be at least 1")
        require(self.new_warnings_severity in SEVERITIES, "new_warnings_severity", "must be FAIL or WARN")
        for i, rule in enumerate(self.log_rules):
            require(isinstance(rule, dict) and isinstance(rule.get("pattern"), str)
                    and set(rule) <= {"pattern", "severity"}, "log_rules",
                    f"rule {i + 1}: each rule is {{pattern: <regex>, severity: FAIL|WARN}}")
            require(rule.get("severity", "WARN") in SEVERITIES, "log_rules", f"rule {i + 1}: severity must be FAIL or WARN")
            try:
                re.compile(rule["pattern"])
            except re.error as e:
                raise SettingError("log_rules", f"rule {i + 1}: pattern is not a regular expression ({e})") from None
