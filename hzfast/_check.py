"""The validator: boundary checks shared by every public function (docs/design.md §0).

Kernels run with bounds checks off; everything that reaches them goes through these
helpers first. Replica tables are checked by one kernel (``hzfast._validate``), whose
status codes (``hzfast._types.Status``) are turned into messages here, and only here.
Messages always name the argument and the problem.

Three rules hold for every array a kernel reads (docs/design.md §0.3(4)):

- **Private snapshots.** What is validated is a private copy of the caller's array (or
  an array nobody can write, see :func:`is_immutable`), and the kernel reads that same
  copy, so another thread changing the caller's array cannot invalidate a checked value
  between the check and its use (no check-then-reread).
- **No silent conversions.** Integers must be integers (no bools, floats, strings or
  objects) and must fit; booleans must be booleans.
- **Bounded sizes.** A member index is below :data:`MAX_MEMBER_COUNT`, so arrays sized
  by the largest member stay small; files are checked against their own sizes before
  anything is allocated (:func:`read_npz`).
"""
from __future__ import annotations

import contextlib
import operator
import os
import threading
from collections.abc import Iterator, Mapping
from typing import IO, Any, SupportsIndex, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from hzfast import _validate
from hzfast._typing import Int32Array

MAX_REPLICA_COUNT = 7
DEFAULT_PARTITION_COUNT = 271
MAX_PARTITION_COUNT = 2**31 - 1
#: Member indices are ``-1`` (none) or ``0 .. MAX_MEMBER_COUNT - 1``; member counts are
#: at most this. Results sized by the member count (diff gains, schedule peaks, report
#: counts) stay a few megabytes, whatever a hostile input claims.
MAX_MEMBER_COUNT = 65_536
INTERNAL = _validate.INTERNAL   # a kernel invariant broken (impossible on validated input)

# why a plan's decision cannot be applied, per status
_DECISION_PROBLEMS = {
    _validate.BAD_PARTITION: "partition id out of range",
    _validate.BAD_INDEX: "replica index out of range or inconsistent with its member",
    _validate.BAD_MEMBER: "member index out of range",
    _validate.SOURCE_MISMATCH: "the source is not at source_current_index",
    _validate.DESTINATION_MISMATCH: "the destination is not at destination_current_index",
    _validate.DUPLICATE: "it would put a member twice in the partition's row",
    _validate.BELOW_MINUS_ONE: "member index < -1",
}


def decision_problem(status: int) -> str:
    """What a kernel status says about a plan decision that cannot be applied."""
    return _DECISION_PROBLEMS.get(status, "invalid")


