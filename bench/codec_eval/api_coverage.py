"""API key / version coverage: kio vs kafka-python (3.x ApiMessage and the legacy Struct classes).

Everything here is introspected from the installed packages, except PRE_40_MIN (the
lowest version Kafka 3.9 brokers accepted, i.e. before KIP-896 removed old versions in
4.0), which is 0 for every API listed.
"""

from __future__ import annotations

import importlib
import pkgutil

import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.old as kold
import kafka.protocol.producer
import kafka.protocol.sasl
from _timing import table
from kafka.protocol.api_message import ApiMessage
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

# APIs a client-facing gateway has to serve (data plane, groups, txn, SASL, admin basics).
KOP_APIS = [
    0,
    1,
    2,
    3,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    18,
    19,
    20,
    21,
    22,
    23,
    24,
    25,
    26,
    28,
    32,
    36,
    37,
    42,
    44,
    60,
    68,
    75,
]
PRE_40_MIN = 0


def kio_versions() -> dict[int, tuple[int, int]]:
    out = {}
    for key, name in api_key_map.items():
        vs = sorted(v for v, m in schema_name_map[name].items() if EntityType.request in m)
        out[key] = (vs[0], vs[-1])
    return out


def kp_new_versions() -> dict[int, tuple[str, int, str]]:
    out = {}
    for pkg in (
        kafka.protocol.admin,
        kafka.protocol.consumer,
        kafka.protocol.producer,
        kafka.protocol.metadata,
    ):
        for m in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{m.name}")
            for o in vars(mod).values():
                if (
                    isinstance(o, type)
                    and issubclass(o, ApiMessage)
                    and o is not ApiMessage
                    and getattr(o, "_json", None)
                    and o.is_request()
                ):
                    out[o.API_KEY] = (
                        o.json["validVersions"],
                        o.max_version,
                        o.json.get("flexibleVersions", "none"),
                    )
    for o in vars(kafka.protocol.sasl).values():
        if (
            isinstance(o, type)
            and issubclass(o, ApiMessage)
            and getattr(o, "_json", None)
            and o.is_request()
        ):
            out[o.API_KEY] = (
                o.json["validVersions"],
                o.max_version,
                o.json.get("flexibleVersions", "none"),
            )
    return out


def kp_old_versions() -> dict[int, tuple[int, list[int]]]:
    out = {}
    for m in pkgutil.iter_modules(kold.__path__):
        mod = importlib.import_module(f"kafka.protocol.old.{m.name}")
        for n, o in vars(mod).items():
            if isinstance(o, list) and o and hasattr(o[0], "API_KEY") and n.endswith("Request"):
                flex = [c.API_VERSION for c in o if getattr(c, "FLEXIBLE_VERSION", False)]
                out[o[0].API_KEY] = (len(o) - 1, flex)
    return out


