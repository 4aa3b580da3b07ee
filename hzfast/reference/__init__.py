"""Pure-Python reference implementations of every hzfast kernel (test oracles and benchmark baselines).

Slow and obviously correct; one module per area.
"""
