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
HZFAST_JOBS=N
    Cython's translation processes and the C compilers run at once (default: one per
    core).
HZFAST_NO_CACHE=1
    Compile every module, even one ``build/ext-cache`` holds.
HZFAST_OPENMP=0
    Build without OpenMP even where the compiler has it.

Build speed: the Cython helpers every module would carry (memoryviews, function objects,
argument parsing: about half of a kernel's C) are compiled once, into ``hzfast._cyutility``
(Cython's shared utility module), not into each module; the kernels (``_*.pyx``) are compiled
with ``-O3``, the compiled Python modules with ``-O1`` (their cost is Python's calls, not C
loops: -O1 halves their compile time and costs the simulator 1.8 % more instructions,
callgrind, seeds 0-5); Cython translates on every core (``nthreads``), and only the modules whose
inputs changed (their source, hzfast's ``.pxd``/``.h`` files, the directives, Cython's
and numpy's versions: a digest beside the cache below); the C compiler runs on every core
(``build_ext --parallel``, also under ``pip install``); and each compiled module is kept
in ``build/ext-cache/`` under a digest of everything that decides its bytes (its C
source, the headers beside it, the flags, the compiler, Python's and numpy's versions),
so a second ``pip install -e .`` of an unchanged tree (pip builds in a new temporary
folder each time) copies the modules instead of compiling them again.
``HZFAST_NO_CACHE=1`` translates and compiles everything.

OpenMP: the kernels that use ``cython.parallel`` (``prange``) are compiled and linked with
``-fopenmp`` when a probe program that includes ``omp.h`` and runs a parallel region
compiles and links with the compiler the build uses; otherwise (or with HZFAST_OPENMP=0)
without it, and their parallel loops run on one thread with the same results.
"""
import glob
import hashlib
import os
import shutil
import sys
import sysconfig
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
      for m in ("node", "core", "member", "master", "run", "completed", "common", "designs",
                "config", "memberlists", "membership")),
    *(os.path.join("hzfast", "sim", f"{m}.py")
      for m in ("timeline", "network", "data", "checks", "members", "cluster")),
]

# -g0: no debug sections in release builds (Python's own CFLAGS carry -g), so the wheel's
# extension modules stay small; -O1 for the compiled Python modules (module docstring)
compile_args = ["-O0", "-g"] if DEBUG else ["-O3", "-g0"]
py_compile_args = ["-O0", "-g"] if DEBUG else ["-O1", "-g0"]
# the Cython helpers every module shares, compiled once (its C is written by cythonize)
SHARED = "hzfast._cyutility"

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


JOBS = int(os.environ.get("HZFAST_JOBS", "") or os.cpu_count() or 1)
HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "build", "ext-cache")
USE_CACHE = os.environ.get("HZFAST_NO_CACHE", "") in ("", "0")


def _digest(ext: Extension, compiler: object) -> str:
    """What decides a compiled module's bytes: its sources (the generated C), the headers
    of hzfast/, its flags and macros, the compiler's command, Python's and numpy's versions."""
    h = hashlib.sha256()
    for part in (sys.version, np.__version__, sysconfig.get_config_var("EXT_SUFFIX") or "",
                 repr(getattr(compiler, "compiler_so", "")),
                 repr(getattr(compiler, "linker_so", "")),
                 repr(ext.extra_compile_args), repr(ext.extra_link_args),
                 repr(ext.define_macros), repr(ext.libraries),
                 # (numpy's headers by version: pip builds in a new temporary folder)
                 repr([d if d != np.get_include() else "<numpy>" for d in ext.include_dirs])):
        h.update(part.encode() + b"\0")
    headers = sorted(glob.glob(os.path.join(HERE, "hzfast", "**", "*.h"), recursive=True))
    for path in [*ext.sources, *ext.depends, *headers]:
        with open(path, "rb") as f:
            h.update(f.read() + b"\0")
    return h.hexdigest()[:24]


class BuildExt(build_ext):
    """build_ext that adds the OpenMP flags to the kernels that use ``prange`` when the
    compiler supports them (probed once per build), and reuses a module compiled before
    from the same inputs (``build/ext-cache``)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        # every core unless -j says otherwise: setup(options=...) alone does not reach
        # the build_ext that `pip install -e` runs (it re-creates the command; measured)
        if not self.parallel:
            self.parallel = JOBS

    def build_extension(self, ext: Extension) -> None:
        if not USE_CACHE:
            super().build_extension(ext)
            return
        target = self.get_ext_fullpath(ext.name)
        cached = os.path.join(CACHE, f"{ext.name}-{_digest(ext, self.compiler)}"
                                     f"{os.path.splitext(target)[1]}")
        if os.path.exists(cached):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copy2(cached, target)
            print(f"hzfast: {ext.name}: unchanged, copied from build/ext-cache")
            return
        super().build_extension(ext)
        os.makedirs(CACHE, exist_ok=True)
        for old in glob.glob(os.path.join(CACHE, f"{ext.name}-*")):   # one per module
            os.remove(old)
        tmp = f"{cached}.{os.getpid()}.tmp"
        shutil.copy2(target, tmp)
        os.replace(tmp, cached)

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
                                   extra_compile_args=py_compile_args))

ANNOTATE = os.environ.get("HZFAST_ANNOTATE", "") not in ("", "0")


def translated(exts: list[Extension], compiler_directives: dict[str, object]
               ) -> list[Extension]:
    """``cythonize(exts)``, except for the modules whose C source was generated before from
    the same inputs (``build/ext-cache/<module>.c-digest``): their ``.c`` is compiled as it
    is. cythonize decides by file times, and every ``pip install`` builds in a new
    environment whose numpy and Cython ``.pxd`` files are newer than any ``.c``: it would
    translate every module again (measured: the second ``pip install -e`` did)."""
    def run(todo: list[Extension], force: bool = False) -> list[Extension]:
        return cythonize(todo, compiler_directives=compiler_directives, annotate=ANNOTATE,
                         shared_utility_qualified_name=SHARED, force=force,
                         # Debug C sources live apart, so switching HZFAST_DEBUG on or off
                         # always compiles sources generated with the matching directives.
                         build_dir="build/cython-debug" if DEBUG else None, nthreads=JOBS)
    if DEBUG or ANNOTATE or not USE_CACHE:
        return run(exts)
    import Cython
    common = hashlib.sha256()
    for part in (Cython.__version__, np.__version__, repr(sorted(compiler_directives.items())),
                 SHARED):
        common.update(part.encode() + b"\0")
    for pattern in ("*.pxd", "*.pxi", "*.h"):
        for path in sorted(glob.glob(os.path.join(HERE, "hzfast", "**", pattern),
                                     recursive=True)):
            with open(path, "rb") as f:
                common.update(f.read() + b"\0")
    ready, todo, stamps = [], [], {}
    for ext in exts:
        if ext.name == SHARED:      # cythonize writes its C once per Cython version
            todo.append(ext)
            continue
        source = ext.sources[0]
        c_file = os.path.splitext(source)[0] + ".c"
        h = common.copy()
        with open(source, "rb") as f:
            h.update(f.read())
        digest = h.hexdigest()[:24]
        stamp = os.path.join(CACHE, f"{ext.name}.c-digest")
        if os.path.exists(c_file) and os.path.exists(stamp):
            with open(stamp) as f:
                if f.read() == digest:
                    ext.sources = [c_file, *ext.sources[1:]]
                    ready.append(ext)
                    continue
        todo.append(ext)
        stamps[stamp] = digest
    if ready:
        print(f"hzfast: {len(ready)} modules' C sources are up to date: not translated again")
    # (forced: cythonize alone goes by file times, and a digest that changed with a file
    # time that did not, e.g. new directives, would keep a stale C source)
    out = ready + (run(todo, force=True) if todo else [])
    os.makedirs(CACHE, exist_ok=True)
    for stamp, digest in stamps.items():
        with open(stamp, "w") as f:
            f.write(digest)
    return out


setup(
    cmdclass={"build_ext": BuildExt},
    # compile the extension modules in parallel (pip install / pip wheel too)
    options={"build_ext": {"parallel": JOBS}},
    ext_modules=translated([Extension(SHARED, [os.path.join("hzfast", "_cyutility.c")],
                                      extra_compile_args=compile_args), *extensions],
                           directives)
    + (translated(py_extensions, py_directives) if py_extensions else []),
)
