// inspect::AttentionView: the pattern encoding (16-bit steps, base64) round trip and its
// refusals; the page is one self-contained file (no external reference, the data's '<'
// escaped, the title HTML-escaped); every inconsistency is refused naming what is wrong;
// capture_view_model against the patterns Capture records; the tasks' token labels. The
// page's behaviour in a browser is tested by tests/browser/view_test.mjs.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/view.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/train/tasks.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;

namespace {

// A group of one model, 2 examples of T = 3, 1 layer, 2 heads: uniform causal rows.
inspect::ViewGroup small_group() {
  inspect::ViewGroup g;
  g.name = "toy";
  g.length = 3;
  g.examples = {{{"K0", "key"}, {"V1", "value"}, {"SEP", "sep"}},
                {{"K2", "key"}, {"V0", "value"}, {"SEP", "sep"}}};
  inspect::ViewModel m;
  m.name = "H = 2";
  m.layers = 1;
  m.heads = 2;
  for (int e = 0; e < 2; ++e)
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 3; ++q)
        for (int k = 0; k < 3; ++k) m.patterns.push_back(k <= q ? 1.0f / (q + 1) : 0.0f);
  m.scores = {{"induction", "induction", {{0.5, std::nan("")}}}};
  g.models = {m};
  return g;
}

inspect::AttentionView small_view() {
  inspect::AttentionView v;
  v.title = "a <b> & \"c\"";
  v.groups = {small_group()};
  return v;
}

}  // namespace

TEST_CASE("view patterns round trip through 16-bit steps and base64") {
  const std::vector<float> p = {0.0f, 1.0f, 0.5f, 1.0f / 3, 1e-6f, 0.99999f, 0.25f};
  for (std::size_t n = 0; n <= p.size(); ++n) {  // every padding length of base64
    const std::vector<float> part(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<float> back = inspect::decode_patterns(inspect::encode_patterns(part));
    REQUIRE(back.size() == part.size());
    for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(back[i] - part[i]) <= 0.5 / 65535 + 1e-7);
    // Encoding the decoded values again is exact.
    CHECK(inspect::encode_patterns(back) == inspect::encode_patterns(part));
  }
  CHECK(inspect::encode_patterns({1.0f}) == "//8=");  // 65535 little-endian
  CHECK_THROWS_WITH_AS(inspect::decode_patterns("ab$="),
                       doctest::Contains("'$' is not a base64 digit"), hg::ValueError);
  CHECK_THROWS_WITH_AS(inspect::decode_patterns("abc"), doctest::Contains("a multiple of 4"),
                       hg::ValueError);
  CHECK_THROWS_WITH_AS(inspect::decode_patterns("AAAA"), doctest::Contains("16-bit values"),
                       hg::ValueError);
}

TEST_CASE("the view page is one file that refers to nothing outside it") {
  inspect::AttentionView v = small_view();
  v.groups[0].examples[0][0].text = "</script><script>alert(1)</script>";
  const std::string page = inspect::attention_view_html(v);
  CHECK(page.find("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>") != std::string::npos);
  CHECK(page.find("HEADGRAD_VIEW_TITLE") == std::string::npos);
  CHECK(page.find("/*HEADGRAD_VIEW_DATA*/null") == std::string::npos);
  // The label's "</script>" is escaped inside the data, so the page holds only its own.
  CHECK(page.find("alert(1)</script>") == std::string::npos);
  CHECK(page.find("\\u003c/script>\\u003cscript>alert(1)") != std::string::npos);
  for (const char* outside :
       {"http://", "https://", "src=\"//", "@import", "fetch(", "XMLHttpRequest"})
    CHECK_MESSAGE(page.find(outside) == std::string::npos, outside);
  // A title spelling the data marker is only a title.
  v.title = "/*HEADGRAD_VIEW_DATA*/null";
  const std::string odd = inspect::attention_view_html(v);
  CHECK(odd.find("<title>/*HEADGRAD_VIEW_DATA*/null</title>") != std::string::npos);
  CHECK(odd.find("\"groups\"") != std::string::npos);
}

TEST_CASE("write_attention_view replaces the file whole and refuses a bad view first") {
  const auto dir = std::filesystem::temp_directory_path() / "headgrad_test_view";
  std::filesystem::create_directories(dir);
  const auto path = dir / "view.html";
  inspect::write_attention_view(path, small_view());
  std::stringstream first;
  first << std::ifstream(path).rdbuf();
  CHECK(first.str() == inspect::attention_view_html(small_view()));
  inspect::AttentionView bad = small_view();
  bad.groups[0].models[0].patterns.pop_back();
  CHECK_THROWS_AS(inspect::write_attention_view(path, bad), hg::ValueError);
  std::stringstream after;
  after << std::ifstream(path).rdbuf();
  CHECK(after.str() == first.str());  // untouched
  std::filesystem::remove_all(dir);
}

