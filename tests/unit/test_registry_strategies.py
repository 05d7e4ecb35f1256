"""kop.registry.strategies: each strategy lets through exactly the evolutions whose
direction it asks for (the new schema reading old data, old schemas reading new
data, or both), against the latest version or against every one."""

from __future__ import annotations

import json
from typing import Any

import avro.schema
import pytest

from kop.registry.strategies import CONFLUENT_TO_PULSAR, PULSAR_TO_CONFLUENT, check
from kop.storage.schemas import STRATEGIES


def record(*fields: dict[str, Any]) -> avro.schema.Schema:
    return avro.schema.parse(
        json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": list(fields)})
    )


NAME = {"name": "name", "type": "string"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
AGE = {"name": "age", "type": "int"}

BASE = record(NAME)
WITH_AGE_DEFAULT = record(NAME, AGE_DEFAULT)
WITH_AGE = record(NAME, AGE)

BACKWARDS = ("BACKWARD", "BACKWARD_TRANSITIVE")
FORWARDS = ("FORWARD", "FORWARD_TRANSITIVE")
FULLS = ("FULL", "FULL_TRANSITIVE")


def allowed(new: avro.schema.Schema, history: list[avro.schema.Schema]) -> set[str]:
    return {s for s in STRATEGIES if check(s, new, history) is None}


def test_adding_a_field_with_a_default_is_backward_and_forward_compatible() -> None:
    # new reads old: the missing field takes its default; old reads new: it skips it
    assert allowed(WITH_AGE_DEFAULT, [BASE]) == STRATEGIES - {"ALWAYS_INCOMPATIBLE"}


def test_adding_a_field_without_default_is_forward_only() -> None:
    # the new schema cannot fill `age` when it reads data written without it
    assert allowed(WITH_AGE, [BASE]) == {"ALWAYS_COMPATIBLE", *FORWARDS}
    why = check("BACKWARD", WITH_AGE, [BASE])
    assert why is not None
    assert "new schema cannot read" in why and "reader_field_missing_default_value" in why
    assert "age" in why and "\n" not in why


def test_removing_a_field_without_default_is_backward_only() -> None:
    # the new schema ignores `age` in old data; the old schema cannot fill `age`
    assert allowed(BASE, [WITH_AGE]) == {"ALWAYS_COMPATIBLE", *BACKWARDS}
    why = check("FORWARD", BASE, [WITH_AGE])
    assert why is not None and "the latest schema cannot read" in why


def test_removing_a_field_with_a_default_is_compatible_both_ways() -> None:
    assert allowed(BASE, [WITH_AGE_DEFAULT]) == STRATEGIES - {"ALWAYS_INCOMPATIBLE"}


def test_changing_a_type_is_refused_in_the_direction_avro_cannot_promote() -> None:
    as_int = record({"name": "n", "type": "int"})
    as_long = record({"name": "n", "type": "long"})
    # a long reader reads an int writer's data (promotion), not the other way
    assert allowed(as_long, [as_int]) == {"ALWAYS_COMPATIBLE", *BACKWARDS}
    assert allowed(as_int, [as_long]) == {"ALWAYS_COMPATIBLE", *FORWARDS}


def test_transitive_strategies_check_every_version_the_others_only_the_latest() -> None:
    v0 = record({"name": "a", "type": "int"})
    v1 = record()  # `a` removed: BACKWARD from v0 (a reader skips what it lacks)
    v2 = record({"name": "a", "type": "string", "default": ""})  # `a` back as a string
    # v2 reads v1's data (the default fills `a`) but not v0's (an int is no string)
    assert check("BACKWARD", v2, [v0, v1]) is None
    why = check("BACKWARD_TRANSITIVE", v2, [v0, v1])
    assert why is not None
    assert "history[0]" in why and "type_mismatch" in why


def test_transitive_forward_checks_every_old_reader() -> None:
    v0 = record(NAME, AGE)
    v1 = record(NAME, AGE_DEFAULT)  # FORWARD from v0: v0 reads it (age is there)
    v2 = record(NAME)  # FORWARD from v1 (v1 has a default), not from v0
    assert check("FORWARD", v2, [v0, v1]) is None
    why = check("FORWARD_TRANSITIVE", v2, [v0, v1])
    assert why is not None and "history[0] cannot read" in why
    assert check("FULL", v2, [v0, v1]) is None
    assert check("FULL_TRANSITIVE", v2, [v0, v1]) is not None


def test_full_needs_both_directions() -> None:
    assert check("FULL", WITH_AGE, [BASE]) is not None  # backward fails
    assert check("FULL", BASE, [WITH_AGE]) is not None  # forward fails
    assert check("FULL", WITH_AGE_DEFAULT, [BASE]) is None


def test_always_incompatible_refuses_any_follower_but_not_a_first_schema() -> None:
    assert check("ALWAYS_INCOMPATIBLE", BASE, []) is None
    assert check("ALWAYS_INCOMPATIBLE", WITH_AGE_DEFAULT, [BASE]) is not None
    # even a schema that would pass FULL (equality is the caller's, before the check)
    assert check("FULL", record(NAME), [BASE]) is None
    assert check("ALWAYS_INCOMPATIBLE", record(NAME), [BASE]) is not None


def test_always_compatible_accepts_unrelated_schemas() -> None:
    other = avro.schema.parse('{"type":"enum","name":"E","symbols":["A"]}')
    assert check("ALWAYS_COMPATIBLE", other, [BASE, WITH_AGE]) is None
    assert check("BACKWARD", other, [BASE]) is not None


def test_no_history_accepts_anything_under_every_strategy() -> None:
    assert allowed(WITH_AGE, []) == STRATEGIES


def test_record_name_matters() -> None:
    renamed = avro.schema.parse(
        json.dumps({"type": "record", "name": "Person", "namespace": "t", "fields": [NAME]})
    )
    why = check("BACKWARD", renamed, [BASE])
    assert why is not None and "name_mismatch" in why


def test_an_unknown_strategy_is_an_error_not_a_verdict() -> None:
    with pytest.raises(ValueError, match="UNDEFINED"):
        check("UNDEFINED", BASE, [BASE])


def test_confluent_levels_map_onto_pulsar_strategies_and_back() -> None:
    assert CONFLUENT_TO_PULSAR["NONE"] == "ALWAYS_COMPATIBLE"
    assert set(CONFLUENT_TO_PULSAR.values()) == STRATEGIES - {"ALWAYS_INCOMPATIBLE"}
    assert set(PULSAR_TO_CONFLUENT) == STRATEGIES
    assert PULSAR_TO_CONFLUENT["ALWAYS_INCOMPATIBLE"] is None
    for confluent, pulsar in CONFLUENT_TO_PULSAR.items():
        assert PULSAR_TO_CONFLUENT[pulsar] == confluent
    assert set(CONFLUENT_TO_PULSAR) == {
        "NONE",
        "BACKWARD",
        "BACKWARD_TRANSITIVE",
        "FORWARD",
        "FORWARD_TRANSITIVE",
        "FULL",
        "FULL_TRANSITIVE",
    }
