"""Why kop cannot start, in one line that says what to do."""

from __future__ import annotations


class StartupError(Exception):
    """kop cannot start; the message says what to do."""
