"""The topic catalog: Kafka topics over Pulsar partitioned topics, their configs as Kafka
validates them, and the limits on how many partitions clients may make."""
