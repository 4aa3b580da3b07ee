"""hzfast.ignite.affinity: rendezvous node weights and assignments vs. the Ignite vectors and
the pure-Python reference."""
import hashlib
import json
import random
import uuid

import numpy as np
import pytest

from hzfast.ignite import affinity
from hzfast.reference import ignite as ref

INT_MAX = 2**31 - 1



def sha256_compact(rows) -> str:
    """The vectors' checksum: sha256 of the compact JSON (no spaces) of the nested list."""
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()



def scenario_cids(scenario):
    """Vector consistent ids; 'uuid:...' marks a java.util.UUID consistent id."""
    out = []
    for node in scenario["nodes"]:
        c = node["consistentId"]
        out.append(uuid.UUID(c[5:]) if isinstance(c, str) and c.startswith("uuid:") else c)
    return out



def scenarios(vectors):
    return {s["name"]: s for s in vectors["affinity_assignments"]["scenarios"]}



# --------------------------------------------------------------------------- node weights
def test_node_weight_vectors(ignite_vectors):
    vecs = ignite_vectors["node_weight_hash"]["vectors"]
    assert len(vecs) == 10
    for v in vecs:
        assert affinity.node_weight(v["key0_nodeHash"], v["key1_part"]) == v["hash_signed_long"]
        assert ref.node_weight(v["key0_nodeHash"], v["key1_part"]) == v["hash_signed_long"]
    h = np.array([v["key0_nodeHash"] for v in vecs])
    p = np.array([v["key1_part"] for v in vecs])
    got = affinity.node_weight(h, p)
    assert got.dtype == np.int64
    assert got.tolist() == [v["hash_signed_long"] for v in vecs]



def test_node_weight_broadcasts():
    got = affinity.node_weight(np.array([0, 1, -1])[:, None], np.arange(4))
    assert got.shape == (3, 4)
    assert got[2, 3] == ref.node_weight(-1, 3)



# --------------------------------------------------------------------------- assignments
def test_assignment_rule_text(ignite_vectors):
    rule = ignite_vectors["affinity_assignments"]["rule"]
    assert "primaryAndBackups=min(backups+1, n)" in rule and "ATTR_MACS" in rule



@pytest.mark.parametrize("name", ["T1_3nodes_string_cids_b1_p1024", "T1_join_node-3",
                                  "T2_5nodes_uuid_cids_b2_p1024",
                                  "T3_excludeNeighbors_4nodes_2hosts_b1_p64"])
def test_assignment_scenarios(ignite_vectors, name):
    s = scenarios(ignite_vectors)[name]
    cids = scenario_cids(s)
    for cid, node in zip(cids, s["nodes"]):
        assert affinity.consistent_id_hash(cid) == node["cid_hash"]
    ids = [node["id"] for node in s["nodes"]]
    nb = [node["macs"] for node in s["nodes"]] if s.get("excludeNeighbors") else None
    got = affinity.assign(cids, ids, partitions=s["partitions"], backups=s["backups"],
                        neighbors=nb)
    assert got.dtype == np.int32
    assert got.shape == (s["partitions"], min(s["backups"] + 1, len(cids)))
    assert got.tolist() == s["assignment_node_indexes"]
    assert sha256_compact(got.tolist()) == s["sha256_of_compact_json_assignment"]
    n = len(cids)
    assert np.bincount(got[:, 0], minlength=n).tolist() == s["primary_counts"]
    assert np.bincount(got[:, 1:].ravel(), minlength=n).tolist() == s["backup_counts"]
    # default node ids are UUID(int=i+1) - exactly the vectors' ids
    assert affinity.assign(cids, partitions=s["partitions"], backups=s["backups"],
                         neighbors=nb).tolist() == s["assignment_node_indexes"]
    # the reference agrees too
    assert ref.assign(cids, ids, partitions=s["partitions"], backups=s["backups"],
                      neighbors=nb) == s["assignment_node_indexes"]



def test_assignment_join_diff(ignite_vectors):
    s = scenarios(ignite_vectors)
    before = np.array(s["T1_3nodes_string_cids_b1_p1024"]["assignment_node_indexes"])
    join = s["T1_join_node-3"]
    after = affinity.assign(scenario_cids(join), partitions=1024, backups=1)
    diff = join["diff_vs_T1"]
    changed = np.flatnonzero(before[:, 0] != after[:, 0])
    assert changed.size == diff["primary_changed_count"]
    assert changed[:20].tolist() == diff["primary_changed_first20"]
    assert (after[changed, 0] == 3).sum() == diff["new_primary_is_joined_node_count"]
    owner_changed = sum(set(a) != set(b) for a, b in zip(before.tolist(), after.tolist()))
    assert owner_changed == diff["owner_set_changed_count"]



