"""hzfast.ignite: Java hashCode, key -> partition and rendezvous affinity vs. Ignite vectors
and the pure-Python reference."""
import hashlib
import json
import random
import uuid

import numpy as np
import pyarrow as pa
import pytest

from hzfast import ignite
from hzfast.reference import ignite as ref

JAVA_TYPES = {"java.lang.String": "string", "java.lang.Integer": "int",
              "java.lang.Long": "long", "java.util.UUID": "uuid"}
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


# --------------------------------------------------------------------------- hashCode / partition
def test_key_to_partition_rule_text(ignite_vectors):
    # The rule we implement; fail loudly if the vector file's rule ever changes.
    rule = ignite_vectors["key_to_partition"]["rule"]
    assert "(h ^ (h >>> 16)) & mask" in rule and "safeAbs(Integer.MIN_VALUE)=0" in rule


def test_key_to_partition_vectors_scalar(ignite_vectors):
    vecs = ignite_vectors["key_to_partition"]["vectors"]
    assert len(vecs) == 41
    for v in vecs:
        kt = JAVA_TYPES[v["type"]]
        key = uuid.UUID(v["key"]) if kt == "uuid" else v["key"]
        assert ignite.java_hash_code(key, key_type=kt) == v["hashCode"], v
        if kt != "long":  # Long keys need key_type; others infer it
            assert ignite.java_hash_code(key) == v["hashCode"], v
        for parts, expected in v["partition"].items():
            assert ignite.partition_id(key, int(parts), key_type=kt) == expected, (v, parts)
            assert ref.partition(key, int(parts), kt) == expected, (v, parts)


@pytest.mark.parametrize("form", ["list", "numpy", "arrow", "chunked"])
def test_key_to_partition_vectors_bulk(ignite_vectors, form):
    vecs = ignite_vectors["key_to_partition"]["vectors"]
    for java_type, kt in JAVA_TYPES.items():
        group = [v for v in vecs if v["type"] == java_type]
        keys = [v["key"] for v in group]
        if kt == "uuid":
            if form != "list":
                continue
            keys = [uuid.UUID(k) for k in keys]
        elif form == "numpy":
            dtype = {"string": np.str_, "int": np.int32, "long": np.int64}[kt]
            keys = np.array(keys, dtype=dtype)
        elif form in ("arrow", "chunked"):
            typ = {"string": pa.string(), "int": pa.int32(), "long": pa.int64()}[kt]
            keys = pa.array(keys, type=typ)
            if form == "chunked":
                keys = pa.chunked_array([keys[:2], keys[2:]])
        hashes = ignite.java_hash_code(keys, key_type=kt)
        assert hashes.dtype == np.int32
        assert hashes.tolist() == [v["hashCode"] for v in group], (java_type, form)
        for parts in ("1024", "32768", "1000", "20000", "65000"):
            got = ignite.partition_ids(keys, int(parts), key_type=kt)
            assert got.dtype == np.int32
            assert got.tolist() == [v["partition"][parts] for v in group], (java_type, parts)


def test_dtype_inference_int32_vs_int64(ignite_vectors):
    # numpy int32 keys are Integers, int64 Longs: -1 hashes to -1 vs 0.
    assert ignite.java_hash_code(np.array([-1, -46], np.int32)).tolist() == [-1, -46]
    assert ignite.java_hash_code(np.array([-1, -46], np.int64)).tolist() == [0, 45]
    assert ignite.java_hash_code([-1, -46], key_type="long").tolist() == [0, 45]
    assert ignite.java_hash_code(np.int64(-1)) == 0
    assert ignite.java_hash_code(np.int32(-1)) == -1
    assert ignite.java_hash_code(2**40, key_type="long") == ref.long_hash(2**40)


def test_legacy_examples_use_current_rule(ignite_vectors):
    for ex in ignite_vectors["key_to_partition_legacy_examples"]:
        assert ignite.java_hash_code(ex["key"]) == ex["hashCode"]
        got = ignite.partition_id(ex["key"], ex["parts"])
        assert got == ex["current_mask_rule"]
        assert got != ex["legacy_mod_rule"]  # pre-mask Ignite (abs(h) % parts) differs


