"""One handler module per API family: typed request in, version-agnostic response out."""
