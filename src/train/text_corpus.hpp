// Internal to the char_lm task (tasks_text.cpp): a text corpus read into documents, split
// into held-out documents, and encoded as one stream of character ids per split.
//
// Reading (load_documents): a corpus is a UTF-8 text file or a folder of them (its regular
// files in name order; symbolic links and fortune's *.dat index files are skipped, so the
// Debian fortunes folder reads each collection once). A file whose lines include one
// holding only "%" (the fortune format) has its documents between those lines; any other
// file has one document per paragraph (blocks separated by blank lines). Each document is
// normalised: a backspace erases the character before it (fortune's overstrike "_\bA" and
// "A\bA" read as "A"), carriage returns, byte-order marks and the other control characters
// except newline and tab are dropped, and leading and trailing white space is trimmed; empty
// documents are dropped. Invalid UTF-8 is a ValueError naming the file and the byte offset.
// A corpus path that is not a regular file or a folder (a FIFO, which would block forever,
// /dev/zero, which never ends) is a ValueError naming it, before anything is read.
//
// Memory: one file's bytes at a time, the normalised documents once as UTF-8, then the id
// streams (4 bytes a character) at their exact sizes: about 5 to 6 times the corpus at the
// peak, 4 times after loading (docs/performance.md, "Loading a char_lm corpus").
//
// Splitting (split_corpus): a document is held out for validation or test by a keyed hash
// of its text (the same rule as the synthetic tasks' HashSplit, with a fixed key), so the
// held-out documents do not depend on the task seed: every seed of a study is scored on the
// same report documents, as in language-modelling benchmarks. The vocabulary is every code
// point of the training documents, ascending; a held-out character outside it reads as UNK.
// Each split's stream is SEP d_1 SEP d_2 ... SEP d_n SEP in corpus order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/train/tasks.hpp"

namespace headgrad::train::detail {

struct TextCorpus {
  std::string source;                           // the path it was read from
  std::int64_t documents = 0;                   // after normalisation, all splits
  std::int64_t held_out_documents[2] = {0, 0};  // validation, test
  std::vector<char32_t> alphabet;               // the training documents' code points, ascending
  // Per split (train, validation, test): the id stream, ids kSepId, kFirstSymbolId + i for
  // alphabet[i], and unk_id() for a character outside the alphabet.
  std::vector<std::int32_t> streams[3];

  std::int64_t unk_id() const {
    return kFirstSymbolId + static_cast<std::int64_t>(alphabet.size());
  }
  std::int64_t vocab_size() const { return unk_id() + 1; }
  const std::vector<std::int32_t>& stream(Split split) const {
    return streams[static_cast<int>(split)];
  }
};

// The documents of a file or folder, normalised (above), in order. ValueError naming the
// path when it does not exist, is not a regular file or folder, holds no regular file, or
// is not UTF-8. (The tests' view of the documents; shared_corpus never holds them so.)
std::vector<std::u32string> load_documents(const std::string& path);

// Splits documents by the keyed hash of their text (fractions as TaskOptions) and encodes
// each split's stream.
TextCorpus split_corpus(const std::vector<std::u32string>& documents, const std::string& source,
                        double validation_fraction, double test_fraction);

// load_documents + split_corpus, memoised per (path, fractions) for the process: a study
// builds its task once per run, and the corpus is read once. Thread-safe.
std::shared_ptr<const TextCorpus> shared_corpus(const std::string& path, double validation_fraction,
                                                double test_fraction);

// UTF-8 encoding of one code point (text labels).
std::string utf8(char32_t c);

}  // namespace headgrad::train::detail
