"""Where a pair store is: a `postgresql://` URL (PostgreSQL) or anything else (a SQLite file),
and how it is shown without its password.

A URL is libpq's (`postgresql://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=require`; `postgres://`
too). The password is better kept out of it — libpq reads `PGPASSWORD` and `~/.pgpass` — but
where it is in the URL, every message, log line and report shows the URL with its user part
(`postgresql://***@host/db`) and any `password=` parameter masked, as `redact.py` masks every URL.

A URL that went through `pathlib.Path` has lost a slash (`postgresql:/host/db`); it is read as
the URL it was, so a store named through a file-finding layer still reaches PostgreSQL.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from gatekeeper.redact import Redactor

_SCHEME = re.compile(r"^postgres(?:ql)?:/+", re.I)


def is_postgres(name: str) -> bool:
    """Whether `name` names a PostgreSQL store (a `postgresql://` or `postgres://` URL)."""
    return bool(_SCHEME.match(name))


def postgres_url(name: str) -> str:
    """The URL as libpq reads it (`postgresql://`, the slash a path lost put back)."""
    return _SCHEME.sub("postgresql://", name, count=1)


def password(name: str) -> str | None:
    """The password a URL carries, in its user part or as a `password=` parameter (None: none)."""
    try:
        parts = urlsplit(postgres_url(name))
        found = parts.password
    except ValueError:  # a malformed port, say: the text is masked by its shape below
        return None
    query = re.search(r"(?:^|&)password=([^&]*)", parts.query)
    return unquote(found) if found else unquote(query.group(1)) if query else None


def shown(name: str) -> str:
    """`name` as messages show it: a URL with its password masked; a path as it is."""
    if not is_postgres(name):
        return name
    return masker(name).text(postgres_url(name))


def masker(name: str) -> Redactor:
    """A Redactor that masks the password `name` carries (decoded and as written) and every
    secret-shaped text (a URL's user part, a `password=` parameter): for a driver's messages,
    which may quote the URL."""
    written = re.search(r"//[^/@:]*:([^/@]*)@", postgres_url(name))
    return Redactor([password(name), written.group(1) if written else None])
