"""Executes a notebook headless for CTest, as a reader would run it top to bottom, with the
kernel on this interpreter, in a scratch folder (the notebook writes its runs there).
Exit 77 (CTest's skip) without nbconvert / ipykernel; any cell that raises fails the test,
naming the cell."""
import os
import sys

try:
    import nbformat
    from nbconvert.preprocessors import CellExecutionError, ExecutePreprocessor
    import ipykernel  # noqa: F401
except ImportError as e:
    print("SKIPPED: %s (apt-get install python3-nbconvert python3-ipykernel)" % e)
    sys.exit(77)

notebook_path, work_dir = sys.argv[1], sys.argv[2]
os.makedirs(work_dir, exist_ok=True)
with open(notebook_path, encoding="utf-8") as f:
    notebook = nbformat.read(f, as_version=4)
# The kernel runs this interpreter (it has headgrad on PYTHONPATH and Debian's NumPy), never
# whatever python3 comes first on PATH.
executor = ExecutePreprocessor(timeout=600, kernel_name="python3")
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
try:
    executor.preprocess(notebook, {"metadata": {"path": work_dir}})
except CellExecutionError as e:
    print("the notebook failed:\n%s" % e)
    sys.exit(1)
out = os.path.join(work_dir, os.path.basename(notebook_path))
with open(out, "w", encoding="utf-8") as f:
    nbformat.write(notebook, f)
print("executed %d cells; the executed notebook is %s" % (len(notebook.cells), out))
