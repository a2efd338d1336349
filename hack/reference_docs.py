"""Write docs/reference/settings.md, docs/reference/errors.md and docs/reference/cli.md from the
code (`make reference-docs`); tests/docs/test_reference.py fails when any of them differs.

Settings come from the pydantic model, with the comments and validator docstrings of
src/gshare/kit/settings.py. Error codes come from parsing src/gshare: each class of the
GShareError family with its default code and its docstring (what the code means, first), every
call of one (its `code=` or the class's code, and its message), and what the API's error
handlers answer on their own. The command line comes from the argparse parser `gshare` builds in
src/gshare/cli.py: every command with its help and its options.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import types
import typing
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from http import HTTPStatus
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path
from typing import Any, Literal, NoReturn
from unittest import mock

import annotated_types
from pydantic import TypeAdapter
from pydantic.fields import FieldInfo

from gshare import cli
from gshare.kit.settings import PREFIX, READ_ELSEWHERE, Settings

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "gshare"
SETTINGS_SOURCE = PACKAGE / "kit" / "settings.py"
SETTINGS_PAGE = ROOT / "docs" / "reference" / "settings.md"
ERRORS_PAGE = ROOT / "docs" / "reference" / "errors.md"
CLI_SOURCE = PACKAGE / "cli.py"
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"
CHART = ROOT / "charts" / "gshare"
CHART_PAGE = ROOT / "docs" / "reference" / "chart-values.md"

ERROR_ROOT = "gshare.kit.errors.GShareError"
ERROR_RESPONSE = "gshare.api.errors.error_response"
HTTP_EXCEPTIONS = frozenset(
    {
        "fastapi.HTTPException",
        "fastapi.exceptions.HTTPException",
        "starlette.exceptions.HTTPException",
    }
)
MAX_MEANINGS = 3
HOLE = "…"
# Who runs the code that reads a variable Settings does not hold, by where it is read.
READERS = {
    "gshare.operator": "operator",
    "gshare.demo": "demo",
    "gshare.devcluster": "test tooling",
    "hack/images.sh": "images",
    "hack/engine.sh": "images",
    "hack/test-docker.sh": "images",
    "hack/compose.sh": "the Compose path",
    "compose.yaml": "the Compose path",
    "hack": "test tooling",
}
SECRET_NAME = re.compile(r"(password|secret|token)$")


def _header(source: str) -> str:
    return f"<!-- Generated from {source} by `make reference-docs`; do not edit. -->\n"


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().replace("|", "\\|").replace("<", "&lt;")


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


# Source ------------------------------------------------------------------------------------

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    # Local name -> dotted name of what it refers to (a module, or something in one).
    imports: dict[str, str] = field(default_factory=dict)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    dicts: list[ast.Dict] = field(default_factory=list)
    constants: list[ast.Constant] = field(default_factory=list)

    @property
    def domain(self) -> str:
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else parts[0]


def _modules(package: Path) -> Iterator[Module]:
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        module = Module(name, path, ast.parse(path.read_text(), filename=str(path)))
        for node in ast.walk(module.tree):
            for child in ast.iter_child_nodes(node):
                module.parents[id(child)] = node
            if isinstance(node, ast.Call):
                module.calls.append(node)
            elif isinstance(node, ast.Dict):
                module.dicts.append(node)
            elif isinstance(node, ast.Constant):
                module.constants.append(node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    module.imports[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = parts[: len(parts) - node.level]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        yield module


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


# Settings ----------------------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        if set(present) == {IPv4Network, IPv6Network}:
            return "IP network"
        return " or ".join(_type_name(arg) for arg in present)
    if origin is Literal:
        names = [f"`{arg}`" for arg in args]
        return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"list of {_type_name(args[0])}s"
    plain = {
        str: "text",
        int: "integer",
        float: "number",
        bool: "boolean",
        Path: "path",
        timedelta: "duration",
    }
    if isinstance(annotation, type):
        return plain.get(annotation, annotation.__name__)
    return str(annotation)


def _number(value: object) -> str:
    return format(value, "g") if isinstance(value, float) else str(value)


def _constraints(info: FieldInfo) -> list[str]:
    low: tuple[str, bool] | None = None  # (bound, inclusive)
    high: tuple[str, bool] | None = None
    notes = []
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = (_number(item.ge), True)
        elif isinstance(item, annotated_types.Gt):
            low = (_number(item.gt), False)
        elif isinstance(item, annotated_types.Le):
            high = (_number(item.le), True)
        elif isinstance(item, annotated_types.Lt):
            high = (_number(item.lt), False)
        elif isinstance(item, annotated_types.MaxLen):
            notes.append(f"at most {item.max_length} characters")
        elif getattr(item, "pattern", None):
            notes.append(f"matching `{item.pattern}`")
    if low and high and low[1] and high[1]:
        return [f"{low[0]} to {high[0]}", *notes]
    bounds = []
    if low:
        bounds.append(f"{'at least' if low[1] else 'above'} {low[0]}")
    if high:
        bounds.append(f"{'at most' if high[1] else 'below'} {high[0]}")
    return bounds + notes


def _setting_type(info: FieldInfo) -> str:
    name = _type_name(info.annotation)
    if any(getattr(item, "__name__", "") == "NoDecode" for item in info.metadata):
        name = f"comma-separated {name}"
    return ", ".join([name, *_constraints(info)])


def _duration(value: timedelta) -> str:
    iso = TypeAdapter(timedelta).dump_python(value, mode="json")
    seconds = int(value.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds and seconds % size == 0:
            count = seconds // size
            return f"`{iso}` ({count} {unit}{'s' if count != 1 else ''})"
    return f"`{iso}`"


def _default(name: str, info: FieldInfo) -> str:
    value = info.default
    if value is None or SECRET_NAME.search(name) or "Secret" in str(info.annotation):
        return "(none)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, timedelta):
        return _duration(value)
    if isinstance(value, Path) and value.is_absolute() and value.is_relative_to(ROOT):
        return f"`{_shown(value)}` in the source tree"
    if isinstance(value, tuple):
        return f"`{','.join(str(item) for item in value)}`"
    text = _number(value)
    return f"`{text}`" if text else "empty"


def _setting_notes(source: str) -> dict[str, list[str]]:
    """For each field of Settings: the comment lines just above it, and under
    `validator:<field>` the docstrings of the validators that name it."""
    lines = source.splitlines()
    settings_class = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == Settings.__name__
    )
    notes: dict[str, list[str]] = defaultdict(list)
    for node in settings_class.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            comment: list[str] = []
            row = node.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#"):
                comment.insert(0, lines[row].strip().lstrip("#").strip())
                row -= 1
            if comment:
                notes[node.target.id].append(" ".join(comment))
        elif isinstance(node, ast.FunctionDef) and ast.get_docstring(node):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and _dotted(decorator.func) == "field_validator":
                    for arg in decorator.args:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            notes[f"validator:{arg.value}"].append(str(ast.get_docstring(node)))
    return notes


def _description(name: str, info: FieldInfo, notes: dict[str, list[str]]) -> str:
    said = [info.description] if info.description else notes.get(name, [])
    return " ".join([*said, *notes.get(f"validator:{name}", [])])


def _readers() -> dict[str, tuple[set[str], list[str]]]:
    """Who reads each variable of READ_ELSEWHERE, and in which files: a string constant equal
    to its name under src/gshare (but not a dict key: that sets it for another process), or
    `$NAME` in a shell script of hack/ or in compose.yaml."""
    found: dict[str, tuple[set[str], list[str]]] = {v: (set(), []) for v in READ_ELSEWHERE}

    def read(variable: str, location: str, path: Path) -> None:
        reader = next((r for prefix, r in READERS.items() if location.startswith(prefix)), None)
        if reader is None:
            raise SystemExit(f"{variable} is read in {location}: add it to READERS")
        who, where = found[variable]
        who.add(reader)
        if _shown(path) not in where:
            where.append(_shown(path))

    for module in _modules(PACKAGE):
        if module.path == SETTINGS_SOURCE:
            continue
        keys = {id(key) for body in module.dicts for key in body.keys if key is not None}
        for constant in module.constants:
            if constant.value in READ_ELSEWHERE and id(constant) not in keys:
                read(str(constant.value), module.name, module.path)
    for script in [*sorted((ROOT / "hack").glob("*.sh")), ROOT / "compose.yaml"]:
        text = script.read_text()
        for variable in sorted(READ_ELSEWHERE):
            if re.search(rf"\$\{{?{variable}\b", text):
                read(variable, _shown(script), script)
    unread = sorted(variable for variable, (who, _) in found.items() if not who)
    if unread:
        raise SystemExit(f"in READ_ELSEWHERE but read nowhere: {', '.join(unread)}")
    return found


def render_settings() -> str:
    notes = _setting_notes(SETTINGS_SOURCE.read_text())
    config = Settings.model_config
    env_file = config.get("env_file")
    intro = f"Each setting is read from its `{PREFIX}` environment variable"
    if env_file:
        intro += f" or from `{env_file}` in the working directory"
    intro += "." if config.get("case_sensitive") else "; names are matched without regard to case."
    lines = [_header(_shown(SETTINGS_SOURCE)), "# Settings", "", intro, ""]
    rows = [
        (
            f"`{PREFIX}{name.upper()}`",
            _cell(_setting_type(info)),
            _cell(_default(name, info)),
            _cell(_description(name, info, notes)),
        )
        for name, info in Settings.model_fields.items()
    ]
    lines += _table(("Variable", "Type", "Default", "Description"), rows)
    lines += ["", "## Read outside these settings", ""]
    readers = _readers()
    elsewhere = [
        (
            f"`{variable}`",
            ", ".join(sorted(readers[variable][0])),
            ", ".join(f"`{path}`" for path in readers[variable][1]),
        )
        for variable in sorted(READ_ELSEWHERE)
    ]
    lines += _table(("Variable", "Read by", "Where"), elsewhere)
    return "\n".join(lines) + "\n"


# Errors ------------------------------------------------------------------------------------


@dataclass
class ErrorClass:
    module: Module
    node: ast.ClassDef
    bases: list[str]
    own: dict[str, object]  # its class-level constants: status, code, message

    @property
    def dotted(self) -> str:
        return f"{self.module.name}.{self.node.name}"

    @property
    def init(self) -> ast.FunctionDef | None:
        return next(
            (n for n in self.node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
            None,
        )


@dataclass(frozen=True)
class Site:
    """One place that answers a code."""

    code: str
    status: int | None  # None: any status that has no code of its own
    meaning: str | None  # None: the message is made at run time
    domain: str
    rank: int  # 0: a class's own message, 1: a call or handler, 2: only when nothing else says
    where: tuple[str, int]


def _status_table(node: ast.stmt) -> tuple[str, dict[int, str]] | None:
    """A module-level table of codes by HTTP error status (`_CODES = {404: "not_found"}`), the
    codes of the errors the framework raises."""
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Dict)
        and node.value.keys
    ):
        return None
    table = {}
    for key, value in zip(node.value.keys, node.value.values, strict=True):
        if not (
            isinstance(key, ast.Constant)
            and type(key.value) is int
            and 400 <= key.value < 600
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            return None
        table[key.value] = value.value
    return node.targets[0].id, table


class Source:
    """A package parsed once, with names resolved across its modules."""

    def __init__(self, package: Path) -> None:
        self.modules = {module.name: module for module in _modules(package)}
        self.classes: dict[str, ErrorClass] = {}
        self.constants: dict[str, object] = {}
        for module in self.modules.values():
            for node in module.tree.body:
                if isinstance(node, ast.ClassDef):
                    bases = [self.resolve(module, base) or "" for base in node.bases]
                    own: dict[str, object] = {}
                    for statement in node.body:
                        if isinstance(statement, ast.Assign | ast.AnnAssign) and isinstance(
                            statement.value, ast.Constant
                        ):
                            targets = (
                                statement.targets
                                if isinstance(statement, ast.Assign)
                                else [statement.target]
                            )
                            own |= {
                                t.id: statement.value.value
                                for t in targets
                                if isinstance(t, ast.Name)
                            }
                    self.classes[f"{module.name}.{node.name}"] = ErrorClass(
                        module, node, bases, own
                    )
                elif (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Constant)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    self.constants[f"{module.name}.{node.targets[0].id}"] = node.value.value
        family = {ERROR_ROOT}
        while True:
            grown = family | {c.dotted for c in self.classes.values() if family & set(c.bases)}
            if grown == family:
                break
            family = grown
        self.family = {name: self.classes[name] for name in sorted(family) if name in self.classes}

    def resolve(self, module: Module, node: ast.expr) -> str | None:
        """The dotted name that `NotFound` or `errors.NotFound` stands for in a module."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in module.imports:
            full = module.imports[head] + (f".{rest}" if rest else "")
        else:
            full = f"{module.name}.{dotted}"
        for _ in range(8):  # follow re-exports: a name imported by the module it is taken from
            owner, _, name = full.rpartition(".")
            if owner not in self.modules or name not in self.modules[owner].imports:
                break
            full = self.modules[owner].imports[name]
        return full

    def inherited(self, cls: ErrorClass, attribute: str) -> object:
        if attribute in cls.own:
            return cls.own[attribute]
        for base in cls.bases:
            if base in self.family:
                return self.inherited(self.family[base], attribute)
        return None

    def with_init(self, cls: ErrorClass) -> ErrorClass | None:
        """The class whose __init__ a call of `cls` runs."""
        if cls.init is not None:
            return cls
        base = next((self.family[b] for b in cls.bases if b in self.family), None)
        return None if base is None else self.with_init(base)

    # Expressions ------------------------------------------------------------------------

    def enclosing_function(self, module: Module, node: ast.AST) -> Function | None:
        parent = module.parents.get(id(node))
        while parent is not None and not isinstance(parent, Function):
            parent = module.parents.get(id(parent))
        return parent

    def argument_values(
        self, module: Module, node: ast.expr, depth: int = 0
    ) -> list[tuple[Module, ast.expr]]:
        """What a name may hold when it is a parameter of the function around it: its default
        and what the calls of that function in the module pass; else the expression itself."""
        function = self.enclosing_function(module, node)
        if not isinstance(node, ast.Name) or function is None or depth > 3:
            return [(module, node)]
        arguments = function.args
        positional = [p.arg for p in [*arguments.posonlyargs, *arguments.args]]
        keyword_only = [p.arg for p in arguments.kwonlyargs]
        values: list[tuple[Module, ast.expr]] = []
        if node.id in positional:
            index = positional.index(node.id)
            offset = len(positional) - len(arguments.defaults)
            if index >= offset:
                values.append((module, arguments.defaults[index - offset]))
        elif node.id in keyword_only:
            index = -1
            default = arguments.kw_defaults[keyword_only.index(node.id)]
            if default is not None:
                values.append((module, default))
        else:
            return [(module, node)]
        for call in module.calls:
            if _dotted(call.func) != function.name:
                continue
            passed = [k.value for k in call.keywords if k.arg == node.id]
            if not passed and 0 <= index < len(call.args):
                passed = [call.args[index]]
            for value in passed:
                values += self.argument_values(module, value, depth + 1)
        return values

    def codes(self, module: Module, node: ast.expr) -> list[str]:
        found = []
        for where, value in self.argument_values(module, node):
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append(value.value)
            elif isinstance(value, ast.IfExp):
                found += self.codes(where, value.body) + self.codes(where, value.orelse)
        return found

    def texts(self, module: Module, node: ast.expr) -> list[str | None]:
        """The messages an expression may make, holes shown as …; None: made at run time."""
        found: list[str | None] = []
        for where, value in self.argument_values(module, node):
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append(value.value)
            elif isinstance(value, ast.JoinedStr):
                found.append("".join(self._part(where, part) for part in value.values))
            elif isinstance(value, ast.IfExp):
                found += self.texts(where, value.body) + self.texts(where, value.orelse)
            elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
                for left in self.texts(where, value.left):
                    for right in self.texts(where, value.right):
                        found.append(None if left is None or right is None else left + right)
            else:
                found.append(None)
        return found

    def _part(self, module: Module, part: ast.expr) -> str:
        """A piece of an f-string: a module constant is shown as its value, anything else is a
        hole."""
        if isinstance(part, ast.Constant):
            return str(part.value)
        if isinstance(part, ast.FormattedValue) and part.format_spec is None:
            value = self.constants.get(self.resolve(module, part.value) or "")
            if isinstance(value, int | str):
                return repr(value) if part.conversion == ord("r") else str(value)
        return HOLE

    # Sites ------------------------------------------------------------------------------

    def sites(self) -> Iterator[Site]:
        for cls in self.family.values():
            yield from self._class_sites(cls)
        for module in self.modules.values():
            yield from self._call_sites(module)
            yield from self._handler_sites(module)

    @staticmethod
    def _takes_message(init: ast.FunctionDef) -> bool:
        params = [*init.args.posonlyargs, *init.args.args][1:]
        return bool(params) and params[0].arg == "message"

    def _init_messages(self, cls: ErrorClass) -> list[str | None]:
        """The message an __init__ that does not take one passes on to its base."""
        assert cls.init is not None
        for node in ast.walk(cls.init):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__init__"
            ):
                given = node.args[:1] or [k.value for k in node.keywords if k.arg == "message"]
                if given:
                    return self.texts(cls.module, given[0])
        return [None]

    def _class_sites(self, cls: ErrorClass) -> Iterator[Site]:
        code, status = self.inherited(cls, "code"), self.inherited(cls, "status")
        if not isinstance(code, str) or not isinstance(status, int):
            return
        where = (_shown(cls.module.path), cls.node.lineno)
        described = ast.get_docstring(cls.node)
        if described:
            # What the code means, for classes whose message is made when they are raised.
            yield Site(code, status, described, cls.module.domain, 0, where)
        if "message" in cls.own:
            yield Site(code, status, str(cls.own["message"]), cls.module.domain, 0, where)
        elif cls.init is not None and not self._takes_message(cls.init):
            for text in self._init_messages(cls):
                yield Site(code, status, text, cls.module.domain, 0, where)
        else:
            fallback = self.inherited(cls, "message")
            yield Site(code, status, str(fallback), cls.module.domain, 2, where)

    def _call_sites(self, module: Module) -> Iterator[Site]:
        for call in module.calls:
            cls = self.family.get(self.resolve(module, call.func) or "")
            status = None if cls is None else self.inherited(cls, "status")
            if cls is None or not isinstance(status, int):
                continue
            given = [k.value for k in call.keywords if k.arg == "code"]
            codes = self.codes(module, given[0]) if given else [str(self.inherited(cls, "code"))]
            runs = self.with_init(cls)
            if runs is not None and runs.init is not None and not self._takes_message(runs.init):
                texts = self._init_messages(runs)
            else:
                message = call.args[:1] or [k.value for k in call.keywords if k.arg == "message"]
                texts = (
                    self.texts(module, message[0])
                    if message
                    else [str(self.inherited(cls, "message"))]
                )
            where = (_shown(module.path), call.lineno)
            for code in codes:
                for text in texts:
                    yield Site(code, status, text, module.domain, 1, where)

    def _handler_sites(self, module: Module) -> Iterator[Site]:
        path = _shown(module.path)
        tables: dict[str, dict[int, str]] = {}
        for statement in module.tree.body:
            table = _status_table(statement)
            if table is None:
                continue
            tables[table[0]] = table[1]
            for status, code in table[1].items():
                where = (path, statement.lineno)
                phrase = HTTPStatus(status).phrase + "."
                yield Site(code, status, phrase, module.domain, 2, where)
                for message in self._http_exceptions(status):
                    yield Site(code, status, message, module.domain, 1, where)
        for call in module.calls:
            where = (path, call.lineno)
            if self.resolve(module, call.func) == ERROR_RESPONSE and len(call.args) >= 3:
                sent = call.args[0].value if isinstance(call.args[0], ast.Constant) else None
                if type(sent) is int:
                    for code in self.codes(module, call.args[1]):
                        for text in self.texts(module, call.args[2]):
                            yield Site(code, sent, text, module.domain, 1, where)
            elif (
                isinstance(call.func, ast.Attribute)
                and call.func.attr == "get"
                and _dotted(call.func.value) in tables
                and len(call.args) == 2
            ):
                # The code of a status the table does not name.
                for code in self.codes(module, call.args[1]):
                    text = "Any other HTTP error the framework answers."
                    yield Site(code, None, text, module.domain, 1, where)
        for body in module.dicts:
            fields = {
                key.value: value
                for key, value in zip(body.keys, body.values, strict=True)
                if isinstance(key, ast.Constant)
            }
            code_node, message_node = fields.get("code"), fields.get("message")
            if not isinstance(code_node, ast.Constant) or message_node is None:
                continue
            sent = self._status_near(module, body)
            if sent is not None:
                for text in self.texts(module, message_node):
                    where = (path, body.lineno)
                    yield Site(str(code_node.value), sent, text, module.domain, 1, where)

    def _http_exceptions(self, status: int) -> list[str | None]:
        """The details of the HTTPExceptions raised with a status."""
        found: list[str | None] = []
        for module in self.modules.values():
            for call in module.calls:
                if (
                    call.args
                    and isinstance(call.args[0], ast.Constant)
                    and call.args[0].value == status
                    and self.resolve(module, call.func) in HTTP_EXCEPTIONS
                ):
                    detail = call.args[1:2] or [k.value for k in call.keywords if k.arg == "detail"]
                    found += self.texts(module, detail[0]) if detail else []
        return found

    def _status_near(self, module: Module, body: ast.Dict) -> int | None:
        """The status an error body written out is sent with: the `status_code=` of the call it
        is passed to, or the `"status"` of the ASGI start message in the same function."""
        parent = module.parents.get(id(body))
        while parent is not None and not isinstance(parent, ast.Call | ast.stmt):
            parent = module.parents.get(id(parent))
        if isinstance(parent, ast.Call):
            for keyword in parent.keywords:
                value = keyword.value
                if keyword.arg == "status_code" and isinstance(value, ast.Constant):
                    return value.value if type(value.value) is int else None
        function = self.enclosing_function(module, body)
        for node in ast.walk(function if function is not None else module.tree):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "status"
                        and isinstance(value, ast.Constant)
                        and type(value.value) is int
                    ):
                        return value.value
        return None