def test_pyignite_pow2_agrees_with_java(ignite_vectors):
    py = ignite_vectors["pyignite"]
    assert len(py["pow2"]) == 35
    for v in py["pow2"]:
        kt = v["key_type"].lower().replace("integer", "int")
        key = uuid.UUID(v["key"]) if kt == "uuid" else v["key"]
        assert ignite.java_hash_code(key, key_type=kt) == v["java_hash"], v
        got = ignite.partition_id(key, v["partitions"], key_type=kt)
        assert got == v["java_partition"] == v["partition"], v  # pyignite agrees here
        if v["hash"] != v["java_hash"]:
            # pyignite 0.6.1 hashes Longs to unbounded Python ints (not (int)(v ^ v>>>32));
            # only the low bits survive its mask, so the partition still agrees.
            assert kt == "long"


def test_pyignite_differences_documented(ignite_vectors):
    py = ignite_vectors["pyignite"]
    nb = py["non_bmp"]
    # Java hashes UTF-16 units (a non-BMP char counts twice); pyignite hashes code points.
    assert ignite.java_hash_code(nb["key"]) == nb["java_hash"] != nb["pyignite_hash"]
    assert ignite.partition_id(nb["key"], 1024) == nb["java_partition"] != \
        nb["pyignite_partition"]
    # pyignite 0.6.1 uses abs(hash // parts) for non-power-of-two counts: wrong or crashes.
    # (partition count 1000; pyignite hashes Python ints as LongObject, i.e. Java Long.)
    parts = 1000
    assert len(py["non_pow2"]) == 9
    for v in py["non_pow2"]:
        kt = "string" if isinstance(v["key"], str) else "long"
        got = ignite.partition_id(v["key"], parts, key_type=kt)
        assert got == v["java_partition"] == ref.partition(v["key"], parts, kt), v
        assert got != v["pyignite_partition"]  # an int or the string 'AssertionError'


def test_string_hash_non_bmp_and_surrogates():
    s = "a\U0001F600b\u00e9\u65e5"
    assert ignite.java_hash_code(s) == ref.string_hash(s)
    # Lone surrogates are legal Java chars: hashed as the unit itself (scalar path).
    assert ignite.java_hash_code("x\ud800") == 31 * ord("x") + 0xD800
    # A surrogate pair written as two code points hashes like the real character.
    assert ignite.java_hash_code("\ud83d\ude00") == ignite.java_hash_code("\U0001F600")


def _random_strings(rng, n):
    alphabet = ["a", "Z", "0", ":", "é", "ж", "日", "キ", "\U0001F600", "\U00010348", "\u07ff",
                "\u0800", "\uffff", "\U0010FFFF"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
            for _ in range(n)]


@pytest.mark.parametrize("parts", [1, 2, 1000, 1024, 271, 65000, 32768])
def test_bulk_strings_match_reference(parts):
    rng = random.Random(parts)
    keys = _random_strings(rng, 300)
    expected = [ref.partition(k, parts) for k in keys]
    exp_hash = [ref.string_hash(k) for k in keys]
    assert ignite.java_hash_code(keys).tolist() == exp_hash
    assert ignite.partition_ids(keys, parts).tolist() == expected
    assert ignite.partition_ids(tuple(keys), parts).tolist() == expected
    assert ignite.partition_ids(np.array(keys), parts).tolist() == expected
    assert ignite.partition_ids(np.array(keys, dtype=object), parts).tolist() == expected
    for typ in (pa.string(), pa.large_string()):
        arr = pa.array(keys, type=typ)
        assert ignite.partition_ids(arr, parts).tolist() == expected
        # sliced arrays (non-zero offset) and multi-chunk arrays
        assert ignite.partition_ids(arr[7:], parts).tolist() == expected[7:]
        chunked = pa.chunked_array([arr[:100], arr[100:250], arr[250:]])
        assert ignite.partition_ids(chunked, parts).tolist() == expected


@pytest.mark.parametrize("parts", [1, 3, 1000, 1024, 65000])
def test_bulk_ints_match_reference(parts):
    rng = np.random.default_rng(parts)
    v32 = rng.integers(-2**31, 2**31, 500, dtype=np.int64).astype(np.int32)
    v32[:3] = [-2**31, 2**31 - 1, 0]
    v64 = rng.integers(-2**63, 2**63 - 1, 500, dtype=np.int64)
    v64[:3] = [-2**63, 2**63 - 1, -1]
    exp32 = [ref.partition(int(x), parts, "int") for x in v32]
    exp64 = [ref.partition(int(x), parts, "long") for x in v64]
    assert ignite.partition_ids(v32, parts).tolist() == exp32
    assert ignite.partition_ids(v32.tolist(), parts).tolist() == exp32
    assert ignite.partition_ids(pa.array(v32), parts).tolist() == exp32
    assert ignite.partition_ids(v64, parts).tolist() == exp64
    assert ignite.partition_ids(pa.array(v64), parts).tolist() == exp64
    assert ignite.partition_ids(v64.tolist(), parts, key_type="long").tolist() == exp64
    assert ignite.java_hash_code(v64).tolist() == [ref.long_hash(int(x)) for x in v64]


