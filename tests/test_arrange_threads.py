"""arrange on several threads (issue 14): the same target for every thread and chunk count,
the ``threads`` argument and ``HZFAST_THREADS``, fork safety, and the build without OpenMP
(docs/design.md §8.8)."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hzfast
from hzfast import Members, _arrange
from hzfast import arrangement as A
from hzfast.reference import arrangement as ref

ROOT = Path(__file__).resolve().parent.parent
CHUNKS = (1, 2, 3, 5, 8)


def kernel(cur, members, grouping, chunks):
    """The arranger's kernel on ``chunks`` row chunks (threads when built with OpenMP);
    returns (counts, target, cycle_fallback)."""
    prep = A._prepare(cur, members, grouping, None)
    arranger = _arrange.Arranger(prep.cur, prep.gid, prep.G, prep.R_fill, prep.gstart,
                                 prep.gmem, chunks)
    counts = arranger.counts.copy()
    out, maybe_cycles = arranger.finish(A._quotas(arranger.counts, prep))
    return counts, out, maybe_cycles


def random_case(rng, it):
    """A random current table (any fill, lite members, host/zone/custom/array groups)."""
    M = int(rng.integers(1, 14))
    P = int(rng.integers(1, 120))
    R = int(rng.integers(1, 8))
    cur = np.full((P, R), -1, dtype=np.int32)
    for p in range(P):
        k = int(rng.integers(0, min(R, M) + 1))
        cur[p, :k] = rng.permutation(M)[:k]
        rng.shuffle(cur[p])
    members = Members.from_count(M, lite=(rng.random(M) < 0.2).tolist(),
                                 members_per_host=int(rng.integers(1, 4)),
                                 zones=int(rng.integers(0, 4)))
    grouping = ["per_member", "host", "zone", "custom", rng.integers(0, 3, M)][it % 5]
    if isinstance(grouping, str) and grouping == "custom":
        members = members.with_groups([f"g{i % 3}" for i in range(M)])
    return cur, members, grouping


def leave(P, M, R=7):
    """A balanced table for M members, repaired after member M - 1 left."""
    full = hzfast.arrange(np.full((P, R), -1, dtype=np.int32), M, threads=1)
    return hzfast.repair(full, np.arange(M) < M - 1)[0]


# ----------------------------------------------------------------------------- same result
def test_every_chunk_count_gives_the_same_counts_and_target_random():
    rng = np.random.default_rng(1414)
    checked = 0
    for it in range(300):
        cur, members, grouping = random_case(rng, it)
        try:
            want = kernel(cur, members, grouping, 1)
        except ValueError:
            continue                                  # no data members
        for chunks in CHUNKS[1:]:
            got = kernel(cur, members, grouping, chunks)
            assert got[0].tolist() == want[0].tolist(), (it, chunks)
            assert got[1].tolist() == want[1].tolist(), (it, chunks)
            assert got[2] == want[2]
        checked += 1
    assert checked > 200


def test_chunked_kernel_equals_the_reference():
    # more chunks than some tables have rows: empty chunks too
    rng = np.random.default_rng(77)
    for it in range(60):
        cur, members, grouping = random_case(rng, it)
        try:
            prep = A._prepare(cur, members, grouping, None)
        except ValueError:
            continue
        counts, got, _ = kernel(cur, members, grouping, 8)
        assert counts.tolist() == ref.keepable_counts(prep.cur.tolist(), prep.gid.tolist(),
                                                      prep.R_fill)
        groups = [prep.gmem[prep.gstart[g]:prep.gstart[g + 1]].tolist() for g in range(prep.G)]
        want = ref.arrange_core(prep.cur.tolist(), prep.gid.tolist(), prep.G, prep.R_fill,
                                A._quotas(counts, prep).tolist(), groups)
        assert got.tolist() == want


@pytest.mark.parametrize("case", ["leave", "join", "initial", "host", "many_groups",
                                  "many_members"])
def test_threads_give_the_same_target(case, monkeypatch):
    # small chunks, so these tables are split as a million partitions would be
    monkeypatch.setattr(A, "_MIN_ROWS_PER_THREAD", 64)
    members, grouping = 10, "per_member"
    if case == "leave":
        cur, members = leave(3001, 10), Members.from_count(10).with_lite([False] * 9 + [True])
    elif case == "join":
        cur, members = hzfast.arrange(leave(3001, 10), 9, threads=1), 10
    elif case == "initial":
        cur = np.full((2999, 7), -1, dtype=np.int32)
    elif case == "host":
        cur = np.full((2000, 7), -1, dtype=np.int32)
        members, grouping = Members.from_count(20, members_per_host=2), "host"
    elif case == "many_groups":         # G > 64: no row masks
        cur, members = leave(4000, 70, R=4), 69
    else:                               # M > 64 in 3 zones
        cur = leave(3000, 80, R=3)
        members, grouping = Members.from_count(80, zones=3), "zone"
    snapshot = cur.copy()
    want = hzfast.arrange(cur, members, grouping=grouping, threads=1)
    for threads in (2, 3, 7):
        got = hzfast.arrange(cur, members, grouping=grouping, threads=threads)
        assert got.dtype == np.int32 and got.tolist() == want.tolist(), threads
    assert (cur == snapshot).all()
    rep = hzfast.arrangement_report(cur, want, members, grouping=grouping)
    assert rep.valid and rep.cycle_count == 0


def test_large_leave_one_and_two_threads():
    # big enough for two chunks of the default size
    cur = leave(3 * A._MIN_ROWS_PER_THREAD + 5, 10)
    members = Members.from_count(10).with_lite([False] * 9 + [True])
    one = hzfast.arrange(cur, members, threads=1)
    two = hzfast.arrange(cur, members, threads=2)
    assert (one == two).all()
    assert A._chunks(2, cur.shape[0]) == (2 if _arrange.OPENMP else 1)
    rep = hzfast.arrangement_report(cur, two, members)
    assert rep.balanced and rep.valid and rep.cycle_count == 0
    assert rep.slot_changes <= 1.1 * rep.lower_bound


def test_repair_threads_give_the_same_result(monkeypatch):
    monkeypatch.setattr(A, "_MIN_ROWS_PER_THREAD", 16)
    rng = np.random.default_rng(9)
    for _ in range(30):
        M, P, R = int(rng.integers(1, 12)), int(rng.integers(1, 400)), int(rng.integers(1, 8))
        reps = np.full((P, R), -1, dtype=np.int32)
        for p in range(P):
            k = int(rng.integers(0, min(R, M) + 1))
            reps[p, :k] = rng.permutation(M)[:k]
        alive = rng.random(M) < 0.6
        vers = rng.integers(-2**31, 2**31 - 1, P).astype(np.int32)     # wraps too
        snapshot = reps.copy()
        want = ref.repair(reps.tolist(), alive.tolist(), vers.tolist())
        for threads in (1, 2, 5):
            got = hzfast.repair(reps, alive, vers, threads=threads)
            assert got[0].tolist() == want[0] and got[1].tolist() == want[1], threads
        for chunks in CHUNKS:                        # the kernel on any chunk count
            got = _arrange.repair(reps, alive.view(np.uint8), vers, chunks)
            assert got[0].tolist() == want[0] and got[1].tolist() == want[1], chunks
        assert (reps == snapshot).all()


def test_repair_threads_argument_is_checked():
    reps = np.array([[0, 1]], dtype=np.int32)
    with pytest.raises(TypeError, match="threads"):
        hzfast.repair(reps, [0], threads=1.0)
    with pytest.raises(ValueError, match="threads"):
        hzfast.repair(reps, [0], threads=0)
    assert hzfast.repair(reps, [0], threads=3)[0].tolist() == [[0, -1]]


# ----------------------------------------------------------------------------- chunks
def test_chunks_rules(monkeypatch):
    n = A._MIN_ROWS_PER_THREAD
    monkeypatch.setattr(_arrange, "OPENMP", True)
    assert A._chunks(1, 100 * n) == 1
    assert A._chunks(2, 2 * n - 1) == 1                 # too few rows for two threads
    assert A._chunks(2, 2 * n) == 2
    assert A._chunks(5, 3 * n) == 3
    assert A._chunks(10_000, 10_000 * n) == A._MAX_CHUNKS
    monkeypatch.setattr(_arrange, "OPENMP", False)
    assert A._chunks(8, 100 * n) == 1                   # no OpenMP: one chunk


def test_threads_argument_is_checked():
    cur = np.full((10, 3), -1, dtype=np.int32)
    for bad in ("2", 2.0, True, [2]):
        with pytest.raises(TypeError, match="threads"):
            hzfast.arrange(cur, 3, threads=bad)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="threads"):
            hzfast.arrange(cur, 3, threads=bad)
    assert hzfast.arrange(cur, 3, threads=np.int64(2)).shape == (10, 3)


def test_threads_environment_variable(monkeypatch):
    cur = np.full((10, 3), -1, dtype=np.int32)
    want = hzfast.arrange(cur, 3, threads=1)
    monkeypatch.delenv(A.THREADS_ENV, raising=False)
    assert A._thread_count(None) == (os.cpu_count() or 1)
    monkeypatch.setenv(A.THREADS_ENV, "3")
    assert A._thread_count(None) == 3
    assert A._thread_count(2) == 2                      # the argument wins
    assert (hzfast.arrange(cur, 3) == want).all()
    for bad in ("zero", "0", "-2", "1.5"):
        monkeypatch.setenv(A.THREADS_ENV, bad)
        with pytest.raises(ValueError, match=A.THREADS_ENV):
            hzfast.arrange(cur, 3)
        assert (hzfast.arrange(cur, 3, threads=1) == want).all()
    monkeypatch.setenv(A.THREADS_ENV, " ")
    assert A._thread_count(None) == (os.cpu_count() or 1)


# ----------------------------------------------------------------------------- process
def _run(code, timeout=120, env=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def test_import_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY",
                                                           "GOMP_SPINCOUNT")}
    proc = _run("""
        import os, hzfast, hzfast.arrangement
        print(sorted(k for k in os.environ if k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")))
    """, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]"]


@pytest.mark.skipif(not _arrange.OPENMP, reason="built without OpenMP: no threads to fork")
def test_forked_child_after_threads_does_not_hang():
    # GNU OpenMP's threads do not survive fork: a child must arrange on one thread. The
    # parent of the fork waits at most 60 s for it, then kills it by its pid.
    proc = _run("""
        import os, time
        import numpy as np
        import hzfast
        from hzfast import arrangement as A
        P = 2 * A._MIN_ROWS_PER_THREAD
        cur = np.full((P, 7), -1, dtype=np.int32)
        want = hzfast.arrange(cur, 10, threads=2)          # OpenMP threads in the parent
        assert A._openmp_pid == os.getpid()
        pid = os.fork()
        if pid == 0:
            ok = A._chunks(2, P) == 1 and (hzfast.arrange(cur, 10, threads=2) == want).all()
            os._exit(0 if ok else 3)
        for _ in range(600):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("exit", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print("hung")
    """, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["exit", "0"]


@pytest.mark.build
def test_build_without_openmp_gives_the_same_target(tmp_path):
    """The kernel compiled with HZFAST_OPENMP=0 (what a compiler without OpenMP gets)
    builds, says so, and arranges exactly as this build does, on any chunk count."""
    src = tmp_path / "src"
    (src / "hzfast").mkdir(parents=True)
    shutil.copy(ROOT / "setup.py", src)
    for pattern in ("_arrange.pyx", "*.pxd", "*.h"):
        for f in (ROOT / "hzfast").glob(pattern):
            shutil.copy(f, src / "hzfast")
    env = dict(os.environ, HZFAST_OPENMP="0", HZFAST_EXT="_arrange")
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=src,
                           env=env, check=False, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "OpenMP not available" in build.stdout
    built = list((src / "hzfast").glob("_arrange*.so"))
    assert len(built) == 1
    pkg = tmp_path / "nomp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(built[0], pkg)
    proc = _run(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import numpy as np
        import hzfast
        from hzfast import arrangement as A
        from nomp import _arrange as plain
        assert not plain.OPENMP
        cur = hzfast.repair(hzfast.arrange(np.full((5000, 7), -1, np.int32), 10),
                            np.arange(10) < 9)[0]
        members = hzfast.Members.from_count(10).with_lite([False] * 9 + [True])
        prep = A._prepare(cur, members, "per_member", None)
        want = hzfast.arrange(cur, members, threads=2)
        for chunks in (1, 2, 5):
            a = plain.Arranger(prep.cur, prep.gid, prep.G, prep.R_fill, prep.gstart,
                               prep.gmem, chunks)
            out, _ = a.finish(A._quotas(a.counts, prep))
            assert (out == want).all(), chunks
        print("same")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["same"]
