"""The registry's operations, for one asker: who may do what, and where a subject's
schemas live.

A subject `<topic>-value` (a Kafka topic name of the asker's namespace) is that Pulsar
topic's schema: it is registered by uploading to Pulsar, which checks it under the
topic's compatibility strategy as it checks a Pulsar producer's, and its versions are
Pulsar's (version v+1 of the subject is Pulsar's v). kop keeps what Pulsar has no
place for: the ids, and which versions are deleted. Every other subject is kept by
kop alone, checked by kop with the same strategies. A subject's compatibility level
is the topic's strategy policy, the namespace's is the registry's global level: one
setting, seen alike by Kafka's and Pulsar's clients.

Who may do what follows Pulsar's permissions: read a topic's subject with any
permission on the topic, register with produce, delete or configure with the
tenant's admin rights; a subject that is no topic's belongs to the namespace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from kop.registry import errors, subjects
from kop.registry.access import Asker, authorize, checked_subject, topic_of
from kop.registry.levels import Levels
from kop.registry.protobuf.native import FIRST_MESSAGE, PROTOBUF_NATIVE
from kop.registry.references import Reference, Resolved
from kop.registry.schemas import JSON, PROTOBUF, Schema
from kop.registry.state import NamespaceState, Record, Version, config_record, version_record
from kop.registry.table import RegistryTable
from kop.registry.topic_history import behind, follow, kept_versions, pulsar_data, shown_history
from kop.security.authorizer import ALLOW_ALL, TopicOp
from kop.storage.naming import PulsarTopic
from kop.storage.schemas import FramedAs, SchemaRefused, TopicSchemas


@dataclass(frozen=True, slots=True)
class Limits:
    """What one namespace may hold: a client that registers without end fills kop's
    table, which every instance reads whole."""

    max_subjects: int = 10_000
    max_versions: int = 1_000

    def room(self, state: NamespaceState, subject: str, versions: int) -> None:
        """42205 when registering one more version of `subject` passes a limit."""
        live = [name for name in state.subjects if subjects.known(state, name)]
        if subject not in live and len(live) >= self.max_subjects:
            raise errors.not_permitted(
                f"the namespace holds {self.max_subjects} subjects, the most it may "
                "(schema_registry_max_subjects)"
            )
        if versions >= self.max_versions:
            raise errors.not_permitted(
                f"subject '{subject}' holds {self.max_versions} versions, the most it "
                "may (schema_registry_max_versions)"
            )


class Registry:
    def __init__(
        self, table: RegistryTable, schemas: TopicSchemas, limits: Limits | None = None
    ) -> None:
        self.table = table
        self.schemas = schemas
        self.limits = limits or Limits()
        self.levels = Levels(table, schemas)
        # Told when a version of a topic's schema was registered here (the topic's
        # partitions on this instance learn its id at once, kop.log.framing).
        self.on_topic_schema: Callable[[PulsarTopic], None] = lambda _topic: None

    async def ids(
        self, topic: PulsarTopic, *, fresh: bool = False, from_pulsar: bool = False
    ) -> dict[int, FramedAs]:
        """Pulsar version -> its id (and a Protobuf version's message indexes) of each
        version of `topic`'s schema the subject shows (SchemaIds, kop.storage.schemas):
        asked by kop itself for the partitions it serves."""
        subject = f"{topic.local}-value"
        state = await self.table.view(topic.namespace.path, fresh=fresh)
        if subject not in state.subjects and not from_pulsar:
            return {}
        state = await self._synced(Asker(topic.namespace, ALLOW_ALL), subject, topic)
        return {
            number - 1: FramedAs(v.id, _tail(state.schemas.get(v.id)))
            for number, v in state.subjects.get(subject, {}).items()
        }

    # -- reading ---------------------------------------------------------------------

    async def view(
        self, who: Asker, subject: str, op: TopicOp = TopicOp.DESCRIBE
    ) -> NamespaceState:
        """The namespace's state with `subject` in it as it is now (a topic's subject
        brought up to Pulsar's history), once the asker may `op` it."""
        await authorize(who, subject, op)
        topic = topic_of(subject, who.namespace)
        if topic is None:
            return await self.table.view(who.ns)
        return await self._synced(who, subject, topic)

    async def namespace(self, who: Asker, fresh: bool = False) -> NamespaceState:
        if not await who.access.namespace_use(who.namespace):
            raise errors.forbidden(f"namespace {who.ns}")
        return await self.table.view(who.ns, fresh=fresh)

    async def resolved(self, who: Asker, ref: Reference) -> Resolved:
        """What a reference names, for a schema the asker registers or looks up: the
        version's schema, once the asker may read its subject."""
        state = await self.view(who, checked_subject(ref.subject))
        number = subjects.version(state, ref.subject, ref.version)
        _, schema = subjects.schema_of(state, ref.subject, number)
        return Resolved(schema.type, schema.text, schema.imports)

    async def schema_by_id(self, who: Asker, schema_id: int) -> Schema:
        state = await self.namespace(who)
        if schema_id not in state.schemas:  # handed out by another instance just now?
            state = await self.namespace(who, fresh=True)
        if schema_id not in state.schemas:
            raise errors.schema_not_found(schema_id)
        return state.schemas[schema_id]

    # -- registering -----------------------------------------------------------------

    async def register(self, who: Asker, subject: str, schema: Schema) -> int:
        """The schema's id, registered under `subject` unless it is there already."""
        await authorize(who, subject, TopicOp.PRODUCE)
        topic = topic_of(subject, who.namespace)
        if topic is not None:
            return await self._register_topic(who, subject, topic, schema)
        level = await self.levels.level(who, subject)
        # Checked before the write, off the event loop; again inside it only if the
        # subject's history changed meanwhile (another request registered or deleted).
        seen = await self.table.view(who.ns)
        before = subjects.history(seen, subject, subjects.versions(seen, subject))
        checked = await _off_loop(schema, level, before)

        def decide(state: NamespaceState) -> tuple[list[Record], int]:
            number = subjects.find(state, subject, schema)
            if number is not None:
                return [], state.subjects[subject][number].id
            subjects.still_there(state, schema.references)
            live = subjects.versions(state, subject)
            now = subjects.history(state, subject, live)
            why = checked if now == before else subjects.why_not_after(schema, level, now)
            if why is not None:
                raise errors.incompatible(subject, why)
            self.limits.room(state, subject, len(state.subjects.get(subject, {})))
            records, schema_id = subjects.with_id(state, who.ns, schema)
            number = max(state.subjects.get(subject, {}), default=0) + 1
            records.append(version_record(who.ns, subject, number, Version(schema_id)))
            return records, schema_id

        return await self.table.change(who.ns, decide)

    async def _register_topic(
        self, who: Asker, subject: str, topic: PulsarTopic, schema: Schema
    ) -> int:
        """Upload to Pulsar, which checks the Avro form; a JSON Schema is checked by
        kop first under the topic's level, for what its Avro form does not say
        (`maxLength`, `pattern`, a closed content model...), and a Protobuf schema too
        (Pulsar checks only that its root message keeps its name)."""
        state = await self._synced(who, subject, topic)
        if subjects.find(state, subject, schema, deleted=True) is None:
            self.limits.room(state, subject, len(state.subjects.get(subject, {})))
            if schema.type in (JSON, PROTOBUF):
                level = await self.levels.level(who, subject)
                live = subjects.versions(state, subject)
                why = await _off_loop(schema, level, subjects.history(state, subject, live))
                if why is not None:
                    raise errors.incompatible(subject, why)
        try:
            pulsar_type = PROTOBUF_NATIVE if schema.type == PROTOBUF else schema.type
            version = await self.schemas.upload(topic, pulsar_type, pulsar_data(schema))
        except SchemaRefused as exc:
            if exc.incompatible:
                raise errors.incompatible(subject, str(exc)) from None
            raise errors.invalid_schema(str(exc)) from None
        if schema.references:  # Pulsar's version alone would be the schema without them
            await self.table.change(
                who.ns, lambda state: _with_references(state, who.ns, subject, version, schema)
            )
        state = await self._synced(who, subject, topic)
        self.on_topic_schema(topic)
        return _id_in(state, subject, schema)

    async def why_incompatible(
        self, who: Asker, subject: str, schema: Schema, wanted: int | None
    ) -> str | None:
        """Why `schema` may not follow the subject's versions under its level (None: it
        may): against one version (`wanted`) with the level's plain form, or as
        registering would check it (None)."""
        state = await self.view(who, subject)
        level = await self.levels.level(who, subject)
        live = subjects.versions(state, subject)
        if wanted is not None and live:
            live = [subjects.version(state, subject, wanted)]
            level = level.removesuffix("_TRANSITIVE")
        elif wanted not in (None, subjects.LATEST):
            raise errors.subject_not_found(subject)
        return await _off_loop(schema, level, subjects.history(state, subject, live))

    async def _synced(self, who: Asker, subject: str, topic: PulsarTopic) -> NamespaceState:
        """The state once the subject's records follow the topic's history in Pulsar
        (ids for versions a Pulsar producer added; none for versions Pulsar dropped)."""
        pulsar = await self.schemas.history(topic)
        state = await self.table.view(who.ns)
        history = shown_history(pulsar, kept_versions(state, subject))
        if not behind(state, subject, history):
            return state

        def decide(state: NamespaceState) -> tuple[list[Record], None]:
            history = shown_history(pulsar, kept_versions(state, subject))
            return follow(state, who.ns, subject, history), None

        await self.table.change(who.ns, decide)
        return await self.table.view(who.ns)

    # -- deleting --------------------------------------------------------------------

    async def delete_subject(self, who: Asker, subject: str, permanent: bool) -> list[int]:
        await self.view(who, subject, TopicOp.ALTER)
        topic = topic_of(subject, who.namespace)
        if not permanent:
            return await self.table.change(
                who.ns, lambda state: subjects.soft_delete(state, who.ns, subject)
            )

        def decide(state: NamespaceState) -> tuple[list[Record], list[int]]:
            live = subjects.versions(state, subject)
            every = subjects.versions(state, subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            if live:
                raise errors.subject_not_soft_deleted(subject)
            subjects.unreferenced(state, subject, every)
            records = [version_record(who.ns, subject, n, None) for n in state.subjects[subject]]
            if topic is None:
                records.append(config_record(who.ns, subject, None))
            return records, every

        state = await self.table.view(who.ns, fresh=True)
        decide(state)  # refused before Pulsar forgets anything
        if topic is not None:
            await self.schemas.delete(topic)
        return await self.table.change(who.ns, decide)

    async def delete_version(self, who: Asker, subject: str, wanted: int, permanent: bool) -> int:
        await self.view(who, subject, TopicOp.ALTER)
        keep = topic_of(subject, who.namespace) is not None
        return await self.table.change(
            who.ns,
            lambda state: subjects.delete_version(
                state, who.ns, subject, wanted, permanent, tombstone=not keep
            ),
        )


def _id_in(state: NamespaceState, subject: str, schema: Schema) -> int:
    number = subjects.find(state, subject, schema, deleted=True)
    if number is None:  # Pulsar had it; its history moved on between the two reads
        raise errors.store_error("the topic's schema changed while it was registered")
    return state.subjects[subject][number].id


def _with_references(
    state: NamespaceState, ns: str, subject: str, version: int, schema: Schema
) -> tuple[list[Record], int]:
    """Pulsar's `version` is `schema`, registered with its references: its record, unless
    the table holds it already as a schema with references (one uploading the same)."""
    current = state.subjects.get(subject, {}).get(version + 1)
    held = None if current is None else state.schemas.get(current.id)
    if current is not None and held is not None and (held == schema or held.references):
        return [], current.id
    subjects.still_there(state, schema.references)
    records, schema_id = subjects.with_id(state, ns, schema)
    records.append(version_record(ns, subject, version + 1, Version(schema_id)))
    return records, schema_id


def _tail(schema: Schema | None) -> bytes:
    """What Confluent's framing puts after the id of a topic's version: a Protobuf
    value's message indexes of the root (the file's first message); nothing else."""
    return FIRST_MESSAGE if schema is not None and schema.type == PROTOBUF else b""


async def _off_loop(schema: Schema, level: str, history: list[Schema]) -> str | None:
    """subjects.why_not_after, for a JSON Schema in a worker thread: its check may take
    up to its budget (some 300 ms of CPU), which on the event loop would stall every
    Kafka connection of the instance; in a thread the loop still runs between its
    slices. Avro's and Protobuf's checks are linear in the schemas and stay here."""
    if schema.type != JSON or not history:
        return subjects.why_not_after(schema, level, history)
    return await asyncio.to_thread(subjects.why_not_after, schema, level, history)