def test_empty_batches():
    assert ignite.partition_ids([], 1024).shape == (0,)
    assert ignite.partition_ids(np.array([], np.int64)).dtype == np.int32
    assert ignite.partition_ids(pa.array([], pa.string())).shape == (0,)
    assert ignite.partition_ids(["", ""]).tolist() == [0, 0]


def test_uuid_keys_bulk(ignite_vectors):
    us = [uuid.UUID(int=random.Random(1).getrandbits(128)) for _ in range(5)] + [uuid.UUID(int=0)]
    expected = [ref.uuid_hash(u) for u in us]
    assert ignite.java_hash_code(us).tolist() == expected
    assert ignite.java_hash_code([str(u) for u in us], key_type="uuid").tolist() == expected
    assert ignite.partition_ids(us, 1000).tolist() == [ref.partition_from_hash(h, 1000)
                                                        for h in expected]


def test_arrow_invalid_utf8_rejected():
    offsets = np.array([0, 1, 3], dtype=np.int32)
    data = np.frombuffer(b"a\xc3\x28", dtype=np.uint8)
    arr = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(offsets.tobytes()),
                                                 pa.py_buffer(data.tobytes())])
    with pytest.raises(ValueError, match=r"keys\[1\] is not valid UTF-8"):
        ignite.partition_ids(arr)


# --------------------------------------------------------------------------- node weights
def test_node_weight_vectors(ignite_vectors):
    vecs = ignite_vectors["node_weight_hash"]["vectors"]
    assert len(vecs) == 10
    for v in vecs:
        assert ignite.node_weight(v["key0_nodeHash"], v["key1_part"]) == v["hash_signed_long"]
        assert ref.node_weight(v["key0_nodeHash"], v["key1_part"]) == v["hash_signed_long"]
    h = np.array([v["key0_nodeHash"] for v in vecs])
    p = np.array([v["key1_part"] for v in vecs])
    got = ignite.node_weight(h, p)
    assert got.dtype == np.int64
    assert got.tolist() == [v["hash_signed_long"] for v in vecs]


def test_node_weight_broadcasts():
    got = ignite.node_weight(np.array([0, 1, -1])[:, None], np.arange(4))
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
        assert ignite.consistent_id_hash(cid) == node["cid_hash"]
    ids = [node["id"] for node in s["nodes"]]
    nb = [node["macs"] for node in s["nodes"]] if s.get("excludeNeighbors") else None
    got = ignite.assign(cids, ids, partitions=s["partitions"], backups=s["backups"],
                        neighbors=nb)
    assert got.dtype == np.int32
    assert got.shape == (s["partitions"], min(s["backups"] + 1, len(cids)))
    assert got.tolist() == s["assignment_node_indexes"]
    assert sha256_compact(got.tolist()) == s["sha256_of_compact_json_assignment"]
    n = len(cids)
    assert np.bincount(got[:, 0], minlength=n).tolist() == s["primary_counts"]
    assert np.bincount(got[:, 1:].ravel(), minlength=n).tolist() == s["backup_counts"]
    # default node ids are UUID(int=i+1) - exactly the vectors' ids
    assert ignite.assign(cids, partitions=s["partitions"], backups=s["backups"],
                         neighbors=nb).tolist() == s["assignment_node_indexes"]
    # the reference agrees too
    assert ref.assign(cids, ids, partitions=s["partitions"], backups=s["backups"],
                      neighbors=nb) == s["assignment_node_indexes"]


def test_assignment_join_diff(ignite_vectors):
    s = scenarios(ignite_vectors)
    before = np.array(s["T1_3nodes_string_cids_b1_p1024"]["assignment_node_indexes"])
    join = s["T1_join_node-3"]
    after = ignite.assign(scenario_cids(join), partitions=1024, backups=1)
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
    got = ignite.assign(cids, partitions=64, backups=1, neighbors=macs)
    assert all(macs[a] != macs[b] for a, b in got.tolist())  # the vector's 'check'
    plain = ignite.assign(cids, partitions=64, backups=1)
    assert plain.tolist() == s["without_excludeNeighbors"]


