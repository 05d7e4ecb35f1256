"""The helper that runs decoders in a child process tells a crash, a hang and an
unexpected exception apart, names the input, and goes on with a new child."""

from __future__ import annotations

import ctypes
import os
import time

import pytest

from fuzz.isolated import Crashed, Hung, Isolated, Unexpected

HERE = "tests.unit.test_isolated"


def abort_on_x(data: bytes) -> None:
    if data == b"x":
        os.abort()
    if data == b"segv":
        ctypes.string_at(0)  # reads address 0


def spin(data: bytes) -> None:
    while data:
        time.sleep(0.01)


def allocate(data: bytes) -> bytes:
    """Sizes an allocation from its input, as a careless decoder would."""
    return bytes(int.from_bytes(data, "big"))


def refuse(data: bytes) -> None:
    if data:
        raise ValueError(data)


def test_an_abort_fails_the_check_and_the_next_input_gets_a_new_child() -> None:
    with Isolated(f"{HERE}:abort_on_x") as checker:
        assert checker.check(b"fine") == "ok"
        with pytest.raises(Crashed) as crash:
            checker.check(b"x")
        assert crash.value.data == b"x" and "(-6)" in str(crash.value)
        with pytest.raises(Crashed):
            checker.check(b"segv")
        assert checker.check(b"fine again") == "ok"


def test_a_hang_is_killed_at_the_timeout() -> None:
    with Isolated(f"{HERE}:spin", timeout_s=1.0) as checker:
        assert checker.check(b"") == "ok"
        with pytest.raises(Hung):
            checker.check(b"forever")
        assert checker.check(b"") == "ok"


def test_an_allocation_past_the_memory_limit_is_an_unexpected_memory_error() -> None:
    with Isolated(f"{HERE}:allocate", memory_bytes=1 << 30) as checker:
        assert checker.check(b"\x01\x00") == "ok"
        with pytest.raises(Unexpected, match="MemoryError"):
            checker.check((8 << 30).to_bytes(8, "big"))


def test_allowed_errors_are_answers_and_others_are_failures() -> None:
    with Isolated(f"{HERE}:refuse", allowed=["builtins:ValueError"]) as checker:
        batch = checker.run_batch([b"", b"no", b""])
        assert batch.outcomes == ["ok", "ValueError: b'no'", "ok"] and batch.failure is None
    with Isolated(f"{HERE}:refuse", allowed=["builtins:KeyError"]) as checker:
        batch = checker.run_batch([b"", b"no", b""])
        assert batch.failed_at == 1 and isinstance(batch.failure, Unexpected)
