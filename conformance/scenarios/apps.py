"""Real applications judged like clients: Kafka Streams 4.3.1, unmodified, with
`exactly_once_v2` (transactions from end to end: its input's offsets, its store's
changelog and its output in one transaction per commit). The same topology and
input on kop and on Kafka must leave the same output table. (kop's own tests kill
it under load too: tests/integration/streams_connect.)"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from conformance.model import Ctx, Observation, scenario
from tests.integration.streams_connect.jvm import build_classpath, wait_until
from tests.integration.streams_connect.wordcount import (
    CountTable,
    WordCountApp,
    create_topics,
    lines,
    produce,
    word_counts,
)


@scenario("apps/streams-exactly-once-word-count", ("java-tools",))
def streams_exactly_once(ctx: Ctx, _tools: Any) -> Observation:
    """A word count (a repartition, a persistent store) over 600 lines, read back
    read_committed: the latest count of every word."""
    text = lines(600, seed=11)
    with tempfile.TemporaryDirectory(prefix="cf-streams-") as work:
        app = WordCountApp(build_classpath(), ctx.bootstrap, ctx.name("eos-wc"), Path(work),
                           guarantee="exactly_once_v2")  # fmt: skip
        create_topics(ctx.bootstrap, {app.input: 3, app.output: 2})
        produce(ctx.bootstrap, app.input, text)
        table = CountTable(ctx.bootstrap, app.output, 2)
        expected = word_counts(text)
        try:
            app.start()
            wait_until("every word counted", lambda: table.reached(expected), 180,
                       lambda: table.progress(expected), [app])  # fmt: skip
            table.poll()
            return {"latest count per word": dict(sorted(table.latest.items())),
                    "every count exact": table.latest == dict(expected)}  # fmt: skip
        finally:
            app.stop()
            table.close()
