"""Tests of hzfast.members: Member, Members (construction, fields, copies, equality, group ids,
serialisation, bad input).

Expectations come from the documented contract (docstrings of hzfast/members.py and
docs/design.md §8.3), written out by hand or re-derived here in another way (``ipaddress``
for the generated hosts, ``uuid`` fields for the default UUIDs, a property check for dense
first-seen group ids) - never by calling the code under test a second time.
"""
import dataclasses
import ipaddress
import json
import pickle
import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hzfast
from hzfast import Member, Members

FIELDS = ("addresses", "uuids", "hosts", "zones", "lite", "groups")


def four():
    """A registry in which every column differs from its default."""
    return Members(["h1:1", "h1:2", "h2:1", "h3:9"], uuids=["u0", "u1", "u2", "u3"],
                   hosts=["rackA-1", "rackA-1", "rackB-1", "rackB-2"],
                   zones=["eu", "eu", "us", "us"], lite=[False, True, False, False],
                   groups=["g1", "g1", "g2", "g1"])


def assert_dense_first_seen(ids, labels):
    """ids[i] == ids[j] exactly when labels[i] == labels[j], and the ids are numbered
    0, 1, 2, ... in the order their label first appears."""
    ids = list(ids)
    assert len(ids) == len(labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            assert (ids[i] == ids[j]) == (labels[i] == labels[j]), (i, j)
    firsts = [i for i in range(len(labels)) if labels[i] not in labels[:i]]
    assert [ids[i] for i in firsts] == list(range(len(firsts)))


# ----------------------------------------------------------------------------- Member
def test_member_is_a_frozen_value_object():
    a = Member(0, "u", "h:1", "h", "z", False, "g")
    assert a == Member(0, "u", "h:1", "h", "z", False, "g")
    assert a != Member(0, "u", "h:1", "h", "z", True, "g")
    assert hash(a) == hash(Member(0, "u", "h:1", "h", "z", False, "g"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.lite = True
    assert [f.name for f in dataclasses.fields(Member)] == [
        "index", "uuid", "address", "host", "zone", "lite", "group"]


def test_public_names():
    assert hzfast.Members is Members and hzfast.Member is Member
    import hzfast.members as mod
    assert mod.__all__ == ["Member", "Members"]


# ----------------------------------------------------------------------------- construction
def test_explicit_columns_are_kept_per_member():
    m = four()
    assert len(m) == m.count == 4
    assert m.addresses == ("h1:1", "h1:2", "h2:1", "h3:9")
    assert m.uuids == ("u0", "u1", "u2", "u3")
    assert m.hosts == ("rackA-1", "rackA-1", "rackB-1", "rackB-2")
    assert m.zones == ("eu", "eu", "us", "us")
    assert m.groups == ("g1", "g1", "g2", "g1")
    assert m.lite.dtype == np.bool_ and m.lite.tolist() == [False, True, False, False]
    assert m[3] == Member(3, "u3", "h3:9", "rackB-2", "us", False, "g1")
    assert m[1] == Member(1, "u1", "h1:2", "rackA-1", "eu", True, "g1")


def test_defaults():
    m = Members(["alpha:5701", "beta.example:80", "[::1]:5701", "plainhost"])
    # UUID(int=index + 1): all-zero fields except the node, which holds index + 1
    for i, u in enumerate(m.uuids):
        parsed = uuid.UUID(u)
        assert u == str(parsed)                      # canonical lower-case form
        assert parsed.fields[:5] == (0, 0, 0, 0, 0) and parsed.node == i + 1
    assert m.uuids[0] == "00000000-0000-0000-0000-000000000001"
    # host: the address without its last ":port" (an address without a port is its host)
    assert m.hosts == ("alpha", "beta.example", "[::1]", "plainhost")
    assert m.zones == ("", "", "", "")
    assert m.lite.tolist() == [False] * 4
    assert len(set(m.groups)) == 4                   # one custom group per member
    assert m.data_members().tolist() == [0, 1, 2, 3]


def test_columns_are_converted():
    m = Members(("a:1", "b:2"), uuids=(uuid.UUID(int=7), 12), lite=np.array([0, 1]),
                groups=[3, "x"], hosts=iter(["H", "H"]), zones=("z", "z"))
    assert m.uuids == (str(uuid.UUID(int=7)), "12")
    assert m.lite.tolist() == [False, True] and all(type(x) is bool for x in m.to_dict()["lite"])
    assert m.groups == ("3", "x")                   # labels are strings
    assert m.hosts == ("H", "H")
    assert Members(x for x in ["a:1", "b:2"]).addresses == ("a:1", "b:2")   # any iterable
    assert Members([5701]).addresses == ("5701",) and Members([5701]).hosts == ("5701",)


def test_int_and_str_custom_labels_are_the_same_group():
    # groups are stored as strings, so 1 and "1" label the same custom group (and the
    # JSON round trip cannot change which members share a group)
    m = Members.from_count(3).with_groups([1, "1", 2])
    assert m.group_ids("custom").tolist() == [0, 0, 1]
    assert Members.from_json(m.to_json()).group_ids("custom").tolist() == [0, 0, 1]


def test_empty_registry():
    m = Members([])
    assert len(m) == 0 and list(m) == []
    assert m.lite.shape == (0,) and m.lite.dtype == np.bool_
    assert m.data_members().dtype == np.int32 and m.data_members().size == 0
    for g in ("per_member", "host", "zone", "custom"):
        ids = m.group_ids(g)
        assert ids.dtype == np.int32 and ids.shape == (0,)
    assert m == Members.from_count(0)
    with pytest.raises(ValueError, match="index"):
        m[0]


# ----------------------------------------------------------------------------- from_count
def test_from_count_one_member_per_host():
    m = Members.from_count(3)
    assert m.addresses == ("127.0.0.1:5701", "127.0.0.1:5702", "127.0.0.1:5703")
    assert m.hosts == ("127.0.0.1",) * 3
    assert m.zones == ("",) * 3 and m.lite.tolist() == [False] * 3
    # the same registry written out by hand
    assert m == Members(["127.0.0.1:5701", "127.0.0.1:5702", "127.0.0.1:5703"])


@pytest.mark.parametrize("n, per", [(7, 3), (600, 2), (1030, 4)])
def test_from_count_hosts(n, per):
    m = Members.from_count(n, members_per_host=per)
    for i, (addr, host) in enumerate(zip(m.addresses, m.hosts)):
        ip = ipaddress.IPv4Address("10.0.0.0") + i // per   # 10.0.h//256.h%256
        assert addr == f"{ip}:{5701 + i % per}"
        assert host == str(ip)
    assert len(set(m.addresses)) == n


def test_from_count_zones_and_lite():
    m = Members.from_count(5, zones=2, lite=[True, False, False, True, False])
    assert m.zones == ("zone-0", "zone-1", "zone-0", "zone-1", "zone-0")
    assert m.lite.tolist() == [True, False, False, True, False]
    assert m.data_members().tolist() == [1, 2, 4]
    assert Members.from_count(3, zones=5).zones == ("zone-0", "zone-1", "zone-2")


def test_from_count_accepts_numpy_ints():
    assert Members.from_count(np.int64(3), members_per_host=np.int32(2),
                              zones=np.uint8(1)) == Members.from_count(3, members_per_host=2,
                                                                      zones=1)


# ----------------------------------------------------------------------------- coerce
def test_coerce():
    m = four()
    assert Members.coerce(m) is m
    assert Members.coerce(4) == Members.from_count(4)
    assert Members.coerce(np.int16(4)) == Members.from_count(4)
    assert Members.coerce(0) == Members([])
    # an int count is shared (the registry is immutable), also across int types
    assert Members.coerce(9) is Members.coerce(np.int64(9))
    big = Members.coerce(5000)
    assert len(big) == 5000 and big == Members.from_count(5000)


@pytest.mark.parametrize("bad", [True, 3.0, "3", None, [0, 1]])
def test_coerce_rejects_non_registries_naming_the_argument(bad):
    with pytest.raises(TypeError, match="^members must be a Members registry or an int"):
        Members.coerce(bad)
    with pytest.raises(TypeError, match="^cluster must be"):
        Members.coerce(bad, "cluster")


def test_coerce_negative_count_names_the_argument():
    with pytest.raises(ValueError, match="members must be >= 0"):
        Members.coerce(-1)
    with pytest.raises(ValueError, match="table_members must be >= 0"):
        Members.coerce(np.int64(-3), "table_members")


# ----------------------------------------------------------------------------- copies
def test_with_lite_changes_only_the_lite_flags():
    m = four()
    c = m.with_lite([True, False, False, True])
    assert c.lite.tolist() == [True, False, False, True]
    for f in ("addresses", "uuids", "hosts", "zones", "groups"):
        assert getattr(c, f) == getattr(m, f), f
    assert m.lite.tolist() == [False, True, False, False]        # the original is unchanged
    assert c != m and c.with_lite(m.lite) == m
    assert c.data_members().tolist() == [1, 2]


def test_with_groups_changes_only_the_groups():
    m = four()
    c = m.with_groups(["x", "y", "x", "y"])
    assert c.groups == ("x", "y", "x", "y")
    for f in ("addresses", "uuids", "hosts", "zones"):
        assert getattr(c, f) == getattr(m, f), f
    assert c.lite.tolist() == m.lite.tolist()
    assert m.groups == ("g1", "g1", "g2", "g1")
    assert c.with_groups(m.groups) == m


@pytest.mark.parametrize("method, arg", [("with_lite", "lite"), ("with_groups", "groups")])
def test_copies_check_their_argument(method, arg):
    m = four()
    with pytest.raises(ValueError, match=f"^{arg} must have one entry per member \\(4\\), got 3"):
        getattr(m, method)([False, False, False])
    with pytest.raises(TypeError, match=f"^{arg} must be a sequence, not a string"):
        getattr(m, method)("abcd")


def test_derived_values_are_not_shared_between_copies():
    m = Members.from_count(3)
    calls = []

    def compute(tag):
        calls.append(tag)
        return tag

    assert m.cached("k", lambda: compute("first")) == "first"
    assert m.cached("k", lambda: compute("second")) == "first"     # computed once per key
    assert m.cached("other", lambda: compute("third")) == "third"   # keys are separate
    c = m.with_lite([False, False, True])
    assert c.cached("k", lambda: compute("copy")) == "copy"
    assert calls == ["first", "third", "copy"]
    assert m == Members.from_count(3)                               # cache is not state


# ----------------------------------------------------------------------------- access
def test_indexing_and_iteration():
    m = four()
    assert [x.index for x in m] == [0, 1, 2, 3]
    assert [x.address for x in m] == list(m.addresses)
    assert m[-1] == m[3] and m[-1].index == 3 and m[-4].index == 0
    assert m[np.int64(2)].uuid == "u2"


@pytest.mark.parametrize("index, exc, match", [
    (4, ValueError, "^index must be <= 3, got 4"),
    (-5, ValueError, "^index must be >= -4, got -5"),
    (1.0, TypeError, "^index must be an integer, got float"),
    (True, TypeError, "^index must be an integer, got bool"),
    ("0", TypeError, "^index must be an integer, got str"),
])
def test_bad_index(index, exc, match):
    with pytest.raises(exc, match=match):
        four()[index]


def test_index_of():
    m = four()
    for i in range(4):
        assert m.index_of(m.uuids[i]) == i
        assert m.index_of(m.addresses[i]) == i
    with pytest.raises(KeyError, match="'h9:1'"):
        m.index_of("h9:1")
    with pytest.raises(KeyError):
        m.index_of("H1:1")                  # exact match only


def test_lite_array_is_a_copy():
    m = four()
    flags = m.lite
    flags[:] = True
    assert m.lite.tolist() == [False, True, False, False]
    assert m.data_members().dtype == np.int32


def test_registry_cannot_be_modified_through_its_api():
    m = four()
    with pytest.raises(AttributeError):
        m.uuids = ("a", "b", "c", "d")
    with pytest.raises(AttributeError):
        m.extra = 1                           # __slots__: no new attributes
    assert isinstance(m.addresses, tuple) and isinstance(m.groups, tuple)


def test_repr():
    assert repr(four()) == "Members(count=4, lite=1)"
    assert repr(Members([])) == "Members(count=0, lite=0)"


# ----------------------------------------------------------------------------- equality
def test_equality_and_hash():
    a, b = four(), four()
    assert a is not b and a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != Members.from_count(4)
    assert (a == 4) is False and a != "four"
    assert a.__eq__(4) is NotImplemented


@pytest.mark.parametrize("field", FIELDS)
def test_every_column_takes_part_in_equality(field):
    d = four().to_dict()
    d[field] = list(d[field])
    d[field][2] = {"addresses": "h2:2", "uuids": "u9", "hosts": "other", "zones": "ap",
                   "lite": True, "groups": "g9"}[field]
    other = Members.from_dict(d)
    assert other != four()


# ----------------------------------------------------------------------------- group ids
def test_group_ids_per_member_host_zone_custom():
    m = Members.from_count(7, members_per_host=3, zones=3)
    assert m.group_ids().tolist() == list(range(7))                 # default: per member
    assert m.group_ids("per_member").tolist() == list(range(7))
    assert m.group_ids("host").tolist() == [0, 0, 0, 1, 1, 1, 2]    # hosts of 3 members
    assert m.group_ids("zone").tolist() == [0, 1, 2, 0, 1, 2, 0]    # zone-(i % 3)
    assert m.group_ids("custom").tolist() == list(range(7))         # default labels: distinct
    for g in ("per_member", "host", "zone", "custom"):
        assert m.group_ids(g).dtype == np.int32


def test_group_ids_are_numbered_by_first_appearance_not_by_label():
    m = Members.from_count(5).with_groups(["b", "a", "b", "c", "a"])
    assert m.group_ids("custom").tolist() == [0, 1, 0, 2, 1]
    assert m.group_ids([7, 3, 7, 3, -1]).tolist() == [0, 1, 0, 1, 2]
    assert m.group_ids(np.array(["z", "y", "z", "x", "x"])).tolist() == [0, 1, 0, 2, 2]
    assert m.group_ids((0.5, 0.5, 2.0, 2.0, 0.5)).tolist() == [0, 0, 1, 1, 0]


def test_group_ids_cover_lite_members_too():
    # group_ids labels every member; lite members are dropped by the arranger, not here
    m = four()
    assert m.group_ids("host").tolist() == [0, 0, 1, 2]
    assert m.group_ids("zone").tolist() == [0, 0, 1, 1]
    assert m.group_ids("custom").tolist() == [0, 0, 1, 0]


def test_group_ids_from_empty_zones_form_one_group():
    assert Members.from_count(4).group_ids("zone").tolist() == [0, 0, 0, 0]
    assert Members.from_count(4).group_ids("host").tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("grouping, match", [
    ("rack", ("^grouping must be 'per_member', 'host', 'zone', 'custom' or an array of group "
              "ids, got 'rack'")),
    ("", "^grouping must be"),
    ("HOST", "^grouping must be"),
    ([1, 2], "^grouping array must have one group id per member \\(3\\), got shape \\(2,\\)"),
    (np.zeros((1, 3)), ("^grouping array must have one group id per member \\(3\\), got shape "
                        "\\(1, 3\\)")),
    (5, "^grouping array must have one group id per member"),
])
def test_group_ids_bad_grouping(grouping, match):
    with pytest.raises(ValueError, match=match):
        Members.from_count(3).group_ids(grouping)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=30))
def test_group_ids_property_custom_labels(labels):
    m = Members.from_count(len(labels)).with_groups(labels)
    assert_dense_first_seen(m.group_ids("custom").tolist(), labels)
    assert_dense_first_seen(m.group_ids(np.array([ord(x) for x in labels])).tolist(), labels)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 5))
