"""Curated, named protocol mutants: each a tiny patch of hzfast/protocol/*.py modelling one
realistic bug (issue 49; tests/mutants/test_mutants.py applies them one by one).

A mutant replaces ``old`` (which must occur exactly once in ``path``: a drifted source
fails the test loudly) by ``new``. ``caught_by`` is the layer of tests/mutants/layers.py
that catches it today (the test accepts that layer or an earlier one, so a stronger
checker never breaks it). ``expected_to_survive_today`` holds the reason a mutant passes
every layer: either it is equivalent (the reason says why the behaviour cannot change), or
it is a blind spot of today's checker (the reason says what a check would need to see); a
survivor that starts being caught makes the test say so, so that the field is updated.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str                       # relative to the repository root
    old: str
    new: str
    bug: str
    caught_by: str = ""             # layer that catches it today ("" for a survivor)
    expected_to_survive_today: str = ""


P = "hzfast/protocol/"
MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------ issue 49's list
    Mutant(
        "source-clears-before-commit", P + "designs.py",
        "        node._send(x.destination, TRANSFER(node.me, x, node._carried.pop(p, ())))",
        "        node._send(x.destination, TRANSFER(node.me, x, node._carried.pop(p, ())))\n"
        "        if x.source == node.me and x.source_new_index < 0:\n"
        "            node._effect(CLEAR, p, x)",
        "a moving owner drops its data as soon as the copy is sent, before anyone committed",
        caught_by="swarm"),
    Mutant(
        "master-commits-without-destination", P + "designs.py",
        "        node._commit_on_destination(ent)",
        "        node._master_commit(ent[1])",
        "the master commits once the owner copied, without the destination's commit first",
        caught_by="swarm"),
    Mutant(
        "increment-ignores-destination-slot", P + "master.py",
        "        inc = 1 + (sni > -1) + (dci > -1)",
        "        inc = 1 + (sni > -1)",
        "a wrong version bump: a migration's increment forgets the destination's old slot",
        caught_by="scenarios"),
    Mutant(
        "failure-without-extra-bump", P + "master.py",
        "        self.versions[p] += x.increment + 1",
        "        self.versions[p] += x.increment",
        "a wrong version bump: a failed migration takes the success's version (§7.2)",
        caught_by="scenarios"),
    Mutant(
        "evict-after-one-ack", P + "master.py",
        "        if pub is None or any(v is None for v in pub[1].values()):",
        "        if pub is None or all(v is None for v in pub[1].values()):",
        "the master evicts its completed list after the first member's ack, not all of them",
        caught_by="swarm"),
    Mutant(
        "evict-despite-a-refusal", P + "master.py",
        "        if all(pub[1].values()):\n            self._evict(pub[0])",
        "        if any(pub[1].values()):\n            self._evict(pub[0])",
        "the master evicts its completed list when one member accepted and another refused",
        caught_by="scenarios"),
    Mutant(
        "new-master-skips-recovery", P + "designs.py",
        "    recovers = True ",
        "    recovers = False ",
        "a new master plans from its own table without fetching the members' tables (§7.8)",
        caught_by="scenarios"),
    Mutant(
        "writes-during-migration", P + "node.py",
        "                and partition not in self.active and partition not in self._finalizing",
        "                and partition not in self._finalizing",
        "the owner takes client writes while the partition migrates (§7.11(a))",
        caught_by="small-scope"),
    Mutant(
        "5444-clearing-rule-in-safe-mode", P + "member.py",
        "                    if x.status == SUCCESS and (sni == -1 or sni > bc):",
        "                    if x.status == SUCCESS:",
        "Hazelcast #5444's rule in the safe design: a source clears whatever its new index",
        expected_to_survive_today=(
            'masked by §7.3(i): the clear sits under "a copy stays while this member\'s '
            'table lists it at a data index", and a source whose new index is a data slot '
            'is listed there (at its old or its new index, both data slots) until the '
            'clear would no longer be one the mutant changes. Still not caught with every '
            'replica checked and the precise ghost model (issue 49); the guard itself is '
            'mutant source-clears-while-still-listed, which is caught')),
    Mutant(
        "backup-destination-drops-its-copy", P + "member.py",
        "                                 keep=x.destination_new_index <= bc)",
        "                                 keep=x.destination_new_index == 0)",
        "a destination that becomes a backup silently drops the copy it installed",
        caught_by="swarm"),
    Mutant(
        "backup-ignores-backup-writes", P + "node.py",
        "        for j in range(1, self._bc + 1):",
        "        for j in range(1, self._bc):",
        "the last backup slot silently drops the backup writes it is sent",
        caught_by="scenarios"),
    # ------------------------------------------------------------ our own
    Mutant(
        "backup-takes-any-owner", P + "node.py",
        "        if row.item(partition, 0) != sender:\n            return False\n",
        "",
        "a backup applies writes from an owner its own table does not name (the long run's "
        "seed 43665: a move only the master and the new owner knew was rolled back)",
        caught_by="unit"),
    Mutant(
        "source-drops-last-copy", P + "designs.py",
        "    keeps_last_copy = True ",
        "    keeps_last_copy = False ",
        "a source clears a copy that may be the last one left (§7.3(i), the seeds' rule)",
        caught_by="unit"),
    Mutant(
        "passive-source-clears-whatever-new-index", P + "member.py",
        "            if x.status == SUCCESS and (sni == -1 or sni > bc) \\",
        "            if x.status == SUCCESS \\",
        "#5444's rule for a passive source (a backup that moves): it clears on arrival "
        "whatever its new index",
        expected_to_survive_today=(
            'masked by §7.3(i), as 5444-clearing-rule-in-safe-mode: the passive source\'s '
            'clear also requires that its table no longer lists it at a data index, which '
            'a backup shifting down within the data slots never meets. Still not caught '
            'with every replica checked and the precise ghost model (issue 49)')),
    Mutant(
        "source-clears-while-still-listed", P + "member.py",
        "                if self.me not in self.replicas[p, :bc + 1].tolist():\n"
        "                    if x.status == SUCCESS",
        "                if True:\n"
        "                    if x.status == SUCCESS",
        "a finalizing source clears its copy although its table lists it at a data slot",
        caught_by="swarm"),
    Mutant(
        "stale-copy-dropped-under-a-migration", P + "member.py",
        "            if p not in self.active:\n                self._clear_copy(p, None)",
        "            if True:\n                self._clear_copy(p, None)",
        "a newer table clears a copy that an active migration still reads from",
        caught_by="unit"),
    Mutant(
        "kept-copy-released-while-last", P + "member.py",
        "            elif p not in self.active and not self._copy_may_be_last(p):",
        "            elif p not in self.active:",
        "a kept copy (possibly the last) goes at the next event although no live member "
        "holds the partition yet",
        caught_by="unit"),
    Mutant(
        "destination-commits-across-a-gap", P + "member.py",
        "        if x.final < cur or x.initial != cur:",
        "        if x.final < cur:",
        "the destination commits a migration that does not start at its version",
        expected_to_survive_today=(
            'masked (defence in depth): the destination accepted the transfer only at the '
            'initial version and keeps the partition active until the commit, so no other '
            'change reaches it in between; the row-fit check (§7.5) would refuse a row '
            'that does not match anyway')),
    Mutant(
        "owner-skips-version-check", P + "member.py",
        "        if self.versions.item(p) != x.initial:",
        "        if False:",
        "the owner copies for a migration made from another version of the partition",
        expected_to_survive_today=(
            'masked (defence in depth): after the completed list applied, an owner whose '
            "version is not the migration's initial one is ahead of the master; the "
            "destination's transfer and commit checks refuse the same migration, so it "
            'fails without a loss')),
    Mutant(
        "partial-update-across-a-gap", P + "member.py",
        "                if x.initial != cur:",
        "                if x.initial > cur:",
        "a member applies a completed migration that starts below its version (§7.5)",
        expected_to_survive_today=(
            "masked: a member between an entry's initial and final versions has seen a "
            'different history of the partition, which no layer produces (versions move '
            'by whole migrations), and the row-fit check (§7.5) refuses such an entry in '
            'any case')),
    Mutant(
        "master-fails-commit-on-timeout", P + "master.py",
        "        elif x.destination in self.members:          # commit: re-send while a member",
        "        elif False:",
        "an unanswered commit fails the migration although the destination may have "
        "committed it",
        expected_to_survive_today=(
            'safe by design: the destination that committed holds writes until the master '
            'confirms (§7.11), and the source keeps its copy of a failed migration, so '
            'failing it loses nothing; it costs a retried migration. (Together with '
            'new-owner-writes-before-master-commit it would lose data)')),
    Mutant(
        "commit-stage-fails-when-source-leaves", P + "master.py",
        "                if stage is STAGE_COMMIT:\n                    parts = {x.destination}",
        "                if stage is STAGE_COMMIT:\n"
        "                    parts = {owner, x.destination}",
        "a migration in its commit stage fails when the old owner leaves, although the "
        "destination may have committed it",
        expected_to_survive_today=(
            'safe by design, as master-fails-commit-on-timeout: the committed destination '
            'took no writes, the repair promotes a backup that holds every entry')),
    Mutant(
        "new-owner-writes-before-master-commit", P + "member.py",
        "            self._unconfirmed[p] = x.id"
        "        # the master may still fail it: hold writes",
        "            pass",
        "a destination that becomes owner takes writes before the master committed",
        expected_to_survive_today=(
            'blind spot of the schedules: the hold only matters when the master fails a '
            'migration the destination committed and the destination then took writes; '
            'the master fails a committed migration only when its destination left (its '
            "writes leave with it) or after a new master's recovery (which reads the "
            "destination's commit). A scope combining a commit timeout with a live "
            "destination would need master-fails-commit-on-timeout's behaviour, which the "
            'protocol does not have')),
    Mutant(
        "write-hold-never-lifted", P + "master.py",
        "                del self._unconfirmed[held[mid]]",
        "                pass",
        "the master never lifts the write hold of a partition it took over",
        caught_by="swarm"),
    Mutant(
        "recovery-fails-at-the-success-version", P + "master.py",
        "                completed[x.id] = settled(x, FAILED, final=x.initial + x.increment + 1)",
        "                completed[x.id] = settled(x, FAILED, final=x.initial + x.increment)",
        "a recovering master fails an unfinished migration at the version its success would "
        "have had",
        caught_by="scenarios"),
    Mutant(
        "recovery-keeps-its-own-table", P + "master.py",
        "        newer = st.versions > vers",
        "        newer = st.versions < 0",
        "a recovering master ignores newer rows in the members' tables",
        caught_by="small-scope"),
    Mutant(
        "promotion-bump-short", P + "master.py",
        "                    self.versions[p] += 2",
        "                    self.versions[p] += 1",
        "a promotion commits with a version one short of what its members applied",
        caught_by="swarm"),
    Mutant(
        "transfer-refusal-read-as-ok", P + "member.py",
        "        self._send(x.master, RESULT(self.me, x, bool(m.ok),",
        "        self._send(x.master, RESULT(self.me, x, True,",
        "the owner reports a transfer the destination refused as done",
        expected_to_survive_today=(
            'masked (defence in depth): the destination refuses the commit of a migration '
            'it refused the transfer of (its version check fails), so the master fails it')),
    Mutant(
        "members-left-not-passed-to-the-design", P + "node.py",
        "        if gone and self.initialized:",
        "        if False:",
        "members no longer tell their design that members left",
        expected_to_survive_today=(
            "equivalent in the safe design: SafeDesign.members_left does nothing (the "
            "master repairs, §7.7). Only the legacy design acts there, and its #5444 "
            "replay (the unit layer) still loses about half of the entries without it")),
    Mutant(
        "active-source-keeps-a-moved-copy", P + "member.py",
        "                    if x.status == SUCCESS and (sni == -1 or sni > bc):\n"
        "                        self._clear_copy(p, x)",
        "                    if x.status == SUCCESS and (sni == -1 or sni > bc):\n"
        "                        pass",
        "an owner that moved its data away never drops its copy (a cosmic-ray survivor "
        "before every replica was checked: nothing read a non-replica's data)",
        caught_by="swarm"),
    Mutant(
        "stale-copy-dropped-while-last", P + "member.py",
        "            if p not in self.active:\n                self._clear_copy(p, None)",
        "            if p not in self.active:\n                self._effect(CLEAR, p)",
        "a member that missed the commit moving it off a data slot drops its copy as stale "
        "although no live member holds a data slot of the partition (seed 59099 of the "
        "long run; the promotion that follows makes it the owner of nothing)",
        caught_by="unit"),
)
