"""Shared runner of the reproducers: call, describe the outcome, exit 1 on the bug."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or (exception type name, exception) - every exception caught."""
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - a reproducer reports whatever happens
        return type(exc).__name__, exc


def report(title: str, calls: dict[str, Callable[[], Any]],
           fixed: Callable[[str, Any], bool]) -> int:
    """Run every call; print each outcome; 0 if ``fixed(kind, value)`` holds for all."""
    bad = 0
    print(title)
    for label, fn in calls.items():
        kind, value = outcome(fn)
        ok = fixed(kind, value)
        bad += not ok
        print(f"  {'fixed' if ok else 'BUG  '} {label}: {kind}: {value!r:.200}")
    return 1 if bad else 0


def main(code: int) -> None:
    sys.exit(code)
