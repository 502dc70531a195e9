// DistributedDataParallel: bucketed gradient all-reduce launched from post-accumulate-grad
// hooks while backward runs (see headgrad/distributed/data_parallel.hpp).
#include "headgrad/distributed/data_parallel.hpp"

#include <chrono>
#include <cstring>

#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"

namespace headgrad::distributed {

struct DistributedDataParallel::Bucket {
  Tensor buffer;                    // flat, the bucket's dtype: every gradient side by side
  std::vector<std::size_t> params;  // indices into params_
  std::size_t pending = 0;          // gradients still to arrive in this backward
  std::unique_ptr<Work> work;       // the all-reduce in flight, once launched
};

namespace {

// FNV-1a over the model's parameter names, shapes and dtypes: what every rank must agree on.
std::int64_t layout_hash(const std::vector<std::string>& names, const std::vector<Tensor>& params) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xFF) * 1099511628211ull;
  };
  for (std::size_t i = 0; i < params.size(); ++i)
    mix(names[i] + shape_str(params[i].shape()) + to_string(params[i].dtype()));
  return static_cast<std::int64_t>(h);
}

std::size_t byte_size(const Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
}

char* bytes_at(Tensor& buffer, std::int64_t element_offset) {
  return static_cast<char*>(buffer.raw_data()) +
         static_cast<std::size_t>(element_offset) * element_size(buffer.dtype());
}

// Every rank must hold the same model (parameter names, shapes and dtypes): a
// DistributedError names the ranks that differ; then rank 0's values go to all.
void agree_and_broadcast(nn::Module& module, ProcessGroup& group,
                         const std::vector<std::string>& names, const std::vector<Tensor>& params) {
  Tensor mine = from_vector<std::int64_t>(
      {static_cast<std::int64_t>(params.size()), layout_hash(names, params)}, {2});
  const std::vector<Tensor> all = group.all_gather(mine);
  std::string differing;
  for (int r = 1; r < group.size(); ++r)
    if (all[r].to_vector<std::int64_t>() != all[0].to_vector<std::int64_t>())
      differing += (differing.empty() ? "" : ", ") + std::to_string(r) + " (" +
                   std::to_string(all[r].to_vector<std::int64_t>()[0]) + " parameters)";
  if (!differing.empty())
    throw DistributedError(
        "DistributedDataParallel: the ranks' models differ (parameter names, shapes or "
        "dtypes): rank 0 has " +
        std::to_string(params.size()) +
        " trainable parameters, "
        "and these ranks' models differ from it: " +
        differing);
  NoGradGuard no_grad;
  for (auto& [name, p] : module.named_parameters()) group.broadcast(p, 0);
  for (auto& [name, b] : module.named_buffers()) group.broadcast(b, 0);
}

