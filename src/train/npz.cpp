// .npz archives through libzip (see train/npz.hpp): the .npy header writer and parser, the
// in-memory archive, the atomic write (temporary file, fsync, rename) and the validating
// reader.
#include "headgrad/train/npz.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "headgrad/core/storage.hpp"
#include "train/atomic_file.hpp"
#include "train/npy_format.hpp"

namespace headgrad::train {

namespace fs = std::filesystem;

namespace {

// --- keys --------------------------------------------------------------------------------

// Whether `s` is well-formed UTF-8 (member names are stored as UTF-8).
bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t extra = c < 0x80           ? 0
                              : (c >> 5) == 0x6  ? 1
                              : (c >> 4) == 0xE  ? 2
                              : (c >> 3) == 0x1E ? 3
                                                 : 9;
    if (extra == 9 || (extra > 0 && c < 0xC2) || i + extra >= s.size() + (extra == 0)) return false;
    for (std::size_t k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += extra + 1;
  }
  return true;
}

// Empty when `key` is a valid entry name, else why not.
std::string key_problem(const std::string& key) {
  if (key.empty()) return "is empty";
  if (!is_utf8(key)) return "is not valid UTF-8";
  for (unsigned char c : key)
    if (c < 0x20 || c == 0x7F || c == '\\') return "holds a control character or a backslash";
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(key.find('/', start), key.size());
    const std::string_view part(key.data() + start, end - start);
    if (part.empty()) return "has an empty path part (a leading, trailing or doubled '/')";
    if (part == "." || part == "..") return "has a '.' or '..' path part";
    if (end == key.size()) return {};
    start = end + 1;
  }
}

// --- writing -----------------------------------------------------------------------------

// A libzip archive that is discarded unless closed.
struct ZipHandle {
  zip_t* za = nullptr;
  ~ZipHandle() {
    if (za) zip_discard(za);
  }
};

// A zip source with its own reference, freed on scope exit.
struct SourceHandle {
  zip_source_t* src = nullptr;
  ~SourceHandle() {
    if (src) zip_source_free(src);
  }
};

using ArchiveError = std::function<IOError(const std::string& why)>;

// Adds tensor `t` as member <key>.npy (its .npy prefix, then its data, not copied),
// stored and dated 1980-01-01 00:00 (the zip epoch): equal entries give equal files.
void add_member(zip_t* za, const std::string& key, const Tensor& t, const std::string& prefix,
                const ArchiveError& fail) {
  zip_buffer_fragment_t fragments[2] = {
      {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(prefix.data())), prefix.size()},
      {static_cast<zip_uint8_t*>(const_cast<void*>(t.raw_data())),
       static_cast<zip_uint64_t>(t.numel()) * element_size(t.dtype())}};
  const zip_uint64_t count = fragments[1].length > 0 ? 2 : 1;
  zip_source_t* member = zip_source_buffer_fragment(za, fragments, count, 0);
  if (!member) throw fail("entry '" + key + "': " + zip_strerror(za));
  const std::string name = key + ".npy";
  const zip_int64_t index = zip_file_add(za, name.c_str(), member, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    zip_source_free(member);
    throw fail("entry '" + key + "': " + zip_strerror(za));
  }
  if (zip_set_file_compression(za, index, ZIP_CM_STORE, 0) != 0 ||
      zip_file_set_dostime(za, index, 0, (1 << 5) | 1, 0) != 0)
    throw fail("entry '" + key + "': " + zip_strerror(za));
}

// Streams the finished in-memory archive to `out`.
void copy_out(zip_source_t* src, detail::AtomicFile& out, const ArchiveError& fail) {
  if (zip_source_open(src) != 0)
    throw fail(std::string("cannot read the archive back: ") +
               zip_error_strerror(zip_source_error(src)));
  char chunk[1 << 16];
  while (true) {
    const zip_int64_t n = zip_source_read(src, chunk, sizeof chunk);
    if (n < 0) {
      zip_source_close(src);
      throw fail(std::string("cannot read the archive back: ") +
                 zip_error_strerror(zip_source_error(src)));
    }
    if (n == 0) break;
    out.write(chunk, static_cast<std::size_t>(n));
  }
  zip_source_close(src);
}