# ------------------------------------------------------------------------ scalars
def check_int(value: object, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise TypeError/ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        v = operator.index(cast(SupportsIndex, value))   # anything else: TypeError
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_bool(value: object, name: str) -> bool:
    """``value`` as a bool: only ``True``/``False`` (or numpy bools) are accepted; the
    string ``"false"``, 0/1 and None are refused (TypeError naming ``name``)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def check_member_count(member_count: object, largest: int, holder: str) -> int:
    """``member_count`` checked against the largest member ``holder`` uses (``None``: that
    member + 1) and against :data:`MAX_MEMBER_COUNT`."""
    if member_count is None:
        return largest + 1
    count = check_int(member_count, "member_count", minimum=0, maximum=MAX_MEMBER_COUNT)
    if largest >= count:
        raise ValueError(f"member_count={count} but {holder} {largest}")
    return count


def check_member_total(count: int, name: str = "members") -> int:
    """A registry of ``count`` members: at most :data:`MAX_MEMBER_COUNT`."""
    if count > MAX_MEMBER_COUNT:
        raise ValueError(f"{name} has {count} members; hzfast supports at most "
                         f"{MAX_MEMBER_COUNT}")
    return count


_T = TypeVar("_T")


def check_members_arg(value: _T, name: str = "members") -> _T:
    """A ``members`` argument before it is turned into a registry: an int count is
    bounded by :data:`MAX_MEMBER_COUNT` here, before anything of that size exists."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        check_int(value, name, minimum=0, maximum=MAX_MEMBER_COUNT)
    return value


def check_partition_count(value: object, name: str = "partition_count") -> int:
    """A positive int32 partition count."""
    return check_int(value, name, minimum=1, maximum=MAX_PARTITION_COUNT)


# ---------------------------------------------------------------------- snapshots
def is_immutable(arr: NDArray[Any]) -> bool:
    """True when nobody can write ``arr``'s memory: it is read-only and rests on a
    ``bytes`` object (numpy refuses to make such an array writeable again). The arrays
    of a PartitionTable and a MigrationPlan are of this kind (:func:`frozen`); any other
    array is copied before a kernel reads it."""
    if arr.flags.writeable:
        return False
    base = arr.base
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    return isinstance(base, bytes)


def frozen(arr: NDArray[Any]) -> NDArray[Any]:
    """An immutable C-contiguous copy of ``arr`` (same dtype and shape), backed by a
    ``bytes`` object: read-only for good (see :func:`is_immutable`)."""
    if is_immutable(arr) and arr.flags.c_contiguous:
        return arr
    data = np.ascontiguousarray(arr).tobytes()
    out: NDArray[Any] = np.frombuffer(data, dtype=arr.dtype).reshape(arr.shape)
    return out


_lent = threading.local()


@contextlib.contextmanager
def owned(*arrays: NDArray[Any]) -> Iterator[None]:
    """Within the block, :func:`private` takes these very arrays as they are, without a
    snapshot (unless a writable or frozen copy is asked for).

    Only for hzfast's own callers that made the arrays themselves and hold the only
    references, such as the protocol node's working tables (docs/design.md §11): nobody
    else can change them while a kernel reads them, so the copy would only cost page
    faults. Per thread; nests.
    """
    before: frozenset[int] = getattr(_lent, "ids", frozenset())
    _lent.ids = before | {id(a) for a in arrays}
    try:
        yield
    finally:
        _lent.ids = before


def private(arr: NDArray[Any], *, freeze: bool = False, writable: bool = False) -> NDArray[Any]:
    """A snapshot of ``arr`` that only hzfast can see: ``arr`` itself when it is immutable
    or lent by its only holder (:func:`owned`) and ``writable`` is not asked for, else a
    fresh C-contiguous copy (an immutable one with ``freeze``)."""
    if writable:
        return np.array(arr, copy=True, order="C", subok=False)
    if is_immutable(arr) and arr.flags.c_contiguous:
        return arr
    if not freeze and id(arr) in getattr(_lent, "ids", ()) and arr.flags.c_contiguous:
        return arr
    if freeze:
        return frozen(arr)
    return np.array(arr, copy=True, order="C", subok=False)


# ------------------------------------------------------------------------ arrays
def _has_bool(value: object) -> bool:
    """Whether a (nested) list/tuple holds a bool anywhere (numpy would turn it into 0/1
    beside integers)."""
    flat = np.asarray(value, dtype=object).reshape(-1)
    return any(isinstance(v, (bool, np.bool_)) for v in flat.tolist())


def _wrong_ndim(arr: NDArray[Any], name: str, ndim: int) -> NDArray[Any]:
    raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")


def _from_sequence(value: list[Any] | tuple[Any, ...], name: str, ndim: int,
                   kinds: str) -> NDArray[Any]:
    """A nested list/tuple as a fresh numpy array of a dtype kind in ``kinds`` ("iu":
    integers, "iuf": real numbers), without silent conversions."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"{name} is ragged or malformed: {exc}") from None
    if arr.size == 0:       # [] (or [[], []]): no values, so no dtype to check
        arr = arr.reshape(0, 1) if arr.ndim == 1 and ndim == 2 else arr
        return arr.astype(np.int64) if arr.ndim == ndim else _wrong_ndim(arr, name, ndim)
    if arr.dtype == object and arr.ndim == ndim and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in arr.reshape(-1).tolist()):
        raise ValueError(f"{name} holds values outside int32")
    if arr.dtype.kind not in kinds:
        what = "integers" if kinds == "iu" else "numbers"
        raise TypeError(f"{name} must hold {what}, got {arr.dtype}")
    if _has_bool(value):
        raise TypeError(f"{name} must hold integers, not bools")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr


def _int32_values(arr: NDArray[Any], name: str) -> NDArray[np.int32]:
    """An integer array's values as a fresh int32 array (ValueError when one does not
    fit: no wrap-around)."""
    if arr.size and (int(arr.min()) < -(2**31) or int(arr.max()) > 2**31 - 1):
        raise ValueError(f"{name} holds values outside int32")
    return np.ascontiguousarray(arr, dtype=np.int32)


def as_int32_array(value: object, name: str, ndim: int, *, freeze: bool = False,
                   writable: bool = False) -> Int32Array:
    """A private int32 C-contiguous snapshot of ``value`` (see :func:`private`).

    numpy arrays must already be int32 (native byte order) of the right dimension and
    C-contiguous; lists/tuples of Python ints are converted (bools, floats and values
    outside int32 are refused); a PartitionTable gives its replicas."""
    if not isinstance(value, np.ndarray) and ndim == 2 and hasattr(value, "replicas"):
        inner = value.replicas      # a PartitionTable (only a real array is accepted)
        if not isinstance(inner, np.ndarray):
            raise TypeError(f"{name}.replicas must be a numpy int32 array, "
                            f"got {type(inner).__name__}")
        value = inner
    if isinstance(value, np.ndarray):
        arr = value
        if arr.dtype != np.int32:
            raise TypeError(f"{name} must have dtype int32, got {arr.dtype}")
        if arr.ndim != ndim:
            raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray)")
        return private(arr, freeze=freeze, writable=writable)
    if isinstance(value, (list, tuple)):
        fresh = _int32_values(_from_sequence(value, name, ndim, "iu"), name)
        return frozen(fresh) if freeze else fresh
    raise TypeError(f"{name} must be a numpy int32 array, got {type(value).__name__}")


def as_int_column(value: object, name: str, *, minimum: int = -(2**31),
                  maximum: int = 2**31 - 1) -> Int32Array:
    """A 1-D column of integers as a fresh int32 array: any numpy integer dtype or a
    list/tuple of ints; bools, floats, strings, objects and values outside
    ``[minimum, maximum]`` are refused (TypeError/ValueError naming ``name``)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {value.dtype}")
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {value.shape}")
        arr: NDArray[Any] = np.array(value, copy=True)      # the snapshot checked below
    elif isinstance(value, (list, tuple)):
        arr = _from_sequence(value, name, 1, "iu")
    else:
        raise TypeError(f"{name} must be a 1-D integer array or a list of ints, "
                        f"got {type(value).__name__}")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < minimum or hi > maximum:
            bad = lo if lo < minimum else hi
            raise ValueError(f"{name} holds {bad}, outside [{minimum}, {maximum}]")
    return np.ascontiguousarray(arr, dtype=np.int32)


