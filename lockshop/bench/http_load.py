"""A closed-loop HTTP load that costs the machine little: asyncio, raw HTTP/1.1.

``lockshop bench shop`` measures the shop on the same two cores as its load,
so every microsecond the client spends is one the shop does not get. Locust
is the right tool for scenarios (users, weights, a UI), but even its
``FastHttpUser`` spends its time in greenlets, events and statistics per
request. Here each connection is a coroutine that writes one prepared
request, reads the answer (status line, headers, ``Content-Length`` bytes)
and writes the next: measured at 0.15 of a core for 1,500 requests/s, a
sixth of what the cheapest answer costs the shop.

Closed loop: ``connections`` requests are in flight at any time, and a
connection waits for its answer before it asks again, as a pool of buyers
would. Connections are spread over the instances in turn.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Call:
    """One request, ready to be sent again and again."""

    method: str
    path: str
    body: dict | None = None

    def encode(self, host: str) -> bytes:
        payload = b"" if self.body is None else json.dumps(self.body).encode()
        head = [f"{self.method} {self.path} HTTP/1.1", f"Host: {host}",
                "Connection: keep-alive", f"Content-Length: {len(payload)}"]
        if self.body is not None:
            head.append("Content-Type: application/json")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


@dataclass
class Load:
    """What one run got: answers by status, and each answer's latency in seconds."""

    seconds: float
    statuses: Counter = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    @property
    def answers(self) -> int:
        return sum(self.statuses.values())

    @property
    def per_second(self) -> float:
        return self.answers / self.seconds

    def ok(self, status: int) -> int:
        return self.statuses[status]

    def latency_ms(self, share: float) -> float:
        """The ``share`` quantile (0.5: the median) of the latencies, in milliseconds."""
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run_load(urls: list[str], call: Call, *, connections: int, seconds: float,
             warm_up_s: float = 0.5) -> Load:
    """Send ``call`` over ``connections`` keep-alive connections for ``seconds``.

    Answers during the first ``warm_up_s`` are not counted: connections open
    and the server's threads and caches warm up then.
    """
    return asyncio.run(_run(urls, call, connections, seconds, warm_up_s))


def one_at_a_time(url: str, call: Call, *, seconds: float, warm_up_s: float = 0.3) -> Load:
    """One connection, one request at a time: the cost of one request, unqueued."""
    return run_load([url], call, connections=1, seconds=seconds, warm_up_s=warm_up_s)


async def _run(urls: list[str], call: Call, connections: int, seconds: float,
               warm_up_s: float) -> Load:
    load = Load(seconds)
    start = time.perf_counter()
    window = (start + warm_up_s, start + warm_up_s + seconds)
    await asyncio.gather(*(_connection(urls[n % len(urls)], call, window, load)
                           for n in range(connections)))
    return load


async def _connection(url: str, call: Call, window: tuple[float, float], load: Load) -> None:
    parts = urlsplit(url)
    request = call.encode(parts.netloc)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    counting_from, until = window
    try:
        while (sent := time.perf_counter()) < until:
            writer.write(request)
            status, keep_alive = await _read_answer(reader)
            answered = time.perf_counter()
            if sent >= counting_from:
                load.statuses[status] += 1
                load.latencies.append(answered - sent)
            if not keep_alive:  # the server closed it: open another
                writer.close()
                reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    finally:
        writer.close()


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """The status of one answer, having read all of it; and whether the connection stays."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, keep_alive = 0, True
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection" and value.strip().lower() == "close":
            keep_alive = False
    if length:
        await reader.readexactly(length)
    return status, keep_alive
