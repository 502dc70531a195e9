"""The documentation's Python blocks run: every ```python block of docs/python.md and
README.md, each in a fresh interpreter (this one) in a scratch folder, as a reader would
paste it. A block that raises fails its test, named by file and block number."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["docs/python.md", "README.md"]


def blocks():
    for doc in DOCS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        for number, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S), start=1):
            yield pytest.param(block, id="%s-%d" % (doc.replace("/", "_"), number))


@pytest.mark.parametrize("source", blocks())
def test_block_runs(source, work_dir):
    result = subprocess.run([sys.executable, "-c", source], cwd=work_dir, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, "the block failed:\n%s\n%s" % (source, result.stderr[-3000:])
