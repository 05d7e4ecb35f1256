"""The topic regular expressions of KIP-848 consumers (ConsumerGroupHeartbeat v1+'s
`SubscribedTopicRegex`), compiled and evaluated as Kafka's group coordinator does.

Kafka 4.x resolves such a pattern on the broker with Google's RE2/J: it compiles the
pattern when a member first brings it (a pattern RE2/J refuses is answered with
INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `p` is not a valid regular
expression: why.") and lists the topics whose whole name `matches()` it. kop uses RE2
itself (`google-re2`), so a pattern means the same to both, never Python's `re`: `re`
accepts backreferences and look-around, which Kafka refuses, and backtracks, so one
hostile pattern such as `(a+)+$` would hold the event loop for longer than any client
waits. RE2 refuses what it cannot match in time linear in the name.

What kop adds to Kafka, all as bounds on what one client can make kop spend:
- a pattern of at most MAX_PATTERN_LENGTH characters, compiled into at most
  PATTERN_MEMORY_BYTES (RE2's `max_mem`, an eighth of its default);
- at most COMPILED_CACHE_SIZE compiled patterns kept (so RE2 holds at most their
  product), and the `re2` module's own cache of 128 emptied after each compile;
- evaluation on a pool of two threads of its own, off the event loop.
And it never lists Kafka's internal topics, which Kafka's resolution does not skip.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, cast

import re2

# Kafka sets no bound (a string of the protocol: up to 32,767 bytes). Compiling holds
# the GIL, so it stalls the event loop for as long as it takes, and its cost grows with
# the length: the worst measured here (Unicode classes such as `\pL`, repeated) was
# about 50 ms at 1,000 characters and 130 ms at 2,048 under PATTERN_MEMORY_BYTES.
# 1,000 is far above what a prefix or suffix pattern needs, leaves room for an
# alternation of some 30 topic names, and is the bound kop/api/patterns.py keeps for
# the other client patterns (same RE2 syntax, same error).
MAX_PATTERN_LENGTH = 1000

# RE2's `max_mem`: the compiled program and the automaton it builds while matching.
# A pattern that needs a larger program does not compile; a match whose automaton
# outgrows it falls back to RE2's NFA (still linear, slower: about 8 ms a 249-character
# name for `(.*){1000}`, against 0.01 ms with RE2's default 8 MiB). An alternation of
# 3,000 topic names (135,000 characters) still compiles within it.
PATTERN_MEMORY_BYTES = 1 << 20

# Compiled patterns kept, each within PATTERN_MEMORY_BYTES: at most 64 MiB held by RE2.
# A group's pattern is evaluated again at each refresh, so a hit saves its compile.
COMPILED_CACHE_SIZE = 64

# Kafka's `Topic.INTERNAL_TOPICS`. Kafka's own resolution lists them when the member may
# describe them; kop serves none of them to clients (`__consumer_offsets` is listed in
# Metadata but refused to reads), so a member assigned one could only fail on it.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

# As Kafka's group.coordinator.background.threads (2), where it resolves regexes.
# Threads of its own, not asyncio's default pool, which decompression and encoding
# borrow: a hostile pattern over a long topic list keeps at most these two busy.
# RE2 releases the GIL while it matches. Threads start on first use.
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kop-topic-regex")


class InvalidRegex(ValueError):
    """A pattern kop will not evaluate; the message, one line, tells the client why
    (the coordinator answers it with INVALID_REGULAR_EXPRESSION, as Kafka does)."""


class _Compiled(Protocol):
    """The part of google-re2's compiled pattern used here (the package has no types)."""

    def fullmatch(self, text: str) -> object | None: ...


@dataclass(frozen=True)
class TopicPattern:
    """A compiled topic pattern. Equal, and hashed, by its source. Hold the source
    rather than this object for long: compile_pattern's cache then bounds what RE2
    holds, whatever the number of groups."""

    source: str
    _compiled: _Compiled = field(repr=False, compare=False)

    def matches(self, topic: str) -> bool:
        """The whole name matches, as RE2/J's `matcher(topic).matches()` in Kafka."""
        try:
            return self._compiled.fullmatch(topic) is not None
        except UnicodeEncodeError:  # a lone surrogate: no topic name has one
            return False


