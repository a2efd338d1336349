"""An accessibility check of the page in front of the browser, with axe-core (the engine behind
Lighthouse's accessibility audit), from the console's own node_modules.

axe is evaluated through the DevTools protocol, which the console's Content-Security-Policy
does not govern, so the page under test is the page as served: nothing is relaxed for the
check."""

from __future__ import annotations

import json
from functools import cache

from playwright.async_api import Page

from tests.e2e.steps import ROOT

AXE = ROOT / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
# What the console must never have; "moderate" and "minor" findings are reported, not failed.
BLOCKING = ("serious", "critical")
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


@cache
def _axe_source() -> str:
    if not AXE.is_file():
        raise AssertionError(f"{AXE} is missing: `make test` installs the console's packages")
    return AXE.read_text()


async def violations(page: Page) -> list[dict]:
    """axe's serious and critical violations on the page as it stands (WCAG 2.1 A and AA, and
    axe's best practices)."""
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(_axe_source())
    found = await page.evaluate(
        """async (tags) => {
            const result = await window.axe.run(document, {
                runOnly: { type: 'tag', values: tags },
                resultTypes: ['violations'],
            });
            return result.violations.map((v) => ({
                id: v.id,
                impact: v.impact,
                help: v.help,
                nodes: v.nodes.slice(0, 5).map((n) => ({
                    at: n.target.join(' '),
                    html: n.html.slice(0, 160),
                    why: n.failureSummary,
                })),
            }));
        }""",
        TAGS,
    )
    return [v for v in found if v["impact"] in BLOCKING]


async def assert_accessible(page: Page, screen: str) -> None:
    """Fails with what axe found, where, when the screen has a serious or critical violation."""
    found = await violations(page)
    assert not found, f"{screen}: " + json.dumps(found, indent=1)