def test_group_ids_property_from_count(n, per, zones):
    m = Members.from_count(n, members_per_host=per, zones=zones)
    # one member per host means the 127.0.0.1:570x scheme: a single host
    hosts = [i // per if per > 1 else 0 for i in range(n)]
    assert_dense_first_seen(m.group_ids("host").tolist(), hosts)
    assert_dense_first_seen(m.group_ids("zone").tolist(),
                            [i % zones if zones else 0 for i in range(n)])


# ----------------------------------------------------------------------------- serialisation
def test_to_dict_is_plain_and_complete():
    d = four().to_dict()
    assert d == {"addresses": ["h1:1", "h1:2", "h2:1", "h3:9"], "uuids": ["u0", "u1", "u2", "u3"],
                 "hosts": ["rackA-1", "rackA-1", "rackB-1", "rackB-2"],
                 "zones": ["eu", "eu", "us", "us"], "lite": [False, True, False, False],
                 "groups": ["g1", "g1", "g2", "g1"]}
    d["lite"][0] = True                       # a fresh dict: the registry is unaffected
    assert not four().lite[0]


def test_json_round_trip():
    m = four()
    text = m.to_json()
    assert json.loads(text) == m.to_dict()    # valid JSON, the same document
    back = Members.from_json(text)
    assert back == m and hash(back) == hash(m)
    assert list(back) == list(m)
    assert Members.from_dict(m.to_dict()) == m


def test_from_dict_fills_missing_columns_with_defaults():
    assert Members.from_dict({"addresses": ["a:1", "b:2"]}) == Members(["a:1", "b:2"])
    assert Members.from_json('{"addresses": ["a:1"], "lite": [true], "zones": null}') == \
        Members(["a:1"], lite=[True])
    with pytest.raises(ValueError, match="'addresses' field is missing"):
        Members.from_dict({"uuids": ["u"]})
    with pytest.raises(ValueError, match="^uuids must have one entry per member"):
        Members.from_dict({"addresses": ["a:1"], "uuids": ["u", "v"]})


def test_pickle_round_trip():
    m = four()
    m.cached("k", lambda: 1)
    back = pickle.loads(pickle.dumps(m))
    assert back == m and list(back) == list(m)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.text(max_size=5),
                          st.booleans(), st.text(max_size=5)),
                min_size=0, max_size=8, unique_by=lambda t: t[0]))
