"""Run the real ``hzfast`` console script in a subprocess, as a user's shell does.

``hz(*argv)`` returns the CompletedProcess; ``run_json`` checks exit status 0 and parses
stdout; ``run_text`` returns stdout; ``run_error`` checks a user error: status 2, exactly
one line on stderr naming what is wrong, no traceback, nothing on stdout.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = shutil.which("hzfast") or str(Path(sys.executable).with_name("hzfast"))


def run_hzfast(*argv, cwd=None, timeout=300, env=None):
    """``hzfast *argv`` in a subprocess (bounded by ``timeout`` seconds)."""
    assert os.path.exists(_SCRIPT), "the hzfast console script is not installed"
    return subprocess.run([_SCRIPT, *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=env, check=False)


@pytest.fixture
def hz():
    """``hz(*argv)``: the CompletedProcess of ``hzfast *argv`` (any exit status)."""
    return run_hzfast


@pytest.fixture
def run_json():
    """``run_json(*argv)``: run ``hzfast *argv`` (pass ``--json``), check status 0, parse."""
    def run(*argv, cwd=None):
        out = run_hzfast(*argv, cwd=cwd)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout)
    return run


@pytest.fixture
def run_text():
    """``run_text(*argv)``: run ``hzfast *argv``, check status 0, return stdout."""
    def run(*argv, cwd=None):
        out = run_hzfast(*argv, cwd=cwd)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout
    return run


@pytest.fixture
def run_error():
    """``run_error(*argv)``: a user error: status 2, one line on stderr, no traceback."""
    def run(*argv, cwd=None, status=2):
        out = run_hzfast(*argv, cwd=cwd)
        assert out.returncode == status, (out.returncode, out.stdout[-500:], out.stderr[-3000:])
        assert out.stdout == ""
        assert "Traceback" not in out.stderr
        assert out.stderr.endswith("\n") and out.stderr.count("\n") == 1, out.stderr
        return out.stderr
    return run
