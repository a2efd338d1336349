"""The console's Content-Security-Policy: on every console response, with a fresh nonce that
the served index.html carries in place of the build's placeholder."""

from __future__ import annotations

import re

import httpx

from gshare.api.csp import NONCE_PLACEHOLDER, policy
from gshare.kit.settings import Settings

INDEX = f"""<!doctype html>
<html><head>
<meta property="csp-nonce" nonce="{NONCE_PLACEHOLDER}">
<script type="module" crossorigin src="/assets/app.js" nonce="{NONCE_PLACEHOLDER}"></script>
</head><body><div id="root"></div></body></html>
"""


def _build(settings: Settings) -> None:
    (settings.console_dir / "assets").mkdir(parents=True)
    (settings.console_dir / "index.html").write_text(INDEX)
    (settings.console_dir / "assets" / "app.js").write_text("console.log('console')")


async def test_each_page_gets_its_own_nonce_in_the_header_and_the_html(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    _build(settings)
    nonces = []
    for path in ("/", "/admin/users", "/wallet"):
        page = await client.get(path)
        assert page.status_code == 200
        header = page.headers["content-security-policy"]
        match = re.search(r"style-src 'self' 'nonce-([A-Za-z0-9_-]{24})'", header)
        assert match, header
        assert page.text.count(f'nonce="{match.group(1)}"') == 2
        assert NONCE_PLACEHOLDER not in page.text
        assert page.headers["cache-control"] == "no-cache"
        nonces.append(match.group(1))
    assert len(set(nonces)) == 3


async def test_assets_and_a_missing_build_carry_the_policy_too(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    missing = await client.get("/")
    assert missing.status_code == 404
    assert missing.headers["content-security-policy"] == policy()

    _build(settings)
    asset = await client.get("/assets/app.js")
    assert asset.status_code == 200
    assert asset.headers["content-security-policy"] == policy()


def test_the_policy_allows_nothing_inline_and_no_framing() -> None:
    directives = dict(part.split(" ", 1) for part in policy("abc").split("; "))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self' 'nonce-abc'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert directives["base-uri"] == "'none'"
    assert "unsafe-inline" not in policy("abc")
