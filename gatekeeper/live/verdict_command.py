"""`gatekeeper shadow verdict --store STORE`: the live verdict over a pair store, from no proxy.

Stateless and read-only: it opens the store read-only (a SQLite file or a `postgresql://` URL
shared by many `gatekeeper shadow` replicas), judges every stored pair with the policy's gate-5
settings, and prints the JSON any replica's `GET /verdict` gives over the same pairs (`--json`;
without it, a few readable lines) — without the `mirror` counters, which are each replica's own.
A ROLLBACK a replica latched is shown as latched; a ROLLBACK no replica has latched yet shows the
entry a replica would latch, with `at` null. Nothing is written: no latch, no slice order, no
measure cache.

It reads the measures the replicas keep in the store's cache (of this gatekeeper's measures
version) and measures only the pairs no replica measured yet (`judgement.LiveJudgement` over a
read-only store); `--recompute` measures every pair afresh from its stored answers
(`verdict.judge_store`). Both feed the analysis the pairs in the store's order (`seq`, the order
batches were committed), so they give the same JSON.

It exits with `gatekeeper run`'s verdict codes (`exit_codes.FOR_VERDICT`): 0 PROMOTE, 1
ROLLBACK, 2 HOLD — so a CI step or a cron job can gate on it:

    $ gatekeeper shadow verdict --store postgresql://gk@db/shadow --min-pairs 400
    HOLD  collecting: 312 of 400 pairs judged
      stage all · 312 pairs stored, 312 judged (400 needed) · score 99.1
      store postgresql://***@db/shadow
    $ echo $?
    2

A store that cannot be read (no such file, not a store, an unreachable server, a refused
login) is one line on stderr and exit 3, the URL's password masked (with `--json`, also a
`gatekeeper.error/1` object on stdout, as `gatekeeper run --json` prints).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from gatekeeper import exit_codes
from gatekeeper.cli_exit import json_errors


@click.command("verdict")
@click.option("--store", "store_path", required=True,
              help="The pair store to judge: a SQLite file, or a postgresql:// URL shared by many proxies.")
@click.option("--policy", default="gates/default.yaml", show_default=True,
              help="Policy whose gate-5 settings judge the pairs (the replicas' --policy).")
@click.option("--min-pairs", type=click.IntRange(min=1), default=None,
              help="Judged pairs before PROMOTE (the replicas' --min-pairs). [the stage budgets]")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict JSON (as /verdict gives it) instead.")
@click.option("--recompute", is_flag=True,
              help="Measure every stored pair afresh instead of reading the measures the replicas cached (same verdict).")
def verdict(store_path: str, policy: str, min_pairs: int | None, as_json: bool, recompute: bool) -> None:
    """Print the live verdict over a pair store, as every replica's /verdict gives it over the
    same pairs, read-only; exit 0 PROMOTE, 1 ROLLBACK, 2 HOLD (3: the store cannot be read)."""
    if as_json:
        json_errors()  # an end without a verdict prints gatekeeper.error/1 on stdout, as `run --json` does
    from gatekeeper.live.judgement import LiveJudgement
    from gatekeeper.live.verdict import judge_store
    from gatekeeper.live.policy import shadow_settings
    from gatekeeper.traffic.store import open_store, shown

    settings = shadow_settings(policy)
    with open_store(store_path, readonly=True) as store:
        data = judge_store(store, settings, min_pairs, sticky=True) if recompute else \
            LiveJudgement(store, settings, min_pairs).judge()
    click.echo(json.dumps(data, indent=2) if as_json else readable(data, shown(store_path)))
    sys.exit(exit_codes.FOR_VERDICT[str(data["verdict"])])


def readable(data: dict[str, Any], store: str) -> str:
    """The verdict JSON as a few lines: the verdict and its reason, the counts, what fired."""
    score = "no score yet" if data.get("score") is None else f"score {data['score']:g}"
    lines = [f"{data['verdict']}  {data['reason']}",
             f"  stage {data['stage']} · {data['pairs']} pairs stored, {data['judged']} judged "
             f"({data['min_pairs']} needed) · {score}"]
    for f in data.get("fired", []):
        lines.append(f"  fired: {f['measure']} in {f['slice']} (candidate {_rate(f['candidate'])}, twin "
                     f"{_rate(f['twin'])}) after {f['after_pairs']} pairs")
    latch = data.get("latched")
    if latch is not None:
        lines.append("  latched: " + ("not yet (no replica has looked since)" if latch.get("at") is None
                                      else f"after {latch['judged']} judged pairs; POST /verdict/reset on a replica's "
                                           "admin address clears it"))
    lines.append(f"  store {store}")
    return "\n".join(lines)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"
