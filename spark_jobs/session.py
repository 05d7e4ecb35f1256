"""The SparkSession every job runs in.

Run as `kop-spark`, it starts Spark itself: `local[*]` unless `--master` says
otherwise, Spark's Kafka connector resolved from Maven Central only (a committed
Ivy settings file, a cache of kop's own), bound to 127.0.0.1 when local. Run
under `spark-submit`, the JVM already exists and spark-submit's own flags
(`--master`, `--packages`) decide; see docs/spark.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"
# pyspark ships the Hadoop client jars the connector would pull in again
EXCLUDES = "org.apache.hadoop:hadoop-client-api,org.apache.hadoop:hadoop-client-runtime"
HERE = Path(__file__).resolve().parent


def ivy_cache() -> Path:
    base = os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop"
    return Path(base).expanduser().resolve() / "spark-ivy"


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(app: str, master: str | None) -> SparkSession:
    builder = SparkSession.builder.appName(f"kop-spark {app}")
    if not under_spark_submit():
        master = master or "local[*]"
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        log4j = f"-Dlog4j2.configurationFile=file:{HERE / 'log4j2.properties'}"
        builder = (
            builder.master(master)
            .config("spark.jars.packages", KAFKA_PACKAGE)
            .config("spark.jars.excludes", EXCLUDES)
            .config("spark.jars.ivySettings", str(HERE / "ivysettings.xml"))
            .config("spark.jars.ivy", str(ivy_cache()))
            .config("spark.driver.memory", os.environ.get("KOP_SPARK_DRIVER_MEMORY", "3g"))
            .config("spark.driver.extraJavaOptions", log4j)
            .config("spark.executor.extraJavaOptions", log4j)
        )
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1"
            )
    builder = (
        builder.config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
