"""The SparkSession every job runs in.

Run as `kop-spark`, it starts Spark itself: `local[*]` unless `--master` says
otherwise, bound to 127.0.0.1 when local. Spark's Kafka connector is resolved from
Maven Central only (a committed Ivy settings file, a cache of kop's own) the first
time; later sessions take the jars that resolution left in the cache as files
(spark.jars, see `resolved_jars`). Run under `spark-submit`, the JVM already exists
and spark-submit's own flags (`--master`, `--packages`) decide; see docs/spark.md.

Three environment variables tune a session: KOP_SPARK_DRIVER_MEMORY (3g),
KOP_SPARK_JAVA_OPTIONS (more options for the JVM kop-spark starts) and
KOP_SPARK_SHUFFLE_PARTITIONS (8). The defaults suit millions of events; the test
suite's jobs, a few thousand each, set the last two (docs/spark.md).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pyspark.sql import SparkSession

KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"
# pyspark ships the Hadoop client jars the connector would pull in again
EXCLUDES = "org.apache.hadoop:hadoop-client-api,org.apache.hadoop:hadoop-client-runtime"
HERE = Path(__file__).resolve().parent


def ivy_cache() -> Path:
    base = os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop"
    return Path(base).expanduser().resolve() / "spark-ivy"


def resolved_list() -> Path:
    """Where the first resolution writes down the jars it left in the cache."""
    return ivy_cache() / "resolved.json"


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def resolved_jars() -> list[str] | None:
    """The connector's jars as an earlier session resolved them, if that was this
    package with these exclusions and every jar is still in the cache; else None
    (resolve again). Handed to Spark as files, they spare each session an Ivy
    resolution, which re-reads every module's descriptor even when it downloads
    nothing (about 1 s of a session's start on 2 cores), and they stay off the
    Python path: spark-submit also adds resolved packages to spark.submit.pyFiles,
    which put nine jars on the sys.path of every Python process of the session."""
    try:
        found = json.loads(resolved_list().read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or (found.get("package"), found.get("excludes")) != (
        KAFKA_PACKAGE,
        EXCLUDES,
    ):
        return None
    jars = found.get("jars")
    if not isinstance(jars, list) or not jars:
        return None
    if not all(isinstance(j, str) and Path(j).is_file() for j in jars):
        return None
    return jars


def write_resolved(spark_jars: str) -> None:
    """After a session that resolved the connector: the jars Spark was given from
    the cache (its spark.jars, file: URIs), written down for the next session.
    Written whole or not at all (a session that found a torn file would only
    resolve again)."""
    cache = ivy_cache() / "jars"
    jars = []
    for uri in spark_jars.split(","):
        path = Path(unquote(urlsplit(uri).path)) if uri else None
        if path is not None and path.parent == cache and path.is_file():
            jars.append(str(path))
    if not jars:
        return
    target = resolved_list()
    text = json.dumps({"package": KAFKA_PACKAGE, "excludes": EXCLUDES, "jars": jars}, indent=1)
    partial = target.with_name(f"{target.name}.{os.getpid()}")
    try:
        partial.write_text(text + "\n")
        os.replace(partial, target)
    except OSError:
        partial.unlink(missing_ok=True)


def spark_session(app: str, master: str | None) -> SparkSession:
    builder = SparkSession.builder.appName(f"kop-spark {app}")
    resolving = False
    if not under_spark_submit():
        master = master or "local[*]"
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        log4j = f"-Dlog4j2.configurationFile=file:{HERE / 'log4j2.properties'}"
        java = " ".join([log4j, os.environ.get("KOP_SPARK_JAVA_OPTIONS", "")]).strip()
        builder = (
            builder.master(master)
            .config("spark.driver.memory", os.environ.get("KOP_SPARK_DRIVER_MEMORY", "3g"))
            .config("spark.driver.extraJavaOptions", java)
            .config("spark.executor.extraJavaOptions", java)
        )
        jars = resolved_jars()
        if jars is not None:
            builder = builder.config("spark.jars", ",".join(jars))
        else:
            resolving = True
            builder = (
                builder.config("spark.jars.packages", KAFKA_PACKAGE)
                .config("spark.jars.excludes", EXCLUDES)
                .config("spark.jars.ivySettings", str(HERE / "ivysettings.xml"))
                .config("spark.jars.ivy", str(ivy_cache()))
            )
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1"
            )
    shuffle = os.environ.get("KOP_SPARK_SHUFFLE_PARTITIONS", "8")
    builder = (
        builder.config("spark.sql.shuffle.partitions", shuffle)
        .config("spark.ui.showConsoleProgress", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if resolving:
        write_resolved(spark.sparkContext.getConf().get("spark.jars", ""))
    return spark
