"""Registry, schemas for function calling, argument parsing, results (pure)."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
from typing import Any, Literal

import pytest
from pydantic import Field

from shared.kernel.errors import ConfigurationError
from shared.tools import ExternalTool, ToolArgs, ToolCallError, ToolRegistry, builtin_registry
from shared.tools.results import ToolResult
from shared.tools.schema import flatten_schema, function_parameters, nullable
from shared.tools.tool_registry import decode_arguments


def walk(node: Any) -> list[Any]:
    found = [node]
    if isinstance(node, dict):
        for value in node.values():
            found += walk(value)
    elif isinstance(node, list):
        for value in node:
            found += walk(value)
    return found


class Inner(ToolArgs):
    colour: Literal["red", "blue"] = Field(description="Which colour.")


class Outer(ToolArgs):
    inner: Inner = Field(description="The nested part.")
    count: int | None = Field(default=None, ge=1, description="Optional count.")
    cleared: str | None = nullable(description="Null clears it.")


def test_nested_models_are_inlined_without_titles() -> None:
    schema = function_parameters(Outer)
    assert schema == {
        "type": "object",
        "additionalProperties": False,
        "required": ["inner"],
        "properties": {
            "inner": {
                "type": "object",
                "additionalProperties": False,
                "required": ["colour"],
                "description": "The nested part.",
                "properties": {
                    "colour": {
                        "type": "string",
                        "enum": ["red", "blue"],
                        "description": "Which colour.",
                    },
                },
            },
            "count": {"type": "integer", "minimum": 1, "description": "Optional count."},
            "cleared": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "Null clears it.",
            },
        },
    }


def test_every_builtin_schema_is_flat_strict_and_described(registry: ToolRegistry) -> None:
    for tool in registry:
        definition = tool.definition
        nodes = walk(definition.parameters)
        assert not any(isinstance(n, dict) and ("$ref" in n or "$defs" in n) for n in nodes)
        assert not any(isinstance(n, dict) and "title" in n and n.get("type") for n in nodes)
        objects = [n for n in nodes if isinstance(n, dict) and n.get("type") == "object"]
        assert all(o.get("additionalProperties") is False for o in objects), tool.name
        assert definition.description and len(definition.description) < 400
        wire = definition.as_openai_tool()
        assert wire["type"] == "function" and json.dumps(wire)


def test_no_argument_is_described_by_a_docstring_the_model_never_reads(
    registry: ToolRegistry,
) -> None:
    """An attribute docstring under a tool argument would be a note for readers only (ToolArgs
    does not read them: `use_attribute_docstrings` costs ~50 ms at import). What the model
    should read goes in `Field(description=...)`."""
    described_by_docstring = [
        f"{model.__qualname__}.{ast.unparse(field.target)}"
        for model in _subclasses(ToolArgs)
        for field, after in itertools.pairwise(_class_body(model))
        if isinstance(field, ast.AnnAssign) and _is_docstring(after)
    ]
    assert described_by_docstring == []


def _subclasses(cls: type[ToolArgs]) -> list[type[ToolArgs]]:
    found = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("shared."):
            found += [sub, *_subclasses(sub)]
    return found


def _class_body(cls: type) -> list[ast.stmt]:
    definition = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(definition, ast.ClassDef)
    return definition.body


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def test_recursive_refs_are_refused() -> None:
    schema = {
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
        "$ref": "#/$defs/N",
    }
    with pytest.raises(ConfigurationError, match="recursive"):
        flatten_schema(schema)


def test_names_must_be_unique_and_provider_safe() -> None:
    registry = builtin_registry()
    with pytest.raises(ConfigurationError, match="two tools"):
        registry.add(registry.get("list_tasks"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="must match"):
        ToolRegistry([external("has space")])


async def nothing(arguments: dict[str, Any]) -> dict[str, Any]:
    return {}


def external(name: str, schema: dict[str, Any] | None = None) -> ExternalTool:
    schema = schema or {"type": "object", "properties": {"n": {"type": "integer"}}}
    return ExternalTool(name, "x", schema, "read", nothing)


def test_external_arguments_are_checked_against_the_published_schema() -> None:
    tool = external(
        "ext",
        {"type": "object", "required": ["n"], "properties": {"n": {"type": ["integer", "null"]}}},
    )
    assert tool.parse({"n": None}).canonical == '{"n":null}'
    with pytest.raises(ToolCallError, match="'n' is a required property"):
        tool.parse({})
    with pytest.raises(ConfigurationError, match="invalid input schema"):
        external("bad", {"type": "object", "properties": {"n": {"type": "integer-ish"}}})


def test_decode_arguments() -> None:
    assert decode_arguments("  ") == {}
    assert decode_arguments('{"a": 1}') == {"a": 1}
    with pytest.raises(ToolCallError, match="not valid JSON"):
        decode_arguments("{'a': 1}")


def test_result_content_is_compact_json_and_marks_repeats() -> None:
    result = ToolResult("c1", "t", {"n": "é"})
    repeat = result.as_repeat(call_id="c2", of="c1")
    assert result.content() == '{"n":"é"}'
    assert json.loads(repeat.content())["repeated"] is True
    assert (repeat.call_id, repeat.repeat_of, repeat.ok) == ("c2", "c1", True)


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return builtin_registry()
