// .npz archives through libzip (see train/npz.hpp): the .npy header writer and parser, the
// in-memory archive, the atomic write (temporary file, fsync, rename) and the validating
// reader.
#include "headgrad/train/npz.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace headgrad::train {

static_assert(std::endian::native == std::endian::little,
              ".npz files are written little-endian, as the host stores numbers");

namespace fs = std::filesystem;

namespace {

// --- .npy headers ----------------------------------------------------------------------

constexpr char kNpyMagic[] = "\x93NUMPY";      // 6 bytes, then major and minor version
constexpr std::size_t kNpyPrefix = 8;          // magic + version; the header length follows
constexpr std::uint64_t kMaxHeader = 1 << 20;  // numpy itself refuses headers over 10000 bytes

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "<f4";
    case DType::float64:
      return "<f8";
    case DType::int64:
      return "<i8";
    case DType::boolean:
      return "|b1";
  }
  return "";
}

// The shape as Python writes a tuple: "()", "(3,)", "(2, 3)".
std::string shape_tuple(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The bytes before the data of an .npy file, exactly as numpy (1.24) writes them: magic,
// version, little-endian header length, then the header dict, spare spaces so the first
// dimension can grow to 21 digits in place, and 1 to 64 spaces and a newline so the data
// starts at a multiple of 64 bytes. Version 1.0 unless the header needs over 65535 bytes.
std::string npy_prefix(DType dtype, const Shape& shape) {
  std::string dict = std::string("{'descr': '") + descr_of(dtype) +
                     "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  if (!shape.empty()) {
    const std::size_t digits = std::to_string(shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  for (const std::size_t length_bytes : {2u, 4u}) {
    const std::size_t unpadded = kNpyPrefix + length_bytes + dict.size() + 1;
    const std::size_t pad = 64 - unpadded % 64;
    const std::size_t header_len = dict.size() + pad + 1;
    if (length_bytes == 2 && header_len > 0xFFFF) continue;
    std::string out(kNpyMagic, 6);
    out += static_cast<char>(length_bytes == 2 ? 1 : 2);
    out += '\0';
    for (std::size_t b = 0; b < length_bytes; ++b)
      out += static_cast<char>((header_len >> (8 * b)) & 0xFF);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  throw ValueError("save_npz: the .npy header of shape " + shape_str(shape) + " is too long");
}

struct NpyHeader {
  DType dtype = DType::float32;
  Shape shape;
};

// Parses the header dict of an .npy file, a Python literal such as
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" (keys in any order).
// Throws std::string describing the problem.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  NpyHeader parse() {
    NpyHeader out;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        out.dtype = dtype_of_descr(string_literal());
        have_descr = true;
      } else if (key == "fortran_order") {
        if (identifier() != "False")
          throw std::string("the data is in Fortran order; headgrad reads C order only");
        have_order = true;
      } else if (key == "shape") {
        out.shape = tuple();
        have_shape = true;
      } else {
        throw std::string("unexpected key '" + key + "' in the header");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') throw std::string("malformed header: expected ',' or '}'");
    }
    ++pos_;
    skip_space();
    if (pos_ != s_.size()) throw std::string("malformed header: text after the closing '}'");
    if (!have_descr || !have_order || !have_shape)
      throw std::string("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return out;
  }

 private:
  static DType dtype_of_descr(const std::string& descr) {
    for (DType d : {DType::float32, DType::float64, DType::int64, DType::boolean})
      if (descr == descr_of(d)) return d;
    throw std::string("unsupported dtype '" + descr + "' (headgrad reads <f4, <f8, <i8 and |b1)");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) throw std::string("malformed header: expected '") + c + "'";
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') throw std::string("malformed header: expected a string");
    const std::size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) throw std::string("malformed header: unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  std::string identifier() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  // "()", "(3,)", "(2, 3)"; each dimension a non-negative decimal integer.
  Shape tuple() {
    Shape shape;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') break;
      std::int64_t dim = 0;
      const std::size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (dim > (INT64_MAX - 9) / 10) throw std::string("a dimension of the shape is too large");
        dim = dim * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) throw std::string("malformed shape: expected a non-negative integer");
      shape.push_back(dim);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') throw std::string("malformed shape: expected ',' or ')'");
    }
    ++pos_;
    return shape;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// Bytes of data for `shape` and `dtype`, or -1 when that overflows.
