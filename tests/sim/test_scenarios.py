"""Every scenario case of tests/sim/scenarios/ matches its stored transcript, and every
protocol mark is reached by some case (docs/scenarios.md; rules of docs/design.md §7).

Regenerate the transcripts after an intended protocol change, then review the diff::

    python -m hzfast.sim.scenario tests/sim/scenarios/*.txt --rewrite
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from hzfast.protocol import MARKS
from hzfast.sim.scenario import Case, Outcome, load, main, parse, run_case, run_file

SCENARIOS = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.txt"))
CASES = [(f, c) for f in FILES for c in load(f)]


@cache
def _outcome(path: Path, name: str) -> Outcome:
    case = next(c for c in load(path) if c.name == name)
    return run_case(case)


def test_the_scenarios_are_there() -> None:
    names = {f.name: len(load(f)) for f in FILES}
    assert names["migration_commit.txt"] == 12
    assert names["migration_invocations_safety.txt"] == 8
    assert names["migration_commit_service.txt"] == 14
    for _, c in CASES:
        assert c.comments, f"{c.name}: say what Hazelcast checks and what the case asserts"
        assert c.expected, f"{c.name}: no stored transcript (run with --rewrite)"


@pytest.mark.parametrize("path,case", CASES, ids=[f"{f.stem}::{c.name}" for f, c in CASES])
def test_case(path: Path, case: Case) -> None:
    o = _outcome(path, case.name)
    assert o.ok, f"{path.name}::{case.name} differs from its transcript:\n{o.diff()}"


def test_every_mark_is_hit() -> None:
    hits: dict[str, int] = dict.fromkeys(MARKS, 0)
    for f, c in CASES:
        for name, n in _outcome(f, c.name).marks.items():
            hits[name] += n
    missing = [m for m, n in hits.items() if n == 0]
    assert missing == [], f"marks no scenario reaches: {missing}"


def test_transcripts_are_deterministic() -> None:
    f, c = next((f, c) for f, c in CASES if c.name == "agree-when-master-changes-during-migration")
    assert run_case(c).actual == run_case(c).actual == _outcome(f, c.name).actual


def test_a_wrong_transcript_fails_and_rewrite_fixes_it(tmp_path: Path) -> None:
    src = (SCENARIOS / "migration_commit.txt").read_text()
    block = src.split("\ncase ")[1]
    text = "case " + block.replace("VIOLATIONS none", "VIOLATIONS some")
    p = tmp_path / "one.txt"
    p.write_text(text)
    assert [o.ok for o in run_file(p)] == [False]
    assert main([str(p)]) == 1
    assert [o.ok for o in run_file(p, rewrite=True)] == [False]
    assert [o.ok for o in run_file(p)] == [True]
    assert "VIOLATIONS none" in p.read_text()
    assert main([str(p)]) == 0


@pytest.mark.parametrize("text,message", [
    ("members 2\nrun\n----\n", "before the first 'case NAME'"),
    ("case a\nmembers two\nrun\n----\n", "members must be an int"),
    ("case a\nmembers 2\n----\n", "no 'run' before"),
    ("case a\nrun\n----\ncase a\nrun\n----\n", "defined twice"),
    ("case a\nexplode m1\nrun\n----\n", "unknown command 'explode'"),
    ("case a\ndrop Gossip\nrun\n----\n", "takes a message type"),
    ("case a\ndrop MigrationCommit when=3\nrun\n----\n", "unknown option 'when=3'"),
    ("case a\ndelay MigrationCommit\nrun\n----\n", "delay needs by=TICKS"),
    ("case a\ncrash-at master no_such_mark\nrun\n----\n", "unknown mark"),
    ("case a\ncrash-at janitor master_committed\nrun\n----\n", "crash-at role"),
    ("case a\ntable p0 m1 m1\nrun\n----\n", "appears twice"),
    ("case a\ntable p0 - m1\nrun\n----\n", "owner (slot 0) must be a member"),
    ("case a\ncrash 2 at=5\nrun\n----\n", "a member is written mN"),
])
def test_bad_files_name_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"x\.txt:\d+: .*" + message.replace("(", r"\(")
                       .replace(")", r"\)").replace("'", "'")):
        parse(text, "x.txt")


def test_bad_tables_are_refused_at_run_time() -> None:
    c = parse("case a\nmembers 2\npartitions 2\ntable p0 m1 m9\ntable p1 m1\nrun\n----\n")[0]
    with pytest.raises(ValueError, match="names m9, not an initial data member"):
        run_case(c)
    c = parse("case a\nmembers 2\npartitions 2\ntable p0 m1 m2\nrun\n----\n")[0]
    with pytest.raises(ValueError, match=r"no row for partitions \[1\]"):
        run_case(c)


# Two deviations from docs/design.md §7 these scenarios found (both fixed in the node):
# each test asserts what §7 asks.
def test_a_lost_publish_ack_does_not_block_eviction_forever() -> None:
    c = parse("case lost-ack\nmembers 2\ndrop PublishCompletedAck from=m2 nth=1\n"
              "join at=100\nrun\n----\n")[0]
    o = run_case(c)
    assert o.result.converged and not o.result.violations
    assert any(line.startswith("COMPLETED m1=0 ") for line in o.actual), "\n".join(o.actual)


def test_a_passive_source_finalizes_a_failed_migration() -> None:
    f = SCENARIOS / "migration_commit_service.txt"
    o = _outcome(f, "backup-move-rollback")
    assert any(line.startswith("m3[source] source_finalized x1.1 p3 MOVE") and
               line.endswith("FAILED") for line in o.actual), "\n".join(o.actual)