def test_json_round_trip_property(rows):
    m = Members([r[0] for r in rows], zones=[r[1] for r in rows], lite=[r[2] for r in rows],
                groups=[r[3] for r in rows])
    back = Members.from_json(m.to_json())
    assert back == m
    assert back.group_ids("custom").tolist() == m.group_ids("custom").tolist()


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, exc, match", [
    (lambda: Members("a:1"), TypeError, "^addresses must be a sequence of 'host:port' strings"),
    (lambda: Members(b"a:1"), TypeError, "^addresses must be a sequence"),
    (lambda: Members(5), TypeError, "^addresses must be a sequence"),
    (lambda: Members(["a:1", "a:1"]), ValueError, "^addresses must be unique"),
    (lambda: Members(["a:1", "b:1"], uuids=["u", "u"]), ValueError, "^uuids must be unique"),
    (lambda: Members(["a:1", "b:1"], uuids=["u"]), ValueError,
     "^uuids must have one entry per member \\(2\\), got 1"),
    (lambda: Members(["a:1"], hosts=["h", "i"]), ValueError,
     "^hosts must have one entry per member \\(1\\), got 2"),
    (lambda: Members(["a:1"], zones=[]), ValueError,
     "^zones must have one entry per member \\(1\\), got 0"),
    (lambda: Members(["a:1"], lite=[True, True]), ValueError, "^lite must have one entry"),
    (lambda: Members(["a:1"], groups=[]), ValueError, "^groups must have one entry"),
    (lambda: Members(["a:1"], uuids="u"), TypeError, "^uuids must be a sequence, not a string"),
    (lambda: Members(["a:1"], hosts=b"h"), TypeError, "^hosts must be a sequence, not a string"),
    (lambda: Members(["a:1"], zones="z"), TypeError, "^zones must be a sequence"),
    (lambda: Members(["a:1"], groups="g"), TypeError, "^groups must be a sequence"),
    (lambda: Members.from_count(-1), ValueError, "^n must be >= 0, got -1"),
    (lambda: Members.from_count(2.0), TypeError, "^n must be an integer, got float"),
    (lambda: Members.from_count(True), TypeError, "^n must be an integer, got bool"),
    (lambda: Members.from_count(2, members_per_host=0), ValueError,
     "^members_per_host must be >= 1, got 0"),
    (lambda: Members.from_count(2, members_per_host="2"), TypeError,
     "^members_per_host must be an integer"),
    (lambda: Members.from_count(2, zones=-1), ValueError, "^zones must be >= 0, got -1"),
    (lambda: Members.from_count(2, zones=1.5), TypeError, "^zones must be an integer"),
    (lambda: Members.from_count(2, lite=[True]), ValueError,
     "^lite must have one entry per member \\(2\\), got 1"),
])
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ----------------------------------------------------------------------------- hardening
# docs/hardening-hashing.md: no silent conversion of lite flags, bounded member counts,
# one ValueError for a registry document of another form.
@pytest.mark.parametrize("flag", ["false", "False", "", "0", None, 2, -1, 0.0, 1.0, [False]])
def test_lite_flags_must_be_bools(flag):
    with pytest.raises(TypeError, match=r"^lite\[1\] must be a bool \(or 0/1\), got "):
        Members(["a:1", "b:2"], lite=[False, flag])
    with pytest.raises(TypeError, match=r"^lite\[0\] must be a bool"):
        Members.from_count(1).with_lite([flag])


