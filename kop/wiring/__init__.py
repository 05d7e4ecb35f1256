"""The composition root: the one place that builds kop from its parts, picks `kop/pulsar` as
the storage, and starts and closes what it built (docs/architecture.md)."""
