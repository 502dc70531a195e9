// heads_compare's answers across models (effects.cpp): the head_grid arm's count-or-size
// effects, each model's layer-0 circuit over its runs, and the report's two families of
// tests with Holm's correction (the definitions are in aggregate.hpp, with the structs).
#pragma once

#include <vector>

#include "aggregate.hpp"

namespace heads_compare {

// The verdict of one count-or-size test (effect "count", "size" or "interaction"): Holm
// p < 0.05 in its family and the direction of the shift (a loss falls, an accuracy rises
// when the larger side is better); "not shown (Holm p ...)" otherwise.
std::string grid_verdict(const std::string& effect, const statistics::PairedComparison& p,
                         bool by_loss);

// CircuitSummary of a cell's runs.
CircuitSummary summarise_circuits(const Cell& cell);

// char_lm's language scores of a cell's runs after training (final_point, or the last
// evaluation for runs cached before it): bits per character and the ICL score (mean [t
// 95%]), and the strongest head's induction on Olsson's probe (mean [bootstrap 95%]: the
// score lies in [0, 1]); runs counts the runs with a curve.
struct LanguageScores {
  std::int64_t runs = 0;
  statistics::Interval bits{}, icl{}, probe{};
};
LanguageScores language_scores(const Cell& cell);

// The count-or-size effects of every task with head_grid models (both budgets), from the
// study's selected models.
std::vector<GridEffects> grid_effects(const StudyConfig& config, const Study& study);

// Holm over the confirmatory family (the grid effects at their task's own budget) and over
// every other paired comparison of `study` (the exploratory family): sets each holm_p.
void adjust_families(Study& study);

}  // namespace heads_compare