def test_lite_flags_accept_bools_and_zero_one():
    m = Members(["a:1", "b:2", "c:3", "d:4"], lite=[True, np.bool_(False), 1, np.int8(0)])
    assert m.lite.tolist() == [True, False, True, False]
    assert Members.from_json(m.to_json()) == m


def test_a_json_document_with_string_lite_flags_is_refused():
    with pytest.raises(TypeError, match=r"^lite\[0\] must be a bool"):
        Members.from_json('{"addresses": ["a:1"], "lite": ["false"]}')


@pytest.mark.parametrize("label", [1.5, None, b"g", True, ("t",)])
def test_group_labels_must_be_str_or_int(label):
    with pytest.raises(TypeError, match=r"^groups\[0\] must be a str or an int"):
        Members(["a:1"], groups=[label])


def test_nan_group_ids_are_refused():
    with pytest.raises(ValueError, match=r"^grouping\[1\] is NaN"):
        Members.from_count(3).group_ids([0.0, float("nan"), float("nan")])


def test_member_counts_are_bounded_before_anything_is_built():
    from hzfast.members import MAX_MEMBERS
    with pytest.raises(ValueError, match=rf"^n must be <= {MAX_MEMBERS}, got 1000000000000"):
        Members.from_count(10**12)
    with pytest.raises(ValueError, match=r"^members = 2147483648 members is more than "
                                         r"MAX_MEMBERS"):
        Members.coerce(2**31)
    with pytest.raises(ValueError, match=r"^n must be <= "):
        Members.from_count(MAX_MEMBERS + 1)


