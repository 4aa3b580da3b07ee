"""The membership state machine's rules, one by one (docs/design.md §13), on a small
deterministic network of :class:`Membership` members driven by hand."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hzfast.protocol.events import MessageReceived, TimerFired
from hzfast.protocol.membership import (
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
    MemberList,
    Membership,
    MembershipConfig,
    MergeProbe,
    Removed,
)
from hzfast.protocol.outputs import Mark, Send

T = 60
CFG = MembershipConfig(heartbeat_interval=10, heartbeat_timeout=T, min_cluster_size="majority")
OPEN = MembershipConfig(heartbeat_interval=10, heartbeat_timeout=T)


class Net:
    """Members exchanging messages with a delay of one tick; links can be cut."""

    def __init__(self, n: int, config: MembershipConfig = CFG) -> None:
        founding = MemberList(1, 1, tuple(range(1, n + 1)))
        self.nodes = {m: Membership(m, config, founding=founding) for m in founding.members}
        self.now = 0
        self.inflight: list[tuple[int, int, int, Any]] = []   # (at, src, dst, message)
        self.cut: set[tuple[int, int]] = set()
        self.stopped: set[int] = set()
        self.drop: set[tuple[int, type]] = set()        # (sender, message type) dropped
        self.outs: dict[int, list[Any]] = {m: [] for m in self.nodes}
        for m in self.nodes:
            self._take(m, self.nodes[m].handle(TimerFired(("start",)), 0))

    def _take(self, m: int, outs: list[Any]) -> None:
        self.outs.setdefault(m, []).extend(outs)
        for o in outs:
            if type(o) is Send and (m, o.to) not in self.cut and \
                    (m, type(o.message)) not in self.drop:
                self.inflight.append((self.now + 1, m, o.to, o.message))

    def step(self, ticks: int = 1) -> None:
        for _ in range(ticks):
            self.now += 1
            due = [x for x in self.inflight if x[0] <= self.now]
            self.inflight = [x for x in self.inflight if x[0] > self.now]
            for _, src, dst, msg in due:
                if dst in self.nodes and dst not in self.stopped:
                    self._take(dst, self.nodes[dst].handle(MessageReceived(src, msg), self.now))
            if self.now % 10 == 0:
                for m, node in self.nodes.items():
                    if m not in self.stopped:
                        self._take(m, node.handle(TimerFired(TICK), self.now))

    def serving(self) -> set[int]:
        return {m for m, n in self.nodes.items() if m not in self.stopped
                and n.may_serve(self.now)}

    def split(self, a: set[int], b: set[int]) -> None:
        self.cut |= {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}


def marks(outs: list[Any], name: str) -> list[Mark]:
    return [o for o in outs if type(o) is Mark and o.name == name]


# ---------------------------------------------------------------------------- settings
@pytest.mark.parametrize("kw,needle", [
    ({"heartbeat_interval": 0}, "heartbeat_interval"),
    ({"heartbeat_timeout": True}, "heartbeat_timeout"),
    ({"heartbeat_interval": 10, "heartbeat_timeout": 30}, "4 heartbeat intervals"),
    ({"min_cluster_size": 0}, "min_cluster_size"),
    ({"min_cluster_size": "most"}, "min_cluster_size"),
    ({"proposal_timeout": -1}, "proposal_timeout"),
])
def test_bad_settings_name_the_field(kw: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        MembershipConfig(**kw)


def test_bad_construction_is_refused() -> None:
    with pytest.raises(ValueError, match="me must be"):
        Membership(-1)
    with pytest.raises(TypeError, match="config"):
        Membership(1, object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="founding"):
        Membership(1, founding=MemberList(1, 1, (2, 3)))
    with pytest.raises(TypeError, match="event"):
        Membership(1).handle(object(), 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="now"):
        Membership(1).handle(TimerFired(TICK), 1.5)  # type: ignore[arg-type]


def test_quorum() -> None:
    assert [CFG.quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]
    assert MembershipConfig(min_cluster_size=3).quorum(10) == 3
    assert OPEN.quorum(5) == 1 and not OPEN.protected


# ---------------------------------------------------------------------------- serving
def test_a_protected_member_serves_only_on_fresh_echoes() -> None:
    net = Net(3)
    assert net.serving() == set()             # no echo yet
    net.step(25)
    assert net.serving() == {1, 2, 3}
    net.stopped = {2, 3}                      # (no heartbeats, no echoes)
    net.step(T // 2 + 10)
    assert 1 not in net.serving()             # its echoes went stale: it stops serving
    assert net.nodes[1].members == (1, 2, 3)  # long before anyone is suspected


def test_without_protection_a_member_always_serves_in_its_list() -> None:
    net = Net(3, OPEN)
    assert net.serving() == {1, 2, 3}
    net.stopped = {2, 3}
    net.step(T)
    assert 1 in net.serving()


# ---------------------------------------------------------------------------- heartbeats
def test_a_stale_heartbeat_is_no_evidence_of_life() -> None:
    net = Net(3)
    net.step(20)
    node = net.nodes[1]
    heard = node._heard[2]
    outs = node.handle(MessageReceived(2, Heartbeat(2, (1, 1), (1, 1), net.now - T, 5)),
                       net.now + 1)
    assert marks(outs, "heartbeat_stale")
    assert node._heard[2] == heard


def test_a_member_whose_timer_ran_late_suspects_nobody() -> None:
    net = Net(3)
    net.step(20)
    node = net.nodes[1]
    late = net.now + 5 * T                      # paused for 5 timeouts
    outs = node.handle(TimerFired(TICK), late)
    assert marks(outs, "pause_detected")
    assert node.suspects(late) == set()
    assert not node.may_serve(late)             # its echoes are old: it does not serve
    assert not [o for o in outs if type(o) is Send and type(o.message) is ListProposal]


# ---------------------------------------------------------------------------- removal
def test_a_crashed_member_is_removed_and_the_rest_serve() -> None:
    net = Net(5)
    net.step(30)
    net.stopped = {5}
    net.step(3 * T)
    assert net.nodes[1].members == (1, 2, 3, 4)
    assert net.nodes[1].list is not None and net.nodes[1].list.key == (1, 2)
    assert net.serving() == {1, 2, 3, 4}


def test_a_removed_member_learns_it_is_out_and_stops_serving() -> None:
    # two of five paused (the SIGSTOP case): the three remove them; when the two
    # resume, their heartbeats are answered with the newer list and they are out
    net = Net(5)
    net.step(30)
    net.stopped = {4, 5}
    net.step(3 * T)
    assert net.nodes[1].members == (1, 2, 3)
    net.stopped = set()
    net.step(3 * 10)
    for m in (4, 5):
        assert net.nodes[m].removed
        assert [o for o in net.outs[m] if type(o) is Removed]
    assert net.serving() == {1, 2, 3}


def test_the_minority_side_of_a_split_commits_nothing_and_stops_serving() -> None:
    net = Net(5)
    net.step(30)
    net.split({1, 2}, {3, 4, 5})
    net.step(4 * T)
    assert net.nodes[1].members == (1, 2, 3, 4, 5)      # master 1 cannot remove 3 of 5
    assert net.nodes[3].list is not None and net.nodes[3].list.members == (3, 4, 5)
    assert net.nodes[3].list.term == 2                  # 3 claimed the next term
    assert net.serving() == {3, 4, 5}
    net.cut.clear()
    net.step(3 * T)
    assert net.nodes[1].removed and net.nodes[2].removed
    assert net.serving() == {3, 4, 5}


def test_without_protection_both_sides_serve_and_the_smaller_merges_when_they_meet() -> None:
    net = Net(5, OPEN)
    net.step(30)
    net.split({1, 2}, {3, 4, 5})
    net.step(4 * T)
    assert net.nodes[1].members == (1, 2) and net.nodes[3].members == (3, 4, 5)
    assert net.serving() == {1, 2, 3, 4, 5}             # split brain: Hazelcast's default
    net.cut.clear()
    net.step(3 * T)
    assert net.nodes[1].removed and net.nodes[2].removed
    into = {o.into for m in (1, 2) for o in net.outs[m] if type(o) is Removed}
    assert into == {3}                                  # they rejoin the larger cluster


# ---------------------------------------------------------------------------- claims
def test_a_claim_is_refused_by_a_member_that_still_hears_the_master() -> None:
    net = Net(3)
    net.step(30)
    node = net.nodes[3]
    outs = node.handle(MessageReceived(2, Claim(2, (1, 1), 2, (2, 3))), net.now)
    reply = [o.message for o in outs if type(o) is Send]
    assert reply == [ClaimReply(3, 2, False)]
    assert "older than the claimant" in marks(outs, "membership_rejected")[0].detail
    assert node.promised == (1, 1)


def test_one_grant_per_term() -> None:
    net = Net(4)
    net.step(30)
    node = net.nodes[4]
    now = net.now + 2 * T                              # it hears nobody any more
    ok = node.handle(MessageReceived(2, Claim(2, (1, 1), 2, (2, 3, 4))), now)
    assert [o.message for o in ok if type(o) is Send] == [ClaimReply(4, 2, True, None)]
    again = node.handle(MessageReceived(3, Claim(3, (1, 1), 2, (3, 4))), now)
    assert [o.message for o in again if type(o) is Send] == [ClaimReply(4, 2, False)]


def test_an_acceptor_answers_a_removal_only_once_its_echoes_to_the_removed_expired() -> None:
    net = Net(3)
    net.step(30)
    node = net.nodes[2]
    last = node._last_vouch[3]
    assert last > 0
    # a recovered list (no suspicion asked) that drops member 3, whom member 2 echoes
    prop = ListProposal(1, (1, 1), MemberList(1, 2, (1, 2)), recovered=True)
    outs = node.handle(MessageReceived(1, prop), net.now)
    assert not [o for o in outs if type(o) is Send and type(o.message) is ListAccept]
    assert node.accepted == prop.lst and 3 not in node._vouch
    t = last + T // 2
    outs = node.handle(TimerFired(TICK), t)
    assert ListAccept(2, (1, 2), True) in [o.message for o in outs if type(o) is Send]


# ---------------------------------------------------------------------------- joins
def test_a_joiner_is_admitted_through_any_member() -> None:
    net = Net(3)
    net.step(30)
    j = Membership(9, CFG, seeds=(3,))
    net.nodes[9] = j
    net._take(9, j.handle(TimerFired(("start",)), net.now))
    net.step(6 * 10)
    assert net.nodes[1].members == (1, 2, 3, 9)
    assert j.members == (1, 2, 3, 9)
    assert [o for o in net.outs[9] if type(o) is ListChanged]
    net.step(30)
    assert net.serving() == {1, 2, 3, 9}


def test_a_protected_joiner_that_reaches_nobody_founds_nothing() -> None:
    j = Membership(9, CFG, seeds=(1,))
    j.handle(TimerFired(("start",)), 0)
    for t in range(10, 20 * T, 10):
        j.handle(TimerFired(TICK), t)
    assert j.list is None and not j.may_serve(20 * T)
    o = Membership(9, OPEN, seeds=(1,))
    o.handle(TimerFired(("start",)), 0)
    for t in range(10, 20 * T, 10):
        o.handle(TimerFired(TICK), t)
    assert o.members == (9,)                   # without protection it founds its own


# ---------------------------------------------------------------------------- bad input
def test_forged_and_malformed_messages_are_rejected_with_a_mark() -> None:
    net = Net(3)
    net.step(30)
    node = net.nodes[1]
    before = (node.list, node.promised, node.accepted)
    for sender, m in [
            (2, Heartbeat(3, (1, 1), (1, 1), net.now, 0)),              # not its sender
            (2, Heartbeat(2, (1,), (1, 1), net.now, 0)),                 # type: ignore[arg-type]
            (2, ListCommit(2, MemberList(1, 2, (1, 1)))),                # a member twice
            (2, ListProposal(2, (1, 1), "x")),                           # type: ignore[arg-type]
            (2, Claim(2, (1, 1), "2", (2,))),                            # type: ignore[arg-type]
            (2, ClaimReply(2, 2, "yes")),                                # type: ignore[arg-type]
            (2, ListAccept(2, (1, -2), True)),
            (2, JoinRequest(2, -5)),
            (2, MergeProbe(2, MemberList(-1, 1, (2,)))),
            (2, object()),
    ]:
        outs = node.handle(MessageReceived(sender, m), net.now)      # type: ignore[arg-type]
        assert marks(outs, "membership_rejected"), m
    assert (node.list, node.promised, node.accepted) == before


def test_a_commit_of_an_older_list_changes_nothing() -> None:
    net = Net(3)
    net.step(30)
    node = net.nodes[2]
    outs = node.handle(MessageReceived(1, ListCommit(1, MemberList(0, 9, (1, 3)))), net.now)
    assert not outs and node.members == (1, 2, 3) and not node.removed


_ints = st.integers(min_value=-3, max_value=2**31)
_keys = st.tuples(_ints, _ints)
_lists = st.builds(MemberList, _ints, _ints, st.lists(_ints, max_size=5).map(tuple))
_messages = st.one_of(
    st.builds(Heartbeat, _ints, _keys, _keys, _ints, _ints),
    st.builds(Claim, _ints, _keys, _ints, st.lists(_ints, max_size=5).map(tuple)),
    st.builds(ClaimReply, _ints, _ints, st.booleans(), st.none() | _lists),
    st.builds(ListProposal, _ints, _keys, _lists, st.booleans()),
    st.builds(ListAccept, _ints, _keys, st.booleans()),
    st.builds(ListCommit, _ints, _lists),
    st.builds(ListRequest, _ints),
    st.builds(JoinRequest, _ints, _ints),
    st.builds(MergeProbe, _ints, _lists))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), _messages), max_size=12))
def test_no_message_sequence_raises(seq: list[tuple[int, Any]]) -> None:
    node = Membership(1, CFG, founding=MemberList(1, 1, (1, 2, 3)))
    t = 0
    node.handle(TimerFired(("start",)), t)
    for sender, m in seq:
        t += 7
        node.handle(MessageReceived(sender, m), t)
        node.handle(TimerFired(TICK), t)
        lst = node.list
        assert lst is None or (node.me in lst.members or node.removed)
        assert node.promised >= (lst.key if lst else (0, 0))


# ---------------------------------------------------------------------------- Hazelcast's
# The cases of Hazelcast's MembershipFailureTest (com.hazelcast.internal.cluster.impl) that
# apply to this design, on the hand-driven network: crashes of members, of the master and of
# the master candidate (also during the mastership claim), and heartbeat timeouts.
def _alive_lists(net: Net) -> set[tuple[int, ...]]:
    return {n.members for m, n in net.nodes.items() if m not in net.stopped and not n.removed}


@pytest.mark.parametrize("config", [CFG, OPEN], ids=["protected", "open"])
def test_slave_crash(config: MembershipConfig) -> None:
    net = Net(3, config)
    net.step(30)
    net.stopped = {2}
    net.step(3 * T)
    assert _alive_lists(net) == {(1, 3)}


@pytest.mark.parametrize("config", [CFG, OPEN], ids=["protected", "open"])
def test_master_crash(config: MembershipConfig) -> None:
    net = Net(3, config)
    net.step(30)
    net.stopped = {1}
    net.step(3 * T)
    assert _alive_lists(net) == {(2, 3)}
    assert net.nodes[2].list is not None and net.nodes[2].list.term == 2


def test_master_and_master_candidate_crash_simultaneously() -> None:
    net = Net(4, OPEN)        # (with protection, two of four lose the quorum: stuck by design)
    net.step(30)
    net.stopped = {1, 2}
    net.step(4 * T)
    assert _alive_lists(net) == {(3, 4)}


def test_master_and_master_candidate_crash_sequentially_with_protection() -> None:
    net = Net(5)
    net.step(30)
    net.stopped = {1}
    net.step(3 * T)
    assert _alive_lists(net) == {(2, 3, 4, 5)}
    net.stopped = {1, 2}
    net.step(3 * T)
    assert _alive_lists(net) == {(3, 4, 5)}
    assert net.serving() == {3, 4, 5}


@pytest.mark.parametrize("who", [2, 3], ids=["candidate", "slave"])
def test_a_crash_during_the_mastership_claim(who: int) -> None:
    # the claim of member 2 cannot reach member 3 at first (Hazelcast drops its
    # FETCH_MEMBER_LIST_STATE); then the candidate, or a slave, crashes as well
    net = Net(4, OPEN)
    net.step(30)
    net.drop = {(2, Claim)}
    net.stopped = {1}
    net.step(T + 20)
    assert net.nodes[2]._round is not None          # the claim is under way
    net.stopped = {1, who}
    net.drop = set()
    net.step(4 * T)
    rest = tuple(m for m in (2, 3, 4) if m != who)
    assert _alive_lists(net) == {rest}


@pytest.mark.parametrize("config", [CFG, OPEN], ids=["protected", "open"])
def test_slave_heartbeat_timeout(config: MembershipConfig) -> None:
    net = Net(3, config)
    net.step(30)
    net.drop = {(3, Heartbeat)}
    net.step(3 * T)
    assert net.nodes[1].members == net.nodes[2].members == (1, 2)
    assert net.nodes[3].removed                 # told by the list that leaves it out
    assert 3 not in net.serving()


def test_master_heartbeat_timeout() -> None:
    net = Net(3)
    net.step(30)
    net.drop = {(1, Heartbeat)}
    net.step(3 * T)
    assert net.nodes[2].members == net.nodes[3].members == (2, 3)
    assert net.nodes[1].removed and 1 not in net.serving()


def test_a_heartbeat_lifts_a_suspicion() -> None:
    net = Net(3)
    net.step(30)
    net.drop = {(3, Heartbeat)}
    net.step(T // 2 + 10)                       # silent long enough to stop serving, not to
    assert 3 not in net.serving()               # be suspected
    assert net.nodes[1].members == (1, 2, 3)
    net.drop = set()
    net.step(30)
    assert net.nodes[1].suspects(net.now) == set() and net.serving() == {1, 2, 3}


def test_slave_splits_and_eventually_merges_back() -> None:
    # MembershipFailureTest.slave_splits_and_eventually_merges_back (Hazelcast's default,
    # no protection): member 3 hears nobody for a while, the two others remove it and it
    # goes on as a cluster of its own; once the links work again the smaller cluster (3
    # alone) merges into the larger one: it is out, told to rejoin through master 1
    net = Net(3, OPEN)
    net.step(30)
    net.split({3}, {1, 2})
    net.step(4 * T)
    assert net.nodes[1].members == (1, 2) and net.nodes[3].members == (3,)
    assert net.serving() == {1, 2, 3}
    net.cut.clear()
    net.step(3 * T)
    assert net.nodes[3].removed and not net.nodes[1].removed and not net.nodes[2].removed
    assert {o.into for o in net.outs[3] if type(o) is Removed} == {1}
    assert _alive_lists(net) == {(1, 2)}


def test_a_member_suspected_by_the_others_learns_it_is_out() -> None:
    # MembershipFailureTest.heartbeat_not_sent_to_suspected_member: the master stops hearing
    # member 2 (its heartbeats to the master are lost) while 2 still hears everyone; the
    # others remove it, and 2 learns it is out from the list they answer its heartbeats
    # with (explicit suspicion; Hazelcast's heartbeat complaint ends the same way)
    net = Net(3)
    net.step(30)
    net.cut |= {(2, 1), (2, 3)}
    net.step(3 * T)
    assert _alive_lists(net) == {(1, 3)}
    net.cut.clear()
    net.step(3 * 10)
    assert net.nodes[2].removed and not net.nodes[2].may_serve(net.now)
    assert [o for o in net.outs[2] if type(o) is Removed]
