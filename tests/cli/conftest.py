"""Run the hzfast command line in-process: ``run_json`` parses its JSON, ``run_text`` its text."""
import json

import pytest

from hzfast.cli import main


@pytest.fixture
def run_json(capsys):
    """``run_json(*argv)``: run ``hzfast *argv`` (add ``--json``), check status 0, parse stdout."""
    def run(*argv):
        assert main(list(argv)) == 0
        return json.loads(capsys.readouterr().out)
    return run


@pytest.fixture
def run_text(capsys):
    """``run_text(*argv)``: run ``hzfast *argv``, check status 0, return the printed text."""
    def run(*argv):
        assert main(list(argv)) == 0
        return capsys.readouterr().out
    return run
