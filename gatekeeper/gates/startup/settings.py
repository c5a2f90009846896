"""Gate 1's settings and defaults (the `startup:` section of a policy)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.config.settings import MAX_ANSWER_TOKENS, SettingError, check_ranges, require, setting
from gatekeeper.targets.observed import PATH_KEYS

SEVERITIES = ("FAIL", "WARN")


def _default_log_rules() -> list[dict[str, Any]]:
    return [
        {"pattern": "Traceback \\(most recent call last\\)", "severity": "FAIL"},
        {"pattern": "(?i)\\b(nan|inf) (detected|values?)\\b", "severity": "FAIL"},
        {"pattern": "(?i)fall(ing)? ?back", "severity": "WARN"},
        {"pattern": "(?i)not supported", "severity": "WARN"},
    ]


def _compile(pattern: Any, key: str, what: str) -> None:
    if not isinstance(pattern, str):
        raise SettingError(key, f"{what}: a pattern is a string (a regular expression)")
    try:
        re.compile(pattern)
    except re.error as e:
        raise SettingError(key, f"{what}: pattern is not a regular expression ({e})") from None


@dataclass(frozen=True)
class StartupSettings:
    """The canary (prompt, expected answer, token budget), the startup-log rules (regex → FAIL or
    WARN; a rule fires only on lines the reference did not also print), the status of warning
    lines only the candidate prints, and the execution-path change check: `path_change_lines`
    (regexes: a candidate line matching one that the reference does not print is a kernel
    fallback) and `explained_path_changes` (`{key: attention_backend, reason: ...}` for a path
    key whose change is expected, `{line: <regex>, reason: ...}` for fallback lines that are)."""

    canary_prompt: str = "Reply with exactly: OK"
    canary_expect: str = "OK"
    canary_max_tokens: int = setting(8, minimum=1, maximum=MAX_ANSWER_TOKENS)
    log_rules: list[dict[str, Any]] = field(default_factory=_default_log_rules)
    new_warnings_severity: str = "WARN"
    path_change_lines: list[str] = field(default_factory=lambda: ["(?i)fall(ing)? ?back"])
    explained_path_changes: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_ranges(self)
        require(self.new_warnings_severity in SEVERITIES, "new_warnings_severity", "must be FAIL or WARN")
        for i, rule in enumerate(self.log_rules):
            require(isinstance(rule, dict) and isinstance(rule.get("pattern"), str)
                    and set(rule) <= {"pattern", "severity"}, "log_rules",
                    f"rule {i + 1}: each rule is {{pattern: <regex>, severity: FAIL|WARN}}")
            require(rule.get("severity", "WARN") in SEVERITIES, "log_rules", f"rule {i + 1}: severity must be FAIL or WARN")
            _compile(rule["pattern"], "log_rules", f"rule {i + 1}")
        for i, pattern in enumerate(self.path_change_lines):
            _compile(pattern, "path_change_lines", f"item {i + 1}")
        for i, item in enumerate(self.explained_path_changes):
            what = f"item {i + 1}"
            require(isinstance(item, dict) and len(set(item) & {"key", "line"}) == 1
                    and set(item) <= {"key", "line", "reason"}, "explained_path_changes",
                    f"{what}: each item is {{key: <path key>, reason: ...}} or {{line: <regex>, reason: ...}}")
            if "key" in item:
                require(item["key"] in PATH_KEYS, "explained_path_changes",
                        f"{what}: key must be one of {', '.join(PATH_KEYS)}")
            else:
                _compile(item["line"], "explained_path_changes", what)
