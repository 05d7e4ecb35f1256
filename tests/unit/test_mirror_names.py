"""The mirrored subscription's name: the group behind kop's prefix, read back
exactly, and no name without the prefix taken for kop's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.config.settings import ConfigError, load_config
from kop.groups.mirror_names import SubscriptionNames

PREFIXES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:=-]{0,20}", fullmatch=True)


@given(PREFIXES, st.text())
def test_a_groups_subscription_names_the_group_back(prefix: str, group: str) -> None:
    names = SubscriptionNames(prefix)
    assert names.group_of(names.of(group)) == group


@given(PREFIXES, st.text())
def test_a_name_without_the_prefix_is_never_kops(prefix: str, name: str) -> None:
    names = SubscriptionNames(prefix)
    if not name.startswith(prefix):
        assert names.group_of(name) is None


def test_the_default_prefix_marks_kafka_groups() -> None:
    assert load_config(environ={}).group_subscription_prefix == "kafka-group-"
    assert load_config(environ={}, group_subscription_prefix="k.").group_subscription_prefix == "k."


@pytest.mark.parametrize("prefix", ["", "__kop-", "pulsar.repl.", "a/b", "a b", "x" * 65])
def test_a_prefix_pulsar_or_kops_promise_cannot_keep_is_refused(prefix: str) -> None:
    """Empty would touch every subscription named like a group; `__` and `pulsar.`
    are Pulsar's own cursors (`__compaction`, `pulsar.dedup`, `pulsar.repl.*`)."""
    with pytest.raises(ConfigError, match="group_subscription_prefix"):
        load_config(environ={}, group_subscription_prefix=prefix)
