"""Build script: declares hzfast's Cython extensions.

Every ``_*.pyx`` file under ``hzfast/`` is one extension module named after its path
(``hzfast/_hashing.pyx`` -> ``hzfast._hashing``, ``hzfast/migration/_planner.pyx`` ->
``hzfast.migration._planner``).

Environment switches
--------------------
HZFAST_DEBUG=1
    Compile with bounds checking, wraparound and initialized checks on, and
    without optimisation (for debugging a kernel; slow).
HZFAST_EXT=_hashing,_planner
    Build only these extension modules (developer convenience when several
    kernels are being worked on at once).
HZFAST_ANNOTATE=1
    Write Cython's annotated HTML next to each ``.pyx``.
"""
import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("HZFAST_DEBUG", "") not in ("", "0")
ONLY = {s.strip() for s in os.environ.get("HZFAST_EXT", "").split(",") if s.strip()}

directives = {
    "language_level": 3,   # set here once; no per-file header
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}
# -g0: no debug sections in release builds (Python's own CFLAGS carry -g), so the wheel's
# extension modules stay small
compile_args = ["-O0", "-g"] if DEBUG else ["-O3", "-g0"]

extensions = []
for path in sorted(glob.glob(os.path.join("hzfast", "**", "_*.pyx"), recursive=True)):
    name = os.path.splitext(os.path.basename(path))[0]
    if ONLY and name not in ONLY:
        continue
    module = os.path.splitext(path)[0].replace(os.sep, ".")
    extensions.append(
        Extension(
            module,
            [path],
            # hzfast/ holds the C headers shared by the kernels (_rows.h)
            include_dirs=[np.get_include(), "hzfast"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
            extra_compile_args=compile_args,
        )
    )

setup(
    # compile the extension modules in parallel (pip install / pip wheel too)
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        annotate=os.environ.get("HZFAST_ANNOTATE", "") not in ("", "0"),
        # Debug C sources live apart, so switching HZFAST_DEBUG on or off always
        # compiles sources generated with the matching directives.
        build_dir="build/cython-debug" if DEBUG else None,
        nthreads=int(os.environ.get("HZFAST_JOBS", "0") or 0),
    ),
)
