"""kop throughput/latency bench: `python -m bench [--quick] [--profile]`.

Runs the same workload through kop (both entry formats) and with the native
Pulsar Python client against the same Pulsar, and prints kop/native ratios.
See docs/benchmarks.md.
"""
