"""Pure-Python reference for Apache Ignite's partition machinery (test oracle, bench baseline).

Written to read like the Java it mirrors (Ignite 2.x ``RendezvousAffinityFunction``,
``String/Integer/Long/UUID.hashCode``); slow and obviously correct. No numpy, no hzfast kernel.
"""
from __future__ import annotations

import uuid as _uuid

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)


def to_int32(v: int) -> int:
    """Wrap to a signed 32-bit value (Java int arithmetic)."""
    v &= MASK32
    return v - (1 << 32) if v >= (1 << 31) else v


def to_int64(v: int) -> int:
    """Wrap to a signed 64-bit value (Java long arithmetic)."""
    v &= MASK64
    return v - (1 << 64) if v >= (1 << 63) else v


# --------------------------------------------------------------------------- hashCode
def string_hash(s: str) -> int:
    """``java.lang.String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units."""
    data = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        unit = data[i] | (data[i + 1] << 8)
        h = (31 * h + unit) & MASK32
    return to_int32(h)


def integer_hash(v: int) -> int:
    """``java.lang.Integer.hashCode``: the value (must fit int32)."""
    if not INT_MIN <= v <= INT_MAX:
        raise ValueError(f"{v} does not fit a Java Integer")
    return v


def long_hash(v: int) -> int:
    """``java.lang.Long.hashCode``: ``(int)(v ^ (v >>> 32))``."""
    if not -(2**63) <= v < 2**63:
        raise ValueError(f"{v} does not fit a Java Long")
    u = v & MASK64
    return to_int32(u ^ (u >> 32))


def uuid_hash(u) -> int:
    """``java.util.UUID.hashCode``: ``(int)(hilo >> 32) ^ (int) hilo`` with hilo = msb ^ lsb."""
    if not isinstance(u, _uuid.UUID):
        u = _uuid.UUID(str(u))
    msb, lsb = uuid_longs(u)
    hilo = (msb ^ lsb) & MASK64
    return to_int32((hilo >> 32) ^ hilo)


def uuid_longs(u) -> tuple[int, int]:
    """(mostSigBits, leastSigBits) as signed Java longs."""
    if not isinstance(u, _uuid.UUID):
        u = _uuid.UUID(str(u))
    return to_int64(u.int >> 64), to_int64(u.int)


def hash_code(key, key_type: str | None = None) -> int:
    """Java hashCode of one key. ``key_type``: None (infer), "string", "int", "long", "uuid".

    Inference: str -> String; uuid.UUID -> UUID; int -> Integer when it fits int32, else Long.
    """
    if key_type is None:
        if isinstance(key, str):
            key_type = "string"
        elif isinstance(key, _uuid.UUID):
            key_type = "uuid"
        elif isinstance(key, int) and not isinstance(key, bool):
            key_type = "int" if INT_MIN <= key <= INT_MAX else "long"
        else:
            raise TypeError(f"unsupported key type {type(key).__name__}")
    if key_type == "string":
        return string_hash(key)
    if key_type == "int":
        return integer_hash(int(key))
    if key_type == "long":
        return long_hash(int(key))
    if key_type == "uuid":
        return uuid_hash(key)
    raise ValueError(f"unknown key_type {key_type!r}")


# --------------------------------------------------------------------------- key -> partition
def partition_from_hash(h: int, parts: int) -> int:
    """``RendezvousAffinityFunction.calculatePartition`` for a hashCode ``h``."""
    mask = parts - 1 if (parts & (parts - 1)) == 0 else -1
    if mask >= 0:
        u = h & MASK32
        return (u ^ (u >> 16)) & mask
    # Java's % truncates toward zero; U.safeAbs(Integer.MIN_VALUE) == 0.
    r = abs(h) % parts
    if h < 0:
        r = -r
    return 0 if r == INT_MIN else abs(r)


def partition(key, parts: int = 1024, key_type: str | None = None) -> int:
    return partition_from_hash(hash_code(key, key_type), parts)


# --------------------------------------------------------------------------- rendezvous
def node_weight(node_hash: int, part: int) -> int:
    """``RendezvousAffinityFunction.hash(key0, key1)`` (Wang/Jenkins 64-bit mix), signed long."""
    key = (node_hash & MASK32) | ((part & MASK32) << 32)
    key = (~key + (key << 21)) & MASK64
    key ^= key >> 24
    key = (key + (key << 3) + (key << 8)) & MASK64
    key ^= key >> 14
    key = (key + (key << 2) + (key << 4)) & MASK64
    key ^= key >> 28
    key = (key + (key << 31)) & MASK64
    return to_int64(key)


def assign_partition(part: int, nodes: list, backups: int, excl_neighbors: bool) -> list:
    """``RendezvousAffinityFunction.assignPartition`` (no backup filters).

    ``nodes``: topology-ordered list of dicts with ``index``, ``hash`` (consistentId.hashCode()),
    ``id`` ((msb, lsb) signed longs) and ``macs`` (neighbour label). Returns member indexes.
    """
    if len(nodes) <= 1:
        return [n["index"] for n in nodes]
    hash_arr = [(node_weight(n["hash"], part), n["id"], n) for n in nodes]
    primary_and_backups = len(nodes) if backups == INT_MAX else min(backups + 1, len(nodes))
    # HashComparator: weight ascending, then UUID.compareTo (signed msb, then signed lsb).
    sorted_nodes = [t[2] for t in sorted(hash_arr, key=lambda t: (t[0], t[1]))]
    if backups == INT_MAX:  # REPLICATED: primary, then every other node in topology order
        primary = sorted_nodes[0]
        return [primary["index"]] + [n["index"] for n in nodes if n is not primary]
    it = iter(sorted_nodes)
    res = []
    all_neighbors = set()
    primary = next(it)
    res.append(primary)
    if excl_neighbors:
        all_neighbors.update(id(n) for n in nodes if n["macs"] == primary["macs"])
    if backups > 0:
        for node in it:
            if len(res) >= primary_and_backups:
                break
            if excl_neighbors:
                if id(node) not in all_neighbors:
                    res.append(node)
                    all_neighbors.update(id(n) for n in nodes if n["macs"] == node["macs"])
            else:
                res.append(node)
    if len(res) < primary_and_backups and len(nodes) >= primary_and_backups and excl_neighbors:
        # Ignite iterates again: too few nodes passed the exclude-neighbours criterion.
        for node in sorted_nodes[1:]:
            if len(res) >= primary_and_backups:
                break
            if not any(node is r for r in res):
                res.append(node)
    return [n["index"] for n in res]


def default_node_id(index: int) -> _uuid.UUID:
    """The node id hzfast gives member ``index`` when none is supplied."""
    return _uuid.UUID(int=index + 1)


def assign(consistent_ids, node_ids=None, *, partitions: int = 1024, backups: int = 0,
           neighbors=None) -> list:
    """Ignite's rendezvous assignment of every partition: list of P lists of member indexes."""
    n = len(consistent_ids)
    if node_ids is None:
        node_ids = [default_node_id(i) for i in range(n)]
    nodes = [
        {
            "index": i,
            "hash": hash_code(cid),
            "id": uuid_longs(node_ids[i]),
            "macs": None if neighbors is None else neighbors[i],
        }
        for i, cid in enumerate(consistent_ids)
    ]
    excl = neighbors is not None
    return [assign_partition(p, nodes, backups, excl) for p in range(partitions)]