def as_bool_column(value: object, name: str, length: int | None = None) -> NDArray[np.bool_]:
    """A 1-D column of booleans as a fresh bool array: a numpy bool array or a list of
    bools only (``"false"``, 0/1 and None are refused)."""
    if isinstance(value, np.ndarray):
        if value.dtype != np.bool_:
            raise TypeError(f"{name} must have dtype bool, got {value.dtype}")
        arr = np.array(value, copy=True)
    elif isinstance(value, (list, tuple)):
        if not all(isinstance(v, (bool, np.bool_)) for v in value):
            bad = next(v for v in value if not isinstance(v, (bool, np.bool_)))
            raise TypeError(f"{name} must hold bools, got {type(bad).__name__}")
        arr = np.array(value, dtype=bool).reshape(-1)
    else:
        raise TypeError(f"{name} must be a bool array or a list of bools, "
                        f"got {type(value).__name__}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {length}")
    return arr


def as_float_column(value: object, name: str, length: int,
                    per: str = "entry") -> NDArray[np.float64]:
    """A 1-D column of ``length`` real numbers as a fresh float64 array (integer or float
    dtypes; bools, strings, complex and objects refused). Finiteness is the caller's."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
        arr: NDArray[Any] = value
    elif isinstance(value, (list, tuple)):
        arr = _from_sequence(value, name, 1, "iuf")
    else:
        raise TypeError(f"{name} must be an array or a list of numbers, "
                        f"got {type(value).__name__}")
    if arr.shape != (length,):
        raise ValueError(f"{name} must have one value per {per} ({length}), "
                         f"got shape {arr.shape}")
    return np.array(arr, dtype=np.float64, copy=True)


# ------------------------------------------------------------------------ tables
def as_table(value: object, name: str, *, freeze: bool = False,
             writable: bool = False) -> Int32Array:
    """A private int32, C-contiguous (P, R) snapshot with 1 <= R <= 7 (values not yet
    checked)."""
    arr = as_int32_array(value, name, 2, freeze=freeze, writable=writable)
    R = arr.shape[1]
    if R < 1 or R > MAX_REPLICA_COUNT:
        raise ValueError(f"{name} must have 1..{MAX_REPLICA_COUNT} replica columns, got {R}")
    return arr


def raise_for_status(status: int, name: str, arr: Int32Array, row: int, col: int,
                     member_count: int | None = None) -> None:
    """Raise the ValueError for a failed table check of ``arr`` (argument ``name``) at
    ``[row, col]``; return quietly when ``status`` is OK."""
    if status == _validate.OK:
        return
    if status == _validate.BELOW_MINUS_ONE:
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member indices must be >= -1")
    if status == _validate.TOO_LARGE:
        if member_count is None:
            raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member indices must be "
                             f"< {MAX_MEMBER_COUNT} (hzfast's member limit)")
        raise ValueError(f"{name}[{row}, {col}] = {arr[row, col]}: member index out of range "
                         f"for {member_count} members")
    if status == _validate.DUPLICATE:
        raise ValueError(f"{name}: partition {row} holds member {arr[row, col]} twice")
    raise ValueError(f"{name}: invalid row {row}")  # pragma: no cover - no other table status


def check_table(value: object, name: str, *, member_count: int | None = None,
                freeze: bool = False, writable: bool = False) -> tuple[Int32Array, int]:
    """Validate a replica table; return ``(snapshot, largest member)`` (-1 if none).

    The snapshot is private (:func:`private`): kernels read it, never the caller's array.
    Member indices must be ``< member_count`` (default: :data:`MAX_MEMBER_COUNT`)."""
    arr = as_table(value, name, freeze=freeze, writable=writable)
    bound = MAX_MEMBER_COUNT if member_count is None else member_count
    status, _, row, col, _, mx = _validate.check_tables(arr, None, bound)
    raise_for_status(status, name, arr, row, col, member_count)
    return arr, mx


def check_pair(current: object, target: object, name_a: str = "current",
               name_b: str = "target") -> tuple[Int32Array, Int32Array, int, int]:
    """Validate two replica tables of one shape; return ``(a, b, mismatching slots,
    largest member)`` (``a``, ``b`` private snapshots)."""
    a = as_table(current, name_a)
    b = as_table(target, name_b)
    same_shape(a, b, name_a, name_b)
    status, which, row, col, mismatches, mx = _validate.check_tables(a, b, MAX_MEMBER_COUNT)
    raise_for_status(status, (name_a, name_b)[which], (a, b)[which], row, col)
    return a, b, mismatches, mx


def as_replicas(value: object, name: str = "replicas", *,
                member_count: int | None = None, freeze: bool = False) -> Int32Array:
    """Validate a replica table: int32, C-contiguous, shape (P, R) with 1 <= R <= 7,
    every value in [-1, member_count) (default bound :data:`MAX_MEMBER_COUNT`), no
    member twice in a row. Returns a private snapshot (see :func:`check_table`)."""
    return check_table(value, name, member_count=member_count, freeze=freeze)[0]


def as_versions(value: object, partition_count: int, name: str = "versions", *,
                freeze: bool = False, writable: bool = False) -> Int32Array:
    """Validate a version vector: int32, C-contiguous, shape (partition_count,); returns
    a private snapshot."""
    arr = as_int32_array(value, name, 1, freeze=freeze, writable=writable)
    if arr.shape[0] != partition_count:
        raise ValueError(f"{name} must have length {partition_count} (one per partition), "
                         f"got {arr.shape[0]}")
    return arr


def same_shape(a: Int32Array, b: Int32Array, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, "
                         f"got {a.shape} and {b.shape}")


# ------------------------------------------------------------------------- files
class FileProblem(ValueError):
    """What is wrong with a file's content (turned into one ValueError naming the file)."""


