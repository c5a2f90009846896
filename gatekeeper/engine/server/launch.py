"""Start the bundled server: build the engine from EngineArgs, log its execution path, run uvicorn.

As vLLM does, the port is bound first (so a port in use fails at once, before the model loads)
but not listened on until the engine is ready: connections are refused while the model loads,
and /health answers 200 from the first accepted connection on.
"""

from __future__ import annotations

import logging
import socket
import sys

from gatekeeper.engine.engine_args import EngineArgs

log = logging.getLogger("gatekeeper.server")


class ServerStartupError(Exception):
    """The HTTP side could not start (address in use, unknown host); one line for the user."""


def bind_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, not yet listening."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as e:
        raise ServerStartupError(f"cannot bind {host}:{port}: {e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock


def configure_logging(level: str = "info") -> None:
    """One format for our lines on stderr; uvicorn keeps its own."""
    logging.basicConfig(level=level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")


def serve(args: EngineArgs, host: str, port: int, api_key: str | None = None, log_level: str = "info") -> None:
    """Load the engine and serve until interrupted. EngineError subclasses propagate unchanged
    (the CLI turns them into one line); a port that cannot be bound exits with status 1."""
    import uvicorn

    from gatekeeper.engine.async_engine import AsyncEngine
    from gatekeeper.engine.server.app import build_app

    configure_logging(log_level)
    sock = bind_socket(host, port)
    engine = AsyncEngine.from_args(args)
    for line in engine.startup_lines():
        if line.startswith("WARNING: "):
            log.warning(line.removeprefix("WARNING: "))
        else:
            log.info(line)
    app = build_app(engine, api_key=api_key)
    log.info("serving %s on http://%s:%d%s", engine.model_name, host, port, " (API key required for /v1)" if api_key else "")
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=5, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
