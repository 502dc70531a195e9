"""numpy's side of the .npz interchange test (tests/train/test_npz.cpp runs it).

  npz_numpy_check.py READ_NPZ WRITE_DIR

Checks that numpy.load opens READ_NPZ, a file headgrad wrote, that every entry has the
dtype, shape and values of the pattern below, computed here independently, and that each
member holds exactly the bytes numpy.save writes for that array; then writes
WRITE_DIR/savez.npz (numpy.savez) and WRITE_DIR/savez_compressed.npz
(numpy.savez_compressed) with the same pattern, for headgrad to read back.

The pattern of an entry with n elements, element i (C order):
  float32, float64: (i - 3) * 0.25          int64: (i - 3) * 2000000000000000003
  bool: i % 3 == 0
Prints one line per problem and exits 1 on any; exits 77 (skipped) when numpy is missing.
"""
import io
import sys
import zipfile

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed for", sys.executable)
    sys.exit(77)

# key -> (dtype, shape); the same table is in test_npz.cpp.
ENTRIES = {
    "scalar_f32": (np.float32, ()),
    "vector_f64": (np.float64, (5,)),
    "matrix_f32": (np.float32, (2, 3)),
    "layers.0.self_attn.in_proj_weight": (np.float64, (2, 3, 4)),
    "optimizer/state.0.exp_avg": (np.float32, (1, 2, 1, 3)),
    "trainer/step": (np.int64, ()),
    "ids": (np.int64, (4,)),
    "mask": (np.bool_, (2, 2)),
    "empty": (np.float32, (0, 3)),
}


def pattern(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.int64)
    if dtype is np.bool_:
        values = i % 3 == 0
    elif dtype is np.int64:
        values = (i - 3) * 2000000000000000003
    else:
        values = ((i - 3) * 0.25).astype(dtype)
    return values.reshape(shape)


def main():
    read_path, write_dir = sys.argv[1], sys.argv[2]
    problems = []
    with np.load(read_path) as npz:
        if sorted(npz.files) != sorted(ENTRIES):
            problems.append(f"keys {sorted(npz.files)} != {sorted(ENTRIES)}")
        for key, (dtype, shape) in ENTRIES.items():
            if key not in npz.files:
                continue
            a = npz[key]
            want = pattern(dtype, shape)
            if a.dtype != want.dtype or a.shape != want.shape:
                problems.append(f"{key}: {a.dtype}{a.shape}, expected {want.dtype}{want.shape}")
            elif not a.flags.c_contiguous or not np.array_equal(a, want):
                problems.append(f"{key}: values differ: {a.ravel()[:8]} vs {want.ravel()[:8]}")
    with zipfile.ZipFile(read_path) as archive:
        for key, (dtype, shape) in ENTRIES.items():
            expected = io.BytesIO()
            np.save(expected, pattern(dtype, shape))
            if key + ".npy" in archive.namelist() and archive.read(key + ".npy") != expected.getvalue():
                problems.append(f"{key}.npy: the bytes differ from numpy.save's")
    arrays = {key: pattern(dtype, shape) for key, (dtype, shape) in ENTRIES.items()}
    np.savez(f"{write_dir}/savez.npz", **arrays)
    np.savez_compressed(f"{write_dir}/savez_compressed.npz", **arrays)
    for p in problems:
        print(p)
    print("numpy", np.__version__, "read", read_path, "problems:", len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
