"""`postgres_changes` bindings: parsing them like Supabase Realtime, and their reply ids.

Port of `parse_subscription_params` (github.com/supabase/realtime,
lib/extensions/postgres_cdc_rls/subscriptions.ex): `event` (`*` or INSERT/UPDATE/DELETE, anything
else meaning `*`), `schema` (default `public`), `table` (default `*`), `filter`
(`column=op.value`, ops `eq neq lt lte gt gte in like ilike is match imatch isdistinct`, a `not.`
prefix, comma-separated conditions ANDed, PostgREST-style quoting) and `select` (columns).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FILTER_OPS = frozenset(
    (
        "eq",
        "neq",
        "lt",
        "lte",
        "gt",
        "gte",
        "in",
        "like",
        "ilike",
        "is",
        "match",
        "imatch",
        "isdistinct",
    )
)
_ACTIONS = ("INSERT", "UPDATE", "DELETE")


class BindingError(ValueError):
    """A binding the server cannot subscribe; the message is the real server's."""


@dataclass(frozen=True, slots=True)
class Filter:
    column: str
    op: str
    value: str
    negate: bool = False


@dataclass(frozen=True, slots=True)
class BindingSpec:
    """A parsed binding: what changes it wants and how they are narrowed."""

    action: str
    """`*`, `INSERT`, `UPDATE` or `DELETE`."""
    schema: str
    """A schema name or `*`."""
    table: str
    """A table name or `*`."""
    filters: tuple[Filter, ...] = ()
    select: tuple[str, ...] | None = None

    def describe(self) -> str:
        """The parameters as the real server logs them in its error messages."""
        filters = ", ".join(
            f"{{{_q(f.column)}, {_q(f.op)}, {_q(f.value)}, {str(f.negate).lower()}}}"
            for f in self.filters
        )
        select = "nil" if self.select is None else "[" + ", ".join(map(_q, self.select)) + "]"
        return (
            f"event: {self.action}, schema: {self.schema}, table: {self.table}, "
            f"filters: [{filters}], select: {select}"
        )

    def filter_rows(self) -> list[list[Any]]:
        """Filters in the `[column, op, value, negate]` form the SQL side reads."""
        return [[f.column, f.op, f.value, f.negate] for f in self.filters]


def parse_binding(params: Mapping[str, Any]) -> BindingSpec:
    """Parse one binding map as sent by a client; `BindingError` with the real message."""
    action = _action(params.get("event"))
    select = _select(params)
    schema, table, filter_ = params.get("schema"), params.get("table"), params.get("filter")
    if isinstance(schema, str) and isinstance(table, str) and isinstance(filter_, str):
        spec = BindingSpec(action, schema, table, parse_filters(filter_), select)
    elif isinstance(schema, str) and isinstance(table, str) and "filter" not in params:
        spec = BindingSpec(action, schema, table, (), select)
    elif isinstance(schema, str) and "table" not in params and "filter" not in params:
        spec = BindingSpec(action, schema, "*", (), select)
    elif isinstance(table, str) and "schema" not in params and "filter" not in params:
        spec = BindingSpec(action, "public", table, (), select)
    else:
        raise BindingError(
            "No subscription params provided. Please provide at least a `schema` or `table` "
            f"to subscribe to: {json.dumps(dict(params), default=str)}"
        )
    if select is not None and "*" in (spec.schema, spec.table):
        raise BindingError(
            "Column selection is not supported for wildcard subscriptions. "
            "Provide an explicit schema and table name."
        )
    return spec


def parse_filters(filter_: str) -> tuple[Filter, ...]:
    """`col=op.value[,col=op.value…]` → filters; `BindingError` says what is wrong."""
    trimmed = filter_.strip()
    if not trimmed:
        return ()
    try:
        return tuple(_parse_segment(segment) for segment in _split_top_level(trimmed))
    except BindingError as exc:
        raise BindingError(f"Error parsing `filter` params: {exc}") from None


def binding_id(params: Mapping[str, Any]) -> int:
    """A 27-bit id of a binding's params, as hosted's `:erlang.phash2(params)` is
    (`realtime_channel.ex`, `add_id_to_postgres_changes`): a function of the params alone, so
    identical bindings in one join get the same id. The value is not Erlang's (clients only
    compare the ids the server gives them); the map's key order does not change it."""
    canonical = json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))
    return zlib.crc32(canonical.encode()) % (1 << 27)


def binding_ids(bindings: Iterable[Mapping[str, Any]]) -> list[int]:
    """`binding_id` of each binding, in order."""
    return [binding_id(binding) for binding in bindings]


def _action(event: Any) -> str:
    if isinstance(event, str) and event.upper() in _ACTIONS:
        return event.upper()
    return "*"


def _select(params: Mapping[str, Any]) -> tuple[str, ...] | None:
    value = params.get("select")
    if isinstance(value, str):
        raise BindingError(
            "Error parsing `select` params: expected a list of column name strings, "
            'e.g. select: ["col1", "col2"]'
        )
    if isinstance(value, list):
        columns = tuple(c for c in value if isinstance(c, str))
        return columns or None
    return None


def _parse_segment(segment: str) -> Filter:
    trimmed = segment.strip()
    if not trimmed:
        raise BindingError("filter must not contain empty segments (check for extra commas)")
    column, sep, rest = trimmed.partition("=")
    if not sep:
        raise BindingError(_inspect([trimmed]))
    negate = rest.startswith("not.")
    op_value = rest.removeprefix("not.")
    op, dot, value = op_value.partition(".")
    if not dot:
        raise BindingError(_inspect([op_value]))
    if op not in FILTER_OPS:
        raise BindingError(_inspect([op, value]))
    if op == "in":
        if len(value) < 2 or value[0] != "(" or value[-1] != ")":
            raise BindingError("`in` filter value must be wrapped by parentheses")
        return Filter(column, op, "{" + value[1:-1] + "}", negate)
    return Filter(column, op, _unquote(value), negate)


def _split_top_level(text: str) -> list[str]:
    # Commas split conditions except inside parentheses or double quotes; a quote opens a quoted
    # value only right after `.`, `(` or `,` (as the server's split_top_level/6 does).
    parts: list[str] = []
    current, depth, quoted, prev, i = "", 0, False, "", 0
    while i < len(text):
        char = text[i]
        if quoted and char == "\\" and i + 1 < len(text):
            current, prev, i = current + char + text[i + 1], text[i + 1], i + 2
            continue
        if quoted:
            quoted = char != '"'
        elif char == '"' and prev in (".", "(", ","):
            quoted = True
        elif char in "()":
            depth = depth + 1 if char == "(" else max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(current)
            current, prev, i = "", "", i + 1
            continue
        current, prev, i = current + char, char, i + 1
    parts.append(current)
    return parts


def _unquote(value: str) -> str:
    if not value.startswith('"'):
        return value
    result, i = "", 1
    while i < len(value):
        char = value[i]
        if char == "\\" and i + 1 < len(value):
            result, i = result + value[i + 1], i + 2
        elif char == '"':
            return result if i == len(value) - 1 else value
        else:
            result, i = result + char, i + 1
    return value


def _inspect(parts: list[str]) -> str:
    return "[" + ", ".join(_q(p) for p in parts) + "]"


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