def _first_sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`\"'(])", text, maxsplit=1)[0]


@dataclass(frozen=True)
class ErrorCode:
    code: str
    statuses: tuple[int | None, ...]
    meanings: tuple[str, ...]  # at most MAX_MEANINGS
    more: int  # distinct meanings left out
    domains: tuple[str, ...]


def error_codes(package: Path = PACKAGE) -> list[ErrorCode]:
    by_code: dict[str, list[Site]] = defaultdict(list)
    for site in Source(package).sites():
        by_code[site.code].append(site)
    found = []
    for code, sites in sorted(by_code.items()):
        statuses = sorted({s.status for s in sites}, key=lambda s: (s is None, s or 0))
        ranked = sorted(
            (s for s in sites if s.meaning is not None), key=lambda s: (s.rank, s.where)
        )
        said = [s for s in ranked if s.rank < 2] or ranked
        meanings: list[str] = []
        for site in said:
            text = _first_sentence(site.meaning or "")
            if len(statuses) > 1:
                text += f" ({site.status or 'any other'})"
            if text not in meanings:
                meanings.append(text)
        if not meanings:
            meanings = ["(The message is made when the error is raised.)"]
        found.append(
            ErrorCode(
                code=code,
                statuses=tuple(statuses),
                meanings=tuple(meanings[:MAX_MEANINGS]),
                more=max(0, len(meanings) - MAX_MEANINGS),
                domains=tuple(sorted({s.domain for s in sites})),
            )
        )
    return found


def render_errors(package: Path = PACKAGE) -> str:
    lines = [
        _header(_shown(package)),
        "# Error codes",
        "",
        'Every error the API answers has the body `{"error": {"code": …, "message": …}}`; '
        "some add fields of their own beside these two. Clients branch on the code; the message "
        "is for people, and where a code has several meanings, the message says which. An "
        "`invalid_request` about the body also lists each refused field, as "
        '`"fields": [{"field": "cpu_millicores", "message": …}]`, for a form to show on the '
        "field it concerns.",
        "",
    ]
    rows = []
    for entry in error_codes(package):
        meanings = [_cell(meaning) for meaning in entry.meanings]
        if entry.more:
            meanings.append(f"(and {entry.more} more)")
        rows.append(
            (
                f"`{entry.code}`",
                ", ".join("any other" if s is None else str(s) for s in entry.statuses),
                "<br>".join(meanings),
                ", ".join(entry.domains),
            )
        )
    lines += _table(("Code", "Status", "Meaning", "Domains"), rows)
    return "\n".join(lines) + "\n"


# Command line ------------------------------------------------------------------------------


class _Parsing(Exception):
    """Raised in place of parsing, with the parser that was about to parse."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def cli_parser() -> argparse.ArgumentParser:
    """The parser of `gshare`. cli.main builds it and parses at once, so it is caught at that
    parse, before any setting is read or anything runs."""

    def caught(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        raise _Parsing(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", caught):
        try:
            cli.main([])
        except _Parsing as parsing:
            return parsing.parser
    raise SystemExit("gshare.cli.main returned without parsing its arguments")


@dataclass(frozen=True)
class Option:
    invocation: str  # as `--help` shows it: `--email EMAIL`
    default: str
    help: str


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    usage: str
    options: tuple[Option, ...]


def _sentence(text: str | None) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=1000)  # on one line
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, "")
    return formatter.format_help().strip()


def _option_default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0:
        return "off"
    if action.default is None or action.default == argparse.SUPPRESS:
        return "(none)"
    return f"`{action.default}`"


def _options(parser: argparse.ArgumentParser) -> tuple[Option, ...]:
    formatter = argparse.HelpFormatter(parser.prog)
    return tuple(
        Option(
            invocation=formatter._format_action_invocation(action),
            default=_option_default(action),
            help=_sentence(action.help),
        )
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    )


def cli_commands(parser: argparse.ArgumentParser) -> list[Command]:
    """Every command of the parser, in the order `gshare --help` lists them."""
    commands = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            commands.append(
                Command(
                    name=name,
                    help=_sentence(helps.get(name) or sub.description),
                    usage=_usage(sub),
                    options=_options(sub),
                )
            )
    return commands


def _anchor(heading: str) -> str:
    """The fragment GitHub gives a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def render_cli() -> str:
    parser = cli_parser()
    env_file = Settings.model_config.get("env_file")
    read_from = f"`{PREFIX}` environment variables" + (f" or `{env_file}`" if env_file else "")
    lines = [
        _header(_shown(CLI_SOURCE)),
        "# Command line",
        "",
        f"`{parser.prog}`: {_sentence(parser.description)}",
        "",
        "It starts GShare's processes and does a few tasks for whoever runs the host; people "
        f"use the console, not this command. Every command reads its settings from {read_from} "
        "(see [settings.md](settings.md)); the options below are only those given on the "
        "command line. Every command also takes `-h` or `--help`.",
        "",
        "```",
        _usage(parser),
        "```",
        "",
    ]
    commands = cli_commands(parser)
    lines += _table(
        ("Command", "What it does"),
        (
            (f"[`{parser.prog} {c.name}`](#{_anchor(f'{parser.prog} {c.name}')})", _cell(c.help))
            for c in commands
        ),
    )
    for command in commands:
        lines += ["", f"## `{parser.prog} {command.name}`", "", command.help, "", "```"]
        lines += [command.usage, "```", ""]
        if command.options:
            lines += _table(
                ("Option", "Default", "Description"),
                ((f"`{o.invocation}`", o.default, _cell(o.help)) for o in command.options),
            )
        else:
            lines.append("It takes no options.")
    return "\n".join(lines) + "\n"


