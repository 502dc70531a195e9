// StateDict (headgrad/core/state_dict.hpp).
#include "headgrad/core/state_dict.hpp"

#include "headgrad/core/error.hpp"

namespace headgrad {

StateDict::StateDict(std::initializer_list<Item> items) {
  for (const auto& [name, t] : items) insert(name, t);
}

void StateDict::insert(std::string name, Tensor tensor) {
  for (auto& item : items_) {
    if (item.first == name) {
      item.second = std::move(tensor);
      return;
    }
  }
  items_.emplace_back(std::move(name), std::move(tensor));
}

const Tensor* StateDict::find(const std::string& name) const {
  for (const auto& item : items_)
    if (item.first == name) return &item.second;
  return nullptr;
}

const Tensor& StateDict::at(const std::string& name) const {
  if (const Tensor* t = find(name)) return *t;
  std::string known;
  for (const auto& item : items_) known += (known.empty() ? "" : ", ") + item.first;
  throw IndexError("StateDict: no entry '" + name + "' (entries: " + known + ")");
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}

}  // namespace headgrad
