"""headgrad.study: the heads_compare study from Python.

    summary = headgrad.study.heads_compare(preset="smoke", out="runs/smoke", quiet=True)
    summary["runs"][0]

Runs heads_compare in this process with the same options as the program (its --help
lists them; here as keywords: tasks=["associative_recall"], heads=[1, 8], lrs=[1e-3],
seeds=3, steps=500, jobs=2, device="cpu", out=..., cache=..., corpus=... (char_lm's
text), long_budget=3 (fixed_width models also at 3x the steps; 0 = not), extend_lrs=True
or False (a rate past the grid's edge; None = the preset's), quiet=True,
cached_only=False), without holding the GIL, and returns summary.json as a dict. Runs
are cached under the output folder, so a second call with the same options trains
nothing. Errors (a bad option, a folder another study holds) raise headgrad.ValueError
or headgrad.Error with the program's message. Ctrl-C stops the runs between training
steps and raises KeyboardInterrupt; the runs finished before it stay cached.
"""
import json
import os

from . import _headgrad

try:  # the study's own extension, built with examples/heads_compare
    from . import _study
except ImportError:  # a build without the examples (HEADGRAD_BUILD_EXAMPLES=OFF)
    _study = None

_LIST_OPTIONS = {"tasks": "--tasks", "arms": "--arms", "heads": "--heads", "lrs": "--lrs"}
_VALUE_OPTIONS = {"seeds": "--seeds", "steps": "--steps", "jobs": "--jobs",
                  "device": "--device", "out": "--out", "cache": "--cache",
                  "corpus": "--corpus", "long_budget": "--long-budget"}
_FLAGS = {"quiet": "--quiet", "cached_only": "--cached-only"}
_SWITCHES = {"extend_lrs": ("--extend-lrs", "--no-extend-lrs")}  # True / False / None


def command_line(preset="default", **options):
    """The heads_compare arguments these keywords stand for.

    Args:
        preset (str): the program's --preset. Default "default".
        **options: the keywords of heads_compare (see the module's docstring); a list
            option also takes one value.

    Returns:
        list of str, e.g. ['--preset', 'smoke', '--heads', '1,2', '--quiet']; TypeError for
        an unknown keyword.
    """
    args = ["--preset", str(preset)]
    known = {*_LIST_OPTIONS, *_VALUE_OPTIONS, *_FLAGS, *_SWITCHES}
    unknown = sorted(set(options) - known)
    if unknown:
        known = sorted(["preset", *known])
        raise TypeError("heads_compare: unknown option(s) %s; the options are %s"
                        % (", ".join(unknown), ", ".join(known)))
    for key, flag in _LIST_OPTIONS.items():
        value = options.get(key)
        if value is None:
            continue
        if isinstance(value, (str, int, float)):
            value = [value]
        args += [flag, ",".join(repr(v) if isinstance(v, float) else str(v) for v in value)]
    for key, flag in _VALUE_OPTIONS.items():
        if options.get(key) is not None:
            args += [flag, str(options[key])]
    for key, flag in _FLAGS.items():
        if options.get(key):
            args.append(flag)
    for key, (on, off) in _SWITCHES.items():
        if options.get(key) is not None:
            args.append(on if options[key] else off)
    return args


def heads_compare(preset="default", **options):
    """Runs the heads_compare study in this process (see the module's docstring).

    Args:
        preset (str): the program's --preset ("default", "smoke", ...). Default "default".
        **options: the program's options as keywords (command_line lists them).

    Returns:
        dict: the study's summary.json, plus "report_path" (str, the absolute path of its
        report.md).
    """
    args = command_line(preset, **options)
    if _study is None:
        raise _headgrad.Error("heads_compare: this headgrad was built without the examples "
                              "(HEADGRAD_BUILD_EXAMPLES=OFF), which hold the study")
    _headgrad._forget_interrupt()
    threads = _headgrad.get_num_threads()  # the study sets 1 thread per run; restored after
    try:
        status = _study._run_command_line(args)
    finally:
        _headgrad.set_num_threads(threads)
    if status != 0:
        raise RuntimeError("heads_compare exited with status %d" % status)
    out = options.get("out") or ("runs/heads_compare" if preset == "default"
                                 else "runs/heads_compare-" + str(preset))
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    summary["report_path"] = os.path.abspath(os.path.join(out, "report.md"))
    return summary
