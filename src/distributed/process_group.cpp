// ProcessGroup's checked collectives, the single-process group, and world(): which group
// this process belongs to (see headgrad/distributed/process_group.hpp).
#include "headgrad/distributed/process_group.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/plugin.hpp"
#include "distributed/mpi_backend.hpp"
#include "headgrad/autograd/grad_mode.hpp"

namespace headgrad::distributed {

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::mean:
      return "mean";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

ProcessGroup::ProcessGroup(int rank, int size, std::string backend)
    : rank_(rank), size_(size), backend_(std::move(backend)) {}

void ProcessGroup::set_timeout_seconds(double seconds) {
  if (!(std::isfinite(seconds) && seconds > 0))
    throw ValueError(
        "ProcessGroup::set_timeout_seconds: the timeout must be a positive number "
        "of seconds, got " +
        std::to_string(seconds));
  timeout_s_ = seconds;
}

namespace {

// What every rank must agree on before a checked collective: fixed size, so one
// all_gather carries it. Tensors of more than kMaxDims dims compare their first dims and
// their element count.
constexpr int kMaxDims = 8;
struct Layout {
  std::int64_t dtype = 0, dim = 0, numel = 0;
  std::int64_t dims[kMaxDims] = {};
};

Layout layout_of(const Tensor& t) {
  Layout l;
  l.dtype = static_cast<std::int64_t>(t.dtype());
  l.dim = t.dim();
  l.numel = t.numel();
  for (int i = 0; i < kMaxDims && i < t.dim(); ++i) l.dims[i] = t.size(i);
  return l;
}

std::string describe(const Layout& l) {
  std::string s = "(";
  for (int i = 0; i < l.dim && i < kMaxDims; ++i) {
    if (i > 0) s += ',';
    s += std::to_string(l.dims[i]);
  }
  if (l.dim > kMaxDims) s += ",...";
  return s + ") " + to_string(static_cast<DType>(l.dtype));
}

void check_cpu(const Tensor& t, const char* op) {
  t.check_defined(op);
  if (!t.device().is_cpu())
    throw DeviceError(std::string("ProcessGroup::") + op + ": the tensor is on " +
                      t.device().str() +
                      "; the MPI process group takes CPU tensors (copy with .to(Device::cpu()))");
}

}  // namespace

void ProcessGroup::check_agreement(const Tensor& t, const char* op) {
  if (size_ == 1) return;
  const Layout mine = layout_of(t);
  std::vector<Layout> all(static_cast<std::size_t>(size_));
  all_gather_impl(&mine, sizeof(Layout), all.data());
  bool same = true;
  for (const Layout& l : all) same = same && std::memcmp(&l, &all[0], sizeof(Layout)) == 0;
  if (same) return;
  std::string what =
      std::string("ProcessGroup::") + op + ": the ranks' tensors differ, so nothing was exchanged:";
  for (int r = 0; r < size_; ++r)
    what += (r ? ", rank " : " rank ") + std::to_string(r) + " " + describe(all[r]);
  throw DistributedError(what);
}

void ProcessGroup::barrier() { barrier_impl(); }

void ProcessGroup::broadcast(Tensor& t, int root) {
  check_cpu(t, "broadcast");
  if (root < 0 || root >= size_)
    throw IndexError("ProcessGroup::broadcast: root " + std::to_string(root) +
                     " is not a rank of this group of " + std::to_string(size_));
  check_agreement(t, "broadcast");
  if (size_ > 1)
    broadcast_impl(t.raw_data(), static_cast<std::size_t>(t.numel()) * element_size(t.dtype()),
                   root);
}

void ProcessGroup::all_reduce(Tensor& t, ReduceOp op) {
  check_cpu(t, "all_reduce");
  if (t.dtype() == DType::boolean)
    throw DTypeError("ProcessGroup::all_reduce: bool tensors cannot be reduced (convert to int64)");
  if (op == ReduceOp::mean && !is_floating(t.dtype()))
    throw DTypeError("ProcessGroup::all_reduce: mean needs a floating tensor, got " +
                     to_string(t.dtype()));
  check_agreement(t, "all_reduce");
  all_reduce_async(t, op)->wait();
}

std::unique_ptr<Work> ProcessGroup::all_reduce_async(Tensor& t, ReduceOp op) {
  check_cpu(t, "all_reduce_async");
  const ReduceOp base = op == ReduceOp::mean ? ReduceOp::sum : op;
  std::unique_ptr<Work> work =
      size_ > 1 ? all_reduce_impl(t.raw_data(), t.numel(), t.dtype(), base) : nullptr;
  // The mean divides once the sum is complete; the wrapper does it on completion.
  struct Finishing : Work {
    std::unique_ptr<Work> inner;
    Tensor tensor;
    double divide_by;
    bool done = false;
    bool test() override {
      if (!done && (!inner || inner->test())) finish();
      return done;
    }
    void wait() override {
      if (done) return;
      if (inner) inner->wait();
      finish();
    }
    void finish() {
      if (divide_by != 1.0) {
        NoGradGuard no_grad;
        tensor.mul_(1.0 / divide_by);
      }
      done = true;
    }
  };
  auto out = std::make_unique<Finishing>();
  out->inner = std::move(work);
  out->tensor = t;
  out->divide_by = op == ReduceOp::mean ? static_cast<double>(size_) : 1.0;
  return out;
}

std::vector<Tensor> ProcessGroup::all_gather(const Tensor& t) {
  check_cpu(t, "all_gather");
  check_agreement(t, "all_gather");
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
  Tensor gathered = empty(
      [&] {
        Shape s{size_};
        s.insert(s.end(), t.shape().begin(), t.shape().end());
        return s;
      }(),
      t.dtype());
  if (size_ == 1)
    std::memcpy(gathered.raw_data(), t.raw_data(), bytes);
  else
    all_gather_impl(t.raw_data(), bytes, gathered.raw_data());
  std::vector<Tensor> out;
  for (int r = 0; r < size_; ++r) out.push_back(gathered.select(0, r));
  return out;
}

namespace {

// Rank 0 of 1: every collective is the identity.
class SingleProcessGroup final : public ProcessGroup {
 public:
  SingleProcessGroup() : ProcessGroup(0, 1, "single") {}

