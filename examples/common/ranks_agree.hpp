// The ranks of an MPI job must run one configuration. These helpers gather every rank's
// settings (its options as parsed, and what it would resume from) and refuse to start on
// any difference, on every rank alike, naming the option and each rank's value:
//
//   ranks disagree on --seed: rank 0 has 3, rank 1 has 4; give every rank the same options
//
// Without the check, ranks that disagree train different things under one job's name,
// index another rank's list of runs past its end, or wait for a peer that already stopped.
//
//   auto settings = examples::option_settings(app, {"--threads", "--quiet"});
//   settings.push_back(examples::checkpoint_setting(resume, out_dir + "/checkpoint.npz"));
//   examples::require_ranks_agree(distributed::world(), "", settings);
#pragma once

#include <CLI/CLI.hpp>
#include <headgrad/core/error.hpp>
#include <headgrad/core/tensor.hpp>
#include <headgrad/distributed/process_group.hpp>
#include <headgrad/train/npz.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace headgrad::examples {

// One setting every rank must share. `value` is compared and `shown` printed (two ranks
// may read one checkpoint through different paths); `fix` ends the refusal.
struct RankSetting {
  std::string name;   // "--seed"
  std::string value;  // "3"
  std::string shown;  // empty: value
  std::string fix = "give every rank the same options";
};

namespace detail {

// An option's text in one form for one value: 3e-3 and 0.003 agree, 07 and 7 too.
inline std::string canonical_number(const std::string& text) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  std::int64_t i = 0;
  if (auto [end, error] = std::from_chars(first, last, i); error == std::errc() && end == last)
    return std::to_string(i);
  std::uint64_t u = 0;
  if (auto [end, error] = std::from_chars(first, last, u); error == std::errc() && end == last)
    return std::to_string(u);
  double d = 0;
  if (auto [end, error] = std::from_chars(first, last, d);
      error == std::errc() && end == last && std::isfinite(d)) {
    char out[32];
    const auto written = std::to_chars(out, out + sizeof out, d);  // shortest round trip
    return std::string(out, written.ptr);
  }
  return text;
}

// Strings as length-prefixed fields ("5:hello"), so any byte may occur in one.
inline void put_field(std::string& out, const std::string& s) {
  out += std::to_string(s.size()) + ":" + s;
}
inline std::string take_field(const std::string& in, std::size_t& at) {
  const std::size_t colon = in.find(':', at);
  if (colon == std::string::npos) throw ValueError("ranks' settings: a truncated record");
  const std::size_t n = std::stoul(in.substr(at, colon - at));
  if (colon + 1 + n > in.size()) throw ValueError("ranks' settings: a truncated record");
  std::string s = in.substr(colon + 1, n);
  at = colon + 1 + n;
  return s;
}

// Every rank's `text`, in rank order (two all_gathers: the lengths, then the bytes).
inline std::vector<std::string> all_gather_text(distributed::ProcessGroup& group,
                                                const std::string& text) {
  Tensor length = scalar_tensor(static_cast<double>(text.size()), kInt64);
  std::int64_t longest = 1;
  std::vector<std::int64_t> lengths;
  for (const Tensor& t : group.all_gather(length)) {
    lengths.push_back(t.item<std::int64_t>());
    longest = std::max(longest, lengths.back());
  }
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(longest), 0);
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<unsigned char>(text[i]);
  std::vector<std::string> texts;
  const auto gathered = group.all_gather(from_vector<std::int64_t>(bytes, {longest}));
  for (std::size_t r = 0; r < gathered.size(); ++r) {
    const auto v = gathered[r].to_vector<std::int64_t>();
    std::string s(static_cast<std::size_t>(lengths[r]), '\0');
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(v[i]);
    texts.push_back(std::move(s));
  }
  return texts;
}

// "rank 0 has 3, rank 1 has 4" (ranks with the same value grouped: "ranks 0, 2 have 3").
inline std::string who_has_what(const std::vector<const RankSetting*>& by_rank) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> groups;  // value, ranks
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    const std::string value = by_rank[r] ? by_rank[r]->value : std::string("\1absent");
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == value; });
    if (it == groups.end()) it = groups.insert(groups.end(), {value, {}});
    it->second.push_back(r);
  }
  std::string out;
  for (const auto& [value, ranks] : groups) {
    const RankSetting* s = by_rank[ranks.front()];
    std::string list;
    for (std::size_t r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
    out += (out.empty() ? "" : ", ") + std::string(ranks.size() > 1 ? "ranks " : "rank ") + list +
           (ranks.size() > 1 ? " have " : " has ") +
           (s == nullptr       ? "no such setting"
            : s->shown.empty() ? s->value
                               : s->shown);
  }
  return out;
}

}  // namespace detail

// The options of `app` as parsed, but --help and the `per_rank` ones (legitimately
// different on each rank): numbers in one form, a flag as true or false, an option not
// given as its default ("(not given)" when it has none shown).
inline std::vector<RankSetting> option_settings(const CLI::App& app,
                                                const std::set<std::string>& per_rank) {
  std::vector<RankSetting> settings;
  for (const CLI::Option* option : app.get_options()) {
    const std::string& name = option->get_name();
    if (option == app.get_help_ptr() || per_rank.count(name) > 0) continue;
    std::string value;
    if (option->count() > 0) {
      for (const std::string& r : option->results())
        value += (value.empty() ? "" : ",") + detail::canonical_number(r);
    } else if (option->get_expected_min() == 0) {
      value = "false";  // a flag not given
    } else {
      value = option->get_default_str().empty()
                  ? "(not given)"
                  : detail::canonical_number(option->get_default_str());
    }
    settings.push_back({name, value, {}});
  }
  return settings;
}