std::int64_t data_bytes(const Shape& shape, DType dtype) {
  std::int64_t n = static_cast<std::int64_t>(element_size(dtype));
  for (std::int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

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

// A temporary file next to the target, removed unless commit() renamed it over the target.
class TempFile {
 public:
  TempFile(const fs::path& target, const std::string& path) : path_(path) {
    static std::atomic<std::uint64_t> counter{0};
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    for (int attempt = 0; attempt < 100; ++attempt) {
      const auto stamp =
          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
      // Appended piece by piece: GCC 12 warns wrongly (-Wrestrict) on "literal" + string.
      std::string name = ".";
      name += target.filename().string();
      name += ".tmp-";
      name += std::to_string(::getpid());
      name += '-';
      name += std::to_string(counter++);
      name += '-';
      name += std::to_string(stamp % 1000000);
      tmp_ = dir / name;
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0 || errno != EEXIST) break;
    }
    if (fd_ < 0) {
      const int err = errno;
      throw error(err, "cannot create a temporary file in '" + dir.string() + "'");
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }

  void write(const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        throw error(err, "cannot write '" + tmp_.string() + "'");
      }
      done += static_cast<std::size_t>(n);
    }
  }

  // Flushes the data to disk, closes the file and renames it over `target`; then flushes
  // the folder, so the rename itself survives a crash (best effort).
  void commit(const fs::path& target) {
    while (::fsync(fd_) != 0) {
      const int err = errno;
      if (err != EINTR) throw error(err, "cannot flush '" + tmp_.string() + "' to disk");
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      throw error(err, "cannot close '" + tmp_.string() + "'");
    }
    if (::rename(tmp_.c_str(), target.c_str()) != 0) {
      const int err = errno;
      throw error(err, "cannot rename '" + tmp_.string() + "' over the target");
    }
    committed_ = true;
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }

 private:
  // An IOError for a failed system call; `err` is its errno, read before building
  // `what` (which may allocate and so change errno).
  IOError error(int err, const std::string& what) const {
    return IOError("save_npz: '" + path_ + "': " + what + ": " + std::strerror(err), path_);
  }

  std::string path_;
  fs::path tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes the .npz archive of `entries` (`tensors`: their CPU data) to `out`. libzip builds
// it in memory from each member's .npy prefix and the tensor's own data (not copied
// before), then it is streamed to the file.
void write_archive(const std::string& path, const nn::StateDict& entries,
                   const std::vector<Tensor>& tensors, TempFile& out) {
  if (entries.empty()) {
    // libzip writes nothing for an empty archive; an empty zip is its end record alone.
    char end_record[22] = {'P', 'K', 5, 6};
    out.write(end_record, sizeof end_record);
    return;
  }
  auto fail = [&](const std::string& why) -> IOError {
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
  zip_source_keep(buffer.src);  // the archive took one reference; this one outlives zip_close

  std::vector<std::string> prefixes;
  prefixes.reserve(entries.size());
  std::size_t i = 0;
  for (const auto& [key, unused] : entries) {
    const Tensor& t = tensors[i++];
    prefixes.push_back(npy_prefix(t.dtype(), t.shape()));
    const std::string& prefix = prefixes.back();
    zip_buffer_fragment_t fragments[2] = {
        {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(prefix.data())), prefix.size()},
        {static_cast<zip_uint8_t*>(const_cast<void*>(t.raw_data())),
         static_cast<zip_uint64_t>(t.numel()) * element_size(t.dtype())}};
    const zip_uint64_t count = fragments[1].length > 0 ? 2 : 1;
    zip_source_t* member = zip_source_buffer_fragment(archive.za, fragments, count, 0);
    if (!member) throw fail("entry '" + key + "': " + zip_strerror(archive.za));
    const std::string name = key + ".npy";
    const zip_int64_t index = zip_file_add(archive.za, name.c_str(), member, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(member);
      throw fail("entry '" + key + "': " + zip_strerror(archive.za));
    }
    // Stored, dated 1980-01-01 00:00 (the zip epoch): equal entries give equal files.
    if (zip_set_file_compression(archive.za, index, ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_dostime(archive.za, index, 0, (1 << 5) | 1, 0) != 0)
      throw fail("entry '" + key + "': " + zip_strerror(archive.za));
  }
  if (zip_close(archive.za) != 0)
    throw fail(std::string("cannot build the archive: ") + zip_strerror(archive.za));
  archive.za = nullptr;

  if (zip_source_open(buffer.src) != 0)
    throw fail(std::string("cannot read the archive back: ") +
               zip_error_strerror(zip_source_error(buffer.src)));
  char chunk[1 << 16];
  while (true) {
    const zip_int64_t n = zip_source_read(buffer.src, chunk, sizeof chunk);
    if (n < 0) {
      zip_source_close(buffer.src);
      throw fail(std::string("cannot read the archive back: ") +
                 zip_error_strerror(zip_source_error(buffer.src)));
    }
    if (n == 0) break;
    out.write(chunk, static_cast<std::size_t>(n));
  }
  zip_source_close(buffer.src);
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

// Reads member `index` (an .npy file of `size` bytes) into a tensor.
Tensor read_member(const ReadContext& ctx, zip_t* za, zip_uint64_t index, std::uint64_t size) {
  ZipFileHandle file{zip_fopen_index(za, index, 0)};
  if (!file.f) ctx.fail(std::string("cannot open the member: ") + zip_strerror(za));
  auto bad = [&](const std::string& why) { fail_checked(ctx, file.f, why); };

  if (size < kNpyPrefix + 2) bad("not an .npy file (" + std::to_string(size) + " bytes)");
  char prefix[kNpyPrefix];
  read_exact(ctx, file.f, prefix, kNpyPrefix);
  if (std::memcmp(prefix, kNpyMagic, 6) != 0) bad("not an .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  if (major < 1 || major > 3 || prefix[7] != 0)
    bad("unsupported .npy format version " + std::to_string(major) + "." +
        std::to_string(static_cast<unsigned char>(prefix[7])));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  unsigned char length_le[4] = {0, 0, 0, 0};
  read_exact(ctx, file.f, length_le, length_bytes);
  std::uint64_t header_len = 0;
  for (std::size_t b = 0; b < length_bytes; ++b)
    header_len |= static_cast<std::uint64_t>(length_le[b]) << (8 * b);
  const std::uint64_t data_offset = kNpyPrefix + length_bytes + header_len;
  if (header_len > kMaxHeader)
    bad("the .npy header length " + std::to_string(header_len) + " is implausibly large");
  if (data_offset > size)
    bad("the .npy header length " + std::to_string(header_len) + " runs past the member's end");
  std::string header(header_len, '\0');
  read_exact(ctx, file.f, header.data(), header_len);

  NpyHeader h;
  try {
    h = HeaderParser(header).parse();
  } catch (const std::string& why) {
    fail_checked(ctx, file.f, why);
  }
  const std::int64_t nbytes = data_bytes(h.shape, h.dtype);
  if (nbytes < 0 || static_cast<std::uint64_t>(nbytes) != size - data_offset)
    bad("shape " + shape_tuple(h.shape) + " of " + descr_of(h.dtype) + " needs " +
        (nbytes < 0 ? std::string("more") : std::to_string(nbytes)) +
        " bytes of data, the member holds " + std::to_string(size - data_offset));

  Tensor t = empty(h.shape, TensorOptions(h.dtype));
  read_exact(ctx, file.f, t.raw_data(), static_cast<std::uint64_t>(nbytes));
  char extra;
  const zip_int64_t more = zip_fread(file.f, &extra, 1);  // end of member: checks the CRC
  if (more < 0) ctx.fail(zip_file_problem(file.f));
  if (more > 0) ctx.fail("the member is longer than the zip directory says");
  if (h.dtype == DType::boolean) {  // numpy treats any non-zero byte as true
    auto* p = static_cast<unsigned char*>(t.raw_data());
    for (std::int64_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
  }
  return t;
}

}  // namespace

void save_npz(const std::string& path, const nn::StateDict& entries) {
  if (path.empty()) throw ValueError("save_npz: the path is empty");
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

  TempFile tmp(target, path);
  write_archive(path, entries, tensors, tmp);
  tmp.commit(target);
}

nn::StateDict load_npz(const std::string& path) {
  ReadContext ctx{path, {}};
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

  int code = 0;
  ZipHandle archive{zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code)};
  if (!archive.za) {
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

  nn::StateDict out;
  const zip_int64_t count = zip_get_num_entries(archive.za, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(archive.za, static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
        !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE))
      ctx.fail("cannot read member " + std::to_string(i) + ": " + zip_strerror(archive.za));
    ReadContext member{path, st.name};
    const std::string name = st.name;
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      member.fail("not an .npy member (an .npz holds '<key>.npy' files only)");
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
      member.fail("the member is encrypted");
    if ((st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE && st.size > file_size)
      member.fail("the member's size runs past the end of the file (truncated)");
    const std::string key = name.substr(0, name.size() - 4);
    if (out.contains(key)) member.fail("the member appears twice");
    out.insert(key, read_member(member, archive.za, static_cast<zip_uint64_t>(i), st.size));
  }
  return out;
}

}  // namespace headgrad::train
