"""A slow link without netem: packets queued by the kernel, let go after a delay.

``tc qdisc … netem`` is the usual way to make a link slow, but some kernels
(this project's CI among them) are built without ``sch_netem``. Every Linux
with netfilter can hand packets to a program instead (NFQUEUE) and wait for
its verdict; this module is that program, in plain Python, on a netlink
socket (no library):

1. bind to queue ``N`` and ask for each packet's metadata only (not its bytes);
2. for every packet the kernel queues, note when it is due: now + delay,
   ± jitter, never before the packet ahead of it (a link keeps order);
3. when the first one falls due, accept it and every one before it with one
   batch verdict.

``Network.slow`` puts a rule in the slowed host that queues what leaves its
interface and starts this program there (``python -m lockshop.cluster.delayer``
under ``ip netns exec``). Like netem on the host's interface, only what the host
sends waits: a round trip through it is ``delay`` longer.

If this program stops, the rule's ``--queue-bypass`` lets packets through
again: a dead delayer heals the link rather than cutting it.
"""

from __future__ import annotations

import argparse
import collections
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 2, 3
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
SO_RCVBUFFORCE = 33
QUEUE_LENGTH = 65536  # packets the kernel keeps waiting for us before it drops


def _attribute(kind: int, payload: bytes) -> bytes:
    header = struct.pack("=HH", 4 + len(payload), kind)
    return header + payload + b"\0" * (-len(payload) % 4)


def _message(kind: int, queue: int, attributes: bytes, flags: int = NLM_F_REQUEST) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attributes
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind,
                       flags, 0, 0) + body


class Queue:
    """The netlink side: bind a queue, read packet ids, send verdicts."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
        self.sock.bind((0, 0))
        self._configure(_attribute(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, 0)))
        self._configure(_attribute(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META))
                        + _attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_LENGTH)))

    def _configure(self, attributes: bytes) -> None:
        self.sock.send(_message(NFQNL_MSG_CONFIG, self.number, attributes,
                                NLM_F_REQUEST | NLM_F_ACK))
        reply = self.sock.recv(65536)
        _, kind, _, _, _ = struct.unpack_from("=IHHII", reply)
        error = struct.unpack_from("=i", reply, 16)[0] if kind == NLMSG_ERROR else 0
        if error:
            raise OSError(-error, f"nfqueue {self.number}: configuration refused")

    def packet_ids(self) -> list[int]:
        """The ids of the packets in the next datagram from the kernel."""
        try:
            data = self.sock.recv(1 << 20)
        except OSError:  # ENOBUFS: we fell behind; later verdicts still free them
            return []
        ids, offset = [], 0
        while offset + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from("=IHHII", data, offset)
            if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                at = offset + 20  # after the netlink and netfilter headers
                while at + 4 <= offset + length:
                    size, attribute = struct.unpack_from("=HH", data, at)
                    if attribute & 0x7FFF == NFQA_PACKET_HDR:
                        ids.append(struct.unpack_from("!I", data, at + 4)[0])
                    at += (size + 3) & ~3
            offset += (length + 3) & ~3
        return ids

    def accept_up_to(self, packet_id: int) -> None:
        """Let every queued packet up to ``packet_id`` go on."""
        verdict = _attribute(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))
        self.sock.send(_message(NFQNL_MSG_VERDICT_BATCH, self.number, verdict))


def delay_forever(queue: Queue, delay_s: float, jitter_s: float, rng: random.Random,
                  waiting: collections.deque[tuple[float, int]]) -> None:
    """Hold each packet until it is due; ``waiting`` holds (due, id), oldest first."""
    while True:
        now = time.monotonic()
        due_now = None
        while waiting and waiting[0][0] <= now:
            due_now = waiting.popleft()[1]
        if due_now is not None:
            queue.accept_up_to(due_now)
        timeout = max(0.0, waiting[0][0] - now) if waiting else None
        if not select.select([queue.sock], [], [], timeout)[0]:
            continue
        arrived = time.monotonic()
        for packet_id in queue.packet_ids():
            due = arrived + max(0.0, delay_s + rng.uniform(-jitter_s, jitter_s))
            if waiting:
                due = max(due, waiting[-1][0])  # a link keeps its order
            waiting.append((due, packet_id))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    queue = Queue(args.queue)
    print("ready", flush=True)  # the rule may go in: someone is listening
    waiting: collections.deque[tuple[float, int]] = collections.deque()
    try:
        delay_forever(queue, args.delay_ms / 1000, args.jitter_ms / 1000,
                      random.Random(args.seed), waiting)
    finally:
        if waiting:  # healed: what is still held goes now (a closed queue would drop it)
            queue.accept_up_to(waiting[-1][1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
