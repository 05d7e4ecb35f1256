"""Section 1: server-side request decode / response encode, kio vs kafka-python.

kio:          kio.serial.entity_reader / entity_writer with kio.schema.* dataclasses
kafka-python: kafka.protocol ApiMessage classes (3.x JSON-schema driven codegen)
              (the 2.x Struct classes live on in kafka.protocol.old and stop before
              the flexible versions: Produce<=8, Fetch<=11, Metadata<=8)
"""

from __future__ import annotations

import datetime
import io
import os
import uuid

from _timing import fmt_rate, measure, table
from kafka.protocol.consumer import FetchRequest as KpFetchRequest
from kafka.protocol.consumer import FetchResponse as KpFetchResponse
from kafka.protocol.metadata import MetadataRequest as KpMetadataRequest
from kafka.protocol.metadata import MetadataResponse as KpMetadataResponse
from kafka.protocol.producer import ProduceRequest as KpProduceRequest
from kafka.protocol.producer import ProduceResponse as KpProduceResponse
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as kfreq
from kio.schema.fetch.v12 import response as kfetch
from kio.schema.metadata.v12 import request as kmreq
from kio.schema.metadata.v12 import response as kmresp
from kio.schema.produce.v9 import request as kprod
from kio.schema.produce.v9 import response as kpresp
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeader
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

N_META_TOPICS = 100
N_META_PARTITIONS = 3  # per topic in the metadata response
N_FETCH_PARTITIONS = 10
FETCH_RECORDS = 64 * 1024
PRODUCE_RECORDS = 16 * 1024


def kio_encode(entity_type: type, obj: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(entity_type)(buf, obj)
    return buf.getvalue()


# ---------------------------------------------------------------- Produce v9
def produce_fixture() -> tuple[bytes, bytes]:
    """Returns (body, header+body) of a ProduceRequest v9 with 1x16 KiB partition."""
    blob = os.urandom(PRODUCE_RECORDS)
    req = kprod.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            kprod.TopicProduceData(
                name=TopicName("bench-topic"),
                partition_data=(kprod.PartitionProduceData(index=i32(0), records=blob),),
            ),
        ),
    )
    body = kio_encode(kprod.ProduceRequest, req)
    hdr = KioRequestHeader(
        request_api_key=i16(0),
        request_api_version=i16(9),
        correlation_id=i32(7),
        client_id="bench-client",
    )
    return body, kio_encode(KioRequestHeader, hdr) + body


def kio_produce_response() -> kpresp.ProduceResponse:
    return kpresp.ProduceResponse(
        responses=(
            kpresp.TopicProduceResponse(
                name=TopicName("bench-topic"),
                partition_responses=(
                    kpresp.PartitionProduceResponse(
                        index=i32(0),
                        error_code=ErrorCode.none,
                        base_offset=i64(123_456),
                        log_append_time=None,
                        log_start_offset=i64(0),
                        record_errors=(),
                        error_message=None,
                    ),
                ),
            ),
        ),
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
    )


def kp_produce_response() -> KpProduceResponse:
    T = KpProduceResponse.TopicProduceResponse
    P = T.PartitionProduceResponse
    return KpProduceResponse(
        version=9,
        responses=[
            T(
                name="bench-topic",
                partition_responses=[
                    P(
                        index=0,
                        error_code=0,
                        base_offset=123_456,
                        log_append_time_ms=-1,
                        log_start_offset=0,
                        record_errors=[],
                        error_message=None,
                    )
                ],
            )
        ],
        throttle_time_ms=0,
    )


