"""The Schema Registry's table shared by two kop instances, driven by hypothesis over
the in-memory storage: registrations, deletes and lookups through either instance in
any order, a Pulsar producer adding versions to a topic's schema, and the storage
cut off now and then. The real registry code on both (kop.registry.service over
kop.registry.table).

Checked after every step:
- one id never names two schemas, and one schema of the namespace is always answered
  with the same id, whichever instance handed it out or was asked;
- both instances, reading afresh, see the same subjects, versions and ids;
- a topic's subject shows exactly Pulsar's Avro history, version v as v+1;
- every version a held schema references is there: a registration that references a
  version and a delete of that version, on two instances, never both win.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from kop.registry import subjects
from kop.registry.access import Asker
from kop.registry.errors import RegistryError
from kop.registry.schemas import Schema, parse
from kop.registry.service import Registry
from kop.registry.state import NamespaceState
from kop.registry.table import RegistryTable
from kop.registry.topic_history import is_uploaded, shown
from kop.security.authorizer import ALLOW_ALL
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import StorageError
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_schemas import MemoryTopicSchemas

EXAMPLES = int(os.environ.get("KOP_SIM_EXAMPLES", "60"))
STEPS = int(os.environ.get("KOP_SIM_STEPS", "40"))
NS = Namespace("public", "default")
TABLE = "persistent://public/__kop/kop-schema-registry"
TOPIC = PulsarTopic(NS, "a", "a")
SUBJECTS = ("a-value", "k.One", "k.Two")  # and HOLDER, below


def _record(fields: int) -> str:
    extra = [{"name": f"f{i}", "type": "int", "default": i} for i in range(fields)]
    return json.dumps(
        {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, *extra]}
    )


POOL = [_record(n) for n in range(4)]  # each follows any other under ALWAYS_COMPATIBLE
# their schemas reference a version of another subject's record R: a subject kop keeps,
# and a topic's (Pulsar's version holds R written out)
HOLDERS = ("k.Holder", "h-value")
HOLDING_TOPIC = PulsarTopic(NS, "h", "h")
HOLDS_R = json.dumps({"type": "record", "name": "Holder", "fields": [{"name": "r", "type": "R"}]})


class RegistryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = SimLoop()
        self.store = MemoryLog()
        self.schemas = MemoryTopicSchemas(self.store, broker="ALWAYS_COMPATIBLE")
        self.registries = [
            Registry(RegistryTable(self.store.instance(), TABLE, fresh_s=0.5), self.schemas)
            for _ in range(2)
        ]
        self.who = Asker(NS, ALLOW_ALL)
        self.id_of: dict[str, int] = {}  # canonical text -> id
        self.schema_of: dict[int, str] = {}

    def _run(self, coro: object) -> object:
        return self.loop.run(coro, within=120)  # type: ignore[arg-type]

    def _answered(self, schema_id: int, text: str) -> None:
        assert self.schema_of.setdefault(schema_id, text) == text, f"id {schema_id} reused"
        assert self.id_of.setdefault(text, schema_id) == schema_id, f"{text} got two ids"

    @rule(at=st.integers(0, 1), subject=st.sampled_from(SUBJECTS), which=st.integers(0, 3))
    def register(self, at: int, subject: str, which: int) -> None:
        schema = self._run(parse(POOL[which]))
        assert isinstance(schema, Schema)
        try:
            schema_id = self._run(self.registries[at].register(self.who, subject, schema))
        except (StorageError, RegistryError) as exc:
            assert self.store.down or getattr(exc, "code", 0) == 50001, exc
            return
        assert isinstance(schema_id, int)
        self._answered(schema_id, schema.text)

    @rule(
        at=st.integers(0, 1),
        holder=st.sampled_from(HOLDERS),
        named=st.sampled_from(SUBJECTS),
        back=st.integers(0, 2),
        meanwhile=st.sampled_from(["nothing", "soft", "permanent"]),
    )
    def register_a_reference(
        self, at: int, holder: str, named: str, back: int, meanwhile: str
    ) -> None:
        """A schema naming R as a version of `named` defines it: the newest but `back`
        that instance `at` sees, resolved then written, as a client's request is; and
        `meanwhile`, between the two, the other instance deletes that version."""
        registry = self.registries[at]
        try:
            seen = self._run(registry.view(self.who, named))
            assert isinstance(seen, NamespaceState)
            live = subjects.versions(seen, named)
            if not live:
                return
            ref = [{"name": "R", "subject": named, "version": live[max(0, len(live) - 1 - back)]}]
            resolve = functools.partial(registry.resolved, self.who)
            schema = self._run(parse(HOLDS_R, "AVRO", ref, resolve))
            assert isinstance(schema, Schema)
            if meanwhile != "nothing":
                other, version = self.registries[1 - at], ref[0]["version"]
                assert isinstance(version, int)
                with contextlib.suppress(StorageError, RegistryError):
                    self._run(other.delete_version(self.who, named, version, False))
                    if meanwhile == "permanent":
                        self._run(other.delete_version(self.who, named, version, True))
            schema_id = self._run(registry.register(self.who, holder, schema))
        except (StorageError, RegistryError) as exc:
            # the storage cut off, the version deleted meanwhile, or not a compatible Holder
            assert self.store.down or getattr(exc, "code", 0) in (50001, 42201, 409), exc
            return
        assert isinstance(schema_id, int)
        self._answered(schema_id, schema.text + json.dumps(ref))

    @rule(which=st.integers(0, 3))
    def pulsar_producer_uploads_a_holder(self, which: int) -> None:
        """What kop uploads for a holder of R, written out, as a Pulsar producer would."""
        whole = json.loads(HOLDS_R)
        whole["fields"][0]["type"] = json.loads(POOL[which])
        if not self.store.down:
            self._run(self.schemas.upload(HOLDING_TOPIC, "AVRO", json.dumps(whole)))

    @rule(which=st.integers(0, 3))
    def pulsar_producer_uploads(self, which: int) -> None:
        if not self.store.down:
            self._run(self.schemas.upload(TOPIC, "AVRO", POOL[which]))

    @rule(at=st.integers(0, 1), subject=st.sampled_from(SUBJECTS), permanent=st.booleans())
    def delete_subject(self, at: int, subject: str, permanent: bool) -> None:
        # refused (not there, not soft-deleted first) or the storage cut off: both fine
        with contextlib.suppress(StorageError, RegistryError):
            self._run(self.registries[at].delete_subject(self.who, subject, permanent))

    @rule(at=st.integers(0, 1), subject=st.sampled_from(SUBJECTS), permanent=st.booleans())
    def delete_latest(self, at: int, subject: str, permanent: bool) -> None:
        with contextlib.suppress(StorageError, RegistryError):
            self._run(
                self.registries[at].delete_version(self.who, subject, subjects.LATEST, permanent)
            )

    @rule(down=st.booleans())
    def storage(self, down: bool) -> None:
        self.store.set_down(down)

    def _fresh(self, at: int) -> NamespaceState:
        return self._fresh_subject(at, "a-value")

    def _fresh_subject(self, at: int, subject: str) -> NamespaceState:
        self.registries[at].table._read_at.clear()  # read afresh
        view = self._run(self.registries[at].view(self.who, subject))
        assert isinstance(view, NamespaceState)
        return view

    @invariant()
    def both_instances_agree_and_ids_are_one_to_one(self) -> None:
        if self.store.down:
            return
        one, two = self._fresh(0), self._fresh(1)
        assert one.schemas == two.schemas
        assert one.subjects == two.subjects
        for schema_id, schema in one.schemas.items():
            assert isinstance(schema, Schema)
            refs = [r.to_json() for r in schema.references]
            self._answered(schema_id, schema.text + (json.dumps(refs) if refs else ""))

    @invariant()
    def what_a_held_schema_references_is_there(self) -> None:
        if self.store.down:
            return
        view = self._fresh(0)
        for versions in view.subjects.values():
            for v in versions.values():
                for ref in [] if v.gone else view.schemas[v.id].references:
                    assert ref.version in subjects.versions(view, ref.subject), (
                        f"{ref} of schema {v.id} is gone"
                    )

    @invariant()
    def a_topics_subject_is_pulsars_history(self) -> None:
        if self.store.down:
            return
        view = self._fresh(0)
        history = self._run(self.schemas.history(TOPIC))
        assert isinstance(history, list)
        shown = sorted(view.subjects.get("a-value", {}))
        assert shown == [h.version + 1 for h in history]
        for h in history:
            stored = view.schemas[view.subjects["a-value"][h.version + 1].id]
            parsed = self._run(parse(h.data))
            assert isinstance(parsed, Schema)
            assert stored.text == parsed.text

    @invariant()
    def a_holding_topics_subject_is_its_history(self) -> None:
        """Each version of `h-value` is Pulsar's of that number: a schema with its
        reference where kop registered it so, else what Pulsar's version is alone."""
        if self.store.down:
            return
        view = self._fresh_subject(0, "h-value")
        history = self._run(self.schemas.history(HOLDING_TOPIC))
        assert isinstance(history, list)
        found = view.subjects.get("h-value", {})
        assert sorted(found) == [h.version + 1 for h in history]
        for h in history:
            stored = view.schemas[found[h.version + 1].id]
            if stored.references:
                assert is_uploaded(stored, h)
            else:
                assert stored == shown(h)

    def teardown(self) -> None:
        self.store.set_down(False)
        for registry in self.registries:
            self._run(registry.table.close())
        self.loop.shutdown()


def test_two_instances_hand_out_one_id_per_schema_and_agree() -> None:
    run_state_machine_as_test(
        RegistryMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