 protected:
  void barrier_impl() override {}
  void broadcast_impl(void*, std::size_t, int) override {}
  std::unique_ptr<Work> all_reduce_impl(void*, std::int64_t, DType, ReduceOp) override {
    return nullptr;  // not reached: size() == 1 never calls the backend
  }
  void all_gather_impl(const void* in, std::size_t bytes, void* out) override {
    std::memcpy(out, in, bytes);
  }
};

std::unique_ptr<ProcessGroup> make_world() {
  if (!launched_by_mpi()) return std::make_unique<SingleProcessGroup>();
  std::vector<std::string> tried;
  const headgrad::detail::PluginSpec spec{
      kMpiBackendLibrary,    "HEADGRAD_MPI_BACKEND", kMpiBackendAbiSymbol,   kMpiBackendSymbol,
      kMpiBackendAbiVersion, "MPI backend",          /*global_symbols=*/true};
  void* make = headgrad::detail::load_plugin(spec, tried);
  std::string why;
  if (make != nullptr) {
    ProcessGroup* group = reinterpret_cast<MakeMpiProcessGroup>(make)(&why);
    if (group != nullptr) return std::unique_ptr<ProcessGroup>(group);
  } else {
    why = "the MPI backend library " + std::string(kMpiBackendLibrary) + " could not be loaded (";
    for (std::size_t i = 0; i < tried.size(); ++i) why += (i ? "; " : "") + tried[i];
    why += "); build headgrad with Open MPI installed (libopenmpi-dev; scripts/setup.sh does)";
  }
  throw DistributedError("distributed::world: this process was started by an MPI launcher, but " +
                         why);
}

}  // namespace

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return true;
  return false;
}

ProcessGroup& world() {
  static std::once_flag once;
  static std::unique_ptr<ProcessGroup> group;
  std::call_once(once, [] { group = make_world(); });
  return *group;
}

}  // namespace headgrad::distributed
