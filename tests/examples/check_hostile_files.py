#!/usr/bin/env python3
"""Hostile files against the programs: corrupted and foreign checkpoints, lying archives,
hostile .npy inputs, and saves killed with SIGKILL.

Each refusal case checks, end to end, what a user sees: the program exits with a non-zero
status (not a signal) within 30 seconds, its message contains the expected words, and
nothing in the run's folder changed (every file byte-identical, none added or removed).
Each acceptance case checks the program succeeds and says what it did. Files are written
with the standard library alone (no numpy). Run by CTest:
    check_hostile_files.py TRAIN_TOY MHA_PARITY CASES_DIR SCRATCH_DIR
"""
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import zipfile

from folders import dead_pid, snapshot

SMALL = ["--task", "copy", "--length", "4", "--d-model", "16", "--layers", "1", "--heads", "2",
         "--batch-size", "8", "--eval-every", "2", "--quiet"]


def is_temp_file(name):
    """An atomic write's temporary file: ".<name>.tmp.<host>.<pid>.<n>", or earlier
    versions' ".<name>.tmp-<pid>-<n>-<stamp>"."""
    return name.startswith(".") and (".tmp." in name or ".tmp-" in name)


def npy_bytes(descr, shape, data):
    """An .npy file (format 1.0) holding `data` (raw bytes) as `descr` with `shape`."""
    dims = "".join(f"{d}," if len(shape) == 1 else f"{d}, " for d in shape).rstrip(" ")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def npy_header(blob):
    """(descr, shape, offset of the data) of an .npy file written by headgrad."""
    length = struct.unpack("<H", blob[8:10])[0]
    header = eval(blob[10:10 + length].decode(), {"__builtins__": {}})  # a Python dict literal
    return header["descr"], tuple(header["shape"]), 10 + length


def read_members(path):
    with zipfile.ZipFile(path) as z:
        return [(info.filename, z.read(info.filename)) for info in z.infolist()]


def write_members(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, blob in members:
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), blob, compression)


def replace_member(path, name, make):
    """Rewrites the member `name` of the archive at `path` as make(old bytes)."""
    members = read_members(path)
    names = [n for n, _ in members]
    if name not in names:
        raise SystemExit(f"check_hostile_files: {path} has no member {name} (has {names[:8]}...)")
    write_members(path, [(n, make(b) if n == name else b) for n, b in members])


def first_member(path):
    """The first float32 member with at least one dim: a model weight."""
    for name, blob in read_members(path):
        if npy_header(blob)[0] == "<f4" and npy_header(blob)[1]:
            return name
    raise SystemExit(f"check_hostile_files: no float32 member in {path}")


def fill_data(value_bytes):
    """A member maker that keeps dtype and shape and fills the data with value_bytes."""
    def make(blob):
        descr, shape, offset = npy_header(blob)
        count = (len(blob) - offset) // len(value_bytes)
        return npy_bytes(descr, shape, value_bytes * count)
    return make


