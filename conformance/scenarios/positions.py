"""Positions: ListOffsets (earliest, latest, by time, max timestamp) and seeks."""

from __future__ import annotations

from conformance.clients import LIBRARIES
from conformance.clients.base import Client, ClientError, Unsupported
from conformance.model import Ctx, Observation, Rec, scenario
from conformance.setup import create_topic

T0 = 1_700_000_000_000


@scenario("positions/list-offsets", LIBRARIES, quick=True)
def list_offsets(ctx: Ctx, client: Client) -> Observation:
    """Earliest, latest, the first record at or after a time, after the last time,
    and the record with the largest timestamp (not the last one)."""
    topic = ctx.name("positions")
    create_topic(ctx.bootstrap, topic)
    stamps = [T0 + i * 10 for i in range(10)]
    stamps[6] = T0 + 1000  # the largest timestamp, in the middle
    recs = [Rec(None, f"v{i}".encode(), (), ts) for i, ts in enumerate(stamps)]
    client.produce(ctx.bootstrap, topic, recs)
    out: dict[str, object] = {}
    for label, spec in (
        ("earliest", "earliest"),
        ("latest", "latest"),
        ("at T0+35", T0 + 35),
        ("at T0", T0),
        ("after the last", T0 + 5000),
        ("max-timestamp", "max-timestamp"),
    ):
        try:
            out[label] = client.list_offset(ctx.bootstrap, topic, 0, spec)
        except Unsupported:
            continue
        except ClientError as exc:
            out[label] = {"client error": exc.name}
    return out


@scenario("positions/seek", LIBRARIES, quick=True)
def seek(ctx: Ctx, client: Client) -> Observation:
    """Reading from the middle of the log gets exactly the records from there on."""
    topic = ctx.name("seek")
    create_topic(ctx.bootstrap, topic)
    recs = [Rec(None, f"v{i}".encode(), (), T0 + i) for i in range(10)]
    client.produce(ctx.bootstrap, topic, recs)
    return {
        "from 7": [r.seen() for r in client.consume(ctx.bootstrap, topic, 3, start=7)],
        "from 0, 2 records": [r.seen() for r in client.consume(ctx.bootstrap, topic, 2)][:2],
    }
