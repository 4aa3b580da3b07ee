"""The typing is honest and checked: every kernel's ``.pyi`` stub matches its compiled module
(mypy's stubtest), and hzfast's public modules pass ``mypy --strict`` as configured in
pyproject.toml ([tool.mypy]: files, exclusions and overrides, each with its reason).

Both run in subprocesses, from the project root, with bounded timeouts; a failure shows
the tool's whole output. The annotations are checked against numpy's own type stubs, which
change between numpy releases (2.2 and 2.5 read some of the same code differently), so the
two mypy checks run where numpy is the series the project types against (NUMPY_TYPED,
what Python 3.11 installs); elsewhere they are skipped with that reason, never passed.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
NUMPY_TYPED = "2.4."
typed_numpy = pytest.mark.skipif(
    not np.__version__.startswith(NUMPY_TYPED),
    reason=f"annotations are checked against numpy {NUMPY_TYPED}x's stubs; this environment "
           f"has numpy {np.__version__}")
PKG = ROOT / "hzfast"
ALLOWLIST = ROOT / "tests" / "stubtest_allowlist.txt"

def _kernels() -> list[str]:
    """Every compiled module: each ``_*.pyx`` under hzfast/ is module ``hzfast.<path>``."""
    return sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                  for p in PKG.rglob("_*.pyx"))


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _report(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def test_kernels_are_discovered_and_each_has_a_stub() -> None:
    kernels = _kernels()
    assert "hzfast._hashing" in kernels and "hzfast.migration._schedule" in kernels, kernels
    missing = [m for m in kernels
               if not (ROOT / Path(*m.split("."))).with_suffix(".pyi").exists()]
    assert missing == []


@typed_numpy
def test_stubs_match_the_compiled_modules() -> None:
    # one run over every ready kernel: each allow-list entry must be used (stale ones fail)
    proc = _run(["mypy.stubtest", "--mypy-config-file", "pyproject.toml",
                 "--allowlist", str(ALLOWLIST), *_kernels()], timeout=600)
    assert proc.returncode == 0, _report(proc)


@typed_numpy
def test_mypy_strict(tmp_path: Path) -> None:
    # the files, strictness and per-module settings come from pyproject.toml; a private
    # cache keeps parallel test workers (and a developer's own runs) apart
    proc = _run(["mypy", "--config-file", "pyproject.toml", "--cache-dir", str(tmp_path)],
                timeout=600)
    assert proc.returncode == 0, _report(proc)
    assert "Success: no issues found" in proc.stdout, _report(proc)
