// The .npy format (train/npy.hpp, train/npy_format.hpp): numpy's prefix writer, the header
// parser, the validating reader shared with .npz members, and load_npy / save_npy.
#include "headgrad/train/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string_view>

#include "headgrad/ops/shape_ops.hpp"
#include "train/atomic_file.hpp"
#include "train/npy_format.hpp"

namespace headgrad::train {

static_assert(std::endian::native == std::endian::little,
              ".npy files are written little-endian, as the host stores numbers");

namespace detail {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";      // 6 bytes, then major and minor version
constexpr std::size_t kNpyPrefix = 8;          // magic + version; the header length follows
constexpr std::uint64_t kMaxHeader = 1 << 20;  // numpy itself refuses headers over 10000 bytes

[[noreturn]] void bad(std::string why) { throw NpyProblem{std::move(why)}; }

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

struct NpyHeader {
  DType dtype = DType::float32;
  bool fortran_order = false;
  Shape shape;
};

// Parses the header dict of an .npy file, a Python literal such as
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" (keys in any order).
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
      if ((key == "descr" && have_descr) || (key == "fortran_order" && have_order) ||
          (key == "shape" && have_shape))
        bad("repeated key '" + key + "' in the header");
      if (key == "descr") {
        out.dtype = dtype_of_descr(string_literal());
        have_descr = true;
      } else if (key == "fortran_order") {
        const std::string value = identifier();
        if (value != "False" && value != "True")
          bad("malformed header: fortran_order must be True or False");
        out.fortran_order = value == "True";
        have_order = true;
      } else if (key == "shape") {
        out.shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "' in the header");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') bad("malformed header: expected ',' or '}'");
    }
    ++pos_;
    skip_space();
    if (pos_ != s_.size()) bad("malformed header: text after the closing '}'");
    if (!have_descr || !have_order || !have_shape)
      bad("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return out;
  }

 private:
  static DType dtype_of_descr(const std::string& descr) {
    for (DType d : {DType::float32, DType::float64, DType::int64, DType::boolean})
      if (descr == descr_of(d)) return d;
    bad("unsupported dtype '" + descr + "' (headgrad reads <f4, <f8, <i8 and |b1)");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("malformed header: expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("malformed header: expected a string");
    const std::size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad("malformed header: unterminated string");
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
      if (shape.size() >= 64) bad("malformed shape: more than 64 dimensions");
      std::int64_t dim = 0;
      const std::size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (dim > (INT64_MAX - 9) / 10) bad("a dimension of the shape is too large");
        dim = dim * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) bad("malformed shape: expected a non-negative integer");
      shape.push_back(dim);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("malformed shape: expected ',' or ')'");
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
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  for (std::int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

}  // namespace

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
  throw ValueError("npy: the header of shape " + shape_str(shape) + " is too long");
}

// Prefix (magic, version, header length), header dict, then the data: each is checked
// against `size` before the next is read, and the tensor is allocated only once the data
// length is known to match.
Tensor read_npy(std::uint64_t size, const ReadExact& read, const char* holder) {
  if (size < kNpyPrefix + 2) bad("not an .npy file (" + std::to_string(size) + " bytes)");
  char prefix[kNpyPrefix];
  read(prefix, kNpyPrefix);
  if (std::memcmp(prefix, kNpyMagic, 6) != 0) bad("not an .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  if (major < 1 || major > 3 || prefix[7] != 0)
    bad("unsupported .npy format version " + std::to_string(major) + "." +
        std::to_string(static_cast<unsigned char>(prefix[7])));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (size < kNpyPrefix + length_bytes) bad("the .npy file ends inside its header length");
  unsigned char length_le[4] = {0, 0, 0, 0};
  read(length_le, length_bytes);
  std::uint64_t header_len = 0;
  for (std::size_t b = 0; b < length_bytes; ++b)
    header_len |= static_cast<std::uint64_t>(length_le[b]) << (8 * b);
  const std::uint64_t data_offset = kNpyPrefix + length_bytes + header_len;
  if (header_len > kMaxHeader)
    bad("the .npy header length " + std::to_string(header_len) + " is implausibly large");
  if (data_offset > size)
    bad("the .npy header length " + std::to_string(header_len) + " runs past the end (" +
        std::to_string(size) + " bytes)");
  std::string header(header_len, '\0');
  read(header.data(), header_len);

  const NpyHeader h = HeaderParser(header).parse();
  const std::int64_t nbytes = data_bytes(h.shape, h.dtype);
  if (nbytes < 0 || static_cast<std::uint64_t>(nbytes) != size - data_offset)
    bad("shape " + shape_tuple(h.shape) + " of " + descr_of(h.dtype) + " needs " +
        (nbytes < 0 ? std::string("more") : std::to_string(nbytes)) + " bytes of data, the " +
        holder + " holds " + std::to_string(size - data_offset));

  // Fortran order: the data is the row-major layout of the reversed shape.
  Shape stored = h.shape;
  if (h.fortran_order) std::reverse(stored.begin(), stored.end());
  Tensor t;
  try {
    t = empty(stored, TensorOptions(h.dtype));
  } catch (const Error& e) {  // larger than the allocation limit or the memory available
    bad(e.what());
  }
  read(t.raw_data(), static_cast<std::uint64_t>(nbytes));
  if (h.dtype == DType::boolean) {  // numpy treats any non-zero byte as true
    auto* p = static_cast<unsigned char*>(t.raw_data());
    for (std::int64_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
  }
  if (h.fortran_order && h.shape.size() > 1) {
    std::vector<std::int64_t> reversed(h.shape.size());
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    t = permute(t, reversed);
  }
  return t;
}

}  // namespace detail

namespace {

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Tensor load_npy(const std::string& path) {
  auto fail = [&](const std::string& why) -> IOError {
    return IOError("load_npy: '" + path + "': " + why, path);
  };
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) {
    const int err = errno;
    throw fail(err == ENOENT ? std::string("no such file")
                             : std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw fail(std::string("cannot read: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw fail("is a directory, not an .npy file");
  if (!S_ISREG(st.st_mode)) throw fail("is not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t offset = 0;
  auto read = [&](void* out, std::uint64_t n) {
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got =
          ::pread(file.fd, p, std::min<std::uint64_t>(n, 1 << 30), static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw fail(std::string("cannot read: ") + std::strerror(errno));
      if (got == 0) throw fail("the file ends early (it changed while being read)");
      p += got;
      offset += static_cast<std::uint64_t>(got);
      n -= static_cast<std::uint64_t>(got);
    }
  };
  try {
    return detail::read_npy(size, read, "file");
  } catch (const detail::NpyProblem& problem) {
    throw fail(problem.why);
  }
}

void save_npy(const std::string& path, const Tensor& t) {
  if (path.empty()) throw ValueError("save_npy: the path is empty");
  if (!t.defined()) throw ValueError("save_npy: '" + path + "': the tensor is undefined");
  const Tensor cpu = t.device().is_cpu() ? t.detach() : t.detach().to(Device::cpu());
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw IOError("save_npy: '" + path + "' is a directory", path);
  const std::string prefix = detail::npy_prefix(cpu.dtype(), cpu.shape());
  detail::AtomicFile out(path, "save_npy", path);
  out.write(prefix.data(), prefix.size());
  out.write(static_cast<const char*>(cpu.raw_data()),
            static_cast<std::size_t>(cpu.numel()) * element_size(cpu.dtype()));
  out.commit();
}

}  // namespace headgrad::train
