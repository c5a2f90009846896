"""The live commands: `gatekeeper traffic record`, `gatekeeper shadow` and `gatekeeper pairs
export|import` (registered on the main CLI in `cli.py`; imported only when used)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import os
import sys
import time
from typing import Any

import click

from gatekeeper.cli_types import Finite

from gatekeeper.errors import ConfigError
from gatekeeper.live.verdict_command import verdict


def _addr(value: str, what: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{what} must be HOST:PORT (got {value!r})")
    return host, int(port)


def _url(value: str, what: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise click.BadParameter(f"{what} must be an http(s) URL (got {value!r})")
    return value.rstrip("/")


def _key(env: str | None) -> str | None:
    if env is None:
        return None
    if env not in os.environ:
        raise ConfigError(f"the environment variable {env} (the API key) is not set")
    return os.environ[env]


def _patterns(redact: tuple[str, ...], no_default: bool) -> tuple[str, ...]:
    import re

    from gatekeeper.live.redaction import PII_DEFAULTS

    for p in redact:
        try:
            re.compile(p)
        except re.error as e:
            raise click.BadParameter(f"--redact {p!r} is not a regular expression ({e})") from None
    return (() if no_default else PII_DEFAULTS) + redact


MIRROR_STOP_S = 10.0  # how long a stopping proxy waits for its mirror to finish the queue and commit

_REDACT = [click.option("--tenant-header", default=None, metavar="NAME", help="Request header naming the tenant."),
           click.option("--redact", multiple=True, metavar="REGEX",
                        help="Also replace matches of REGEX (PII) with <redacted> (repeatable)."),
           click.option("--no-default-pii", is_flag=True, help="Do not apply the built-in email and phone-number rules.")]


def _with(options: list[Any], f: Any) -> Any:
    for o in reversed(options):
        f = o(f)
    return f


@click.command("record")
@click.option("--upstream", required=True, help="The OpenAI-compatible server to pass traffic to.")
@click.option("--listen", default="127.0.0.1:8100", show_default=True, help="HOST:PORT to accept clients on (port 0: any).")
@click.option("--out", "out_path", required=True, help="Traffic file (JSONL) to append records to.")
@click.option("--rotate-mb", type=Finite(min=0, max=1_000_000), default=0, show_default=True,
              help="Start a new segment when the file reaches this size (0: never).")
@click.option("--timeout", type=Finite(min=1, max=86400), default=600, show_default=True, help="Upstream request timeout (s).")
def record(upstream: str, listen: str, out_path: str, rotate_mb: float, timeout: float, tenant_header: str | None,
           redact: tuple[str, ...], no_default_pii: bool) -> None:
    """A pass-through proxy that records chat/completions traffic in the traffic format
    (docs/traffic-format.md). Authorization and other headers are never written; secret-named
    JSON keys and secret-shaped text are masked; emails, phone numbers and --redact patterns
    become <redacted>. Streaming passes through chunk by chunk."""
    from gatekeeper.live.proxy import record_app, serve
    from gatekeeper.live.recorder import TrafficWriter
    from gatekeeper.live.redaction import BodyRedactor

    up = _url(upstream, "--upstream")
    host, port = _addr(listen, "--listen")
    redactor = BodyRedactor(_patterns(redact, no_default_pii))  # every option checked before a file is opened
    writer = TrafficWriter(out_path, int(rotate_mb * 2**20))
    app = record_app(up, writer, tenant_header, redactor, timeout)
    try:
        serve(app, host, port, lambda url: click.echo(f"recording: listening on {url} → {up}; writing {out_path}", err=True))
    finally:
        writer.close()
        click.echo(f"recorded {writer.written} request(s) to {out_path}", err=True)


record = _with(_REDACT, record)


@click.group("shadow", invoke_without_command=True, subcommand_metavar="[verdict --store STORE]")
@click.pass_context
@click.option("--primary", default=None, help="The production server clients are answered by (proxy mode).")
@click.option("--shadow", "shadow_url", default=None, help="The candidate that mirrored requests go to. [required]")
@click.option("--reference-replica", "replicas", multiple=True,
              help="A replica of the reference for the noise floor (twin); in --sink mode, the reference itself "
                   "(once: it answers twice; twice: one answer each).")
@click.option("--sink", is_flag=True, help="Mirror-sink mode: accept requests a gateway mirrors (no primary).")
@click.option("--sample", type=Finite(0, 1), default=0.05, show_default=True, help="Share of requests mirrored.")
@click.option("--store", "store_path", default=None,
              help="The pair store to commit pairs to: a SQLite file, or a postgresql:// URL shared by many proxies. "
                   "[required]")
@click.option("--replica", default=None, metavar="NAME",
              help="This proxy's name: its pairs carry it in a shared (PostgreSQL) store, its /metrics its label. "
                   "[HOST:PID]")
@click.option("--flush-pairs", type=click.IntRange(min=1, max=100_000), default=32, show_default=True,
              help="PostgreSQL store: pairs committed per batch (a SIGKILL loses at most one unflushed batch).")
@click.option("--flush-interval", type=Finite(min=0.01, max=3600), default=1.0, show_default=True,
              help="PostgreSQL store: seconds a pair waits at most for its batch to be committed.")
@click.option("--max-pending", type=click.IntRange(min=1, max=10_000_000), default=10_000, show_default=True,
              help="PostgreSQL store: pairs held at most while commits fail; beyond, the oldest are dropped (counted).")
@click.option("--listen", default="127.0.0.1:8100", show_default=True, help="HOST:PORT clients (or the gateway) send to.")
@click.option("--admin", default="127.0.0.1:8101", show_default=True, help="HOST:PORT for /verdict and /metrics.")
@click.option("--queue", "queue_size", type=click.IntRange(min=1, max=1_000_000), default=256, show_default=True,
              help="Mirror copies waiting at most; beyond, copies are dropped (counted).")
@click.option("--workers", type=click.IntRange(min=1, max=1024), default=4, show_default=True, help="Concurrent mirrored requests.")
@click.option("--policy", default="gates/default.yaml", show_default=True, help="Policy whose gate-5 settings judge the pairs.")
@click.option("--min-pairs", type=click.IntRange(min=1), default=None, help="Judged pairs before PROMOTE. [the stage budgets]")
@click.option("--shadow-model", default="", help="Model id for the shadow's requests. [the request's own]")
@click.option("--shadow-api-key-env", default=None, metavar="NAME", help="Environment variable with the shadow's API key.")
@click.option("--timeout", type=Finite(min=1, max=86400), default=120, show_default=True, help="Per mirrored request (s).")
@click.option("--session-header", default=None, metavar="NAME",
              help="Request header naming the client's session (long-session SQDR in /verdict and /metrics).")
def shadow(ctx: click.Context, primary: str | None, shadow_url: str | None, replicas: tuple[str, ...], sink: bool,
           sample: float, store_path: str | None, replica: str | None, flush_pairs: int, flush_interval: float,
           max_pending: int, listen: str, admin: str, queue_size: int,
           workers: int, policy: str, min_pairs: int | None,
           shadow_model: str, shadow_api_key_env: str | None, timeout: float, session_header: str | None,
           tenant_header: str | None,
           redact: tuple[str, ...], no_default_pii: bool) -> None:
    """Answer clients from the primary exactly as if the proxy were not there, mirror a sampled
    share to the shadow (and to a reference replica, the noise floor) through a bounded queue,
    commit each pair to the store, and serve /verdict and /metrics (docs/shadow-live.md).
    `gatekeeper shadow verdict --store STORE` prints the verdict over a store, from no proxy."""
    if ctx.invoked_subcommand is not None:
        given = [p.opts[0] for p in ctx.command.params if ctx.get_parameter_source(p.name or "")
                 not in (click.core.ParameterSource.DEFAULT, None)]
        if given:
            raise click.UsageError(f"{', '.join(given)} before `{ctx.invoked_subcommand}` belong to the proxy; "
                                   f"give `{ctx.invoked_subcommand}` its own options after its name")
        return
    for value, flag in ((shadow_url, "--shadow"), (store_path, "--store")):
        if value is None:
            raise click.UsageError(f"Missing option '{flag}'.")
    assert shadow_url is not None and store_path is not None
    from gatekeeper.live.policy import shadow_settings
    from gatekeeper.live.mirror import Counters, MirrorConfig, Upstream, default_replica
    from gatekeeper.live.mirror_process import mirror_main
    from gatekeeper.live.proxy import serve, shadow_app, sink_app
    from gatekeeper.traffic.store import Batching, open_store, shown

    if sink == bool(primary):
        raise click.UsageError("give --primary (proxy mode) or --sink (mirror-sink mode), not both or neither")
    if sink and not replicas:
        raise click.UsageError("--sink needs --reference-replica: the reference's answers come from it")
    host, port = _addr(listen, "--listen")
    admin_host, admin_port = _addr(admin, "--admin")
    if max_pending < flush_pairs:
        raise click.BadParameter(f"--max-pending ({max_pending}) must hold at least one batch (--flush-pairs {flush_pairs})")
    replica = replica or default_replica()  # this (the proxy's) process id: one name for the store and /metrics
    primary_url = None if sink else _url(primary or "", "--primary")
    cfg = MirrorConfig(store=store_path, shadow=Upstream(_url(shadow_url, "--shadow"), shadow_model, _key(shadow_api_key_env)),
                       replicas=tuple(Upstream(_url(r, "--reference-replica")) for r in replicas), sink=sink, tenant_header=tenant_header,
                       session_header=session_header, pii=_patterns(redact, no_default_pii), workers=workers, timeout_s=timeout,
                       admin_host=admin_host, admin_port=admin_port, policy=policy, min_pairs=min_pairs, replica=replica,
                       batching=Batching(flush_pairs, flush_interval, max_pending))
    shadow_settings(policy)  # a bad policy fails here, before anything listens
    open_store(store_path, replica=replica).close()  # and a store that is not one (the last check: it creates the store)
    fork = mp.get_context("fork")
    q = fork.Queue(maxsize=queue_size)
    counters = Counters()
    child = fork.Process(target=mirror_main, args=(cfg, q, counters, os.getpid()), name="gatekeeper-mirror", daemon=True)
    child.start()
    deadline = time.monotonic() + 30
    while counters.admin_port.value == 0 and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if counters.admin_port.value == 0:
        raise ConfigError(f"the mirror process did not start (admin address {admin}: is it in use?)")
    admin_url = f"http://{admin_host}:{counters.admin_port.value}"
    app = sink_app(sample, q, counters) if sink else shadow_app(primary_url or "", sample, q, counters)

    def ready(url: str) -> None:
        counters.listening.value = 1  # /readyz: 200 from now on
        what = "mirror sink" if sink else f"shadow proxy → {primary}"
        click.echo(f"{what}: listening on {url}; mirroring {sample:.0%} to {shadow_url}; store {shown(store_path)}; "
                   f"admin {admin_url} (/verdict, /metrics, /healthz, /readyz)", err=True)

    try:
        serve(app, host, port, ready)
    finally:
        counters.listening.value = 0  # /readyz: 503 while the mirror drains
        try:
            q.put_nowait(None)  # the mirror's sentinel; a full queue (a hung shadow) is not waited for
        except queue.Full:
            pass
        child.join(timeout=MIRROR_STOP_S)
        if child.is_alive():
            child.terminate()
        q.cancel_join_thread()  # copies still buffered for a mirror that is gone are dropped, not waited for
        line = (f"shadow: {counters.forwarded.value} forwarded, {counters.sampled.value} sampled, "
                f"{counters.dropped.value} dropped")
        if not counters.closed.value:  # stopped before it finished: what it had not done is lost, and said
            unfinished = counters.sampled.value - counters.dropped.value - counters.mirrored.value
            line += (f"; the mirror had not finished {MIRROR_STOP_S:g} s after the stop (a slow or hung shadow, or "
                     f"store) and was stopped: {unfinished} cop(ies) not mirrored, and the pairs it had not "
                     f"committed yet, are lost")
        click.echo(line, err=True)


shadow = _with(_REDACT, shadow)
shadow.add_command(verdict)


@click.group("pairs")
def pairs() -> None:
    """Pair-store tools: export a store as a traffic file, import such files into one store."""


@pairs.command("export")
@click.argument("store_path", metavar="STORE")
@click.option("--out", "out_path", required=True, help="The traffic file to write (atomically), with `pair` keys.")
def pairs_export(store_path: str, out_path: str) -> None:
    """Write every pair of a store (a SQLite file or a postgresql:// URL) to a traffic file; the
    store is only read."""
    from gatekeeper.traffic.store import open_store

    with open_store(store_path, readonly=True) as store:
        n = store.export(out_path)
    click.echo(f"exported {n} pair(s) to {out_path}")


@pairs.command("import")
@click.argument("paths", nargs=-1, required=True)
@click.option("--store", "store_path", required=True,
              help="The store to add the pairs to, a SQLite file or a postgresql:// URL (created if absent).")
def pairs_import(paths: tuple[str, ...], store_path: str) -> None:
    """Merge exported pair files (from several proxy hosts) into one store; ids already held are
    skipped. All or nothing: a bad line anywhere leaves the store as it was (and creates none)."""
    from gatekeeper.traffic.store import import_pairs, shown

    counts, total = import_pairs(store_path, paths)
    for path, (added, held) in zip(paths, counts):
        click.echo(f"{path}: {added} pair(s) added, {held} already held")
    click.echo(f"{shown(store_path)}: {total} pair(s)")
    sys.exit(0)

