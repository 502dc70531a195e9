// .npz archives: named tensors in the file format of numpy.savez, so numpy.load(path)
// opens what headgrad writes and headgrad reads what numpy writes.
//
// The archive is a zip holding one member "<key>.npy" per entry, each an .npy file
// (format 1.0, C order) with dtype <f4 (float32), <f8 (float64), <i8 (int64) or |b1
// (bool) and the tensor's shape: "()" for a 0-d tensor, "(n,)" for a 1-d one. Keys may
// hold '.' and '/' ("optimizer/state.0.exp_avg"; np.load(path)["optimizer/state.0.exp_avg"]
// gives the array). Members are stored uncompressed, with a fixed timestamp, so equal
// entries give byte-identical files.
//
// Writing is atomic: the archive goes to a temporary file in the target's folder, which is
// flushed to disk (fsync) and renamed over the target. On any failure the temporary file
// is removed and a file already at the target is left as it was.
//
// Reading validates everything before returning: a missing, empty, truncated or corrupted
// file (zip CRC), a member that is not a valid .npy, an unsupported dtype or a shape that
// does not match the data throw IOError naming the file and, where one is at fault, the
// member. Members compressed with deflate (numpy.savez_compressed) are read too.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "headgrad/core/error.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::train {

// A file could not be read or written, or its contents are not what they should be.
// path() is the file; entry() the archive member at fault ("" when none is).
class IOError : public Error {
 public:
  IOError(const std::string& what, std::string path, std::string entry = {})
      : Error(what), path_(std::move(path)), entry_(std::move(entry)) {}
  const std::string& path() const { return path_; }
  const std::string& entry() const { return entry_; }

 private:
  std::string path_;
  std::string entry_;
};

// Writes `entries` (in their order) to `path`, replacing any file there; tensors on a GPU
// are copied to the CPU first (the file does not record devices). Every tensor must
// be defined; keys must be non-empty relative paths ('/' separates folders, no empty,
// "." or ".." parts, no backslash or control characters). Throws ValueError for a bad
// entry (before any file is touched) and IOError when the file cannot be written.
// `comment`, when not empty, becomes the zip archive's comment (at most kMaxNpzComment
// bytes), which numpy and torch ignore; headgrad's save and save_checkpoint record the
// model's attention layout there (train/checkpoint.hpp).
inline constexpr std::size_t kMaxNpzComment = 65535;
void save_npz(const std::string& path, const nn::StateDict& entries,
              const std::string& comment = {});
// The same from a map of names to tensors (written in the map's order).
template <typename Map>
requires requires(const Map& m) { m.begin()->second.defined(); }
void save_npz(const std::string& path, const Map& entries, const std::string& comment = {}) {
  save_npz(path, nn::StateDict(entries), comment);
}

// Reads every entry of the archive at `path`, in the archive's order, as CPU tensors; keys
// are the member names without ".npy". Throws IOError (see above) and changes nothing on failure.
nn::StateDict load_npz(const std::string& path);

// The entries and the archive's comment ("" when it has none).
struct NpzFile {
  nn::StateDict entries;
  std::string comment;
};
NpzFile read_npz(const std::string& path);

}  // namespace headgrad::train
