// Tests of the char_lm task and its corpus (src/train/tasks_text.cpp, text_corpus.cpp):
// reading and normalising fortune-format and paragraph files, the document split, windows
// of the split's stream, the baselines' exact values against an enumeration of every
// window, errors, the default fortunes corpus, and Olsson's induction probe.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "train/text_corpus.hpp"

using namespace headgrad;
using namespace headgrad::train;
namespace fs = std::filesystem;

namespace {

using Ids = std::vector<std::int64_t>;

// A fresh folder under the system's temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("headgrad_char_lm_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& file, const std::string& bytes) const {
    std::ofstream(path / file, std::ios::binary) << bytes;
    return (path / file).string();
  }
};

// `count` documents of varied words, in fortune format: enough text for every split.
std::string fortune_file(int count, int first = 0) {
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
  std::string text;
  for (int d = first; d < first + count; ++d) {
    for (int w = 0; w < 12; ++w) text += std::string(words[(d * 7 + w * 3 + w * w) % 10]) + " ";
    text += "no. " + std::to_string(d) + "\n%\n";
  }
  return text;
}

std::string decode(const detail::TextCorpus& corpus, const Ids& ids) {
  std::string out;
  for (std::int64_t id : ids)
    out += id == kSepId ? "|" : detail::utf8(corpus.alphabet.at(id - kFirstSymbolId));
  return out;
}

std::string stream_text(const detail::TextCorpus& corpus, Split split) {
  const auto& s = corpus.stream(split);
  return decode(corpus, Ids(s.begin(), s.end()));
}

}  // namespace

TEST_CASE("char_lm corpus: fortune documents are normalised, and paragraphs split other files") {
  TempDir dir("read");
  dir.write("quotes", "  Fx\bix\r\nline two\x01\n%\n%\n\tTabbed_\bA\n%\nlast\n");
  dir.write("quotes.dat", "binary index, skipped");
  dir.write("notes.txt", "para one\nstill one\n\n   \npara two\n\n\n");
  fs::create_symlink(dir.path / "quotes", dir.path / "quotes.u8");
  const auto docs = detail::load_documents(dir.path.string());
  std::vector<std::string> text;
  for (const auto& d : docs) {
    std::string s;
    for (char32_t c : d) s += detail::utf8(c);
    text.push_back(s);
  }
  // Files in name order (notes.txt, quotes); the symlink and the .dat file are skipped.
  REQUIRE(text.size() == 5);
  CHECK(text[0] == "para one\nstill one");
  CHECK(text[1] == "para two");
  CHECK(text[2] == "Fix\nline two");  // backspaces erase, \r and \x01 dropped, trimmed
  CHECK(text[3] == "TabbedA");        // "_\bA" (underlined A) reads as A; leading tab trimmed
  CHECK(text[4] == "last");
}

TEST_CASE("char_lm corpus: invalid UTF-8 and missing paths are errors naming the file") {
  TempDir dir("errors");
  const std::string bad = dir.write("bad", "fine text\n%\nbroken \xC3\x28 here\n");
  CHECK_THROWS_WITH_AS(detail::load_documents(bad), doctest::Contains("is not UTF-8 at byte 19"),
                       ValueError);
  CHECK_THROWS_WITH_AS(detail::load_documents((dir.path / "missing").string()),
                       doctest::Contains("does not exist"), ValueError);
  fs::create_directories(dir.path / "empty");
  CHECK_THROWS_WITH_AS(detail::load_documents((dir.path / "empty").string()),
                       doctest::Contains("holds no regular text file"), ValueError);
  CHECK_THROWS_WITH_AS(
      make_task("char_lm", TaskOptions().with_corpus(dir.write("tiny", "ab\n")).with_length(64)),
      doctest::Contains("split of corpus"), ValueError);
}

TEST_CASE("char_lm corpus: a device or a FIFO is refused by name before a byte is read") {
  // /dev/zero never ends: read whole, it ran for half a minute into std::bad_alloc.
  if (fs::exists("/dev/zero"))
    CHECK_THROWS_WITH_AS(detail::load_documents("/dev/zero"),
                         doctest::Contains("/dev/zero is a character device, not a regular file"),
                         ValueError);
  // (A FIFO, which blocked forever, is refused the same way; tests/examples runs it under
  // a timeout.)
}

