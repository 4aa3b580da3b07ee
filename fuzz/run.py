"""Run hzfast's fuzz targets: ``python -m fuzz.run [--target NAME ...|--all] [--seconds N]``.

Each target runs in its own process (``python -m fuzz.run --worker NAME -- <libFuzzer
flags>``) under atheris, with hzfast's Python modules and the harness instrumented for
coverage. The committed seeds in ``fuzz/corpus/<target>/`` are read; new inputs go to a
scratch corpus (``--corpus-out`` keeps them), so a run never rewrites the seed corpus
unless asked (``--merge``). A crash, an exception other than ValueError/TypeError, a
broken contract, a hang (``--timeout``) or a memory blow-up (``--rss-limit-mb``) is a
finding: its input is written to ``--artifacts`` and the run exits with status 1.

Modes
-----
``--seconds N``   budget per target (default 20; CI runs every target with it).
``--hours H``     long mode: H hours in total, split evenly over the chosen targets.
``--repro FILE``  run one input through ``--target`` without atheris' runner (a plain
                  traceback; what ``fuzz/findings/*.py`` reproducers boil down to).
``--merge``       after fuzzing, minimise seeds + new inputs by coverage and keep the
                  ``--max-seeds`` passing ones (sizes spread evenly) as the seed corpus.
``--known RE``    keep searching past findings already reported (long runs only).

Runs are sequential: one core at most.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT / "corpus"


def _launcher(name: str) -> str:
    """An executable that restarts this worker: libFuzzer re-runs ``argv[0]`` with flags of
    its own for ``-merge`` (and to restart after a crash during one)."""
    folder = Path(tempfile.gettempdir()) / f"hzfast-fuzz-launchers-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    tag = hashlib.sha1(f"{ROOT}\0{sys.executable}".encode()).hexdigest()[:12]
    path = folder / f"fuzz-{name}-{tag}"
    path.write_text(f"#!/bin/sh\ncd {shlex.quote(str(ROOT.parent))} && exec "
                    f"{shlex.quote(sys.executable)} -m fuzz.run --worker {name} -- \"$@\"\n")
    path.chmod(0o755)
    return str(path)


def _worker(name: str, flags: list[str]) -> None:
    """Inside the child: instrument, import the target, hand control to libFuzzer.

    ``HZFAST_FUZZ_KNOWN`` (a regular expression) names findings already reported: an
    exception whose ``Type: message`` matches it is swallowed, so a long run keeps
    searching for new ones while the known ones are being fixed.
    """
    import atheris

    with atheris.instrument_imports(include=["hzfast", "fuzz"]):
        import hzfast  # noqa: F401
        module = importlib.import_module(f"fuzz.targets.{name}")
    target = module.test_one_input
    known = os.environ.get("HZFAST_FUZZ_KNOWN")
    if known:
        pattern = re.compile(known)

        def target(data: bytes) -> None:
            try:
                module.test_one_input(data)
            except Exception as exc:
                if not pattern.search(f"{type(exc).__name__}: {exc}"):
                    raise

    atheris.Setup([_launcher(name), *flags], target)
    atheris.Fuzz()


def _repro(name: str, path: Path) -> int:
    module = importlib.import_module(f"fuzz.targets.{name}")
    module.test_one_input(path.read_bytes())
    print(f"{name}: {path} passes the contract")
    return 0


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_target(name: str, seconds: int, args: argparse.Namespace) -> tuple[int, float, str]:
    """Fuzz one target for ``seconds``; returns (exit status, CPU seconds, artifact)."""
    seeds = CORPUS / name
    seeds.mkdir(parents=True, exist_ok=True)
    artifacts = Path(args.artifacts).resolve()
    artifacts.mkdir(parents=True, exist_ok=True)
    scratch = Path(args.corpus_out).resolve() / name if args.corpus_out else \
        Path(tempfile.mkdtemp(prefix=f"hzfast-fuzz-{name}-"))
    scratch.mkdir(parents=True, exist_ok=True)
    flags = [f"-max_total_time={seconds}", f"-timeout={args.timeout}",
             f"-rss_limit_mb={args.rss_limit_mb}", f"-artifact_prefix={artifacts}/{name}-",
             "-print_final_stats=1", "-max_len=4096", str(scratch), str(seeds)]
    cmd = [sys.executable, "-m", "fuzz.run", "--worker", name, "--", *flags]
    log = artifacts / f"{name}.log"
    before = _cpu_children()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                cwd=str(ROOT.parent), env=os.environ.copy())
        try:
            status = proc.wait(timeout=seconds + args.timeout + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = -9
    cpu = _cpu_children() - before
    found = ""
    text = log.read_text(errors="replace")
    for line in text.splitlines():
        if "Test unit written to" in line:
            found = line.split("Test unit written to", 1)[1].strip()
    if args.merge:
        refresh_seeds(name, scratch, args.max_seeds, args.timeout)
    if not args.corpus_out:
        shutil.rmtree(scratch, ignore_errors=True)
    return status, cpu, found


def refresh_seeds(name: str, found: Path, limit: int, timeout: int) -> int:
    """Minimise seeds + ``found`` by coverage (libFuzzer ``-merge``), keep ``limit`` of the
    inputs that pass the contract (sizes spread from the smallest to the largest), and
    make them the seed corpus. Returns the number of seeds."""
    seeds = CORPUS / name
    merged = Path(tempfile.mkdtemp(prefix=f"hzfast-merge-{name}-"))
    subprocess.run([sys.executable, "-m", "fuzz.run", "--worker", name, "--", "-merge=1",
                    f"-timeout={timeout}", str(merged), str(seeds), str(found)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=str(ROOT.parent), check=False)
    module = importlib.import_module(f"fuzz.targets.{name}")
    passing = []
    for path in sorted(merged.iterdir(), key=lambda p: (p.stat().st_size, p.name)):
        try:
            module.test_one_input(path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - a finding belongs in fuzz/findings
            print(f"{name}: {path.name} left out of the seeds: {type(exc).__name__}",
                  file=sys.stderr)
            continue
        passing.append(path)
    # sizes spread evenly from the smallest to the largest passing input
    step = max(len(passing) / max(limit, 1), 1.0)
    keep = [passing[int(i * step)] for i in range(min(limit, len(passing)))]
    if keep:
        for old in seeds.iterdir():
            old.unlink()
        for path in keep:
            shutil.copy(path, seeds / path.name)
    shutil.rmtree(merged, ignore_errors=True)
    return len(keep)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        name = argv[1]
        flags = argv[3:] if argv[2:3] == ["--"] else argv[2:]
        _worker(name, flags)
        return 0
    ap = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.split("\n")[0])
    ap.add_argument("--target", action="append", choices=TARGETS, help="target (repeatable)")
    ap.add_argument("--all", action="store_true", help="every target (the default)")
    ap.add_argument("--list", action="store_true", help="list the targets and exit")
    ap.add_argument("--seconds", type=int, default=20, help="budget per target (default 20)")
    ap.add_argument("--hours", type=float, help="long mode: total budget, split over targets")
    ap.add_argument("--timeout", type=int, default=30, help="seconds one input may take")
    ap.add_argument("--rss-limit-mb", type=int, default=1536, help="memory ceiling per target")
    ap.add_argument("--artifacts", default="fuzz-artifacts", help="crash inputs and logs")
    ap.add_argument("--corpus-out", help="keep the inputs found here (one folder per target)")
    ap.add_argument("--merge", action="store_true",
                    help="after fuzzing, minimise seeds + new inputs into the seed corpus")
    ap.add_argument("--max-seeds", type=int, default=40,
                    help="seeds kept per target by --merge (default 40)")
    ap.add_argument("--repro", type=Path, help="run one input file through --target")
    ap.add_argument("--known", action="append", default=[],
                    help="regex of a finding already reported: keep searching past it "
                         "(repeatable; never in CI)")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(TARGETS))
        return 0
    names = list(args.target or TARGETS)
    if args.repro:
        if len(names) != 1:
            ap.error("--repro needs exactly one --target")
        return _repro(names[0], args.repro)
    if args.known:
        os.environ["HZFAST_FUZZ_KNOWN"] = "|".join(f"(?:{k})" for k in args.known)
    seconds = args.seconds
    if args.hours:
        seconds = max(1, int(args.hours * 3600 / len(names)))
    failures = []
    total_cpu = 0.0
    start = time.monotonic()
    for name in names:
        status, cpu, found = run_target(name, seconds, args)
        total_cpu += cpu
        verdict = "ok" if status == 0 else f"FINDING (exit {status})"
        print(f"{name:16s} {seconds:6d} s  cpu {cpu:8.1f} s  {verdict}"
              + (f"  input: {found}" if found else ""), flush=True)
        if status != 0:
            failures.append(name)
    print(f"total: {len(names)} targets, wall {time.monotonic() - start:.0f} s, "
          f"cpu {total_cpu:.0f} s ({total_cpu / 3600:.3f} CPU-hours)")
    if failures:
        print(f"findings in: {', '.join(failures)} (logs and inputs in {args.artifacts}/)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
