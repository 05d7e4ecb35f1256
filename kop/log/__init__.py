"""The partition log: append batches, read from offsets, the offset index, ownership."""
