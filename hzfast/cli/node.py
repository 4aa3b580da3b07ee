"""``hzfast node``, ``hzfast cluster up|status|down`` and ``hzfast chaos``: real members.

- ``node`` runs one member (:mod:`hzfast.node`) in this process until SIGTERM/Ctrl-C;
  it prints one JSON ready line (its member id, address and PID) on stdout. Its cluster
  secret comes from ``--secret-file`` or ``HZFAST_SECRET_FILE``; without one it listens on
  loopback only (docs/node.md §8).
- ``cluster up -n 4`` generates a cluster secret (mode 0600, in the members' folder,
  deleted when they stop), starts member processes on 127.0.0.11, .12, ... (one loopback
  address each) and shows the live status until Ctrl-C, then stops them by PID;
  ``--detach`` leaves them running and writes their PIDs, addresses and ports to a state
  file, which ``cluster status`` and ``cluster down`` read.
- ``cluster status`` shows members, table stamps, states and migrations in flight (a live
  view on a terminal; ``--once`` or ``--json`` print one snapshot).
- ``chaos`` runs :func:`hzfast.node.chaos.run_chaos`: writes, joins and kill -9 of member
  processes mid-migration, then reads every acknowledged entry back.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from hzfast.cli._errors import UserError, check_output_path, int_within
from hzfast.cli._output import add_json_flag, emit, human_bytes, human_count, kv_table
from hzfast.cli.simulate_membership import min_cluster_size

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["cmd_chaos", "cmd_cluster_down", "cmd_cluster_status", "cmd_cluster_up",
           "cmd_node", "register"]

STATE_FILE = ".hzfast-cluster.json"


def _count(low: int) -> Any:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} is below {low}")
        return v
    return parse


_PORT = int_within(0, 65535)


SHAPES = ("halves", "majority", "bridge", "ring", "one-way")   # hzfast.node.nemesis.SHAPES
NEMESES = ("kill", "pause", "partition")                     # hzfast.node.chaos.NEMESES


def _nemeses(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(","))
    bad = [k for k in kinds if k not in NEMESES]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"{text!r}: each kind must be one of "
                                         f"{', '.join(NEMESES)}")
    if len(set(kinds)) != len(kinds):
        raise argparse.ArgumentTypeError(f"{text!r} names a kind twice")
    return kinds


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < v <= 3600:
        raise argparse.ArgumentTypeError(f"{v:g} is not in (0, 3600] seconds")
    return v


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    try:
        p = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the port is not an integer") from None
    if not 1 <= p <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: the port is not in 1..65535")
    return host, p


def _cluster_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-p", "--partitions", type=_count(1), default=271, help="partitions")
    p.add_argument("-b", "--backups", type=_count(0), default=1,
                   help="synchronous backups per partition")
    p.add_argument("--max-parallel-migrations", type=_count(1), default=10,
                   help="migrations a member takes part in at once")
    p.add_argument("--design", choices=("safe", "legacy"), default="safe",
                   help="safe (Hazelcast 3.7+) or legacy (pre-3.7, loses data)")
    p.add_argument("--heartbeat-ms", type=_count(1), default=100, help="heartbeat period")
    p.add_argument("--suspect-ms", type=_count(2), default=1500,
                   help="silence after which a member is removed")
    p.add_argument("--timeout-ms", type=_count(1), default=5000,
                   help="the protocol's request and commit timeout")
    p.add_argument("--min-cluster-size", type=min_cluster_size, default="majority",
                   help="split-brain protection: the smallest side that serves writes, "
                        "'majority' (default) of the last member list, a count, or 'none'")
    p.add_argument("--merge-policy",
                   choices=("put_if_absent", "pass_through", "latest_update", "discard"),
                   default="put_if_absent",
                   help="what a member the cluster removed does with its data before it "
                        "leaves")
    p.add_argument("--link-delay-ms", type=int_within(0, 10_000), default=0,
                   help="emulated one-way latency of member-to-member links (measurements)")
    p.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                   default="WARNING", help="member log level (stderr)")


def _security_flags(p: argparse.ArgumentParser, *, member: bool) -> None:
    p.add_argument("--cluster-name", default="hzfast",
                   help="the cluster's name (every member and client must give the same)")
    p.add_argument("--secret-file", default=os.environ.get("HZFAST_SECRET_FILE") or None,
                   metavar="FILE", help="the cluster secret, mode 0600 (default: "
                                        "$HZFAST_SECRET_FILE; none: loopback only)")
    p.add_argument("--tls-cert", default=None, metavar="PEM",
                   help="TLS certificate (default: none, no TLS)")
    p.add_argument("--tls-key", default=None, metavar="PEM",
                   help="the certificate's private key (default: none)")
    p.add_argument("--tls-ca", default=None, metavar="PEM",
                   help="CA that must have signed every peer's and client's certificate "
                        "(default: none, no certificate asked for)")
    if not member:
        return
    p.add_argument("--max-connections", type=_count(1), default=256,
                   help="incoming connections at once")
    p.add_argument("--max-frame", type=_count(0), default=0,
                   help="largest data frame in bytes (0: the chunk size plus 64 KiB, or "
                        "what the partition tables need)")
    p.add_argument("--auth-timeout-ms", type=_count(1), default=5000,
                   help="a connection's deadline to authenticate")
    p.add_argument("--idle-timeout-ms", type=_count(1), default=120_000,
                   help="an authenticated connection that sends no frame this long is closed")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``node``, ``cluster`` and ``chaos`` to the ``hzfast`` parser."""
    p = subparsers.add_parser("node", help="run one cluster member in this process")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=_PORT, default=5701, help="port (0: any free port)")
    p.add_argument("--join", type=_address, default=None, metavar="HOST:PORT",
                   help="a member of the cluster to join (default: start a new cluster)")
    _cluster_flags(p)
    _security_flags(p, member=True)
    p.set_defaults(func=cmd_node)

    c = subparsers.add_parser("cluster", help="a local cluster of member processes")
    csub = c.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    up = add_json_flag(csub.add_parser("up", help="start members on 127.0.0.11, 127.0.0.12, ..."))
    up.add_argument("-n", "--members", type=_count(1), default=3, help="members to start")
    up.add_argument("--base-port", type=_PORT, default=5701,
                    help="port of the first member, the others follow (0: any free ports)")
    up.add_argument("--detach", action="store_true",
                    help="leave the members running and write --state-file")
    up.add_argument("--state-file", default=STATE_FILE, help="where --detach writes PIDs")
    up.add_argument("--keep-logs", action="store_true",
                    help="keep the members' log folder when they stop (default: removed; "
                         "with --detach: by `cluster down`)")
    up.add_argument("--cluster-name", default="hzfast", help="the cluster's name")
    _cluster_flags(up)
    up.set_defaults(func=cmd_cluster_up)
    st = add_json_flag(csub.add_parser("status", help="members, stamps, migrations in flight"))
    st.add_argument("--address", type=_address, action="append", default=None,
                    metavar="HOST:PORT", help="a member to ask (default: the state file's)")
    st.add_argument("--state-file", default=STATE_FILE, help="written by cluster up --detach")
    st.add_argument("--once", action="store_true", help="print one snapshot, not a live view")
    st.add_argument("--seconds", type=float, default=600.0, help="how long the live view runs")
    _security_flags(st, member=False)
    st.set_defaults(func=cmd_cluster_status)
    down = csub.add_parser("down", help="stop the members of a detached cluster by PID")
    down.add_argument("--state-file", default=STATE_FILE, help="written by cluster up --detach")
    down.add_argument("--keep-logs", action="store_true",
                      help="keep the members' log folder (default: removed with them)")
    down.set_defaults(func=cmd_cluster_down)

    ch = add_json_flag(subparsers.add_parser(
        "chaos", help="kill -9 members of a real local cluster mid-migration; count losses"))
    ch.add_argument("--members", type=_count(2), default=4, help="members at start")
    ch.add_argument("--entries", type=_count(0), default=20_000, help="entries written")
    ch.add_argument("--kills", type=_count(0), default=3,
                    help="members killed (one at a time, each after a join); with --nemesis "
                         "other than kill: the fault rounds, unless --faults")
    ch.add_argument("--nemesis", type=_nemeses, default="kill", metavar="KIND[,KIND...]",
                    help="the faults, taken in turn: kill (SIGKILL after a join), pause "
                         "(SIGSTOP/SIGCONT), partition (iptables rules between the members' "
                         "own 127.x addresses; needs root and iptables)")
    ch.add_argument("--faults", type=_count(0), default=None,
                    help="fault rounds (default: --kills)")
    ch.add_argument("--pause-members", type=_count(1), default=1,
                    help="members each pause stops (with --target master: the master first)")
    ch.add_argument("--pause-seconds", type=_seconds, default=5.0, help="how long a pause lasts")
    ch.add_argument("--partition-shape", choices=SHAPES, default="majority",
                    help="how a partition cuts the members (Jepsen's shapes)")
    ch.add_argument("--partition-seconds", type=_seconds, default=5.0,
                    help="how long a partition lasts")
    ch.add_argument("--heal-timeout", type=_seconds, default=30.0,
                    help="how long to wait, after a pause or partition, for one member list")
    ch.add_argument("--seed", type=_count(0), default=0, help="seed of the kill choices")
    ch.add_argument("--target", choices=("random", "master", "joiner"), default="random",
                    help="whom each kill hits: a random member, the master, or the member "
                         "that just joined (a pause: master or random members)")
    ch.add_argument("--kill-after-commits", type=_count(0), default=0,
                    help="wait for this many committed migrations after each join before "
                         "the kill (default: kill as soon as migrations are active)")
    ch.add_argument("--scenario", choices=("5444",), default=None,
                    help="Hazelcast issue #5444 instead: 2 members, one killed, a joiner "
                         "killed mid re-replication (--kill-after-commits, default 30)")
    ch.add_argument("--value-bytes", type=_count(1), default=100, help="bytes per value")
    ch.add_argument("-p", "--partitions", type=_count(1), default=271, help="partitions")
    ch.add_argument("-b", "--backups", type=_count(1), default=1, help="synchronous backups")
    ch.add_argument("--max-parallel-migrations", type=_count(1), default=10,
                    help="migrations a member takes part in at once")
    ch.add_argument("--design", choices=("safe", "legacy"), default="safe",
                    help="safe (Hazelcast 3.7+) or legacy (pre-3.7, loses data)")
    ch.set_defaults(func=cmd_chaos)


