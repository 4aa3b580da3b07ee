"""Scenario files: scripted simulator runs checked against a canonical transcript.

A scenario file holds cases. Each case sets up a cluster (members, partitions, backups,
entries, design, an optional initial table), scripts what happens to it (joins, crashes
at a time or at a protocol mark, messages of one type dropped, delayed or rejected), runs
the simulator of :mod:`hzfast.sim.cluster` until the cluster settles, and prints a
deterministic digest of the run: the protocol marks in order (with partition, migration
and the emitting member's roles), what the script did, the final per-member versions and
replicas of the partitions involved, the data check and the violations. The digest is
compared with the transcript stored under the case's ``----`` line; ``--rewrite`` stores
the new digest instead (the shape of etcd-raft's datadriven tests). The format is
described in docs/scenarios.md; the protocol rules the cases check are those of
docs/design.md §7.

Run a file from the command line::

    python -m hzfast.sim.scenario tests/sim/scenarios/*.txt [--rewrite]
"""
from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hzfast.protocol import messages as msg
from hzfast.protocol.events import MembershipChanged, MessageReceived
from hzfast.protocol.kinds import MarkName
from hzfast.protocol.messages import MigrationInfo, MigrationStatus
from hzfast.protocol.node import Node
from hzfast.protocol.outputs import MARKS, Effect, Mark
from hzfast.sim.cluster import (
    ROLES,
    SAFETY_TICKS,
    CrashAt,
    Simulation,
    SimulationResult,
)

__all__ = [
    "FILTER_ACTIONS",
    "MESSAGE_TYPES",
    "Case",
    "Filter",
    "ScenarioSimulation",
    "load",
    "main",
    "parse",
    "run_case",
    "run_file",
]

#: Message types a filter can name, by class name.
MESSAGE_TYPES: dict[str, type[msg.Message]] = {
    n: getattr(msg, n) for n in msg.__all__
    if isinstance(getattr(msg, n), type) and issubclass(getattr(msg, n), msg.Message)
    and getattr(msg, n) is not msg.Message}

FILTER_ACTIONS = ("drop", "delay", "reject")
_FILTER_ROLES = ("master", "source", "destination", "owner", "any")
_KIND_NAMES = ("COPY", "SHIFT_UP", "MOVE", "SHIFT_DOWN", "SHIFT_UP_SOURCE_DROPPED",
               "SHIFT_UP_SHIFT_DOWN", "PROMOTION")
_SEPARATOR = "----"
_INJECTED = {"drop": "filter_dropped", "delay": "filter_delayed", "reject": "filter_rejected"}
_NEVER = 2**62


def migration_kind(x: MigrationInfo) -> str:
    """The kind of migration ``x`` (docs/design.md §5.7; ``PROMOTION`` for §7.7's)."""
    if x.promotion:
        return "PROMOTION"
    if x.source < 0:
        return "COPY" if x.destination_current_index < 0 else "SHIFT_UP"
    if x.destination_current_index < 0:
        return "MOVE" if x.source_new_index < 0 else "SHIFT_DOWN"
    return "SHIFT_UP_SOURCE_DROPPED" if x.source_new_index < 0 else "SHIFT_UP_SHIFT_DOWN"


def _member(v: int) -> str:
    return f"m{v}" if v >= 0 else "-"


def describe(x: MigrationInfo) -> str:
    """One migration in a transcript: id, partition, kind, slot moves, versions, status."""
    src = (f" {_member(x.source)}@{x.source_current_index}->{x.source_new_index}"
           if x.source >= 0 else "")
    return (f"x{x.id[0]}.{x.id[1]} p{x.partition} {migration_kind(x)}{src} "
            f"{_member(x.destination)}@{x.destination_current_index}->"
            f"{x.destination_new_index} v{x.initial}->{x.final} {x.status.name}")


