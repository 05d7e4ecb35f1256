"""How much work one compatibility request may make: hostile documents (a client sends
both schemas) are refused once it is spent, not compared for ever."""

from __future__ import annotations

from typing import Final

MAX_DEPTH: Final = 64
_MAX_COMPARISONS: Final = 50_000
MAX_ALTERNATIVES: Final = 1024


class Abort(Exception):
    """The comparison stops: too large or too deep. The change is refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """The comparisons a request may still make; spent, the change is refused."""

    def __init__(self) -> None:
        self.left = _MAX_COMPARISONS

    def spend(self, path: str, cost: int = 1) -> None:
        self.left -= cost
        if self.left < 0:
            raise Abort(f"{path}: the schemas are too large to compare")
