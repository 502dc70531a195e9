// The char_lm task's corpus: reading, decoding (strict UTF-8), normalising, splitting by
// document and encoding (the rules are in text_corpus.hpp), in memory a small multiple of
// the corpus: one file's bytes at a time, the normalised documents once as UTF-8, then the
// id streams, reserved at their exact sizes.
#include "text_corpus.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train::detail {
namespace {

namespace fs = std::filesystem;

constexpr char32_t kCodePoints = 0x110000;  // U+0000 .. U+10FFFF

// ---- Reading --------------------------------------------------------------------------

// What a file that is not regular is, and what reading it would do.
std::string kind_of(mode_t mode) {
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe), not a regular file: reading it blocks until a writer comes";
  if (S_ISCHR(mode)) return "a character device, not a regular file: reading it may never end";
  if (S_ISBLK(mode)) return "a block device, not a regular file";
  if (S_ISSOCK(mode)) return "a socket, not a regular file";
  return "not a regular file";
}

[[noreturn]] void not_regular(const fs::path& path, mode_t mode) {
  throw ValueError("char_lm: corpus " + path.string() + " is " + kind_of(mode) +
                   ". Pass a UTF-8 text file or a folder of them (--corpus; save a stream to a "
                   "file first)");
}

[[noreturn]] void unreadable(const fs::path& path, int err) {
  throw ValueError("char_lm: cannot read corpus file " + path.string() + ": " + std::strerror(err));
}

// A regular file's bytes, whole. Anything else (a FIFO, /dev/zero) is refused before a
// byte is read: opened without blocking, it is checked again on the open descriptor.
std::string read_regular_file(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) unreadable(path, errno);
  if (!S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) unreadable(path, errno);
  std::string bytes;
  try {
    if (::fstat(fd, &st) != 0) unreadable(path, errno);
    if (!S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    for (;;) {
      if (done == bytes.size()) bytes.resize(bytes.size() + 65536);  // the file grew
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) unreadable(path, errno);
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    bytes.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

// The files of a corpus path: the file itself, or a folder's regular files in name order
// (symbolic links and fortune's *.dat index files skipped).
std::vector<fs::path> corpus_files(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ValueError("char_lm: corpus " + path.string() +
                     " does not exist; the default is $HEADGRAD_CORPUS when set, else the "
                     "Debian fortunes package's " +
                     std::string(kFortunesCorpus) +
                     " (bash scripts/setup.sh installs it), or pass --corpus with a UTF-8 "
                     "text file or folder");
  if (!fs::is_directory(path, ec)) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
    return {path};
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.is_symlink() || !entry.is_regular_file() || entry.path().extension() == ".dat")
      continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw ValueError("char_lm: corpus folder " + path.string() + " holds no regular text file");
  return files;
}

// ---- UTF-8 ----------------------------------------------------------------------------

// The length of the UTF-8 sequence at p (left bytes there) and its code point in *c: 1 to
// 4; 0 when the bytes are no UTF-8 (RFC 3629: no overlong form, surrogate or code point
// past U+10FFFF, as glibc's iconv); -1 when the text ends inside a sequence.
int decode_one(const unsigned char* p, std::size_t left, char32_t* c) {
  const unsigned char b = p[0];
  if (b < 0x80) return *c = b, 1;
  int length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2, *c = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3, *c = b & 0x0F;
    if (b == 0xE0) low = 0xA0;
    if (b == 0xED) high = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4, *c = b & 0x07;
    if (b == 0xF0) low = 0x90;
    if (b == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<std::size_t>(i) >= left) return -1;
    const unsigned char next = p[i];
    if (next < (i == 1 ? low : 0x80) || next > (i == 1 ? high : 0xBF)) return 0;
    *c = (*c << 6) | (next & 0x3F);
  }
  return length;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
    return;
  }
  out += utf8(c);
}

// Calls f(code point) for each code point of `text`, valid UTF-8 (written here).
template <typename F>
void for_each_code_point(std::string_view text, F&& f) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t c = 0;
    i += static_cast<std::size_t>(decode_one(p + i, text.size() - i, &c));
    f(c);
  }
}

// ---- Documents ------------------------------------------------------------------------

bool is_blank(char32_t c) { return c == U' ' || c == U'\t' || c == U'\n'; }

