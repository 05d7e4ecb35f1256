"""The JSON Schema keywords kop models, the ones it does not, and how they are read
together: the vocabulary of the check."""

from __future__ import annotations

from typing import Final

Schema = dict[str, object]
Key = tuple[int, int]
Origin = tuple[list[object], int]  # the writer's oneOf list, and the branch taken
MAX_MESSAGE: Final = 400
FEW: Final = 16  # a oneOf this small has each branch tried against each
MISSING: Final = object()
EMPTY: Final[Schema] = {}  # accepts anything; never mutated
NOTHING: Final[Schema] = {"type": []}  # the schema `false`, as an object
KINDS: Final = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
_COMBINATORS: Final = ("$ref", "anyOf", "oneOf", "allOf")
_MODELLED: Final = frozenset(
    {
        *_COMBINATORS,
        *("type", "enum", "const", "format", "multipleOf"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
        *("minLength", "maxLength", "pattern", "items", "minItems", "maxItems", "uniqueItems"),
        *("properties", "additionalProperties", "required", "minProperties", "maxProperties"),
    }
)


# Validation keywords kop does not model: a change of one is refused.
UNMODELLED: Final = frozenset(
    {
        *("not", "if", "then", "else", "patternProperties", "propertyNames"),
        *("dependencies", "dependentSchemas", "dependentRequired"),
        *("contains", "minContains", "maxContains", "prefixItems", "additionalItems"),
        *("disallow", "extends", "divisibleBy"),  # draft-03
    }
)


# Keywords whose meaning depends on the whole schema around them.
CONTEXTUAL: Final = frozenset(
    {"unevaluatedProperties", "unevaluatedItems", "$recursiveRef", "$dynamicRef"}
)


# Unmodelled keywords that make the writer's modelled ones accept more: one the writer
# alone has makes the modelled rules unsound, so it is refused wherever it is.
LOOSENING: Final = frozenset({"patternProperties", "prefixItems", "minContains", "maxContains"})
VALIDATION: Final = _MODELLED | UNMODELLED | CONTEXTUAL


# Keywords that are read together: a merge that takes them from different schemas
# would accept less than either, so such a merge leaves the whole group out.
GROUPS: Final = (
    ("items", "additionalItems"),
    ("if", "then", "else"),
    ("minimum", "exclusiveMinimum"),
    ("maximum", "exclusiveMaximum"),
    ("contains", "minContains", "maxContains"),
)


# Keywords whose value holds schemas: one, a list of them, or a map of names to them.
ONE_SCHEMA: Final = frozenset(
    {
        *("additionalProperties", "additionalItems", "items", "contains", "not"),
        *("propertyNames", "if", "then", "else", "contentSchema"),
        *("unevaluatedProperties", "unevaluatedItems"),
    }
)
SCHEMA_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
SCHEMA_MAP: Final = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "definitions", "$defs", "dependencies"}
)


# What a schema's meaning rests on: the rest are annotations, which validators ignore.
MEANINGFUL: Final = (
    VALIDATION
    | SCHEMA_MAP
    | {"$id", "id", "$schema", "$anchor"}
    | {
        "$dynamicAnchor",
        "$recursiveAnchor",
    }
)
REFERENCES: Final = ("$ref", "$recursiveRef", "$dynamicRef")
