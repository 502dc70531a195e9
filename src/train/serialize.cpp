// save / load of a module's state_dict (headgrad/train/serialize.hpp).
#include "headgrad/train/serialize.hpp"

#include "headgrad/train/checkpoint.hpp"
#include "headgrad/train/npz.hpp"

namespace headgrad {

void save(const nn::Module& module, const std::string& path) {
  train::save_npz(path, module.state_dict(), train::attention_layout_comment(module));
}

void load(nn::Module& module, const std::string& path, const train::LoadOptions& options) {
  train::detail::apply_checkpoint_as("load", train::read_npz(path), path, module, nullptr, options);
}

}  // namespace headgrad
