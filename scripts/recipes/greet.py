#!/usr/bin/env python3
"""A connection per message, as the blog post that made "UDS is 2x faster" popular measured it:
the server accepts (listen backlog 0), sends a 12-byte greeting and closes; the client connects,
reads to EOF and closes, N times. docs/RECIPES.md.

    greet.py server [--unix PATH] [--port N]      # both at once when both are given
    greet.py client (--unix PATH | --port N) -n N
"""
import argparse
import os
import selectors
import socket
import sys
import time

GREETING = b"Hello world\n"  # 12 bytes


def serve(args):
    sel = selectors.DefaultSelector()
    if args.unix:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.bind(args.unix)
        u.listen(0)
        sel.register(u, selectors.EVENT_READ)
    if args.port:
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind(("127.0.0.1", args.port))
        t.listen(0)
        sel.register(t, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            conn, _ = key.fileobj.accept()
            try:
                conn.sendall(GREETING)
            except OSError:  # a peer gone already (udsprobe's readiness probe connects and closes)
                pass
            conn.close()


def client(args):
    family, addr = ((socket.AF_UNIX, args.unix) if args.unix else
                    (socket.AF_INET, ("127.0.0.1", args.port)))
    t0 = time.perf_counter()
    for _ in range(args.n):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.connect(addr)
        got = b""
        while True:
            chunk = s.recv(64)
            if not chunk:
                break
            got += chunk
        s.close()
        if got != GREETING:
            sys.exit(f"greet.py: got {got!r}, expected {GREETING!r}")
    dt = time.perf_counter() - t0
    print(f"{args.n} connections in {dt:.3f} s: {args.n / dt:.0f} messages/s, "
          f"{dt / args.n * 1e6:.1f} us per connection")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("role", choices=["server", "client"])
    p.add_argument("--unix")
    p.add_argument("--port", type=int)
    p.add_argument("-n", type=int, default=10000)
    args = p.parse_args()
    if args.role == "server":
        if not (args.unix or args.port):
            p.error("server needs --unix and/or --port")
        serve(args)
    else:
        if bool(args.unix) == bool(args.port):
            p.error("client needs one of --unix, --port")
        client(args)


if __name__ == "__main__":
    main()
