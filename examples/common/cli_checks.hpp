// Command-line checks shared by the example programs: numbers are validated on the text
// the user typed, before CLI11 converts them, so that an out-of-range value is refused
// instead of saturating ("99999999999999999999" read as INT64_MAX) or wrapping ("-1" read
// as an unsigned 2^64 - 1), and NaN or infinity never pass a range check. Each message
// says what is accepted.
//
//   app.add_option("--steps", steps, "training steps")->check(examples::integer_in(1, 1e9));
//   app.add_option("--lr", lr, "learning rate")->check(examples::real_in(0, 10, Open::low));
//   app.add_option("--seed", seed, "seed")->check(examples::unsigned_integer());
//
// The same rules read values from files (a checkpoint's recorded configuration):
// parse_integer and parse_unsigned.
//
// Plus a training-memory estimate, so that a model or batch that cannot fit is refused
// before anything is allocated, with the sizes to lower.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <headgrad/core/error.hpp>
#include <headgrad/core/storage.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace headgrad::examples {

// The value of `text` when it is a decimal integer from lo to hi with nothing after it;
// nullopt otherwise ("2abc", "", " 2", "99999999999999999999").
inline std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t lo,
                                                 std::int64_t hi) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi)
    return std::nullopt;
  return value;
}

// The value of `text` when it is an unsigned 64-bit integer (a seed) in decimal digits only;
// nullopt for "-1" (which strtoull would wrap to 2^64 - 1), "+1", "" or anything after the
// digits.
inline std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text[0] == '-' || text[0] == '+' || error != std::errc() ||
      end != text.data() + text.size())
    return std::nullopt;
  return value;
}

inline constexpr const char* kUnsignedRange = "an integer from 0 to 18446744073709551615";

// An integer from lo to hi, written in decimal with nothing after it.
inline CLI::Validator integer_in(double lo, double hi) {
  const auto low = static_cast<std::int64_t>(lo), high = static_cast<std::int64_t>(hi);
  const std::string range =
      "an integer from " + std::to_string(low) + " to " + std::to_string(high);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (!parse_integer(text, low, high)) return "'" + text + "' is not " + range;
        return {};
      },
      range);
}

// An unsigned 64-bit integer (a seed): decimal digits only, at most 2^64 - 1.
inline CLI::Validator unsigned_integer() {
  const std::string what = kUnsignedRange;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (!parse_unsigned(text)) return "'" + text + "' is not " + what;
        return {};
      },
      what);
}

// Text that is not empty: `--corpus ""` is refused rather than read as "the default".
// `instead` says what leaving the option out does.
inline CLI::Validator non_empty(const std::string& instead) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (text.empty()) return "the value is empty (" + instead + ")";
        return {};
      },
      "not empty");
}

// A file the program will write: not empty, not a folder, in a folder that exists. Checked
// before any work, so a bad path fails at once instead of after training.
inline CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        namespace fs = std::filesystem;
        if (text.empty()) return "the value is empty (name the file to write)";
        std::error_code ec;
        if (fs::is_directory(text, ec))
          return "'" + text + "' is a folder; name a file in it (e.g. '" +
                 (fs::path(text) / "out.json").string() + "')";
        const fs::path folder = fs::path(text).parent_path();
        if (!folder.empty() && !fs::is_directory(folder, ec))
          return "the folder '" + folder.string() + "' of '" + text +
                 "' does not exist; create it first";
        return {};
      },
      "FILE");
}

enum class Open { none, low, high };

// A finite real number in [lo, hi] ((lo, hi] with Open::low, [lo, hi) with Open::high).
inline CLI::Validator real_in(double lo, double hi, Open open = Open::none) {
  char range[96];
  std::snprintf(range, sizeof range, "a finite number in %c%g, %g%c", open == Open::low ? '(' : '[',
                lo, hi, open == Open::high ? ')' : ']');
  const std::string what = range;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool in = std::isfinite(value) && (open == Open::low ? value > lo : value >= lo) &&
                        (open == Open::high ? value < hi : value <= hi);
        if (error != std::errc() || end != text.data() + text.size() || !in)
          return "'" + text + "' is not " + what;
        return {};
      },
      what);
}

// Throws ValueError naming `option` and the repeated value when `values` repeats one.
template <typename T>
void check_no_duplicates(const std::vector<T>& values, const std::string& option) {
  std::set<T> seen;
  for (const T& v : values)
    if (!seen.insert(v).second) {
      std::string text;
      if constexpr (std::is_arithmetic_v<T>)
        text = CLI::detail::to_string(v);
      else
        text = v;
      throw ValueError(option + " lists " + text +
                       " twice: each value is one cell of the study (remove the repeat)");
    }
}

// Bytes to train a transformer of `layers` layers of width d (feed-forward ffn, `heads`
// heads) on batches of `batch` sequences of `length` tokens over `vocab` outputs with
// AdamW in float32: parameters, gradients and two moments (4 copies), and the activations
// backward keeps (about 16 d + 3 ffn values per token and layer, and 4 attention maps of
// length^2 per head), plus the logits and their gradient. A conservative estimate,
// computed in double so that absurd sizes do not overflow.
inline double transformer_training_bytes(double vocab, double length, double d, double ffn,
                                         double layers, double heads, double batch) {
  const double params_per_layer = 4 * d * d + 2 * d * ffn + 9 * d + ffn;
  const double params = layers * params_per_layer + 2 * vocab * d + length * d + 2 * d;
  const double per_layer =
      batch * length * (16 * d + 3 * ffn) + 4 * batch * heads * length * length;
  const double activations = layers * per_layer + 3 * batch * length * (vocab + d);
  return 4.0 * (4 * params + activations);
}

// Throws ValueError when `bytes` exceed the memory available now, naming the need, what
// is available and `what_to_lower`.
inline void check_fits_in_memory(double bytes, const std::string& what_to_lower) {
  const auto available = available_cpu_memory();
  if (!available || bytes <= static_cast<double>(*available)) return;
  char text[256];
  std::snprintf(text, sizeof text,
                "this model and batch need about %.3g GiB to train (parameters, gradients, "
                "optimizer state and activations), but %.3g GiB are available: lower ",
                bytes / 1073741824.0, static_cast<double>(*available) / 1073741824.0);
  throw ValueError(text + what_to_lower);
}

}  // namespace headgrad::examples
