"""The docs site's generated pages: MkDocs hooks (`mkdocs.yml`, `hooks:`).

A page asks for generated text with a marker line of its own, replaced at build time:

    <!-- generated: configuration -->         the settings table, from `kernel.settings.Settings`
    <!-- generated: openapi chat -->          a function's routes and schemas, from its app's
                                              `.openapi()` (chat, agent_planner, agent_executor)
    <!-- generated: events -->                every event type, from the events' JSON Schema
    <!-- generated: tools -->                 the built-in tools, from their registry

So the reference says what the code says: the settings' docstrings, the routes' and models'
descriptions. Mentions of `docs/<page>.md` in that text become links to the page.
"""

from __future__ import annotations

import ast
import json
import re
from decimal import Decimal
from functools import cache
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MARKER = re.compile(r"^<!-- generated: ([a-z_]+)(?: ([a-z_]+))? -->$", re.MULTILINE)
DOC_MENTION = re.compile(r"`?\bdocs/([a-z0-9_/-]+\.md)`?")
FUNCTIONS = ("chat", "agent_planner", "agent_executor")

Schema = dict[str, Any]


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: fill each marker of the page with what it names."""
    src = PurePosixPath(page.file.src_uri)

    def fill(marker: re.Match[str]) -> str:
        return linked(generate(marker.group(1), marker.group(2)), src)

    return MARKER.sub(fill, markdown)


def generate(kind: str, argument: str | None = None) -> str:
    """The markdown a marker stands for."""
    if kind == "configuration":
        return configuration_table()
    if kind == "openapi" and argument in FUNCTIONS:
        return openapi_reference(openapi_document(argument))
    if kind == "events":
        return events_reference(events_schema())
    if kind == "tools":
        return tools_table()
    raise ValueError(f"no generated text is called {kind} {argument or ''}".strip())


def linked(text: str, page: PurePath) -> str:
    """`docs/x.md` mentions as links from `page` (a path under docs/), where the file exists."""
    depth = len(page.parent.parts)

    def link(mention: re.Match[str]) -> str:
        target = mention.group(1)
        if not (DOCS / target).is_file():
            return mention.group(0)
        return f"[`docs/{target}`]({'../' * depth}{target})"

    return DOC_MENTION.sub(link, text)


# Configuration ------------------------------------------------------------------------------


def configuration_table() -> str:
    """One row per setting: its variable, its default and its docstring, in the model's order."""
    from shared.kernel.settings import Settings

    docstrings = field_docstrings(ROOT / "shared" / "kernel" / "settings.py", "Settings")
    rows = ["| Variable | Default | Meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        rows.append(
            f"| {variables(name, field.validation_alias)} | {default_text(field.default)} "
            f"| {cell(docstrings[name])} |"
        )
    return "\n".join(rows)


def field_docstrings(path: Path, class_name: str) -> dict[str, str]:
    """The docstring under each annotated field of a class (the attribute docstrings)."""
    tree = ast.parse(path.read_text())
    found = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    docs: dict[str, str] = {}
    for field, after in zip(found.body, found.body[1:], strict=False):
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
            continue
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[field.target.id] = " ".join(str(after.value.value).split())
    return docs


def variables(name: str, alias: object) -> str:
    """The environment variables a field is read from (`LLM_API_KEY` / `DEEPSEEK_API_KEY`)."""
    choices = getattr(alias, "choices", None) or [name.upper()]
    return " / ".join(f"`{choice}`" for choice in choices)


def default_text(value: object) -> str:
    if value is None:
        return "*(unset)*"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, Decimal | int | float | str | Path):
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def cell(text: str) -> str:
    """Text fit for one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


# Tools -------------------------------------------------------------------------------------


def tools_table() -> str:
    """The built-in tools in the order agents are offered them."""
    from shared.tools.builtin import builtin_tools

    rows = ["| tool | access | what the model reads |", "| --- | --- | --- |"]
    for tool in builtin_tools():
        access = f"{tool.access}, destructive" if tool.destructive else tool.access
        rows.append(f"| `{tool.name}` | {access} | {cell(tool.description)} |")
    return "\n".join(rows)


# HTTP API ------------------------------------------------------------------------------------


@cache
def openapi_document(function: str) -> Schema:
    """The function's OpenAPI document, as its app serves it at `/openapi.json`."""
    from functions.agent_executor.app import create_app as executor_app
    from functions.agent_planner.app import create_app as planner_app
    from functions.chat.app import create_app as chat_app

    apps = {"chat": chat_app, "agent_planner": planner_app, "agent_executor": executor_app}
    document: Schema = apps[function]().openapi()
    return document


