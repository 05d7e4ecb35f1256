"""Regular expressions a client sends (ListTransactions' `transactional_id_pattern`),
matched in time linear in the text, never with Python's `re`.

Python's `re` backtracks: `(a+)+` against 25 characters held the event loop for
2.4 s, and every connection with it. RE2 (`google-re2`) compiles to automata and
matches in linear time; it is also the syntax Kafka uses for client patterns (RE2/J,
KIP-848's topic regexes and KIP-1152's transactional id pattern), so a pattern means
the same to both. What RE2 cannot match in linear time (backreferences, look-around)
it refuses to compile, and the client gets INVALID_REGULAR_EXPRESSION, as from Kafka.

Bounds: a pattern of at most MAX_PATTERN_CHARS characters, compiled into at most
PATTERN_MEMORY_BYTES (RE2's own default budget; a pattern too large for it does not
compile, and a match whose automaton outgrows it falls back to RE2's slower, still
linear, NFA). A compiled pattern lives for one request: the `re2` module keeps the
last 128 patterns it compiled, each up to its budget (836 MB measured, with
patterns chosen to fill their automata), so kop empties that cache at once.
"""

from __future__ import annotations

from typing import Protocol, cast

import re2

from kop.protocol.errors import ErrorCode, KafkaError

# Longer patterns are refused (Kafka has no such limit; a transactional id filter
# needs a fraction of it). Characters, not bytes: up to 4,000 bytes of UTF-8.
MAX_PATTERN_CHARS = 1000
# RE2's default max_mem: the compiled program and its automata's cache.
PATTERN_MEMORY_BYTES = 8 << 20


class _Compiled(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


class ClientPattern:
    """One client pattern, compiled once for the request that sent it."""

    def __init__(self, compiled: _Compiled) -> None:
        self._compiled = compiled

    def fullmatch(self, text: str) -> bool:
        """The whole text matches, as Java's `Matcher.matches()` (Kafka's semantics)."""
        return self._compiled.fullmatch(text) is not None


def compile_client_pattern(pattern: str, what: str = "pattern") -> ClientPattern:
    """The pattern compiled by RE2, or KafkaError(INVALID_REGULAR_EXPRESSION) when it
    is longer than MAX_PATTERN_CHARS or RE2 refuses it."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise KafkaError(
            ErrorCode.invalid_regular_expression,
            f"{what} is {len(pattern)} characters, more than {MAX_PATTERN_CHARS}",
        )
    options = re2.Options()
    options.max_mem = PATTERN_MEMORY_BYTES
    options.never_capture = True  # whether it matches, not where: the DFA alone
    options.log_errors = False  # RE2 would write each refused pattern to stderr
    try:
        compiled = re2.compile(pattern, options)
    except (re2.error, UnicodeEncodeError) as exc:
        why = exc.args[0] if exc.args else exc
        if isinstance(why, bytes):  # RE2's own message
            why = why.decode(errors="replace")
        raise KafkaError(
            ErrorCode.invalid_regular_expression, f"{what} is not a valid RE2 expression: {why}"
        ) from None
    finally:
        re2.purge()  # the module's cache would keep it, and its automata, for later
    return ClientPattern(cast(_Compiled, compiled))
