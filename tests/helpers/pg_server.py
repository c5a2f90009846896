"""A throwaway PostgreSQL server for the pair-store tests: `initdb` in a temporary directory,
`pg_ctl start` on a free loopback port with its unix socket in that directory, password login
over TCP (so a wrong password is refused as in production), `halt()` and `resume()` for an
outage (the data kept, the port the same), and `stop()` that stops it and removes the
directory. PostgreSQL refuses to run as root, so as root (CI) every server command runs as the
`postgres` user (`runuser`), in a directory that user owns.

`find_binaries()` is None where no PostgreSQL 15+ binaries exist (the tests then skip, saying so);
the Debian package puts them in /usr/lib/postgresql/N/bin, off the PATH.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

USER, PASSWORD = "gk_admin", "s3cret-pw!"


def find_binaries() -> Path | None:
    """The directory holding initdb and pg_ctl, or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running server: `url(db)` for a database on it, `admin()` a superuser connection."""

    bin: Path
    root: Path
    port: int

    def url(self, db: str, user: str = USER, password: str = PASSWORD) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{db}"

    def admin(self, db: str = "postgres"):  # noqa: ANN201 — a psycopg connection
        import psycopg

        return psycopg.connect(self.url(db), autocommit=True)

    def create_database(self, name: str) -> str:
        """A fresh, empty database; its URL."""
        with self.admin() as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def halt(self) -> None:
        """Stop the server, keeping its data: clients are cut off (an outage) until `resume`."""
        _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"])

    def resume(self) -> None:
        """Start the halted server again, on the same port with the same data."""
        _pg_ctl_start(self.bin, self.root, self.port)

    def stop(self) -> None:
        """Stop the server (fast: nothing here needs a clean checkpoint) and remove its directory."""
        try:
            _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"],
                         check=False)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _as_postgres(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)


def _pg_ctl_start(bin_dir: Path, root: Path, port: int) -> None:
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
    _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-o", opts, "-l", str(root / "log"), "-w",
                  "-t", "60", "start"])


def start(bin_dir: Path) -> PgServer:
    """initdb + pg_ctl start in a new temporary directory; the directory is removed again if
    the server does not come up."""
    root = Path(tempfile.mkdtemp(prefix="gk-pg-"))
    try:
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(root, pw.pw_uid, pw.pw_gid)
        (root / "pw").write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            os.chown(root / "pw", pw.pw_uid, pw.pw_gid)
        _as_postgres([str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", USER, f"--pwfile={root / 'pw'}",
                      "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"])
        port = _free_port()
        _pg_ctl_start(bin_dir, root, port)
    except BaseException as e:
        log = (root / "log").read_text() if (root / "log").is_file() else ""
        if (root / "data" / "postmaster.pid").exists():  # started, then failed (a timeout): stopped before removal
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "stop"], check=False)
        shutil.rmtree(root, ignore_errors=True)
        if isinstance(e, subprocess.CalledProcessError):
            raise RuntimeError(f"PostgreSQL did not start: {e.stderr or e.stdout}\n{log}") from None
        raise
    return PgServer(bin_dir, root, port)
