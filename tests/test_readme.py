"""The README's Python examples run as written: the hzfast ones without pyspark, the
Spark ones on a local SparkSession (marked ``spark``)."""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(spark: bool) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    return [b for b in blocks if ("spark_integration" in b) == spark]


def test_readme_hzfast_blocks_run():
    blocks = _blocks(spark=False)
    assert blocks, "README has no hzfast example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


@pytest.mark.spark
def test_readme_spark_blocks_run():
    pytest.importorskip("pyspark")
    blocks = _blocks(spark=True)
    assert blocks, "README has no Spark example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
