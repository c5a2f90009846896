"""The FastAPI app: routes, API-key check and the error handlers that keep every bad request a 4xx.

`build_app(engine)` takes a started engine (see launch.py); nothing here loads models. Every
handler answers OpenAI-shaped errors, never a traceback: malformed JSON and wrong types are
pydantic validation errors (400), the engine's RequestError is a 400, a dead engine a 503, a
request whose engine step failed (the engine serving on) a 500.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from contextlib import asynccontextmanager
from typing import Any
from collections.abc import AsyncIterator, Awaitable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import gatekeeper
from gatekeeper.engine.errors import EngineDeadError, EngineError, RequestError
from gatekeeper.engine.grammar import BACKEND
from gatekeeper.engine.server import sse
from gatekeeper.engine.server.errors import ApiError, error_response
from gatekeeper.engine.server.metrics import CONTENT_TYPE, ServerMetrics
from gatekeeper.engine.server.protocol import (
    ChatCompletionRequest, CompletionRequest, DetokenizeRequest, TokenizeRequest,
)
from gatekeeper.engine.server.serving import Serving
from gatekeeper.engine.server.serving_chat import ChatServing
from gatekeeper.engine.server.serving_completion import CompletionServing

log = logging.getLogger("gatekeeper.server")


class NanJSONResponse(JSONResponse):
    """JSON that may carry NaN/Infinity: a broken engine's logprobs must reach the gate, not 500."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, allow_nan=True, separators=(",", ":")).encode("utf-8")


_FIELDS = {name for model in (ChatCompletionRequest, CompletionRequest, TokenizeRequest, DetokenizeRequest)
           for name in model.model_fields}


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    parts, param = [], None
    for err in exc.errors():
        loc = [str(x) for x in err.get("loc", ()) if x != "body"]
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        first_word = msg.split(" ", 1)[0]
        if not loc and first_word in _FIELDS:  # a cross-field check names its field first
            param = param or first_word
        if err.get("type") == "json_invalid":
            msg = f"the request body is not valid JSON: {err.get('ctx', {}).get('error', msg)}"
            loc = []
        param = param or (".".join(loc) or None)
        parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return "; ".join(parts[:5]) or "invalid request", param


async def _with_cancellation(request: Request, work: Awaitable[Any]) -> Any:
    """Run a non-streaming handler, cancelling it (and so aborting its request) if the client leaves."""
    task = asyncio.ensure_future(work)

    async def disconnected() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return Response(status_code=499)
    return task.result()


async def _guard_stream(stream: AsyncIterator[str]) -> AsyncIterator[str]:
    """An error after the stream started becomes an error event, as vLLM sends it."""
    try:
        async for item in stream:
            yield item
    except ApiError as e:
        yield sse.event(e.body())
        yield sse.DONE
    except Exception as e:  # the engine died mid-stream: say so in-band, headers are already sent
        log.exception("stream failed")
        yield sse.event(ApiError(f"{type(e).__name__}: {e}", 500).body())
        yield sse.DONE


class _ApiKeyMiddleware:
    """`/v1/*` needs `Authorization: Bearer KEY`; health, metrics, version and tokenize stay open.
    Plain ASGI (not BaseHTTPMiddleware), so streaming and disconnect detection pass through untouched."""

    def __init__(self, app: Any, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1"):
            headers = dict(scope.get("headers") or [])
            if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
                response = ApiError("Incorrect or missing API key (send Authorization: Bearer KEY).", 401).response()
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def cache_config(engine: Any) -> dict[str, str] | None:
    """The labels of `vllm:cache_config_info` (vLLM's names) for an engine built from EngineArgs."""
    args = getattr(engine, "args", None)
    if args is None:
        return None
    return {"block_size": str(args.block_size), "cache_dtype": args.cache_dtype,
            "enable_prefix_caching": str(bool(args.prefix_caching)), "num_gpu_blocks": str(args.num_kv_blocks)}


def build_app(engine: Any, api_key: str | None = None) -> FastAPI:
    """The OpenAI-compatible app over a started engine."""
    metrics = ServerMetrics(engine.model_name, engine.stats, cache_config(engine))
    serving = Serving(engine, metrics)
    chat = ChatServing(serving)
    completions = CompletionServing(serving)
    created = int(time.time())

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await engine.shutdown()

    app = FastAPI(title="gatekeeper engine", version=gatekeeper.__version__, lifespan=lifespan)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        message, param = _validation_message(exc)
        return ApiError(message, 400, param).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return error_response(exc.status_code, str(exc.detail) if exc.detail else None)

    @app.exception_handler(EngineError)
    async def _engine(request: Request, exc: EngineError) -> Response:
        if isinstance(exc, RequestError):
            return ApiError(str(exc), 400, getattr(exc, "param", None)).response()
        log.error("engine error: %s", exc)
        # A dead engine fails every request until restarted (503); a step that failed only its
        # own requests is an internal error of this request (500), and the server keeps serving.
        return ApiError(str(exc), 503 if isinstance(exc, EngineDeadError) else 500).response()

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> Response:
        log.exception("internal error on %s", request.url.path)
        return ApiError(f"internal error: {type(exc).__name__}", 500).response()

    if api_key is not None:
        app.add_middleware(_ApiKeyMiddleware, api_key=api_key)

    @app.get("/health")
    async def health() -> Response:
        try:
            engine.check_health()
        except EngineError as e:
            return ApiError(str(e), 503).response()
        return Response(status_code=200)

    app.add_api_route("/ping", health, methods=["GET", "POST"])  # vLLM's SageMaker-style alias

    @app.get("/version")
    async def version() -> dict:
        return {"version": gatekeeper.__version__, "structured_outputs_backend": BACKEND}

    @app.get("/v1/models")
    async def models() -> dict:
        card = {"id": serving.model_name, "object": "model", "created": created, "owned_by": "gatekeeper",
                "root": engine.args.model, "parent": None, "max_model_len": serving.max_model_len, "permission": []}
        return {"object": "list", "data": [card]}

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    async def _respond(request: Request, result: Awaitable[Any], stream: bool) -> Response:
        out = await _with_cancellation(request, result)
        if isinstance(out, Response):  # the client left before the first token
            return out
        if stream:
            return StreamingResponse(_guard_stream(out), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        return NanJSONResponse(out)

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
        return await _respond(request, chat.create(body), body.stream)

    @app.post("/v1/completions")
    async def text_completions(body: CompletionRequest, request: Request) -> Response:
        return await _respond(request, completions.create(body), body.stream)

    @app.post("/tokenize")
    async def tokenize(body: TokenizeRequest) -> dict:
        serving.check_model(body.model)
        tok = serving.tokenizer
        if body.messages is not None:
            tools = [t.model_dump(exclude_none=True) for t in body.tools] if body.tools else None
            text = tok.apply_chat_template([m.template_dict() for m in body.messages], tools=tools,
                                           add_generation_prompt=body.add_generation_prompt)
            ids = tok.encode(text)
        else:
            ids = tok.encode(body.prompt or "", add_special_tokens=body.add_special_tokens)
        return {"count": len(ids), "max_model_len": serving.max_model_len, "tokens": ids,
                "token_strs": [tok.id_to_token(i) for i in ids]}

    @app.post("/detokenize")
    async def detokenize(body: DetokenizeRequest) -> dict:
        serving.check_model(body.model)
        serving.check_token_ids(body.tokens)
        return {"prompt": serving.tokenizer.decode(body.tokens)}

    return app