def test_assignment_exclude_neighbors_too_few_groups():
    # 4 nodes on 2 hosts, 3 backups: only 2 pass the criterion; Ignite then walks the sorted
    # order again and appends the skipped nodes, so the row is full.
    cids = ["host0:47500", "host0:47501", "host1:47500", "host1:47501"]
    macs = ["MAC-0", "MAC-0", "MAC-1", "MAC-1"]
    got = ignite.assign(cids, partitions=64, backups=3, neighbors=macs)
    plain = ignite.assign(cids, partitions=64, backups=3)
    assert got.shape == (64, 4)
    for row, order in zip(got.tolist(), plain.tolist()):
        assert row[0] == order[0]
        assert macs[row[1]] != macs[row[0]]
        assert row[1] == next(x for x in order if macs[x] != macs[order[0]])
        assert row[2:] == [x for x in order[1:] if x not in row[:2]]
    assert got.tolist() == ref.assign(cids, partitions=64, backups=3, neighbors=macs)


def test_assignment_replicated(ignite_vectors):
    s = scenarios(ignite_vectors)["T5_replicated_backups_INT_MAX_p16"]
    assert s["backups"] == ignite.REPLICATED
    # The scenario lists node ids only; its consistent ids are "node-0".."node-3"
    # (the T1 naming) - that is what reproduces every row.
    cids = [f"node-{i}" for i in range(len(s["nodes_in_topology_order"]))]
    got = ignite.assign(cids, s["nodes_in_topology_order"], partitions=16,
                        backups=s["backups"], neighbors=["m"] * 4)  # neighbours ignored
    assert got.tolist() == s["assignment_node_indexes"]
    for row in got.tolist():  # the scenario's rule text
        assert row[1:] == [i for i in range(4) if i != row[0]]
    # primaries are the plain rendezvous primaries
    assert (got[:, 0] == ignite.assign(cids, partitions=16)[:, 0]).all()


def test_assignment_20000_x_16(ignite_vectors):
    s = scenarios(ignite_vectors)["T6_16nodes_b1_p20000_summary"]
    cids = scenario_cids(s)
    ids = [node["id"] for node in s["nodes"]]
    for cid, node in zip(cids, s["nodes"]):
        assert ignite.consistent_id_hash(cid) == node["cid_hash"]
    got = ignite.assign(cids, ids, partitions=s["partitions"], backups=s["backups"])
    assert got.shape == (20000, 2)
    assert got[:32].tolist() == s["first32_partitions"]
    assert sha256_compact(got.tolist()) == s["sha256_of_compact_json_assignment"]
    assert np.bincount(got[:, 0], minlength=16).tolist() == s["primary_counts"]
    assert np.bincount(got[:, 1], minlength=16).tolist() == s["backup_counts"]
    # 2 backups extends the same order: the first two columns are unchanged
    got3 = ignite.assign(cids, ids, partitions=20000, backups=2)
    assert (got3[:, :2] == got).all()


def test_tie_break_by_node_id():
    # "Aa" and "BB" share a hashCode, so every weight ties and UUID.compareTo decides;
    # the comparison is signed: 0x8000... (negative msb) sorts before 0x0000...
    cids = ["Aa", "BB"]
    hi = "80000000-0000-0000-0000-000000000000"
    lo = "00000000-0000-0000-0000-000000000001"
    assert (ignite.assign(cids, [lo, hi], partitions=8, backups=1) == [1, 0]).all()
    assert (ignite.assign(cids, [hi, lo], partitions=8, backups=1) == [0, 1]).all()
    # signed lsb too
    a = "00000000-0000-0000-8000-000000000000"
    b = "00000000-0000-0000-0000-000000000000"
    assert (ignite.assign(cids, [uuid.UUID(a), uuid.UUID(b)], partitions=4)[:, 0] == 0).all()


