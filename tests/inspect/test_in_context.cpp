// inspect::in_context_score (src/inspect/in_context.cpp): the early and late losses against
// the library's cross-entropy (train::task_loss) on the same batches with every other
// target ignored, mode restoration, and its argument errors.
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/mechanism.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;
using hg::Tensor;

namespace {

// The mean task_loss over batches 0..batches-1 with targets outside [from, to) ignored,
// weighted by the scored targets of each batch.
double masked_loss(nn::GPT& gpt, const train::Task& task, std::int64_t batches,
                   std::int64_t batch_size, std::int64_t from, std::int64_t to) {
  double total = 0, count = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    const train::Batch batch = task.batch(train::Split::validation, b, batch_size);
    std::vector<std::int64_t> y = batch.targets.to_vector<std::int64_t>();
    const std::int64_t t_len = batch.targets.size(1);
    double scored = 0;
    for (std::size_t k = 0; k < y.size(); ++k) {
      const auto t = static_cast<std::int64_t>(k) % t_len;
      if (t < from || t >= to) y[k] = train::kIgnoreIndex;
      scored += y[k] != train::kIgnoreIndex;
    }
    train::Batch masked = batch;
    masked.targets = hg::from_vector(y, batch.targets.shape(), hg::kInt64);
    const Tensor logits = gpt.forward(batch.tokens, batch.key_padding_mask);
    total += train::task_loss(logits, masked, train::TaskKind::sequence).item<double>() * scored;
    count += scored;
  }
  return total / count;
}

}  // namespace

TEST_CASE("in_context_score: late minus early loss, equal to the masked cross-entropy") {
  // mqar scores several query positions spread over the context.
  const auto task = train::make_task("mqar", train::TaskOptions().with_seed(2).with_length(4));
  hg::Generator gen(5);
  auto gpt = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task->vocab_size(),
                                                      .max_len = task->max_len(),
                                                      .d_model = 8,
                                                      .nhead = 2,
                                                      .num_layers = 1,
                                                      .dim_feedforward = 16},
                                       &gen);
  gpt->to(hg::kFloat64);
  const train::ForwardFn forward = [gpt](const train::Batch& b) {
    return gpt->forward(b.tokens, b.key_padding_mask);
  };
  const std::int64_t t_len = task->max_len();  // 16: pairs at 0..7, queries at 8, 10, ...
  gpt->train();
  const auto s =
      inspect::in_context_score(*gpt, forward, *task, train::Split::validation, 3, 4, 8, 11, 12);
  CHECK(gpt->is_training());
  gpt->eval();
  const double early = masked_loss(*gpt, *task, 3, 4, 8, 11);
  const double late = masked_loss(*gpt, *task, 3, 4, 12, t_len);
  CHECK(s.early_loss == doctest::Approx(early).epsilon(1e-12));
  CHECK(s.late_loss == doctest::Approx(late).epsilon(1e-12));
  CHECK(s.score == doctest::Approx(late - early).epsilon(1e-12));

  CHECK_THROWS_WITH_AS(
      inspect::in_context_score(*gpt, forward, *task, train::Split::validation, 1, 4, 8, 12, 11),
      doctest::Contains("early_to = 12 <= late_from = 11"), hg::ValueError);
  CHECK_THROWS_AS(
      inspect::in_context_score(*gpt, forward, *task, train::Split::validation, 1, 4, 0, 2, t_len),
      hg::ValueError);
  // Positions 0..7 (the pairs) score nothing on mqar.
  CHECK_THROWS_WITH_AS(
      inspect::in_context_score(*gpt, forward, *task, train::Split::validation, 1, 4, 0, 7, 8),
      doctest::Contains("no scored target"), hg::ValueError);
  const auto regression =
      train::make_task("nearest_neighbour", train::TaskOptions().with_length(4));
  CHECK_THROWS_WITH_AS(inspect::in_context_score(*gpt, forward, *regression,
                                                 train::Split::validation, 1, 4, 0, 1, 2),
                       doctest::Contains("not a sequence task"), hg::ValueError);
}