@pytest.mark.parametrize("doc, match", [
    ('[1, 2]', "expected a JSON object, got list"),
    ('"x"', "expected a JSON object, got str"),
    ('{"addresses": ["a:1"], "lites": [true]}', r"unknown field\(s\) lites"),
    ('{"addresses": "a:1"}', "addresses must be a list, got str"),
    ('{"addresses": ["a:1"], "zones": 5}', "zones must be a list, got int"),
    ('{}', "'addresses' field is missing"),
    ('[' * 100_000 + ']' * 100_000, "nested too deeply"),
])
def test_registry_documents_of_another_form_are_one_value_error(doc, match):
    with pytest.raises(ValueError, match=match):
        Members.from_json(doc)


def test_huge_address_iterables_fail_before_filling_memory():
    from hzfast.members import MAX_MEMBERS
    with pytest.raises(ValueError, match=rf"^addresses holds more than MAX_MEMBERS = "
                                         rf"{MAX_MEMBERS} members$"):
        Members(f"h:{i}" for i in range(10**12))


@pytest.mark.parametrize("column", ["uuids", "hosts", "zones"])
def test_none_in_a_text_column_is_refused_not_stored_as_the_text_none(column):
    with pytest.raises(ValueError, match=rf"^{column}\[1\] is None$"):
        Members(["a:1", "b:2"], **{column: ["x", None]})
    with pytest.raises(ValueError, match=r"^addresses\[0\] is None$"):
        Members([None])
    with pytest.raises(ValueError, match=rf"^{column}\[0\] is None$"):
        Members.from_json(f'{{"addresses": ["a:1"], "{column}": [null]}}')
