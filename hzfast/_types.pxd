# Shared C types and constants of every hzfast kernel. cimport from here; never redefine.
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t

ctypedef Py_ssize_t intp_t

# Offsets of Arrow string/binary arrays (string / large_string).
ctypedef fused offset_t:
    int32_t
    int64_t

# Status of every validating kernel: the first problem found (row-major), 0 = none.
# hzfast._check turns a status into the ValueError naming the argument.
cdef enum Status:
    S_OK = 0
    S_BELOW_MINUS_ONE = 1        # a member index (or a value where -1 means none) < -1
    S_TOO_LARGE = 2              # a member index >= the member count
    S_DUPLICATE = 3              # a member twice in one row
    S_INTERNAL = 4               # a kernel invariant broken (impossible on validated input)
    S_BAD_PARTITION = 5          # a plan's partition id outside the table
    S_BAD_INDEX = 6              # a plan's replica index outside the row or inconsistent
    S_SOURCE_MISMATCH = 7        # the source is not at source_current_index
    S_DESTINATION_MISMATCH = 8   # the destination is not at destination_current_index
    S_BAD_MEMBER = 9             # a plan's member index < -1 or >= the member count
    S_NEGATIVE = 10              # a value that must be >= 0 (a counter, delta, size) is not
    S_OVERFLOW = 11              # a sum leaves the Java long (int64) range
    S_BAD_CODE = 12              # a code outside its enum (an Ignite partition state)
