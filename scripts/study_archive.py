#!/usr/bin/env python3
"""heads_compare's finished runs, kept in the repository between sittings.

A long study (the full preset: about 2,500 runs, hours on 2 cores) rarely finishes on one
machine. Its cache (one JSON file per run, OUT/cache/<key>.json) is the only state it has:
this script packs the runs that are not yet archived into a new compressed part of an
archive folder (committed with the code), and unpacks every archived run back into a cache
folder where it is missing, so that `heads_compare` (and scripts/full_study.sh) continues on
another machine where the last one stopped.

What a part keeps of each run, and what it leaves out (to keep the folder small, about
10 kB per run):
  * every value the report reads, numbers rounded to 7 significant digits (the engine trains
    in float32, whose precision that is; the report prints at most 4);
  * attention patterns (`patterns`, `sample_tokens`) only for seed 0, the only seed whose
    patterns the report plots; the interactive view's patterns (`view`) never (the full
    preset records none; a run of a --view-seeds seed that lacks them is trained again by
    heads_compare, or left out of view.html under --cached-only);
  * no checksum: the rounding changes the text it covered. heads_compare checks the values'
    ranges and says how many files it read without a checksum.

    study_archive.py pack CACHE_DIR ARCHIVE_DIR     # new runs -> ARCHIVE_DIR/part-NNN.jsonl.xz
    study_archive.py unpack ARCHIVE_DIR CACHE_DIR   # archived runs missing from CACHE_DIR
    study_archive.py list ARCHIVE_DIR               # runs per part, task and cache version

Each part is a list of lines {"key": <cache key>, "run": <the run's JSON>} in key order,
compressed with xz; parts are never rewritten, so a commit adds one file. A run trained
again to record more (heads_compare's circuit stage adds a `circuit` to runs cached before
it existed) goes into a later part too: where parts hold one key twice, the later one is
the run, and unpack replaces a cached run without a circuit by an archived one with it.
"""
import glob
import json
import lzma
import os
import re
import sys
import tempfile

USAGE = """usage:
    study_archive.py pack CACHE_DIR ARCHIVE_DIR
    study_archive.py unpack ARCHIVE_DIR CACHE_DIR
    study_archive.py list ARCHIVE_DIR"""
DIGITS = 7
PATTERN_SEED = 0
LEFT_OUT = ("checksum", "view")
KEY = re.compile(r"^[0-9a-f]{16}$")
PART = re.compile(r"^part-(\d{3})\.jsonl\.xz$")


class ArchiveError(Exception):
    """A folder or file this script cannot use, with what to do about it."""


def rounded(value):
    """`value` with every float rounded to DIGITS significant digits (ints, strings, None kept)."""
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def archived_form(run):
    """What a part stores of one cache file's parsed JSON `run` (see the module's docstring)."""
    config = json.loads(run["config"])
    kept = {k: v for k, v in run.items() if k not in LEFT_OUT}
    if config.get("seed") != PATTERN_SEED:
        kept["patterns"], kept["sample_tokens"] = [], []
    return rounded(kept)


def parts_of(archive_dir):
    """The archive's part files in order (an absent folder has none)."""
    if not os.path.isdir(archive_dir):
        return []
    names = sorted(n for n in os.listdir(archive_dir) if PART.match(n))
    return [os.path.join(archive_dir, n) for n in names]


def read_part(path):
    """The (key, run) pairs of one part."""
    try:
        with lzma.open(path, "rt", encoding="utf-8") as f:
            entries = [json.loads(line) for line in f if line.strip()]
        return [(e["key"], e["run"]) for e in entries]
    except (OSError, lzma.LZMAError, ValueError, KeyError, TypeError) as e:
        raise ArchiveError(f"study_archive: part {path} cannot be read ({e}); restore it from git "
                           f"(git checkout -- {path})") from e


def cache_files(cache_dir):
    """key -> path of every run file in `cache_dir` (temporary and claim files are skipped)."""
    if not os.path.isdir(cache_dir):
        raise ArchiveError(f"study_archive: no cache folder {cache_dir}; give the folder "
                           "heads_compare writes its runs to (OUT/cache)")
    files = {}
    for path in glob.glob(os.path.join(cache_dir, "*.json")):
        key = os.path.basename(path)[: -len(".json")]
        if KEY.match(key):
            files[key] = path
    return files