def _secret(args: argparse.Namespace) -> bytes:
    from hzfast.node.auth import load_secret
    if not args.secret_file:
        return b""
    try:
        return load_secret(args.secret_file)
    except ValueError as exc:
        raise UserError(f"--secret-file: {exc}") from None


def _client_options(args: argparse.Namespace, state: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """A client's secret, cluster name and TLS from the flags, else the state file."""
    from hzfast.node.auth import client_ssl, load_secret
    opts: dict[str, Any] = {"secret": _secret(args), "cluster_name": args.cluster_name,
                            "ssl": None}
    if state is not None and not args.secret_file and isinstance(state.get("secret_file"), str):
        try:
            opts["secret"] = load_secret(state["secret_file"])
        except ValueError as exc:
            raise UserError(f"--state-file: {exc}") from None
        opts["cluster_name"] = str(state.get("cluster_name", args.cluster_name))
    if args.tls_cert or args.tls_ca:
        try:
            opts["ssl"] = client_ssl(args.tls_cert or "", args.tls_key or "", args.tls_ca or "")
        except (OSError, ValueError) as exc:
            raise UserError(f"--tls-cert/--tls-key/--tls-ca: {exc}") from None
    return opts


def _settings(args: argparse.Namespace) -> Any:
    from hzfast.node import Settings
    member = hasattr(args, "max_connections")
    extra: dict[str, Any] = {}
    if member:
        for flag in ("tls_cert", "tls_key", "tls_ca"):
            path = getattr(args, flag)
            if path and not os.path.isfile(path):
                raise UserError(f"--{flag.replace('_', '-')}: {path}: no such file")
        extra = {"cluster_name": args.cluster_name, "secret": _secret(args),
                 "tls_cert": args.tls_cert or "", "tls_key": args.tls_key or "",
                 "tls_ca": args.tls_ca or "",
                 "max_connections": args.max_connections, "max_frame": args.max_frame,
                 "auth_timeout_ms": args.auth_timeout_ms,
                 "idle_timeout_ms": args.idle_timeout_ms}
    try:
        return Settings(host=getattr(args, "host", "127.0.0.1"), port=getattr(args, "port", 0),
                        join=getattr(args, "join", None), partitions=args.partitions,
                        backups=args.backups,
                        max_parallel_migrations=args.max_parallel_migrations,
                        design=args.design, heartbeat_ms=args.heartbeat_ms,
                        suspect_ms=args.suspect_ms, timeout_ms=args.timeout_ms,
                        min_cluster_size=getattr(args, "min_cluster_size", "majority"),
                        merge_policy=getattr(args, "merge_policy", "put_if_absent"),
                        link_delay_ms=args.link_delay_ms, **extra)
    except (ValueError, TypeError) as exc:      # Settings.port -> --port
        raise UserError(re.sub(r"Settings\.(\w+)", lambda m: "--" + m[1].replace("_", "-"),
                               str(exc))) from exc


def cmd_node(args: argparse.Namespace) -> int:
    """``hzfast node``: run one member until SIGTERM or Ctrl-C."""
    from hzfast.node.serve import serve
    return serve(_settings(args), log_level=args.log_level)


def cmd_cluster_up(args: argparse.Namespace) -> int:
    """``hzfast cluster up``: start members; live status until Ctrl-C (or ``--detach``)."""
    from hzfast.node.chaos import LocalCluster, remove_logs
    _settings(args)                       # every setting checked before a process starts
    if args.base_port and args.base_port + args.members - 1 > 65535:
        raise UserError(f"--base-port: {args.base_port} + {args.members} members runs past "
                        f"port 65535")
    if args.detach:
        _refuse_running(args.state_file)
        check_output_path(args.state_file, "--state-file")
    cluster = LocalCluster(partitions=args.partitions, backups=args.backups,
                           max_parallel_migrations=args.max_parallel_migrations,
                           design=args.design, heartbeat_ms=args.heartbeat_ms,
                           suspect_ms=args.suspect_ms, timeout_ms=args.timeout_ms,
                           min_cluster_size=args.min_cluster_size,
                           merge_policy=args.merge_policy,
                           log_level=args.log_level, link_delay_ms=args.link_delay_ms,
                           cluster_name=args.cluster_name)
    detached = False
    try:
        for i in range(args.members):
            port = args.base_port + i if args.base_port else 0
            join = cluster.procs[0].address if cluster.procs else None
            try:
                cluster.start_member(join, port=port)
            except RuntimeError as exc:
                raise UserError(f"--base-port: {exc}") from exc
        members = [{"member": p.member, "pid": p.pid, "host": p.host, "port": p.port,
                    "log": p.log} for p in cluster.procs]
        if args.detach:
            with open(args.state_file, "w") as f:
                json.dump({"members": members, "log_dir": cluster.log_dir,
                           "remove_log_dir": not args.keep_logs,
                           "secret_file": cluster.secret_file,
                           "cluster_name": cluster.cluster_name}, f, indent=2)
            emit(args, {"members": members, "state_file": args.state_file,
                        "secret_file": cluster.secret_file},
                 lambda con, d: con.print(
                     f"{len(members)} members up (logs in {cluster.log_dir}); "
                     f"state in {args.state_file}; secret in {cluster.secret_file}; "
                     f"`hzfast cluster down` stops them"))
            cluster.procs = []                     # detached: not ours to stop any more
            detached = True
            return 0
        if args.json:
            emit(args, {"members": members, "secret_file": cluster.secret_file},
                 lambda con, d: None)
        else:
            print(f"cluster secret in {cluster.secret_file} (hzfast node --secret-file)",
                  file=sys.stderr)
        addrs = [p.address for p in cluster.procs]
        asyncio.run(_live(addrs, 1e9, once=args.json, options=cluster.client_options()))
        return 0
    except KeyboardInterrupt:
        print(f"{args.prog_name}: interrupted; stopping the members", file=sys.stderr)
        return 130                 # the shell's status for SIGINT
    finally:
        cluster.stop_all()
        if not detached:                         # (its own temporary folder)
            with contextlib.suppress(OSError):   # the secret goes with the cluster
                os.remove(cluster.secret_file)
            if args.keep_logs:
                print(f"member logs kept in {cluster.log_dir}", file=sys.stderr)
            else:
                remove_logs(cluster.log_dir)


def _refuse_running(path: str) -> None:
    """Refuse to overwrite the state file of a detached cluster that is still running (its
    members would be orphaned: `cluster down` reads only the newest file)."""
    if not os.path.exists(path):
        return
    try:
        state = _read_state(path)
    except UserError:
        raise UserError(f"--state-file: {path}: exists and is not a cluster state file; "
                        f"remove it or pass another --state-file") from None
    running = [int(m["pid"]) for m in state["members"] if _alive(int(m["pid"]))]
    if running:
        down = "hzfast cluster down" + ("" if path == STATE_FILE else f" --state-file {path}")
        raise UserError(f"--state-file: {path}: a detached cluster is running (PIDs "
                        f"{', '.join(map(str, running))}); stop it with `{down}` "
                        f"or pass another --state-file")


def _read_state(path: str, hint: str = "start with `hzfast cluster up --detach`, or pass "
                                        "--address") -> dict[str, Any]:
    try:
        with open(path) as f:
            state: dict[str, Any] = json.load(f)
        members = state["members"]
        assert isinstance(members, list) and all(
            isinstance(m["pid"], int) and isinstance(m["port"], int) for m in members)
    except FileNotFoundError:
        raise UserError(f"--state-file: {path}: not found ({hint})") from None
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        raise UserError(f"--state-file: {path}: not a cluster state file") from None
    return state


def cmd_cluster_status(args: argparse.Namespace) -> int:
    """``hzfast cluster status``: one snapshot (``--once``/``--json``) or a live view."""
    if args.address:
        addrs = list(args.address)
        options = _client_options(args)
    else:
        state = _read_state(args.state_file)
        addrs = [(str(m.get("host", "127.0.0.1")), int(m["port"])) for m in state["members"]]
        options = _client_options(args, state)
    if args.json or args.once or not sys.stdout.isatty():
        snap = asyncio.run(_snapshot(addrs, options))
        emit(args, snap, lambda con, d: con.print(_status_table(d)))
        return 0 if snap["reachable"] else 1
    asyncio.run(_live(addrs, args.seconds, once=False, options=options))
    return 0


def cmd_cluster_down(args: argparse.Namespace) -> int:
    """``hzfast cluster down``: SIGTERM every PID of the state file, then SIGKILL."""
    from hzfast.node.chaos import remove_logs
    state = _read_state(args.state_file, "no detached cluster to stop here: `hzfast cluster "
                                         "up --detach` writes it")
    stopped = 0
    for m in state["members"]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(m["pid"]), signal.SIGTERM)
            stopped += 1
    end = time.monotonic() + 5
    for m in state["members"]:
        while time.monotonic() < end and _alive(int(m["pid"])):
            time.sleep(0.05)
        if _alive(int(m["pid"])):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(m["pid"]), signal.SIGKILL)
    os.remove(args.state_file)
    logs = state.get("log_dir")
    secret = state.get("secret_file")
    if isinstance(logs, str) and isinstance(secret, str) and logs \
            and secret == os.path.join(logs, "secret"):
        with contextlib.suppress(OSError):       # the generated secret goes with the cluster
            os.remove(secret)
    if state.get("remove_log_dir") is True and isinstance(logs, str) and logs \
            and not args.keep_logs and remove_logs(logs):
        print(f"stopped {stopped} member processes; removed their logs ({logs})")
    elif isinstance(logs, str) and logs:
        print(f"stopped {stopped} member processes; their logs are in {logs}")
    else:
        print(f"stopped {stopped} member processes")
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    return True