# ------------------------------------------------------------------ Fetch v12
def fetch_request_bytes() -> bytes:
    req = kfreq.FetchRequest(
        cluster_id=None,
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
        min_bytes=i32(1),
        max_bytes=i32(52428800),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            kfreq.FetchTopic(
                topic=TopicName("bench-topic"),
                partitions=tuple(
                    kfreq.FetchPartition(
                        partition=i32(p),
                        current_leader_epoch=i32(0),
                        fetch_offset=i64(99_000),
                        last_fetched_epoch=i32(0),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1048576),
                    )
                    for p in range(N_FETCH_PARTITIONS)
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    return kio_encode(kfreq.FetchRequest, req)


def kio_fetch_response(blobs: list[bytes]) -> kfetch.FetchResponse:
    return kfetch.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            kfetch.FetchableTopicResponse(
                topic=TopicName("bench-topic"),
                partitions=tuple(
                    kfetch.PartitionData(
                        partition_index=i32(p),
                        error_code=ErrorCode.none,
                        high_watermark=i64(100_000),
                        last_stable_offset=i64(100_000),
                        log_start_offset=i64(0),
                        aborted_transactions=None,
                        records=blob,
                    )
                    for p, blob in enumerate(blobs)
                ),
            ),
        ),
    )


def kp_fetch_response(blobs: list[bytes]) -> KpFetchResponse:
    T = KpFetchResponse.FetchableTopicResponse
    P = T.PartitionData
    return KpFetchResponse(
        version=12,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            T(
                topic="bench-topic",
                partitions=[
                    P(
                        partition_index=p,
                        error_code=0,
                        high_watermark=100_000,
                        last_stable_offset=100_000,
                        log_start_offset=0,
                        aborted_transactions=None,
                        records=blob,
                    )
                    for p, blob in enumerate(blobs)
                ],
            )
        ],
    )


# --------------------------------------------------------------- Metadata v12
TOPICS = [f"orders.region-{i:03d}.events" for i in range(N_META_TOPICS)]
TOPIC_IDS = [uuid.UUID(int=(i + 1) * 0x9E3779B97F4A7C15) for i in range(N_META_TOPICS)]


def metadata_request_bytes() -> bytes:
    req = kmreq.MetadataRequest(
        topics=tuple(kmreq.MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in TOPICS),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return kio_encode(kmreq.MetadataRequest, req)


def kio_metadata_response() -> kmresp.MetadataResponse:
    brokers = tuple(
        kmresp.MetadataResponseBroker(
            node_id=BrokerId(b), host=f"kop-{b}.svc", port=i32(9092), rack=None
        )
        for b in range(3)
    )
    return kmresp.MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=brokers,
        cluster_id="kop-cluster",
        controller_id=BrokerId(0),
        topics=tuple(
            kmresp.MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(t),
                topic_id=tid,
                is_internal=False,
                partitions=tuple(
                    kmresp.MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=i32(p),
                        leader_id=BrokerId(p % 3),
                        leader_epoch=i32(0),
                        replica_nodes=(BrokerId(p % 3),),
                        isr_nodes=(BrokerId(p % 3),),
                        offline_replicas=(),
                    )
                    for p in range(N_META_PARTITIONS)
                ),
            )
            for t, tid in zip(TOPICS, TOPIC_IDS, strict=True)
        ),
    )


def kp_metadata_response() -> KpMetadataResponse:
    R = KpMetadataResponse
    return R(
        version=12,
        throttle_time_ms=0,
        brokers=[
            R.MetadataResponseBroker(node_id=b, host=f"kop-{b}.svc", port=9092, rack=None)
            for b in range(3)
        ],
        cluster_id="kop-cluster",
        controller_id=0,
        topics=[
            R.MetadataResponseTopic(
                error_code=0,
                name=t,
                topic_id=tid,
                is_internal=False,
                partitions=[
                    R.MetadataResponseTopic.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=p % 3,
                        leader_epoch=0,
                        replica_nodes=[p % 3],
                        isr_nodes=[p % 3],
                        offline_replicas=[],
                    )
                    for p in range(N_META_PARTITIONS)
                ],
            )
            for t, tid in zip(TOPICS, TOPIC_IDS, strict=True)
        ],
    )


