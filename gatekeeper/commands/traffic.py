"""`gatekeeper traffic`: traffic-file tools (`traffic record` is the live proxy's, gatekeeper/live/commands.py)."""

from __future__ import annotations


import click

from gatekeeper import exit_codes
from gatekeeper.cli_exit import fail


@click.group()
def traffic() -> None:
    """Traffic-file tools (docs/traffic-format.md)."""


@traffic.command("check")
@click.argument("path")
def traffic_check(path: str) -> None:
    """Validate a traffic file: every line, with file:line for the first bad one (exit 3)."""
    from collections import Counter

    from gatekeeper.traffic.format import iter_records

    counts = Counter((r.tenant, r.kind) for r in iter_records(path))
    tenants = Counter(t for t, _ in counts.elements())
    kinds = Counter(k for _, k in counts.elements())
    click.echo(f"{path}: {sum(counts.values())} requests; tenants: "
               + ", ".join(f"{t} {n}" for t, n in tenants.most_common()) + "; kinds: "
               + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))


@traffic.command("import")
@click.argument("input_path")
@click.option("--from", "source", type=click.Choice(["openai-batch"]), default="openai-batch", show_default=True,
              help="The format of INPUT_PATH: an OpenAI Batch API input file.")
@click.option("--responses", "responses_path", default=None, help="The batch's output file (answers become `response`).")
@click.option("--out", "out_path", required=True, help="The traffic file to write (atomically).")
def traffic_import(input_path: str, source: str, responses_path: str | None, out_path: str) -> None:
    """Convert a request log into the traffic format."""
    from gatekeeper.traffic.format import write_traffic
    from gatekeeper.traffic.importers import import_openai_batch

    records, skipped = import_openai_batch(input_path, responses_path)
    if not records:
        fail(f"{input_path}: no chat or completions request to import", exit_codes.USAGE)
    n = write_traffic(out_path, records)
    click.echo(f"imported {n} requests to {out_path}" + (f"; skipped {len(skipped)} line(s) for other endpoints"
                                                          if skipped else ""), err=True)
