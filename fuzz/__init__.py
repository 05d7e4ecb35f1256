"""kop's fuzzer: mutated Kafka request frames against the decoders (each in a worker
process, so that an abort is caught) and against a live kop (`python -m fuzz`)."""