# ---------------------------------------------------------------------- run
def run() -> tuple[str, dict[str, object]]:
    facts: dict[str, object] = {}
    rows: list[list[str]] = []

    def add(case: str, lib: str, res, nbytes: int | None = None, note: str = "") -> None:
        mbs = f"{res.ops * nbytes / 1e6:.0f}" if nbytes else ""
        rows.append([case, lib, fmt_rate(res.ops), f"{res.per_op_s * 1e6:.1f}", mbs, note])

    # --- Produce v9 decode
    body, framed = produce_fixture()
    r_prod = entity_reader(kprod.ProduceRequest)
    r_hdr = entity_reader(KioRequestHeader)

    def kio_prod() -> object:
        return r_prod(body, 0)[0]

    def kio_prod_hdr() -> object:
        _hdr, n = r_hdr(framed, 0)
        return r_prod(framed, n)[0]

    def kp_prod() -> object:
        return KpProduceRequest.decode(body, version=9)

    def kp_prod_hdr() -> object:
        return KpProduceRequest.decode(framed, version=9, header=True)

    # correctness: both see the same 16 KiB blob
    a = kio_prod().topic_data[0].partition_data[0].records
    b = kp_prod().topic_data[0].partition_data[0].records
    facts["produce_decode_equal"] = bytes(a) == bytes(b)
    add("Produce v9 req decode (body)", "kio", measure(kio_prod), len(body))
    add("Produce v9 req decode (body)", "kafka-python", measure(kp_prod), len(body))
    add("Produce v9 req decode (hdr+body)", "kio", measure(kio_prod_hdr), len(framed))
    add(
        "Produce v9 req decode (hdr+body)",
        "kafka-python",
        measure(kp_prod_hdr),
        len(framed),
        "header=True copies the rest of the frame",
    )

    # --- Produce v9 response encode (1 partition) - the per-request hot path
    w_presp = entity_writer(kpresp.ProduceResponse)

    def kio_presp() -> bytes:
        buf = io.BytesIO()
        w_presp(buf, kio_produce_response())
        return buf.getvalue()

    def kp_presp() -> object:
        return kp_produce_response().encode(version=9)

    facts["produce_resp_bytes_identical"] = kio_presp() == bytes(kp_presp())
    add("Produce v9 resp build+encode (1 part)", "kio", measure(kio_presp))
    add("Produce v9 resp build+encode (1 part)", "kafka-python", measure(kp_presp))

    # --- Fetch v12 request decode (10 partitions)
    freq = fetch_request_bytes()
    r_freq = entity_reader(kfreq.FetchRequest)

    def kio_freq() -> object:
        return r_freq(freq, 0)[0]

    def kp_freq() -> object:
        return KpFetchRequest.decode(freq, version=12)

    facts["fetch_req_equal"] = [p.fetch_offset for p in kio_freq().topics[0].partitions] == [
        p.fetch_offset for p in kp_freq().topics[0].partitions
    ]
    add("Fetch v12 req decode (10 part)", "kio", measure(kio_freq))
    add("Fetch v12 req decode (10 part)", "kafka-python", measure(kp_freq))

    # --- Fetch v12 encode
    blobs = [os.urandom(FETCH_RECORDS) for _ in range(N_FETCH_PARTITIONS)]
    kio_obj = kio_fetch_response(blobs)
    kp_obj = kp_fetch_response(blobs)
    w_fetch = entity_writer(kfetch.FetchResponse)

    def kio_fetch() -> bytes:
        buf = io.BytesIO()
        w_fetch(buf, kio_obj)
        return buf.getvalue()

    def kio_fetch_build() -> bytes:
        buf = io.BytesIO()
        w_fetch(buf, kio_fetch_response(blobs))
        return buf.getvalue()

    def kp_fetch() -> object:
        return kp_obj.encode(version=12)

    def kp_fetch_build() -> object:
        return kp_fetch_response(blobs).encode(version=12)

    class Chunks:
        """IO[bytes] stand-in collecting write() calls: kio passes the records blobs
        through by reference, ready for transport.writelines()/sendmsg()."""

        __slots__ = ("parts",)

        def __init__(self) -> None:
            self.parts: list[bytes] = []

        def write(self, b: bytes) -> int:
            self.parts.append(b)
            return len(b)

    def kio_fetch_chunks() -> list[bytes]:
        c = Chunks()
        w_fetch(c, kio_obj)
        return c.parts

    parts = kio_fetch_chunks()
    facts["fetch_chunks"] = (
        f"{len(parts)} chunks, blobs passed by reference: {any(p is blobs[0] for p in parts)}"
    )

    out_kio = kio_fetch()
    out_kp = bytes(kp_fetch())
    facts["fetch_bytes_identical"] = out_kio == out_kp
    facts["fetch_size"] = len(out_kio)
    add("Fetch v12 resp encode (10x64KiB)", "kio", measure(kio_fetch), len(out_kio))
    add("Fetch v12 resp encode (10x64KiB)", "kafka-python", measure(kp_fetch), len(out_kp))
    add(
        "Fetch v12 resp encode -> chunk list",
        "kio",
        measure(kio_fetch_chunks),
        len(out_kio),
        "no copy of records; for writelines()",
    )
    add("Fetch v12 resp build+encode", "kio", measure(kio_fetch_build), len(out_kio))
    add("Fetch v12 resp build+encode", "kafka-python", measure(kp_fetch_build), len(out_kp))

    # --- Metadata v12
    mreq = metadata_request_bytes()
    r_mreq = entity_reader(kmreq.MetadataRequest)
    w_mresp = entity_writer(kmresp.MetadataResponse)
    kio_mresp = kio_metadata_response()
    kp_mresp = kp_metadata_response()

    def kio_meta_dec() -> object:
        return r_mreq(mreq, 0)[0]

    def kp_meta_dec() -> object:
        return KpMetadataRequest.decode(mreq, version=12)

    def kio_meta_enc() -> bytes:
        buf = io.BytesIO()
        w_mresp(buf, kio_mresp)
        return buf.getvalue()

    def kp_meta_enc() -> object:
        return kp_mresp.encode(version=12)

    def kio_meta_rt() -> bytes:
        r_mreq(mreq, 0)
        buf = io.BytesIO()
        w_mresp(buf, kio_metadata_response())
        return buf.getvalue()

    def kp_meta_rt() -> object:
        KpMetadataRequest.decode(mreq, version=12)
        return kp_metadata_response().encode(version=12)

    facts["metadata_req_names_equal"] = [t.name for t in kio_meta_dec().topics] == [
        t.name for t in kp_meta_dec().topics
    ]
    m_kio = kio_meta_enc()
    m_kp = bytes(kp_meta_enc())
    facts["metadata_resp_bytes_identical"] = m_kio == m_kp
    facts["metadata_resp_size"] = len(m_kio)
    facts["metadata_req_size"] = len(mreq)
    add("Metadata v12 req decode (100 topics)", "kio", measure(kio_meta_dec), len(mreq))
    add("Metadata v12 req decode (100 topics)", "kafka-python", measure(kp_meta_dec), len(mreq))
    add("Metadata v12 resp encode (100t x3p)", "kio", measure(kio_meta_enc), len(m_kio))
    add("Metadata v12 resp encode (100t x3p)", "kafka-python", measure(kp_meta_enc), len(m_kp))
    add("Metadata v12 decode+build+encode", "kio", measure(kio_meta_rt))
    add("Metadata v12 decode+build+encode", "kafka-python", measure(kp_meta_rt))

    # --- server-side usability probes for kafka-python
    probes = []
    dec = KpProduceRequest.decode(body, version=9)
    try:
        dec.encode(version=9)
        probes.append("re-encode of a decoded message with encode(version=...) OK")
    except AttributeError as e:
        probes.append(f"re-encode of a decoded message with encode(version=...) fails: {e}")
    facts["kp_probes"] = probes

    text = table(
        ["case", "library", "ops/s", "us/op", "MB/s", "note"],
        rows,
    )
    return text, facts


if __name__ == "__main__":
    t, f = run()
    print(t)
    print(f)