def test_assignment_exclude_neighbors(ignite_vectors):
    s = scenarios(ignite_vectors)["T3_excludeNeighbors_4nodes_2hosts_b1_p64"]
    cids = scenario_cids(s)
    macs = [node["macs"] for node in s["nodes"]]
    got = affinity.assign(cids, partitions=64, backups=1, neighbors=macs)
    assert all(macs[a] != macs[b] for a, b in got.tolist())  # the vector's 'check'
    plain = affinity.assign(cids, partitions=64, backups=1)
    assert plain.tolist() == s["without_excludeNeighbors"]



def test_assignment_exclude_neighbors_too_few_groups():
    # 4 nodes on 2 hosts, 3 backups: only 2 pass the criterion; Ignite then walks the sorted
    # order again and appends the skipped nodes, so the row is full.
    cids = ["host0:47500", "host0:47501", "host1:47500", "host1:47501"]
    macs = ["MAC-0", "MAC-0", "MAC-1", "MAC-1"]
    got = affinity.assign(cids, partitions=64, backups=3, neighbors=macs)
    plain = affinity.assign(cids, partitions=64, backups=3)
    assert got.shape == (64, 4)
    for row, order in zip(got.tolist(), plain.tolist()):
        assert row[0] == order[0]
        assert macs[row[1]] != macs[row[0]]
        assert row[1] == next(x for x in order if macs[x] != macs[order[0]])
        assert row[2:] == [x for x in order[1:] if x not in row[:2]]
    assert got.tolist() == ref.assign(cids, partitions=64, backups=3, neighbors=macs)



def test_assignment_replicated(ignite_vectors):
    s = scenarios(ignite_vectors)["T5_replicated_backups_INT_MAX_p16"]
    assert s["backups"] == affinity.REPLICATED
    # The scenario lists node ids only; its consistent ids are "node-0".."node-3"
    # (the T1 naming) - that is what reproduces every row.
    cids = [f"node-{i}" for i in range(len(s["nodes_in_topology_order"]))]
    got = affinity.assign(cids, s["nodes_in_topology_order"], partitions=16,
                        backups=s["backups"], neighbors=["m"] * 4)  # neighbours ignored
    assert got.tolist() == s["assignment_node_indexes"]
    for row in got.tolist():  # the scenario's rule text
        assert row[1:] == [i for i in range(4) if i != row[0]]
    # primaries are the plain rendezvous primaries
    assert (got[:, 0] == affinity.assign(cids, partitions=16)[:, 0]).all()



def test_assignment_20000_x_16(ignite_vectors):
    s = scenarios(ignite_vectors)["T6_16nodes_b1_p20000_summary"]
    cids = scenario_cids(s)
    ids = [node["id"] for node in s["nodes"]]
    for cid, node in zip(cids, s["nodes"]):
        assert affinity.consistent_id_hash(cid) == node["cid_hash"]
    got = affinity.assign(cids, ids, partitions=s["partitions"], backups=s["backups"])
    assert got.shape == (20000, 2)
    assert got[:32].tolist() == s["first32_partitions"]
    assert sha256_compact(got.tolist()) == s["sha256_of_compact_json_assignment"]
    assert np.bincount(got[:, 0], minlength=16).tolist() == s["primary_counts"]
    assert np.bincount(got[:, 1], minlength=16).tolist() == s["backup_counts"]
    # 2 backups extends the same order: the first two columns are unchanged
    got3 = affinity.assign(cids, ids, partitions=20000, backups=2)
    assert (got3[:, :2] == got).all()



def test_tie_break_by_node_id():
    # "Aa" and "BB" share a hashCode, so every weight ties and UUID.compareTo decides;
    # the comparison is signed: 0x8000... (negative msb) sorts before 0x0000...
    cids = ["Aa", "BB"]
    hi = "80000000-0000-0000-0000-000000000000"
    lo = "00000000-0000-0000-0000-000000000001"
    assert (affinity.assign(cids, [lo, hi], partitions=8, backups=1) == [1, 0]).all()
    assert (affinity.assign(cids, [hi, lo], partitions=8, backups=1) == [0, 1]).all()
    # signed lsb too
    a = "00000000-0000-0000-8000-000000000000"
    b = "00000000-0000-0000-0000-000000000000"
    assert (affinity.assign(cids, [uuid.UUID(a), uuid.UUID(b)], partitions=4)[:, 0] == 0).all()



