// The char_lm task's corpus: reading (glibc's iconv decodes UTF-8), normalising, splitting
// by document and encoding (the rules are in text_corpus.hpp).
#include "text_corpus.hpp"

#include <iconv.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train::detail {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError("char_lm: cannot read corpus file " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// UTF-8 bytes to code points with iconv (UTF-32LE: this build targets little-endian hosts,
// where its units are char32_t values). ValueError with the byte offset of invalid input.
std::u32string decode_utf8(const std::string& bytes, const std::string& file) {
  iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
  if (cd == reinterpret_cast<iconv_t>(-1))
    throw ValueError("char_lm: this system's iconv cannot decode UTF-8 (" + file + ")");
  std::u32string out(bytes.size(), U'\0');  // at most one code point per byte
  char* in_ptr = const_cast<char*>(bytes.data());
  std::size_t in_left = bytes.size();
  char* out_ptr = reinterpret_cast<char*>(out.data());
  std::size_t out_left = out.size() * sizeof(char32_t);
  const std::size_t rc = iconv(cd, &in_ptr, &in_left, &out_ptr, &out_left);
  const int error = errno;
  iconv_close(cd);
  if (rc == static_cast<std::size_t>(-1))
    throw ValueError("char_lm: corpus file " + file + " is not UTF-8 at byte " +
                     std::to_string(in_ptr - bytes.data()) +
                     (error == EINVAL ? " (truncated)" : "") +
                     "; convert it (iconv -t UTF-8) or pass another --corpus");
  out.resize(out.size() - out_left / sizeof(char32_t));
  return out;
}

bool is_blank(char32_t c) { return c == U' ' || c == U'\t' || c == U'\n'; }

// Applies backspaces, drops control characters other than newline and tab, trims.
std::u32string normalise(const std::u32string& raw) {
  std::u32string text;
  for (char32_t c : raw) {
    if (c == U'\b') {
      if (!text.empty()) text.pop_back();
    } else if (c == U'\n' || c == U'\t' || !(c < 0x20 || c == 0x7F || c == 0xFEFF)) {
      text.push_back(c);
    }
  }
  const auto first = std::find_if_not(text.begin(), text.end(), is_blank);
  const auto last = std::find_if_not(text.rbegin(), text.rend(), is_blank).base();
  return first < last ? std::u32string(first, last) : std::u32string();
}

std::vector<std::u32string> split_lines(const std::u32string& text) {
  std::vector<std::u32string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(U'\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

bool blank_line(const std::u32string& line) {
  return std::all_of(line.begin(), line.end(),
                     [](char32_t c) { return is_blank(c) || c == U'\r'; });
}

// One file's documents: between "%" lines (fortune format) or paragraphs.
void append_documents(const std::u32string& text, std::vector<std::u32string>& out) {
  const std::vector<std::u32string> lines = split_lines(text);
  const bool fortune = std::any_of(
      lines.begin(), lines.end(), [](const std::u32string& l) { return l == U"%" || l == U"%\r"; });
  std::u32string document;
  auto flush = [&] {
    std::u32string clean = normalise(document);
    if (!clean.empty()) out.push_back(std::move(clean));
    document.clear();
  };
  for (const std::u32string& line : lines) {
    if (fortune ? (line == U"%" || line == U"%\r") : blank_line(line)) {
      flush();
    } else {
      document += line;
      document += U'\n';
    }
  }
  flush();
}

std::vector<fs::path> corpus_files(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ValueError("char_lm: corpus " + path.string() +
                     " does not exist; the default is the Debian fortunes package's "
                     "/usr/share/games/fortunes (bash scripts/setup.sh installs it), or pass "
                     "--corpus with a UTF-8 text file or folder");
  if (!fs::is_directory(path)) return {path};
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

}  // namespace

std::vector<std::u32string> load_documents(const std::string& path) {
  std::vector<std::u32string> documents;
  for (const fs::path& file : corpus_files(path))
    append_documents(decode_utf8(read_bytes(file), file.string()), documents);
  if (documents.empty())
    throw ValueError("char_lm: corpus " + path + " holds no text (every document is empty)");
  return documents;
}

TextCorpus split_corpus(const std::vector<std::u32string>& documents, const std::string& source,
                        double validation_fraction, double test_fraction) {
  TextCorpus corpus;
  corpus.source = source;
  corpus.documents = static_cast<std::int64_t>(documents.size());
  const HashSplit hash_split(0, "char_lm documents", validation_fraction, test_fraction);
  std::vector<Split> sides;
  std::vector<char32_t> seen;
  for (const std::u32string& doc : documents) {
    std::vector<std::int64_t> units(doc.begin(), doc.end());
    sides.push_back(hash_split.side(units.data(), static_cast<std::int64_t>(units.size())));
    if (sides.back() == Split::train)
      seen.insert(seen.end(), doc.begin(), doc.end());
    else
      ++corpus.held_out_documents[sides.back() == Split::validation ? 0 : 1];
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  corpus.alphabet = std::move(seen);
  const std::int32_t unk = static_cast<std::int32_t>(corpus.unk_id());
  auto id_of = [&](char32_t c) {
    const auto it = std::lower_bound(corpus.alphabet.begin(), corpus.alphabet.end(), c);
    return it != corpus.alphabet.end() && *it == c
               ? static_cast<std::int32_t>(kFirstSymbolId + (it - corpus.alphabet.begin()))
               : unk;
  };
  for (auto& stream : corpus.streams) stream.push_back(static_cast<std::int32_t>(kSepId));
  for (std::size_t d = 0; d < documents.size(); ++d) {
    std::vector<std::int32_t>& stream = corpus.streams[static_cast<int>(sides[d])];
    for (char32_t c : documents[d]) stream.push_back(id_of(c));
    stream.push_back(static_cast<std::int32_t>(kSepId));
  }
  return corpus;
}

std::shared_ptr<const TextCorpus> shared_corpus(const std::string& path, double validation_fraction,
                                                double test_fraction) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, double, double>, std::shared_ptr<const TextCorpus>> memo;
  const auto key = std::make_tuple(path, validation_fraction, test_fraction);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = memo.find(key);
  if (it == memo.end())
    it = memo.emplace(key, std::make_shared<const TextCorpus>(split_corpus(
                               load_documents(path), path, validation_fraction, test_fraction)))
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
