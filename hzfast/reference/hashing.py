"""Pure-Python reference for hzfast.hashing: slow, readable, obviously correct.

Transcribed from Hazelcast's ``HashUtil`` (MurmurHash3_x86_32, MurmurHash3_x64_64,
hashToIndex), ``PartitionStampUtil`` and the serialization of String/Integer/Long keys.
Used as the test oracle and the benchmark baseline.
"""
from __future__ import annotations

import struct

__all__ = [
    "SEED",
    "hash_to_index",
    "murmur3_x64_64",
    "murmur3_x86_32",
    "partition_hash",
    "partition_id",
    "serialize_key",
    "stamp",
]

SEED = 0x01000193
M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M32


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


# ------------------------------------------------------------------ MurmurHash3_x86_32
def murmur3_x86_32(data: bytes, seed: int = SEED) -> int:
    """Standard MurmurHash3_x86_32; signed int32."""
    data = bytes(data)
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & M32
    nblocks = len(data) // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * c1) & M32
        k = _rotl32(k, 15)
        k = (k * c2) & M32
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & M32
    tail = data[4 * nblocks:]
    if tail:
        k = int.from_bytes(tail, "little")  # tail bytes t at bit 8t, unsigned
        k = (k * c1) & M32
        k = _rotl32(k, 15)
        k = (k * c2) & M32
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return _signed(h, 32)


# ------------------------------------------------------------------ MurmurHash3_x64_64 (variant)
def _fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    k ^= k >> 33
    return k


def murmur3_x64_64(data: bytes, seed: int = SEED) -> int:
    """Hazelcast's non-standard ``HashUtil.MurmurHash3_x64_64``; signed int64.

    The seed is a Java int, sign-extended to 64 bits.
    """
    data = bytes(data)
    s = _signed(seed, 32) & M64
    h1 = 0x9368E53C2F6AF274 ^ s
    h2 = 0x586DCD208F7CD3FD ^ s
    c1 = 0x87C37B91114253D5
    c2 = 0x4CF5AD432745937F

    def bmix(h1, h2, k1, k2, c1, c2):
        k1 = (k1 * c1) & M64
        k1 = _rotl64(k1, 23)
        k1 = (k1 * c2) & M64
        h1 ^= k1
        h1 = (h1 + h2) & M64
        h2 = _rotl64(h2, 41)
        k2 = (k2 * c2) & M64
        k2 = _rotl64(k2, 23)
        k2 = (k2 * c1) & M64
        h2 ^= k2
        h2 = (h2 + h1) & M64
        h1 = (h1 * 3 + 0x52DCE729) & M64
        h2 = (h2 * 3 + 0x38495AB5) & M64
        return h1, h2

    nblocks = len(data) // 16
    for i in range(nblocks):
        k1 = int.from_bytes(data[16 * i:16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8:16 * i + 16], "little")
        h1, h2 = bmix(h1, h2, k1, k2, c1, c2)
        c1 = (c1 * 5 + 0x7B7D159C) & M64
        c2 = (c2 * 5 + 0x6BCE6396) & M64

    tail = data[16 * nblocks:]
    if tail:
        k1 = k2 = 0
        for t, byte in enumerate(tail):
            extended = _signed(byte, 8) & M64  # Java's (long) byte: sign-extended
            if t < 8:
                k1 ^= (extended << (8 * t)) & M64
            else:
                k2 ^= (extended << (8 * (t - 8))) & M64
        h1, h2 = bmix(h1, h2, k1, k2, c1, c2)

    h2 ^= len(data)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    h1 = _fmix64(h1)
    h2 = _fmix64(h2)
    return _signed(h1 + h2, 64)


# ------------------------------------------------------------------ stamp
def stamp(versions) -> int:
    """PartitionStampUtil: x64_64 variant over every version as big-endian int32."""
    buf = b"".join(struct.pack(">i", int(v)) for v in versions)
    return murmur3_x64_64(buf, SEED)


# ------------------------------------------------------------------ keys
def serialize_key(key, key_type=None) -> bytes:
    """Hazelcast serialized form: partition hash 0, BE type id, BE payload.

    ``key_type``: None (str -> String, int -> Integer), "string", "int", "long", "data".
    """
    if key_type == "data":
        assert len(key) >= 8
        return bytes(key)
    if isinstance(key, str) and key_type in (None, "string"):
        utf8 = key.encode("utf-8")
        return struct.pack(">iii", 0, -11, len(utf8)) + utf8
    if isinstance(key, int) and not isinstance(key, bool):
        if key_type == "long":
            return struct.pack(">iiq", 0, -8, key)
        if key_type in (None, "int"):
            return struct.pack(">iii", 0, -7, key)
    raise TypeError(f"cannot serialize {key!r} as {key_type}")


def partition_hash(key, key_type=None) -> int:
    """The header's partition hash if non-zero, else murmur3_x86_32 of the bytes after it."""
    data = serialize_key(key, key_type)
    header = struct.unpack(">i", data[:4])[0]
    if header != 0:
        return header
    return murmur3_x86_32(data[8:], SEED)


def hash_to_index(h: int, partition_count: int) -> int:
    """HashUtil.hashToIndex (Java semantics: MIN_VALUE -> 0)."""
    if partition_count <= 0:
        raise ValueError("partition_count must be > 0")
    if h == -(2**31):
        return 0
    return abs(h) % partition_count


def partition_id(key, partition_count: int = 271, key_type=None) -> int:
    return hash_to_index(partition_hash(key, key_type), partition_count)
