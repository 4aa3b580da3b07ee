"""Membership as a sans-I/O state machine: who is in the cluster, who is master, and
whether this member may serve (docs/design.md §13).

One :class:`Membership` per member. Like :class:`hzfast.protocol.Node` it performs no
I/O: :meth:`Membership.handle` takes one event (a message, the heartbeat timer) and the
time, and returns outputs: messages to send (:class:`~hzfast.protocol.outputs.Send`), the
one timer it needs (:class:`~hzfast.protocol.outputs.SetTimer`), marks, and
:class:`ListChanged` / :class:`Removed` when this member's committed member list changes or
it learns it is out of the cluster.

The rules, in short (docs/design.md §13 states them whole, with the reasons): lists are
``(term, version, members)``, oldest member first, the first the master, ordered by their
key; a master changes its list within its term, a new master claims the next one; a list
commits once the quorum of the previous one (with split-brain protection,
``min_cluster_size``) or every member of the new one (without) accepted it; heartbeats
carry the sender's key, its clock and an echo of the receiver's last send time, and are
ignored when older than half the timeout; a member whose own timer ran late that much was
paused and suspects nobody; with protection a member serves only on a lease of fresh
echoes from its quorum, and a removal commits only after the removed member's lease ran
out; a member shown a newer list without itself is out (:class:`Removed`) and rejoins
under a new id; without protection, clusters that meet merge, the smaller into the larger.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hzfast.protocol._build import Builder
from hzfast.protocol.common import MARK, SEND, SET_TIMER
from hzfast.protocol.events import Event, MessageReceived, TimerFired
from hzfast.protocol.memberlists import (
    MEMBERSHIP_MESSAGES,
    TICK,
    Claim,
    ClaimReply,
    Heartbeat,
    JoinRequest,
    ListAccept,
    ListChanged,
    ListCommit,
    ListProposal,
    ListRequest,
    Malformed,
    MemberList,
    MembershipConfig,
    MembershipMark,
    MergeProbe,
    Removed,
    valid_key,
    valid_list,
    valid_members,
)
from hzfast.protocol.messages import Message
from hzfast.protocol.outputs import Output

# (the heartbeat made at every tick, built straight into its slots, as the outputs are)
_HEARTBEAT = Builder(Heartbeat)

__all__ = ["MEMBERSHIP_MESSAGES", "TICK", "Claim", "ClaimReply", "Heartbeat", "JoinRequest",
           "ListAccept", "ListChanged", "ListCommit", "ListProposal", "ListRequest",
           "MemberList", "Membership", "MembershipConfig", "MembershipMark", "MergeProbe",
           "Removed"]


class _Round:
    """A change in flight: the proposer's side of one successor of ``base``."""

    __slots__ = (
        "acks",
        "base",
        "base_members",
        "claim_term",
        "deadline",
        "found",
        "lst",
        "members",
        "recovered",
    )

    def __init__(self, base: MemberList, deadline: int) -> None:
        self.base = base.key
        self.base_members = base.members
        self.claim_term = 0                   # > 0: a claim in its first phase
        self.members: tuple[int, ...] = ()    # the claim's members
        self.lst: MemberList | None = None    # the second phase's list
        self.acks: set[int] = set()
        self.found: MemberList | None = None  # the highest accepted list the grants named
        self.recovered = False
        self.deadline = deadline


