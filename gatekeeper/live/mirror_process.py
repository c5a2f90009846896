"""The mirror process's entry point: the workers that drain the queue and the admin server,
until the proxy puts the sentinel or dies."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from gatekeeper.errors import GatekeeperError
from gatekeeper.live.admin import serve_admin
from gatekeeper.live.mirror import Counters, Mirror, MirrorConfig


def _watch_parent(parent: int) -> None:
    """Exit when the proxy process is gone (killed with SIGKILL, it cannot tell us)."""
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def mirror_main(cfg: MirrorConfig, q: Any, counters: Counters, parent: int) -> None:
    """The mirror process's entry point. It runs at a lower CPU priority than the proxy: on a
    busy host, mirroring is what waits, never the clients."""
    try:
        os.nice(10)
    except OSError:
        pass
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    mirror = Mirror(cfg)
    server = serve_admin(cfg, mirror, counters)
    counters.admin_port.value = server.server_address[1]
    workers = [threading.Thread(target=mirror.work, args=(q, counters.mirrored), daemon=True) for _ in range(cfg.workers)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    server.shutdown()
    try:
        mirror.store.close()
    except GatekeeperError as e:  # pairs the store could not take at the end: one line, no traceback
        print(f"gatekeeper shadow: {e}", file=sys.stderr, flush=True)
    counters.closed.value = 1  # the proxy's stop line: everything accounted for
