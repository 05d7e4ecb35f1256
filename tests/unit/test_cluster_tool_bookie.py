"""tools/pulsar_cluster.py waits for a dead bookie's ZooKeeper registration to expire
before it starts a new bookie. CI found the case: the data dir held a ZooKeeper copied
from a running one, the new bookie could not register ("already locked") and shut its
server down, the stale node still looked like a healthy bookie, and both brokers failed
every ledger recovery (-8, -10) until the 180 s start timeout."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.unit.tool_module import load_tool

tool = load_tool(
    "pulsar_cluster.py",
    "kop_tools_pulsar_cluster",
    isolate=("pulsar", "provision", "cluster_conf", "cluster_security"),
)
NODE = "/ledgers/available/localhost:{port}"


class FakeZooKeeper(socketserver.ThreadingTCPServer):
    """Answers the `dump` four-letter word; lists the stale node for the first `stale` asks."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, node: str, stale: int) -> None:
        super().__init__(("127.0.0.1", 0), _Dump)
        self.node, self.stale, self.asked = node, stale, 0
        self.lock = threading.Lock()

    def answer(self) -> bytes:
        with self.lock:
            self.asked += 1
            listed = self.asked <= self.stale
        ephemerals = f"0x100000000000001:\n\t{self.node}\n" if listed else ""
        return f"SessionTracker dump:\nephemeral nodes dump:\n{ephemerals}".encode()


class _Dump(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        assert isinstance(self.server, FakeZooKeeper)
        if self.rfile.read(4) == b"dump":
            self.wfile.write(self.server.answer())


@dataclass
class _Layout:
    zk_port: int
    bookie_port: int


@dataclass
class _Client:
    lay: _Layout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def zookeeper(request: pytest.FixtureRequest) -> Iterator[tuple[FakeZooKeeper, _Client]]:
    bookie_port = _free_port()
    server = FakeZooKeeper(NODE.format(port=bookie_port), stale=request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, _Client(_Layout(server.server_address[1], bookie_port))
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("zookeeper", [3], indirect=True)
def test_a_new_bookie_waits_until_the_dead_ones_registration_expired(
    zookeeper: tuple[FakeZooKeeper, _Client], capsys: pytest.CaptureFixture[str]
) -> None:
    server, client = zookeeper
    tool.await_stale_bookie_gone(client)
    assert server.asked == 4  # returned on the first answer without the node, not before
    out = capsys.readouterr().out
    assert "still in ZooKeeper; waiting for it to expire" in out
    assert "registration expired after" in out


@pytest.mark.parametrize("zookeeper", [0], indirect=True)
def test_no_registration_left_means_no_wait(
    zookeeper: tuple[FakeZooKeeper, _Client], capsys: pytest.CaptureFixture[str]
) -> None:
    server, client = zookeeper
    tool.await_stale_bookie_gone(client)
    assert server.asked == 1
    assert "waiting" not in capsys.readouterr().out


@pytest.mark.parametrize("zookeeper", [10**6], indirect=True)
def test_a_registration_that_never_expires_is_a_clear_error(
    zookeeper: tuple[FakeZooKeeper, _Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client = zookeeper
    monkeypatch.setattr(tool, "STALE_BOOKIE_TIMEOUT", 1.0)
    with pytest.raises(tool.provision.ToolError, match=r"start --fresh` wipes the data dir"):
        tool.await_stale_bookie_gone(client)
