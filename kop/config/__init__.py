"""kop's one typed configuration (file < env `KOP_*` < flags): `settings` holds the whole,
the other modules one part each (the Pulsar connection, connection limits, listeners)."""
