"""Mutated frames against a live kop, with a well-behaved client checking on it.

Several connections send mutants side by side, each waiting for its answer, the
connection's close, or a short silence (acks=0 produce, a long poll, a prefix
that promised more bytes than came). Every `probe_every` frames a fresh
connection asks ApiVersions and Metadata and must be answered within
`probe_timeout_s`: a kop that died, hung or stalled shows there. Frames in
flight when kop stopped answering are kept in the corpus.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest

from fuzz import corpus
from fuzz.mutate import Mutant, mutate, prefixed
from fuzz.seeds import Names, all_seeds, encode, session_seeds

_I32 = struct.Struct(">i")
# What a client asks first: ApiVersions v3, then Metadata v12 for no topics.
_PROBES = (
    encode(
        18,
        3,
        ApiVersionsRequest(client_software_name="probe", client_software_version="1"),
        1,
        "probe",
    ),
    encode(
        3,
        12,
        MetadataRequest(
            topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
        ),
        2,
        "probe",
    ),
)


@dataclass
class LiveReport:
    frames: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    probes: list[float] = field(default_factory=list)  # seconds each probe took
    failures: list[str] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0

    def probe_p99(self) -> float:
        if not self.probes:
            return 0.0
        ordered = sorted(self.probes)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


class KopGone(Exception):
    """kop stopped accepting connections or answering a well-behaved client."""


@dataclass
class LiveFuzzer:
    host: str
    port: int
    seed: int = 0
    concurrency: int = 16
    probe_every: int = 1000
    probe_timeout_s: float = 10.0
    silence_s: float = 2.0  # how long a mutant may go unanswered before moving on
    names: Names = field(default_factory=Names)
    corpus_dir: Path | None = corpus.CORPUS  # None: keep nothing
    progress: Callable[[LiveReport], None] | None = None
    progress_every_s: float = 10.0

    async def run(self, frames: int) -> LiveReport:
        rng = random.Random(self.seed)
        seeds = [s.frame for s in all_seeds(rng, 2, self.names) + session_seeds(rng, self.names)]
        seeds += corpus.real_frames()
        report = LiveReport()
        in_flight: dict[int, Mutant] = {}
        recent: deque[Mutant] = deque(maxlen=self.concurrency * 4)
        started = time.monotonic()
        last_progress = started
        next_probe = self.probe_every
        await self.check(report)
        try:
            while report.frames < frames:
                batch = min(next_probe, frames) - report.frames
                queue: asyncio.Queue[Mutant] = asyncio.Queue()
                for _ in range(batch):
                    queue.put_nowait(mutate(rng.choice(seeds), rng, seeds))
                workers = [
                    asyncio.create_task(self._worker(queue, report, in_flight, recent))
                    for _ in range(self.concurrency)
                ]
                await asyncio.gather(*workers)
                await self.check(report)
                next_probe += self.probe_every
                report.seconds = time.monotonic() - started
                if self.progress and time.monotonic() - last_progress >= self.progress_every_s:
                    self.progress(report)
                    last_progress = time.monotonic()
        except KopGone as gone:
            report.failures.append(str(gone))
            suspects = list(in_flight.values()) or list(recent)
            if self.corpus_dir is not None:
                report.kept += [corpus.save(m.wire, "kop-died", self.corpus_dir) for m in suspects]
        report.seconds = time.monotonic() - started
        return report

    async def _worker(
        self,
        queue: asyncio.Queue[Mutant],
        report: LiveReport,
        in_flight: dict[int, Mutant],
        recent: deque[Mutant],
    ) -> None:
        me = id(asyncio.current_task())
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while not queue.empty():
                mutant = queue.get_nowait()
                if conn is None:
                    conn = await self._connect()
                in_flight[me] = mutant
                outcome = await _exchange(conn, mutant, self.silence_s)
                del in_flight[me]
                recent.append(mutant)
                report.frames += 1
                report.outcomes[outcome] += 1
                if outcome != "answered":
                    conn[1].close()
                    conn = None
        finally:
            if conn is not None:
                conn[1].close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.probe_timeout_s
            )
        except (OSError, TimeoutError) as exc:
            raise KopGone(f"kop at {self.host}:{self.port} refuses connections: {exc!r}") from exc

    async def check(self, report: LiveReport) -> None:
        """A fresh client's ApiVersions and Metadata, answered in time; KopGone if not."""
        started = time.monotonic()
        reader, writer = await self._connect()
        try:
            async with asyncio.timeout(self.probe_timeout_s):
                for frame in _PROBES:
                    writer.write(prefixed(frame))
                    answer = await _read_frame(reader)
                    if answer is None or answer[:4] != frame[4:8]:
                        raise KopGone(f"a well-behaved client was not answered: {answer!r}")
        except TimeoutError:
            raise KopGone(
                f"a well-behaved client waited over {self.probe_timeout_s:.0f} s for an answer"
            ) from None
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise KopGone(f"a well-behaved client lost its connection: {exc!r}") from exc
        finally:
            writer.close()
        report.probes.append(time.monotonic() - started)


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        (size,) = _I32.unpack(await reader.readexactly(4))
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None


async def _exchange(
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], mutant: Mutant, silence_s: float
) -> str:
    """How kop took one mutant: "answered", "closed", "silent" or "mismatched"
    (an answer whose correlation id is not the request's)."""
    reader, writer = conn
    try:
        writer.write(mutant.wire)
        await writer.drain()
        answer = await asyncio.wait_for(_read_frame(reader), silence_s)
    except TimeoutError:
        return "silent"
    except OSError:
        return "closed"
    if answer is None:
        return "closed"
    return "answered" if answer[:4] == mutant.wire[8:12] else "mismatched"