def test_single_node_and_shapes():
    assert ignite.assign(["only"], partitions=5, backups=3).tolist() == [[0]] * 5
    assert ignite.assign(["a", "b", "c"], partitions=7, backups=10).shape == (7, 3)
    assert ignite.assign(["a", "b", "c"], partitions=7).shape == (7, 1)
    assert ignite.assign(["a", "b"], partitions=1).shape == (1, 1)
    assert ignite.assign(np.array(["a", "b"]), partitions=3).shape == (3, 1)


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
    got = ignite.assign(cids, node_ids, partitions=partitions, backups=backups,
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
    got = ignite.assign(cids, partitions=50, backups=60, neighbors=macs)
    assert got.tolist() == ref.assign(cids, partitions=50, backups=60, neighbors=macs)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad,exc", [(0, ValueError), (65001, ValueError), (-1, ValueError),
                                     (1024.0, TypeError), ("1024", TypeError),
                                     (True, TypeError), (None, TypeError)])
def test_bad_partitions(bad, exc):
    with pytest.raises(exc, match="partitions"):
        ignite.partition_ids(["a"], bad)
    with pytest.raises(exc, match="partitions"):
        ignite.partition_id("a", bad)
    with pytest.raises(exc, match="partitions"):
        ignite.assign(["a", "b"], partitions=bad)


def test_partition_bounds_ok():
    assert ignite.partition_ids(["a"], 1).tolist() == [0]
    assert ignite.partition_ids(["a"], 65000).tolist() == [97]
    assert ignite.assign(["a", "b"], partitions=65000).shape == (65000, 1)


