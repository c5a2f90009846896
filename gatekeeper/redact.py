"""Keeping secrets out of every file a run writes.

A run knows some secrets by value (the API keys read from the variables the targets name) and
can recognise others by shape: userinfo in a URL (`http://user:pass@host`), an `--api-key X`
flag in a launch command, an `Authorization: Bearer X` header, `token=`/`key=`/`secret=` query
or option values. `Redactor.text` replaces both with `***`. The run's writers (reports, records,
copied logs) pass their text through it, and a last sweep over the run directory redacts the
logs the engines wrote themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

MASK = "***"
_SHAPES = (
    # the scheme starts where no scheme character precedes it and is at most 32 long: without both, a
    # long run of letters (a 5 MB recording) is scanned again from every position (40 s for 300 KB)
    (re.compile(r"""(?P<keep>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://)[^/\s:@"']+(?::[^/\s@"']*)?@"""),
     r"\g<keep>" + MASK + "@"),
    (re.compile(r"(?P<keep>(?<![\w-])--?(?:api[-_]?key|token|password|secret|auth[-_]?token)(?:=|\s+))"
                r"(?:'[^']*'|[^\s\"',;]+)", re.I), r"\g<keep>" + MASK),
    (re.compile(r"(?P<keep>\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)?\s*)[A-Za-z0-9._~+/=-]+", re.I),
     r"\g<keep>" + MASK),
    (re.compile(r"(?P<keep>[?&;](?:api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature)=)[^&#\s\"']+", re.I),
     r"\g<keep>" + MASK),
    (re.compile(r"(?P<keep>\b(?:[A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD))=)[^\s\"',;]+"), r"\g<keep>" + MASK),
)


class Redactor:
    """Replaces known secret values and secret-shaped substrings with `***`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        values = {s for s in secrets if s and len(s) >= 4}  # a 1-3 character "key" would mask half the report
        forms = values | {json.dumps(s)[1:-1] for s in values}  # as written inside a JSON string
        self._values = sorted(forms, key=len, reverse=True)

    def text(self, s: str) -> str:
        """`s` without secrets."""
        for value in self._values:
            s = s.replace(value, MASK)
        for pattern, repl in _SHAPES:
            s = pattern.sub(repl, s)
        return s

    def file(self, path: Path) -> bool:
        """Redact a text file in place (atomically); whether it changed. Binary files are left."""
        try:
            before = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            return False
        after = self.text(before)
        if after == before:
            return False
        tmp = path.with_name(path.name + ".redacting")
        tmp.write_text(after, encoding="utf-8")
        tmp.replace(path)
        return True

    def tree(self, root: Path) -> int:
        """Redact every text file under `root`; how many changed."""
        return sum(self.file(p) for p in sorted(root.rglob("*")) if p.is_file())


NONE = Redactor()  # shapes only: for text written before the run's secrets are known
