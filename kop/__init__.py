"""kop: a Kafka wire-protocol gateway for Apache Pulsar."""

import importlib.metadata

__version__ = "0.1.0"

# The distribution on PyPI (the name `kop` is another project's); the command is `kop`.
DISTRIBUTION = "kop-gateway"


def version() -> str:
    """The installed distribution's version; this checkout's when run uninstalled."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return __version__
