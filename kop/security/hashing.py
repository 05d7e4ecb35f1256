"""Password hashing off the event loop.

A PLAIN login against a SCRAM user runs PBKDF2 (4,096 to 16,384 rounds of HMAC-SHA-512:
16 to 64 ms of CPU here). On the event loop every connection of the instance waits for
each one; a client sending PLAIN logins in a loop froze them all. The work goes to a
pool of its own, two threads (hashlib releases the GIL while it hashes), so other
work that borrows asyncio's default pool never queues behind a flood of logins, and a
flood takes at most two cores' worth of time from the rest of kop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# Threads start on first use: a kop with no SCRAM users never makes one.
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kop-password-hash")


async def off_loop(work: Callable[[], T]) -> T:
    """`work()` in the hashing pool; the connection awaiting it waits, no one else."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, work)
