# An int32 vector's (or table's) C pointer without a memoryview: for kernels called
# thousands of times on short arrays, where acquiring a memoryview costs more than the
# loop. A module that cimports this calls cnp.import_array() once.
cimport numpy as cnp

from hzfast._types cimport int32_t, intp_t


cdef inline bint _int32_array(object a, int ndim, bint writeable) noexcept:
    """Whether ``a`` is an aligned, native-order, C-contiguous int32 ndarray of ``ndim``
    dimensions (and writeable when asked)."""
    if type(a) is not cnp.ndarray:
        return False
    cdef cnp.ndarray arr = <cnp.ndarray>a
    return (cnp.PyArray_TYPE(arr) == cnp.NPY_INT32 and cnp.PyArray_NDIM(arr) == ndim
            and cnp.PyArray_IS_C_CONTIGUOUS(arr) and cnp.PyArray_ISNOTSWAPPED(arr)
            and cnp.PyArray_ISALIGNED(arr) and (not writeable or cnp.PyArray_ISWRITEABLE(arr)))


cdef inline bint vector32(object a, bint writeable, int32_t** data, intp_t* n) noexcept:
    """Whether ``a`` is an aligned, native-order, C-contiguous, 1-D int32 ndarray (and
    writeable when asked); then its data pointer and length are in ``data`` and ``n``."""
    if not _int32_array(a, 1, writeable):
        return False
    data[0] = <int32_t*>cnp.PyArray_DATA(<cnp.ndarray>a)
    n[0] = cnp.PyArray_DIM(<cnp.ndarray>a, 0)
    return True


cdef inline bint table32(object a, bint writeable, int32_t** data, intp_t* rows,
                         intp_t* cols) noexcept:
    """Whether ``a`` is an aligned, native-order, C-contiguous, 2-D int32 ndarray (and
    writeable when asked); then its data pointer and shape are in ``data``, ``rows`` and
    ``cols``."""
    if not _int32_array(a, 2, writeable):
        return False
    data[0] = <int32_t*>cnp.PyArray_DATA(<cnp.ndarray>a)
    rows[0] = cnp.PyArray_DIM(<cnp.ndarray>a, 0)
    cols[0] = cnp.PyArray_DIM(<cnp.ndarray>a, 1)
    return True