def legacy_spot_checks() -> list[str]:
    """Can kafka-python's ApiMessage serve versions that kio (Kafka 4.x baseline) dropped?
    Compare against the legacy Struct classes' bytes."""
    from kafka.protocol.consumer import FetchResponse, ListOffsetsRequest, ListOffsetsResponse
    from kafka.protocol.old import fetch as ofetch
    from kafka.protocol.old import list_offsets as olo
    from kafka.protocol.old import produce as oprod
    from kafka.protocol.producer import ProduceRequest, ProduceResponse

    res = []
    raw = oprod.ProduceRequest_v2(
        required_acks=1, timeout=1000, topics=[("t", [(0, b"msgset")])]
    ).encode()
    d = ProduceRequest.decode(raw, version=2)
    ok = d.topic_data[0].partition_data[0].records == b"msgset"
    res.append(f"Produce v2 request decode: {'OK' if ok else 'MISMATCH'}")
    raw = olo.ListOffsetsRequest_v0(replica_id=-1, topics=[("t", [(0, -1, 1)])]).encode()
    d = ListOffsetsRequest.decode(raw, version=0)
    ok = d.topics[0].partitions[0].max_num_offsets == 1
    res.append(f"ListOffsets v0 request decode (max_num_offsets): {'OK' if ok else 'MISMATCH'}")

    old = bytes(
        oprod.ProduceResponse_v2(responses=[("t", [(0, 0, 42, -1)])], throttle_time_ms=0).encode()
    )
    R = ProduceResponse
    new = bytes(
        R(
            version=2,
            responses=[
                R.TopicProduceResponse(
                    name="t",
                    partition_responses=[
                        R.TopicProduceResponse.PartitionProduceResponse(
                            index=0, error_code=0, base_offset=42, log_append_time_ms=-1
                        )
                    ],
                )
            ],
            throttle_time_ms=0,
        ).encode(version=2)
    )
    res.append(f"Produce v2 response encode == legacy Struct bytes: {old == new}")

    old = bytes(
        ofetch.FetchResponse_v3(throttle_time_ms=0, responses=[("t", [(0, 0, 10, b"ms")])]).encode()
    )
    F = FetchResponse
    P = F.FetchableTopicResponse.PartitionData
    new = bytes(
        F(
            version=3,
            throttle_time_ms=0,
            responses=[
                F.FetchableTopicResponse(
                    topic="t",
                    partitions=[
                        P(partition_index=0, error_code=0, high_watermark=10, records=b"ms")
                    ],
                )
            ],
        ).encode(version=3)
    )
    res.append(f"Fetch v3 response encode == legacy Struct bytes: {old == new}")

    old = bytes(olo.ListOffsetsResponse_v0(topics=[("t", [(0, 0, [5, 0])])]).encode())
    L = ListOffsetsResponse
    new = bytes(
        L(
            version=0,
            topics=[
                L.ListOffsetsTopicResponse(
                    name="t",
                    partitions=[
                        L.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
                            partition_index=0, error_code=0, old_style_offsets=[5, 0]
                        )
                    ],
                )
            ],
        ).encode(version=0)
    )
    res.append(
        f"ListOffsets v0 response encode (old_style_offsets) == legacy Struct bytes: {old == new}"
    )
    return res


def run() -> tuple[str, list[str]]:
    kio = kio_versions()
    new = kp_new_versions()
    old = kp_old_versions()
    rows = []
    for key in KOP_APIS:
        name = api_key_map.get(key, "?")
        kmin, kmax = kio.get(key, (None, None))
        kio_s = f"{kmin}-{kmax}" if kmin is not None else "-"
        missing = (
            "" if not kmin else (f"v{PRE_40_MIN}" if kmin == 1 else f"v{PRE_40_MIN}-v{kmin - 1}")
        )
        if key in new:
            valid, mx, flex = new[key]
            new_s = f"0-{mx} (JSON {valid}; flex {flex})"
        else:
            new_s = "-"
        if key in old:
            omax, oflex = old[key]
            old_s = f"0-{omax}" + (f" (flex {oflex})" if oflex else " (no flex)")
        else:
            old_s = "-"
        rows.append([f"{key} {name}", kio_s, missing, new_s, old_s])
    t = table(
        [
            "API",
            "kio 0.6.5",
            "dropped by kio (vs Kafka 3.x)",
            "kafka-python 3.0.12 ApiMessage",
            "kafka-python .old Struct",
        ],
        rows,
    )
    totals = [
        f"kio: {len(kio)} API keys (request schemas), "
        f"kafka-python ApiMessage: {len(new)} API keys, "
        f"kafka-python .old Struct: {len(old)} API keys",
    ]
    try:
        totals += legacy_spot_checks()
    except Exception as e:  # keep the run going; report what broke
        totals.append(f"legacy spot checks failed: {e!r}")
    return t, totals


if __name__ == "__main__":
    t, notes = run()
    print(t)
    print(*notes, sep="\n")