# ---------------------------------------------------------------------- the case model
@dataclass
class Filter:
    """Drop, delay or reject messages of one type (Hazelcast's packet filters).

    Among the messages that match (type, ``src``/``dst`` role or member, ``partition``,
    ``kind``, sent at a time in ``[after, until)``), the ``nth`` to the
    ``nth + times - 1``-th are acted on. ``reject`` drops the message and answers its
    sender with the receiver's negative reply where the protocol has one (a refused
    request, transfer, commit, publication, promotion, state check or table); for other
    types it is a drop. Messages a node sends to itself never pass the network and are
    never filtered.
    """

    action: str
    type_name: str
    nth: int = 1
    times: int = _NEVER
    src: str = "any"
    dst: str = "any"
    partition: int = -1
    kind: str = ""
    after: int = 0
    until: int = _NEVER
    by: int = 0
    seen: int = 0

    def describe(self) -> str:
        return f"{self.action} {self.type_name}"


@dataclass
class Case:
    """One scenario: its settings, script and stored transcript."""

    name: str
    line: int
    comments: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    members: int = 3
    partitions: int = 2
    backups: int = 1
    entries: int = 20
    design: str = "safe"
    seed: int = 0
    max_parallel: int = 10
    lite: set[int] = field(default_factory=set)
    table: dict[int, list[int]] = field(default_factory=dict)
    local: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    actions: list[tuple[int, str, int, bool]] = field(default_factory=list)
    script: list[CrashAt] = field(default_factory=list)
    filters: list[Filter] = field(default_factory=list)
    snapshots: list[tuple[str, str, int]] = field(default_factory=list)
    show: list[int] = field(default_factory=list)
    rejoin: bool = False
    writes: tuple[int, int] = (1, SAFETY_TICKS)
    ran: bool = False


def _int(text: str, what: str, where: str, lo: int = 0, hi: int = _NEVER) -> int:
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"{where}: {what} must be an int, got {text!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{where}: {what} must be in {lo}..{hi}, got {v}")
    return v


def _member_id(text: str, where: str) -> int:
    if not text.startswith("m"):
        raise ValueError(f"{where}: a member is written mN (N its id), got {text!r}")
    return _int(text[1:], "member id", where, 1, 10_000)