class Probe:
    def __init__(self, train_toy, mha_parity, cases_dir, scratch):
        self.train_toy, self.mha_parity, self.cases_dir = train_toy, mha_parity, cases_dir
        self.scratch = scratch
        self.tried = self.clean = 0

    def run(self, args, timeout=30):
        start = time.monotonic()
        try:
            run = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"still running after {timeout} s", timeout
        return run.returncode, (run.stderr + run.stdout).strip(), time.monotonic() - start

    def report(self, name, ok, detail):
        self.tried += 1
        self.clean += ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail[:220]}")

    def refused(self, name, args, words, folder, max_seconds=30):
        """The program must refuse (exit > 0, message with `words`) and leave `folder` as it was."""
        before = snapshot(folder)
        code, message, seconds = self.run(args)
        after = snapshot(folder)
        problems = []
        if code is None or code <= 0:
            problems.append(f"exit {code}")
        if words.lower() not in message.lower():
            problems.append(f"no '{words}' in the message")
        if seconds > max_seconds:
            problems.append(f"took {seconds:.1f} s")
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            problems.append(f"changed on disk: {changed}")
        last_line = message.splitlines()[-1] if message else ""
        self.report(name, not problems, "; ".join(problems) + (" -- " if problems else "") + last_line)

    def accepted(self, name, args, words, check=None):
        code, message, _ = self.run(args, timeout=120)
        problems = [] if code == 0 else [f"exit {code}"]
        if words.lower() not in message.lower():
            problems.append(f"no '{words}' in the message")
        if check:
            problems += check()
        self.report(name, not problems, "; ".join(problems) + (" -- " if problems else "") +
                    next((l for l in message.splitlines() if words.lower() in l.lower()), ""))

    # ----------------------------------------------------------------------------------
    def base_run(self):
        base = os.path.join(self.scratch, "base")
        shutil.rmtree(base, ignore_errors=True)
        code, message, _ = self.run([self.train_toy, *SMALL, "--steps", "4", "--out", base], 120)
        if code != 0:
            raise SystemExit(f"check_hostile_files: the base run failed ({code}): {message[-400:]}")
        return base

    def case_folder(self, base, name):
        folder = os.path.join(self.scratch, name)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(base, folder)
        return folder

    def checkpoints(self):
        base = self.base_run()
        resume = [self.train_toy, *SMALL, "--steps", "6", "--resume"]

        def with_flag(flag, value):
            args = list(resume)
            i = args.index(flag)
            args[i + 1] = value
            return args

        foreign = [("another head count", with_flag("--heads", "4"), "model.heads"),
                   ("another task", with_flag("--task", "reverse"), "task.name"),
                   ("another width", with_flag("--d-model", "32"), "model.d_model")]
        for name, args, words in foreign:
            folder = self.case_folder(base, "foreign")
            self.refused(f"checkpoint of {name}", args + ["--out", folder], words, folder)
        for name, args, words in [("another seed", resume + ["--seed", "7"], "seed"),
                                  ("another dropout", resume + ["--dropout", "0.1"],
                                   "model.dropout")]:
            folder = self.case_folder(base, "foreign")
            self.refused(f"checkpoint of {name}", args + ["--out", folder], words, folder)

        ckpt = "checkpoint.npz"
        weight = first_member(os.path.join(base, ckpt))
        exp_avg_sq = next(n for n, _ in read_members(os.path.join(base, ckpt))
                          if n.endswith(".exp_avg_sq.npy"))
        corruptions = [
            ("trainer step -5", "trainer/step.npy", lambda b: npy_bytes("<i8", (), struct.pack("<q", -5)), "step"),
            ("trainer step NaN", "trainer/step.npy", lambda b: npy_bytes("<f8", (), struct.pack("<d", float("nan"))), "step"),
            ("trainer step 2.5", "trainer/step.npy", lambda b: npy_bytes("<f8", (), struct.pack("<d", 2.5)), "step"),
            ("trainer step 2^62", "trainer/step.npy", lambda b: npy_bytes("<i8", (), struct.pack("<q", 2**62)), "step"),
            ("NaN weights", weight, fill_data(struct.pack("<f", float("nan"))), weight[:-4]),
            ("negative exp_avg_sq", exp_avg_sq, fill_data(struct.pack("<f", -1.0)), "exp_avg_sq"),
            ("weights of another shape", weight, lambda b: npy_bytes("<f4", (3,), b"\0" * 12), weight[:-4]),
            ("weights as int64", weight,
             lambda b: npy_bytes("<i8", npy_header(b)[1], b"\0" * (2 * (len(b) - npy_header(b)[2]))),
             weight[:-4]),
            ("configuration not JSON", "trainer/config.npy", lambda b: npy_bytes("<i8", (3,), struct.pack("<3q", 123, 34, 0)), "config"),
        ]
        for name, member, make, words in corruptions:
            folder = self.case_folder(base, "corrupt")
            replace_member(os.path.join(folder, ckpt), member, make)
            self.refused(f"checkpoint with {name}", resume + ["--out", folder], words, folder)

        # Damaged archives.
        folder = self.case_folder(base, "truncated")
        path = os.path.join(folder, ckpt)
        with open(path, "rb") as f:
            blob = f.read()
        with open(path, "wb") as f:
            f.write(blob[: len(blob) // 2])
        self.refused("truncated checkpoint", resume + ["--out", folder], "checkpoint.npz", folder)

        folder = self.case_folder(base, "crc")
        path = os.path.join(folder, ckpt)
        with zipfile.ZipFile(path) as z:
            info = z.getinfo(weight)
        with open(path, "r+b") as f:
            f.seek(info.header_offset + 30 + len(info.filename) + 200)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0xFF]))
        self.refused("checkpoint with a flipped byte (zip CRC)", resume + ["--out", folder],
                     weight[:-4], folder)

        folder = self.case_folder(base, "huge_claim")
        path = os.path.join(folder, ckpt)
        write_members(path, read_members(path), zipfile.ZIP_DEFLATED)
        with zipfile.ZipFile(path) as z:
            info = z.getinfo(weight)
            central = z.start_dir
        with open(path, "rb") as f:
            data = bytearray(f.read())
        start = info.header_offset + 22  # the local header's uncompressed size
        data[start:start + 4] = struct.pack("<I", 0xFFFFFFF0)
        record = data.find(b"PK\x01\x02", central)
        while record >= 0:
            name_len = struct.unpack("<H", data[record + 28:record + 30])[0]
            if data[record + 46:record + 46 + name_len].decode() == weight:
                data[record + 24:record + 28] = struct.pack("<I", 0xFFFFFFF0)
            record = data.find(b"PK\x01\x02", record + 46)
        with open(path, "wb") as f:
            f.write(data)
        self.refused("archive member claiming 4 GiB deflated", resume + ["--out", folder],
                     weight[:-4], folder, max_seconds=10)

        for key in ["../../x.npy", "/etc/x.npy"]:
            folder = self.case_folder(base, "path_key")
            path = os.path.join(folder, ckpt)
            write_members(path, read_members(path) + [(key, npy_bytes("<f4", (1,), b"\0" * 4))])
            self.refused(f"archive with the key {key[:-4]}", resume + ["--out", folder],
                         key[:-4], folder)

        # Accepted: an explicit new setting is used and logged; stale temp files go.
        folder = self.case_folder(base, "override")
        self.accepted("resume with an explicit --weight-decay 0.5", resume + ["--weight-decay", "0.5",
                      "--out", folder], "weight_decay")
        folder = self.case_folder(base, "stale")
        # The name earlier versions gave a save's temp file (pid, counter, time stamp) and
        # today's (host, pid, counter); this pid is not alive.
        stale = os.path.join(folder, ".checkpoint.npz.tmp-%d-0-123456" % dead_pid())
        stale_now = os.path.join(folder, ".checkpoint.npz.tmp.%s.%d.0" % (socket.gethostname(),
                                                                         dead_pid()))
        with open(stale_now, "wb") as f:
            f.write(b"half a checkpoint")
        with open(stale, "wb") as f:
            f.write(b"half a checkpoint")
        self.accepted("resume beside stale temp files", resume + ["--out", folder], "removed 2",
                      lambda: [f"{os.path.basename(p)} is still there" for p in (stale, stale_now)
                               if os.path.exists(p)])

    def killed_saves(self):
        """SIGKILL at random moments of a run that checkpoints every step: each next start
        must remove the temp files the kill left, resume from a valid checkpoint (or start
        afresh when none was written yet) and, at the end, finish."""
        folder = os.path.join(self.scratch, "killed")
        shutil.rmtree(folder, ignore_errors=True)
        args = [self.train_toy, *SMALL, "--steps", "100000", "--checkpoint-every", "1",
                "--out", folder, "--resume"]
        rng = random.Random(7)
        kills, orphans, problems = 12, 0, []
        for _ in range(kills):
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(rng.uniform(0.2, 1.2))
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate()
            if proc.returncode != -signal.SIGKILL:
                problems.append(f"a run ended by itself ({proc.returncode}): {err.decode()[-200:]}")
            orphans += sum(is_temp_file(n) for n in os.listdir(folder))
        path = os.path.join(folder, "checkpoint.npz")
        step = 0
        if os.path.exists(path):
            blob = dict(read_members(path))["trainer/step.npy"]
            step = struct.unpack("<q", blob[npy_header(blob)[2]:])[0]
        finish = list(args)
        finish[finish.index("100000")] = str(step + 2)
        code, message, _ = self.run(finish, 120)
        left = [n for n in os.listdir(folder) if is_temp_file(n)]
        if code != 0:
            problems.append(f"the last resume exited {code}: {message[-300:]}")
        if left:
            problems.append(f"temp files left: {left}")
        self.report(f"{kills} SIGKILLs during saves ({orphans} left a temp file; the last at "
                    f"step {step})", not problems,
                    "; ".join(problems) or "each restart removed them and resumed; finished")

    def npy_inputs(self):
        """mha_parity reads a case folder of .npy files: hostile ones are refused cheaply."""
        case = os.path.join(self.cases_dir, sorted(os.listdir(self.cases_dir))[0])
        hostile = [
            ("header length 0xFFFFFFF0 in a 12-byte file",
             b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0), "query.npy"),
            ("shape (2^62, 4) without data", npy_bytes("<f4", (2**62, 4), b""), "query.npy"),
            ("an empty header", b"\x93NUMPY\x01\x00\x00\x00", "query.npy"),
            ("data shorter than the shape", npy_bytes("<f4", (2, 4), b"\0" * 12), "query.npy"),
            ("negative dimension", npy_bytes("<f4", (-2, 4), b""), "query.npy"),
            ("a big-endian dtype", npy_bytes(">f8", (1,), b"\0" * 8), "query.npy"),
            ("not an .npy at all", b"hello, world", "query.npy"),
        ]
        for name, blob, member in hostile:
            folder = os.path.join(self.scratch, "npy_case")
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(case, folder)
            with open(os.path.join(folder, member), "wb") as f:
                f.write(blob)
            out = os.path.join(self.scratch, "npy_out")
            shutil.rmtree(out, ignore_errors=True)
            self.refused(f"mha_parity with {name}", [self.mha_parity, folder, out], member,
                         folder, max_seconds=5)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    train_toy, mha_parity, cases_dir, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    probe = Probe(train_toy, mha_parity, cases_dir, scratch)
    probe.checkpoints()
    probe.killed_saves()
    probe.npy_inputs()
    print(f"{probe.clean} of {probe.tried} hostile files handled cleanly")
    return 0 if probe.clean == probe.tried else 1


if __name__ == "__main__":
    sys.exit(main())
