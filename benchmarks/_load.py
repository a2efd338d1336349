"""A small keep-alive HTTP/1.1 load generator on asyncio streams, run in its own process.

It sends GET requests over a fixed number of persistent connections for a fixed time and counts
complete 200 responses. It is deliberately minimal so the client costs little next to the server.
"""

from __future__ import annotations

import asyncio
import time


async def _one_connection(
    host: str, port: int, request: bytes, stop_at: float, counts: list[int], errors: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.monotonic() < stop_at:
            writer.write(request)
            await writer.drain()
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            if status_line.split(b" ", 2)[1] == b"200":
                counts[0] += 1
            else:
                errors[0] += 1
    finally:
        writer.close()


async def _run(
    host: str, port: int, path: str, headers: dict[str, str], connections: int, seconds: float
) -> tuple[int, int]:
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}\r\n".encode()
    counts, errors = [0], [0]
    stop_at = time.monotonic() + seconds
    await asyncio.gather(
        *(_one_connection(host, port, request, stop_at, counts, errors) for _ in range(connections))
    )
    return counts[0], errors[0]


def requests_per_second(
    host: str,
    port: int,
    path: str,
    headers: dict[str, str],
    connections: int = 16,
    seconds: float = 8.0,
) -> tuple[float, int]:
    """Runs in a child process: (successful requests per second, non-200 responses)."""
    started = time.monotonic()
    ok, errors = asyncio.run(_run(host, port, path, headers, connections, seconds))
    return ok / (time.monotonic() - started), errors
