# An int32 vector's C pointer without a memoryview: for kernels called thousands of times
# on short vectors, where acquiring a memoryview costs more than the loop. A module that
# cimports this calls cnp.import_array() once.
cimport numpy as cnp

from hzfast._types cimport int32_t, intp_t


cdef inline bint vector32(object a, bint writeable, int32_t** data, intp_t* n) noexcept:
    """Whether ``a`` is an aligned, native-order, C-contiguous, 1-D int32 ndarray (and
    writeable when asked); then its data pointer and length are in ``data`` and ``n``."""
    if type(a) is not cnp.ndarray:
        return False
    cdef cnp.ndarray arr = <cnp.ndarray>a
    if (cnp.PyArray_TYPE(arr) != cnp.NPY_INT32 or cnp.PyArray_NDIM(arr) != 1
            or not cnp.PyArray_IS_C_CONTIGUOUS(arr) or not cnp.PyArray_ISNOTSWAPPED(arr)
            or not cnp.PyArray_ISALIGNED(arr) or (writeable and not cnp.PyArray_ISWRITEABLE(arr))):
        return False
    data[0] = <int32_t*>cnp.PyArray_DATA(arr)
    n[0] = cnp.PyArray_DIM(arr, 0)
    return True
