"""Where summary.md's links point: beside it (relative), or under the URL its run directory is
published at (`--report-url BASE`).

summary.md links each check to its place in correctness.html and lists the run's other report
files. Relative links work where the files sit together (a downloaded CI artifact, the run
directory), and 404 where summary.md is read alone: a PR comment or a job summary. With a base,
every link is `BASE/<file>[#fragment]`, so they work there too, once the run directory's files are
published under BASE (a static site, an artifact store that serves files).

The base is checked as an option is (`parse_report_url`, a ValueError saying what is wrong): an
http(s) URL with a host, no query or fragment (a link is BASE/file#check-…), and no user name or
password — summary.md is posted where everyone reads it, so a URL carrying credentials is refused,
and the refusal never repeats it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

EXAMPLE = "https://ci.example/artifacts/123"


def parse_report_url(value: object) -> str:
    """`value` as a report base URL, normalised (no trailing slash; spaces and parentheses in its
    path percent-encoded, so it stays one markdown link target); ValueError saying what is wrong."""
    text = value.strip() if isinstance(value, str) else ""
    shown = "" if "@" in text else f" {text!r}"  # a user:password@ is never echoed
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 — a malformed port raises here
    except ValueError:
        raise ValueError(f"{shown.strip() or 'the value'} is not a URL (e.g. {EXAMPLE})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"must be an http(s) URL with a host, e.g. {EXAMPLE}, not{shown or ' that'}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("carries a user name or password, which summary.md would publish in every PR comment: "
                         "give the URL without it")
    if parts.query or parts.fragment:  # not echoed either: a signed URL's query is its credential
        raise ValueError("must have no ?query or #fragment (links are BASE/file#check-…): give the URL the run "
                         "directory's files are served under")
    path = quote(parts.path.rstrip("/"), safe="/%-._~!$&'*+,;=:@")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


@dataclass(frozen=True)
class ReportLinks:
    """How summary.md links to a report file: relative (`base` None) or under `base` (a URL from
    `parse_report_url`)."""

    base: str | None = None

    def to(self, filename: str, fragment: str = "") -> str:
        """The link to `filename` (a name in the run directory), at `#fragment` when given."""
        target = filename if self.base is None else f"{self.base}/{filename}"
        return target + (f"#{fragment}" if fragment else "")


RELATIVE = ReportLinks()
"""Links beside summary.md: the default."""