TEST_CASE("char_lm corpus: the loaded corpus equals the documents split one by one") {
  TempDir dir("same");
  std::string text = fortune_file(300);
  text += "caf\xC3\xA9 \xE2\x82\xAC\b\b x\r\n\xEF\xBB\xBFtail\n%\n\t\n%\n\xF0\x9F\x98\x80 end";
  const std::string path = dir.write("docs", text);
  const auto streamed = detail::shared_corpus(path, 0.3, 0.15);
  const auto split = detail::split_corpus(detail::load_documents(path), path, 0.3, 0.15);
  CHECK(streamed->documents == split.documents);
  CHECK(streamed->alphabet == split.alphabet);
  for (Split s : {Split::train, Split::validation, Split::test})
    CHECK(streamed->stream(s) == split.stream(s));
  const auto docs = detail::load_documents(path);
  CHECK(docs[300] == U"caf\u00E9 x\ntail");  // "\u20AC\b\b" erased the euro and the space
  CHECK(docs.back() == U"\U0001F600 end");
}

TEST_CASE("char_lm corpus: documents are held out whole, by a hash independent of the seed") {
  TempDir dir("split");
  const std::string path = dir.write("docs", fortune_file(3000));
  const auto docs = detail::load_documents(path);
  REQUIRE(docs.size() == 3000);
  const auto corpus = detail::split_corpus(docs, path, 0.3, 0.15);
  const double n = 3000;
  // Binomial(3000, p) shares: within 4 standard deviations.
  CHECK(std::abs(corpus.held_out_documents[0] / n - 0.3) < 4 * std::sqrt(0.3 * 0.7 / n));
  CHECK(std::abs(corpus.held_out_documents[1] / n - 0.15) < 4 * std::sqrt(0.15 * 0.85 / n));
  // Every document lies whole in exactly one split's stream, between SEPs.
  std::map<std::string, int> where;
  for (Split split : {Split::train, Split::validation, Split::test}) {
    const std::string s = stream_text(corpus, split);
    CHECK(s.front() == '|');
    CHECK(s.back() == '|');
    std::size_t start = 1;
    for (std::size_t bar = s.find('|', 1); bar != std::string::npos; bar = s.find('|', start)) {
      where[s.substr(start, bar - start)] += 1;
      start = bar + 1;
    }
  }
  CHECK(where.size() == 3000);
  for (const auto& [doc, count] : where) CHECK(count == 1);
  // The seed draws windows only: two seeds share the vocabulary and the held-out documents.
  const auto a = make_task(
      "char_lm",
      TaskOptions().with_corpus(path).with_seed(1).with_length(32).with_test_fraction(0.15));
  const auto b = make_task(
      "char_lm",
      TaskOptions().with_corpus(path).with_seed(2).with_length(32).with_test_fraction(0.15));
  CHECK(a->vocab_size() == b->vocab_size());
  CHECK(a->vocab_size() == static_cast<std::int64_t>(corpus.alphabet.size()) + 3);
  CHECK(a->batch(Split::validation, 0, 4).tokens.to_vector<std::int64_t>() !=
        b->batch(Split::validation, 0, 4).tokens.to_vector<std::int64_t>());
}

TEST_CASE("char_lm batches: windows of the split's stream, targets shifted by one, pure") {
  TempDir dir("batches");
  const std::string path = dir.write("docs", fortune_file(800));
  const auto corpus = detail::shared_corpus(path, 0.3, 0.15);
  const std::int64_t t_len = 24, batch = 16;
  const auto task = make_task(
      "char_lm",
      TaskOptions().with_corpus(path).with_seed(5).with_length(t_len).with_test_fraction(0.15));
  CHECK(task->name() == "char_lm");
  CHECK(task->kind() == TaskKind::sequence);
  CHECK(task->max_len() == t_len);
  for (Split split : {Split::train, Split::validation, Split::test}) {
    CAPTURE(to_string(split));
    const std::string stream = stream_text(*corpus, split);
    const Batch data = task->batch(split, 3, batch);
    CHECK(data.tokens.shape() == Shape{batch, t_len});
    CHECK(!data.key_padding_mask.defined());
    const Ids tokens = data.tokens.to_vector<std::int64_t>();
    const Ids targets = data.targets.to_vector<std::int64_t>();
    for (std::int64_t r = 0; r < batch; ++r) {
      const Ids row(tokens.begin() + r * t_len, tokens.begin() + (r + 1) * t_len);
      const Ids next(targets.begin() + r * t_len, targets.begin() + (r + 1) * t_len);
      for (std::int64_t t = 0; t + 1 < t_len; ++t) CHECK(next[t] == row[t + 1]);
      Ids window = row;
      window.push_back(next.back());
      CHECK(stream.find(decode(*corpus, window)) != std::string::npos);
    }
    CHECK(task->batch(split, 3, batch).tokens.to_vector<std::int64_t>() == tokens);
    CHECK(task->batch(split, 4, batch).tokens.to_vector<std::int64_t>() != tokens);
  }
  const auto labels = task->token_labels({kSepId, kFirstSymbolId, task->vocab_size() - 1});
  CHECK(labels[0].text == "SEP");
  CHECK(labels[1].text == "\u2423");  // the alphabet's first code point here is the space
  CHECK(labels[2].text == "UNK");
}

