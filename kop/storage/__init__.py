"""The storage port: what the partition log needs from a partitioned message log.

Plain data types and `typing.Protocol`s only; no Pulsar import. `kop/pulsar`
implements it for Apache Pulsar; `tests/sim` implements it in memory, with
faults on command, to prove the log deterministically.
"""