def compile_pattern(pattern: str) -> TopicPattern:
    """`pattern` compiled by RE2, or InvalidRegex when it is empty, longer than
    MAX_PATTERN_LENGTH, not RE2 syntax, or too large for PATTERN_MEMORY_BYTES.

    Empty is refused because it is no pattern: Kafka's Java consumer sends "" to leave
    a regex subscription, and Kafka's coordinator takes "" as no regex (it checks
    `isNotEmpty` before compiling). The caller must do the same before calling this.
    Runs on the caller's thread: at most about 50 ms (see MAX_PATTERN_LENGTH), and a
    pattern seen recently (refused or not) costs a lookup.
    """
    if not pattern:
        raise InvalidRegex(
            "SubscribedTopicRegex is empty, which Kafka takes as no regex subscription"
        )
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidRegex(
            f"SubscribedTopicRegex is {len(pattern)} characters long; kop accepts at most "
            f"{MAX_PATTERN_LENGTH}: use a shorter pattern (a common prefix and .*)"
        )
    compiled = _compile(pattern)
    if isinstance(compiled, str):
        raise InvalidRegex(compiled)
    return compiled


@functools.lru_cache(maxsize=COMPILED_CACHE_SIZE)
def _compile(pattern: str) -> TopicPattern | str:
    """The compiled pattern, or the message of its refusal (kept as a message, not as
    an exception: an exception raised again grows its traceback each time)."""
    options = re2.Options()
    options.max_mem = PATTERN_MEMORY_BYTES
    options.never_capture = True  # whether a name matches, not where: the DFA alone
    options.log_errors = False  # RE2 would write each refused pattern to stderr
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        return _refusal(pattern, exc)
    except UnicodeEncodeError:
        return (
            f"SubscribedTopicRegex `{_printable(pattern)}` is not a valid regular "
            "expression: it is not valid Unicode."
        )
    finally:
        # The module's own cache would keep up to 128 patterns more, each up to its
        # max_mem, beyond the bound of ours.
        re2.purge()
    return TopicPattern(pattern, cast(_Compiled, compiled))


def _refusal(pattern: str, exc: Exception) -> str:
    why = exc.args[0] if exc.args else exc
    text = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
    text = _printable(text)  # RE2 quotes the part of the pattern it stopped at
    shown = _printable(pattern)
    if text.startswith("pattern too large"):
        return (
            f"SubscribedTopicRegex `{shown}` needs more than the "
            f"{PATTERN_MEMORY_BYTES >> 20} MiB kop allows a pattern: simplify it "
            "(large Unicode classes such as \\pL and counted repetitions make it grow)"
        )
    # Kafka's words (GroupMetadataManager's throwIfRegularExpressionIsInvalid), with
    # RE2's reason where Kafka gives RE2/J's.
    return f"SubscribedTopicRegex `{shown}` is not a valid regular expression: {text}."


def _printable(text: str) -> str:
    """`text` on one line: characters that do not print shown as RE2 escapes."""
    return "".join(c if c.isprintable() else f"\\x{{{ord(c):x}}}" for c in text)


async def matching_topics(pattern: TopicPattern, topics: Iterable[str], limit: int) -> list[str]:
    """The first `limit` names of `topics`, in sorted order, that `pattern` matches
    whole, never an internal topic (INTERNAL_TOPICS); duplicates count once.

    Kafka has no such limit: it resolves a pattern to every topic it matches. kop's
    caller chooses: to tell a cut list from one that fits exactly, it asks for one
    more than it accepts. Every name is still matched, so that a cut list is the same
    `limit` names whatever order the topics come in (members on several instances, or
    refreshes, see the same topics); what is kept is at most `limit` names.

    `topics` is read here, on the event loop, so it may be a view of live state; the
    matching then runs on this module's pool. Authorization is the caller's: Kafka
    drops the topics the member may not DESCRIBE after matching.
    """
    if limit < 0:
        raise ValueError(f"limit must be at least 0, not {limit}")
    names = set(topics)
    return await asyncio.get_running_loop().run_in_executor(
        _POOL, _smallest_matching, pattern, names, limit
    )


def _smallest_matching(pattern: TopicPattern, names: set[str], limit: int) -> list[str]:
    return heapq.nsmallest(
        limit, (n for n in names if n not in INTERNAL_TOPICS and pattern.matches(n))
    )
