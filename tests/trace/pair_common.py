"""What the lock-step test pairs (slow_pair.py, churn_pair.py) share: the listener on either
transport and reading an exact number of bytes."""
import socket


def listener(kind, args):
    """A bound server socket for kind "unix" (its path taken from args) or "tcp" (127.0.0.1,
    a free port): (socket, address to connect to, endpoint as udsprobe names it)."""
    if kind == "unix":
        path = args.pop(0)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        return srv, path, path
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    addr = srv.getsockname()
    return srv, addr, "127.0.0.1:%d" % addr[1]


def recv_exactly(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("peer closed early")
        buf += chunk
    return buf
