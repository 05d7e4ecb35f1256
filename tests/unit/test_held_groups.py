"""HeldGroups counts each tenant's groups as keys come and go (kop.groups.tenant_keys); the
per-tenant share of max_groups relies on the count agreeing with the keys held after
any sequence of additions, replacements and removals."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kop.groups.group import Group
from kop.groups.tenant_keys import HeldGroups, tenant_of

KEYS = st.sampled_from(["a", "b", "//t1/ns/a", "//t1/other/b", "//t2/ns/a", "//public/x/y"])
OPS = st.lists(
    st.tuples(st.sampled_from(["set", "pop", "del", "setdefault", "popitem", "clear"]), KEYS),
    max_size=60,
)


@given(OPS)
def test_the_count_of_each_tenant_matches_its_keys(ops: list[tuple[str, str]]) -> None:
    held = HeldGroups("public")
    for op, key in ops:
        if op == "set":
            held[key] = Group(key, state_ms=0)
        elif op == "pop":
            held.pop(key, None)
        elif op == "del" and key in held:
            del held[key]
        elif op == "setdefault":
            held.setdefault(key, Group(key, state_ms=0))
        elif op == "popitem" and held:
            held.popitem()
        elif op == "clear":
            held.clear()
        for probe in ("a", "//t1/x/y", "//t2/x/y", "//public/z/w"):
            tenant = tenant_of(probe, "public")
            want = sum(1 for k in held if tenant_of(k, "public") == tenant)
            assert held.of_tenant(probe) == want


def test_bare_ids_are_the_default_namespace_s_tenant() -> None:
    assert tenant_of("payments", "public") == "public"
    assert tenant_of("//acme/orders/payments", "public") == "acme"
