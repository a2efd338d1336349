"""The reference pages are what hack/reference_docs.py makes from the code, never kept by hand;
the changelog's compatibility table says what the code says."""

from __future__ import annotations

import importlib.util
import re
import shutil
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from gshare import cli
from gshare.kit.errors import GShareError
from gshare.kit.schema_version import head_revision
from gshare.kit.settings import READ_ELSEWHERE, Settings
from gshare.operator.crd import session_crd
from tests.docs.hack import reference_docs as load_reference_docs

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_PAGE = ROOT / "docs" / "reference" / "settings.md"
ERRORS_PAGE = ROOT / "docs" / "reference" / "errors.md"
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"
CHART_PAGE = ROOT / "docs" / "reference" / "chart-values.md"
CHANGELOG = ROOT / "CHANGELOG.md"
STALE = "the page differs from what the code says: run `make reference-docs`"


@pytest.fixture(scope="module")
def reference_docs() -> ModuleType:
    return load_reference_docs()


def _first_column(page: str) -> list[list[str]]:
    """The first cell of every row, table by table, without the backticks."""
    tables: list[list[str]] = []
    previous = ""
    for line in page.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            if not previous.startswith("|"):
                tables.append([])
            else:
                tables[-1].append(line.split("|")[1].strip().strip("`"))
        previous = line
    return tables


def _rows(page: str) -> dict[str, list[str]]:
    return {
        cells[0].strip("`"): cells
        for line in page.splitlines()
        if line.startswith("| `")
        for cells in [[cell.strip() for cell in line.strip("|").split(" | ")]]
    }


def test_the_settings_page_is_what_make_reference_docs_writes(reference_docs: ModuleType) -> None:
    assert SETTINGS_PAGE.read_text() == reference_docs.render_settings(), STALE


def test_the_errors_page_is_what_make_reference_docs_writes(reference_docs: ModuleType) -> None:
    assert ERRORS_PAGE.read_text() == reference_docs.render_errors(), STALE


def test_the_cli_page_is_what_make_reference_docs_writes(reference_docs: ModuleType) -> None:
    assert CLI_PAGE.read_text() == reference_docs.render_cli(), STALE


def test_the_chart_values_page_is_what_make_reference_docs_writes(
    reference_docs: ModuleType,
) -> None:
    assert CHART_PAGE.read_text() == reference_docs.render_chart_values(), STALE


def _leaves(values: dict[str, object], prefix: str = "") -> set[str]:
    found = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            found |= _leaves(value, f"{path}.")
        else:
            found.add(path)
    return found


def test_the_chart_values_page_lists_every_value_helm_reads_with_its_type(
    reference_docs: ModuleType,
) -> None:
    """The page's reading of values.yaml against a YAML parser's: no value left out, none
    made up, and every one with a type from the schema."""
    values = yaml.safe_load((ROOT / "charts" / "gshare" / "values.yaml").read_text())
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in CHART_PAGE.read_text().splitlines()
        if line.startswith("| `")
    ]
    listed = {row[0].strip("`") for row in rows if row[2]}
    leaves = _leaves(values)
    # A map written inline ({cpu: 250m, memory: 1Gi}) is one value on the page.
    covered = {
        leaf for leaf in leaves for entry in listed if leaf == entry or leaf.startswith(f"{entry}.")
    }
    assert covered == leaves, sorted(leaves - covered)
    made_up = {
        e for e in listed if e not in leaves and not any(x.startswith(f"{e}.") for x in leaves)
    }
    assert not made_up, sorted(made_up)
    assert all(row[1] for row in rows), [row[0] for row in rows if not row[1]]


def test_a_value_added_to_values_yaml_shows_on_the_page(
    reference_docs: ModuleType, tmp_path: Path
) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(ROOT / "charts" / "gshare", chart)
    text = (chart / "values.yaml").read_text()
    (chart / "values.yaml").write_text(text + "# A knob the docs must show.\nnewKnob: 3\n")
    page = reference_docs.render_chart_values(chart)
    assert "| `newKnob` |  | `3` | A knob the docs must show. |" in page


