// Fuzz target: the char_lm corpus reader (train::detail::load_documents, then split_corpus)
// on arbitrary bytes as one text file. Every input must end in documents and id streams or
// a headgrad error; a crash, a sanitizer report, a leak or an allocation past the limit is a
// finding. The streams must hold every document's characters plus one separator each.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "headgrad/core/error.hpp"
#include "memory_file.hpp"
#include "train/text_corpus.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static headgrad::fuzz::MemoryFile file;
  namespace detail = headgrad::train::detail;
  try {
    const std::string& path = file.hold(data, size);
    const std::vector<std::u32string> documents = detail::load_documents(path);
    const detail::TextCorpus corpus = detail::split_corpus(documents, path, 0.1, 0.1);
    std::size_t characters = 0;
    for (const std::u32string& d : documents) characters += d.size() + 1;
    std::size_t streamed = 0;
    for (const auto& stream : corpus.streams)
      if (!stream.empty()) streamed += stream.size() - 1;  // each split's leading SEP
    if (streamed != characters) throw std::logic_error("streams lost or gained characters");
  } catch (const headgrad::Error&) {
  }
  return 0;
}