// What a run resumes from: without --resume nothing; with it, no checkpoint at `path`, or
// the checkpoint's step (trainer/step) and a hash of its bytes, so that ranks reading one
// file through different paths agree and ranks reading different files do not.
inline RankSetting checkpoint_setting(bool resume, const std::string& path) {
  RankSetting s{"the checkpoint to resume from", "", "",
                "give every rank the same checkpoint: one --out folder that every rank sees"};
  if (!resume) {
    s.value = "not resuming";
    return s;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    s.value = "none";
    s.shown = "no checkpoint at " + path + " (a fresh start)";
    return s;
  }
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a over the file's bytes
  for (std::istreambuf_iterator<char> it(in), end; it != end; ++it)
    hash = (hash ^ static_cast<unsigned char>(*it)) * 1099511628211ull;
  std::string step = "an unknown step";
  try {
    const train::NpzFile file = train::read_npz(path);
    for (const auto& [name, t] : file.entries)
      if (name == "trainer/step" && t.numel() == 1)
        step = "step " + std::to_string(t.item<std::int64_t>());
  } catch (const std::exception&) {
    step = "an unreadable file";
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  s.value = step + ", contents " + hex;
  s.shown = step + " of " + path + " (contents " + std::string(hex, 8) + ")";
  return s;
}

// Whether this rank sees rank 0's `folder`: rank 0 leaves a file of a random name there,
// every rank looks for it (a collective: every rank calls this at the same point).
inline RankSetting folder_shared_setting(distributed::ProcessGroup& group, const std::string& name,
                                         const std::string& folder, const std::string& fix) {
  RankSetting s{name, "rank 0's folder", folder, fix};
  if (group.size() == 1) return s;
  namespace fs = std::filesystem;
  std::string marker = ".ranks-see-this-folder-";
  marker += detail::all_gather_text(group, std::to_string(std::random_device{}()) + "-" +
                                               std::to_string(std::time(nullptr)))
                .front();
  const fs::path path = fs::path(folder) / marker;
  std::error_code ec;
  if (group.rank() == 0) {
    fs::create_directories(folder, ec);
    std::ofstream(path) << "a file for the ranks of one job to find; removed at once\n";
  }
  group.barrier();
  const bool seen = fs::exists(path, ec);
  group.barrier();  // every rank has looked
  if (group.rank() == 0) fs::remove(path, ec);
  if (!seen) {
    s.value = "another folder";
    s.shown = folder + " (not rank 0's: a file rank 0 wrote there is missing)";
  }
  return s;
}

// Gathers every rank's settings and throws the same ValueError on every rank when any
// setting differs between ranks, naming each such setting and every rank's value. One rank
// (no MPI launcher): nothing to compare. `program` ("heads_compare") opens the message.
inline void require_ranks_agree(distributed::ProcessGroup& group, const std::string& program,
                                const std::vector<RankSetting>& settings) {
  if (group.size() == 1) return;
  std::string mine;
  for (const RankSetting& s : settings) {
    detail::put_field(mine, s.name);
    detail::put_field(mine, s.value);
    detail::put_field(mine, s.shown);
    detail::put_field(mine, s.fix);
  }
  std::vector<std::map<std::string, RankSetting>> ranks;
  std::vector<std::string> order;  // names in the order rank 0 lists them, then others'
  for (const std::string& text : detail::all_gather_text(group, mine)) {
    auto& settings_of_rank = ranks.emplace_back();
    for (std::size_t at = 0; at < text.size();) {
      RankSetting s;
      s.name = detail::take_field(text, at);
      s.value = detail::take_field(text, at);
      s.shown = detail::take_field(text, at);
      s.fix = detail::take_field(text, at);
      if (std::find(order.begin(), order.end(), s.name) == order.end()) order.push_back(s.name);
      settings_of_rank[s.name] = s;
    }
  }
  std::string differences;
  std::vector<std::string> fixes;
  for (const std::string& name : order) {
    std::vector<const RankSetting*> by_rank;
    for (const auto& r : ranks) {
      const auto it = r.find(name);
      by_rank.push_back(it == r.end() ? nullptr : &it->second);
    }
    bool same = true;
    for (const RankSetting* s : by_rank)
      same = same && s != nullptr && s->value == by_rank.front()->value;
    if (same) continue;
    differences +=
        (differences.empty() ? "" : "; on ") + name + ": " + detail::who_has_what(by_rank);
    for (const RankSetting* s : by_rank)
      if (s != nullptr && std::find(fixes.begin(), fixes.end(), s->fix) == fixes.end())
        fixes.push_back(s->fix);
  }
  if (differences.empty()) return;
  std::string fix;
  for (const std::string& f : fixes) fix += (fix.empty() ? "" : "; ") + f;
  throw ValueError((program.empty() ? "" : program + ": ") + "ranks disagree on " + differences +
                   "; " + fix);
}

}  // namespace headgrad::examples