def _options(words: Sequence[str], allowed: Sequence[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, eq, val = w.partition("=")
        if not eq or key not in allowed:
            raise ValueError(f"{where}: unknown option {w!r} (allowed: "
                             f"{', '.join(k + '=' for k in allowed)})")
        out[key] = val
    return out


def _role(text: str, where: str) -> str:
    if text in _FILTER_ROLES:
        return text
    _member_id(text, where)
    return text


def _command(case: Case, words: list[str], where: str) -> None:
    cmd, args = words[0], words[1:]
    one = {"members": (1, 64), "partitions": (1, 10_000), "backups": (0, 6),
           "entries": (0, 1_000_000), "seed": (0, 2**63 - 1), "max-parallel": (1, 10_000)}
    if cmd in one:
        if len(args) != 1:
            raise ValueError(f"{where}: {cmd} takes one int")
        v = _int(args[0], cmd, where, *one[cmd])
        attr = {"max-parallel": "max_parallel", "backups": "backups"}.get(cmd, cmd)
        setattr(case, attr, v)
    elif cmd == "design":
        if args not in (["safe"], ["legacy"]):
            raise ValueError(f"{where}: design is 'safe' or 'legacy', got {' '.join(args)!r}")
        case.design = args[0]
    elif cmd == "lite":
        if not args:
            raise ValueError(f"{where}: lite takes member ids (mN ...)")
        case.lite |= {_member_id(a, where) for a in args}
    elif cmd == "writes":
        if len(args) != 2:
            raise ValueError(f"{where}: writes takes FROM TO (times of the first tries)")
        lo = _int(args[0], "writes FROM", where, 1, SAFETY_TICKS)
        hi = _int(args[1], "writes TO", where, lo, SAFETY_TICKS)
        case.writes = (lo, hi)
    elif cmd == "rejoin":
        if args:
            raise ValueError(f"{where}: rejoin takes no argument")
        case.rejoin = True
    elif cmd in ("table", "local"):
        own = -1
        if cmd == "local":
            if not args:
                raise ValueError(f"{where}: local takes mN pN then the replicas")
            own, args = _member_id(args[0], where), args[1:]
        if len(args) < 2 or not args[0].startswith("p"):
            raise ValueError(f"{where}: {cmd} takes pN then the replicas (mN or -)")
        p = _int(args[0][1:], "partition", where, 0, 9_999)
        row = [-1 if a == "-" else _member_id(a, where) for a in args[1:]]
        if len(row) > 7:
            raise ValueError(f"{where}: a row has at most 7 replicas, got {len(row)}")
        if row[0] < 0:
            raise ValueError(f"{where}: a row's owner (slot 0) must be a member")
        filled = [v for v in row if v >= 0]
        if len(set(filled)) != len(filled):
            raise ValueError(f"{where}: a member appears twice in partition {p}'s row")
        if cmd == "local":
            case.local[(own, p)] = row
        else:
            case.table[p] = row
    elif cmd == "join":
        opts = _options([a for a in args if a != "lite"], ("at",), where)
        if "at" not in opts:
            raise ValueError(f"{where}: join needs at=TIME")
        case.actions.append((_int(opts["at"], "at", where, 1), "join", -1, "lite" in args))
    elif cmd == "crash":
        if len(args) != 2:
            raise ValueError(f"{where}: crash takes mN at=TIME")
        m = _member_id(args[0], where)
        opts = _options(args[1:], ("at",), where)
        case.actions.append((_int(opts["at"], "at", where, 1), "crash", m, False))
    elif cmd == "crash-at":
        if len(args) < 2:
            raise ValueError(f"{where}: crash-at takes ROLE MARK [nth=N]")
        if args[0] not in ROLES:
            raise ValueError(f"{where}: crash-at role must be one of {ROLES}, got {args[0]!r}")
        if args[1] not in MARKS:
            raise ValueError(f"{where}: unknown mark {args[1]!r}")
        opts = _options(args[2:], ("nth",), where)
        case.script.append(CrashAt(args[0], args[1], _int(opts.get("nth", "1"), "nth", where, 1)))
    elif cmd in FILTER_ACTIONS:
        if not args or args[0] not in MESSAGE_TYPES:
            raise ValueError(f"{where}: {cmd} takes a message type (one of "
                             f"{', '.join(sorted(MESSAGE_TYPES))})")
        opts = _options(args[1:], ("nth", "times", "from", "to", "partition", "kind", "after",
                                   "until", "by"), where)
        f = Filter(cmd, args[0])
        if "nth" in opts:
            f.nth = _int(opts["nth"], "nth", where, 1)
            f.times = 1
        if "times" in opts:
            f.times = _int(opts["times"], "times", where, 1)
        f.src = _role(opts.get("from", "any"), where)
        f.dst = _role(opts.get("to", "any"), where)
        f.partition = _int(opts.get("partition", "-1"), "partition", where, -1)
        f.kind = opts.get("kind", "")
        if f.kind and f.kind not in _KIND_NAMES:
            raise ValueError(f"{where}: kind must be one of {_KIND_NAMES}, got {f.kind!r}")
        f.after = _int(opts.get("after", "0"), "after", where)
        f.until = _int(opts.get("until", str(_NEVER)), "until", where)
        if cmd == "delay":
            if "by" not in opts:
                raise ValueError(f"{where}: delay needs by=TICKS")
            f.by = _int(opts["by"], "by", where, 1)
        elif "by" in opts:
            raise ValueError(f"{where}: by= only goes with delay")
        case.filters.append(f)
    elif cmd == "states":
        opts = _options(args, ("at", "mark", "msg", "nth"), where)
        if len(opts.keys() - {"nth"}) != 1:
            raise ValueError(f"{where}: states takes one of at=TIME, mark=NAME, msg=TYPE")
        nth = _int(opts.get("nth", "1"), "nth", where, 1)
        if "at" in opts:
            case.actions.append((_int(opts["at"], "at", where, 1), "states", -1, False))
        elif "mark" in opts:
            if opts["mark"] not in MARKS:
                raise ValueError(f"{where}: unknown mark {opts['mark']!r}")
            case.snapshots.append(("mark", opts["mark"], nth))
        else:
            if opts["msg"] not in MESSAGE_TYPES:
                raise ValueError(f"{where}: unknown message type {opts['msg']!r}")
            case.snapshots.append(("msg", opts["msg"], nth))
    elif cmd == "show":
        if not args or not all(a.startswith("p") for a in args):
            raise ValueError(f"{where}: show takes partitions pN ...")
        case.show = [_int(a[1:], "partition", where, 0) for a in args]
    elif cmd == "run":
        if args:
            raise ValueError(f"{where}: run takes no argument")
        case.ran = True
    else:
        raise ValueError(f"{where}: unknown command {cmd!r}")


def parse(text: str, source: str = "<scenario>") -> list[Case]:
    """Parse a scenario file's text into its cases (see docs/scenarios.md).

    Raises
    ------
    ValueError
        A line that is not a known command, a bad value, a case without ``run`` or
        without its ``----`` line, or two cases of one name; the message names the
        file and line.
    """
    cases: list[Case] = []
    case: Case | None = None
    in_transcript = False
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        where = f"{source}:{no}"
        if line.startswith("case "):
            name = line[5:].strip()
            if not name or " " in name:
                raise ValueError(f"{where}: a case name is one word, got {name!r}")
            if any(c.name == name for c in cases):
                raise ValueError(f"{where}: case {name!r} is defined twice")
            case = Case(name, no)
            cases.append(case)
            in_transcript = False
            continue
        if case is None:
            if line and not line.startswith("#"):
                raise ValueError(f"{where}: text before the first 'case NAME' line")
            continue
        if in_transcript:
            case.expected.append(line)
            continue
        body = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if line.lstrip().startswith("#"):
            case.comments.append(line.lstrip()[1:].strip())
            continue
        if not body:
            continue
        if body == _SEPARATOR:
            if not case.ran:
                raise ValueError(f"{where}: case {case.name!r} has no 'run' before '----'")
            in_transcript = True
            continue
        case.commands.append(body)
        _command(case, body.split(), where)
    for c in cases:
        while c.expected and not c.expected[-1]:
            c.expected.pop()
        if not c.ran:
            raise ValueError(f"{source}:{c.line}: case {c.name!r} has no 'run' command")
    return cases


def load(path: str | Path) -> list[Case]:
    """Parse the scenario file at ``path``."""
    p = Path(path)
    return parse(p.read_text(), str(p))


# ---------------------------------------------------------------------- the simulation
@dataclass(frozen=True, slots=True)
class _Action(Effect):
    """A scripted action riding the simulator's event heap as an effect of member -1."""

    action: str = ""
    member: int = -1
    lite: bool = False


class ScenarioSimulation(Simulation):
    """A :class:`~hzfast.sim.cluster.Simulation` with a case's extras.

    It adds what scripted cases need and the base simulator has no switch for: lite
    members, an initial table, joins and crashes of named members at given times,
    message filters, member-state snapshots, and a log of everything in order (the
    transcript). The heal phase does not bring the cluster back to its first size unless
    the case says ``rejoin``.
    """

    def __init__(self, case: Case) -> None:
        self.case = case
        self.lite_ids: set[int] = set(case.lite)
        self.log: list[str] = []
        self.filters_: list[Filter] = [Filter(**{k: v for k, v in f.__dict__.items()})
                                       for f in case.filters]
        self.snap_seen: dict[tuple[str, str, int], int] = {s: 0 for s in case.snapshots}
        self.mark_objs: list[Mark] = []
        self.touched: set[int] = set()
        self.owners: dict[tuple[int, int], int] = {}
        super().__init__(case.seed, members=case.members, partitions=case.partitions,
                         backup_count=case.backups, entries=case.entries, faults="none",
                         script=tuple(case.script), design=case.design, trace=False,
                         max_parallel_migrations=case.max_parallel,
                         write_window=case.writes)
        if not case.rejoin:
            self.initial_members = 0
        if case.local and not case.table:
            raise ValueError(f"case {case.name}: local rows need a table")
        if case.table:
            self._install_table(case)
        for t, what, m, lite in case.actions:
            self._push(t, "effect", (-1, _Action(0, "scenario", -1, action=what, member=m,
                                                  lite=lite)))

    def _install_table(self, case: Case) -> None:
        P, R = self.P, self.config.replica_count
        reps = np.full((P, R), -1, dtype=np.int32)
        for p, row in case.table.items():
            if p >= P:
                raise ValueError(f"case {case.name}: table row p{p} but only {P} partitions")
            for v in row:
                if v >= 0 and (v not in self.nodes or v in self.lite_ids):
                    raise ValueError(f"case {case.name}: table row p{p} names m{v}, not an "
                                     f"initial data member")
            reps[p, :len(row)] = row
        missing = sorted(set(range(P)) - set(case.table))
        if missing:
            raise ValueError(f"case {case.name}: table gives no row for partitions {missing}")
        vers = (reps >= 0).sum(axis=1).astype(np.int32)
        local = {m: reps.copy() for m in self.nodes}
        for (m, p), row in sorted(case.local.items()):
            if m not in self.nodes or p >= P:
                raise ValueError(f"case {case.name}: local row for m{m} p{p}: no such member "
                                 f"or partition")
            local[m][p] = -1
            local[m][p, :len(row)] = row
        for m in list(self.nodes):          # every member starts from the case's table
            self.nodes[m] = Node(m, self.config, replicas=local[m], versions=vers)
            self.last_versions[m] = vers.copy()

    # -------------------------------------------------------------- logging hooks
    def _say(self, text: str) -> None:
        self.log.append(text)

    def _publish_view(self) -> None:
        self.view_no += 1
        lite = tuple(m in self.lite_ids for m in self.view)
        ev = MembershipChanged(tuple(self.view), lite)
        for m in self.view:
            self._push(self.now + (self.rng.randint(0, 3) if self.faulty else 0), "view",
                       (m, self.view_no, ev))
        shown = " ".join(f"m{m}" + ("(lite)" if f else "") for m, f in zip(self.view, lite))
        self._say(f"VIEW {shown}")

    def _crash(self, m: int, why: str) -> None:
        if m in self.nodes:
            self._say(f"CRASH m{m} ({why})")
        super()._crash(m, why)

    def _event_join(self) -> None:
        self._say(f"JOIN m{self.next_id}")
        super()._event_join()

    def _on_mark(self, mid: int, mk: Mark, crash: list[int]) -> None:
        x = mk.migration
        self.mark_objs.append(mk)
        if mk.partition >= 0:
            self.touched.add(mk.partition)
        roles = []
        if x is not None:
            if mk.name == MarkName.MIGRATION_STARTED:
                row = self._master_row(x.partition)
                self.owners[x.id] = int(row[0]) if row is not None else -1
            owner = self.owners.get(x.id, -1)
            roles = [r for r, who in (("master", x.master), ("owner", owner),
                                      ("source", x.source), ("destination", x.destination))
                     if who == mid and not (r == "owner" and x.source == mid)]
        who = f"m{mid}" + (f"[{','.join(roles)}]" if roles else "")
        text = f"{who} {mk.name}"
        if x is not None:
            text += f" {describe(x)}"
        elif mk.partition >= 0:
            text += f" p{mk.partition}"
        if mk.detail:
            text += f" ({mk.detail})"
        self._say(text)
        before = len(crash)
        super()._on_mark(mid, mk, crash)
        for c in crash[before:]:
            self._say(f"SCRIPT crash m{c} at {mk.name}")
        for key in self.snap_seen:
            if key[0] == "mark" and key[1] == mk.name:
                self.snap_seen[key] += 1
                if self.snap_seen[key] == key[2]:
                    self._states(f"at {mk.name}#{key[2]}")

    def _states(self, why: str) -> None:
        if not self.view:
            return
        master = self.nodes[self.view[0]]
        busy = master.busy
        states = " ".join(f"m{m}={self.nodes[m].state(busy)}" for m in sorted(self.nodes))
        self._say(f"STATES {why}: {states}")

    def _handle(self, mid: int, ev: Any) -> None:
        if isinstance(ev, MessageReceived) and self.snap_seen:
            name = type(ev.message).__name__
            for key in self.snap_seen:
                if key[0] == "msg" and key[1] == name:
                    self.snap_seen[key] += 1
                    if self.snap_seen[key] == key[2]:
                        self._states(f"on {name}#{key[2]} to m{mid}")
        super()._handle(mid, ev)

    def _effect(self, mid: int, e: Effect) -> None:
        if not isinstance(e, _Action):
            super()._effect(mid, e)
            return
        if e.action == "join":
            if e.lite:
                self.lite_ids.add(self.next_id)
            self._event_join()
        elif e.action == "crash":
            if e.member in self.nodes:
                self._crash(e.member, "scripted at a time")
            else:
                self._say(f"SCRIPT crash m{e.member}: not a live member")
        elif e.action == "states":
            self._states(f"at t={self.now}")

    # -------------------------------------------------------------- message filters
    def _who(self, role: str, m: msg.Message) -> int:
        if role.startswith("m"):
            return int(role[1:])
        x = getattr(m, "migration", None)
        if role == "master":
            return x.master if isinstance(x, MigrationInfo) else (self.view[0] if self.view
                                                                    else -1)
        if isinstance(m, msg.PromotionCommit) and role == "destination":
            return m.destination
        if not isinstance(x, MigrationInfo):
            return -2
        if role == "source":
            return x.source
        if role == "destination":
            return x.destination
        row = self._master_row(x.partition)
        return int(row[0]) if row is not None else -2

    def _matches(self, f: Filter, src: int, dst: int, m: msg.Message) -> bool:
        if type(m).__name__ != f.type_name or not f.after <= self.now < f.until:
            return False
        if f.src != "any" and self._who(f.src, m) != src:
            return False
        if f.dst != "any" and self._who(f.dst, m) != dst:
            return False
        if f.partition >= 0 or f.kind:
            x = getattr(m, "migration", None)
            if not isinstance(x, MigrationInfo):
                return False
            if f.partition >= 0 and x.partition != f.partition:
                return False
            if f.kind and migration_kind(x) != f.kind:
                return False
        return True

    def _deliver(self, src: int, dst: int, m: msg.Message) -> None:
        act: Filter | None = None
        for f in self.filters_:
            if self._matches(f, src, dst, m):
                f.seen += 1
                if act is None and f.nth <= f.seen < f.nth + f.times:
                    act = f
        if act is None:
            super()._deliver(src, dst, m)
            return
        x = getattr(m, "migration", None)
        about = f" {describe(x)}" if isinstance(x, MigrationInfo) else ""
        name = type(m).__name__
        self._inject(_INJECTED[act.action])
        if act.action == "delay":
            self._say(f"DELAY {name} m{src}->m{dst}{about} by {act.by}")
            self._push(self.now + 1 + act.by, "msg", (src, dst, m))
            return
        reply = (msg.negative_reply(dst, m, "rejected by a filter")
                 if act.action == "reject" else None)
        self._say(f"{act.action.upper()} {name} m{src}->m{dst}{about}"
                  + (f" (answered {type(reply).__name__} ok=False)" if reply else ""))
        if reply is not None:
            self._push(self.now + 1, "msg", (dst, src, reply))

    # -------------------------------------------------------------- lite-aware checks
    @contextmanager
    def _data_view(self) -> Iterator[None]:
        """Hide lite members from the base checks that count every member as a data one."""
        view = self.view
        data = [m for m in view if m not in self.lite_ids]
        self.view = data if data else view
        try:
            yield
        finally:
            self.view = view

    def _balanced(self, master: Node) -> bool:
        with self._data_view():
            return super()._balanced(master)

    def _final_checks(self) -> None:
        with self._data_view():
            super()._final_checks()


# ---------------------------------------------------------------------- the transcript
def _arithmetic(marks: list[Mark]) -> list[str]:
    """Every version a mark reports obeys docs/design.md §7.2: commit = initial + inc,
    failure = initial + inc + 1."""
    bad: list[str] = []
    seen: set[tuple[tuple[int, int], MigrationStatus, int]] = set()
    for mk in marks:
        x = mk.migration
        if x is None or x.status == MigrationStatus.ACTIVE:
            continue
        key = (x.id, x.status, x.final)
        if key in seen:
            continue
        seen.add(key)
        want = x.initial + x.increment + (1 if x.status == MigrationStatus.FAILED else 0)
        if x.final != want:
            bad.append(f"{describe(x)}: final should be {want} (inc {x.increment})")
    return bad


def _row(r: np.ndarray[Any, Any]) -> str:
    vals = [int(v) for v in r.tolist()]
    while vals and vals[-1] < 0:
        vals.pop()
    return "[" + " ".join(_member(v) for v in vals) + "]"


def transcript(sim: ScenarioSimulation, r: SimulationResult) -> list[str]:
    """The canonical digest of one finished case run (see docs/scenarios.md)."""
    out = list(sim.log)
    shown = sim.case.show or sorted(sim.touched if sim.P > 4 else set(range(sim.P)))
    for m in sorted(sim.nodes):
        node = sim.nodes[m]
        if not node.initialized:
            out.append(f"FINAL m{m}: no table")
            continue
        parts = " ".join(f"p{p} v{int(node.versions[p])} {_row(node.replicas[p])}"
                         for p in shown if p < sim.P)
        out.append(f"FINAL m{m}{'(lite)' if m in sim.lite_ids else ''}: {parts}")
    states = " ".join(f"m{m}={sim.nodes[m].state(sim.nodes[sim.view[0]].busy)}"
                      for m in sorted(sim.nodes)) if sim.view else "no members"
    out.append(f"STATES final: {states}")
    out.append("COMPLETED " + " ".join(f"m{m}={len(sim.nodes[m].completed)}"
                                       for m in sorted(sim.nodes)))
    out.append(f"DATA acknowledged={r.entries_acknowledged}/{r.entries} lost={r.entries_lost} "
               f"expected={r.entries_lost_expected} unexpected={r.entries_unexpected} "
               f"converged={r.converged}")
    bad = _arithmetic(sim.mark_objs)
    out.append("ARITHMETIC " + ("ok" if not bad else f"{len(bad)} wrong"))
    out.extend(f"  {b}" for b in bad)
    if r.violations:
        out.append(f"VIOLATIONS {len(r.violations)}")
        out.extend(f"  {v}" for v in r.violations)
    else:
        out.append("VIOLATIONS none")
    return out


@dataclass
class Outcome:
    """The result of running one case: its transcript and what it found."""

    case: Case
    actual: list[str]
    result: SimulationResult
    marks: dict[str, int]

    @property
    def ok(self) -> bool:
        """The transcript equals the stored one."""
        return self.actual == self.case.expected

    def diff(self) -> str:
        return "\n".join(difflib.unified_diff(self.case.expected, self.actual, "expected",
                                              "actual", lineterm=""))


def run_case(case: Case) -> Outcome:
    """Run one case and build its transcript."""
    sim = ScenarioSimulation(case)
    r = sim.run()
    return Outcome(case, transcript(sim, r), r, dict(r.marks))


def _render(text: str, outcomes: dict[str, Outcome]) -> str:
    """``text`` with every case's transcript replaced by its new one."""
    lines = text.splitlines()
    out: list[str] = []
    skipping = False
    current: str | None = None
    for line in lines:
        if line.startswith("case "):
            skipping = False
            current = line[5:].strip()
            if out and out[-1] != "":
                out.append("")
            out.append(line)
            continue
        if skipping:
            continue
        out.append(line)
        if current is not None and line.split("#", 1)[0].strip() == _SEPARATOR \
                and not line.lstrip().startswith("#"):
            out.extend(outcomes[current].actual)
            out.append("")
            skipping = True
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def run_file(path: str | Path, rewrite: bool = False) -> list[Outcome]:
    """Run every case of a scenario file; with ``rewrite`` store the new transcripts.

    Returns
    -------
    list of Outcome
        One per case, in file order; ``ok`` tells whether the transcript matched the
        stored one (after a rewrite, the file holds the new ones).
    """
    p = Path(path)
    text = p.read_text()
    cases = parse(text, str(p))
    outcomes = [run_case(c) for c in cases]
    if rewrite:
        new = _render(text, {o.case.name: o for o in outcomes})
        if new != text:
            p.write_text(new)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: run scenario files, print a diff per failing case."""
    ap = argparse.ArgumentParser(prog="python -m hzfast.sim.scenario",
                                 description="Run hzfast scenario files (docs/scenarios.md).")
    ap.add_argument("files", nargs="+", help="scenario files")
    ap.add_argument("--rewrite", action="store_true",
                    help="store each case's new transcript in its file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every transcript")
    args = ap.parse_args(argv)
    failed = 0
    total = 0
    for f in args.files:
        try:
            outcomes = run_file(f, rewrite=args.rewrite)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for o in outcomes:
            total += 1
            status = "rewritten" if args.rewrite and not o.ok else ("ok" if o.ok else "FAIL")
            print(f"{f}::{o.case.name} {status}")
            if args.verbose:
                print("\n".join("    " + line for line in o.actual))
            if not o.ok and not args.rewrite:
                failed += 1
                print(o.diff())
    print(f"{total - failed}/{total} cases match")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