async def _snapshot(addrs: list[tuple[str, int]], options: dict[str, Any]) -> dict[str, Any]:
    from hzfast.node import Client
    from hzfast.node.chaos import cluster_status, settled
    client = Client(addrs, timeout=2.0, **options)
    try:
        got = await cluster_status(client, addrs)
        # the members the answering ones see, asked too (one joined by hand, say)
        seen = {(str(h), int(p)) for s in got.values() if s is not None
                for _, h, p in s["members"]}
        more = sorted(seen - set(got))
        if more:
            got.update(await cluster_status(client, more))
            addrs = list(got)
    finally:
        client.close()
    members = [s if s is not None else {"address": f"{h}:{p}", "unreachable": True}
               for (h, p), s in got.items()]
    ok = [s for s in got.values() if s is not None]
    return {"reachable": len(ok), "asked": len(addrs),
            "stamps_agree": len({s["stamp"] for s in ok}) == 1 if ok else False,
            "settled": settled(list(got.values()), len(addrs)),
            "migrations_in_flight": sum(s["active"] for s in ok),
            "members": members}


async def _live(addrs: list[tuple[str, int]], seconds: float, once: bool,
                options: dict[str, Any]) -> None:
    from rich.live import Live
    snap = await _snapshot(addrs, options)
    if once:
        return
    end = time.monotonic() + seconds
    with Live(_status_table(snap), refresh_per_second=4) as live:
        while time.monotonic() < end:              # Ctrl-C ends it earlier
            await asyncio.sleep(0.5)
            snap = await _snapshot(addrs, options)
            live.update(_status_table(snap))


