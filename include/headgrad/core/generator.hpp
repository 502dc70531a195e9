// Seedable random number generators. Every random op takes an optional Generator; without
// one it draws from the global default generator, which `manual_seed` resets. The stream
// of numbers is defined by headgrad itself (not by the standard library's distributions),
// so the same seed gives the same tensors with any compiler.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

namespace headgrad {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0x5EEDull) { manual_seed(seed); }

  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    engine_.seed(seed);
    has_spare_normal_ = false;
  }
  std::uint64_t initial_seed() const { return seed_; }

  std::uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1), 53 random bits.
  double next_double() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in [0, 1), 24 random bits.
  float next_float() { return static_cast<float>(engine_() >> 40) * 0x1.0p-24f; }
  // Standard normal (Box-Muller, pairs cached).
  double next_normal();

  // The full state, for checkpoints: the seed plus the engine's textual state.
  const std::mt19937_64& engine() const { return engine_; }
  void set_engine(const std::mt19937_64& engine) {
    engine_ = engine;
    has_spare_normal_ = false;
  }
  // The second Box-Muller sample cached by the last next_normal(), if any: part of the
  // state a checkpoint must keep for the next normal draw to be the same.
  std::optional<double> spare_normal() const {
    return has_spare_normal_ ? std::optional<double>(spare_normal_) : std::nullopt;
  }
  void set_spare_normal(std::optional<double> spare) {
    has_spare_normal_ = spare.has_value();
    spare_normal_ = spare.value_or(0.0);
  }

 private:
  std::mt19937_64 engine_;
  std::uint64_t seed_ = 0;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

// The process-wide default generator (used when an op is given none).
Generator& default_generator();

// Reseeds the default generator.
void manual_seed(std::uint64_t seed);

}  // namespace headgrad
