"""hzfast.node: a real runtime for the protocol — asyncio over TCP, one process a member.

:class:`Member` hosts one :class:`hzfast.protocol.Node` and does what the protocol leaves
to a runtime: authentication and TLS (:mod:`hzfast.node.auth`), framing
(:mod:`hzfast.node.wire`), timers, replica data and the effects on
it, heartbeats, joins through the master, and client requests. :class:`Client` writes and
reads through the cluster. :mod:`hzfast.node.chaos` starts member processes on loopback
addresses of their own, kills them with SIGKILL mid-migration, pauses and partitions them
(:mod:`hzfast.node.nemesis`) and checks that no acknowledged entry is lost. See
docs/node.md. ``import hzfast`` does not import this package.
"""
from hzfast.node import auth, wire
from hzfast.node.client import Client, ClientError
from hzfast.node.runtime import Member, Settings
from hzfast.node.store import Store

__all__ = ["Client", "ClientError", "Member", "Settings", "Store", "auth", "wire"]