def _status_table(d: dict[str, Any]) -> Table:
    from rich.table import Table
    if not d["reachable"]:
        title = f"no member answers ({d['asked']} asked)"
    else:
        title = (f"{d['reachable']} of {d['asked']} members answer; stamps "
                 f"{'agree' if d['stamps_agree'] else 'differ'}; "
                 f"{d['migrations_in_flight']} migrations in flight"
                 f"{'; settled' if d['settled'] else ''}")
    t = Table(title=title)
    for col in ("member", "port", "pid", "master", "state", "stamp", "owned", "active",
                "entries", "data", "committed", "failed"):
        t.add_column(col, justify="right" if col not in ("state",) else "left")
    for s in d["members"]:
        if s.get("unreachable"):
            t.add_row("?", s["address"], "", "", "[red]unreachable[/]", *[""] * 7)
            continue
        stamp = s["stamp"]
        t.add_row(str(s["member"]), str(s["port"]), str(s["pid"]),
                  "yes" if s["master"] == s["member"] else "",
                  s["state"], f"{stamp & 0xFFFFFFFF:08x}" if stamp is not None else "-",
                  str(s["owned"]), str(s["active"]), human_count(s["entries"]),
                  human_bytes(s["bytes"]), str(s["migrations_committed"]),
                  str(s["migrations_failed"]))
    return t


