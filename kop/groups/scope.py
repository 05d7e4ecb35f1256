"""Groups belong to a tenant (docs/decisions.md, D16): group `g` of a client working
in namespace `acme/orders` is a group of its own, keyed `//acme/orders/g` in the one
offsets topic, while a group of the default namespace keeps its bare name (so the
offsets committed before tenants existed still count). A bare name cannot start
with `//`, so no client of the default namespace can reach another tenant's group.
The key's namespace is also where the group's topic names resolve and where its
subscriptions are mirrored."""

from __future__ import annotations

from dataclasses import dataclass

from kop.storage.naming import Namespace, PulsarTopic, resolve

SCOPED = "//"


class ReservedGroupName(ValueError):
    """A default-namespace group id that would name another tenant's group."""


@dataclass(frozen=True, slots=True)
class GroupScope:
    default: Namespace

    def key(self, ns: Namespace, group: str) -> str:
        if ns == self.default:
            if group.startswith(SCOPED):
                raise ReservedGroupName(f"group ids starting with {SCOPED!r} are reserved")
            return group
        return f"{SCOPED}{ns.tenant}/{ns.namespace}/{group}"

    def split(self, key: str) -> tuple[Namespace, str]:
        """(namespace, the group id its clients use)."""
        if key.startswith(SCOPED):
            tenant, namespace, group = key[len(SCOPED) :].split("/", 2)
            return Namespace(tenant, namespace), group
        return self.default, key

    def namespace(self, key: str) -> Namespace:
        return self.split(key)[0]

    def topic(self, key: str, name: str) -> PulsarTopic:
        """The topic a group's commit names (raises InvalidTopicName)."""
        return resolve(name, self.namespace(key))