# ---- the chart's values ------------------------------------------------------------------

_VALUE_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][A-Za-z0-9_./-]*):(?P<rest>( .*)?)$")


@dataclass(frozen=True)
class ChartValue:
    path: str  # dotted, as `--set` takes it
    default: str  # as values.yaml writes it; empty for a section
    comment: str  # the comment lines above it and after it, joined
    section: bool  # it holds other values


def _split_comment(rest: str) -> tuple[str, str]:
    """A value and its trailing comment (a # outside quotes)."""
    quote = ""
    for i, char in enumerate(rest):
        if char in "\"'" and not quote:
            quote = char
        elif char == quote:
            quote = ""
        elif char == "#" and not quote and (i == 0 or rest[i - 1] == " "):
            return rest[:i].strip(), rest[i + 1 :].strip()
    return rest.strip(), ""


def chart_values(text: str) -> list[ChartValue]:
    """Every key of values.yaml with its default and the comments that describe it. Lists are
    defaults like any other; their items are not keys."""
    found: list[ChartValue] = []
    stack: list[tuple[int, str]] = []
    notes: list[str] = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("#"):
            notes.append(stripped.lstrip("#").strip())
            continue
        match = _VALUE_LINE.match(line)
        if not match:
            notes = [] if not stripped.startswith("- ") else notes
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(k for _, k in stack), match["key"]])
        value, trailing = _split_comment(match["rest"])
        following = next((x for x in lines[n + 1 :] if x.strip()), "")
        deeper = len(following) - len(following.lstrip(" ")) > indent
        section = value == "" and deeper and not following.strip().startswith("- ")
        if value == "" and not section:
            items = []
            for x in lines[n + 1 :]:
                if not x.strip().startswith("- "):
                    break
                items.append(x.strip()[2:].strip())
            value = "[" + ", ".join(items) + "]"
        comment = " ".join([*notes, trailing]).strip()
        found.append(ChartValue(path, value, comment, section))
        notes = []
        if section:
            stack.append((indent, match["key"]))
    return found


