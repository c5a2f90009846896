"""Which failing checks share a cause: the signature the Failures section groups them by.

One root cause rarely fails one check. A candidate that drops the last character of every answer
fails twenty golden cases, each with its own words::

    golden.eos-1  FAIL: regression, the reference passes equals: expected exactly 'tiger', got 'tige'
    golden.eos-5  FAIL: regression, the reference passes equals: expected exactly 'salmon', got 'salmo'

A check's signature is what is left of it once what differs between such instances is masked: its
gate, its family (the golden set's `eos`, `json`...; none for most checks), its status, and its
reason with quoted text, numbers, URLs, file paths, request ids and the check's own id and case
name masked — the idea of `errors.gist`, which masks a server's error body the same way. Both lines
above become::

    Signature(gate='golden', family='eos', status='FAIL',
              cause="FAIL: regression, the reference passes equals: expected exactly '…', got '…'")

Only checks that FAIL or ERROR are grouped (`group_failures`): a blocking SKIP or an undecided
check says what was not asked, which is no cause shared with another. Nothing here reads a gate's
own wording: two causes whose reasons differ in anything but the masked parts stay apart, so a card
can be too fine (one cause in two cards) but never merges two causes a reader should tell apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gatekeeper.results import CheckResult, Status

GROUPED = (Status.FAIL, Status.ERROR)

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>),;]+", re.I)
_PATH = re.compile(r"""(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}""")
# 'text' or "text" as repr() writes it (a backslash escapes), possibly cut ('…'…); an apostrophe
# inside a word ("candidate's") opens nothing: a quote must not follow a letter or digit.
_QUOTED = re.compile(r"""(?<![\w'"])(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")…?""")
_ID = re.compile(r"\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,})\b", re.I)
# A number standing alone ("2 runs", "32.8%", "line 1 column 33", "=16"), not one inside a name
# ("p99_logprob_delta", "c4", "v1").
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\b(?:nan|inf)\b", re.I)


@dataclass(frozen=True)
class Signature:
    """What failing checks of one cause have in common; `cause` is the masked reason, readable
    as the pattern the checks' reasons follow."""

    gate: str
    family: str
    status: str
    cause: str


def _own_names(c: CheckResult) -> tuple[str, ...]:
    """The check's id and what it names inside its gate ("golden.eos-1.stream": "eos-1.stream",
    "eos-1"), longest first so a longer name is masked whole."""
    inside = c.id.removeprefix(f"{c.gate}.")
    return tuple(sorted({c.id, inside, inside.split(".")[0]} - {""}, key=len, reverse=True))


def mask(reason: str, names: Iterable[str] = ()) -> str:
    """`reason` with what varies between instances of one cause masked: `names` (a check's own id
    and case) become <case>, then URLs <url>, file paths <path>, quoted text '…', request ids <id>
    and numbers #; whitespace is collapsed."""
    for name in names:
        reason = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "<case>", reason)
    reason = _URL.sub("<url>", reason)
    reason = _PATH.sub("<path>", reason)
    reason = _QUOTED.sub("'…'", reason)
    reason = _ID.sub("<id>", reason)
    reason = _NUMBER.sub("#", reason)
    return " ".join(reason.split())


def signature(c: CheckResult) -> Signature:
    """The check's signature: its gate, family, status and masked reason (`mask`)."""
    return Signature(c.gate, c.family or "", c.status.value, mask(c.reason, _own_names(c)))


def group_failures(checks: Iterable[CheckResult]) -> tuple[tuple[CheckResult, ...], ...]:
    """`checks` in groups of one cause, each group where its first check stood: checks that FAIL
    or ERROR with one signature form one group, in their order; any other check is a group of one."""
    groups: list[list[CheckResult]] = []
    by_signature: dict[Signature, list[CheckResult]] = {}
    for c in checks:
        if c.status not in GROUPED:
            groups.append([c])
            continue
        key = signature(c)
        if key in by_signature:
            by_signature[key].append(c)
        else:
            by_signature[key] = [c]
            groups.append(by_signature[key])
    return tuple(tuple(g) for g in groups)