TEST_CASE("char_lm: a held-out character never seen in training reads as UNK") {
  TempDir dir("unk");
  std::string text = fortune_file(400);
  for (int d = 0; d < 40; ++d) text += "zebra \xC3\xA9t\xC3\xA9 " + std::to_string(d) + "\n%\n";
  const std::string path = dir.write("docs", text);
  const auto docs = detail::load_documents(path);
  const auto corpus = detail::split_corpus(docs, path, 0.3, 0.0);
  const bool e_in_training =
      0 < std::count(corpus.alphabet.begin(), corpus.alphabet.end(), U'\u00E9');
  const auto& validation = corpus.stream(Split::validation);
  const auto unk = std::count(validation.begin(), validation.end(), corpus.unk_id());
  // Of 40 documents with the accent about 12 are held out; unless one is in training, each
  // held-out one has two UNKs; if one is in training, the accent has an id and no UNK occurs.
  if (e_in_training)
    CHECK(unk == 0);
  else
    CHECK(unk > 0);
  CHECK(std::count(corpus.stream(Split::train).begin(), corpus.stream(Split::train).end(),
                   corpus.unk_id()) == 0);
}

TEST_CASE(
    "char_lm baselines: exact unigram and bigram values equal an enumeration of every window") {
  TempDir dir("baselines");
  const std::string path = dir.write("docs", fortune_file(200));
  const std::int64_t t_len = 16;
  const auto task = make_task("char_lm", TaskOptions().with_corpus(path).with_length(t_len));
  const auto corpus = detail::shared_corpus(path, 0.3, 0.0);
  const auto& train = corpus->stream(Split::train);
  const auto& val = corpus->stream(Split::validation);
  const std::int64_t v = task->vocab_size() - 1;  // target ids (no PAD)
  // Independent statistics: counts from the training stream.
  std::map<std::int64_t, double> uni;
  std::map<std::pair<std::int64_t, std::int64_t>, double> bi;
  std::map<std::int64_t, double> prev_count;
  for (std::size_t j = 1; j < train.size(); ++j) {
    uni[train[j]] += 1;
    bi[{train[j - 1], train[j]}] += 1;
    prev_count[train[j - 1]] += 1;
  }
  const double total = static_cast<double>(train.size() - 1);
  // Every window start, every target in it.
  double uni_loss = 0, bi_loss = 0, targets = 0;
  for (std::size_t s = 0; s + t_len + 1 <= val.size(); ++s)
    for (std::int64_t t = 0; t < t_len; ++t) {
      const std::int64_t prev = val[s + t], next = val[s + t + 1];
      uni_loss -= std::log((uni[next] + 1) / (total + v));
      bi_loss -= std::log((bi[{prev, next}] + 1) / (prev_count[prev] + v));
      targets += 1;
    }
  const auto baselines = task->baselines(Split::validation, 2, 8);
  REQUIRE(baselines.size() == 3);
  CHECK(baselines[0].name == "chance");
  CHECK(baselines[0].exact_loss == doctest::Approx(std::log(static_cast<double>(v))));
  CHECK(baselines[1].name == "unigram");
  CHECK(baselines[1].exact_loss == doctest::Approx(uni_loss / targets).epsilon(1e-12));
  CHECK(baselines[2].name == "bigram");
  CHECK(baselines[2].exact_loss == doctest::Approx(bi_loss / targets).epsilon(1e-12));
  CHECK(baselines[2].exact_loss < baselines[1].exact_loss);
  CHECK(baselines[1].exact_loss < baselines[0].exact_loss);
  // The sampled values (2 batches of 8 windows) near the exact ones.
  CHECK(std::abs(baselines[1].loss - baselines[1].exact_loss) < 0.3);
  CHECK(baselines[1].accuracy > 0);
}

