"""Two API processes on one database: a change made through one reaches a stream on the other."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.builders import PASSWORD, Builder
from tests.credits.builders import two_orgs
from tests.events.sse import open_stream
from tests.processes import start_api, stop


async def _sign_in(base: str, email: str) -> tuple[str, str]:
    async with httpx.AsyncClient(base_url=base) as http:
        answer = await http.post("/api/v1/auth/login", json={"email": email, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        return answer.cookies["gshare_session"], answer.json()["csrf_token"]


async def test_a_transfer_through_one_api_process_reaches_a_stream_on_another(
    build: Builder, database_url: str, tmp_path: Path
) -> None:
    world = await two_orgs(build)
    pia_email = (await world.pia.get("/api/v1/me")).json()["user"]["email"]
    (first, first_url), (second, second_url) = await asyncio.gather(
        asyncio.to_thread(start_api, database_url, tmp_path / "a"),
        asyncio.to_thread(start_api, database_url, tmp_path / "b"),
    )
    try:
        uma_cookie, _ = await _sign_in(second_url, world.uma.email)
        pia_cookie, pia_csrf = await _sign_in(first_url, pia_email)
        async with open_stream(second_url, uma_cookie) as stream:
            async with httpx.AsyncClient(base_url=first_url) as http:
                moved = await http.post(
                    "/api/v1/credits/transfers",
                    json={
                        "from_wallet_id": world.optics_wallet,
                        "to_wallet_id": world.uma_wallet,
                        "amount": "7",
                    },
                    headers={"Cookie": f"gshare_session={pia_cookie}", "X-CSRF-Token": pia_csrf},
                )
                assert moved.status_code == 201, moved.text
            got = await stream.until("wallet.changed", timeout=20)
        assert got[-1].data["wallet_id"] == world.uma_wallet
        assert float(got[-1].data["balance"]) == 27.0
    finally:
        await asyncio.to_thread(stop, first, second)
