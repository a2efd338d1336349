"""Fuzzing from the spec: every operation in /api/v1/openapi.json, called by a real API process with
generated requests, anonymously, as a member and as the super admin. Any 5xx, undocumented status,
content type or response body that does not match its schema fails the test."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.builders import PASSWORD, Builder
from tests.processes import start_api, stop

# Small enough for a few minutes on two cores; GSHARE_FUZZ_EXAMPLES raises it for a deeper run.
EXAMPLES = int(os.environ.get("GSHARE_FUZZ_EXAMPLES", "12"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run, so CI is reproducible
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: the first failing request is enough
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)
# Ending the caller's own sign-in would leave the rest of its run anonymous; it runs last.
LAST = ("POST", "/api/v1/auth/logout")
# A stream answers for minutes by design; its inputs are tested in tests/events/test_stream.py.
STREAMS = {("GET", "/api/v1/events")}


@dataclass
class Role:
    name: str
    headers: dict[str, str] = field(default_factory=dict)


def _signed_in(base: str, name: str, email: str) -> Role:
    response = httpx.post(f"{base}/api/v1/auth/login", json={"email": email, "password": PASSWORD})
    assert response.status_code == 200, response.text
    cookie = "; ".join(f"{k}={v}" for k, v in response.cookies.items())
    return Role(name, {"Cookie": cookie, "X-CSRF-Token": response.json()["csrf_token"]})


def _operations(schema: schemathesis.BaseSchema) -> Iterator[APIOperation]:
    operations = []
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]
        operations.append(operation)
    operations.sort(key=lambda op: ((op.method.upper(), op.path) == LAST, op.path, op.method))
    yield from operations


def _fuzz(operation: APIOperation, role: Role, base: str, http: requests.Session) -> str | None:
    """The first failing request's report, or None when every example passed."""

    @FUZZ_SETTINGS
    @given(
        operation.as_strategy(GenerationMode.POSITIVE)
        | operation.as_strategy(GenerationMode.NEGATIVE)
    )
    def run(case: Case) -> None:
        case.call_and_validate(
            base_url=base, session=http, headers=dict(role.headers), checks=CHECKS, timeout=30
        )

    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # Schemathesis reports a group of failures
        return f"{role.name}: {operation.method.upper()} {operation.path}\n{exc}"
    return None


def _run(base: str, roles: list[Role]) -> list[str]:
    schema = schemathesis.openapi.from_url(f"{base}/api/v1/openapi.json")
    failures = []
    for role in roles:
        with requests.Session() as http:
            for operation in _operations(schema):
                if (operation.method.upper(), operation.path) in STREAMS:
                    print(f"{role.name:12} skipped {operation.path}: an event stream never ends")
                    continue
                if (operation.method.upper(), operation.path) == LAST and role.headers:
                    # Everything before ran signed in, or this role's run proved little.
                    me = http.get(f"{base}/api/v1/me", headers=role.headers, timeout=30)
                    if me.status_code != 200:
                        failures.append(f"{role.name}: signed out during the run ({me.text})")
                started = time.monotonic()
                failure = _fuzz(operation, role, base, http)
                took = time.monotonic() - started
                print(f"{role.name:12} {operation.method.upper():6} {operation.path} {took:.1f}s")
                if failure is not None:
                    failures.append(failure)
    return failures


async def test_every_operation_answers_as_documented(
    build: Builder, database_url: str, tmp_path: Path
) -> None:
    root = await build.user(super_admin=True)
    member = await build.user()
    await build.member(member, await build.group(await build.org()))
    proc, base = start_api(database_url, tmp_path / "api-data")
    try:
        roles = [
            Role("anonymous"),
            _signed_in(base, "member", member.email),
            _signed_in(base, "super admin", root.email),
        ]
        failures = await asyncio.to_thread(_run, base, roles)
    finally:
        stop(proc)
    assert not failures, f"{len(failures)} operations failed:\n\n" + "\n\n".join(failures)
