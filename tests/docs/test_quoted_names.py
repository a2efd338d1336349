"""Names the pages quote in backticks exist in the code: API routes, error codes, settings, make
targets, event, notification, audit and permission kinds; console labels the pages name are in
the console's navigation; and no page promises what the product does not do."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, pairwise
from pathlib import Path

import yaml

from gshare.kit.settings import READ_ELSEWHERE, Settings
from tests.docs.hack import reference_docs

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "gshare"
SHELL = ROOT / "frontend" / "src" / "shell"
NAVIGATION = (SHELL / "Shell.tsx", SHELL / "AdminNav.tsx")

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
SPAN = re.compile(r"`([^`\n]+)`")
ROUTE = re.compile(rf"^(?:({'|'.join(METHODS)}) )?(/(?:api|internal)/v1(?:/.*)?)$")
ERROR_CODE = re.compile(r"\b([1-5][0-9]{2}) `([a-z][a-z0-9]*(?:_[a-z0-9]+)*)`")
SETTING = re.compile(r"\bGSHARE_[A-Z0-9_]*")
MAKE = re.compile(r"^make ((?:[A-Za-z0-9_.-]+ ?)+)(?:\s+\S+=.*)?$")
DOTTED = re.compile(r"^[a-z][a-z_]*(?:\.[a-z][a-z_]*)+$")
# A console label: the first step of a task (`**Create a user**: *Users* →`), a page opened
# (`open *Credits*`), a path (`Admin mode > Clusters`), or the pages a sentence says are in the
# side navigation.
LABEL_STEPS = (
    re.compile(r"\*\*[^*]+\*\*(?: \([^)]*\))?: \*([^*]+)\*"),
    re.compile(r"\bopen \*([^*]+)\*"),
)
PATH_STEP = re.compile(r"\bAdmin(?: mode)? (?:>|→) ([A-Z][A-Za-z]*)")
FUTURE = re.compile(
    r"not enforced yet|until sessions exist|\bplanned\b|not yet implemented|coming soon"
    r"|will be added|not supported yet|not yet in the console|in a later (?:release|version)",
    re.IGNORECASE,
)
FILE_ENDINGS = {
    *("py", "ts", "tsx", "sh", "sql", "md", "txt", "html", "json", "yaml", "yml", "toml"),
    *("crt", "key", "pub", "log", "conf", "pid"),
}
DOMAIN_ENDINGS = {"local", "localhost", "io", "org", "com", "net"}
KUBERNETES_FIELDS = {"spec", "status", "metadata"}
# Fields of other products' objects that the pages name.
FOREIGN = {"bootstrap.recovery": "CloudNativePG's Cluster"}


def pages(root: Path = ROOT) -> list[Path]:
    """Every Markdown page a reader is pointed at, under root."""
    top = [root / name for name in ("README.md", "CONTRIBUTING.md", "SECURITY.md")]
    return [page for page in top if page.exists()] + sorted((root / "docs").rglob("*.md"))


@dataclass(frozen=True)
class Finding:
    page: Path
    line: int
    what: str
    name: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.what}: {self.name}"


@dataclass(frozen=True)
class Known:
    routes: dict[tuple[str, ...], frozenset[str]]
    error_statuses: dict[str, frozenset[int | None]]
    settings: frozenset[str]
    make_targets: frozenset[str]
    kinds: frozenset[str]
    kind_templates: frozenset[str]  # f"session.{action}": session\.([a-z_]+)
    words: frozenset[str]  # what may fill a template
    code_paths: frozenset[tuple[str, ...]]  # gshare's modules and their top-level names
    value_paths: frozenset[tuple[str, ...]]  # the chart's values, and table.column
    labels: frozenset[str]  # the console's navigation


# ---- what the code says ----------------------------------------------------------------------


def _segments(path: str) -> tuple[str, ...]:
    return tuple("{}" if part.startswith("{") else part for part in path.strip("/").split("/"))


def _routes() -> dict[tuple[str, ...], frozenset[str]]:
    from gshare.api.app import create_app

    app = create_app(Settings(api_docs=True), database_url="postgresql://unused/unused")
    routes: dict[tuple[str, ...], set[str]] = {}
    for path, operations in app.openapi()["paths"].items():
        routes.setdefault(_segments(path), set()).update(m.upper() for m in operations)
    for page in (app.openapi_url, app.docs_url, app.redoc_url):
        if page is not None:
            routes.setdefault(_segments(page), set()).update({"GET", "HEAD"})
    return {path: frozenset(methods) for path, methods in routes.items()}


def _error_statuses() -> dict[str, frozenset[int | None]]:
    """From the raise sites, as docs/reference/errors.md is made."""
    module = reference_docs()
    return {entry.code: frozenset(entry.statuses) for entry in module.error_codes()}


def _settings() -> frozenset[str]:
    """Settings, the variables read elsewhere, and those the tests and benchmarks read."""
    read = re.compile(r"""(?:environ(?:\.get)?\(?\[?|getenv\()\s*["'](GSHARE_[A-Z0-9_]+)["']""")
    tooling = {
        name
        for folder in ("tests", "benchmarks", "test", "hack")
        for path in (ROOT / folder).rglob("*.py")
        for name in read.findall(path.read_text())
    }
    fields = {f"GSHARE_{name.upper()}" for name in Settings.model_fields}
    return frozenset(fields | READ_ELSEWHERE | tooling)


def _make_targets() -> frozenset[str]:
    rule = re.compile(r"^([A-Za-z0-9_.-]+(?: [A-Za-z0-9_.-]+)*):(?!=)", re.MULTILINE)
    text = (ROOT / "Makefile").read_text()
    return frozenset(t for rule_names in rule.findall(text) for t in rule_names.split())


def _modules() -> Iterator[tuple[tuple[str, ...], ast.Module]]:
    for path in sorted(SOURCE.rglob("*.py")):
        parts = ("gshare", *path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield parts, ast.parse(path.read_text())


def _kinds() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Every dotted string constant in the source (event, notification, audit and permission
    kinds among them); the f-strings that make dotted kinds at run time, as patterns with a
    group for each value put in; and the snake_case constants that may fill them."""
    kinds: set[str] = set()
    templates: set[str] = set()
    words: set[str] = set()
    for _, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if DOTTED.match(node.value):
                    kinds.add(node.value)
                elif re.fullmatch(r"[a-z][a-z0-9_]*", node.value):
                    words.add(node.value)
            elif isinstance(node, ast.JoinedStr):
                pattern = "".join(
                    re.escape(str(part.value)) if isinstance(part, ast.Constant) else "([a-z_]+)"
                    for part in node.values
                    if isinstance(part, ast.Constant | ast.FormattedValue)
                )
                if DOTTED.match(pattern.replace("([a-z_]+)", "x").replace("\\.", ".")):
                    templates.add(pattern)
    return frozenset(kinds), frozenset(templates), frozenset(words)


def _code_paths() -> frozenset[tuple[str, ...]]:
    paths: set[tuple[str, ...]] = set()
    for module, tree in _modules():
        paths.add(module)
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            paths.update((*module, name) for name in names)
    return frozenset(paths)


def _flatten(value: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, str(key))
            yield from _flatten(inner, (*prefix, str(key)))


def _value_paths() -> frozenset[tuple[str, ...]]:
    """The chart's values (the default and the overlays) and the database's table.column."""
    from gshare.kit.db import Base

    files = [ROOT / "charts" / "gshare" / "values.yaml", *(ROOT / "deploy" / "values").glob("*")]
    paths = {path for file in files for path in _flatten(yaml.safe_load(file.read_text()))}
    paths |= {(t.name, c.name) for t in Base.metadata.tables.values() for c in t.columns}
    return frozenset(paths)


def _labels() -> frozenset[str]:
    """The console's navigation, from the link lists of the shell."""
    link = re.compile(r"\{ to: '[^']+', label: '([^']+)'")
    return frozenset(label for path in NAVIGATION for label in link.findall(path.read_text()))


@cache
def known() -> Known:
    kinds, templates, words = _kinds()
    return Known(
        routes=_routes(),
        error_statuses=_error_statuses(),
        settings=_settings(),
        make_targets=_make_targets(),
        kinds=kinds,
        kind_templates=templates,
        words=words,
        code_paths=_code_paths(),
        value_paths=_value_paths(),
        labels=_labels(),
    )


# ---- what the pages say ----------------------------------------------------------------------


@dataclass(frozen=True)
class Paragraph:
    page: Path
    lines: list[tuple[int, str]]

    @property
    def text(self) -> str:
        return " ".join(line for _, line in self.lines)

    def line_at(self, offset: int) -> int:
        starts = list(accumulate((len(line) + 1 for _, line in self.lines), initial=0))
        return self.lines[bisect_right(starts, offset) - 1][0]


def _paragraphs(page: Path) -> Iterator[Paragraph]:
    """The prose of a page, outside fenced code blocks, a paragraph at a time: a phrase or a
    quoted name may run over a line break."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate([*page.read_text().splitlines(), ""], start=1):
        fence = line.lstrip().startswith(("```", "~~~"))
        fenced ^= fence
        if line.strip() and not fence and not fenced:
            lines.append((number, line.strip()))
        elif lines:
            yield Paragraph(page, lines)
            lines = []


def _alternatives(path: str) -> list[str]:
    """`/policies/{global | orgs/{id}}` is two routes: the braces that hold a `|`."""
    depth = 0
    for start, char in enumerate(path):
        if char == "{":
            depth += 1
            if depth != 1:
                continue
            inner, end = 0, start
            cuts = [start]
            for end in range(start + 1, len(path)):
                if path[end] == "{":
                    inner += 1
                elif path[end] == "}":
                    if inner == 0:
                        break
                    inner -= 1
                elif path[end] == "|" and inner == 0:
                    cuts.append(end)
            if len(cuts) == 1:
                continue
            cuts.append(end)
            head, tail = path[:start], path[end + 1 :]
            return [
                alternative
                for a, b in pairwise(cuts)
                for alternative in _alternatives(head + path[a + 1 : b].strip() + tail)
            ]
        elif char == "}":
            depth -= 1
    return [path]


def _is_id(segment: str) -> bool:
    return (
        segment.startswith(("{", "<", ":"))
        or segment in {"…", "...", "*"}
        or bool(re.fullmatch(r"[0-9]+|[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{12,}", segment))
    )


def _route_exists(
    method: str | None, path: str, routes: dict[tuple[str, ...], frozenset[str]]
) -> bool:
    path = re.sub(r"\[\?[^\]]*\]", "", path).split("?")[0].split("#")[0]
    for alternative in _alternatives(path):
        if alternative.endswith("/"):  # a prefix
            wanted = _segments(alternative)
            if not any(route[: len(wanted)] == wanted for route in routes):
                return False
            continue
        wanted = tuple("{}" if _is_id(part) else part for part in _segments(alternative))
        matches = [
            methods
            for route, methods in routes.items()
            if len(route) == len(wanted)
            and all(w == r or (w == "{}" and r == "{}") for w, r in zip(wanted, route, strict=True))
        ]
        if not matches or (method is not None and not any(method in m for m in matches)):
            return False
    return True


def _is_other_dotted(name: str, known: Known) -> bool:
    """A file, a domain, a Kubernetes field, a chart value, a table column or a Python path:
    not a kind."""
    parts = tuple(name.split("."))
    if parts[-1] in FILE_ENDINGS or parts[-1] in DOMAIN_ENDINGS or name in FOREIGN:
        return True
    if parts[0] in KUBERNETES_FIELDS:
        return True
    if any(path[-len(parts) :] == parts for path in known.value_paths if len(path) >= len(parts)):
        return True
    return any(path[-len(parts) :] == parts for path in known.code_paths if len(path) >= len(parts))


def _is_kind(name: str, known: Known) -> bool:
    if name in known.kinds:
        return True
    return any(
        (match := re.fullmatch(template, name)) and set(match.groups()) <= known.words
        for template in known.kind_templates
    )


def _check(paragraph: Paragraph, known: Known) -> Iterator[Finding]:
    text = paragraph.text

    def finding(match: re.Match[str], what: str, name: str) -> Finding:
        return Finding(paragraph.page, paragraph.line_at(match.start()), what, name)

    for match in ERROR_CODE.finditer(text):
        status, code = int(match[1]), match[2]
        statuses = known.error_statuses.get(code)
        if statuses is None:
            yield finding(match, "no such error code", code)
        elif status not in statuses and None not in statuses:
            shown = ", ".join(str(s) for s in sorted(s for s in statuses if s is not None))
            yield finding(match, f"error code answered with {shown}, not {status}", code)
    for match in SPAN.finditer(text):
        span = match[1].strip()
        route = ROUTE.match(span)
        if route and not _route_exists(route[1], route[2], known.routes):
            yield finding(match, "no such route", span)
        for setting in SETTING.findall(span):
            family = setting.endswith("_") and any(k.startswith(setting) for k in known.settings)
            if not family and setting not in known.settings:
                yield finding(match, "no such setting", setting)
        make = MAKE.match(span)
        if make:
            for target in make[1].split():
                if "=" not in target and target not in known.make_targets:
                    yield finding(match, "no such make target", f"make {target}")
        if DOTTED.match(span) and not _is_kind(span, known) and not _is_other_dotted(span, known):
            yield finding(match, "no such event, notification, audit or permission kind", span)
    for match in FUTURE.finditer(text):
        yield finding(match, "promises the future", match[0])
    yield from _check_labels(paragraph, known)


def _check_labels(paragraph: Paragraph, known: Known) -> Iterator[Finding]:
    """Labels the paragraph presents as the console's navigation."""
    text = paragraph.text
    named: list[re.Match[str]] = []
    for pattern in LABEL_STEPS:
        named.extend(pattern.finditer(text))
    for step in PATH_STEP.finditer(text):
        if not any(text.startswith(label, step.start(1)) for label in known.labels):
            named.append(step)
    for sentence in re.finditer(r"[^.]*side navigation[^.]*", text):
        reach = sentence[0].find(" reach ")
        start = sentence.start() + max(reach, 0)
        named.extend(re.compile(r"\*\*([^*]+)\*\*").finditer(text, start, sentence.end()))
    for match in named:
        if match[1] not in known.labels:
            line = paragraph.line_at(match.start(1))
            yield Finding(paragraph.page, line, "not in the console's navigation", match[1])


def check(paths: Iterable[Path], known: Known) -> list[Finding]:
    return [
        f for page in paths for paragraph in _paragraphs(page) for f in _check(paragraph, known)
    ]


# ---- the tests -------------------------------------------------------------------------------


def test_every_quoted_name_on_every_page_is_in_the_code() -> None:
    findings = check(pages(), known())
    assert findings == [], "stale names in the pages:\n" + "\n".join(map(str, findings))


def test_the_pages_are_found_and_the_code_is_read() -> None:
    found = {page.relative_to(ROOT).as_posix() for page in pages()}
    assert {"README.md", "CONTRIBUTING.md", "docs/manuals/admin-manual.md"} <= found
    assert "docs/reference/errors.md" in found
    names = known()
    assert ("api", "v1", "sessions", "{}", "stop") in names.routes
    assert names.routes[("api", "v1", "clusters", "{}")] >= {"GET", "DELETE"}
    assert ("internal", "v1", "sessions", "{}", "status") in names.routes
    assert 409 in names.error_statuses["invalid_transition"]
    assert {"GSHARE_DATABASE_URL", "GSHARE_OPERATOR_NAMESPACE"} <= names.settings
    assert {"test", "lint", "bench", "reference-docs"} <= names.make_targets
    assert {"session.changed", "session.started", "credits.mint", "clusters.manage"} <= names.kinds
    assert r"session\.([a-z_]+)" in names.kind_templates
    assert {"Sessions", "Wallet", "Audit log", "Tiers and prices"} <= names.labels


PLANTED = """
Stop it with `POST /api/v1/sessions/{id}/halt`; read it with `GET /api/v1/sessions/{id}`.
A session that left the queue answers 409 `not_a_real_code`; a duplicate answers 404 `busy`.
Set `GSHARE_NOT_A_SETTING=1` and run `make frobnicate`.
Each change records `session.canceled`; `session.started` and `credits.allocation` are kinds.
Billing for storage is not\nenforced yet.

- **Rename a user**: *People* → **Rename**; or **Admin → Catalog**.
"""


def test_a_planted_stale_name_is_reported_with_its_page_and_line(tmp_path: Path) -> None:
    (tmp_path / "docs" / "manuals").mkdir(parents=True)
    original = (ROOT / "docs" / "manuals" / "user-manual.md").read_text()
    page = tmp_path / "docs" / "manuals" / "user-manual.md"
    page.write_text(original + PLANTED)
    (tmp_path / "README.md").write_text("# GShare\n\nRun `make up`; see `GET /api/v1/me`.\n")
    first = len(original.splitlines()) + 2

    findings = check(pages(tmp_path), known())

    reported = {(f.page.name, f.line, f.name) for f in findings}
    assert reported == {
        ("user-manual.md", first, "POST /api/v1/sessions/{id}/halt"),
        ("user-manual.md", first + 1, "not_a_real_code"),
        ("user-manual.md", first + 1, "busy"),  # a real code, with another status
        ("user-manual.md", first + 2, "GSHARE_NOT_A_SETTING"),
        ("user-manual.md", first + 2, "make frobnicate"),
        ("user-manual.md", first + 3, "session.canceled"),
        ("user-manual.md", first + 4, "not enforced yet"),
        ("user-manual.md", first + 7, "People"),
        ("user-manual.md", first + 7, "Catalog"),
    }
    assert f"{page}:{first + 3}: " in "\n".join(map(str, findings))


def test_the_readme_names_every_benchmark_make_bench_runs() -> None:
    """`make bench` runs every script in benchmarks/ but the `_` helpers (the Makefile's
    BENCHMARKS); the README's list of them must keep up."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("- `make bench`:")
    item = readme[start : readme.index("- `make", start + 1)]
    named = set(re.findall(r"`(benchmarks/[a-z0-9_]+\.py)`", item))
    scripts = {f"benchmarks/{p.name}" for p in (ROOT / "benchmarks").glob("[!_]*.py")}
    assert (
        "$(filter-out benchmarks/_%,$(wildcard benchmarks/*.py))" in (ROOT / "Makefile").read_text()
    )
    assert named == scripts


def test_routes_are_matched_whatever_their_parameters_are_called() -> None:
    routes = known().routes
    assert _route_exists("GET", "/api/v1/wallets/{id}/consumption?days=30", routes)
    assert _route_exists(None, "/api/v1/sessions/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", routes)
    assert _route_exists("GET", "/api/v1/queue[?scope=own|all]", routes)
    assert _route_exists("PUT", "/api/v1/policies/{global | orgs/{id} | users/{id}}", routes)
    assert _route_exists(None, "/internal/v1/session-access/<session id>", routes)
    assert _route_exists(None, "/api/v1/", routes)
    assert not _route_exists("PATCH", "/api/v1/sessions/{id}", routes)
    assert not _route_exists("PUT", "/api/v1/policies/{global | teams/{id}}", routes)
    assert not _route_exists("GET", "/api/v1/wallets/mine", routes)
