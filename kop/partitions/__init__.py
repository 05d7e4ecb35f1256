"""The partitions this instance serves: opened on first use or warmed after a takeover,
handed over when ownership moves, their offset indexes flushed."""