// Writes the .npz archive of `entries` (`tensors`: their CPU data) to `out`. libzip builds
// it in memory from each member's .npy prefix and the tensor's own data (not copied
// before), then it is streamed to the file.
void write_archive(const std::string& path, const nn::StateDict& entries,
                   const std::vector<Tensor>& tensors, const std::string& comment,
                   detail::AtomicFile& out) {
  if (entries.empty()) {
    // libzip writes nothing for an empty archive; an empty zip is its end record alone.
    char end_record[22] = {'P', 'K', 5, 6};
    out.write(end_record, sizeof end_record);
    return;
  }
  const ArchiveError fail = [&](const std::string& why) {
    return IOError("save_npz: '" + path + "': " + why, path);
  };
  zip_error_t error;
  zip_error_init(&error);
  SourceHandle buffer{zip_source_buffer_create(nullptr, 0, 0, &error)};
  if (!buffer.src)
    throw fail(std::string("cannot create the archive: ") + zip_error_strerror(&error));
  ZipHandle archive{zip_open_from_source(buffer.src, ZIP_TRUNCATE, &error)};
  if (!archive.za)
    throw fail(std::string("cannot create the archive: ") + zip_error_strerror(&error));
  zip_source_keep(buffer.src);        // the archive took one reference; this one outlives zip_close
  std::vector<std::string> prefixes;  // alive until zip_close reads the fragments
  prefixes.reserve(entries.size());
  std::size_t i = 0;
  for (const auto& [key, unused] : entries) {
    const Tensor& t = tensors[i++];
    prefixes.push_back(detail::npy_prefix(t.dtype(), t.shape()));
    add_member(archive.za, key, t, prefixes.back(), fail);
  }
  if (!comment.empty() && zip_set_archive_comment(archive.za, comment.data(),
                                                  static_cast<zip_uint16_t>(comment.size())) != 0)
    throw fail(std::string("cannot set the archive comment: ") + zip_strerror(archive.za));
  if (zip_close(archive.za) != 0)
    throw fail(std::string("cannot build the archive: ") + zip_strerror(archive.za));
  archive.za = nullptr;
  copy_out(buffer.src, out, fail);
}

// --- reading -----------------------------------------------------------------------------

// Where a read failed, for messages: "load_npz: 'ckpt.npz', entry 'w.npy': ...".
struct ReadContext {
  const std::string& path;
  std::string entry;
  [[noreturn]] void fail(const std::string& why) const {
    throw IOError(
        "load_npz: '" + path + "'" + (entry.empty() ? "" : ", entry '" + entry + "'") + ": " + why,
        path, entry);
  }
};

struct ZipFileHandle {
  zip_file_t* f = nullptr;
  ~ZipFileHandle() {
    if (f) zip_fclose(f);
  }
};

std::string zip_file_problem(zip_file_t* f) {
  if (zip_error_code_zip(zip_file_get_error(f)) == ZIP_ER_CRC)
    return "CRC mismatch: the data is corrupted";
  return zip_file_strerror(f);
}

// Reads exactly `n` bytes of the member into `out`.
void read_exact(const ReadContext& ctx, zip_file_t* f, void* out, std::uint64_t n) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const zip_int64_t got = zip_fread(f, p, n);
    if (got < 0) ctx.fail(zip_file_problem(f));
    if (got == 0) ctx.fail("the member ends early (the file is truncated or corrupted)");
    p += got;
    n -= static_cast<std::uint64_t>(got);
  }
}

// Reads to the end of the member, which makes libzip compare its CRC; "" when it matches.
std::string drain(zip_file_t* f) {
  char chunk[4096];
  while (true) {
    const zip_int64_t got = zip_fread(f, chunk, sizeof chunk);
    if (got < 0) return zip_file_problem(f);
    if (got == 0) return {};
  }
}

// Fails with `why`, or with a CRC mismatch when the rest of the member has one: a
// malformed .npy may really be corrupted bytes.
[[noreturn]] void fail_checked(const ReadContext& ctx, zip_file_t* f, const std::string& why) {
  const std::string crc = drain(f);
  ctx.fail(crc.empty() ? why : crc);
}

// A member's uncompressed size is only a claim of the zip directory: before anything is
// allocated for it, it must fit in the file (stored members), be reachable from the
// compressed size (deflate expands at most 1032:1), and fit in the allocation limit.
void check_claimed_size(const ReadContext& member, const zip_stat_t& st, std::uintmax_t file_size) {
  constexpr std::uint64_t kDeflateMaxRatio = 1032;
  const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
  if (stored && st.size > file_size)
    member.fail("the member's size runs past the end of the file (truncated)");
  if ((st.valid & ZIP_STAT_COMP_SIZE) && st.comp_size > file_size)
    member.fail("the member's compressed size " + std::to_string(st.comp_size) +
                " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  if (!stored && (st.valid & ZIP_STAT_COMP_SIZE) && st.size / kDeflateMaxRatio > st.comp_size + 64)
    member.fail("the member claims " + std::to_string(st.size) + " bytes from " +
                std::to_string(st.comp_size) +
                " compressed bytes, more than deflate can expand to (the file is corrupted)");
  if (st.size > max_tensor_bytes() + (std::uint64_t{1} << 20))
    member.fail("the member claims " + std::to_string(st.size) +
                " bytes, more than the allocation limit of " + std::to_string(max_tensor_bytes()) +
                " bytes (set_max_tensor_bytes)");
}

// Reads member `index` (an .npy file of `size` bytes) into a tensor.
Tensor read_member(const ReadContext& ctx, zip_t* za, zip_uint64_t index, std::uint64_t size) {
  ZipFileHandle file{zip_fopen_index(za, index, 0)};
  if (!file.f) ctx.fail(std::string("cannot open the member: ") + zip_strerror(za));
  Tensor t;
  try {
    t = detail::read_npy(
        size, [&](void* out, std::uint64_t n) { read_exact(ctx, file.f, out, n); }, "member");
  } catch (const detail::NpyProblem& problem) {
    fail_checked(ctx, file.f, problem.why);
  }
  char extra;
  const zip_int64_t more = zip_fread(file.f, &extra, 1);  // end of member: checks the CRC
  if (more < 0) ctx.fail(zip_file_problem(file.f));
  if (more > 0) ctx.fail("the member is longer than the zip directory says");
  return t;
}

}  // namespace

