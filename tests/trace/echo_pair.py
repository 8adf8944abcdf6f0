#!/usr/bin/env python3
"""Asyncio echo pair for udsprobe --trace tests: a server and a client in one
process tree (the client is a forked child), N messages of SIZE bytes, each
echoed back in full before the next is sent.

usage: echo_pair.py unix PATH N SIZE | tcp N SIZE
With ECHO_GO_FILE=PATH in the environment the server waits for PATH to exist
before it forks the client (a process that is already running when traced).
Prints one JSON line: {"transport", "endpoint", "messages", "size", "server_pid", "client_pid"}.
"""
import asyncio
import json
import os
import socket
import sys


async def handle(reader, writer):
    try:
        while True:
            data = await reader.read(1 << 20)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def client(kind, addr, n, size):
    if kind == "unix":
        reader, writer = await asyncio.open_unix_connection(addr)
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", addr)
    msg = b"x" * size
    for _ in range(n):
        writer.write(msg)
        await writer.drain()
        await reader.readexactly(size)
    writer.close()
    await writer.wait_closed()


async def main():
    kind = sys.argv[1]
    if kind == "unix":
        path, n, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        server = await asyncio.start_unix_server(handle, path)
        addr, endpoint = path, path
    else:
        n, size = int(sys.argv[2]), int(sys.argv[3])
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        addr = server.sockets[0].getsockname()[1]
        endpoint = "127.0.0.1:%d" % addr
    go = os.environ.get("ECHO_GO_FILE")
    print(json.dumps({"ready": True, "server_pid": os.getpid(), "endpoint": endpoint}), flush=True)
    while go and not os.path.exists(go):
        await asyncio.sleep(0.02)
    pid = os.fork()
    if pid == 0:
        # the client: a new process with its own event loop
        asyncio.set_event_loop(asyncio.new_event_loop())
        asyncio.get_event_loop().run_until_complete(client(kind, addr, n, size))
        os._exit(0)
    loop = asyncio.get_running_loop()
    _, status = await loop.run_in_executor(None, os.waitpid, pid, 0)
    server.close()
    await server.wait_closed()
    print(json.dumps({"transport": kind, "endpoint": endpoint, "messages": n, "size": size,
                      "server_pid": os.getpid(), "client_pid": pid}), flush=True)
    sys.exit(os.waitstatus_to_exitcode(status))


asyncio.run(main())