def cmd_chaos(args: argparse.Namespace) -> int:
    """``hzfast chaos``: the kill -9 test; exit 1 when the safe design lost an entry."""
    from hzfast.node.chaos import run_5444, run_chaos
    from hzfast.node.client import ClientError
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if not args.json else None
    if args.pause_members > args.members:
        raise UserError(f"--pause-members: {args.pause_members} is more than --members "
                        f"{args.members}")
    if args.scenario is None and args.backups >= args.members:
        raise UserError(f"-b/--backups: {args.backups} backups need at least "
                        f"{args.backups + 1} members (--members {args.members}): a write is "
                        f"acknowledged only once every backup has it")
    try:
        if args.scenario == "5444":
            out = asyncio.run(run_5444(design=args.design, entries=args.entries,
                                       partitions=args.partitions, value_bytes=args.value_bytes,
                                       kill_after_commits=args.kill_after_commits or 30))
            out.setdefault("members", 2)
            out.setdefault("seed", args.seed)
            emit(args, out, _render_chaos)
            return 1 if args.design == "safe" and out["entries_lost"] else 0
        out = asyncio.run(run_chaos(
            members=args.members, entries=args.entries, kills=args.kills, seed=args.seed,
            design=args.design, partitions=args.partitions, backups=args.backups,
            max_parallel_migrations=args.max_parallel_migrations,
            value_bytes=args.value_bytes, target=args.target,
            kill_after_commits=args.kill_after_commits, progress=say,
            nemesis=args.nemesis, faults=args.faults, pause_members=args.pause_members,
            pause_seconds=args.pause_seconds, partition_shape=args.partition_shape,
            partition_seconds=args.partition_seconds, heal_timeout=args.heal_timeout))
    except ValueError as exc:          # a partition shape that needs more members, say
        raise UserError(f"--partition-shape: {exc}") from exc
    except (RuntimeError, ConnectionError, ClientError) as exc:
        raise UserError(f"the run failed: {exc}", status=1) from exc
    emit(args, out, _render_chaos)
    bad = args.design == "safe" and (out["entries_lost"] or not out["final_stamp_agreed"])
    return 1 if bad else 0


