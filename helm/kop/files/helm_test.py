# helm test: the bootstrap answers ApiVersions (error 0, Produce and Fetch among the
# APIs), and pod 0 is ready. Standard library only; exits non-zero with the reason.
import os
import socket
import struct
import sys
import urllib.request

host, port = os.environ["KAFKA"].rsplit(":", 1)
client = b"helm-test"
body = struct.pack(">hhih", 18, 0, 7, len(client)) + client  # ApiVersions v0
with socket.create_connection((host, int(port)), timeout=10) as sock:
    sock.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    answer = sock.recv(size, socket.MSG_WAITALL)
correlation, error, count = struct.unpack_from(">ihi", answer)
keys = {struct.unpack_from(">h", answer, 10 + 6 * i)[0] for i in range(count)}
if correlation != 7 or error != 0 or not {0, 1} <= keys:
    sys.exit(f"ApiVersions from {host}:{port}: correlation {correlation}, error {error}")
with urllib.request.urlopen(os.environ["ADMIN"], timeout=10) as resp:
    if resp.status != 200:
        sys.exit(f"{os.environ['ADMIN']}: {resp.status}")
print(f"kop at {host}:{port} answers {count} APIs; pod 0 is ready")
