"""The simulator's clock and event queue, shared by its layers (docs/design.md §12.1).

One :class:`Timeline` per run: the time now, the heap of ``(time, sequence)`` keys each
naming an :class:`EventKind` and its payload, the count of injected faults by kind and
the violations found. The network, the data layer, the checker and the event loop each
hold the run's timeline; none of them holds another's.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hzfast.protocol.kinds import StrEnum
from hzfast.sim._queue import EventQueue

__all__ = ["EventKind", "Timeline", "randbits", "randint"]


class EventKind(StrEnum):
    """What an event of the run does (its payload in brackets)."""

    MSG = "msg"                  #: a message arrives (sender, receiver, message)
    EFFECT = "effect"            #: a member performs an effect (member, Effect)
    DONE = "done"                #: an effect's outcome reaches its member (member, id, ok)
    WRITE = "write"              #: a client writes a partition's pending keys (partition)
    ARRIVE = "arrive"            #: a data transfer arrives (see Data.arrive)
    TIMER = "timer"              #: a member's timer fires (member, key, token)
    SYNC_START = "sync_start"    #: a throttled replica sync starts (see Data.sync_start)
    VIEW = "view"                #: a member learns the member list (member, number, event)
    LEAVE = "leave"              #: a crash is detected: the member list is published
    CRASH = "crash"              #: the swarm crashes a random member
    JOIN = "join"                #: a new member joins
    CLOG = "clog"                #: the swarm clogs a random link
    FILTER = "filter"            #: the swarm filters one message type for a while
    ACTION = "action"            #: a scripted action (an Action)
    HEAL = "heal"                #: the safety phase ends: faults stop
    PAUSE = "pause"              #: the swarm pauses a member (how long)
    RESUME = "resume"            #: a paused member resumes (member)
    PARTITION = "partition"      #: the swarm cuts links (shape, how long)
    UNPARTITION = "unpartition"  #: the cut links work again
    MS_TIMER = "ms_timer"        #: a member's membership timer fires (member, token)
    MERGE = "merge"              #: a removed member merges a partition's data (partition)


# the kinds as module constants: the event loop compares them by identity
MSG, EFFECT, DONE, WRITE, ARRIVE, TIMER, SYNC_START = (
    EventKind.MSG, EventKind.EFFECT, EventKind.DONE, EventKind.WRITE, EventKind.ARRIVE,
    EventKind.TIMER, EventKind.SYNC_START)
VIEW, LEAVE, CRASH, JOIN, CLOG, FILTER, ACTION, HEAL = (
    EventKind.VIEW, EventKind.LEAVE, EventKind.CRASH, EventKind.JOIN, EventKind.CLOG,
    EventKind.FILTER, EventKind.ACTION, EventKind.HEAL)
PAUSE, RESUME, PARTITION, UNPARTITION, MS_TIMER, MERGE = (
    EventKind.PAUSE, EventKind.RESUME, EventKind.PARTITION, EventKind.UNPARTITION,
    EventKind.MS_TIMER, EventKind.MERGE)

MAX_VIOLATIONS = 50              # a broken run reports its first 50


class Timeline:
    """The run's time, event queue, injected-fault counts and violations."""

    def __init__(self) -> None:
        # (time, sequence) order in a C heap, each event with its kind and payload
        # (hzfast.sim._queue); times past its range queue at its end, which a run never
        # reaches (it stops at its first event past the safety and liveness phases)
        self.queue = EventQueue()
        self.seq = 0
        self.now = 0
        # counts by name, in order of first count (plain dicts: a Counter's item
        # assignment dispatches through Python, as Counter defines __delitem__)
        self.injected: dict[str, int] = {}
        self.violations: list[str] = []

    def push(self, t: int, kind: EventKind, payload: Any) -> None:
        """Queue an event of ``kind`` at time ``t`` (after those queued before at ``t``)."""
        self.seq += 1                # (a run has < 5e6 events: far below 2**40)
        self.queue.push(t, self.seq, kind, payload)

    def inject(self, kind: str) -> None:
        """Count one injected fault of ``kind``."""
        self.injected[kind] = self.injected.get(kind, 0) + 1

    def violation(self, text: str) -> None:
        """Report a broken rule, with the time."""
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append(f"t={self.now}: {text}")


def randint(rng: random.Random, lo: int, hi: int) -> int:
    """``rng.randint(lo, hi)`` with the same draws from the same stream (CPython's
    ``_randbelow_with_getrandbits``), without its two extra Python calls."""
    return randbits(rng.getrandbits, lo, hi)


def randbits(getrandbits: Callable[[int], int], lo: int, hi: int) -> int:
    """:func:`randint` given the generator's bound ``getrandbits``."""
    n = hi - lo + 1
    if n < 1:
        raise ValueError(f"empty range for randint ({lo}, {hi})")
    k = 0                                # n.bit_length(), in C when compiled
    while n >> k:
        k += 1
    for _ in range(10_000):              # each try fails with probability < 1/2
        r = getrandbits(k)
        if r < n:
            return lo + r
    raise AssertionError("getrandbits never fell below the range")   # pragma: no cover
