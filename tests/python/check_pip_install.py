"""`pip install .` into a fresh virtual environment (made with --system-site-packages for
Debian's NumPy), then a patching grid computed from it outside the checkout with the
library it installed (not the build tree's), then `pip uninstall` leaves nothing behind.

    check_pip_install.py SOURCE_DIR BUILD_DIR

BUILD_DIR is an already built tree (the suite's): setup.py builds headgrad_python there,
which is up to date, so the test costs the install, not a build."""
import glob
import os
import subprocess
import sys
import sysconfig
import tempfile

EXAMPLE = r"""
import headgrad as hg
task = hg.train.make_task("associative_recall", seed=0, length=4)
model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=32, nhead=2,
                  num_layers=2, generator=hg.Generator(0))
opt = hg.optim.AdamW(model.parameters(), lr=3e-3)
hg.train.Trainer(model, task, opt, steps=30, batch_size=32, eval_every=0, progress=False).fit()
prompts = hg.inspect.corrupt_recall_query(task, task.batch("validation", 0, 32))
metric = hg.inspect.LogitDifference(prompts["position"], prompts["answer"], prompts["wrong"])
grid = hg.inspect.Patching(model.eval(), prompts["clean"], prompts["corrupted"], metric).by_head("z")
assert grid.values.shape == (2, 2), grid.values.shape
libraries = {line.split()[-1] for line in open("/proc/self/maps") if "libheadgrad.so" in line}
print("module", hg.__file__)
print("library", *sorted(libraries))
"""


def run(command, **kwargs):
    """Runs `command`; a failure raises with the command's captured output in the message."""
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, text=True, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{command[:3]} exited {done.returncode}\n"
                           f"stdout:\n{done.stdout or ''}\nstderr:\n{done.stderr or ''}")
    return done


def see_parent_packages(venv):
    """Lets the venv import what this interpreter imports (NumPy, the one dependency, is
    installed with --no-deps off no index): --system-site-packages alone reaches only the
    base interpreter's packages, not those of a venv this script runs in (a GPU machine's
    /opt/torch/.venv)."""
    site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    with open(os.path.join(site, "_parent_packages.pth"), "w") as pth:
        pth.write("\n".join(paths) + "\n")


def main(source, build):
    with tempfile.TemporaryDirectory() as tmp:
        venv = os.path.join(tmp, "venv")
        run([sys.executable, "-m", "venv", "--system-site-packages", venv])
        python = os.path.join(venv, "bin", "python")
        see_parent_packages(venv)
        env = dict(os.environ, HEADGRAD_WHEEL_BUILD_DIR=build, PIP_NO_INDEX="1")
        env.pop("PYTHONPATH", None)
        run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", source], env=env)
        out = run([python, "-c", EXAMPLE], cwd=tmp, env=env, capture_output=True).stdout
        print(out)
        site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]
        module = [l.split()[1] for l in out.splitlines() if l.startswith("module")][0]
        library = [l.split()[1:] for l in out.splitlines() if l.startswith("library")][0]
        assert module.startswith(site), f"imported {module}, not the venv's package"
        assert library and all(p.startswith(site) for p in library), f"loaded {library}"
        for typed in ("py.typed", "_headgrad/__init__.pyi", "_headgrad/nn.pyi"):
            assert os.path.exists(os.path.join(site, "headgrad", typed)), f"the wheel lacks {typed}"
        run([python, "-m", "pip", "uninstall", "-y", "headgrad"], env=env)
        left = glob.glob(os.path.join(site, "headgrad*"))
        assert not left, f"pip uninstall left {left}"
        probe = "import headgrad, sys; sys.exit(0 if headgrad.__file__.startswith(sys.argv[1]) else 3)"
        again = subprocess.run([python, "-c", probe, site], cwd=tmp, env=env)
        assert again.returncode != 0, "headgrad still imports from the venv after uninstall"
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