TEST_CASE("char_lm's default corpus is $HEADGRAD_CORPUS when set, else Debian's fortunes") {
  const char* before = std::getenv("HEADGRAD_CORPUS");
  const std::string saved = before != nullptr ? before : "";
  TempDir dir("default");
  const std::string file = dir.write("corpus", fortune_file(400));
  ::setenv("HEADGRAD_CORPUS", file.c_str(), 1);
  CHECK(default_corpus() == file);
  const auto task = make_task("char_lm", TaskOptions().with_length(16));
  CHECK(task->vocab_size() < 40);  // the ten words' letters, digits and punctuation only
  ::setenv("HEADGRAD_CORPUS", "", 1);
  CHECK(default_corpus() == kFortunesCorpus);
  ::setenv("HEADGRAD_CORPUS", (dir.path / "missing").c_str(), 1);
  CHECK_THROWS_WITH_AS(make_task("char_lm", TaskOptions().with_length(16)),
                       doctest::Contains("$HEADGRAD_CORPUS when set"), ValueError);
  ::unsetenv("HEADGRAD_CORPUS");
  CHECK(default_corpus() == kFortunesCorpus);
  if (before != nullptr) ::setenv("HEADGRAD_CORPUS", saved.c_str(), 1);
}

TEST_CASE("char_lm on the default corpus, the Debian fortunes package") {
  const std::string path = default_corpus();
  if (!fs::exists(path))
    FAIL("char_lm's default corpus " << path
                                     << " is missing: bash scripts/setup.sh installs the "
                                        "Debian package fortunes");
  const auto task = make_task("char_lm", TaskOptions().with_length(64).with_test_fraction(0.15));
  const auto corpus = detail::shared_corpus(path, 0.3, 0.15);
  CHECK(corpus->documents > 10000);
  CHECK(corpus->stream(Split::train).size() > 1000000);
  CHECK(task->vocab_size() > 90);  // printable ASCII, newline, tab, a few others
  CHECK(task->vocab_size() < 200);
  const auto b = task->baselines(Split::test, 4, 32);
  // English text: a unigram model needs about 4.1 bits per letter and a bigram one about
  // 3.3 over 27 symbols (Shannon 1951); case, punctuation, digits and the collections' ASCII
  // art (about 100 symbols here) add to both.
  CHECK(b[1].exact_loss / std::log(2.0) > 4.0);
  CHECK(b[1].exact_loss / std::log(2.0) < 5.2);
  CHECK(b[2].exact_loss / std::log(2.0) > 3.2);
  CHECK(b[2].exact_loss / std::log(2.0) < 4.2);
  CHECK(b[2].exact_loss < b[1].exact_loss);
}

TEST_CASE("induction_probe: distinct random symbols repeated once, the second half scored") {
  const auto task = make_task("copy", TaskOptions().with_length(4).with_alphabet(20));
  const std::int64_t half = 7, batch = 32;
  const Batch probe = induction_probe(*task, half, batch, 3);
  CHECK(probe.tokens.shape() == Shape{batch, 2 * half});
  const Ids tokens = probe.tokens.to_vector<std::int64_t>();
  const Ids targets = probe.targets.to_vector<std::int64_t>();
  std::set<std::int64_t> seen_first;
  for (std::int64_t r = 0; r < batch; ++r) {
    const std::int64_t* row = tokens.data() + r * 2 * half;
    const std::set<std::int64_t> distinct(row, row + half);
    CHECK(distinct.size() == std::size_t(half));
    seen_first.insert(row[0]);
    for (std::int64_t t = 0; t < 2 * half; ++t) {
      CHECK(row[t] >= kFirstSymbolId);
      CHECK(row[t] < task->vocab_size());
      if (t >= half) CHECK(row[t] == row[t - half]);
      const std::int64_t y = targets[r * 2 * half + t];
      if (t >= half && t + 1 < 2 * half)
        CHECK(y == row[t + 1]);
      else
        CHECK(y == kIgnoreIndex);
    }
  }
  CHECK(seen_first.size() > 10);  // 32 draws from 20 symbols
  CHECK(induction_probe(*task, half, batch, 3).tokens.to_vector<std::int64_t>() == tokens);
  CHECK(induction_probe(*task, half, batch, 4).tokens.to_vector<std::int64_t>() != tokens);
  CHECK_THROWS_WITH_AS(induction_probe(*task, 21, 4), doctest::Contains("half = 21"), ValueError);
  const auto regression = make_task("nearest_neighbour", TaskOptions().with_length(4));
  CHECK_THROWS_AS(induction_probe(*regression, 3, 4), ValueError);
}