void save_npz(const std::string& path, const nn::StateDict& entries, const std::string& comment) {
  if (path.empty()) throw ValueError("save_npz: the path is empty");
  if (comment.size() > kMaxNpzComment)
    throw ValueError("save_npz: '" + path + "': the archive comment has " +
                     std::to_string(comment.size()) + " bytes; a zip comment holds at most " +
                     std::to_string(kMaxNpzComment));
  std::vector<Tensor> tensors;
  tensors.reserve(entries.size());
  for (const auto& [key, t] : entries) {
    if (const std::string why = key_problem(key); !why.empty())
      throw ValueError("save_npz: '" + path + "': key '" + key + "' " + why);
    if (!t.defined())
      throw ValueError("save_npz: '" + path + "': entry '" + key + "' is undefined");
    tensors.push_back(t.device().is_cpu() ? t.detach() : t.detach().to(Device::cpu()));
  }
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw IOError("save_npz: '" + path + "' is a directory", path);

  detail::AtomicFile tmp(target, "save_npz", path);
  write_archive(path, entries, tensors, comment, tmp);
  tmp.commit();
}

nn::StateDict load_npz(const std::string& path) { return read_npz(path).entries; }

namespace {

// A readable regular file that is not empty; its size (checks the members' claims).
std::uintmax_t checked_file_size(const ReadContext& ctx) {
  const std::string& path = ctx.path;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) ctx.fail("no such file");
  if (fs::is_directory(status)) ctx.fail("is a directory, not an .npz file");
  if (!fs::is_regular_file(status)) ctx.fail("is not a regular file");
  const std::uintmax_t file_size = fs::file_size(path, ec);
  if (ec) ctx.fail("cannot read: " + ec.message());
  if (file_size == 0) ctx.fail("the file is empty (0 bytes), not an .npz archive");
  if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::close(fd);
  } else {
    const int err = errno;
    ctx.fail(std::string("cannot open: ") + std::strerror(err));
  }
  return file_size;
}

// The archive opened with its consistency checked (the caller owns it); a message that
// says what is wrong.
zip_t* open_archive(const ReadContext& ctx) {
  int code = 0;
  if (zip_t* za = zip_open(ctx.path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code)) return za;
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string why = zip_error_strerror(&error);
  zip_error_fini(&error);
  if (code == ZIP_ER_NOZIP)
    why = "not a zip archive (the file is truncated, or not an .npz file)";
  else if (code == ZIP_ER_INCONS)
    why = "the zip archive is inconsistent (the file is corrupted)";
  else if (code != ZIP_ER_MEMORY && code != ZIP_ER_OPEN && code != ZIP_ER_READ)
    why += " (the file is truncated or corrupted)";
  ctx.fail(why);
}

// Member i of the archive, checked (name, encryption, claimed size, key), into `out`.
void read_member_at(const ReadContext& ctx, zip_t* za, zip_int64_t i, std::uintmax_t file_size,
                    nn::StateDict& out) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(za, static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
      !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE))
    ctx.fail("cannot read member " + std::to_string(i) + ": " + zip_strerror(za));
  ReadContext member{ctx.path, st.name};
  const std::string name = st.name;
  if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
    member.fail(name.ends_with("data.pkl")
                    ? "this is a torch.save file (pickled tensors), not an .npz: save the "
                      "state dict with numpy instead, numpy.savez(path, **{k: v.numpy() for "
                      "k, v in model.state_dict().items()})"
                    : "not an .npy member (an .npz holds '<key>.npy' files only)");
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
    member.fail("the member is encrypted");
  check_claimed_size(member, st, file_size);
  const std::string key = name.substr(0, name.size() - 4);
  if (const std::string why = key_problem(key); !why.empty())
    member.fail("the key '" + key + "' " + why + " (headgrad writes and reads relative keys only)");
  if (out.contains(key)) member.fail("the member appears twice");
  out.insert(key, read_member(member, za, static_cast<zip_uint64_t>(i), st.size));
}

}  // namespace

NpzFile read_npz(const std::string& path) {
  const ReadContext ctx{path, {}};
  const std::uintmax_t file_size = checked_file_size(ctx);
  const ZipHandle archive{open_archive(ctx)};
  NpzFile file;
  int comment_length = 0;
  if (const char* comment = zip_get_archive_comment(archive.za, &comment_length, ZIP_FL_ENC_RAW))
    file.comment.assign(comment, static_cast<std::size_t>(comment_length));
  const zip_int64_t count = zip_get_num_entries(archive.za, 0);
  for (zip_int64_t i = 0; i < count; ++i)
    read_member_at(ctx, archive.za, i, file_size, file.entries);
  return file;
}

}  // namespace headgrad::train