def test_single_node_and_shapes():
    assert affinity.assign(["only"], partitions=5, backups=3).tolist() == [[0]] * 5
    assert affinity.assign(["a", "b", "c"], partitions=7, backups=10).shape == (7, 3)
    assert affinity.assign(["a", "b", "c"], partitions=7).shape == (7, 1)
    assert affinity.assign(["a", "b"], partitions=1).shape == (1, 1)
    assert affinity.assign(np.array(["a", "b"]), partitions=3).shape == (3, 1)



def _random_topology(rng: random.Random):
    n = rng.randint(1, 40)
    pool = ["Aa", "BB", "AaAa", "BBBB", "AaBB", "C#"]  # hashCode collisions on purpose
    cids = []
    kinds = rng.choice(["str", "mixed"])
    while len(cids) < n:
        r = rng.random()
        if r < 0.15:
            c = rng.choice(pool)
        elif kinds == "mixed" and r < 0.3:
            c = uuid.UUID(int=rng.getrandbits(128))
        elif kinds == "mixed" and r < 0.45:
            c = rng.randint(-2**31, 2**31 - 1)
        else:
            c = f"10.0.{rng.randint(0, 255)}.{rng.randint(0, 255)}:{rng.randint(47500, 47510)}"
        if c not in cids:
            cids.append(c)
    if rng.random() < 0.5:
        node_ids = None
    else:
        node_ids, seen = [], set()
        while len(node_ids) < n:
            # few random bits so msb/lsb signs and ties in msb are common
            u = uuid.UUID(int=rng.choice([0, 1 << 127, 1 << 63, rng.getrandbits(128)])
                          ^ rng.getrandbits(4) ^ (rng.getrandbits(2) << 124))
            if u not in seen:
                seen.add(u)
                node_ids.append(u if rng.random() < 0.5 else str(u))
    neighbors = None
    if rng.random() < 0.5:
        groups = rng.randint(1, n)
        neighbors = [f"MAC-{rng.randrange(groups)}" for _ in range(n)]
    backups = rng.choice([0, 1, 2, 3, rng.randint(0, 45), INT_MAX])
    partitions = rng.choice([1, 7, 64, 271, 1024, rng.randint(1, 300)])
    return cids, node_ids, partitions, backups, neighbors



@pytest.mark.parametrize("seed", range(60))
def test_assign_matches_reference_random(seed):
    rng = random.Random(seed)
    cids, node_ids, partitions, backups, neighbors = _random_topology(rng)
    got = affinity.assign(cids, node_ids, partitions=partitions, backups=backups,
                        neighbors=neighbors)
    exp = ref.assign(cids, node_ids, partitions=partitions, backups=backups,
                     neighbors=neighbors)
    assert got.tolist() == exp
    n = len(cids)
    width = n if backups == INT_MAX else min(backups + 1, n)
    assert got.shape == (partitions, width)
    assert all(len(set(row)) == width for row in got.tolist())



def test_assign_large_topology_heap_path():
    # many nodes with exclusion exercises the heap walk well beyond a few levels
    rng = random.Random(7)
    cids = [f"node-{i}" for i in range(300)]
    macs = [f"h{rng.randrange(40)}" for _ in cids]
    got = affinity.assign(cids, partitions=50, backups=60, neighbors=macs)
    assert got.tolist() == ref.assign(cids, partitions=50, backups=60, neighbors=macs)



def test_deterministic():
    a = affinity.assign([f"n{i}" for i in range(9)], partitions=500, backups=2)
    b = affinity.assign([f"n{i}" for i in range(9)], partitions=500, backups=2)
    assert (a == b).all()