// The parameters (indices) of each bucket, last parameter first: a bucket holds one dtype
// and at most bucket_bytes (a larger parameter gets its own); `bytes` receives each
// bucket's size.
std::vector<std::vector<std::size_t>> bucket_groups(const std::vector<Tensor>& params,
                                                    std::int64_t bucket_bytes,
                                                    std::vector<std::int64_t>& bytes) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t k = params.size(); k-- > 0;) {
    const auto size = static_cast<std::int64_t>(byte_size(params[k]));
    const bool fits = !groups.empty() &&
                      params[groups.back().front()].dtype() == params[k].dtype() &&
                      bytes.back() + size <= bucket_bytes;
    if (!fits) {
      groups.emplace_back();
      bytes.push_back(0);
    }
    groups.back().push_back(k);
    bytes.back() += size;
  }
  return groups;
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(nn::Module& module, ProcessGroup& group,
                                                 DataParallelOptions options)
    : module_(module), group_(group), options_(options) {
  if (options_.bucket_bytes < 1)
    throw ValueError("DistributedDataParallel: bucket_bytes must be positive, got " +
                     std::to_string(options_.bucket_bytes));
  for (const auto& [name, p] : module_.named_parameters()) {
    if (!p.requires_grad()) continue;
    if (!p.device().is_cpu())
      throw DeviceError("DistributedDataParallel: parameter '" + name + "' is on " +
                        p.device().str() + "; the MPI process group reduces CPU tensors");
    names_.push_back(name);
    params_.push_back(p);
  }

  if (group_.size() > 1) agree_and_broadcast(module_, group_, names_, params_);

  bucket_of_.assign(params_.size(), 0);
  offset_of_.assign(params_.size(), 0);
  seen_.assign(params_.size(), false);
  std::vector<std::int64_t> group_bytes;
  const auto groups = bucket_groups(params_, options_.bucket_bytes, group_bytes);
  for (std::size_t b = 0; b < groups.size(); ++b) {
    auto bucket = std::make_unique<Bucket>();
    std::int64_t elements = 0;
    for (std::size_t k : groups[b]) {
      bucket_of_[k] = b;
      offset_of_[k] = elements;
      elements += params_[k].numel();
    }
    bucket->params = groups[b];
    bucket->pending = groups[b].size();
    if (group_.size() > 1) bucket->buffer = zeros({elements}, params_[groups[b].front()].dtype());
    stats_.bytes_per_step += group_bytes[b];
    buckets_.push_back(std::move(bucket));
  }
  stats_.buckets = static_cast<std::int64_t>(buckets_.size());

  if (group_.size() > 1)
    for (std::size_t k = 0; k < params_.size(); ++k)
      hook_ids_.push_back(params_[k].register_post_accumulate_grad_hook(
          [this, k](const Tensor&) { on_gradient(k); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (std::size_t k = 0; k < hook_ids_.size(); ++k) params_[k].remove_hook(hook_ids_[k]);
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& bucket : buckets_) {
    out.emplace_back();
    for (std::size_t k : bucket->params) out.back().push_back(names_[k]);
  }
  return out;
}

void DistributedDataParallel::on_gradient(std::size_t k) {
  if (!sync_) return;
  if (!in_backward_) {
    in_backward_ = true;
    stats_.launched_in_backward = 0;
    autograd::queue_callback([this] { finish(); });
  }
  Bucket& bucket = *buckets_[bucket_of_[k]];
  std::memcpy(bytes_at(bucket.buffer, offset_of_[k]), params_[k].grad().raw_data(),
              byte_size(params_[k]));
  if (!seen_[k]) {
    seen_[k] = true;
    --bucket.pending;
  }
  launch_ready();
  // Let the collectives in flight advance while backward computes.
  for (std::size_t b = 0; b < next_launch_; ++b) buckets_[b]->work->test();
}

void DistributedDataParallel::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->pending == 0) {
    Bucket& bucket = *buckets_[next_launch_++];
    bucket.work = group_.all_reduce_async(bucket.buffer, ReduceOp::mean);
    ++stats_.launched_in_backward;
  }
}

void DistributedDataParallel::finish() {
  const auto start = std::chrono::steady_clock::now();
  // Parameters that got no gradient in this backward count their current grad() (or 0).
  for (std::size_t b = next_launch_; b < buckets_.size(); ++b) {
    Bucket& bucket = *buckets_[b];
    for (std::size_t k : bucket.params) {
      if (seen_[k]) continue;
      char* dst = bytes_at(bucket.buffer, offset_of_[k]);
      const Tensor g = params_[k].grad();
      if (g.defined())
        std::memcpy(dst, g.raw_data(), byte_size(params_[k]));
      else
        std::memset(dst, 0, byte_size(params_[k]));
      seen_[k] = true;
    }
    bucket.pending = 0;
  }
  const std::int64_t launched_before = stats_.launched_in_backward;
  launch_ready();
  stats_.launched_in_backward = launched_before;
  for (auto& bucket : buckets_) bucket->work->wait();
  // The means back into grad().
  for (std::size_t k = 0; k < params_.size(); ++k) {
    Bucket& bucket = *buckets_[bucket_of_[k]];
    Tensor g = params_[k].grad();
    if (!g.defined()) {
      g = empty(params_[k].shape(), params_[k].dtype());
      params_[k].set_grad(g);
    }
    std::memcpy(g.raw_data(), bytes_at(bucket.buffer, offset_of_[k]), byte_size(params_[k]));
  }
  // Ready for the next backward.
  for (auto& bucket : buckets_) {
    bucket->work.reset();
    bucket->pending = bucket->params.size();
  }
  seen_.assign(params_.size(), false);
  next_launch_ = 0;
  in_backward_ = false;
  stats_.wait_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace headgrad::distributed