#: The largest ratio of uncompressed to compressed size that deflate can reach (about
#: 1032:1), with room: an entry claiming more is not real data.
_MAX_RATIO = 1100
_NPY_HEADER_LIMIT = 10_000


def file_name(path: object) -> str:
    """How a path (or an open file) is named in a message."""
    if isinstance(path, (str, bytes, os.PathLike)):
        return repr(os.fsdecode(path))
    return repr(getattr(path, "name", "<file object>"))


def _read_entry(zf: Any, entry: str, kind: str, ndim: int) -> NDArray[Any]:
    """One ``.npy`` entry of an open zip, checked against ``kind`` ("int32" or "unicode")
    and ``ndim`` and against the entry's declared sizes before any data is read."""
    import zipfile

    info = zf.getinfo(entry)
    if info.flag_bits & 0x1:
        raise FileProblem(f"entry {entry!r} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise FileProblem(f"entry {entry!r} uses an unsupported compression")
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(
                f, max_header_size=_NPY_HEADER_LIMIT)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(
                f, max_header_size=_NPY_HEADER_LIMIT)
        else:
            raise FileProblem(f"entry {entry!r} has unsupported .npy version {version}")
        header = f.tell()
        if dtype.hasobject:
            raise FileProblem(f"entry {entry!r} holds Python objects (pickles are refused)")
        if kind == "int32":
            ok = dtype.kind == "i" and dtype.itemsize == 4
        else:
            ok = dtype.kind == "U"
        if not ok:
            raise FileProblem(f"entry {entry!r} has dtype {dtype}, expected {kind}")
        if len(shape) != ndim or any(d < 0 for d in shape):
            raise FileProblem(f"entry {entry!r} has shape {shape}, expected {ndim} dimensions")
        count = 1
        for d in shape:
            count *= d
        nbytes = count * dtype.itemsize
        if header + nbytes != info.file_size:
            raise FileProblem(f"entry {entry!r} claims shape {shape} ({nbytes} bytes) but "
                              f"holds {info.file_size - header} bytes")
        if info.file_size > _MAX_RATIO * info.compress_size + 65_536:
            raise FileProblem(f"entry {entry!r} claims {info.file_size} bytes from "
                              f"{info.compress_size} compressed bytes")
        data = f.read(nbytes)
        if len(data) != nbytes or f.read(1):
            raise FileProblem(f"entry {entry!r} is truncated")
    arr: NDArray[Any] = np.frombuffer(data, dtype=dtype)
    arr = arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
    if kind == "int32":
        arr = frozen(np.ascontiguousarray(arr, dtype=np.int32))
    return arr


def read_npz(path: str | os.PathLike[str] | IO[bytes], expected: Mapping[str, tuple[str, int]],
             what: str) -> dict[str, NDArray[Any]]:
    """Read an ``.npz`` file holding exactly the arrays of ``expected`` (name ->
    ``("int32" | "unicode", ndim)``); int32 arrays come back immutable (:func:`frozen`).

    Every problem with the content - not a zip, truncated, corrupt, a pickle, a missing
    or extra array, a wrong dtype or shape, sizes that do not add up - raises one
    ValueError naming the file (``what`` and the path) and the problem; a path that
    cannot be opened raises the usual OSError. Nothing is allocated before the entry's
    declared sizes agree with its header, and no entry may claim more than deflate can
    produce from its compressed size."""
    import zipfile

    label = f"{what} {file_name(path)}"
    if isinstance(path, (str, bytes, os.PathLike)):
        with open(path, "rb") as fh:   # missing or unreadable: OSError, as for any file
            return read_npz(fh, expected, what)
    try:
        magic = path.read(6)
        if magic[:2] != b"PK":
            if magic.startswith(b"\x93NUMPY"):
                raise FileProblem("is a single .npy array, not an .npz archive")
            if magic[:1] == b"\x80":
                raise FileProblem("is a pickle (refused), not an .npz archive")
            raise FileProblem("is not an .npz (zip) archive" if magic else "is empty")
        path.seek(0)
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            want = {f"{n}.npy": n for n in expected}
            if len(set(names)) != len(names):
                raise FileProblem("holds an entry twice")
            missing = sorted(want[n] for n in set(want) - set(names))
            if missing:
                raise FileProblem(f"lacks the array(s) {missing}")
            extra = sorted(set(names) - set(want))
            if extra:
                raise FileProblem(f"holds unexpected entries {extra}")
            return {want[e]: _read_entry(zf, e, *expected[want[e]]) for e in want}
    except FileProblem as exc:
        raise ValueError(f"{label} {exc}") from None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - every parser failure is a damaged file
        # zipfile, zlib and numpy's header parser raise many kinds (BadZipFile, zlib.error,
        # EOFError, OSError, KeyError, struct.error, SyntaxError, tokenize.TokenError,
        # RecursionError, OverflowError, ...): for a file that opened, each is a damaged file
        raise ValueError(f"{label} is corrupt or truncated ({type(exc).__name__}: "
                         f"{exc})") from None
