"""Compacted topics: Pulsar compacts, kop notes where the survivors' offsets are and serves
reads below the live ledgers from Pulsar's compacted view."""
