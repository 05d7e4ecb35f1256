"""Schema references as a request names them, and what they bring in: bounded, plain
paths for Protobuf's imports, one schema per name, kept with the schema in its record."""

from __future__ import annotations

from typing import Any

import pytest

from kop.registry.errors import RegistryError, forbidden, subject_not_found
from kop.registry.references import (
    MAX_REFERENCES,
    Reference,
    Resolved,
    imports_of,
    references_of,
)
from kop.registry.schemas import AVRO, Schema
from kop.registry.state import RegistryState, id_record


def ref(name: str = "a.proto", subject: str = "a", version: Any = 1) -> dict[str, Any]:
    return {"name": name, "subject": subject, "version": version}


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("a", "must be a list"),
        ([ref()] * 2, "two references have one name"),
        ([ref(version=0)], "version must be 1"),
        ([ref(version="1")], "version must be 1"),
        ([ref(subject="")], "names no subject"),
        ([ref(name="")], "1 to 255"),
        ([ref(name="../etc/passwd")], "relative path"),
        ([ref(name="/etc/passwd")], "relative path"),
        ([ref(name="a//b.proto")], "relative path"),
        ([ref(name="a/./../b.proto")], "relative path"),
        ([ref(name="a b.proto")], "relative path"),
        ([ref(name=f"f{i}.proto") for i in range(MAX_REFERENCES + 1)], "at most"),
    ],
)
def test_malformed_references_are_42201(value: object, said: str) -> None:
    with pytest.raises(RegistryError) as refused:
        references_of(value, protobuf=True)
    assert refused.value.code == 42201
    assert said in refused.value.message


def test_an_avro_reference_is_named_by_its_type() -> None:
    assert references_of([ref(name="com.shop.Money")], protobuf=False) == (
        Reference("com.shop.Money", "a", 1),
    )


async def test_imports_come_dependencies_first_each_name_once() -> None:
    found = {
        "money": Resolved(AVRO, "M", ()),
        "order": Resolved(AVRO, "O", (("money", "M"),)),
    }

    async def resolve(r: Reference) -> Resolved:
        return found[r.subject]

    refs = (Reference("order", "order", 1), Reference("money", "money", 1))
    assert await imports_of(refs, AVRO, resolve) == (("money", "M"), ("order", "O"))


async def test_one_name_for_two_schemas_or_another_type_is_refused() -> None:
    async def resolve(r: Reference) -> Resolved:
        if r.subject == "json":
            return Resolved("JSON", "{}", ())
        return Resolved(AVRO, r.subject, (("shared", r.subject),))

    with pytest.raises(RegistryError, match="names two different schemas"):
        await imports_of((Reference("x", "a", 1), Reference("y", "b", 1)), AVRO, resolve)
    with pytest.raises(RegistryError, match="is a JSON schema"):
        await imports_of((Reference("j", "json", 1),), AVRO, resolve)


async def test_a_missing_version_is_42201_and_a_forbidden_one_403() -> None:
    async def missing(r: Reference) -> Resolved:
        raise subject_not_found(r.subject)

    async def hidden(r: Reference) -> Resolved:
        raise forbidden(r.subject)

    with pytest.raises(RegistryError) as refused:
        await imports_of((Reference("x", "gone", 1),), AVRO, missing)
    assert refused.value.code == 42201
    with pytest.raises(RegistryError) as refused:
        await imports_of((Reference("x", "theirs", 1),), AVRO, hidden)
    assert refused.value.http == 403


def test_a_schema_is_kept_with_its_references_and_what_they_resolved_to() -> None:
    schema = Schema(AVRO, '"com.shop.Money"', (Reference("m", "money", 2),), (("m", "M"),))
    key, payload = id_record("t/ns", 7, schema)
    state = RegistryState()
    state.apply(key, payload)
    kept = state.of("t/ns").schemas[7]
    assert kept == schema and kept.imports == schema.imports
    assert kept.fingerprint != Schema(AVRO, schema.text).fingerprint