def test_default_node_ids_and_consistent_id_hash():
    assert affinity.default_node_ids(0) == []
    assert affinity.default_node_ids(3) == [uuid.UUID(int=i) for i in (1, 2, 3)]
    with pytest.raises(ValueError, match="n must be >= 0"):
        affinity.default_node_ids(-1)
    for cid in ["node-0", "Aa", uuid.UUID(int=2**127 + 5), 7, -2**31]:
        assert affinity.consistent_id_hash(cid) == ref.hash_code(cid), cid
    assert affinity.consistent_id_hash(np.int32(-9)) == -9  # an Integer
    # ints outside int32 (and numpy int64) are Longs
    assert affinity.consistent_id_hash(2**40) == ref.long_hash(2**40)
    assert affinity.consistent_id_hash(np.int64(-1)) == ref.long_hash(-1) == 0
    with pytest.raises(ValueError, match="consistent_id"):
        affinity.consistent_id_hash(2**64)
    with pytest.raises(TypeError, match="consistent_id"):
        affinity.consistent_id_hash(1.5)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad,exc", [(0, ValueError), (65001, ValueError), (-1, ValueError),
                                     (1024.0, TypeError), ("1024", TypeError),
                                     (True, TypeError), (None, TypeError)])
def test_bad_partitions(bad, exc):
    with pytest.raises(exc, match="partitions"):
        affinity.assign(["a", "b"], partitions=bad)


def test_partition_bounds_ok():
    assert affinity.assign(["a", "b"], partitions=65000).shape == (65000, 1)


def test_bad_assign_arguments():
    with pytest.raises(ValueError, match=r"consistent_ids\[2\].*duplicates"):
        affinity.assign(["a", "b", "a"])
    with pytest.raises(ValueError, match="consistent_ids"):
        affinity.assign(["a", uuid.UUID(int=1), uuid.UUID(int=1)])
    with pytest.raises(ValueError, match="consistent_ids"):
        affinity.assign([])
    with pytest.raises(ValueError, match="consistent_ids"):
        affinity.assign(None)
    with pytest.raises(TypeError, match="consistent_ids"):
        affinity.assign("abc")
    with pytest.raises(ValueError, match=r"consistent_ids\[1\] is None"):
        affinity.assign(["a", None])
    with pytest.raises(TypeError, match=r"consistent_ids\[1\]"):
        affinity.assign(["a", 1.5])
    with pytest.raises(TypeError, match=r"consistent_ids\[0\]"):
        affinity.assign([True, "b"])
    with pytest.raises(ValueError, match="backups"):
        affinity.assign(["a", "b"], backups=-1)
    with pytest.raises(ValueError, match="backups"):
        affinity.assign(["a", "b"], backups=2**31)
    with pytest.raises(TypeError, match="backups"):
        affinity.assign(["a", "b"], backups=1.0)
    with pytest.raises(ValueError, match="node_ids"):
        affinity.assign(["a", "b"], [str(uuid.UUID(int=1))])
    with pytest.raises(ValueError, match=r"node_ids\[1\].*not a valid UUID"):
        affinity.assign(["a", "b"], [str(uuid.UUID(int=1)), "not-a-uuid"])
    with pytest.raises(ValueError, match=r"node_ids\[1\].*duplicates"):
        affinity.assign(["a", "b"], [uuid.UUID(int=1), str(uuid.UUID(int=1))])
    with pytest.raises(TypeError, match=r"node_ids\[0\]"):
        affinity.assign(["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="neighbors"):
        affinity.assign(["a", "b"], neighbors=["m"])
    with pytest.raises(ValueError, match=r"neighbors\[1\]"):
        affinity.assign(["a", "b"], neighbors=["m", None])
    with pytest.raises(TypeError, match=r"neighbors\[0\]"):
        affinity.assign(["a", "b"], neighbors=[["m"], "n"])



def test_bad_node_weight():
    with pytest.raises(ValueError, match="cid_hash"):
        affinity.node_weight(2**31, 0)
    with pytest.raises(ValueError, match="partition"):
        affinity.node_weight(0, -2**31 - 1)
    with pytest.raises(TypeError, match="cid_hash"):
        affinity.node_weight(np.array([1.5]), 0)
    with pytest.raises(TypeError, match="partition"):
        affinity.node_weight(0, "1")



def test_inputs_not_mutated():
    cids = ["a", "b", "c"]
    ids = [str(uuid.UUID(int=3)), str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]
    macs = ["x", "y", "x"]
    affinity.assign(cids, ids, partitions=10, backups=2, neighbors=macs)
    assert cids == ["a", "b", "c"] and macs == ["x", "y", "x"]
    assert ids == [str(uuid.UUID(int=3)), str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]
