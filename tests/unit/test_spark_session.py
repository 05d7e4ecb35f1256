"""kop-spark resolves Spark's Kafka connector once and hands later sessions the
jars it left in the cache: the list it keeps must only ever name this package's
jars, all present, or be ignored (the next session resolves again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_jobs import session
from spark_jobs.session import EXCLUDES, KAFKA_PACKAGE, resolved_jars, resolved_list, write_resolved


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KOP_CACHE_DIR", str(tmp_path))
    jars = session.ivy_cache() / "jars"
    jars.mkdir(parents=True)
    return jars


def _jar(cache: Path, name: str) -> Path:
    path = cache / name
    path.write_bytes(b"PK\x03\x04")
    return path


def test_nothing_written_down_means_resolve(cache: Path) -> None:
    assert resolved_jars() is None


def test_the_jars_spark_was_given_from_the_cache_are_written_down_and_reused(cache: Path) -> None:
    a, b = _jar(cache, "org.apache.kafka_kafka-clients-3.9.0.jar"), _jar(cache, "x_y-1.jar")
    elsewhere = cache.parent / "user.jar"
    elsewhere.write_bytes(b"PK")
    write_resolved(f"file://{a},file://{b},file://{elsewhere},spark://host/jars/z.jar")
    assert resolved_jars() == [str(a), str(b)]
    found = json.loads(resolved_list().read_text())
    assert (found["package"], found["excludes"]) == (KAFKA_PACKAGE, EXCLUDES)


def test_a_missing_jar_means_resolve_again(cache: Path) -> None:
    a, b = _jar(cache, "a-1.jar"), _jar(cache, "b-1.jar")
    write_resolved(f"file://{a},file://{b}")
    b.unlink()
    assert resolved_jars() is None


def test_another_package_or_a_torn_list_means_resolve_again(cache: Path) -> None:
    a = _jar(cache, "a-1.jar")
    write_resolved(f"file://{a}")
    found = json.loads(resolved_list().read_text())
    resolved_list().write_text(json.dumps({**found, "package": "org.apache.spark:other:1.0"}))
    assert resolved_jars() is None
    resolved_list().write_text(json.dumps(found)[:-5])
    assert resolved_jars() is None
    resolved_list().write_text(json.dumps({**found, "jars": []}))
    assert resolved_jars() is None


def test_no_jar_from_the_cache_writes_nothing(cache: Path) -> None:
    write_resolved("")
    write_resolved("file:///elsewhere/a.jar")
    assert not resolved_list().exists()