def _render_chaos(con: Console, d: dict[str, Any]) -> None:
    con.print(kv_table(f"chaos: {d['members']} members, {d['design']} design, seed {d['seed']}", [
        ("entries acknowledged", (f"{human_count(d['entries_acknowledged'])} of "
                                  f"{human_count(d['entries'])}")),
        ("entries lost", human_count(d["entries_lost"])),
        ("kills / joins", f"{d['kills']} / {d['joins']}"),
        *([("pauses / partitions", f"{d['pauses']} / {d['network_partitions']}"),
           ("splits seen", f"{d['splits_seen']} (at most {d['max_lists']} member lists at once)"),
           ("heal time", ", ".join("never" if h is None else f"{h} s"
                                   for h in d["heal_seconds"])),
           ("final member lists", " | ".join(map(str, d["final_lists"]))),
           ("lost by kind", ", ".join(f"{k} {v}" for k, v in d["lost_by_kind"].items()))]
          if d.get("faults_log") else []),
        ("killed", ", ".join(f"m{k['member']} ({k['role']}, {k['active_migrations']} active)"
                             for k in d["killed"]) or "none"),
        ("migrations committed / failed",
         f"{d['migrations_committed']} / {d['migrations_failed']}"),
        ("final stamps agree", "yes" if d["final_stamp_agreed"] else "NO"),
        *([("not settled", "; ".join(d["unsettled"]))] if d.get("unsettled") else []),
        ("time", f"{d['seconds']} s"),
    ]))