def latest_runs(parts):
    """key -> the run the last part holding it keeps."""
    latest = {}
    for part in parts:
        for key, run in read_part(part):
            latest[key] = run
    return latest


def pack(cache_dir, archive_dir):
    """Writes the runs of `cache_dir` that no part holds yet, or holds in another form (a
    run trained again), as a new part; returns its path and how many runs it holds (None
    when every run is archived already)."""
    files = cache_files(cache_dir)
    parts = parts_of(archive_dir)
    archived = latest_runs(parts)
    lines = []
    for key in sorted(files):
        try:
            with open(files[key], encoding="utf-8") as f:
                run = json.load(f)
        except (OSError, ValueError) as e:
            print(f"study_archive: {files[key]} left out: it cannot be read as a run ({e})",
                  file=sys.stderr)
            continue
        form = archived_form(run)
        if archived.get(key) == form:
            continue
        lines.append(json.dumps({"key": key, "run": form}, sort_keys=True,
                                separators=(",", ":")))
    if not lines:
        return None
    os.makedirs(archive_dir, exist_ok=True)
    number = 1 + max((int(PART.match(os.path.basename(p)).group(1)) for p in parts), default=0)
    path = os.path.join(archive_dir, f"part-{number:03d}.jsonl.xz")
    data = lzma.compress(("\n".join(lines) + "\n").encode(), preset=9 | lzma.PRESET_EXTREME)
    write_atomically(path, data)
    return path, len(lines)


def write_atomically(path, data):
    """`data` into `path` through a temporary file in the same folder (no half-written file)."""
    folder = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".study_archive-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the file from other users
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise


def lacks_circuit(path):
    """Whether the cache file at `path` holds a run without a recorded circuit (a file that
    does not read as a run is not one: heads_compare names it and trains the run again)."""
    try:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        return isinstance(run, dict) and "config" in run and "circuit" not in run
    except (OSError, ValueError):
        return False


def unpack(archive_dir, cache_dir):
    """Writes every archived run missing from `cache_dir`, and every archived run with a
    circuit whose cached copy has none; returns (written, already there). Any other run
    already in the cache is left as it is (it is the exact one)."""
    os.makedirs(cache_dir, exist_ok=True)
    present = cache_files(cache_dir)
    written = kept = 0
    parts = parts_of(archive_dir)
    for part in parts:
        for key, _ in read_part(part):
            if not KEY.match(key):
                raise ArchiveError(f"study_archive: part {part} holds a bad key {key!r}")
    for key, run in sorted(latest_runs(parts).items()):
        if key in present and ("circuit" not in run or not lacks_circuit(present[key])):
            kept += 1
            continue
        text = json.dumps(run, sort_keys=True, separators=(",", ":")) + "\n"
        write_atomically(os.path.join(cache_dir, key + ".json"), text.encode())
        written += 1
    return written, kept


def listing(archive_dir):
    """One line per part: its runs by task and cache version."""
    lines = []
    for part in parts_of(archive_dir):
        counts = {}
        for _, run in read_part(part):
            config = json.loads(run["config"])
            name = f"{config['task']['name']} (v{config['version']})"
            counts[name] = counts.get(name, 0) + 1
        total = sum(counts.values())
        detail = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
        lines.append(f"{os.path.basename(part)}: {total} runs: {detail}")
    return lines


def main(argv):
    if len(argv) < 2 or argv[1] not in ("pack", "unpack", "list"):
        raise ArchiveError("study_archive: give a command: pack, unpack or list\n" + USAGE)
    command, paths = argv[1], argv[2:]
    if len(paths) != (1 if command == "list" else 2):
        raise ArchiveError(f"study_archive {command}: wrong number of folders\n" + USAGE)
    if command == "pack":
        made = pack(*paths)
        print(f"study_archive: {made[0]}: {made[1]} runs" if made else
              f"study_archive: every run of {paths[0]} is archived already; no new part")
    elif command == "unpack":
        written, kept = unpack(*paths)
        print(f"study_archive: {written} archived runs written to {paths[1]}, {kept} there already")
    else:
        print("\n".join(listing(paths[0])) or f"study_archive: no parts in {paths[0]}")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except ArchiveError as e:
        sys.exit(str(e))
