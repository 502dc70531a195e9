// The chainable setters of headgrad's option structs, one line each (as libtorch's
// TORCH_ARG): after the field `double dropout = 0.0;`, HEADGRAD_WITH(dropout) declares
//   auto& with_dropout(double value) { dropout = std::move(value); return *this; }
// so that MultiheadAttentionOptions(64, 4).with_dropout(0.1).with_batch_first(true) reads
// as PyTorch's keyword arguments. HEADGRAD_WITH_SELF is the same for a CRTP base whose
// setters return the derived options (its self()). Setters that do more than assign one
// field (two values, a conversion, appending) are written out.
#pragma once

#include <utility>

#define HEADGRAD_WITH(name)                 \
  auto& with_##name(decltype(name) value) { \
    name = std::move(value);                \
    return *this;                           \
  }

#define HEADGRAD_WITH_SELF(name)            \
  auto& with_##name(decltype(name) value) { \
    name = std::move(value);                \
    return self();                          \
  }
