"""Templates in a matrix's candidate: `{axis}` placeholders filled once per cell.

The rule is str.format's, restricted: `{name}` names an axis (or, in a launch command only, one
of the launch's own placeholders `{port}`, `{model}`, `{api_key}`, which are left for the launch to
fill); `{{` and `}}` are literal braces; anything else in braces, or a lone brace, is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gatekeeper.targets.interface import LAUNCH_PLACEHOLDERS

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


class TemplateError(ValueError):
    """A template that cannot be filled: a lone brace or a placeholder naming nothing known."""


def placeholders(text: str) -> list[str]:
    """The names a template's placeholders use, in order; TemplateError for a lone brace."""
    found = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        if m.group(1) is None:
            raise TemplateError(f"a lone {token!r} in {text!r} (write {token * 2} for a literal brace)")
        found.append(m.group(1).strip())
    return found


def check(text: str, axes: Mapping[str, object], launch: bool = False) -> None:
    """TemplateError unless every placeholder names an axis (or, in a launch command, the
    launch's own placeholders)."""
    allowed = set(axes) | (set(LAUNCH_PLACEHOLDERS) if launch else set())
    for name in placeholders(text):
        if name not in allowed:
            extra = f", or the launch's {', '.join(sorted(LAUNCH_PLACEHOLDERS))}" if launch else ""
            raise TemplateError(f"{{{name}}} names no axis (axes: {', '.join(axes)}{extra})")


def fill(text: str, values: Mapping[str, str], launch: bool = False) -> str:
    """The template with each axis placeholder replaced by its text in `values`.

    In a launch command (`launch`), the launch's own placeholders and `{{`/`}}` are kept and the
    inserted text has its braces doubled, because the launch formats the command once more;
    elsewhere `{{`/`}}` become single braces. `check` must have passed."""
    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token if launch else token[0]
        name = m.group(1).strip()
        if name not in values:  # a launch placeholder
            return token
        value = values[name]
        return value.replace("{", "{{").replace("}", "}}") if launch else value

    return _TOKEN.sub(one, text)
