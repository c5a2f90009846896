"""What the recording proxy removes before a request or answer reaches disk.

Always: the `Authorization` header and every other header (only the tenant header's value is
kept), values of JSON keys that name a secret (`api_key`, `authorization`, `token`, `secret`,
`password`...), and secret-shaped text (`gatekeeper/redact.py`: bearer tokens, `key=` query
values, URL userinfo). Configurable: regexes for PII (emails, phone numbers...) whose matches
become `<redacted>` anywhere in the request or the answer. The shipped defaults cover emails and
phone numbers; `--redact` adds more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gatekeeper.redact import MASK, Redactor

PII_DEFAULTS = (
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",  # email
    r"(?<![\w.])\+?\d[\d ()-]{7,}\d(?![\w.])",  # phone number: 9+ digits with spaces, dashes, parentheses
)
PII_MASK = "<redacted>"
_SECRET_KEY = re.compile(r"(?i)^(api[-_]?key|authorization|access[-_]?token|token|secret|password|x-api-key)$")


class BodyRedactor:
    """Redacts a JSON value (a request or an answer) in place of its secrets and PII."""

    def __init__(self, pii: Sequence[str] = PII_DEFAULTS, secrets: Sequence[str] = ()) -> None:
        self._pii = [re.compile(p) for p in pii]
        self._secrets = Redactor(secrets)

    def text(self, s: str) -> str:
        """One string without secrets and PII."""
        s = self._secrets.text(s)
        for pattern in self._pii:
            s = pattern.sub(PII_MASK, s)
        return s

    def value(self, v: Any) -> Any:
        """A JSON value with every string redacted and secret-named keys masked."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {k: MASK if isinstance(k, str) and _SECRET_KEY.match(k) and v[k] not in (None, "")
                    else self.value(x) for k, x in v.items()}
        return v
