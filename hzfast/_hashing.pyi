"""Stub for the hzfast._hashing extension (kernels; validate with hzfast.hashing first)."""
import numpy as np
from numpy.typing import NDArray

OK: int  # -1: status of the bulk kernels when every item was fine
ENC_OK: int  # 0: the encoders' status when every item was encoded
ENC_NOT_STR: int  # 1: an item of the list is not a str
ENC_SURROGATE: int  # 2: an item cannot be encoded as UTF-8
ENC_CHANGED: int  # 3: the input changed between the sizing and the copying pass

def murmur3_x86_32(data: bytes | memoryview, seed: int) -> int: ...  # const uint8_t[::1], uint32_t -> int32_t
def murmur3_x64_64(data: bytes | memoryview, seed: int) -> int: ...  # const uint8_t[::1], int32_t -> int64_t
def stamp(versions: NDArray[np.int32]) -> int: ...  # const int32_t[::1] -> int64_t
def stamp_fast(versions: object) -> int | None: ...  # object (int32 1-D C-contiguous ndarray, else None)
def hash_to_index(h: int, partition_count: int) -> int: ...  # int32_t, int32_t -> int32_t
def bulk_int32(keys: NDArray[np.int32], out: NDArray[np.int32], partition_count: int) -> None: ...  # const int32_t[::1], int32_t[::1], int32_t
def bulk_int64(keys: NDArray[np.int64], out: NDArray[np.int32], partition_count: int) -> None: ...  # const int64_t[::1], int32_t[::1], int32_t
def bulk_bytes(
    offsets: NDArray[np.int32] | NDArray[np.int64],  # const offset_t[::1] (fused int32_t/int64_t)
    data: NDArray[np.uint8],  # const uint8_t[::1]
    out: NDArray[np.int32],  # int32_t[::1]
    partition_count: int,  # int32_t (<= 0: raw hashes)
    is_data: bool,  # bint
) -> int: ...  # intp_t: -1 or index of the first malformed item
def encode_str_list(seq: list[str]) -> tuple[int, int, NDArray[np.int64] | None, NDArray[np.uint8] | None]: ...  # list
def set_simd(enabled: bool) -> bool: ...  # bint -> whether AVX2 is available
def str_hash(key: str) -> int: ...  # str -> int32_t (UnicodeEncodeError for lone surrogates)
def int32_hash(key: int) -> int: ...  # int32_t -> int32_t
def int64_hash(key: int) -> int: ...  # int64_t -> int32_t
def bytes_data_hash(data: bytes) -> int: ...  # bytes (len >= 8) -> int32_t
def bytes_murmur3_x86_32(data: bytes, seed: int) -> int: ...  # bytes, uint32_t -> int32_t
def encode_utf32(codepoints: NDArray[np.uint32]) -> tuple[int, int, NDArray[np.int64] | None, NDArray[np.uint8] | None]: ...  # const uint32_t[:, ::1]