// Adds one character to a document being normalised, as normalise-then-trim would leave
// it: a backspace erases the character before it, control characters other than newline
// and tab, byte-order marks and DEL are dropped, and leading white space is never kept
// (so a document is its text with the leading blanks trimmed at every step; the trailing
// ones are trimmed when it ends).
void push_normalised(std::string& doc, char32_t c) {
  if (c == U'\b') {
    while (!doc.empty() && (static_cast<unsigned char>(doc.back()) & 0xC0) == 0x80) doc.pop_back();
    if (!doc.empty()) doc.pop_back();
    return;
  }
  if (c != U'\n' && c != U'\t' && (c < 0x20 || c == 0x7F || c == 0xFEFF)) return;
  if (doc.empty() && is_blank(c)) return;
  append_utf8(doc, c);
}

bool blank_line(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

bool fortune_separator(std::string_view line) { return line == "%" || line == "%\r"; }

// Decodes one line of `bytes` ([begin, end)) into the document. ValueError naming the file
// and the byte offset of invalid UTF-8.
void push_line(std::string& doc, const std::string& bytes, std::size_t begin, std::size_t end,
               const fs::path& file) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = begin; i < end;) {
    char32_t c = 0;
    const int length = decode_one(p + i, end - i, &c);
    if (length <= 0)
      throw ValueError("char_lm: corpus file " + file.string() + " is not UTF-8 at byte " +
                       std::to_string(i) +
                       (length < 0 && end == bytes.size() ? " (truncated)" : "") +
                       "; convert it (iconv -t UTF-8) or pass another --corpus");
    push_normalised(doc, c);
    i += static_cast<std::size_t>(length);
  }
}

// Calls emit(document) for each normalised, non-empty document of one file: the text
// between "%" lines when one of its lines is "%" (the fortune format), else each paragraph
// (blocks between blank lines). The lines are split on the bytes ('\n' never occurs inside
// a UTF-8 sequence); every byte of a document line is decoded, so the first invalid byte
// is the one reported.
template <typename Emit>
void read_documents(const std::string& bytes, const fs::path& file, Emit&& emit) {
  bool fortune = false;
  for (std::size_t start = 0; start <= bytes.size() && !fortune;) {
    const std::size_t end = std::min(bytes.find('\n', start), bytes.size());
    fortune = fortune_separator(std::string_view(bytes).substr(start, end - start));
    start = end + 1;
  }
  std::string doc;
  auto flush = [&] {
    while (!doc.empty() && is_blank(static_cast<unsigned char>(doc.back()))) doc.pop_back();
    if (!doc.empty()) emit(std::string_view(doc));
    doc.clear();
  };
  for (std::size_t start = 0; start <= bytes.size();) {
    const std::size_t end = std::min(bytes.find('\n', start), bytes.size());
    const std::string_view line = std::string_view(bytes).substr(start, end - start);
    if (fortune ? fortune_separator(line) : blank_line(line)) {
      flush();
    } else {
      push_line(doc, bytes, start, end, file);
      push_normalised(doc, U'\n');
    }
    start = end + 1;
  }
  flush();
}

// ---- Splitting and encoding -----------------------------------------------------------

// Takes the documents one at a time: holds each once as UTF-8 and its split, counts each
// split's ids and marks the training documents' code points; finish() then encodes the
// streams, each reserved at its exact size.
class CorpusBuilder {
 public:
  CorpusBuilder(double validation_fraction, double test_fraction, std::size_t expected_bytes)
      : hash_split_(0, "char_lm documents", validation_fraction, test_fraction),
        in_training_(kCodePoints, false) {
    text_.reserve(expected_bytes);  // pages are touched only as the text arrives
  }

  void add(std::string_view doc) {
    std::uint64_t h = hash_split_.start();
    std::int64_t count = 0;
    for_each_code_point(doc, [&](char32_t c) {
      h = HashSplit::step(h, static_cast<std::int64_t>(c));
      ++count;
    });
    const Split side = hash_split_.side_of(h);
    if (side == Split::train)
      for_each_code_point(doc, [&](char32_t c) { in_training_[c] = true; });
    else
      ++held_out_[side == Split::validation ? 0 : 1];
    sizes_[static_cast<int>(side)] += count + 1;  // its ids and the SEP after it
    text_.append(doc);
    text_ += '\0';
    sides_.push_back(static_cast<std::uint8_t>(side));
  }

