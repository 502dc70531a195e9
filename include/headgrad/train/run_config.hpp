// What a training run is, recorded in its checkpoint so that a resume can be checked
// against it: an ordered list of named fields with their values as text, each either an
// identity (the model, the task, the seed: a run with another value is another run, never
// resumed from this checkpoint) or a setting (the optimizer's hyperparameters, clipping,
// the batch size: it may change on resume, but only when the user gives it explicitly, and
// the change is logged). The command line is recorded too, for the record only.
//
//   RunConfig config;
//   config.identity("model.heads", 8).identity("task.name", "sort").identity("seed", 1)
//         .setting("optimizer.lr", 1e-3);
//   config.explicit_settings = {"optimizer.lr"};  // given on this command line
//
// The Trainer adds its own fields (optimizer.type and the optimizer's hyperparameters,
// trainer.batch_size, trainer.clip_grad_norm) and stores the whole in the checkpoint entry
// "trainer/config" as UTF-8 JSON bytes (1-d int64; in numpy:
// bytes(np.load(path)["trainer/config"].astype("u1")).decode()).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad::train {

struct RunConfig {
  enum class Kind { identity, setting };
  struct Field {
    std::string name;
    std::string value;
    Kind kind = Kind::identity;
  };

  std::vector<Field> fields;
  // Settings the user gave explicitly for this run: they may differ from the checkpoint's.
  std::set<std::string> explicit_settings;
  std::string command_line;

  // Adds or replaces a field. Numbers are written exactly (doubles with 17 significant
  // digits), booleans as true/false.
  template <typename T>
  RunConfig& identity(const std::string& name, const T& value) {
    return set(name, text_of(value), Kind::identity);
  }
  template <typename T>
  RunConfig& setting(const std::string& name, const T& value) {
    return set(name, text_of(value), Kind::setting);
  }
  RunConfig& set(const std::string& name, std::string value, Kind kind);
  const Field* find(const std::string& name) const;

  // {"fields": [{"name": ..., "value": ..., "kind": "identity"}, ...], "command_line": ...}
  std::string to_json() const;
  // Throws ValueError naming what is malformed.
  static RunConfig from_json(const std::string& json);

  template <typename T>
  static std::string text_of(const T& value) {
    if constexpr (std::is_same_v<T, bool>)
      return value ? "true" : "false";
    else if constexpr (std::is_floating_point_v<T>)
      return double_text(static_cast<double>(value));
    else if constexpr (std::is_arithmetic_v<T>)
      return std::to_string(value);
    else
      return std::string(value);
  }
  static std::string double_text(double value);
};

// How a checkpoint's configuration (`saved`) compares with this run's (`now`).
struct ConfigComparison {
  // "model.heads: 8 in the checkpoint, 4 now (an identity field: ...)", one per field.
  std::vector<std::string> refused;
  // Settings that differ and were given explicitly: the current value is used.
  std::vector<std::string> overridden;
  std::vector<std::string> overridden_names;
};
// Every field of either config is compared; a field missing on one side reads "(absent)".
ConfigComparison compare_configs(const RunConfig& saved, const RunConfig& now);

// Text as a 1-d int64 tensor of its bytes, and back (ValueError unless a 1-d int64 tensor
// of values 0..255).
Tensor text_tensor(const std::string& text);
std::string tensor_text(const Tensor& t, const std::string& what);

}  // namespace headgrad::train
