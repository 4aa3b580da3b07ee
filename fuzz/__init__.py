"""Coverage-guided fuzz targets for hzfast (atheris), their seed corpus and runner.

Each module under :mod:`fuzz.targets` exposes ``test_one_input(data: bytes)``: it turns
the fuzzer's bytes into a structured input with ``atheris.FuzzedDataProvider``, calls one
group of public entry points and asserts hzfast's input contract (docs/fuzzing.md):

* the call returns a result equal to the pure-Python reference in ``hzfast.reference``
  (where one exists; otherwise the documented invariants), or raises ``ValueError`` /
  ``TypeError``;
* the caller's inputs are unchanged afterwards (contents, shape and writeability);
* any other exception, a crash, a hang or runaway memory is a finding.

Run them with ``python -m fuzz.run`` (see ``python -m fuzz.run --help``). The same
functions run over the committed seed corpus as ordinary tests
(``tests/test_fuzz_targets.py``).
"""
