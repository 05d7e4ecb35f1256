"""The entry codec: Kafka batches <-> stored entries in the two entry formats, with the
optional native kernels (`kop_native`) and their Python twins."""
