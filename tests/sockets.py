"""Socket checks the unit (in-memory gateway) and integration (kop serve) tests share."""

from __future__ import annotations

import socket


def closed_by_peer(sock: socket.socket, within: float) -> bool:
    """Whether kop closes `sock` within `within` seconds (answers before are read)."""
    sock.setblocking(True)
    sock.settimeout(within)
    try:
        while sock.recv(1 << 16):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True
