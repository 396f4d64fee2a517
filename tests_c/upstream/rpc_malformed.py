#!/usr/bin/env python3
"""Malformed requests to an ggml-rpc server (protocol 7, ggml 0.25.3), one connection each.

    rpc_malformed.py PORT SERVER [ARGS...]     (the server is started as SERVER -H 127.0.0.1 -p PORT ARGS)

After every case a new client must still be served (HELLO + DEVICE_COUNT). Prints one line per
case: `<case>: <answer>; server alive|DEAD`, where the answer is what came back on the case's own
connection (`closed` when the server refused by closing it, `rsp ...` otherwise; pointers as
`ptr`). A dead server is started again for the next case. scripts/test-upstream.sh runs it with
stock's rpc-server and ours and compares the lines: the server built on the library must survive
every case stock survives, with the same answers.
"""
import subprocess
import socket
import struct
import sys
import time

CMD_ALLOC_BUFFER, CMD_BUFFER_GET_BASE, CMD_FREE_BUFFER, CMD_BUFFER_CLEAR = 0, 3, 4, 5
CMD_SET_TENSOR, CMD_GET_TENSOR, CMD_GRAPH_COMPUTE = 6, 8, 10
CMD_GET_DEVICE_MEMORY, CMD_GET_ALLOC_SIZE, CMD_HELLO, CMD_DEVICE_COUNT = 11, 13, 14, 15
CMD_GRAPH_RECOMPUTE, CMD_COUNT = 16, 19
CONN_CAPS = 24
MAX_DIMS, MAX_SRC, MAX_OP_PARAMS, MAX_NAME = 4, 10, 64, 64


def rpc_tensor(id_=1, type_=0, buffer=0, ne=(1, 1, 1, 1), nb=None, op=0, data=0, src=(), name=b"t"):
    """struct rpc_tensor (packed, 296 bytes)."""
    if nb is None:
        nb = (4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * ne[0] * ne[1] * ne[2])
    srcs = list(src) + [0] * (MAX_SRC - len(src))
    return (struct.pack("<QIQ", id_, type_, buffer) + struct.pack("<4I", *[x & 0xffffffff for x in ne])
            + struct.pack("<4I", *[x & 0xffffffff for x in nb]) + struct.pack("<I", op) + bytes(MAX_OP_PARAMS)
            + struct.pack("<i", 0) + struct.pack(f"<{MAX_SRC}Q", *srcs) + struct.pack("<QQQ", 0, 0, data)
            + name.ljust(MAX_NAME, b"\0") + struct.pack("<i", 0))


assert len(rpc_tensor()) == 296


class Conn:
    def __init__(self, ep):
        host, port = ep.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=10)

    def send(self, cmd, payload=b"", size=None):
        self.s.sendall(bytes([cmd]) + struct.pack("<Q", len(payload) if size is None else size) + payload)

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def recv_msg(self):
        """A response (size-prefixed), or None when the server closed the connection."""
        try:
            head = self.recv_exact(8)
            if head is None:
                return None
            (n,) = struct.unpack("<Q", head)
            return self.recv_exact(n) if n else b""
        except (socket.timeout, ConnectionError):
            return None

    def hello(self):
        self.send(CMD_HELLO, bytes(CONN_CAPS))
        rsp = self.recv_msg()
        assert rsp is not None and len(rsp) == 4 + CONN_CAPS, "no HELLO answer"
        return rsp[0], rsp[1], rsp[2]

    def close(self):
        self.s.close()


def alive(ep):
    for _ in range(20):
        try:
            c = Conn(ep)
            c.hello()
            c.send(CMD_DEVICE_COUNT)
            rsp = c.recv_msg()
            c.close()
            return rsp is not None and len(rsp) == 4
        except (OSError, AssertionError):
            time.sleep(0.1)
    return False


def describe(rsp, fields=None):
    if rsp is None:
        return "closed"
    if fields and len(rsp) == struct.calcsize(fields):
        vals = struct.unpack(fields, rsp)
        # pointers differ between runs: say whether they are NULL, not what they are
        return "rsp " + ",".join("ptr" if v > 0xffffffff else str(v) for v in vals)
    return f"rsp {len(rsp)} bytes"


def follow(c):
    """For a command without an answer: a DEVICE_COUNT on the same connection says whether the
    server took it (`taken`) or refused it by closing the connection (`closed`)."""
    c.send(CMD_DEVICE_COUNT)
    return "taken" if c.recv_msg() is not None else "closed"


def case_silent(c, cmd, payload):
    c.send(cmd, payload)
    return follow(c)


def case_alloc(c, device, size):
    c.send(CMD_ALLOC_BUFFER, struct.pack("<IQ", device, size))
    return describe(c.recv_msg(), "<QQ")


def case_bogus_buffer(c, cmd, payload):
    c.send(cmd, payload)
    return describe(c.recv_msg())


def case_alloc_size(c, **kw):
    c.send(CMD_GET_ALLOC_SIZE, struct.pack("<I", 0) + rpc_tensor(**kw) + rpc_tensor() * MAX_SRC)
    return describe(c.recv_msg(), "<Q")


def new_buffer(c, size=4096):
    c.send(CMD_ALLOC_BUFFER, struct.pack("<IQ", 0, size))
    ptr, size = struct.unpack("<QQ", c.recv_msg())
    c.send(CMD_BUFFER_GET_BASE, struct.pack("<Q", ptr))
    (base,) = struct.unpack("<Q", c.recv_msg())
    return ptr, base


