"""hzfast.protocol: the safe migration protocol as a sans-I/O state machine.

One :class:`Node` per member runs the same code; the master role is derived from the
membership view (the oldest member). A runtime feeds :meth:`Node.handle` events
(:mod:`hzfast.protocol.events`) with the current time and carries out what it returns
(:mod:`hzfast.protocol.outputs`): messages to send, timers, effects on replica data, and
marks naming protocol steps. See docs/design.md §7 and §11.
"""
from hzfast.protocol import events, kinds, messages, outputs
from hzfast.protocol.events import (
                                     EffectDone,
                                     Event,
                                     MembershipChanged,
                                     MessageReceived,
                                     TimerFired,
)
from hzfast.protocol.kinds import EffectKind, MarkName, Phase, Stage, TimerKind
from hzfast.protocol.messages import MigrationInfo, MigrationStatus, negative_reply
from hzfast.protocol.node import DESIGNS, Config, MemberState, Node
from hzfast.protocol.outputs import (
                                     EFFECT_KINDS,
                                     MARKS,
                                     Effect,
                                     Mark,
                                     Output,
                                     Send,
                                     SetTimer,
)
from hzfast.protocol.tables import DivergedTableError, merge_tables

__all__ = [
                                     "DESIGNS",
                                     "EFFECT_KINDS",
                                     "MARKS",
                                     "Config",
                                     "DivergedTableError",
                                     "Effect",
    "EffectKind",
                                     "EffectDone",
                                     "Event",
                                     "Mark",
    "MarkName",
                                     "MemberState",
                                     "MembershipChanged",
                                     "MessageReceived",
                                     "MigrationInfo",
                                     "MigrationStatus",
                                     "Node",
                                     "Output",
    "Phase",
                                     "Send",
                                     "SetTimer",
    "Stage",
                                     "TimerFired",
    "TimerKind",
                                     "events",
    "kinds",
                                     "merge_tables",
                                     "messages",
    "negative_reply",
                                     "outputs",
]