def test_bad_assign_arguments():
    with pytest.raises(ValueError, match=r"consistent_ids\[2\].*duplicates"):
        ignite.assign(["a", "b", "a"])
    with pytest.raises(ValueError, match="consistent_ids"):
        ignite.assign(["a", uuid.UUID(int=1), uuid.UUID(int=1)])
    with pytest.raises(ValueError, match="consistent_ids"):
        ignite.assign([])
    with pytest.raises(ValueError, match="consistent_ids"):
        ignite.assign(None)
    with pytest.raises(TypeError, match="consistent_ids"):
        ignite.assign("abc")
    with pytest.raises(ValueError, match=r"consistent_ids\[1\] is None"):
        ignite.assign(["a", None])
    with pytest.raises(TypeError, match=r"consistent_ids\[1\]"):
        ignite.assign(["a", 1.5])
    with pytest.raises(TypeError, match=r"consistent_ids\[0\]"):
        ignite.assign([True, "b"])
    with pytest.raises(ValueError, match="backups"):
        ignite.assign(["a", "b"], backups=-1)
    with pytest.raises(ValueError, match="backups"):
        ignite.assign(["a", "b"], backups=2**31)
    with pytest.raises(TypeError, match="backups"):
        ignite.assign(["a", "b"], backups=1.0)
    with pytest.raises(ValueError, match="node_ids"):
        ignite.assign(["a", "b"], [str(uuid.UUID(int=1))])
    with pytest.raises(ValueError, match=r"node_ids\[1\].*not a valid UUID"):
        ignite.assign(["a", "b"], [str(uuid.UUID(int=1)), "not-a-uuid"])
    with pytest.raises(ValueError, match=r"node_ids\[1\].*duplicates"):
        ignite.assign(["a", "b"], [uuid.UUID(int=1), str(uuid.UUID(int=1))])
    with pytest.raises(TypeError, match=r"node_ids\[0\]"):
        ignite.assign(["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="neighbors"):
        ignite.assign(["a", "b"], neighbors=["m"])
    with pytest.raises(ValueError, match=r"neighbors\[1\]"):
        ignite.assign(["a", "b"], neighbors=["m", None])
    with pytest.raises(TypeError, match=r"neighbors\[0\]"):
        ignite.assign(["a", "b"], neighbors=[["m"], "n"])


def test_bad_keys():
    with pytest.raises(ValueError, match="keys"):
        ignite.partition_ids(None)
    with pytest.raises(ValueError, match="key"):
        ignite.partition_id(None)
    with pytest.raises(ValueError, match="keys"):
        ignite.java_hash_code(None)
    with pytest.raises(ValueError, match=r"keys\[1\] is None"):
        ignite.partition_ids(["a", None])
    with pytest.raises(ValueError, match=r"keys\[1\] is null"):
        ignite.partition_ids(pa.array(["a", None]))
    with pytest.raises(TypeError, match="keys"):
        ignite.partition_ids(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="keys"):
        ignite.partition_ids(np.array([1, 2], dtype=np.uint8))
    with pytest.raises(TypeError, match="keys"):
        ignite.partition_ids(pa.array([1.0]))
    with pytest.raises(TypeError, match="keys"):
        ignite.partition_ids(["a", 1])
    with pytest.raises(TypeError, match="keys"):
        ignite.partition_ids("abc")  # a single key is not a batch
    with pytest.raises(TypeError, match="key"):
        ignite.partition_id(["abc"])  # a batch is not a key
    with pytest.raises(TypeError, match="key"):
        ignite.partition_id(1.5)
    with pytest.raises(TypeError, match="bool"):
        ignite.partition_id(True)
    with pytest.raises(ValueError, match="key_type='long'"):
        ignite.partition_id(2**40)
    with pytest.raises(ValueError, match="keys"):
        ignite.partition_ids([1, 2**40])
    with pytest.raises(ValueError, match="Long"):
        ignite.java_hash_code(2**64, key_type="long")
    with pytest.raises(ValueError, match="key_type"):
        ignite.partition_ids(["a"], key_type="double")
    with pytest.raises(TypeError, match="key_type"):
        ignite.partition_ids(["a"], key_type=3)
    with pytest.raises(TypeError, match="key_type"):
        ignite.partition_ids(["a"], key_type="long")
    with pytest.raises(ValueError, match="serialized"):
        ignite.partition_ids([b"12345678"])
    with pytest.raises(ValueError, match=r"keys\[1\].*UUID"):
        ignite.java_hash_code(["00000000-0000-0000-0000-000000000001", "x"], key_type="uuid")
    with pytest.raises(ValueError, match="keys"):
        ignite.partition_ids(np.zeros((2, 2), np.int64))


def test_bad_node_weight():
    with pytest.raises(ValueError, match="cid_hash"):
        ignite.node_weight(2**31, 0)
    with pytest.raises(ValueError, match="partition"):
        ignite.node_weight(0, -2**31 - 1)
    with pytest.raises(TypeError, match="cid_hash"):
        ignite.node_weight(np.array([1.5]), 0)
    with pytest.raises(TypeError, match="partition"):
        ignite.node_weight(0, "1")


def test_inputs_not_mutated():
    keys = np.array([5, -7, 2**40], dtype=np.int64)
    keys_copy = keys.copy()
    strs = ["a", "\U0001F600"]
    cids = ["a", "b", "c"]
    ids = [str(uuid.UUID(int=3)), str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]
    macs = ["x", "y", "x"]
    ignite.partition_ids(keys, 1000)
    ignite.partition_ids(strs)
    ignite.assign(cids, ids, partitions=10, backups=2, neighbors=macs)
    assert (keys == keys_copy).all()
    assert strs == ["a", "\U0001F600"]
    assert cids == ["a", "b", "c"] and macs == ["x", "y", "x"]
    assert ids == [str(uuid.UUID(int=3)), str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]
    ro = np.array([1, 2, 3], np.int32)
    ro.flags.writeable = False
    assert ignite.partition_ids(ro, 1000).tolist() == [1, 2, 3]


def test_deterministic():
    a = ignite.assign([f"n{i}" for i in range(9)], partitions=500, backups=2)
    b = ignite.assign([f"n{i}" for i in range(9)], partitions=500, backups=2)
    assert (a == b).all()


def test_long_mostly_ascii_strings_match_reference():
    # exercises the kernel's 4-byte ASCII fast path and its hand-over to the UTF-8 decoder
    rng = random.Random(11)
    alphabet = "abcXYZ019:-_ " * 6 + "éж日\U0001F600"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90)))
            for _ in range(400)]
    expected = [ref.string_hash(k) for k in keys]
    assert ignite.java_hash_code(keys).tolist() == expected
    assert ignite.java_hash_code(pa.array(keys, pa.large_string())).tolist() == expected
    for k in keys[:50]:
        assert ignite.java_hash_code(k) == ref.string_hash(k)


# --------------------------------------------------------------------------- update counters
def _state(c):
    return {"lwm": c.lwm, "hwm": c.hwm, "gaps_items": [list(g) for g in c.gaps],
            "highest_applied": c.highest_applied(), "sequential": c.sequential}


def _apply(c, step):
    op, args = step["op"], step["args"]
    if op == "update":
        return c.update(*args)
    if op == "update_abs":
        return c.update_abs(*args)
    if op == "reserve":
        return c.reserve(*args)
    if op == "finalize":
        return c.finalize()
    if op == "reset":
        return c.reset()
    raise AssertionError(op)


