"""JSON schemas for function calling: self-contained, compact, and easy on providers.

OpenAI-compatible providers (DeepSeek in particular) handle plain, inline schemas best: no
`$ref`/`$defs`, no `title` noise, `additionalProperties: false` on objects. Pydantic's output is
rewritten into that shape. An optional field (`X | None = None`) becomes plain `X` outside
`required`, so the model is not invited to send explicit nulls — unless the field is marked
`NULLABLE`, because null means something there.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from shared.kernel.errors import ConfigurationError

JsonObject = dict[str, JsonValue]
"""A JSON object: tool arguments, tool outputs, schemas."""

NULLABLE = "x-nullable"
"""Marks an optional field whose explicit null means something (e.g. "clear this"): it keeps
its `anyOf [X, null]`. Set it with `json_schema_extra={NULLABLE: True}` (see `nullable()`)."""

_MAX_DEPTH = 32
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains")


@cache
def function_parameters(model: type[BaseModel]) -> JsonObject:
    """The `parameters` schema of a function whose arguments `model` validates."""
    schema = flatten_schema(model.model_json_schema())
    schema.pop("description", None)  # the tool's own description says it once
    return schema


def flatten_schema(schema: dict[str, Any]) -> JsonObject:
    """Inline every local `$ref`, drop titles, collapse optional `anyOf [X, null]` to X."""
    definitions = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    flat = _node(schema, definitions, depth=0)
    flat.pop("$defs", None)
    flat.pop("definitions", None)
    if flat.get("type") == "object":
        flat.setdefault("properties", {})
    return flat


def _node(node: dict[str, Any], definitions: dict[str, Any], *, depth: int) -> JsonObject:
    if depth > _MAX_DEPTH:
        raise ConfigurationError("tool schema is recursive or too deeply nested to inline")
    if "$ref" in node:
        node = {
            **_resolve(node["$ref"], definitions),
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    out: JsonObject = {}
    for key, value in node.items():
        if key in ("title", "$defs", "definitions"):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _child(sub, definitions, depth) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_child(sub, definitions, depth) for sub in value]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = _child(value, definitions, depth)
        else:
            out[key] = value
    _collapse_optionals(out)
    return out


def _child(value: Any, definitions: dict[str, Any], depth: int) -> JsonValue:
    return _node(value, definitions, depth=depth + 1) if isinstance(value, dict) else value


def _resolve(ref: str, definitions: dict[str, Any]) -> dict[str, Any]:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix) and ref[len(prefix) :] in definitions:
            return dict(definitions[ref[len(prefix) :]])
    raise ConfigurationError(f"tool schema has a $ref that cannot be inlined: {ref}")


def _collapse_optionals(schema: JsonObject) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    for name, prop in properties.items():
        if name in required_names or not isinstance(prop, dict) or prop.pop(NULLABLE, False):
            continue
        variants = prop.get("anyOf")
        if not isinstance(variants, list) or len(variants) != 2 or {"type": "null"} not in variants:
            continue
        (kept,) = [v for v in variants if v != {"type": "null"}]
        if isinstance(kept, dict):
            rest = {k: v for k, v in prop.items() if k != "anyOf"}
            if rest.get("default", 0) is None:
                del rest["default"]
            properties[name] = {**kept, **rest}


def nullable(**field_kwargs: Any) -> Any:
    """`Field(default=None, ...)` for an optional field where an explicit null is meaningful."""
    return Field(default=None, json_schema_extra={NULLABLE: True}, **field_kwargs)


def is_nullable(model: type[BaseModel], name: str) -> bool:
    """Whether field `name` of `model` was declared with `nullable()`."""
    extra = model.model_fields[name].json_schema_extra
    return isinstance(extra, dict) and extra.get(NULLABLE) is True
