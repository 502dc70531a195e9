"""`pip install .`: builds headgrad's Python module with the project's own CMake build and
packs it, with libheadgrad and its run-time backends, into the wheel's headgrad/ folder.

    pip install --no-build-isolation .        # no network: Debian's setuptools and wheel

The build tree is build/wheel (kept, so a second install rebuilds only what changed), or
HEADGRAD_WHEEL_BUILD_DIR: an already configured tree (build/release) is built as it is, not
reconfigured. The extension finds libheadgrad beside itself ($ORIGIN comes first in its
run path), so the installed package needs no build tree and no LD_LIBRARY_PATH.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self):
        super().__init__("headgrad._headgrad", sources=[])


def run(command):
    """Runs a program from an argument vector (never a shell), failing loudly."""
    print("headgrad:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(os.environ.get("HEADGRAD_WHEEL_BUILD_DIR", ROOT / "build" / "wheel"))
        if not (build / "CMakeCache.txt").exists():
            run(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython_EXECUTABLE={sys.executable}", "-DHEADGRAD_BUILD_TESTS=OFF",
                 "-DHEADGRAD_BUILD_BENCH=OFF", "-DHEADGRAD_BUILD_TOOLS=OFF"])
        targets = ["headgrad_python"]
        available = subprocess.run(["cmake", "--build", str(build), "--target", "help"],
                                   check=True, capture_output=True, text=True).stdout
        targets += [t for t in ("headgrad_study_python", "headgrad_cuda", "headgrad_mpi")
                    if f" {t}" in available]
        run(["cmake", "--build", str(build), "--target", *targets, "-j", str(os.cpu_count() or 1)])
        package = Path(self.get_ext_fullpath(ext.name)).parent
        package.mkdir(parents=True, exist_ok=True)
        built = build / "python" / "headgrad"
        for module in [*built.glob("_headgrad*.so"), *built.glob("_study*.so")]:
            shutil.copy2(module, package / module.name)
        # The library under its soname (what the extension asks for) and the backends it
        # loads from its own folder when they are used.
        libs = build / "lib"
        soname = os.readlink(libs / "libheadgrad.so")  # libheadgrad.so.0.1
        for name in [soname, "libheadgrad_cuda.so", "libheadgrad_mpi.so"]:
            if (libs / name).exists():
                shutil.copy2(libs / name, package / name)


setup(
    packages=["headgrad", "headgrad.nn"],
    package_dir={"": "python"},
    # The compiled module's type stubs and the PEP 561 marker (editors, type checkers).
    package_data={"headgrad": ["py.typed", "_headgrad/*.pyi"]},
    ext_modules=[CMakeExtension()],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
