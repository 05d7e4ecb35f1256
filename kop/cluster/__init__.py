"""Several kop instances: who is alive (membership through a Pulsar topic of
heartbeats) and who owns what (rendezvous hashing over the live instances).

Sits between `kop/storage` and the layers that serve Kafka (`kop/log`,
`kop/groups`, `kop/api`): it talks to Pulsar only through the storage port. Safety
never rests on this view being right: every owner's writes are fenced by Pulsar
(`WriterMode.FENCING`); the view only decides who tries (docs/decisions.md D15).
"""
