"""Untrusted text (model output, reasons, ids) made safe for the formats the reports are written in.

HTML needs nothing here: every page is a template in the autoescaping Jinja2 environment
(html.py). Markdown and XML are written as text, so their rules live here, once:

- `md_cell` / `md_code`: one table cell or code span of GitHub-flavoured markdown (summary.md of a
  run and of a merged matrix, compare.md): one line, no markup, `@mentions` and `#123`
  references defused, cut at `MAX_CELL_CHARS`;
- `xml_text`: a string XML 1.0 can hold (both junit.xml files), for xml.etree to escape.
"""

from __future__ import annotations

import re

MAX_CELL_CHARS = 300

_ESCAPES = (
    ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"),
    ("|", "\\|"), ("`", "\\`"), ("[", "\\["), ("]", "\\]"), ("*", "\\*"),
)
_CONTROL = re.compile("[\x00-\x1f\x7f]")
# "@name" pings a GitHub user and "#12" cross-references an issue: a zero-width space after
# the sign keeps model output from doing either in a PR comment.
_PING = re.compile(r"([@#])(?=[\w-])")


def md_cell(text: object, limit: int = MAX_CELL_CHARS) -> str:
    """Text made safe for one markdown table cell (or list item): one line, no markup."""
    s = " ".join(str(text).split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    for raw, safe in _ESCAPES:
        s = s.replace(raw, safe)
    s = _CONTROL.sub(lambda m: chr(0x2400 + ord(m.group())) if m.group() != "\x7f" else "\u2421", s)
    return _PING.sub("\\1\u200b", s)


def md_code(text: object) -> str:
    """Text for inside a `code span` in a table: one line, no backticks, pipes escaped
    (entities are not decoded inside code spans, so `<` stays as it is)."""
    return " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")[:MAX_CELL_CHARS]


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """`value` as a string XML 1.0 can hold: illegal characters become U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", str(value))