def _schema_type(schema: dict[str, Any], path: str) -> str:
    node: dict[str, Any] | None = schema
    definitions = schema.get("definitions", {})
    for part in path.split("."):
        if node is None:
            return ""
        named = (node.get("properties") or {}).get(part)
        if named is None and isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]  # a map's key: the rest of the path is one key
            break
        node = named
        while node is not None and "$ref" in node:
            node = definitions.get(node["$ref"].rsplit("/", 1)[-1])
    return "" if node is None else _kind(node, definitions)


def _kind(node: dict[str, Any], definitions: dict[str, Any]) -> str:
    """What a schema node accepts, in a few words."""
    while "$ref" in node:
        node = definitions[node["$ref"].rsplit("/", 1)[-1]]
    if "enum" in node:
        return " or ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`" if node["const"] != "" else "empty"
    for either in ("anyOf", "oneOf"):
        if either in node:
            return " or ".join(_kind(n, definitions) for n in node[either])
    if "allOf" in node:  # the first part says the kind; the rest narrow it
        return _kind(node["allOf"][0], definitions)
    kind = node.get("type", "")
    return " or ".join(kind if isinstance(kind, list) else [kind] if kind else [])


def render_chart_values(chart: Path = CHART) -> str:
    import json

    schema = json.loads((chart / "values.schema.json").read_text())
    values = chart_values((chart / "values.yaml").read_text())
    lines = [
        _header(_shown(chart / "values.yaml") + " and values.schema.json"),
        "# The chart's values",
        "",
        "Every value of the Helm chart (`charts/gshare`), its default, and what it does, from the "
        "comments of `values.yaml`; the types are those `values.schema.json` checks, which "
        "`helm install`, `helm upgrade` and `helm lint` refuse a release against. How to deploy "
        "is in [deploy.md](../how-to/deploy.md).",
        "",
    ]
    rows = []
    for value in values:
        if value.section and not value.comment:
            continue
        default = "" if value.section else f"`{value.default}`"
        rows.append(
            (
                f"`{value.path}`",
                _cell(_schema_type(schema, value.path)),
                _cell(default),
                _cell(value.comment),
            )
        )
    lines += _table(("Value", "Type", "Default", "What it does"), rows)
    return "\n".join(lines) + "\n"


def main() -> None:
    pages = (
        (SETTINGS_PAGE, render_settings()),
        (ERRORS_PAGE, render_errors()),
        (CLI_PAGE, render_cli()),
        (CHART_PAGE, render_chart_values()),
    )
    for page, text in pages:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text)
        print(page, file=sys.stderr)


if __name__ == "__main__":
    main()