def test_every_page_says_it_is_generated() -> None:
    for page in (SETTINGS_PAGE, ERRORS_PAGE, CLI_PAGE, CHART_PAGE):
        first = page.read_text().splitlines()[0]
        assert "Generated" in first
        assert "`make reference-docs`" in first


def test_every_setting_and_every_variable_read_elsewhere_is_listed() -> None:
    settings, elsewhere = _first_column(SETTINGS_PAGE.read_text())
    assert settings == [f"GSHARE_{name.upper()}" for name in Settings.model_fields]
    assert elsewhere == sorted(READ_ELSEWHERE)


def test_defaults_are_written_as_a_person_would_and_secrets_show_none() -> None:
    rows = _rows(SETTINGS_PAGE.read_text())
    assert rows["GSHARE_BOOTSTRAP_ADMIN_PASSWORD"][2] == "(none)"
    assert rows["GSHARE_PORT"][1:3] == ["integer, 1 to 65535", "`8000`"]
    assert rows["GSHARE_SESSION_IDLE_TIMEOUT"][2] == "`PT8H` (8 hours)"
    assert rows["GSHARE_CONSOLE_DIR"][2] == "`frontend/dist` in the source tree"
    assert rows["GSHARE_TRUSTED_PROXIES"][2] == "`127.0.0.0/8,::1/128`"
    assert rows["GSHARE_API_DOCS"][1:3] == ["boolean", "`false`"]
    assert rows["GSHARE_OPERATOR_NAMESPACE"][1:] == ["operator", "`src/gshare/operator/main.py`"]
    assert rows["GSHARE_TESTENV_CACHE"][1:] == ["test tooling", "`hack/testenv.sh`"]


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 0
    return capsys.readouterr().out


