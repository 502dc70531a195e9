// Internal functions for optimizer state dicts: 0-d scalar entries, "state.<i>.<buffer>"
// keys, and StateReader, which checks every entry of a state dict and collects all
// problems before an optimizer changes anything (one ValueError lists them all).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/core/state_dict.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::optim::state_io {

std::string key(std::size_t index, const std::string& buffer);  // "state.<i>.<buffer>"
Tensor scalar_f64(double value);                                // 0-d float64
Tensor scalar_i64(std::int64_t value);                          // 0-d int64
Tensor copy_of(const Tensor& t);                                // detached deep copy
std::string quoted(const std::string& key);                     // 'key'

// Throws DTypeError unless `buffer` (undefined is fine) still matches parameter `index` in
// dtype and shape: a parameter converted after its state was created (Module::to) would
// otherwise be updated with buffers of the old dtype.
void check_buffer(const std::string& type_name, std::size_t index, const Tensor& param,
                  const Tensor& buffer);

// Value checks for StateReader::real: "" when fine, else what the value must be.
std::string nonnegative(double value);    // finite and >= 0
std::string unit_interval(double value);  // 0 <= value < 1

class StateReader {
 public:
  // `params`: the optimizer's parameters (buffers are checked against their shapes).
  StateReader(const StateDict& state, const std::vector<Tensor>& params, std::string type_name);

  bool has(const std::string& key) const { return state_.contains(key); }
  // A 0-d floating entry; `check` (optional) returns "" or what is wrong with the value.
  double real(const std::string& key, std::string (*check)(double) = nullptr);
  // A 0-d int64 entry >= min_value.
  std::int64_t integer(const std::string& key, std::int64_t min_value = 0);
  // A 0-d int64 entry holding 0 or 1.
  bool flag(const std::string& key);
  // The entry state.<index>.<name>: floating, shaped like parameter `index`, finite (and
  // >= 0 with BufferValues::nonnegative), returned as a fresh tensor of the parameter's
  // dtype. Undefined when absent (a problem when `required`) or invalid.
  enum class BufferValues { finite, nonnegative };
  Tensor buffer(std::size_t index, const std::string& name, bool required,
                BufferValues values = BufferValues::finite);
  // Records a problem for every key that is neither one of `scalar_keys` nor
  // state.<i>.<name> with i < number of parameters and name in `buffer_names`.
  void check_unexpected(const std::vector<std::string>& scalar_keys,
                        const std::vector<std::string>& buffer_names);
  // Checks "num_params" against the optimizer's parameter count.
  void check_num_params();
  void problem(std::string text) { problems_.push_back(std::move(text)); }
  // Throws ValueError "<type>.load_state_dict: nothing was loaded: <problems>" if any.
  void throw_if_problems() const;

 private:
  const Tensor* scalar_entry(const std::string& key, bool floating);

  const StateDict& state_;
  const std::vector<Tensor>& params_;
  std::string type_name_;
  std::vector<std::string> problems_;
};

}  // namespace headgrad::optim::state_io
