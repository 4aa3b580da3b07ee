# A migration decision in the kernels (docs/design.md sections 5 and 6): its kind, whether
# it is instant, the plan's columns, and applying / undoing one decision on a row.
from hzfast._types cimport (int8_t, int32_t, intp_t, S_OK, S_BAD_PARTITION, S_BAD_INDEX,
                           S_BAD_MEMBER, S_SOURCE_MISMATCH, S_DESTINATION_MISMATCH)

# MigrationKind values (hzfast.migration.plan.MigrationKind)
cdef enum:
    K_REMOVE = 0
    K_COPY = 1
    K_ASSIGN_LOST_OWNER = 2
    K_SHIFT_UP = 3
    K_MOVE = 4
    K_SHIFT_DOWN = 5
    K_SHIFT_UP_SOURCE_DROPPED = 6
    K_SHIFT_UP_SHIFT_DOWN = 7

# rows of a plan's (7, N) column block
cdef enum:
    C_PID = 0
    C_SRC = 1
    C_SCI = 2
    C_SNI = 3
    C_DST = 4
    C_DCI = 5
    C_DNI = 6
    N_COLUMNS = 7


cdef struct Columns:
    # a plan's decisions: one pointer per field (NULL when the plan is empty)
    intp_t n
    const int32_t* pid
    const int32_t* src
    const int32_t* sci
    const int32_t* sni
    const int32_t* dst
    const int32_t* dci
    const int32_t* dni


cdef inline Columns columns_of(const int32_t[:, :] block) except *:
    """The field pointers of a (7, N) column block whose rows are contiguous (a plan's
    ``_columns``, or a slice of a larger block); raises ValueError otherwise."""
    cdef Columns c
    if block.shape[0] != N_COLUMNS or (block.shape[1] > 1 and block.strides[1] != 4):
        raise ValueError("a plan's columns must be a (7, N) int32 block with contiguous rows")
    c.n = block.shape[1]
    if c.n == 0:
        c.pid = c.src = c.sci = c.sni = c.dst = c.dci = c.dni = NULL
        return c
    c.pid = &block[C_PID, 0]
    c.src = &block[C_SRC, 0]
    c.sci = &block[C_SCI, 0]
    c.sni = &block[C_SNI, 0]
    c.dst = &block[C_DST, 0]
    c.dci = &block[C_DCI, 0]
    c.dni = &block[C_DNI, 0]
    return c


cdef inline int8_t kind_of(int32_t src, int32_t sni, int32_t dst, int32_t dci,
                           int32_t dni) noexcept nogil:
    """The MigrationKind of a decision, from its fields (docs/design.md section 5).
    Cannot fail."""
    if dst < 0:
        return K_REMOVE
    if src < 0:
        if dci >= 0:
            return K_SHIFT_UP
        return K_ASSIGN_LOST_OWNER if dni == 0 else K_COPY
    if dci < 0:
        return K_MOVE if sni < 0 else K_SHIFT_DOWN
    return K_SHIFT_UP_SOURCE_DROPPED if sni < 0 else K_SHIFT_UP_SHIFT_DOWN


cdef inline bint is_instant(int8_t kind) noexcept nogil:
    """REMOVE and lost-owner assignment: applied at once, never queued. Cannot fail."""
    return kind == K_REMOVE or kind == K_ASSIGN_LOST_OWNER


cdef inline int32_t owner_after_fields(int32_t src, int32_t sci, int32_t sni, int32_t dst,
                                      int32_t dci, int32_t dni, int32_t o) noexcept nogil:
    """Slot 0 of a row after a decision, from slot 0 (``o``) before it (as
    :func:`apply_step`: ``S[sci] = -1``, ``S[dci] = -1``, ``S[dni] = destination``,
    ``S[sni] = source``). Cannot fail."""
    if sci == 0:
        o = -1
    if dci == 0:
        o = -1
    if dni == 0:
        o = dst
    if sni == 0:
        o = src
    return o


cdef inline int32_t endpoint_of(int32_t src, int32_t sci, bint instant,
                                int32_t owner) noexcept nogil:
    """The executor's source endpoint of a decision made when slot 0 holds ``owner``
    (docs/design.md section 6): its source when it takes the owner's replica, else the
    owner; -1 for an instant decision (never queued). Cannot fail."""
    if instant:
        return -1
    return src if sci == 0 else owner


cdef inline int check_decision(const Columns* c, intp_t k, intp_t P, int R,
                               intp_t M) noexcept nogil:
    """Status of decision ``k`` on its own: partition in [0, P), indices in [-1, R),
    members in [-1, M) (``M < 0``: no upper bound), a new index exactly when there is a
    member to put there. Cannot fail (returns a status)."""
    cdef int32_t p = c.pid[k], a = c.sci[k], b = c.sni[k], x = c.dci[k], y = c.dni[k]
    cdef int32_t sm = c.src[k], dm = c.dst[k]
    if p < 0 or p >= P:
        return S_BAD_PARTITION
    if a < -1 or a >= R or b < -1 or b >= R or x < -1 or x >= R or y < -1 or y >= R:
        return S_BAD_INDEX
    if sm < -1 or dm < -1 or (M >= 0 and (sm >= M or dm >= M)):
        return S_BAD_MEMBER
    if (y >= 0) != (dm >= 0) or (b >= 0 and sm < 0):
        return S_BAD_INDEX
    return S_OK


cdef inline int matches_row(const Columns* c, intp_t k, const int32_t* row) noexcept nogil:
    """Status of decision ``k`` against the row it applies to: the source and the
    destination sit where the decision says. Cannot fail (returns a status)."""
    cdef int32_t a = c.sci[k], x = c.dci[k]
    if a >= 0 and row[a] != c.src[k]:
        return S_SOURCE_MISMATCH
    if x >= 0 and row[x] != c.dst[k]:
        return S_DESTINATION_MISMATCH
    return S_OK


cdef inline int32_t apply_step(const Columns* c, intp_t k, int32_t* row) noexcept nogil:
    """Apply decision ``k`` to its row (Hazelcast's applyMigration: ``S[sci] = -1``,
    ``S[dci] = -1``, ``S[dni] = destination``, ``S[sni] = source``, each when its index is
    set); returns the version increment ``1 + (sni > -1) + (dci > -1)``. The decision
    was checked. Cannot fail."""
    # fields first: the stores into row may alias them as far as the compiler knows
    cdef int32_t a = c.sci[k], b = c.sni[k], x = c.dci[k], y = c.dni[k]
    cdef int32_t sm = c.src[k], dm = c.dst[k], inc = 1
    if a >= 0:
        row[a] = -1
    if x >= 0:
        row[x] = -1
        inc += 1
    if y >= 0:
        row[y] = dm
    if b >= 0:
        row[b] = sm
        inc += 1
    return inc


cdef inline void unapply_step(const Columns* c, intp_t k, int32_t* row) noexcept nogil:
    """Undo decision ``k`` on its row (every slot a planner decision writes, other than
    the source's or the destination's old slot, was empty before). The decision was
    checked. Cannot fail."""
    cdef int32_t a = c.sci[k], b = c.sni[k], x = c.dci[k], y = c.dni[k]
    cdef int32_t sm = c.src[k], dm = c.dst[k]
    if b >= 0:
        row[b] = -1
    if y >= 0:
        row[y] = -1
    if x >= 0:
        row[x] = dm
    if a >= 0:
        row[a] = sm