  std::int64_t documents() const { return static_cast<std::int64_t>(sides_.size()); }

  TextCorpus finish(const std::string& source) {
    TextCorpus corpus;
    corpus.source = source;
    corpus.documents = documents();
    corpus.held_out_documents[0] = held_out_[0];
    corpus.held_out_documents[1] = held_out_[1];
    for (char32_t c = 0; c < kCodePoints; ++c)
      if (in_training_[c]) corpus.alphabet.push_back(c);
    std::vector<std::int32_t> id_of(kCodePoints, static_cast<std::int32_t>(corpus.unk_id()));
    for (std::size_t i = 0; i < corpus.alphabet.size(); ++i)
      id_of[corpus.alphabet[i]] = static_cast<std::int32_t>(kFirstSymbolId + i);
    for (int s = 0; s < 3; ++s) {
      corpus.streams[s].reserve(static_cast<std::size_t>(sizes_[s]));
      corpus.streams[s].push_back(static_cast<std::int32_t>(kSepId));
    }
    std::size_t start = 0;
    for (const std::uint8_t side : sides_) {
      const std::size_t end = text_.find('\0', start);
      std::vector<std::int32_t>& stream = corpus.streams[side];
      for_each_code_point(std::string_view(text_).substr(start, end - start),
                          [&](char32_t c) { stream.push_back(id_of[c]); });
      stream.push_back(static_cast<std::int32_t>(kSepId));
      start = end + 1;
    }
    std::string().swap(text_);
    return corpus;
  }

 private:
  HashSplit hash_split_;
  std::string text_;                   // every document's UTF-8, each followed by '\0'
  std::vector<std::uint8_t> sides_;    // each document's split
  std::int64_t sizes_[3] = {1, 1, 1};  // each split's ids: a SEP, then documents and SEPs
  std::int64_t held_out_[2] = {0, 0};
  std::vector<bool> in_training_;  // per code point: in a training document
};

std::uintmax_t total_size(const std::vector<fs::path>& files) {
  std::uintmax_t total = 0;
  for (const fs::path& f : files) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(f, ec);
    if (!ec) total += size + 1;
  }
  return total;
}

// The whole corpus at `path`, read, split and encoded.
TextCorpus read_corpus(const std::string& path, double validation_fraction, double test_fraction) {
  const std::vector<fs::path> files = corpus_files(path);
  CorpusBuilder builder(validation_fraction, test_fraction, total_size(files));
  for (const fs::path& file : files)
    read_documents(read_regular_file(file), file, [&](std::string_view doc) { builder.add(doc); });
  if (builder.documents() == 0)
    throw ValueError("char_lm: corpus " + path + " holds no text (every document is empty)");
  return builder.finish(path);
}

}  // namespace

std::vector<std::u32string> load_documents(const std::string& path) {
  std::vector<std::u32string> documents;
  for (const fs::path& file : corpus_files(path))
    read_documents(read_regular_file(file), file, [&](std::string_view doc) {
      std::u32string text;
      for_each_code_point(doc, [&](char32_t c) { text.push_back(c); });
      documents.push_back(std::move(text));
    });
  if (documents.empty())
    throw ValueError("char_lm: corpus " + path + " holds no text (every document is empty)");
  return documents;
}

TextCorpus split_corpus(const std::vector<std::u32string>& documents, const std::string& source,
                        double validation_fraction, double test_fraction) {
  CorpusBuilder builder(validation_fraction, test_fraction, 0);
  std::string text;
  for (const std::u32string& doc : documents) {
    text.clear();
    for (char32_t c : doc) append_utf8(text, c);
    builder.add(text);
  }
  return builder.finish(source);
}

std::shared_ptr<const TextCorpus> shared_corpus(const std::string& path, double validation_fraction,
                                                double test_fraction) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, double, double>, std::shared_ptr<const TextCorpus>> memo;
  const auto key = std::make_tuple(path, validation_fraction, test_fraction);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = memo.find(key);
  if (it == memo.end())
    it = memo.emplace(key, std::make_shared<const TextCorpus>(
                               read_corpus(path, validation_fraction, test_fraction)))
             .first;
  return it->second;
}

std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

}  // namespace headgrad::train::detail
