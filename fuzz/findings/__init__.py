"""Minimal reproducers of what the fuzz targets found, one module per finding.

Each runs on its own (``python -m fuzz.findings.<name>``): it prints what happens and
exits 1 while the bug is there, 0 once it is fixed. The matching regression tests are in
``tests/hardening/test_fuzz_findings.py``; docs/fuzzing.md lists every finding.
"""