def test_update_counter_step_scenarios(ignite_vectors):
    scen = ignite_vectors["partition_update_counter"]["scenarios"]
    assert len(scen) == 11
    ran = 0
    for s in scen:
        if "steps" not in s:
            continue
        c = ignite.UpdateCounter()
        rets = []
        for i, step in enumerate(s["steps"]):
            if "raises" in step:
                with pytest.raises(ignite.UpdateCounterError, match="Failed to update"):
                    _apply(c, step)
            else:
                ret = _apply(c, step)
                rets.append(ret)
                assert ret == step["ret"], (s["name"], i)
            assert _state(c) == step["state_after"], (s["name"], i)
            if i == 3 and "after_step_4_iterator_len" in (s.get("assert") or {}):
                assert len(c.gaps) == s["assert"]["after_step_4_iterator_len"]
        a = s.get("assert") or {}
        if "returns" in a:
            assert rets == a["returns"]
        if "iterator" in a:
            assert [list(g) for g in c.gaps] == a["iterator"]
        if "final_sequential" in a:
            assert c.sequential == a["final_sequential"]
        ran += 1
    assert ran == 8  # the other 3 (ops/ranges/items) have their own tests below


def test_update_counter_max_gaps(ignite_vectors):
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "testMaxGaps")
    c = ignite.UpdateCounter()
    for i in range(1, 10001):
        assert c.update(3 * i, 3 * i + 1)
    assert len(c.gaps) == s["derived"]["gap_items_before_last"]
    assert c.lwm == s["derived"]["lwm"]
    assert s["assert"]["last_call_raises"]
    with pytest.raises(ignite.UpdateCounterError, match="Too many gaps"):
        c.update(3 * 10002, 3 * 10002 + 1)


def test_update_counter_random_permutations(ignite_vectors):
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "testRandomUpdates_deterministic")
    assert len(s["permutations"]) == 3
    for perm in s["permutations"]:
        assert sorted(map(tuple, perm)) == sorted(map(tuple, s["ranges"]))
        c = ignite.UpdateCounter()
        for start, delta in perm:
            assert c.update(start, delta)
        assert c.lwm == s["assert"]["lwm_after_any_permutation"]
        assert c.sequential is s["assert"]["sequential"]


def test_update_counter_gap_serialization(ignite_vectors):
    s = next(x for x in ignite_vectors["partition_update_counter"]["scenarios"]
             if x["name"] == "gaps_serialization")
    c = ignite.UpdateCounter()
    for start, delta in s["items"]:
        c.update(start, delta)
    raw = c.to_bytes()
    assert raw.hex() == s["bytes_hex"]
    again = ignite.UpdateCounter(0, raw)
    assert again.gaps == [tuple(x) for x in s["items"]]
    assert ignite.UpdateCounter().to_bytes() is None
    with pytest.raises(ValueError, match="gaps"):
        ignite.UpdateCounter(0, raw[:-1])


def test_volatile_update_counter(ignite_vectors):
    v = ignite_vectors["partition_update_counter_volatile"]
    c = ignite.VolatileUpdateCounter()
    for step in v["example"]:
        ret = _apply(c, step)
        if "ret" in step:
            assert ret == step["ret"], step
        assert c.lwm == step["lwm"] == c.reserved() == c.hwm
    assert c.sequential and c.finalize() == [] and c.to_bytes() is None and c.gaps == []
    assert c.next() == 13 and c.next(5) == 13 and c.lwm == 18
    c.reset()
    assert c.empty()


def test_update_counter_bad_input():
    c = ignite.UpdateCounter()
    with pytest.raises(TypeError, match="start"):
        c.update(1.5, 1)
    with pytest.raises(ValueError, match="delta"):
        c.reserve(2**63)
    with pytest.raises(TypeError, match="val"):
        ignite.VolatileUpdateCounter().update_abs("3")


def test_uuid_keys_object_array_and_mixed():
    us = [uuid.UUID(int=5), uuid.UUID(int=2**127 + 9)]
    arr = np.array(us, dtype=object)
    assert ignite.java_hash_code(arr).tolist() == [ref.uuid_hash(u) for u in us]
    with pytest.raises(TypeError, match=r"keys\[1\]"):
        ignite.java_hash_code([us[0], 5])