# ---------------------------------------------------------------------------- the machine
class Membership:
    """One member's membership state machine (sans-I/O).

    Parameters
    ----------
    me : int
        This member's id (unique over the cluster's life).
    config : MembershipConfig, optional
    founding : MemberList, optional
        The committed list this member starts in (the cluster's first members). Without
        it the member starts outside any cluster and joins through ``seeds``.
    seeds : tuple of int
        Members to send join requests to (and, for a master without protection, to probe
        for another cluster).

    Notes
    -----
    :meth:`handle` is the only mutator; :meth:`may_serve` says whether this member may
    take writes and run migrations now.
    """

    def __init__(self, me: int, config: MembershipConfig | None = None, *,
                 founding: MemberList | None = None, seeds: tuple[int, ...] = ()) -> None:
        if not isinstance(me, int) or isinstance(me, bool) or not 0 <= me < 2**31 - 1:
            raise ValueError(f"me must be an int in [0, 2**31 - 1), got {me!r}")
        if config is None:
            config = MembershipConfig()
        if not isinstance(config, MembershipConfig):
            raise TypeError(f"config must be a MembershipConfig, got {type(config).__name__}")
        if founding is not None and (not valid_list(founding) or me not in founding.members):
            raise ValueError("founding must be a valid MemberList that lists this member")
        if not isinstance(seeds, tuple) or not all(type(m) is int for m in seeds):
            raise TypeError("seeds must be a tuple of member ids")
        self.me = me
        self.config = config
        self._T = config.heartbeat_timeout
        self._wait = config.proposal_timeout or config.heartbeat_timeout
        self.list: MemberList | None = founding
        self.removed = False
        #: the highest key promised (a claim's is ``(term, 0)``) or accepted
        self.promised: tuple[int, int] = founding.key if founding else (0, 0)
        #: the list accepted as the successor of ``_accepted_base``, not yet committed
        self.accepted: MemberList | None = None
        self._accepted_base: tuple[int, int] = (0, 0)
        #: the members this member vouches for in its echoes (those of what it promised)
        self._vouch: frozenset[int] = frozenset(founding.members if founding else ())
        self._heard: dict[int, int] = {}        # member -> receipt time of a fresh heartbeat
        self._their_sent: dict[int, int] = {}   # member -> its send time of that heartbeat
        #: member -> (my send time it echoed, its promise then)
        self._echo: dict[int, tuple[int, tuple[int, int]]] = {}
        self._known: set[int] = (set(seeds) | set(founding.members if founding else ())) \
            - {me}
        self._joiners: set[int] = set()
        #: members a list this member adopted left out: an id is never admitted again (a
        #: removed member rejoins under a new id, with a node that starts afresh)
        self._departed: set[int] = set()
        self._round: _Round | None = None
        self._adopted_at = 0                    # when the committed list was adopted
        self._asking_since: int | None = None   # a joiner: since when it asks
        self._removed_by: MemberList | None = None   # the committed list that left me out
        self._last_vouch: dict[int, int] = {}   # member -> when I last echoed it
        self._their_promised: dict[int, tuple[int, int]] = {}
        #: acceptances held back until the members they remove can no longer serve:
        #: (ready at, proposer, the list's key)
        self._deferred: list[tuple[int, int, tuple[int, int]]] = []
        self._now = 0
        self._last_tick = 0
        self._started = False
        self._out: list[Output] = []

    # ------------------------------------------------------------------ queries
    @property
    def members(self) -> tuple[int, ...]:
        """The committed list's members (empty outside a cluster)."""
        return self.list.members if self.list is not None and not self.removed else ()

    @property
    def newest(self) -> MemberList | None:
        """The newest committed list this member knows: its own, or, once it is out, the
        one that left it out."""
        return self._removed_by if self.removed and self._removed_by else self.list

    @property
    def master(self) -> int:
        """The committed list's master (-1 outside a cluster)."""
        m = self.members
        return m[0] if m else -1

    @property
    def is_master(self) -> bool:
        return self.master == self.me

    def suspects(self, now: int) -> set[int]:
        """The members of the committed list silent for the heartbeat timeout at ``now``."""
        T = self._T
        heard = self._heard
        return {m for m in self.members if m != self.me and now - heard.get(m, now) >= T}

    def may_serve(self, now: int) -> bool:
        """Whether this member may take writes and run migrations at ``now``.

        Outside a cluster, never. Without split-brain protection, always inside one. With
        it: the committed list has at least the quorum's members, this member accepted
        nothing newer, and it holds echoes of its own heartbeats sent less than half the
        heartbeat timeout ago from enough members that promised this same list to make
        the quorum with itself (docs/design.md §13)."""
        lst = self.list
        if lst is None or self.removed:
            return False
        cfg = self.config
        if not cfg.protected:
            return True
        members = lst.members
        q = cfg.quorum(len(members))
        key = lst.key
        if len(members) < q or self.promised != key or self.accepted is not None:
            return False
        fresh = self._T // 2
        n = 1
        echo, me = self._echo, self.me
        for m in members:
            if n >= q:
                break
            e = echo.get(m)
            if e is not None and m != me and e[1] == key and now - e[0] < fresh:
                n += 1
        return n >= q

    def discover(self, ids: tuple[int, ...]) -> None:
        """Learn of members (a runtime's discovery), to ask them to admit this one or for
        their list when this one hears nobody of its own (docs/design.md §13.3(a))."""
        if not isinstance(ids, tuple) or not all(type(m) is int for m in ids):
            raise TypeError("ids must be a tuple of member ids")
        self._known |= set(ids) - {self.me}

    # ------------------------------------------------------------------ events
    def handle(self, event: Event, now: int) -> list[Output]:
        """Take one event at time ``now``; return the outputs (see the module's doc).

        A malformed message, one from a member that is not its sender, or one that does
        not fit this member's lists is rejected with a ``membership_rejected`` mark;
        nothing a network delivers raises.

        Raises
        ------
        TypeError
            ``event`` is not a :class:`MessageReceived` or :class:`TimerFired`, or ``now``
            is not an int.
        """
        if type(now) is not int:
            raise TypeError(f"now must be an int, got {type(now).__name__}")
        self._now = now
        self._out = []
        if not self._started:
            self._start()
        if isinstance(event, MessageReceived):
            m = event.message
            handler = _HANDLERS.get(type(m))
            if handler is None or getattr(m, "sender", None) != event.sender:
                self._reject(event.sender, m, "not a membership message from its sender")
            elif not self.removed:
                try:
                    handler(self, m)
                except Malformed as e:
                    self._reject(event.sender, m, str(e))
            elif type(m) is Heartbeat and self._removed_by is not None and valid_key(m.key) \
                    and m.key < self._removed_by.key:
                # out of the cluster, still reachable: a member behind learns the list
                # that left this one out (it may leave it out too)
                self._send(m.sender, ListCommit(self.me, self._removed_by))
        elif isinstance(event, TimerFired):
            if event.key == TICK and not self.removed:
                self._tick()
        else:
            raise TypeError(f"event must be MessageReceived or TimerFired, got "
                            f"{type(event).__name__}")
        out, self._out = self._out, []
        return out

    def _start(self) -> None:
        self._started = True
        now = self._now
        for m in self.members:
            self._heard[m] = now
        self._last_tick = now
        if self.list is None:
            self._ask_to_join()
        self._out.append(SET_TIMER(TICK, now + self.config.heartbeat_interval))

    # ------------------------------------------------------------------ the tick
    def _tick(self) -> None:
        now = self._now
        late = now - self._last_tick - self.config.heartbeat_interval
        self._last_tick = now
        self._out.append(SET_TIMER(TICK, now + self.config.heartbeat_interval))
        if late >= self._T // 2:
            # my own timer ran late: I was paused; nobody's silence counts from before
            self._mark(MembershipMark.PAUSE_DETECTED, f"timer {late} late")
            for m in self.members:
                self._heard[m] = now
        if self.list is None:
            if (not self.config.protected and self._asking_since is not None
                    and now - self._asking_since >= 2 * self._T):
                # nobody admitted me: without protection, I found a cluster of my own
                # (it merges into a larger one when they meet); with it, I keep asking
                self._asking_since = None
                self._adopt(MemberList(1, 1, (self.me,)))
            else:
                self._ask_to_join()
            return
        self._heartbeats()
        if self._deferred:
            self._release()
        others = [m for m in self.list.members if m != self.me]
        if others and set(others) <= self.suspects(now):
            # I hear nobody of my list: it may have left me out unheard: ask everyone
            for m in sorted(self._known - set(self.list.members)):
                self._send(m, ListRequest(self.me))
        r = self._round
        if r is not None and now >= r.deadline:
            self._round = None                    # timed out: the duties below retry
        if self._round is None:
            if self.is_master:
                self._master_duties()
            else:
                self._follower_duties()

    def _heartbeats(self) -> None:
        lst = self.list
        assert lst is not None
        me, now, key, promised = self.me, self._now, lst.key, self.promised
        vouch, sent, last = self._vouch, self._their_sent, self._last_vouch
        for m in lst.members:
            if m != me:
                echo = sent.get(m, -1) if m in vouch else -1
                if echo >= 0:
                    last[m] = now
                self._send(m, _HEARTBEAT(me, key, promised, now, echo))

    def _master_duties(self) -> None:
        lst = self.list
        assert lst is not None
        gone = self.suspects(self._now)
        joiners = tuple(sorted(self._joiners - set(lst.members) - self._departed))
        key = lst.key
        if self.promised != key or self.accepted is not None or any(
                self._their_promised.get(m, key) > key for m in lst.members):
            # an earlier round left a promise or an accepted list behind (it may have
            # been committed): only a new term's claim may settle it (and its changes)
            self._claim(lst, gone, joiners)
        elif gone or joiners:
            members = tuple(m for m in lst.members if m not in gone) + joiners
            r = _Round(lst, self._now + self._wait)
            self._round = r
            self._phase2(r, MemberList(lst.term, lst.version + 1, members))
        else:
            self._probe()

    def _follower_duties(self) -> None:
        lst = self.list
        assert lst is not None
        gone = self.suspects(self._now)
        i = lst.members.index(self.me)
        if all(m in gone for m in lst.members[:i]):
            self._claim(lst, gone, ())

    def _claim(self, lst: MemberList, gone: set[int], joiners: tuple[int, ...]) -> None:
        """Phase 1 of a change in a new term: ask the members of ``lst`` to grant it."""
        term = max(lst.term, self.promised[0]) + 1
        r = _Round(lst, self._now + self._wait)
        r.claim_term = term
        r.members = (self.me,) + tuple(m for m in lst.members if m not in gone
                                       and m != self.me) + joiners
        self._round = r
        self._mark(MembershipMark.CLAIMED, f"term {term} over {lst.key}")
        ok, accepted = self._grant(self.me, lst.key, term, r.members)
        if not ok:
            self._round = None
            return
        self._granted(r, self.me, accepted)
        for m in lst.members:
            if m != self.me and m not in gone:
                self._send(m, Claim(self.me, lst.key, term, r.members))

    def _ask_to_join(self) -> None:
        if self._asking_since is None:
            self._asking_since = self._now
        for m in sorted(self._known):
            self._send(m, JoinRequest(self.me, self.me))

    def _probe(self) -> None:
        """A master without split-brain protection looks for another cluster among the
        members it once knew (with protection, a side that was cut off rejoins instead)."""
        lst = self.list
        assert lst is not None
        if self.config.protected:
            return
        for m in sorted(self._known - set(lst.members)):
            self._send(m, MergeProbe(self.me, lst))

    # ------------------------------------------------------------------ proposer
    def _granted(self, r: _Round, who: int, accepted: MemberList | None) -> None:
        r.acks.add(who)
        cfg = self.config
        if (cfg.protected and accepted is not None
                and (r.found is None or accepted.key > r.found.key)
                and len(accepted.members) >= cfg.quorum(len(r.base_members))):
            # (a list shorter than the quorum was never committed; without protection
            # nothing is kept from an earlier round: two sides may commit anyway)
            r.found = accepted
        if not self._enough(r, tuple(m for m in r.members if m in r.base_members)):
            return                    # (a joiner in the claim has no list to grant from)
        # phase 2: the highest list a granter accepted for this base may have been
        # committed; it goes on, in the new term; else the claim's own list
        members = r.found.members if r.found is not None else r.members
        r.recovered = r.found is not None
        r.acks = set()
        self._phase2(r, MemberList(r.claim_term, 1, members))

    def _phase2(self, r: _Round, lst: MemberList) -> None:
        r.claim_term = 0
        r.lst = lst
        self._mark(MembershipMark.PROPOSED, f"{lst.key} {lst.members}")
        why = self._acceptable(self.me, r.base, lst, r.recovered)
        if why:                           # (my own suspicion changed since the claim)
            self._round = None
            return
        for m in sorted(set(lst.members) | set(r.base_members)):
            if m != self.me:
                self._send(m, ListProposal(self.me, r.base, lst, r.recovered))
        self._accept_and_answer(self.me, r.base, lst)

    def _enough(self, r: _Round, members: tuple[int, ...]) -> bool:
        """Whether ``r.acks`` make the rule's acceptors: with protection, the quorum of
        the base list's members (and a list at least that long); without it, every
        member of ``members``."""
        cfg = self.config
        if cfg.protected:
            q = cfg.quorum(len(r.base_members))
            return len(members) >= q and len(r.acks & set(r.base_members)) >= q
        return set(members) <= r.acks

    def _maybe_commit(self, r: _Round) -> None:
        lst = r.lst
        if lst is None or not self._enough(r, lst.members):
            return
        self._round = None
        self._joiners -= set(lst.members)
        self._mark(MembershipMark.COMMITTED, f"{lst.key} {lst.members}")
        for m in sorted(set(lst.members) | set(r.base_members)):
            if m != self.me:              # (a removed member learns it is out)
                self._send(m, ListCommit(self.me, lst))
        if self.me in lst.members:
            self._adopt(lst)
        else:                              # a recovered list without its proposer
            self._removed_by = lst
            self._out_of_cluster(f"list {lst.key} does not name me", lst.master)

    # ------------------------------------------------------------------ acceptor
    def _grant(self, sender: int, base: tuple[int, int], term: int,
               members: tuple[int, ...]) -> tuple[bool, MemberList | None]:
        """Phase 1: whether this member grants ``sender`` the term, and the list it
        accepted for ``base`` and has not seen committed (to report; None: none)."""
        cur = self.list
        why = ""
        if cur is None or cur.key != base:
            why = f"base {base} is not my list"
        elif sender not in cur.members or sender not in members or members[0] != sender:
            why = "the claimant is not in my list or not first in its claim"
        elif (term, 0) <= self.promised or term <= cur.term:
            why = f"term {term} is not above my promise {self.promised}"
        else:
            sus = self.suspects(self._now)
            older = cur.members[:cur.members.index(sender)]
            if any(m not in sus for m in older):
                why = "I do not suspect every member older than the claimant"
            elif self.config.protected and set(cur.members) - set(members) - sus:
                why = "it drops members I hear"
        if why:
            if sender != self.me:
                self._reject(sender, None, why)
                if cur is not None and cur.key > base:
                    self._send(sender, ListCommit(self.me, cur))
            return False, None
        self.promised = (term, 0)
        self._vouch = frozenset(members)
        return True, self.accepted if self._accepted_base == base else None

    def _acceptable(self, sender: int, base: tuple[int, int], lst: MemberList,
                    recovered: bool) -> str:
        """Phase 2: why this member does not accept ``lst`` ("" if it does). A list
        proposed anew may remove only members this one suspects too; a ``recovered`` one
        (it may have been committed already) is not judged again."""
        cur = self.list
        if cur is None:                     # a joiner: only a list that admits it
            return "" if self.me in lst.members else "not in a cluster"
        if cur.key != base:
            return f"base {base} is not my list {cur.key}"
        if self.me not in cur.members:
            return "I am not in my own list"
        if lst.key < self.promised or lst.key <= cur.key:
            return f"key {lst.key} below my promise {self.promised}"
        if lst.term == cur.term and (sender != cur.master or lst.master != sender):
            return "a change in my term not from my master"
        if self.config.protected and not recovered:
            gone = set(cur.members) - set(lst.members) - self.suspects(self._now)
            if gone:
                return f"it removes {sorted(gone)}, whom I hear"
        return ""

    def _accept_and_answer(self, proposer: int, base: tuple[int, int],
                           lst: MemberList) -> None:
        """Accept ``lst`` (stop vouching for the members it removes) and answer
        ``proposer`` once none of them can still serve on an echo of mine, and my own
        list is old enough that no member it admitted echoed one of them before
        (docs/design.md §13.2); until then the answer waits."""
        self.promised = lst.key
        self.accepted = lst
        self._accepted_base = base
        self._vouch = frozenset(lst.members)
        cur = self.list
        ready = self._now
        if cur is not None:
            gone = set(cur.members) - set(lst.members)
            if gone:
                half = self._T // 2
                ready = max([self._adopted_at + half]
                            + [self._last_vouch.get(m, -half) + half for m in gone])
        self._deferred.append((ready, proposer, lst.key))
        self._release()

    def _release(self) -> None:
        """Send the answers held back whose time has come (to a list still accepted)."""
        now, keep = self._now, []
        acc = self.accepted
        for ready, proposer, key in self._deferred:
            if acc is None or acc.key != key:
                continue
            if ready > now:
                keep.append((ready, proposer, key))
            elif proposer == self.me:
                r = self._round
                if r is not None and r.lst is not None and r.lst.key == key:
                    r.acks.add(self.me)
                    self._maybe_commit(r)
            else:
                self._send(proposer, ListAccept(self.me, key, True))
        self._deferred = keep

    # ------------------------------------------------------------------ handlers
    def _on_heartbeat(self, m: Heartbeat) -> None:
        key, promised, sent_at, echo = m.key, m.promised, m.sent_at, m.echo
        if not (valid_key(key) and valid_key(promised) and type(sent_at) is int
                and type(echo) is int):
            raise Malformed("malformed heartbeat")
        lst = self.list
        if lst is None:
            return
        now, s, mine = self._now, m.sender, lst.key
        if s not in lst.members:
            if key < mine:                   # it missed its removal: tell it
                self._send(s, ListCommit(self.me, lst))
            return
        if sent_at > now or now - sent_at > self._T // 2:
            self._mark(MembershipMark.HEARTBEAT_STALE, f"from {s}, sent at {sent_at}")
            return
        self._heard[s] = now
        self._their_sent[s] = sent_at
        self._their_promised[s] = promised
        if 0 <= echo <= now:
            old = self._echo.get(s)
            if old is None or echo >= old[0]:
                self._echo[s] = (echo, promised)
        if key > mine:
            self._send(s, ListRequest(self.me))
        elif key < mine:
            self._send(s, ListCommit(self.me, lst))

    def _on_claim(self, m: Claim) -> None:
        if not (valid_key(m.base) and type(m.term) is int and valid_members(m.members)):
            raise Malformed("malformed claim")
        ok, accepted = self._grant(m.sender, m.base, m.term, m.members)
        if not ok:
            self._send(m.sender, ClaimReply(self.me, m.term, False))
            return
        if self._round is not None:
            self._round = None                # my own round gives way to a newer term
        self._send(m.sender, ClaimReply(self.me, m.term, True, accepted))

    def _on_claim_reply(self, m: ClaimReply) -> None:
        if type(m.term) is not int or type(m.ok) is not bool or not (
                m.accepted is None or valid_list(m.accepted)):
            raise Malformed("malformed claim reply")
        r = self._round
        if r is None or r.claim_term != m.term or not m.ok or m.sender not in r.base_members:
            return
        self._granted(r, m.sender, m.accepted)

    def _on_proposal(self, m: ListProposal) -> None:
        if not (valid_key(m.base) and valid_list(m.lst) and type(m.recovered) is bool):
            raise Malformed("malformed proposal")
        why = self._acceptable(m.sender, m.base, m.lst, m.recovered)
        if why:
            self._reject(m.sender, None, why)
            cur = self.list
            if cur is not None and cur.key > m.base:
                self._send(m.sender, ListCommit(self.me, cur))
            self._send(m.sender, ListAccept(self.me, m.lst.key, False))
            return
        if self._round is not None and (self._round.lst is None
                                        or self._round.lst.key < m.lst.key):
            self._round = None
        self._accept_and_answer(m.sender, m.base, m.lst)

    def _on_accept(self, m: ListAccept) -> None:
        if not valid_key(m.key) or type(m.ok) is not bool:
            raise Malformed("malformed answer")
        r = self._round
        if r is None or r.lst is None or r.lst.key != m.key:
            return
        if not m.ok:
            self._joiners.discard(m.sender)     # (a joiner that went elsewhere)
            return
        if m.sender in r.lst.members or m.sender in r.base_members:
            r.acks.add(m.sender)
            self._maybe_commit(r)

    def _on_commit(self, m: ListCommit) -> None:
        lst = m.lst
        if not valid_list(lst):
            raise Malformed("malformed list")
        cur = self.list
        if cur is not None and lst.key <= cur.key:
            return
        if self.me in lst.members and cur is not None and lst.master != self.me \
                and lst.master not in cur.members:
            # another cluster's list (in one cluster a list's master is in every list a
            # member had since it joined): an admission I accepted while joining committed
            # after I joined elsewhere; my node is set up for that one: I join anew (§13.3(d))
            self._removed_by = lst
            self._out_of_cluster(f"{lst.key} of another cluster names me", lst.master)
        elif self.me in lst.members:
            self._adopt(lst)
        elif cur is not None and self.me in cur.members:
            self._removed_by = lst
            self._out_of_cluster(f"list {lst.key} does not name me", lst.master)
        elif cur is None:
            # a joiner is sent a list without it only when its id was admitted and left out
            # before it learned either (_on_join): the id is spent, it joins anew (§13.3(a))
            self._removed_by = lst
            self._out_of_cluster(f"my id was left out by {lst.key}", lst.master)

    def _on_list_request(self, m: ListRequest) -> None:
        if self.list is not None:
            self._send(m.sender, ListCommit(self.me, self.list))

    def _on_join(self, m: JoinRequest) -> None:
        j = m.joiner
        if type(j) is not int or not 0 <= j < 2**31 - 1 or j == self.me:
            raise Malformed("malformed join request")
        lst = self.list
        if lst is None or (j != m.sender and not self.is_master):
            return
        self._known.add(j)
        if j in lst.members:
            self._send(j, ListCommit(self.me, lst))     # it missed its admission
        elif j in self._departed:
            # a former member's request (late, or from a joiner admitted and left out
            # before it learned either): told the list, never admitted again (_on_commit)
            if j == m.sender:
                self._send(j, ListCommit(self.me, lst))
        elif self.is_master:
            self._joiners.add(j)
        elif j == m.sender:
            self._send(lst.master, JoinRequest(self.me, j))

    def _on_probe(self, m: MergeProbe) -> None:
        lst = m.lst
        if not valid_list(lst):
            raise Malformed("malformed list")
        cur = self.list
        if cur is None or self.config.protected or self.me in lst.members:
            return
        if m.sender == cur.master and m.sender != lst.master:
            self._out_of_cluster("my master merges my cluster into another", lst.master)
            return
        if not self.is_master or lst.master != m.sender or set(lst.members) & set(cur.members):
            return
        # the smaller cluster merges into the larger (ties: the larger master id merges);
        # the larger answers, so that the smaller learns of it too
        if (len(cur.members), -self.me) > (len(lst.members), -lst.master):
            self._send(m.sender, MergeProbe(self.me, cur))
        else:
            self._mark(MembershipMark.MERGING, f"into {lst.master}'s {lst.key}")
            for x in cur.members:
                if x != self.me:
                    self._send(x, MergeProbe(self.me, lst))
            self._out_of_cluster("merging into a larger cluster", lst.master)

    # ------------------------------------------------------------------ steps
    def _adopt(self, lst: MemberList) -> None:
        now = self._now
        old = set(self.members)
        self.list = lst
        self._adopted_at = now
        if lst.key >= self.promised:
            self.promised = lst.key
            self._vouch = frozenset(lst.members)
        if self.accepted is not None and self.accepted.key <= lst.key:
            self.accepted = None
        r = self._round
        if r is not None and r.base < lst.key:
            self._round = None                # its base is no longer my list
        for m in lst.members:
            if m not in old:
                self._heard[m] = now
        for m in old - set(lst.members):
            for d in (self._heard, self._echo, self._their_sent, self._their_promised):
                d.pop(m, None)
            self._departed.add(m)
            self._joiners.discard(m)
        self._known |= set(lst.members)
        self._known.discard(self.me)
        self._mark(MembershipMark.ADOPTED, f"{lst.key} {lst.members}")
        self._out.append(ListChanged(lst))

    def _out_of_cluster(self, why: str, into: int) -> None:
        self.removed = True
        self._round = None
        self._mark(MembershipMark.REMOVED, why)
        self._out.append(Removed(why, into))

    def _send(self, to: int, m: Message) -> None:
        self._out.append(SEND(to, m, 0))

    def _mark(self, name: MembershipMark, detail: str = "") -> None:
        self._out.append(MARK(name.value, -1, None, detail))

    def _reject(self, sender: int, m: object, why: str) -> None:
        what = type(m).__name__ if m is not None else "proposal"
        self._mark(MembershipMark.REJECTED, f"{what} from {sender}: {why}")


_HANDLERS: dict[type, Callable[[Membership, Any], None]] = {
    Heartbeat: Membership._on_heartbeat,
    Claim: Membership._on_claim,
    ClaimReply: Membership._on_claim_reply,
    ListProposal: Membership._on_proposal,
    ListAccept: Membership._on_accept,
    ListCommit: Membership._on_commit,
    ListRequest: Membership._on_list_request,
    JoinRequest: Membership._on_join,
    MergeProbe: Membership._on_probe,
}
