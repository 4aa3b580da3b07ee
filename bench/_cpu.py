"""CPU seconds of a process tree, for the Spark benchmarks (the JVM and its Python workers
run outside the benchmarking process)."""
from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def tree_cpu(waited: bool = False) -> float:
    """CPU seconds (user + sys) used so far by this process and its living descendants;
    with ``waited``, also those of exited descendants their parents waited for (cutime +
    cstime). A process that exits unwaited-for (a Python worker of a daemon Spark stopped)
    takes its seconds away: measure over spans in which the tree lives. Linux only; 0.0
    elsewhere."""
    if not os.path.isdir("/proc/self"):
        return 0.0
    last = 15 if waited else 13              # stat fields 14-17: utime stime cutime cstime
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = sum(int(x) for x in fields[11:last])
    children: dict[int, list[int]] = {}
    for pid, pp in parent.items():
        children.setdefault(pp, []).append(pid)
    total, stack = 0, [os.getpid()]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total / _TICK
