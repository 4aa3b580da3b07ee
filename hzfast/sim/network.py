"""The simulated network (docs/design.md §12.2): the fault plan, message delivery with its
drops, duplicates and delays, clogged links and per-message-type filters.

Every draw comes from the run's one generator, in the order the events happen, so a seed
replays the same deliveries.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from hzfast.protocol import messages as msg
from hzfast.sim.timeline import MSG, Timeline, randbits

__all__ = ["MESSAGE_TYPES", "PARTITION_SHAPES", "FaultPlan", "Network", "cut_between",
           "cut_links"]

#: Every protocol message type, by name (the swarm's filters draw from them).
MESSAGE_TYPES = tuple(sorted(
    (getattr(msg, n) for n in msg.__all__
     if isinstance(getattr(msg, n), type) and issubclass(getattr(msg, n), msg.Message)
     and getattr(msg, n) is not msg.Message), key=lambda t: t.__name__))


#: The network partitions a run draws, as Jepsen's nemeses do (see :func:`cut_links`).
PARTITION_SHAPES = ("halves", "majority", "bridge", "ring", "one-way")


def cut_between(a: list[int] | set[int], b: list[int] | set[int]) -> set[tuple[int, int]]:
    """Every directed link between a member of ``a`` and one of ``b``, both ways."""
    return {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}


def cut_links(rng: random.Random, members: list[int], shape: str) -> set[tuple[int, int]]:
    """The directed links ``(from, to)`` a partition of ``shape`` cuts among ``members``
    (shuffled with ``rng`` first):

    ``halves``    two halves, nothing crosses;
    ``majority``  a minority (1 .. n/2 members, drawn) cut off from the rest;
    ``bridge``    two halves that one member (the bridge) still hears and reaches;
    ``ring``      each member reaches only its two neighbours on a ring;
    ``one-way``   one half's messages to the other are lost, the other way still works.
    """
    ms = list(members)
    rng.shuffle(ms)
    n = len(ms)
    if shape == "halves":
        a, b = ms[:n // 2], ms[n // 2:]
    elif shape == "majority":
        k = rng.randint(1, max(1, n // 2))
        a, b = ms[:k], ms[k:]
    elif shape == "bridge":
        rest = ms[1:]                      # (ms[0], the bridge, keeps every link)
        return cut_between(rest[:len(rest) // 2], rest[len(rest) // 2:])
    elif shape == "ring":
        near = {(ms[i], ms[(i + d) % n]) for i in range(n) for d in (-1, 0, 1)}
        return {(x, y) for x in ms for y in ms if (x, y) not in near}
    elif shape == "one-way":
        a, b = ms[:n // 2], ms[n // 2:]
        return {(x, y) for x in a for y in b}
    else:
        raise ValueError(f"shape must be one of {PARTITION_SHAPES}, got {shape!r}")
    return cut_between(a, b)


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """The fault rates of one run (drawn from the seed in swarm mode)."""

    drop: float = 0.0
    duplicate: float = 0.0
    max_delay: int = 5
    slow: float = 0.0             #: probability a message takes up to 10x max_delay
    crashes: int = 0
    restarts: float = 0.0         #: probability a crashed member comes back (new id)
    joins: int = 0
    clogs: int = 0
    filters: int = 0              #: per-message-type drop/delay windows
    detect_delay: int = 20        #: crash -> membership change

    @classmethod
    def draw(cls, rng: random.Random) -> FaultPlan:
        """The swarm's plan: every rate drawn from ``rng``."""
        return cls(drop=rng.choice((0.0, 0.01, 0.05, 0.15)),
                   duplicate=rng.choice((0.0, 0.02, 0.1)),
                   max_delay=rng.choice((2, 5, 15)),
                   slow=rng.choice((0.0, 0.02, 0.1)),
                   crashes=rng.choice((0, 1, 1, 2, 3)),
                   restarts=rng.choice((0.0, 0.5, 1.0)),
                   joins=rng.choice((0, 1, 2)),
                   clogs=rng.choice((0, 2, 5)),
                   filters=rng.choice((0, 1, 3)),
                   detect_delay=rng.choice((5, 20, 60)))


class Network:
    """Delivers messages between members with the plan's faults while ``faulty``."""

    def __init__(self, timeline: Timeline, rng: random.Random, plan: FaultPlan,
                 faulty: bool) -> None:
        self.tl = timeline
        self.rng = rng
        self.fp = plan
        # what every message, write and transfer reads: C fields when compiled, where the
        # plan's attributes and the generator's bound methods are lookups each time
        self.drop = plan.drop
        self.duplicate = plan.duplicate
        self.slow = plan.slow
        self.max_delay = plan.max_delay
        self.random = rng.random
        self.getrandbits = rng.getrandbits
        self.faulty = faulty
        self.clogged: dict[tuple[int, int], int] = {}
        self.filters: dict[type, tuple[str, int]] = {}
        #: the directed links ``(from, to)`` a partition cut (they drop everything)
        self.cut: set[tuple[int, int]] = set()

    def deliver(self, src: int, dst: int, m: msg.Message, term: int = 0) -> None:
        """Send ``m`` from ``src`` to ``dst`` under ``term``: it arrives once, twice or
        never, after a delay (a drawn one, longer on a slow or clogged link or a delaying
        filter)."""
        tl = self.tl
        now = tl.now
        if self.cut and (src, dst) in self.cut:     # (a partition: scripted ones too)
            tl.inject("message_cut")
            return
        if not self.faulty:
            tl.push(now + 1, MSG, (src, dst, m, term))
            return
        bits, uniform = self.getrandbits, self.random
        delay = randbits(bits, 1, self.max_delay)
        if self.slow and uniform() < self.slow:
            delay += randbits(bits, 1, 10 * self.max_delay)
        if self.drop and uniform() < self.drop:
            tl.inject("message_dropped")
            return
        if self.filters:
            f = self.filters.get(type(m))
            if f is not None and now < f[1]:
                if f[0] == "drop":
                    tl.inject("message_filtered")
                    return
                delay += 50
                tl.inject("message_delayed")
        if self.clogged:
            until = self.clogged.get((src, dst), 0)
            if until > now:
                delay += until - now
        if self.duplicate and uniform() < self.duplicate:
            tl.inject("message_duplicated")
            tl.push(now + delay + randbits(bits, 0, self.max_delay), MSG, (src, dst, m, term))
        tl.push(now + delay, MSG, (src, dst, m, term))

    def lost(self) -> bool:
        """Whether one more message or transfer is dropped (a draw while faulty)."""
        return bool(self.faulty and self.drop) and self.random() < self.drop

    def delay(self) -> int:
        """A transfer's delay: drawn while faulty, else 1."""
        return randbits(self.getrandbits, 1, self.max_delay) if self.faulty else 1

    def clog(self, view: list[int]) -> None:
        """Clog a random link between two live members for a while."""
        if len(view) > 1:
            a, b = self.rng.sample(view, 2)
            self.clogged[(a, b)] = self.tl.now + self.rng.randint(20, 300)
            self.tl.inject("link_clogged")

    def filter(self) -> None:
        """Drop or delay every message of a random type for a while."""
        mt = self.rng.choice(MESSAGE_TYPES)
        self.filters[mt] = (self.rng.choice(("drop", "delay")),
                            self.tl.now + self.rng.randint(50, 500))
        self.tl.inject("message_type_filtered")

    def heal(self) -> None:
        """The safety phase ends: no more faults, every link clear."""
        self.faulty = False
        self.clogged.clear()
        self.filters.clear()
        self.cut.clear()
