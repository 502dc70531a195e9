// StateDict: an ordered name -> tensor map, what modules' and optimizers' state_dict()
// return and what checkpoints store (insertion order is kept, as in PyTorch's OrderedDict).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad {

class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  StateDict() = default;
  // StateDict d{{"w", w}, {"b", b}}: entries in this order (a repeated name keeps the last).
  StateDict(std::initializer_list<Item> items);  // NOLINT: implicit, so save_npz(p, {{..}})
  // From any map of names to tensors (std::map: sorted by name).
  template <typename Map>
  requires requires(const Map& m) { m.begin()->second.defined(); }
  explicit StateDict(const Map& map) {
    for (const auto& [name, t] : map) insert(name, t);
  }

  void insert(std::string name, Tensor tensor);  // replaces an existing entry of that name
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  const Tensor* find(const std::string& name) const;
  const Tensor& at(const std::string& name) const;  // throws IndexError naming the key
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
};

}  // namespace headgrad
