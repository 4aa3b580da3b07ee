"""Fuzz target: Ignite update counters and the rebalance decision (docs/design.md §9.3-§9.5).

Random operation sequences on ``hzfast.ignite.UpdateCounter`` / ``VolatileUpdateCounter``
and on ``UpdateCounters`` (scalar calls, ``update_batch``, ``reserve_batch``,
``update_absolute_batch``, ``to_bytes``/``from_bytes``/``init`` with fuzzed gap bytes,
``finalize``), each step mirrored on ``hzfast.reference.counters``. Outcomes must agree
(value, or ``UpdateCounterError``); ValueError/TypeError are allowed where the reference
would leave Java's long range or the argument is out of the documented domain; counters
must never leave int64; a rejected batch changes nothing. ``rebalance_plan`` on node x
partition matrices in every dressing equals ``reference.counters.rebalance_decision`` per
partition, or refuses invalid states, counters, history, sizes or reset masks.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import atheris
import numpy as np

from fuzz._common import (
    PLAIN_DRESSINGS,
    Finding,
    checked,
    dress_ints,
    edgy_int,
    rejected,
)
from hzfast import ignite
from hzfast.reference import counters as ref

I64 = (-(2**63), 2**63 - 1)


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except (ValueError, TypeError) as exc:
        return "reject", exc
    except (ignite.UpdateCounterError, ref.UpdateCounterError) as exc:
        return "counter", exc


def in_long(c: Any) -> bool:
    vals = [c._lwm, getattr(c, "_hwm", c._lwm), c._initial]
    for item in getattr(c, "_items", {}).values():
        vals += [item[0], item[1], item[0] + item[1]]
    return all(I64[0] <= v <= I64[1] for v in vals)


def state(c: Any) -> tuple[Any, ...]:
    return (c.get(), c.reserved(), list(c.gaps) if hasattr(c, "gaps") else None)


def value(fdp: Any) -> int:
    return edgy_int(fdp, 0, 40) if fdp.ConsumeIntInRange(0, 9) else edgy_int(fdp, -3, 3)


def gap_bytes(fdp: Any) -> bytes | None:
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == 0:
        return None
    if mode == 1:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40))
    count = fdp.ConsumeIntInRange(0, 3)
    words = [min(max(edgy_int(fdp, 0, 50), I64[0]), I64[1]) for _ in range(2 * count)]
    body = b"".join(w.to_bytes(8, "big", signed=True) for w in words)
    header = count if mode == 2 else fdp.ConsumeIntInRange(0, 5)
    return bytes([1]) + header.to_bytes(4, "big") + body


def fuzz_scalar(fdp: Any) -> None:
    volatile = fdp.ConsumeBool()
    initial = edgy_int(fdp, 0, 100)
    gaps = None if volatile else gap_bytes(fdp)
    if volatile:
        h = outcome(ignite.VolatileUpdateCounter, initial)
        r = outcome(ref.VolatileUpdateCounter, initial)
    else:
        h = outcome(ignite.UpdateCounter, initial, gaps)
        r = outcome(ref.UpdateCounter, initial, gaps)
    # hostile gap blobs (repeated, negative or overlapping items) have no meaning in
    # Ignite: refusing them is stricter than Java, and fine
    stricter = h[0] == "reject" and r[0] == "ok" and (gaps is not None or not in_long(r[1]))
    if h[0] != r[0] and not stricter:
        raise Finding(f"UpdateCounter({initial}, {gaps!r}): hzfast {h}, reference {r}")
    if h[0] != "ok":
        return
    hc, rc = h[1], r[1]
    if state(hc) != state(rc):
        raise Finding(f"UpdateCounter({initial}, {gaps!r}): {state(hc)} != {state(rc)}")
    log = [f"UpdateCounter({initial}, {gaps!r})"]
    for _ in range(fdp.ConsumeIntInRange(1, 12)):
        op = fdp.ConsumeIntInRange(0, 7)
        a, b = value(fdp), value(fdp)
        method, args = (("next", ()), ("next", (a,)), ("reserve", (a,)), ("update", (a, b)),
                        ("update_abs", (a,)), ("update_initial", (a, b)), ("finalize", ()),
                        ("to_bytes", ()))[op]
        log.append(f"{method}{args}")
        saved = copy.deepcopy(rc)
        hr = outcome(getattr(hc, method), *args)
        rr = outcome(getattr(rc, method), *args)
        if rr[0] == "ok" and not in_long(rc):
            if hr[0] == "ok" and state(hc) != state(rc):
                raise Finding(f"{' . '.join(log)}: left Java's long range: {state(hc)}")
            return   # hzfast refused an overflow (or matched it); the models part here
        if hr[0] != rr[0] or (hr[0] == "ok" and hr[1] != rr[1]):
            raise Finding(f"{' . '.join(log)}: hzfast {hr}, reference {rr}")
        if hr[0] == "reject":
            rc = saved
        if state(hc) != state(rc):
            raise Finding(f"{' . '.join(log)}: state {state(hc)} != reference {state(rc)}")


def fuzz_table(fdp: Any) -> None:
    P = fdp.ConsumeIntInRange(1, 4)
    tracking = fdp.ConsumeBool()
    table = ignite.UpdateCounters(P, tracking=tracking)
    make = ref.UpdateCounter if tracking else ref.VolatileUpdateCounter
    refs = [make() for _ in range(P)]
    log: list[str] = [f"UpdateCounters({P}, tracking={tracking})"]

    def compare() -> None:
        for p in range(P):
            want = (refs[p].get(), refs[p].reserved())
            got = (int(table.lwm[p]), int(table.hwm[p]))
            if got != want:
                raise Finding(f"{' . '.join(log)}: partition {p} (lwm, hwm) {got} != {want}")
            if tracking and table.gaps(p) != refs[p].gaps:
                raise Finding(f"{' . '.join(log)}: partition {p} gaps {table.gaps(p)} != "
                              f"{refs[p].gaps}")

    for _ in range(fdp.ConsumeIntInRange(1, 8)):
        op = fdp.ConsumeIntInRange(0, 5)
        if op <= 2:   # batches
            m = fdp.ConsumeIntInRange(0, 5)
            parts = [edgy_int(fdp, 0, P - 1) for _ in range(m)]
            xs = [value(fdp) for _ in range(m)]
            ys = [value(fdp) for _ in range(m)]
            p_arg, p_log, p_how = dress_ints(fdp, parts, (m,))
            x_arg, x_log, x_how = dress_ints(fdp, xs, (m,))
            plain = p_how in PLAIN_DRESSINGS and x_how in PLAIN_DRESSINGS
            name = ("update_batch", "reserve_batch", "update_absolute_batch")[op]
            log.append(f"{name}({parts}, {xs}, {ys})")
            args = (p_arg, x_arg, ys) if op == 0 else (p_arg, x_arg)
            saved = copy.deepcopy(refs)
            try:
                got = checked(getattr(table, name), *args)
            except ignite.UpdateCounterError:
                return   # > MAX_MISSED_UPDATES gaps cannot happen with these sizes
            valid = (p_log is not None and x_log is not None
                     and all(0 <= p < P for p in p_log) and all(x >= 0 for x in x_log)
                     and (op != 0 or all(y >= 0 for y in ys))
                     and all(I64[0] <= v <= I64[1] for v in x_log))
            want: list[Any] = []
            if valid:
                for k in range(m):
                    p, x = p_log[k], x_log[k]
                    c = refs[p]
                    if op == 0 and x + ys[k] > I64[1]:
                        valid = False
                        break
                    r = outcome(c.update, x, ys[k]) if op == 0 else \
                        outcome(c.reserve, x) if op == 1 else outcome(c.update_abs, x)
                    if r[0] == "counter":
                        return   # a stopped batch: covered by the scalar model
                    want.append(r[1] if op != 2 else None)
                    if r[0] == "reject" or not in_long(c):
                        valid = False
                        break
            if not valid:
                refs = saved
                if not rejected(got):
                    raise Finding(f"{' . '.join(log)}: accepted an invalid batch: {got!r}")
            elif rejected(got):
                refs = saved
                if plain:
                    raise Finding(f"{' . '.join(log)}: rejected a valid batch: {got!r}")
            elif op != 2 and got.tolist() != want:
                raise Finding(f"{' . '.join(log)}: {got.tolist()} != reference {want}")
            compare()
        elif op == 3 and tracking:   # from_bytes / init with fuzzed gaps
            p = edgy_int(fdp, 0, P - 1)
            raw = gap_bytes(fdp)
            initial = edgy_int(fdp, 0, 50)
            log.append(f"init({p}, {initial}, {raw!r})")
            saved = copy.deepcopy(refs)
            h = outcome(table.init, p, initial, raw)
            r = outcome(ref.UpdateCounter, initial, raw) if 0 <= p < P else ("reject", None)
            if r[0] == "ok":
                # Ignite's init() sets the counters and the gap queue but not the
                # first-update flag: the fresh model inherits it from the partition's
                r[1]._first = refs[p]._first
                refs[p] = r[1]
            if r[0] == "ok" and h[0] == "reject":
                # hostile gap blobs (negative, overlapping or repeated items) have no
                # meaning in Ignite: refusing them is stricter than Java, and fine
                r = h
            if h[0] != r[0]:
                raise Finding(f"{' . '.join(log)}: hzfast {h}, reference {r}")
            if h[0] != "ok":
                refs = saved
            compare()
            if h[0] == "ok":
                got_b = table.to_bytes(p)
                if got_b != refs[p].to_bytes():
                    raise Finding(f"{' . '.join(log)}: to_bytes {got_b!r} != "
                                  f"{refs[p].to_bytes()!r}")
        elif op == 4 and tracking:
            log.append("finalize()")
            saved = copy.deepcopy(refs)
            h = outcome(table.finalize)
            want_f: dict[int, list[tuple[int, int]]] = {}
            overflow = False
            for p in range(P):
                r = outcome(refs[p].finalize)
                flat = r[1] if r[0] == "ok" else []
                if r[0] != "ok" or not all(I64[0] <= v <= I64[1] for v in flat) \
                        or not in_long(refs[p]):
                    overflow = True   # a range starting past int64: must be refused
                    break
                if flat:
                    want_f[p] = list(zip(flat[0::2], flat[1::2]))
            if overflow or h[0] != "ok":
                if not (overflow and h[0] == "reject"):
                    raise Finding(f"{' . '.join(log)}: finalize: hzfast {h}, reference "
                                  f"{'leaves int64' if overflow else want_f}")
                refs = saved   # refused: nothing changed
            elif h[1] != want_f:
                raise Finding(f"{' . '.join(log)}: finalize {h[1]} != {want_f}")
            compare()
        else:   # scalar update on one partition
            p, a, b = edgy_int(fdp, 0, P - 1), value(fdp), value(fdp)
            log.append(f"update({p}, {a}, {b})")
            saved = copy.deepcopy(refs)
            h = outcome(table.update, p, a, b)
            if not 0 <= p < P or a < 0 or b < 0 or a + b > I64[1]:
                if h[0] != "reject":
                    raise Finding(f"{' . '.join(log)}: accepted {h}")
                continue
            r = outcome(refs[p].update, a, b)
            if h[0] != r[0] or h[1] != r[1]:
                raise Finding(f"{' . '.join(log)}: hzfast {h}, reference {r}")
            if h[0] == "reject":
                refs = saved
            compare()
    _ = np  # numpy dressings come from dress_ints


def fuzz_rebalance(fdp: Any) -> None:
    """``rebalance_plan`` on node x partition matrices, valid or not (docs/design.md §9.5)."""
    N, P = fdp.ConsumeIntInRange(1, 4), fdp.ConsumeIntInRange(1, 4)
    hostile = fdp.ConsumeIntInRange(0, 4) == 0

    def matrix(lo: int, hi: int, bad: list[int]) -> list[list[int]]:
        m = [[fdp.ConsumeIntInRange(lo, hi) for _ in range(P)] for _ in range(N)]
        if hostile and fdp.ConsumeBool():
            m[fdp.ConsumeIntInRange(0, N - 1)][fdp.ConsumeIntInRange(0, P - 1)] = \
                int(fdp.PickValueInList(bad))
        return m

    st = matrix(0, 4, [5, -1, 127, 2**31])
    cn = matrix(0, 12, [-1, 2**63 - 1, 2**63])
    hist = matrix(-1, 12, [-2, 2**63]) if fdp.ConsumeBool() else None
    sz = matrix(0, 14, [-1, 2**63]) if fdp.ConsumeBool() else None
    threshold = fdp.PickValueInList([0, 5, 500, -1, 2**63])
    prefer = fdp.ConsumeBool()
    reset: Any = fdp.ConsumeBool() if fdp.ConsumeBool() else \
        [fdp.ConsumeBool() for _ in range(N + (fdp.ConsumeIntInRange(-1, 1) if hostile else 0))]
    dressed = [dress_ints(fdp, [v for row in m for v in row], (N, P)) if m is not None
               else (None, None, "none") for m in (st, cn, hist, sz)]
    args = [d[0] for d in dressed]
    got = checked(ignite.rebalance_plan, args[0], args[1], history=args[2], sizes=args[3],
                  threshold=threshold, prefer_history=prefer, reset=reset)
    what = f"rebalance_plan({st}, {cn}, history={hist}, sizes={sz}, threshold={threshold}, " \
           f"prefer={prefer}, reset={reset})"
    logical = [None if d[1] is None and m is not None else
               (None if d[1] is None else [d[1][i * P:(i + 1) * P] for i in range(N)])
               for d, m in zip(dressed, (st, cn, hist, sz))]
    st_l, cn_l, hist_l, sz_l = logical
    valid = (st_l is not None and cn_l is not None
             and (hist is None or hist_l is not None) and (sz is None or sz_l is not None)
             and all(0 <= v <= 4 for r in st_l for v in r)
             and all(0 <= v <= I64[1] for r in cn_l for v in r)
             and (hist_l is None or all(-1 <= v <= I64[1] for r in hist_l for v in r))
             and (sz_l is None or all(0 <= v <= I64[1] for r in sz_l for v in r))
             and I64[0] <= threshold <= I64[1]   # (a negative one: every copy reserves)
             and (isinstance(reset, bool) or len(reset) == N))
    if not valid:
        if not rejected(got):
            raise Finding(f"{what}: accepted an invalid input")
        return
    if rejected(got):
        if all(d[2] in PLAIN_DRESSINGS or d[2] == "none" for d in dressed):
            raise Finding(f"{what}: rejected a valid input: {got!r}")
        return
    for p in range(P):
        col = [row[p] for row in st_l]
        want = ref.rebalance_decision(
            p, col, [row[p] for row in cn_l],
            None if hist_l is None else [row[p] for row in hist_l],
            None if sz_l is None else [row[p] for row in sz_l], threshold, prefer, reset)
        owners = [i for i in range(N) if got.max_owner[i, p]]
        have = (int(got.max_counter[p]), owners, got.rebalance[:, p].tolist(),
                got.supplier[:, p].tolist(), got.from_counter[:, p].tolist())
        expect = (want["max"], want["max_owners"] if want["max"] >= 0 else [], want["kind"],
                  want["supplier"], want["from_counter"])
        if have != expect:
            raise Finding(f"{what}: partition {p}: {have} != reference {expect}")


PIECES = (fuzz_scalar, fuzz_table, fuzz_rebalance)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    PIECES[fdp.ConsumeIntInRange(0, len(PIECES) - 1)](fdp)
