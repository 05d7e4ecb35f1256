"""The partition log: append batches, read from offsets, over one offset index."""
