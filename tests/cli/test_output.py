"""hzfast.cli._output: JSON or rich tables, chosen by --json."""
import argparse
import json

import numpy as np
import pytest
from rich.console import Console

from hzfast.cli._output import add_json_flag, emit, json_default, kv_table


def test_json_default_converts_numpy_values():
    doc = {"i": np.int32(-3), "u": np.uint64(2**64 - 1), "f": np.float32(0.5),
           "a": np.arange(4, dtype=np.int64).reshape(2, 2), "n": [np.int8(1)]}
    back = json.loads(json.dumps(doc, default=json_default))
    assert back == {"i": -3, "u": 2**64 - 1, "f": 0.5, "a": [[0, 1], [2, 3]], "n": [1]}
    assert type(back["u"]) is int and type(back["f"]) is float


def test_json_default_names_what_it_cannot_serialise():
    with pytest.raises(TypeError, match="not JSON serialisable: complex"):
        json.dumps(1j, default=json_default)


def test_emit_json_is_one_indented_document(capsys):
    def render(c, p):
        raise AssertionError("--json must not render")
    payload = {"stamp": np.int64(-5), "counts": np.array([1, 2])}
    emit(argparse.Namespace(json=True), payload, render)
    out = capsys.readouterr().out
    assert out == json.dumps({"stamp": -5, "counts": [1, 2]}, indent=2) + "\n"


def test_emit_renders_without_json(capsys):
    seen = []
    emit(argparse.Namespace(json=False), {"a": 1},
         lambda c, p: (seen.append(p), c.print("rendered")))
    assert seen == [{"a": 1}] and capsys.readouterr().out == "rendered\n"


def test_kv_table_formats_numbers_but_not_stamps_or_flags():
    c = Console(width=80, color_system=None, record=True)
    c.print(kv_table("title", [("partitions", 20_000), ("stamp", -1234567), ("stamp_hex", "ff"),
                               ("balanced", True), ("ratio", 0.25), ("n", np.int64(12345))]))
    text = c.export_text()
    assert text.splitlines()[0].strip() == "title"
    cells = {r.split("│")[1].strip(): r.split("│")[2].strip()
             for r in text.splitlines() if r.count("│") == 3}
    assert cells == {"partitions": "20,000", "stamp": "-1234567", "stamp_hex": "ff",
                     "balanced": "True", "ratio": "0.25", "n": "12,345"}


def test_add_json_flag():
    p = argparse.ArgumentParser()
    assert add_json_flag(p) is p
    assert p.parse_args(["--json"]).json is True and p.parse_args([]).json is False
