"""The project's small JSON services over HTTP: a FastAPI app, served by uvicorn in a background thread.

The reward service (rl/reward_service.py), the SFT model server (sft/serve.py) and the scripted OpenAI server
(simulated_openai.py) each build their routes on `json_app` and serve them with `ThreadedServer`:

    app = json_app(title, error_body, error_model)   FastAPI: pydantic request models, /openapi.json and /docs
    server = ThreadedServer(app, host, port)          binds now (port 0: any free port; OSError if taken)
    url = server.start()                              uvicorn in a daemon thread; returns once it accepts
    server.stop()                                     closes the port within ~0.2 s, in-flight requests too

Every request leaves one line on the `kernelvault.http` logger at INFO (method, path, status, seconds):
silent unless the caller configures logging (`rl serve` does; tests do not). Every error is a one-line JSON
body in the service's own shape (`error_body(status, message)`): an unknown route (404), a wrong method
(405), a malformed body (400, as the OpenAI API and vLLM answer it, with the first problem named), a body
over `max_body_bytes` (413), and any HTTPException a route raises.

What it does not do: TLS, streaming, and a graceful drain on stop (requests still running then are cut off,
unanswered; every client of these services retries transport errors).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOG = logging.getLogger("kernelvault.http")

CUT_OFF = "the server stopped"
DROPPED = "kernelvault.dropped"  # a scope key: the request's connection was closed unanswered

ErrorBody = Callable[[int, str], dict[str, Any]]


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str


class OpenAIError(BaseModel):
    """The OpenAI API's error body (`{"error": {"message", "type"}}`), which its clients parse."""

    error: OpenAIErrorDetail


_OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found",
                 405: "invalid_request_error", 429: "rate_limit_error"}  # fmt: skip


def openai_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "server_error")}}


def one_line(error: RequestValidationError) -> str:
    """The first problem of a rejected request, as `where: what` (`task.source: Field required`)."""
    problems = error.errors()
    if not problems:
        return "invalid request"
    first = problems[0]
    if first.get("type") == "json_invalid":
        return f"the body is not JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "body"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}".replace("\n", " ")


def json_app(title: str, error_body: ErrorBody, error_model: type[BaseModel], description: str = "",
             max_body_bytes: int | None = None) -> FastAPI:  # fmt: skip
    """A FastAPI app whose errors are one-line bodies of `error_model`'s shape, with the request log."""
    # "4XX" documents the one error shape for every client error; FastAPI then lists no 422 of its own.
    app = FastAPI(title=title, description=description,
                  responses={"4XX": {"model": error_model, "description": "a one-line error"}})  # fmt: skip

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        message, status = str(error.detail), error.status_code
        if message == HTTPStatus(status).phrase:  # raised by FastAPI itself, not by a route: say more
            message = {404: f"no route {request.method} {request.url.path}",
                       405: f"{request.method} is not allowed on {request.url.path}",
                       413: f"the body is over {max_body_bytes} bytes"}.get(status, message)  # fmt: skip
        return JSONResponse(error_body(status, message), status, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(400, one_line(error)), 400)

    if max_body_bytes is not None:
        app.add_middleware(BodyLimit, max_bytes=max_body_bytes, error_body=error_body)
    app.add_middleware(RequestLog)  # added last: outermost, so it times and logs every answer
    return app


class RequestLog:
    """One log line per request: `POST /v1/jobs 202 0.004s` (status 0: the connection closed unanswered)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def remember_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, remember_status)
        except asyncio.CancelledError as error:
            # Cut off by `ThreadedServer.stop`: the request ends here, quietly (uvicorn would log a
            # cancelled request as a failed application). Any other cancellation goes on.
            if error.args != (CUT_OFF,):
                raise
        finally:
            query = scope.get("query_string", b"").decode("latin-1")
            path = scope["path"] + (f"?{query}" if query else "")
            answered = 0 if scope.get(DROPPED) else status
            LOG.info("%s %s %d %.3fs", scope["method"], path, answered, time.perf_counter() - started)


class BodyLimit:
    """A body over `max_bytes` is a 413 in the service's error shape: a declared Content-Length before any byte
    is read, a chunked body once its bytes pass the limit.

    Not FastAPI's `max_body_size`: Starlette answers that one with a plain-text 413 of its own.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, error_body: ErrorBody) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.error_body = error_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            body = self.error_body(413, f"the body is over {self.max_bytes} bytes")
            await JSONResponse(body, 413)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:  # FastAPI passes a middleware's HTTPException on to the app's handler
                raise HTTPException(413)
            return message

        await self.app(scope, counted, send)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free one), reusable at once after a stop (SO_REUSEADDR)."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family)


class ThreadedServer:
    """uvicorn serving `app` from a daemon thread, embedded as its maintainers describe: the server runs on the
    thread's own loop, `started` is awaited, `should_exit` stops it (uvicorn installs no signal handlers off the
    main thread, so the caller's Ctrl-C handling stays its own).

    The socket is bound in the constructor, so a taken port raises OSError in the caller and port 0 reports the
    real port before anything runs. `app.state.server` is this object (for `drop`).
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        self.socket = bind(host, port)
        self.host, self.port = self.socket.getsockname()[:2]
        app.state.server = self
        # h11 and asyncio, never httptools/uvloop where installed: the same server in every environment.
        # log_config=None leaves logging to the caller; the request log above replaces uvicorn's access log.
        config = uvicorn.Config(app, http="h11", loop="asyncio", lifespan="off", log_config=None,
                                access_log=False)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name=f"http:{self.port}",
                                       daemon=True)  # fmt: skip

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.server.serve(sockets=[self.socket])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> str:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.socket.close()
                raise RuntimeError(f"the HTTP server on {self.url} did not start")
            time.sleep(0.002)
        return self.url

    def stop(self) -> None:
        """Stops within about 0.2 s (uvicorn's tick and its pause before closing connections)."""
        # Requests still running (a long poll, a slow answer) are cut off: their connections are closed now,
        # and force_exit keeps uvicorn from waiting for them.
        self.server.force_exit = True
        self.server.should_exit = True
        if self.loop is not None and self.thread.is_alive():
            try:
                self.loop.call_soon_threadsafe(self._cut_off)
            except RuntimeError:  # the loop has just finished
                pass
            self.thread.join()
        self.socket.close()

    def _cut_off(self) -> None:
        """Closes every connection and cancels every request still running (on the server's loop)."""
        for connection in list(self.server.server_state.connections):
            connection.transport.close()
        for task in list(self.server.server_state.tasks):
            task.cancel(CUT_OFF)

    async def drop(self, request: Request) -> None:
        """Closes the request's TCP connection without an answer (an injected fault); returns once uvicorn has
        seen it go, so that what the route returns next is never sent. uvicorn keeps its open connections in
        `server_state.connections`; the request's client address names one of them."""
        request.scope[DROPPED] = True
        for connection in list(self.server.server_state.connections):
            if connection.client == tuple(request.scope["client"]):
                connection.transport.close()
        while (await request.receive())["type"] != "http.disconnect":
            pass