def _sections(page: str) -> dict[str, str]:
    """Each `## `heading`` of the page, with the text under it."""
    parts = re.split(r"^## `([^`]+)`$", page, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_cli_page_has_every_command_and_option_that_gshare_help_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps to the terminal
    listed = re.findall(r"^    ([a-z][a-z-]*)\b", _help(["--help"], capsys), re.MULTILINE)
    assert {"up", "migrate", "recover-admin", "rotate-keys"} <= set(listed)
    sections = _sections(CLI_PAGE.read_text())
    assert list(sections) == [f"gshare {name}" for name in listed]
    for name in listed:
        shown = _help([name, "--help"], capsys)
        options = set(re.findall(r"(--[a-z][a-z-]*)", shown)) - {"--help"}
        on_page = set(re.findall(r"^\| `(--[a-z][a-z-]*)", sections[f"gshare {name}"], re.M))
        assert on_page == options, f"gshare {name}: {STALE}"
        assert shown.split("\n\n")[0].replace("usage: ", "").split() == (
            sections[f"gshare {name}"].split("```")[1].split()
        )
    rows = _rows(sections["gshare recover-admin"])
    assert rows["--email EMAIL"][1] == "required"
    assert rows["--name NAME"][1] == "`Administrator`"
    assert _rows(sections["gshare rotate-keys"])["--drop-old"][1] == "off"


def _compatibility() -> list[dict[str, str]]:
    text = CHANGELOG.read_text()
    section = text[text.index("## Compatibility") :].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    return [dict(zip(cells[0], row, strict=True)) for row in cells[2:]]


def test_the_changelogs_current_release_has_the_versions_the_code_has() -> None:
    chart = yaml.safe_load((ROOT / "charts" / "gshare" / "Chart.yaml").read_text())
    package = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    crd = session_crd()["spec"]
    stored = next(version["name"] for version in crd["versions"] if version["storage"])
    assert package == chart["appVersion"], "pyproject.toml and Chart.yaml's appVersion differ"
    current = _compatibility()[0]
    assert current == {
        "Release": package,
        "Chart version": chart["version"],
        "App version (package and images)": chart["appVersion"],
        "GShareSession CRD": f"{crd['group']}/{stored}",
        "Database schema revision": head_revision(),
    }, "CHANGELOG.md's compatibility table is stale: its top row is the current release"
    releases = re.findall(r"^## \[(\d[^\]]*)\]", CHANGELOG.read_text(), re.MULTILINE)
    assert releases[0] == package, "the newest release in CHANGELOG.md is not the package's"


def test_every_code_on_the_errors_page_is_in_the_source() -> None:
    source = "\n".join(path.read_text() for path in (ROOT / "src" / "gshare").rglob("*.py"))
    codes = _first_column(ERRORS_PAGE.read_text())[0]
    missing = [code for code in codes if f'"{code}"' not in source]
    assert missing == [], STALE
    assert len(codes) > 50
    assert codes == sorted(codes)


def _subclasses(cls: type[GShareError]) -> list[type[GShareError]]:
    return [cls, *(s for sub in cls.__subclasses__() for s in _subclasses(sub))]


def test_every_error_class_is_listed_with_its_code_and_status(
    reference_docs: ModuleType,
) -> None:
    importlib.import_module("gshare.api.app")  # its routers import every domain's errors
    rows = _rows(ERRORS_PAGE.read_text())
    classes = [c for c in _subclasses(GShareError) if c.__module__.startswith("gshare.")]
    assert len(classes) > 15
    parsed = reference_docs.Source(reference_docs.PACKAGE).family
    assert set(parsed) == {f"{c.__module__}.{c.__qualname__}" for c in classes}
    for cls in classes:
        assert cls.code in rows, f"{cls.__qualname__}: {STALE}"
        assert str(cls.status) in rows[cls.code][1].split(", "), cls.__qualname__
    assert rows["not_in_group"][1] == "403, 404"
    assert rows["invalid_request"][1] == "422"
    assert "api" in rows["internal_error"][3]


THINGS = """
from gshare.kit.errors import Conflict, Forbidden, NotFound

LIMIT = 5


class ThingBusy(Conflict):
    code = "thing_busy"
    message = "The thing is busy. Wait for it."


class ThingRefused(Forbidden):
    '''A thing the box refuses. The message says why.'''

    code = "thing_refused"


def check(reason: str) -> None:
    raise ThingRefused(reason)


def find(name: str) -> None:
    raise NotFound(f"No thing named {name!r}. Check the name.", code="thing_not_found")


def over_limit() -> Forbidden:
    return Forbidden(f"At most {LIMIT} things " "in one box.", code="thing_not_found")


def _unique(what: str, code: str = "thing_exists") -> None:
    raise Conflict(f"{what} exists already.", code=code)


def rename() -> None:
    _unique("A thing", code="thing_name_taken")
"""


def test_codes_messages_and_statuses_are_read_from_the_raise_sites(
    reference_docs: ModuleType, tmp_path: Path
) -> None:
    package = tmp_path / "gshare"
    (package / "kit").mkdir(parents=True)
    (package / "things").mkdir()
    shutil.copy(ROOT / "src" / "gshare" / "kit" / "errors.py", package / "kit" / "errors.py")
    (package / "things" / "service.py").write_text(THINGS)

    codes = {entry.code: entry for entry in reference_docs.error_codes(package)}

    assert codes["thing_busy"].statuses == (409,)
    assert codes["thing_busy"].meanings == ("The thing is busy.",)
    assert codes["thing_not_found"].statuses == (403, 404)
    assert codes["thing_not_found"].meanings == (
        "No thing named …. (404)",
        "At most 5 things in one box. (403)",
    )
    assert codes["thing_exists"].meanings == ("… exists already.",)
    # A message made at run time says nothing: the class's docstring does.
    assert codes["thing_refused"].meanings == ("A thing the box refuses.",)
    assert codes["thing_name_taken"].domains == ("things",)
    assert codes["not_found"].meanings == ("Not found.",)
    assert codes["not_found"].domains == ("kit",)
    assert codes["invalid_request"].statuses == (422,)
    page = reference_docs.render_errors(package)
    assert "| `thing_busy` | 409 | The thing is busy. | things |" in page.splitlines()
    assert re.search(r"^\| `thing_not_found` \| 403, 404 \|", page, re.MULTILINE)
