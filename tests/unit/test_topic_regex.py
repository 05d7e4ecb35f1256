"""kop/groups/consumer/topic_regex.py: KIP-848 topic patterns mean what they mean to
Kafka's coordinator (RE2 syntax, whole names), Python's `re` is never what compiles
them (it accepts what Kafka refuses, and backtracks), and what a client can make kop
spend on one is bounded: length, RE2 memory, compiled patterns kept, the result."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kop.groups.consumer import topic_regex
from kop.groups.consumer.topic_regex import (
    COMPILED_CACHE_SIZE,
    INTERNAL_TOPICS,
    MAX_PATTERN_LENGTH,
    InvalidRegex,
    TopicPattern,
    compile_pattern,
    matching_topics,
)

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
# Kafka's legal topic characters (Topic.validate), so `.` never meets a newline.
TOPIC_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
topic_names = st.text(alphabet=TOPIC_CHARS, min_size=1, max_size=40)


# --- what compiles, and what it matches


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("foo.*", "foo1", True),
        ("foo.*", "foo", True),
        ("foo.*", "xfoo", False),  # anchored at the start
        ("foo", "foobar", False),  # and at the end: the whole name, not a search
        ("foo|bar", "bar", True),
        ("foo|bar", "foobar", False),
        (r"orders-\d+", "orders-12", True),
        (r"orders-\d+", "orders-12a", False),
        ("(?i)ORDERS", "orders", True),
        (r"a\.b", "a.b", True),
        (r"a\.b", "axb", False),
    ],
)
def test_matches_whole_names(pattern: str, topic: str, expected: bool) -> None:
    assert compile_pattern(pattern).matches(topic) is expected


# Each is a pattern Python's `re` compiles and RE2 (so RE2/J, so Kafka) refuses.
PYTHON_ONLY = [
    r"(a)\1",  # backreference
    r"(?P<x>a)(?P=x)",  # named backreference
    r"foo(?=bar)",  # lookahead
    r"foo(?!bar)",  # negative lookahead
    r"(?<=x)foo",  # lookbehind
    r"(?<!x)foo",  # negative lookbehind
    r"(?>a+)b",  # atomic group (Python 3.11)
    r"a++b",  # possessive quantifier (Python 3.11)
    r"foo\Z",  # Python's end of text; RE2 spells it \z
]


@pytest.mark.parametrize("pattern", PYTHON_ONLY)
def test_refuses_what_only_python_re_accepts(pattern: str) -> None:
    re.compile(pattern)  # the difference: Python's re takes it
    with pytest.raises(InvalidRegex) as caught:
        compile_pattern(pattern)
    message = str(caught.value)
    assert message.startswith(
        f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(", "missing )"),
        ("[z-a]", "invalid character class range"),
        ("a**", "bad repetition operator"),
        ("a{1001}", "invalid repetition size"),  # RE2's bound, as RE2/J's
    ],
)
def test_bad_syntax_names_the_pattern_and_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(InvalidRegex, match=re.escape(reason)) as caught:
        compile_pattern(pattern)
    assert f"`{pattern}`" in str(caught.value)


def test_a_refusal_is_one_line_whatever_the_pattern_holds() -> None:
    with pytest.raises(InvalidRegex) as caught:
        compile_pattern("(\n\t")
    assert "\n" not in str(caught.value)
    assert "\t" not in str(caught.value)
    assert r"`(\x{a}\x{9}`" in str(caught.value)


def test_invalid_regex_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        compile_pattern("(")


def test_an_empty_pattern_is_refused_as_no_pattern() -> None:
    """Kafka takes "" as leaving a regex subscription, never compiles it: the caller
    must do the same, and compiling it says so rather than match nothing quietly."""
    with pytest.raises(InvalidRegex, match="empty"):
        compile_pattern("")


def test_length_bound() -> None:
    compile_pattern("a" * MAX_PATTERN_LENGTH)
    with pytest.raises(InvalidRegex, match=f"{MAX_PATTERN_LENGTH + 1} characters long"):
        compile_pattern("a" * (MAX_PATTERN_LENGTH + 1))


def test_length_is_counted_in_characters() -> None:
    """Not bytes: a pattern of MAX_PATTERN_LENGTH characters is taken even where its
    UTF-8 is longer."""
    pattern = "é" * MAX_PATTERN_LENGTH
    assert len(pattern.encode()) > MAX_PATTERN_LENGTH
    assert compile_pattern(pattern).matches(pattern)


def test_memory_bound_refuses_what_re2s_default_would_take() -> None:
    """`\\pL{100}` compiles within RE2's default 8 MiB; kop's bound is lower."""
    pattern = r"\pL{100}"
    default = re2.Options()
    default.log_errors = False
    re2.compile(pattern, default)
    re2.purge()
    with pytest.raises(InvalidRegex, match="MiB kop allows a pattern"):
        compile_pattern(pattern)


def test_surrogates_are_refused_not_raised() -> None:
    with pytest.raises(InvalidRegex, match="not valid Unicode"):
        compile_pattern("foo\ud800")
    assert compile_pattern("foo.*").matches("foo\ud800") is False


@pytest.mark.timeout(30)  # Python's re would take hours here, not fail
@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("(a+)+$", "a" * 40 + "b", False),
        ("(a+)+$", "a" * 40, True),
        ("(x+x+)+y", "x" * 5000, False),
        ("(.*a){20}", "a" * 19 + "b" * 5000, False),
    ],
    ids=["nested-plus-fails", "nested-plus-matches", "overlapping-plus", "counted-star"],
)
def test_backtracking_patterns_answer(pattern: str, topic: str, expected: bool) -> None:
    assert compile_pattern(pattern).matches(topic) is expected


# --- the cache


def test_a_pattern_is_compiled_once_while_cached() -> None:
    assert compile_pattern("cached-once.*") is compile_pattern("cached-once.*")


def test_the_cache_is_bounded() -> None:
    first = compile_pattern("evicted-first.*")
    for i in range(COMPILED_CACHE_SIZE):
        compile_pattern(f"filler-{i}.*")
    again = compile_pattern("evicted-first.*")
    assert again is not first
    assert again == first  # equal by source


def test_re2s_own_cache_is_emptied() -> None:
    """The `re2` module keeps 128 compiled patterns of its own (each up to its
    max_mem) unless emptied: ours must be the only cache."""
    compile_pattern("own-cache-check.*")
    assert re2._Regexp._make.cache_info().currsize == 0


def test_patterns_are_equal_and_hashed_by_source() -> None:
    a = compile_pattern("same.*")
    b = TopicPattern("same.*", a._compiled)
    assert a == b
    assert hash(a) == hash(b)
    assert a != compile_pattern("other.*")
    assert "same.*" in repr(a)


# --- matching_topics


async def test_matching_topics_sorted_and_whole() -> None:
    pattern = compile_pattern("orders.*")
    topics = ["orders-b", "payments", "orders-a", "xorders", "orders"]
    assert await matching_topics(pattern, topics, 10) == ["orders", "orders-a", "orders-b"]


async def test_internal_topics_are_never_listed() -> None:
    """Kafka's resolution would list them (to a member that may describe them); kop
    serves them to no client. Other `__` names are ordinary topics, as in Kafka."""
    topics = [*INTERNAL_TOPICS, "__my_topic", "app"]
    assert await matching_topics(compile_pattern(".*"), topics, 100) == ["__my_topic", "app"]
    assert await matching_topics(compile_pattern("__consumer_offsets"), topics, 100) == []
    assert {"__consumer_offsets", "__transaction_state", "__share_group_state"} == INTERNAL_TOPICS


async def test_limit_keeps_the_smallest_names_whatever_the_order() -> None:
    pattern = compile_pattern("t.*")
    names = [f"t{i:03d}" for i in range(50)]
    forward = await matching_topics(pattern, names, 3)
    backward = await matching_topics(pattern, reversed(names), 3)
    assert forward == backward == ["t000", "t001", "t002"]


async def test_one_more_than_accepted_tells_a_cut_list() -> None:
    pattern = compile_pattern("t.*")
    assert len(await matching_topics(pattern, ["t1", "t2", "t3"], 2 + 1)) > 2
    assert len(await matching_topics(pattern, ["t1", "t2", "u"], 2 + 1)) == 2


async def test_limit_zero_and_negative() -> None:
    pattern = compile_pattern(".*")
    assert await matching_topics(pattern, ["a", "b"], 0) == []
    with pytest.raises(ValueError):
        await matching_topics(pattern, ["a"], -1)


async def test_duplicates_count_once() -> None:
    assert await matching_topics(compile_pattern("a.*"), ["ab", "ab", "ac"], 2) == ["ab", "ac"]


class _Recording:
    """A compiled pattern that notes the thread each match runs on."""

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def fullmatch(self, text: str) -> object | None:
        self.threads.add(threading.current_thread().name)
        return text


async def test_matching_runs_on_the_pool_and_topics_are_read_on_the_loop() -> None:
    recording = _Recording()
    pattern = TopicPattern("recorded", recording)
    read_on: set[str] = set()

    def topics() -> Iterator[str]:
        for name in ("a", "b"):
            read_on.add(threading.current_thread().name)
            yield name

    assert await matching_topics(pattern, topics(), 10) == ["a", "b"]
    assert read_on == {threading.current_thread().name}
    assert recording.threads
    assert all(name.startswith("kop-topic-regex") for name in recording.threads)


# --- properties


@PROPERTY
@given(st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=200))
def test_an_escaped_name_matches_that_name_alone(name: str) -> None:
    pattern = compile_pattern(re2.escape(name))
    assert pattern.matches(name)
    assert not pattern.matches(name + "a")
    assert not pattern.matches("a" + name)
    assert not pattern.matches(name[:-1])


@PROPERTY
@given(topic_names, topic_names)
def test_a_prefix_pattern_matches_exactly_the_names_it_starts(prefix: str, name: str) -> None:
    pattern = compile_pattern(re2.escape(prefix) + ".*")
    assert pattern.matches(name) is name.startswith(prefix)
    assert pattern.matches(prefix + name)


@PROPERTY
@given(
    st.lists(st.one_of(topic_names, st.sampled_from(sorted(INTERNAL_TOPICS)))),
    st.sampled_from(["a.*", ".*", "[a-m].*", ".*_.*", "__.*"]),
    st.integers(min_value=0, max_value=10),
)
def test_smallest_matching_is_the_sorted_head_of_the_matches(
    topics: list[str], source: str, limit: int
) -> None:
    pattern = compile_pattern(source)
    expected = sorted({t for t in topics if pattern.matches(t) and t not in INTERNAL_TOPICS})
    assert topic_regex._smallest_matching(pattern, set(topics), limit) == expected[:limit]
