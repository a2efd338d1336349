"""The console's initial JavaScript, as a browser downloads it before the first screen: every
script and module preload that frontend/dist/index.html names, gzip-compressed as the server
sends it. Lazily loaded chunks (the charts) are not part of it."""

from __future__ import annotations

import gzip
import re

from tests.e2e.steps import CONSOLE

# What a first visit may cost on a slow link; the charts and other heavy parts load lazily.
LIMIT_KIB = 400

SCRIPT = re.compile(
    r'<(?:script[^>]*\bsrc|link[^>]*\brel="modulepreload"[^>]*\bhref)="/([^"]+\.js)"'
)


def initial_scripts() -> list[str]:
    index = (CONSOLE / "index.html").read_text()
    return sorted(set(SCRIPT.findall(index)))


def test_the_console_loads_under_400_kib_of_javascript_before_its_first_screen() -> None:
    scripts = initial_scripts()
    assert scripts, "index.html names no script: is the console built?"
    sizes = {name: len(gzip.compress((CONSOLE / name).read_bytes(), 9)) for name in scripts}
    total_kib = sum(sizes.values()) / 1024
    print(f"initial JavaScript: {total_kib:.0f} KiB gzip in {len(sizes)} files: {sizes}")
    assert total_kib < LIMIT_KIB, sizes
    lazy = {p.name for p in (CONSOLE / "assets").glob("*.js")} - {s.split("/")[-1] for s in scripts}
    # The charts stay out of the first load.
    assert any("Chart" in name for name in lazy), lazy