def case_clear(c):
    ptr, base = new_buffer(c)
    c.send(CMD_BUFFER_CLEAR, struct.pack("<QB", ptr, 0xA5))
    r1 = follow(c)
    c.send(CMD_GET_TENSOR, rpc_tensor(buffer=ptr, data=base, ne=(1024, 1, 1, 1)) + struct.pack("<QQ", 4080, 16))
    data = c.recv_msg()
    c.send(CMD_FREE_BUFFER, struct.pack("<Q", ptr))
    return f"clear {r1}, last 16 bytes {data.hex() if data else None}, free {follow(c)}"


def case_read_past_end(c):
    ptr, base = new_buffer(c)
    c.send(CMD_GET_TENSOR, rpc_tensor(buffer=ptr, data=base, ne=(1024, 1, 1, 1)) + struct.pack("<QQ", 4000, 4096))
    return describe(c.recv_msg())


def case_free_twice(c):
    ptr, _ = new_buffer(c)
    c.send(CMD_FREE_BUFFER, struct.pack("<Q", ptr))
    r1 = follow(c)
    c.send(CMD_FREE_BUFFER, struct.pack("<Q", ptr))
    return f"free {r1}, again {follow(c)}"


def case_graph(c, n_nodes, n_tensors, tensors=b"", nodes=None, claim=None):
    nodes = nodes if nodes is not None else [1] * n_nodes
    payload = struct.pack("<II", 0, n_nodes) + struct.pack(f"<{len(nodes)}Q", *nodes) + struct.pack("<I", n_tensors) + tensors
    c.send(CMD_GRAPH_COMPUTE, payload, size=claim)
    return follow(c)


CASES = [
    ("alloc 2^62 bytes", lambda c: case_alloc(c, 0, 1 << 62)),
    ("alloc 0 bytes", lambda c: case_alloc(c, 0, 0)),
    ("alloc on device 7", lambda c: case_alloc(c, 7, 1024)),
    ("get_base of a bogus buffer", lambda c: case_bogus_buffer(c, CMD_BUFFER_GET_BASE, struct.pack("<Q", 0xdeadbeef))),
    ("clear a bogus buffer", lambda c: case_silent(c, CMD_BUFFER_CLEAR, struct.pack("<QB", 0xdeadbeef, 1))),
    ("free a bogus buffer", lambda c: case_silent(c, CMD_FREE_BUFFER, struct.pack("<Q", 0x1000))),
    ("device memory of device 9", lambda c: case_bogus_buffer(c, CMD_GET_DEVICE_MEMORY, struct.pack("<I", 9))),
    ("alloc size: type 200", lambda c: case_alloc_size(c, type_=200)),
    ("alloc size: removed type 4", lambda c: case_alloc_size(c, type_=4, ne=(32, 1, 1, 1), nb=(18, 18, 18, 18))),
    ("alloc size: Q4_0 row of 33", lambda c: case_alloc_size(c, type_=2, ne=(33, 1, 1, 1), nb=(18, 36, 36, 36))),
    ("alloc size: ne 2^32-1 x4", lambda c: case_alloc_size(c, ne=(0xffffffff,) * 4)),
    ("alloc size: bogus buffer", lambda c: case_alloc_size(c, buffer=0xdeadbeef)),
    ("clear a buffer", case_clear),
    ("read past a buffer's end", case_read_past_end),
    ("free a buffer twice", case_free_twice),
    ("graph: 1 node, no tensors", lambda c: case_graph(c, 1, 0)),
    ("graph: n_nodes 2^31, short", lambda c: case_graph(c, 1 << 31, 0, nodes=[1])),
    ("graph: node of op 999", lambda c: case_graph(c, 1, 1, rpc_tensor(op=999))),
    ("graph: node with unknown src", lambda c: case_graph(c, 1, 1, rpc_tensor(op=2, src=(77,)))),
    ("graph recompute, none stored", lambda c: case_bogus_buffer(c, CMD_GRAPH_RECOMPUTE, struct.pack("<I", 0))),
    ("unknown command 200", lambda c: case_bogus_buffer(c, 200, b"")),
    ("command without its payload", lambda c: case_bogus_buffer(c, CMD_ALLOC_BUFFER, b"\x01")),
]


def start(port, cmd, log):
    server = subprocess.Popen(cmd[:1] + ["-H", "127.0.0.1", "-p", str(port)] + cmd[1:], stdout=log, stderr=log)
    if not alive(f"127.0.0.1:{port}"):
        server.kill()
        sys.exit(f"rpc_malformed: {cmd[0]} did not come up on port {port}")
    return server


def main():
    port, cmd = int(sys.argv[1]), sys.argv[2:]
    ep = f"127.0.0.1:{port}"
    with open(f"{cmd[0]}.malformed-{port}.log", "w") as log:
        server = start(port, cmd, log)
        c = Conn(ep)
        major, minor, patch = c.hello()
        c.close()
        print(f"protocol {major}.{minor}.{patch}")
        for name, fn in CASES:
            try:
                c = Conn(ep)
                c.hello()
                answer = fn(c)
                c.close()
            except (OSError, AssertionError, struct.error) as e:
                answer = f"client error ({type(e).__name__})"
            ok = alive(ep)
            if not ok:
                server.wait(timeout=10)
                answer += f" (server exit {server.returncode})"
            print(f"{name}: {answer}; server {'alive' if ok else 'DEAD'}", flush=True)
            if not ok:
                server = start(port, cmd, log)
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
