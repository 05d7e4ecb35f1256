"""A subject's compatibility level, and the registry's global one: Pulsar's strategies.
A topic's subject has its topic's strategy policy, the global level is the namespace's
(one setting, which Pulsar applies to Pulsar producers and kop to the REST API); a
subject kop alone keeps has its level in kop's table."""

from __future__ import annotations

from kop.registry import errors
from kop.registry.access import Asker, authorize, topic_of
from kop.registry.state import NamespaceState, Record, config_record
from kop.registry.strategies import CONFLUENT_TO_PULSAR, PULSAR_TO_CONFLUENT
from kop.registry.table import RegistryTable
from kop.security.authorizer import TopicOp
from kop.storage.schemas import TopicSchemas
from kop.storage.types import AdminError


class Levels:
    def __init__(self, table: RegistryTable, schemas: TopicSchemas) -> None:
        self.table = table
        self.schemas = schemas

    async def global_level(self, who: Asker) -> str:
        """The namespace's strategy, else the broker's, as a Confluent level."""
        strategy = await self.schemas.namespace_strategy(who.namespace)
        if strategy is None:
            strategy = await self.schemas.broker_strategy()
        return PULSAR_TO_CONFLUENT.get(strategy) or strategy

    async def subject_level(self, who: Asker, subject: str) -> str | None:
        """The subject's own level (None: it has none, the global one applies)."""
        topic = topic_of(subject, who.namespace)
        if topic is not None:
            strategy = await self.schemas.topic_strategy(topic)
            return None if strategy is None else (PULSAR_TO_CONFLUENT.get(strategy) or strategy)
        return (await self.table.view(who.ns)).configs.get(subject)

    async def level(self, who: Asker, subject: str) -> str:
        return await self.subject_level(who, subject) or await self.global_level(who)

    async def set_subject_level(self, who: Asker, subject: str, level: str | None) -> None:
        await authorize(who, subject, TopicOp.ALTER)
        topic = topic_of(subject, who.namespace)
        if topic is not None:
            strategy = None if level is None else CONFLUENT_TO_PULSAR[level]
            try:
                await self.schemas.set_topic_strategy(topic, strategy)
            except AdminError as exc:  # Pulsar keeps policies of existing topics only
                if exc.status == 404:
                    raise errors.subject_not_found(subject) from None
                raise
            return

        def decide(state: NamespaceState) -> tuple[list[Record], None]:
            return [config_record(who.ns, subject, level)], None

        await self.table.change(who.ns, decide)

    async def set_global_level(self, who: Asker, level: str | None) -> None:
        if not await who.access.tenant_admin(who.namespace):
            raise errors.forbidden(f"namespace {who.ns}")
        strategy = None if level is None else CONFLUENT_TO_PULSAR[level]
        await self.schemas.set_namespace_strategy(who.namespace, strategy)
