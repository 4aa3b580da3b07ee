"""Scenario files, parsed: the cases, their settings, scripts and filters, and their
stored transcripts (the format is described in docs/scenarios.md; running them is
:mod:`hzfast.sim.scenario`'s)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hzfast.protocol import messages as msg
from hzfast.protocol.outputs import MARKS
from hzfast.sim.cluster import ROLES, SAFETY_TICKS, CrashAt

__all__ = ["FILTER_ACTIONS", "KIND_NAMES", "MESSAGE_TYPES", "SEPARATOR", "Case", "Filter",
           "load", "parse"]

#: Message types a filter can name, by class name.
MESSAGE_TYPES: dict[str, type[msg.Message]] = {
    n: getattr(msg, n) for n in msg.__all__
    if isinstance(getattr(msg, n), type) and issubclass(getattr(msg, n), msg.Message)
    and getattr(msg, n) is not msg.Message}

FILTER_ACTIONS = ("drop", "delay", "reject")
_FILTER_ROLES = ("master", "source", "destination", "owner", "any")
KIND_NAMES = ("COPY", "SHIFT_UP", "MOVE", "SHIFT_DOWN", "SHIFT_UP_SOURCE_DROPPED",
               "SHIFT_UP_SHIFT_DOWN", "PROMOTION")
SEPARATOR = "----"
_NEVER = 2**62


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


def _setting(case: Case, cmd: str, args: list[str], where: str) -> bool:
    """A case's settings: members, partitions, backups, entries, seed, max-parallel,
    design, lite, writes, rejoin, run. False if ``cmd`` is none of them."""
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
    elif cmd == "run":
        if args:
            raise ValueError(f"{where}: run takes no argument")
        case.ran = True
    else:
        return False
    return True


def _table_row(case: Case, cmd: str, args: list[str], where: str) -> None:
    """``table pN ROW`` or ``local mN pN ROW``: a row of the initial table, or one
    member's own view of it."""
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


def _script(case: Case, cmd: str, args: list[str], where: str) -> None:
    """``join at=T [lite]``, ``crash mN at=T`` or ``crash-at ROLE MARK [nth=N]``."""
    if cmd == "join":
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


def _filter(case: Case, cmd: str, args: list[str], where: str) -> None:
    """``drop|delay|reject TYPE [options]``: a message filter."""
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
    if f.kind and f.kind not in KIND_NAMES:
        raise ValueError(f"{where}: kind must be one of {KIND_NAMES}, got {f.kind!r}")
    f.after = _int(opts.get("after", "0"), "after", where)
    f.until = _int(opts.get("until", str(_NEVER)), "until", where)
    if cmd == "delay":
        if "by" not in opts:
            raise ValueError(f"{where}: delay needs by=TICKS")
        f.by = _int(opts["by"], "by", where, 1)
    elif "by" in opts:
        raise ValueError(f"{where}: by= only goes with delay")
    case.filters.append(f)


def _observe(case: Case, cmd: str, args: list[str], where: str) -> None:
    """``states at=T|mark=NAME|msg=TYPE [nth=N]`` or ``show pN ...``."""
    if cmd == "states":
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


def _command(case: Case, words: list[str], where: str) -> None:
    cmd, args = words[0], words[1:]
    if _setting(case, cmd, args, where):
        return
    if cmd in ("table", "local"):
        _table_row(case, cmd, args, where)
    elif cmd in ("join", "crash", "crash-at"):
        _script(case, cmd, args, where)
    elif cmd in FILTER_ACTIONS:
        _filter(case, cmd, args, where)
    elif cmd in ("states", "show"):
        _observe(case, cmd, args, where)
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
        if body == SEPARATOR:
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
