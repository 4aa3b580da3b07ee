"""Build script: declares hzfast's Cython extensions.

Every ``_*.pyx`` file under ``hzfast/`` is one extension module named after its path
(``hzfast/_hashing.pyx`` -> ``hzfast._hashing``, ``hzfast/migration/_planner.pyx`` ->
``hzfast.migration._planner``).

The pure-Python modules in ``COMPILED_PY`` (the protocol node's modules and the simulator,
whose cost is Python's per-event work: docs/design.md §11.4) are compiled too, from their ``.py``
source, which stays the source of truth (mypy reads it; without a compiler the module
still runs as Python). They keep Python's semantics: bounds checks and negative indices
on, annotations not read as C types, functions bound as Python functions; an augmenting
``.pxd`` beside one may declare C types for its hot attributes and locals.

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
HZFAST_OPENMP=0
    Build without OpenMP even where the compiler has it.

OpenMP: the kernels that use ``cython.parallel`` (``prange``) are compiled and linked with
``-fopenmp`` when a probe program that includes ``omp.h`` and runs a parallel region
compiles and links with the compiler the build uses; otherwise (or with HZFAST_OPENMP=0)
without it, and their parallel loops run on one thread with the same results.
"""
import glob
import os
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, ExecError, LinkError, PlatformError

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
# the pure-Python modules compiled as they are: Python semantics throughout
py_directives = {
    "language_level": 3,
    "binding": True,              # functions introspect and bind like Python's
    "annotation_typing": False,   # `x: int` stays any Python object
    "boundscheck": True,
    "wraparound": True,
    "cdivision": False,
    "embedsignature": True,
}
COMPILED_PY = [
    *(os.path.join("hzfast", "protocol", f"{m}.py")
      for m in ("node", "core", "member", "master", "completed", "common", "designs",
                "config")),
    os.path.join("hzfast", "sim", "cluster.py"),
]

# -g0: no debug sections in release builds (Python's own CFLAGS carry -g), so the wheel's
# extension modules stay small
compile_args = ["-O0", "-g"] if DEBUG else ["-O3", "-g0"]

OPENMP_FLAGS = ["-fopenmp"]
OPENMP_PROBE = r"""
#include <omp.h>
int hzfast_openmp_probe(void) {
    int n = 0;
#pragma omp parallel reduction(+:n)
    n += 1;
    return n + omp_get_max_threads();
}
"""


def openmp_works(compiler) -> bool:
    """Whether ``compiler`` compiles and links OpenMP code (a probe shared object)."""
    if os.environ.get("HZFAST_OPENMP", "").strip() == "0":
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "openmp_probe.c")
        with open(src, "w") as f:
            f.write(OPENMP_PROBE)
        try:
            objects = compiler.compile([src], output_dir=tmp, extra_postargs=OPENMP_FLAGS)
            compiler.link_shared_object(objects, os.path.join(tmp, "openmp_probe.so"),
                                        extra_postargs=OPENMP_FLAGS)
        except (CompileError, LinkError, ExecError, PlatformError, OSError):
            return False       # no OpenMP (or no compiler that can say)
    return True


def uses_openmp(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        return "cython.parallel" in f.read()


class BuildExt(build_ext):
    """build_ext that adds the OpenMP flags to the kernels that use ``prange`` when the
    compiler supports them (probed once per build)."""

    def build_extensions(self) -> None:
        wanted = [ext for ext in self.extensions if ext.name in OPENMP_MODULES]
        if wanted:
            ok = openmp_works(self.compiler)
            print(f"hzfast: OpenMP {'found' if ok else 'not available'}: "
                  f"{', '.join(ext.name for ext in wanted)} "
                  f"{'use threads' if ok else 'run on one thread'}")
            if ok:
                for ext in wanted:
                    ext.extra_compile_args = list(ext.extra_compile_args) + OPENMP_FLAGS
                    ext.extra_link_args = list(ext.extra_link_args) + OPENMP_FLAGS
        super().build_extensions()


extensions = []
OPENMP_MODULES: set[str] = set()   # the kernels that use cython.parallel
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
    if uses_openmp(path):
        OPENMP_MODULES.add(module)

py_extensions = []
for path in COMPILED_PY:
    name = os.path.splitext(os.path.basename(path))[0]
    if ONLY and name not in ONLY:
        continue
    py_extensions.append(Extension(os.path.splitext(path)[0].replace(os.sep, "."), [path],
                                   include_dirs=[np.get_include(), "hzfast"],
                                   extra_compile_args=compile_args))

setup(
    cmdclass={"build_ext": BuildExt},
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
    ) + (cythonize(
        py_extensions,
        compiler_directives=py_directives,
        annotate=os.environ.get("HZFAST_ANNOTATE", "") not in ("", "0"),
        build_dir="build/cython-debug" if DEBUG else None,
    ) if py_extensions else []),
)
