"""`kop-spark`: the PySpark jobs. Every subcommand has --help; under spark-submit
run this file: `spark-submit --packages <connector> spark_jobs/cli.py validate-offsets ...`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from spark_jobs.options import stack_from, stack_options, unreachable

split_entries = click.option(
    "--split-entries", type=click.IntRange(min=1), default=200_000, show_default=True,
    help="Pulsar entries per task of the Pulsar view (a larger partition is cut)",
)  # fmt: skip


def _run(job: str, kwargs: dict[str, Any], body: Callable[..., bool]) -> None:
    """Run `body(spark, stack, **the job's own flags)` in a session of its own;
    exit 1 when it says the check failed."""
    from spark_jobs.session import spark_session

    stack = stack_from(kwargs)
    missing = unreachable(stack)
    if missing:
        raise click.ClickException(
            "cannot reach " + "; ".join(missing) + " (is `make run` going? see --help)"
        )
    spark = spark_session(job, stack.master)
    try:
        ok = body(spark, stack, **kwargs)
    finally:
        spark.stop()
    sys.exit(0 if ok else 1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """PySpark jobs that check kop's Kafka view and Pulsar's view of a topic agree."""


@main.command()
@stack_options
@click.option(
    "--events",
    "count",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="events written through kop",
)
@click.option(
    "--pulsar-events",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="events written straight to Pulsar by native producers, after them",
)
@click.option(
    "--transactional",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="events written through kop in Kafka transactions, after the others; every "
    "third transaction is aborted (what replay-check's committed-only view must drop)",
)
@click.option("--transaction-size", type=click.IntRange(min=1), default=50, show_default=True,
              help="events per transaction")  # fmt: skip
@click.option("--partitions", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--entities",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="distinct keys (accounts)",
)
@click.option(
    "--entry-format",
    type=click.Choice(["pulsar", "kafka"]),
    default=None,
    help="the topic's kop.entry.format [kop's default]",
)
@click.option("--recreate", is_flag=True, help="delete and re-create the topic if it exists")
@click.option("--producer-option", "producer", multiple=True, metavar="KEY=VALUE",
              help="a Kafka producer config for Spark's sink (repeatable)")  # fmt: skip
def generate(**kwargs: Any) -> None:
    """Write events through kop with Spark's Kafka sink; report records/s."""
    from spark_jobs.generate import generate as body

    kwargs["producer"] = dict(_pair(p) for p in kwargs["producer"])
    _run("generate", kwargs, body)


@main.command("validate-offsets")
@stack_options
@split_entries
@click.option("--min-partitions", type=click.IntRange(min=1), default=None,
              help="tasks of the Kafka view [one per partition]")  # fmt: skip
def validate_offsets(**kwargs: Any) -> None:
    """Read the topic through kop and straight from Pulsar; exit 1 unless every
    offset, position and record agrees."""
    from spark_jobs.validate import validate_offsets as body

    _run("validate-offsets", kwargs, body)


@main.command("replay-check")
@stack_options
@split_entries
@click.option(
    "--stream-batches",
    type=click.IntRange(min=2),
    default=6,
    show_default=True,
    help="micro-batches the streaming run is cut into",
)
@click.option("--stop-after", type=click.IntRange(min=1), default=2, show_default=True,
              help="micro-batches before the stream is stopped and restarted")  # fmt: skip
def replay_check(**kwargs: Any) -> None:
    """Per-entity state materialized four ways (batch, streaming with a restart,
    rollback and replay, the Pulsar view), and committed records only two ways
    (read_committed through kop, the Pulsar view filtered); exit 1 unless all agree."""
    from spark_jobs.replay import replay_check as body

    _run("replay-check", kwargs, body)


@main.command("fetch-connector")
def fetch_connector() -> None:
    """Resolve Spark's Kafka connector and what it needs from Maven Central into kop's
    cache (~/.cache/kop/spark-ivy), as the first job would; a no-op when cached. For a
    machine that should not make its first job wait on the download (make test runs
    it beside the unit tier)."""
    from spark_jobs.session import KAFKA_PACKAGE, resolved_jars, spark_session

    if resolved_jars() is None:
        started = time.monotonic()
        spark_session("fetch-connector", "local[1]").stop()
        if resolved_jars() is None:
            raise click.ClickException(f"{KAFKA_PACKAGE} was not resolved (see above)")
        click.echo(f"[kop-spark] resolved {KAFKA_PACKAGE} in {time.monotonic() - started:.0f} s")
    else:
        click.echo(f"[kop-spark] {KAFKA_PACKAGE} is cached")


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{text!r} is not KEY=VALUE", param_hint="--producer-option")
    return key, value


if __name__ == "__main__":
    main()
