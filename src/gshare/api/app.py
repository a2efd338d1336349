"""The app factory: one FastAPI app serving the API under /api/v1 and the built console at /."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, JSONResponse, Response
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from starlette.routing import Match

from gshare import __version__
from gshare.api import csp, errors
from gshare.api.middleware import (
    BodyLimit,
    ClientAddress,
    RequestMetrics,
    RetryConflicts,
    SecurityHeaders,
)
from gshare.audit.endpoints import router as audit_router
from gshare.capacity.endpoints import router as capacity_router
from gshare.clusters.callbacks import unchecked_internal_routes
from gshare.clusters.endpoints import router as clusters_router
from gshare.credits.endpoints import router as credits_router
from gshare.events.endpoints import router as events_router
from gshare.events.hub import Hub
from gshare.events.notify import AUTH_CHANNEL, Listener, fan_out
from gshare.events.relay import EVENTS_CHANNEL
from gshare.identity import passwords
from gshare.identity.endpoints import router as identity_router
from gshare.identity.permissions import Action
from gshare.identity.principals import PrincipalCache
from gshare.kit.clock import Clock, SystemClock
from gshare.kit.db import make_engine, make_sessionmaker, plain_url
from gshare.kit.errors import ServiceUnavailable
from gshare.kit.schema_version import current_revision, head_revision
from gshare.kit.settings import Settings
from gshare.kit.web import declare
from gshare.sessions.endpoints import router as sessions_router
from gshare.usage.endpoints import router as usage_router
from gshare.worker.endpoints import router as worker_router
from gshare.worker.health import Recorder
from gshare.worker.hooks import connect_hooks
from gshare.worker.loops import Worker, event_relay, worker_loops

log = logging.getLogger(__name__)


class UnmigratedDatabase(RuntimeError):
    pass


class NotMigrated(ServiceUnavailable):
    """The database schema is not the one this version needs (readiness check); run
    `gshare migrate`, which the chart's migration job does on install and upgrade. The
    message names both revisions."""

    code = "not_migrated"


async def check_schema(engine: AsyncEngine) -> None:
    """Refuse to serve unless the database is at the schema this code was written for."""
    current, head = await current_revision(engine), head_revision()
    if current != head:
        raise UnmigratedDatabase(
            f"the database schema is at {current or 'nothing (empty database)'}, "
            f"this version needs {head}: run `gshare migrate` first"
        )


def create_app(
    settings: Settings,
    *,
    database_url: str,
    clock: Clock | None = None,
    engine: AsyncEngine | None = None,
    run_worker: bool = False,
) -> FastAPI:
    passwords.configure(settings.password_hash_concurrency)
    connect_hooks()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_engine = engine is None
        app.state.engine = engine or make_engine(database_url)
        app.state.sessions = make_sessionmaker(app.state.engine)
        cache: PrincipalCache = app.state.principals
        hub = app.state.events = Hub(
            app.state.sessions, app.state.clock, recheck_seconds=settings.events_heartbeat_seconds
        )
        # The process's one LISTEN connection: sign-in changes and the relay's numbers.
        listener = Listener(
            plain_url(database_url),
            {
                AUTH_CHANNEL: fan_out(cache.invalidate, hub.access_changed),
                EVENTS_CHANNEL: hub.numbered,
            },
            on_connected=fan_out(cache.connection_changed, hub.connection_changed),
        )
        # `gshare up` runs the worker's loops beside the API; an API process alone still
        # runs the event relay, so its own changes go out at once.
        loops = (
            worker_loops(settings, app.state.sessions, app.state.clock)
            if run_worker
            else [event_relay(settings, app.state.sessions)]
        )
        worker = Worker(
            loops,
            listen_dsn=plain_url(database_url),
            health=Recorder(app.state.sessions, app.state.clock),
        )
        try:
            await check_schema(app.state.engine)
            await hub.start()
            await listener.start()
            worker.start()
            yield
        finally:
            await worker.stop()
            await hub.stop()
            await listener.stop()
            if own_engine:
                await app.state.engine.dispose()

    app = FastAPI(
        title="GShare API",
        version=__version__,
        summary="GPU sharing for interactive work: the control plane's API.",
        openapi_url="/api/v1/openapi.json",
        # The docs page loads Swagger UI from a CDN: off unless asked for. The spec stays served.
        docs_url="/api/v1/docs" if settings.api_docs else None,
        swagger_ui_oauth2_redirect_url=None,
        redoc_url=None,
        lifespan=lifespan,
        generate_unique_id_function=lambda route: route.name,
        # GShare exports no OpenTelemetry data; skip the per-request instrumentation checks.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.clock = clock or SystemClock()
    app.state.principals = PrincipalCache(ttl=timedelta(seconds=settings.auth_cache_seconds))
    errors.install(app)
    # Innermost: a request run again after a deadlock is one request to everything around it.
    app.add_middleware(RetryConflicts)
    # Next: it reads the route the router matched from the scope it shares.
    app.add_middleware(RequestMetrics)
    # Not FastAPI's max_body_size: Starlette's limiter answers in plain text, not GShare's JSON.
    app.add_middleware(BodyLimit)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(ClientAddress, trusted_proxies=settings.trusted_proxies)
    app.include_router(identity_router)
    app.include_router(audit_router)
    app.include_router(credits_router)
    app.include_router(clusters_router)
    app.include_router(capacity_router)
    app.include_router(sessions_router)
    app.include_router(usage_router)
    app.include_router(worker_router)
    app.include_router(events_router)
    if unchecked := unchecked_internal_routes(app.routes):
        # Their caller would be checked only after the request is parsed.
        raise RuntimeError(f"internal routes without a caller check: {unchecked}")
    _health_routes(app)
    _serve_console(app, settings.console_dir)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _health_routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["health"], **declare(Action.PUBLIC))
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], **declare(Action.PUBLIC, 503))
    async def readyz(request: Request) -> dict[str, str]:
        """The database is reachable and at the expected schema."""
        sessions: async_sessionmaker[AsyncSession] = request.app.state.sessions
        try:
            async with sessions() as db:
                await db.execute(text("SELECT 1"))
            await check_schema(request.app.state.engine)
        except UnmigratedDatabase as exc:
            raise NotMigrated(str(exc)) from None
        except Exception as exc:
            raise ServiceUnavailable(
                "The database is not reachable.", code="database_down"
            ) from exc
        return {"status": "ready"}


CONSOLE_PATH = "/{path:path}"


def _serve_console(app: FastAPI, console_dir: Path) -> None:
    """Serve the built single-page console; unknown non-API paths get index.html."""
    root = console_dir.resolve()

    @app.get(CONSOLE_PATH, include_in_schema=False)
    async def console(path: str, request: Request) -> Response:
        if path.startswith(("api/", "internal/")) or path in ("api", "internal"):
            allowed = _methods_of(app, request)
            if allowed:
                return errors.error_response(
                    405,
                    "method_not_allowed",
                    "This route does not take GET.",
                    {"allow": ", ".join(sorted(allowed))},
                )
            return errors.error_response(404, "not_found", "Not found.")
        index = root / "index.html"
        if not index.is_file():
            return JSONResponse(
                {
                    "error": {
                        "code": "console_not_built",
                        "message": "The console is not built: run `make console`.",
                    }
                },
                status_code=404,
                headers={csp.HEADER: csp.policy()},
            )
        candidate = _console_file(root, path)
        if candidate is None and path.startswith("assets/"):
            # A missing script or style is a 404, not the app's page served as one.
            return errors.error_response(404, "not_found", "Not found.")
        if candidate is not None:
            cache = (
                "public, max-age=31536000, immutable" if "/assets/" in f"/{path}" else "no-cache"
            )
            return FileResponse(
                candidate, headers={"cache-control": cache, csp.HEADER: csp.policy()}
            )
        return csp.index_response(index)


def _methods_of(app: FastAPI, request: Request) -> set[str]:
    """The methods the API routes take at this GET's path (it only reached the console's
    catch-all because none of them takes GET)."""
    methods: set[str] = set()
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        for route in app.router.routes:
            if getattr(route, "path", None) == CONSOLE_PATH:
                continue
            if route.matches(scope)[0] is Match.FULL:
                methods.add(method)
                break
    return methods


def _console_file(root: Path, path: str) -> Path | None:
    """The built file a path names, or None: the app's own routes get index.html. A path the
    file system cannot take (a NUL byte, a name too long) names no file either."""
    if not path or "\x00" in path:
        return None
    try:
        candidate = (root / path).resolve()
        found = candidate.is_relative_to(root) and candidate.is_file()
    except (OSError, ValueError):
        return None
    return candidate if found else None


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The spec, with every validation error shown in GShare's error shape and 413 on bodies."""
    if app.openapi_schema:
        return app.openapi_schema
    spec = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    error_ref = {"$ref": "#/components/schemas/ErrorBody"}
    for path_item in spec.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for status, response in responses.items():
                if status.startswith(("4", "5")):
                    response["content"] = {"application/json": {"schema": error_ref}}
            if "requestBody" in operation:
                # A body that is not UTF-8 cannot even be parsed: FastAPI answers 400.
                responses.setdefault(
                    "400",
                    {
                        "description": "Bad Request",
                        "content": {"application/json": {"schema": error_ref}},
                    },
                )
                responses["413"] = {
                    "description": "Request Entity Too Large",
                    "content": {"application/json": {"schema": error_ref}},
                }
    schemas = spec.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    app.openapi_schema = spec
    return spec
