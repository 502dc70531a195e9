// save / load of a module's state_dict (headgrad/train/serialize.hpp).
#include "headgrad/train/serialize.hpp"

#include "headgrad/train/checkpoint.hpp"
#include "headgrad/train/npz.hpp"

namespace headgrad {

void save(const nn::Module& module, const std::string& path) {
  train::save_npz(path, module.state_dict());
}

void load(nn::Module& module, const std::string& path) {
  train::apply_checkpoint(train::load_npz(path), path, module, nullptr);
}

}  // namespace headgrad
