"""hzfast diff, report and arrange; the chart's sender rule against a step-by-step replay."""
import numpy as np
import pytest

import hzfast
from hzfast import persistence
from hzfast.cli._inputs import balanced_table
from hzfast.cli._plots import senders
from hzfast.cli.plan import topology_change


def test_diff_matches_the_library(tmp_path, run_json, run_text):
    a = balanced_table(1000, 5, 3)
    c = topology_change(a, leave=[2])
    plan = hzfast.plan_migrations(c.current, c.target)
    reps, vers = hzfast.apply_migrations(c.current, None, plan)
    b = hzfast.PartitionTable(reps, vers, c.current.members)
    pa, pb = tmp_path / "a.npz", tmp_path / "b.bin"
    a.save(pa)
    persistence.write_table(pb, b, "hz41")
    d = run_json("diff", pa, pb, "--json")
    lib = hzfast.diff(a.replicas, b.replicas, member_count=5)
    assert d["changed_slots"] == lib.slot_moves
    assert d["changed_partitions"] == lib.changed_partitions.size
    assert d["changed_partition_ids"] == lib.changed_partitions.tolist()
    assert (d["stamp_a"], d["stamp_b"]) == (a.stamp, b.stamp)
    assert [m["gained"] for m in d["per_member"]] == lib.gains.tolist()
    assert [m["lost"] for m in d["per_member"]] == lib.losses.tolist()
    assert d["per_member"][2]["gained"] == [0, 0, 0]
    assert d["per_member"][2]["lost"] == (a.replicas == 2).sum(axis=0).tolist()
    out = run_text("diff", pa, pb)
    assert "slots gained / lost per replica index" in out and "127.0.0.1:5703" in out


def test_diff_matches_members_by_uuid(tmp_path, run_json):
    a = balanced_table(100, 3, 2)
    # b lists the same members in another order, plus a new one: indices differ, uuids not
    m = a.members
    order = [2, 0, 1]
    extra = hzfast.Members(["10.0.0.9:5701"], uuids=["00000000-0000-0000-0000-0000000000aa"])
    bm = hzfast.Members([m.addresses[i] for i in order] + list(extra.addresses),
                        uuids=[m.uuids[i] for i in order] + list(extra.uuids))
    inverse = np.argsort(order).astype(np.int32)
    b = hzfast.PartitionTable(inverse[a.replicas], a.versions, bm)   # the same placement
    pa, pb = tmp_path / "a.npz", tmp_path / "b.json"
    a.save(pa)
    persistence.write_table(pb, b, "json")
    d = run_json("diff", pa, pb, "--json")
    assert d["changed_slots"] == 0 and d["changed_partitions"] == 0
    assert [m["address"] for m in d["per_member"]] == list(m.addresses) + ["10.0.0.9:5701"]


def test_report_and_arrange(tmp_path, run_json):
    # an unbalanced table: every owner on member 0
    reps = np.stack([np.zeros(300, np.int32), (np.arange(300) % 3 + 1).astype(np.int32)], 1)
    t = hzfast.PartitionTable(np.ascontiguousarray(reps), members=4)
    path = tmp_path / "t.npz"
    t.save(path)
    r = run_json("report", "--table", path, "--json")
    lib = hzfast.arrangement_report(t.replicas, t.replicas, t.members, replica_count=2)
    assert r["member_counts"] == lib.member_counts.tolist() and r["balanced"] is False
    assert r["slot_changes"] == 0
    out = tmp_path / "arranged.npz"
    a = run_json("arrange", "--table", path, "-o", out, "--json")
    target = hzfast.arrange(t, t.members, replica_count=2)
    lib = hzfast.arrangement_report(t.replicas, target, t.members, replica_count=2)
    assert a["balanced"] is True and a["slot_changes"] == lib.slot_changes
    assert a["lower_bound"] == lib.lower_bound and a["excess_ratio"] == round(lib.excess_ratio, 3)
    arranged = hzfast.PartitionTable.load(out)
    assert np.array_equal(arranged.replicas, target) and arranged.stamp == a["target_stamp"]
    r2 = run_json("report", "--table", path, "--target", out, "--json")
    assert r2["slot_changes"] == lib.slot_changes and r2["balanced"] is True


def _brute_senders(plan, current):
    rows = {p: list(current[p]) for p in set(plan.partition_id.tolist())}
    out = []
    for m in plan:
        row = rows[m.partition_id]
        out.append(m.source if m.source_current_index == 0 else row[0])
        for idx, val in ((m.source_current_index, -1), (m.destination_current_index, -1),
                         (m.destination_new_index, m.destination),
                         (m.source_new_index, m.source)):
            if idx >= 0:
                row[idx] = val
    return out


@pytest.mark.parametrize("change", [{"leave": [1]}, {"crash": [0]}, {"to_members": 7},
                                    {"crash": [3], "leave": [0]}])
def test_senders_follow_the_owner_step_by_step(change):
    table = balanced_table(500, 5, 4)
    c = topology_change(table, **change)
    plan = hzfast.plan_migrations(c.current, c.target)
    assert senders(plan, c.current.replicas).tolist() == _brute_senders(plan,
                                                                        c.current.replicas)
    # a COPY (no source) is sent by the owner, never by "no source"
    copies = plan.kind == hzfast.MigrationKind.COPY
    if copies.any():
        assert (senders(plan, c.current.replicas)[copies] >= 0).all()
