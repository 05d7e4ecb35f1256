"""kop-spark: PySpark jobs that check the Kafka view (through kop) and the Pulsar
view (straight from Pulsar) of the same topic agree, at scale."""