TEST_CASE("an inconsistent view is refused naming the group, the model and the sizes") {
  auto refused = [](inspect::AttentionView v, const char* what) {
    CHECK_THROWS_WITH_AS(inspect::attention_view_html(v), doctest::Contains(what), hg::ValueError);
  };
  refused(inspect::AttentionView{}, "no group to show");
  auto v = small_view();
  v.groups[0].models[0].patterns.push_back(0);
  refused(v,
          "model 'H = 2': patterns hold 37 values; 2 examples x 1 layers x 2 heads x 3 x 3 = 36");
  v = small_view();
  v.groups[0].models[0].patterns[4] = std::nanf("");
  refused(v, "outside [0, 1]");
  v = small_view();
  v.groups[0].models[0].patterns[4] = 1.5f;
  refused(v, "outside [0, 1]");
  v = small_view();
  v.groups[0].examples[1].pop_back();
  refused(v, "group 'toy': example 1 has 2 token labels; T = 3 expected");
  v = small_view();
  v.groups[0].model_b = 1;
  refused(v, "model_b 1 must index its 1 models");
  v = small_view();
  v.groups[0].models[0].scores[0].values = {{0.5}};
  refused(v, "score 'induction' must be 1 layers x 2 heads");
  v = small_view();
  v.groups[0].models.clear();
  refused(v, "at least one example and one model");
}

TEST_CASE("capture_view_model holds Capture's patterns, example-major, and restores the mode") {
  auto task =
      train::make_task("associative_recall", {.seed = 3, .length = 3, .test_fraction = 0.2});
  hg::nn::GPTOptions o;
  o.vocab_size = task->vocab_size();
  o.max_len = task->max_len();
  o.d_model = 16;
  o.nhead = 4;
  o.num_layers = 2;
  hg::Generator gen(5);
  hg::nn::GPT model(o, &gen);
  model.train();
  const train::ForwardFn forward = [&](const train::Batch& b) {
    return model.forward(b.tokens, b.key_padding_mask);
  };
  const train::Batch batch = task->batch(train::Split::test, 0, 3);
  const inspect::ViewModel m = inspect::capture_view_model(model, forward, batch, "gpt");
  CHECK(model.is_training());
  CHECK(m.name == "gpt");
  CHECK(m.layers == 2);
  CHECK(m.heads == 4);
  const std::int64_t t = batch.tokens.size(1);
  REQUIRE(m.patterns.size() == static_cast<std::size_t>(3 * 2 * 4 * t * t));
  // The same patterns from a Capture of our own, in eval mode.
  inspect::Capture capture(model, {"pattern"}, false);
  model.eval();
  {
    hg::NoGradGuard no_grad;
    auto scope = capture.activate();
    forward(batch);
  }
  for (std::int64_t l = 0; l < 2; ++l) {
    const auto p =
        capture.get("layers." + std::to_string(l) + ".self_attn.pattern").to_vector<float>();
    for (std::int64_t e = 0; e < 3; ++e)
      for (std::int64_t h = 0; h < 4; ++h)
        for (std::int64_t i = 0; i < t * t; ++i)
          REQUIRE(m.patterns[static_cast<std::size_t>(((e * 2 + l) * 4 + h) * t * t + i)] ==
                  p[static_cast<std::size_t>((e * 4 + h) * t * t + i)]);
  }
  const auto labels = inspect::view_examples(*task, batch);
  REQUIRE(labels.size() == 3);
  CHECK(static_cast<std::int64_t>(labels[0].size()) == t);
}

TEST_CASE("tasks name their tokens: keys, values, the query, fillers, letters, numbers") {
  auto recall = train::make_task("associative_recall", {.seed = 1, .length = 2, .alphabet = 4});
  // [k, v, k, v, SEP, q, v(q), PAD...]: keys are ids 2..5, values 6..9.
  const auto r = recall->token_labels({2, 7, 5, 6, 1, 5, 6, 0, 0});
  const std::vector<std::string> texts = {"K0", "V1", "K3", "V0", "SEP", "?K3", "V0", "PAD", "PAD"};
  const std::vector<std::string> roles = {"key",   "value", "key", "value", "sep",
                                          "query", "value", "pad", "pad"};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CHECK(r[i].text == texts[i]);
    CHECK(r[i].role == roles[i]);
  }
  auto mqar = train::make_task("mqar", {.seed = 1, .length = 2, .alphabet = 4});
  // K = 2 pairs, T = 8: [k v k v | q _ q _] with the empty query slots the filler.
  const auto m = mqar->token_labels({3, 8, 2, 9, 2, 0, 3, 0});
  CHECK(m[0].text == "K1");
  CHECK(m[1].text == "V2");
  CHECK(m[4].text == "?K0");
  CHECK(m[4].role == "query");
  CHECK(m[5].text == "_");
  CHECK(m[5].role == "filler");
  auto copy = train::make_task("copy", {.seed = 1, .length = 3});
  const auto c = copy->token_labels({2, 3, 27, 1, 2, 3, 0});
  CHECK(c[0].text == "a");
  CHECK(c[1].text == "b");
  CHECK(c[2].text == "z");
  CHECK(c[3].text == "SEP");
  CHECK(c[6].text == "PAD");
  auto add = train::make_task("modular_addition", {.seed = 1, .modulus = 7});
  const auto a = add->token_labels({5, 9, 2, 1, 8});  // 3 + 0 = 6
  CHECK(a[0].text == "3");
  CHECK(a[1].text == "+");
  CHECK(a[2].text == "0");
  CHECK(a[3].text == "=");
  CHECK(a[4].text == "6");
  auto regression = train::make_task("nearest_neighbour", {.seed = 1, .length = 4, .dim = 4});
  CHECK(regression->token_labels({}).empty());
}
