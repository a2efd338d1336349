"""The console's Content-Security-Policy, and its index.html stamped with a fresh nonce.

Scripts and styles load from the console's own origin only; no inline script runs. Mantine
writes its theme's CSS variables and responsive style props into <style> tags at run time, so
style-src also admits the nonce of the one response that served index.html: the build marks
its tags and a `<meta property="csp-nonce">` with a placeholder (Vite's `html.cspNonce`), this
module puts a new random nonce in its place, and the console hands that nonce to Mantine.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from starlette.responses import HTMLResponse

HEADER = "Content-Security-Policy"
# Must match `html.cspNonce` in frontend/vite.config.ts.
NONCE_PLACEHOLDER = "GSHARE_CSP_NONCE"


def policy(nonce: str | None = None) -> str:
    """The header value; `nonce` admits the <style> tags of the page it was issued with."""
    styles = "'self'" if nonce is None else f"'self' 'nonce-{nonce}'"
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            f"style-src {styles}",
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


def new_nonce() -> str:
    return secrets.token_urlsafe(18)


def stamp(html: str, nonce: str) -> str:
    """index.html with every nonce placeholder the build wrote replaced by `nonce`."""
    return html.replace(f'nonce="{NONCE_PLACEHOLDER}"', f'nonce="{nonce}"')


def index_response(index: Path) -> HTMLResponse:
    """index.html under a policy whose nonce is used by this response alone."""
    nonce = new_nonce()
    return HTMLResponse(
        stamp(index.read_text(encoding="utf-8"), nonce),
        headers={"cache-control": "no-cache", HEADER: policy(nonce)},
    )
