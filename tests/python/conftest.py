"""Shared fixtures of the Python suite: torch 1.13 (the oracle; tests that need it skip
without it) and a scratch folder."""
import os
import tempfile

import pytest


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def work_dir():
    base = os.environ.get("HEADGRAD_TEST_WORK_DIR")
    if base:
        os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(dir=base)
