"""Every link between the project's pages leads somewhere: the file exists and, when the link
names a heading (`page.md#heading`), the page has that heading, as GitHub makes its anchor."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from tests.docs.test_quoted_names import ROOT, pages

LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _outside_code(text: str, *, spans: bool = True) -> Iterable[tuple[int, str]]:
    """The lines outside fenced code, with inline code taken out unless `spans` is False."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            yield number, re.sub(r"`[^`]*`", "", line) if spans else line


def slug(heading: str) -> str:
    """The fragment GitHub gives a heading: lowercase, markup and punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_]", "", text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    found: list[str] = []
    for _, line in _outside_code(page.read_text(), spans=False):
        match = HEADING.match(line)
        if match:
            base = slug(match[1])
            repeats = found.count(base) + sum(1 for a in found if a.startswith(f"{base}-"))
            found.append(base if base not in found else f"{base}-{repeats}")
    return frozenset(found)


def broken(paths: Iterable[Path], root: Path = ROOT) -> list[str]:
    """Each link that leads nowhere, as `page:line: target: why`."""
    problems = []
    for page in paths:
        for number, line in _outside_code(page.read_text()):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                    continue
                file_part, _, fragment = target.partition("#")
                linked = (page.parent / file_part).resolve() if file_part else page
                where = f"{page.relative_to(root)}:{number}: {target}"
                if not linked.exists():
                    problems.append(f"{where}: no such file")
                elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                    problems.append(f"{where}: no such heading")
    return problems


def test_every_link_between_pages_leads_to_a_file_and_heading_that_exist() -> None:
    problems = broken(pages())
    assert not problems, "\n".join(problems)


def test_a_link_to_a_missing_page_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The `gshare up` command\n")
    page = tmp_path / "page.md"
    page.write_text(
        "See [it](other.md#the-gshare-up-command), [gone](missing.md),\n"
        "[no heading](other.md#nowhere) and [the web](https://example.org).\n"
        "```\n[in code](missing.md)\n```\n"
    )
    found = [p.split(": ", 1)[1] for p in broken([page], tmp_path)]
    assert found == ["missing.md: no such file", "other.md#nowhere: no such heading"]


SECTIONS = ("tutorials", "how-to", "reference", "explanation", "manuals")


def test_every_page_sits_in_a_section_and_the_index_links_to_it() -> None:
    """The docs keep their shape: each page under docs/ is a tutorial, a how-to guide, a
    reference page, an explanation or a manual, and docs/README.md leads to it."""
    docs = ROOT / "docs"
    index = docs / "README.md"
    linked = {
        (docs / target.partition("#")[0]).resolve()
        for _, line in _outside_code(index.read_text())
        for target in LINK.findall(line)
    }
    misplaced, unlisted = [], []
    for page in sorted(docs.rglob("*.md")):
        if page == index:
            continue
        if page.relative_to(docs).parts[0] not in SECTIONS:
            misplaced.append(str(page.relative_to(ROOT)))
        if page.resolve() not in linked:
            unlisted.append(str(page.relative_to(ROOT)))
    assert not misplaced, f"pages outside {SECTIONS}: {misplaced}"
    assert not unlisted, f"pages docs/README.md does not link to: {unlisted}"
