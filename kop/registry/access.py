"""Who asks the registry, and what of it a subject is: a topic's schema or kop's alone;
and whether the asker may do an operation on a subject (Pulsar's permissions: read a
topic's subject with any permission on the topic, register with produce, delete or
configure with the tenant's admin rights; a subject that is no topic's belongs to the
namespace)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kop.registry import errors
from kop.security.authorizer import Access, TopicOp
from kop.storage.naming import Namespace, PulsarTopic, resolve

_TOPIC_SUBJECT = re.compile(r"^([a-zA-Z0-9._-]{1,249})-value$")
MAX_SUBJECT_CHARS = 512
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")


@dataclass(frozen=True, slots=True)
class Asker:
    namespace: Namespace
    access: Access

    @property
    def ns(self) -> str:
        return self.namespace.path


def topic_of(subject: str, ns: Namespace) -> PulsarTopic | None:
    """The Pulsar topic whose schema `subject` is (None: a subject kop keeps)."""
    match = _TOPIC_SUBJECT.match(subject)
    return None if match is None else resolve(match.group(1), ns)


def checked_subject(subject: str) -> str:
    if len(subject) > MAX_SUBJECT_CHARS or not _PRINTABLE.match(subject):
        raise errors.invalid_subject(subject)
    return subject


async def authorize(who: Asker, subject: str, op: TopicOp) -> None:
    """RegistryError 403 unless the asker may `op` the subject (422 for a bad name)."""
    topic = topic_of(checked_subject(subject), who.namespace)
    if topic is not None:
        allowed = await who.access.topic(topic, op)
    elif op is TopicOp.ALTER:
        allowed = await who.access.tenant_admin(who.namespace)
    elif op is TopicOp.PRODUCE:
        allowed = await who.access.idempotent_write(who.namespace)
    else:
        allowed = await who.access.namespace_use(who.namespace)
    if not allowed:
        raise errors.forbidden(f"subject {subject}")