def openapi_reference(document: Schema) -> str:
    """Every route (parameters, body, answers), then every schema the routes use."""
    out: list[str] = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            out += operation_section(method.upper(), path, operation)
    out += ["## Schemas", ""]
    for name, schema in document["components"]["schemas"].items():
        out += schema_section(name, schema)
    return "\n".join(out)


def operation_section(method: str, path: str, operation: Schema) -> list[str]:
    auth = "a bearer token" if operation.get("security") else "none"
    out = [f"### `{method} {path}`", "", f"**{operation.get('summary', '')}.** Auth: {auth}.", ""]
    if description := operation.get("description"):
        out += [description.strip(), ""]
    if parameters := operation.get("parameters"):
        out += [
            "| parameter | in | type | required | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for p in parameters:
            text = p.get("description") or p["schema"].get("description", "")
            out.append(
                f"| `{p['name']}` | {p['in']} | {type_text(p['schema'])} "
                f"| {'yes' if p.get('required') else 'no'} | {cell(text)} |"
            )
        out.append("")
    if body := operation.get("requestBody"):
        for media, content in body["content"].items():
            out += [f"Body (`{media}`): {type_text(content['schema'])}", ""]
    out += ["| status | answer | body |", "| --- | --- | --- |"]
    for status, response in operation["responses"].items():
        bodies = [
            f"{type_text(content['schema'])} (`{media}`)"
            for media, content in response.get("content", {}).items()
            if "schema" in content
        ]
        out.append(f"| {status} | {cell(response.get('description', ''))} | {', '.join(bodies)} |")
    return [*out, ""]


def schema_section(name: str, schema: Schema) -> list[str]:
    out = [f"### {name} {{ #{anchor(name)} }}", ""]
    if description := schema.get("description"):
        out += [description.strip(), ""]
    if properties := schema.get("properties"):
        out += property_table(properties, set(schema.get("required", [])))
    elif "oneOf" in schema or "anyOf" in schema or "enum" in schema:
        out += [f"One of: {type_text(schema)}", ""]
    return out


def property_table(properties: Schema, required: set[str]) -> list[str]:
    rows = ["| field | type | description |", "| --- | --- | --- |"]
    for key, spec in properties.items():
        text = spec.get("description", "")
        if key not in required and "default" in spec:
            text = f"{text} Default: `{json.dumps(spec['default'])}`.".strip()
        rows.append(f"| `{key}` | {type_text(spec)} | {cell(text)} |")
    return [*rows, ""]


def anchor(name: str) -> str:
    return f"schema-{name.lower()}"


def type_text(schema: Schema) -> str:
    """A schema in a few words: `string (uuid)`, `list of [Step](#schema-step)`, `a | null`."""
    if ref := schema.get("$ref"):
        name = ref.rsplit("/", 1)[-1]
        return f"[{name}](#{anchor(name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " \\| ".join(type_text(option) for option in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {type_text(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        values = schema["additionalProperties"]
        return f"object of {type_text(values) if isinstance(values, dict) else 'any'}"
    return f"{kind} ({schema['format']})" if "format" in schema else str(kind)


# Events --------------------------------------------------------------------------------------


@cache
def events_schema() -> Schema:
    """The events' JSON Schema, as the chat function serves it at `/schemas/events.json`."""
    from shared.wire.event_schema import events_json_schema

    schema: Schema = events_json_schema()
    return schema


def events_reference(schema: Schema) -> str:
    """The envelope every event has, then each type: when it is sent and its `data`."""
    definitions: Schema = schema["$defs"]
    events = [definitions[ref["$ref"].rsplit("/", 1)[-1]] for ref in schema["oneOf"]]
    envelope = {k: v for k, v in events[0]["properties"].items() if k not in ("type", "data")}
    out = [schema.get("description", "").strip(), "", "## Every event", ""]
    out += property_table(envelope, set(events[0].get("required", [])))
    out += ["## The types", ""]
    for event in events:
        kind = event["properties"]["type"]["const"]
        out += [f"### `{kind}`", "", event.get("description", "").strip(), ""]
        data = event["properties"]["data"]
        out += data_section(data, definitions)
    out += ["## Shapes used in `data`", ""]
    for name, shape in definitions.items():
        if not name.endswith(("Event", "Data")):
            out += schema_section(name, shape)
    return "\n".join(out)


def data_section(data: Schema, definitions: Schema) -> list[str]:
    """`data`'s fields; a `data` that is one of several shapes lists each."""
    options = data.get("oneOf") or data.get("anyOf") or [data]
    out: list[str] = []
    for option in options:
        name = option.get("$ref", "").rsplit("/", 1)[-1]
        shape = definitions.get(name, option)
        if len(options) > 1 and shape.get("description"):
            out += [f"`data` when: {shape['description'].strip()}", ""]
        out += property_table(shape.get("properties", {}), set(shape.get("required", [])))
    return out
