// Single-threaded GEMM comparison: OpenBLAS vs oneDNN vs BLIS vs libxsmm on the exact GEMM
// shapes of one training step of the toy GPT in bench/side_by_side/gemm_floor.cpp
// (batch 32, context 64, d 128, heads 4, ff 512, layers 2, vocab 64; rows = 2048).
//
// Every GEMM is row-major C(m,n) = op(A)(m,k) @ op(B)(k,n), alpha 1, beta 0, float32, with
// tight leading dimensions. Per shape, each library computes C from the same random A and B;
// its result must equal OpenBLAS's (max|C - C_openblas| <= 1e-4 * max|C_openblas|) or the
// program exits 1. Then every library runs the shape's `count` calls once as warm-up, and the
// libraries alternate round-robin (starting library rotated each round) for --rounds rounds;
// the median over rounds is reported. A shape's step time is the time of its `count` calls; the
// whole step is the sum over shapes. Ratio = library time / OpenBLAS time (< 1: faster).
//
// Libraries and entry points (all handed one thread):
//   OpenBLAS       cblas_sgemm (linked, -lopenblas)
//   oneDNN sgemm   dnnl_sgemm (row-major C API)
//   oneDNN matmul  one dnnl::matmul primitive per shape, created before timing (as a
//                  framework would cache it), executed with a prebuilt argument map
//   BLIS           bli_sgemm (typed API, op() expressed through row/column strides); libblis is
//                  dlopen'ed RTLD_LOCAL so its cblas_sgemm/sgemm_ cannot shadow OpenBLAS's
//   libxsmm        shapes with m*n*k <= LIBXSMM_MAX_MNK (the attention ones): a JIT kernel from
//                  libxsmm_smmdispatch ("jit"); for the q k^T / do v^T shapes libxsmm 1.17
//                  cannot JIT a transposed first column-major operand, so B is transposed with
//                  libxsmm_otrans each call and the NN kernel is used ("otrans+jit"). Larger
//                  shapes: libxsmm_sgemm, which forwards them to the linked BLAS sgemm_, i.e.
//                  OpenBLAS ("sgemm->BLAS").
//
// Run: bash bench/blas_libraries/run.sh   (installs packages, builds with g++, pins to a core;
// it also explains OPENBLAS_CORETYPE / BLIS_ARCH_TYPE, which decide the kernels used)
// Options: --rounds N (default 7), --min-ms T (a sample repeats the count calls until the
// OpenBLAS warm-up reaches T ms, default 10), --probe (run one oneDNN matmul and exit; used with
// DNNL_VERBOSE=1 to print oneDNN's detected ISA).
#include <cblas.h>
#include <dlfcn.h>
#include <libxsmm.h>

#include <blis.h>  // types and prototypes only; symbols come from dlopen
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Shape {
  std::string name;
  bool ta, tb;
  int m, n, k, count;
  double flops() const { return 2.0 * m * n * k; }
  // Tight row-major leading dimensions of A, B and C.
  int lda() const { return ta ? m : k; }
  int ldb() const { return tb ? k : n; }
  int ldc() const { return n; }
};

std::vector<Shape> gpt_step_shapes() {
  const int batch = 32, context = 64, d = 128, heads = 4, ff = 512, layers = 2, vocab = 64;
  const int rows = batch * context, head_dim = d / heads, per_pairs = layers * batch * heads;
  std::vector<Shape> s;
  auto linear = [&](const std::string& nm, int in, int out, int count) {
    s.push_back({nm + " fwd", false, true, rows, out, in, count});
    s.push_back({nm + " dx", false, false, rows, in, out, count});
    s.push_back({nm + " dW", true, false, out, in, rows, count});
  };
  linear("in_proj", d, 3 * d, layers);
  linear("out_proj", d, d, layers);
  linear("ff_in", d, ff, layers);
  linear("ff_out", ff, d, layers);
  linear("head", d, vocab, 1);
  s.push_back({"attn q k^T", false, true, context, context, head_dim, per_pairs});
  s.push_back({"attn P v", false, false, context, head_dim, context, per_pairs});
  s.push_back({"attn do v^T", false, true, context, context, head_dim, per_pairs});
  s.push_back({"attn P^T do", true, false, context, head_dim, context, per_pairs});
  s.push_back({"attn dS k", false, false, context, head_dim, context, per_pairs});
  s.push_back({"attn dS^T q", true, false, context, head_dim, context, per_pairs});
  return s;
}

struct AlignedBuf {  // 64-byte aligned float buffer
  float* p;
  explicit AlignedBuf(std::size_t n)
      : p(static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64))) {}
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf&) = delete;
  AlignedBuf& operator=(const AlignedBuf&) = delete;
};

// BLIS, resolved from a privately loaded libblis.
struct Blis {
  decltype(&bli_sgemm) sgemm = nullptr;
  std::string version, arch;
  void load() {
    void* h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "FAIL: cannot dlopen libblis.so.4: %s\n", dlerror());
      std::exit(1);
    }
    auto sym = [&](const char* name) {
      void* f = dlsym(h, name);
      if (!f) {
        std::fprintf(stderr, "FAIL: libblis lacks %s\n", name);
        std::exit(1);
      }
      return f;
    };
    reinterpret_cast<decltype(&bli_init)>(sym("bli_init"))();  // before any arch query
    reinterpret_cast<decltype(&bli_thread_set_num_threads)>(sym("bli_thread_set_num_threads"))(1);
    sgemm = reinterpret_cast<decltype(&bli_sgemm)>(sym("bli_sgemm"));
    version =
        reinterpret_cast<decltype(&bli_info_get_version_str)>(sym("bli_info_get_version_str"))();
    auto query = reinterpret_cast<decltype(&bli_arch_query_id)>(sym("bli_arch_query_id"));
    arch = reinterpret_cast<decltype(&bli_arch_string)>(sym("bli_arch_string"))(query());
  }
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, family, mod;
  while (std::getline(in, line)) {
    auto val = [&] { return line.substr(line.find(':') + 2); };
    if (model.empty() && line.rfind("model name", 0) == 0) model = val();
    if (family.empty() && line.rfind("cpu family", 0) == 0) family = val();
    if (mod.empty() && line.rfind("model\t", 0) == 0) mod = val();
  }
  return model + " (cpu family " + family + ", model " + mod + ")";
}

std::string dnnl_isa_name(dnnl_cpu_isa_t isa) {
  const std::pair<dnnl_cpu_isa_t, const char*> names[] = {
      {dnnl_cpu_isa_sse41, "sse41"},
      {dnnl_cpu_isa_avx, "avx"},
      {dnnl_cpu_isa_avx2, "avx2"},
      {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
      {dnnl_cpu_isa_avx512_core, "avx512_core"},
      {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
      {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
      {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"}};
  for (const auto& [value, name] : names)
    if (value == isa) return name;
  return "code " + std::to_string(int(isa));
}

std::string lib_of(const char* symbol) {
  Dl_info info{};
  void* f = dlsym(RTLD_DEFAULT, symbol);
  if (!f || !dladdr(f, &info) || !info.dli_fname) return "unresolved";
  return info.dli_fname;
}

const char* env_or(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

const char* kLibs[] = {"OpenBLAS", "oneDNN sgemm", "oneDNN matmul", "BLIS", "libxsmm"};
constexpr int kNumLibs = 5;

struct Result {
  Shape shape;
  double ms[kNumLibs];   // median time of the shape's `count` calls
  double err[kNumLibs];  // max|C - C_openblas| / max|C_openblas|
  std::string dnnl_impl, xsmm_path;
};

// The command-line options.
struct Options {
  int rounds = 7;
  double min_ms = 10.0;
  bool probe = false;
};

// Reads the command line into `o`; false (the usage printed) on anything it does not know.
bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc)
      o.rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-ms") && i + 1 < argc)
      o.min_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--probe"))
      o.probe = true;
    else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--min-ms T] [--probe]\n", argv[0]);
      return false;
    }
  }
  if (o.rounds < 1) o.rounds = 1;
  return true;
}

// BLIS, loaded (before oneDNN's engine is made).
Blis loaded_blis() {
  Blis blis;
  blis.load();
  return blis;
}

// The libraries' state every shape uses: BLIS's entry point, oneDNN's engine and stream.
struct Libraries {
  Blis blis = loaded_blis();
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// Runs one oneDNN matmul on `s` and waits for it: what DNNL_VERBOSE=1 reports on.
void probe_matmul(const Shape& s, Libraries& libs) {
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc a({s.m, s.k}, dnnl::memory::data_type::f32, tag::ab);
  dnnl::memory::desc b({s.k, s.n}, dnnl::memory::data_type::f32, tag::ba);
  dnnl::memory::desc c({s.m, s.n}, dnnl::memory::data_type::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), libs.eng);
  dnnl::memory am(a, libs.eng), bm(b, libs.eng), cm(c, libs.eng);
  dnnl::matmul(pd).execute(libs.strm,
                           {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  libs.strm.wait();
}

// Prints the report's title and the CPU, the libraries, the threads and the method.
void print_header(const Options& o, const Blis& blis) {
  const dnnl_version_t* dv = dnnl_version();
  std::printf("## Single-threaded GEMM libraries on one toy-GPT training step\n\n");
  std::printf("- CPU: %s\n", cpu_model().c_str());
  std::printf("- OpenBLAS: %s; core `%s`; cblas_sgemm from %s; sgemm_ from %s\n",
              openblas_get_config(), openblas_get_corename(), lib_of("cblas_sgemm").c_str(),
              lib_of("sgemm_").c_str());
  std::printf("- oneDNN: %d.%d.%d (%s), CPU runtime %s, effective ISA %s\n", dv->major, dv->minor,
              dv->patch, dv->hash, dv->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other",
              dnnl_isa_name(dnnl_get_effective_cpu_isa()).c_str());
  std::printf("- BLIS: %s, sub-configuration `%s` (dlopen'ed privately)\n", blis.version.c_str(),
              blis.arch.c_str());
  std::printf("- libxsmm: %s, JIT target `%s`, LIBXSMM_MAX_MNK %d\n", LIBXSMM_VERSION,
              libxsmm_get_target_arch(), LIBXSMM_MAX_MNK);
  std::printf("- threads: OPENBLAS_NUM_THREADS=%s OMP_NUM_THREADS=%s BLIS_NUM_THREADS=%s\n",
              env_or("OPENBLAS_NUM_THREADS"), env_or("OMP_NUM_THREADS"),
              env_or("BLIS_NUM_THREADS"));
  std::printf(
      "- method: per shape, warm-up then %d round-robin rounds, median; a sample repeats "
      "the shape's calls until >= %.0f ms\n\n",
      o.rounds, o.min_ms);
  std::fflush(stdout);
}

// The state of the whole measurement: the options, the libraries, the random source of
// every shape's operands, and whether every library agreed with OpenBLAS so far.
struct Bench {
  const Options& options;
  Libraries& libs;
  std::mt19937 rng{12345};
  std::uniform_real_distribution<float> dist{-1.0f, 1.0f};
  bool ok = true;
};

// One shape's operands: random A and B, scratch for B's transpose, and each library's C.
struct Operands {
  const std::size_t a_n, b_n, c_n;
  AlignedBuf A, B, Bt, C0, C1, C2, C3, C4;
  float* C[kNumLibs];
  Operands(const Shape& s, Bench& bench)
      : a_n(std::size_t(s.m) * s.k),
        b_n(std::size_t(s.k) * s.n),
        c_n(std::size_t(s.m) * s.n),
        A(a_n),
        B(b_n),
        Bt(b_n),
        C0(c_n),
        C1(c_n),
        C2(c_n),
        C3(c_n),
        C4(c_n),
        C{C0.p, C1.p, C2.p, C3.p, C4.p} {
    for (std::size_t i = 0; i < a_n; ++i) A.p[i] = bench.dist(bench.rng);
    for (std::size_t i = 0; i < b_n; ++i) B.p[i] = bench.dist(bench.rng);
  }
};

// A shape's oneDNN matmul primitive, created once before timing (as a framework would cache
// it), and its prebuilt argument map on the operands (C: op.C[2]).
struct DnnlMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul mm;
  std::unordered_map<int, dnnl::memory> args;
};

// Creates the oneDNN matmul primitive of `s` on the operands.
DnnlMatmul make_matmul(const Shape& s, const dnnl::engine& eng, Operands& op) {
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  dnnl::memory::desc a_md({s.m, s.k}, f32, s.ta ? tag::ba : tag::ab);
  dnnl::memory::desc b_md({s.k, s.n}, f32, s.tb ? tag::ba : tag::ab);
  dnnl::memory::desc c_md({s.m, s.n}, f32, tag::ab);
  dnnl::matmul::primitive_desc mm_pd(dnnl::matmul::desc(a_md, b_md, c_md), eng);
  return {mm_pd,
          dnnl::matmul(mm_pd),
          {{DNNL_ARG_SRC, dnnl::memory(a_md, eng, op.A.p)},
           {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, eng, op.B.p)},
           {DNNL_ARG_DST, dnnl::memory(c_md, eng, op.C[2])}}};
}

// libxsmm's route for a shape (see the header comment): a JIT kernel, with B transposed each
// call where libxsmm cannot JIT the transposed operand, or none (libxsmm_sgemm).
struct XsmmKernel {
  libxsmm_smmfunction kernel = nullptr;
  bool pre_transpose = false;
  const char* path() const {
    return kernel ? (pre_transpose ? "otrans+jit" : "jit") : "sgemm->BLAS";
  }
};

// Dispatches libxsmm's JIT kernel for `s` where it is small enough.
XsmmKernel xsmm_kernel(const Shape& s) {
  // Column-major view, C^T(n,m) = op(B)^T-side first: first operand B, second A.
  const libxsmm_blasint xm = s.n, xn = s.m, xk = s.k;
  const float one = 1.0f, zero = 0.0f;
  const int prefetch = LIBXSMM_PREFETCH_NONE;
  XsmmKernel x;
  if (double(s.m) * s.n * s.k <= LIBXSMM_MAX_MNK) {
    int flags = (s.tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (s.ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    libxsmm_blasint xlda = s.ldb(), xldb = s.lda(), xldc = s.ldc();
    x.kernel = libxsmm_smmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, &one, &zero, &flags, &prefetch);
    if (!x.kernel && s.tb) {  // transpose B (n,k) -> Bt (k,n) per call, then an NN-side kernel
      flags &= ~LIBXSMM_GEMM_FLAG_TRANS_A;
      xlda = s.n;
      x.kernel =
          libxsmm_smmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, &one, &zero, &flags, &prefetch);
      x.pre_transpose = x.kernel != nullptr;
    }
  }
  return x;
}

// Each library's call computing C = op(A) op(B) of one shape, in kLibs' order.
using Calls = std::array<std::function<void()>, kNumLibs>;

// OpenBLAS's cblas_sgemm into op.C[0].
std::function<void()> openblas_call(const Shape& s, const Operands& op) {
  const int lda = s.lda(), ldb = s.ldb(), ldc = s.ldc();
  const float* a = op.A.p;
  const float* b = op.B.p;
  float* c = op.C[0];
  return [=] {
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  };
}

// oneDNN's dnnl_sgemm into op.C[1]; exits 1 when it reports an error.
std::function<void()> dnnl_sgemm_call(const Shape& s, const Operands& op) {
  const int lda = s.lda(), ldb = s.ldb(), ldc = s.ldc();
  const float* a = op.A.p;
  const float* b = op.B.p;
  float* c = op.C[1];
  return [=] {
    if (dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c,
                   ldc) != dnnl_success) {
      std::fprintf(stderr, "FAIL: dnnl_sgemm returned an error on %s\n", s.name.c_str());
      std::exit(1);
    }
  };
}

// BLIS's bli_sgemm into op.C[3], op() expressed through strides.
std::function<void()> blis_call(const Shape& s, const Operands& op, const Blis& blis) {
  const int lda = s.lda(), ldb = s.ldb(), ldc = s.ldc();
  const float* a = op.A.p;
  const float* b = op.B.p;
  float* c = op.C[3];
  return [=, &blis] {
    float alpha = 1.0f, beta = 0.0f;
    // op(A)(i,p) and op(B)(p,j) through strides: no BLIS transpose flags needed.
    blis.sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s.m, s.n, s.k, &alpha, const_cast<float*>(a),
               s.ta ? 1 : lda, s.ta ? lda : 1, const_cast<float*>(b), s.tb ? 1 : ldb,
               s.tb ? ldb : 1, &beta, c, ldc, 1);
  };
}

// libxsmm into op.C[4]: the JIT kernel (B transposed first where needed), else libxsmm_sgemm.
std::function<void()> xsmm_call(const Shape& s, const Operands& op, const XsmmKernel& x) {
  const int lda = s.lda(), ldb = s.ldb(), ldc = s.ldc();
  const libxsmm_blasint xm = s.n, xn = s.m, xk = s.k;
  const float one = 1.0f, zero = 0.0f;
  const float* a = op.A.p;
  const float* b = op.B.p;
  float* bt = op.Bt.p;
  float* c = op.C[4];
  const libxsmm_smmfunction kernel = x.kernel;
  const bool pre_transpose = x.pre_transpose;
  return [=] {
    if (kernel) {
      if (pre_transpose) libxsmm_otrans(bt, b, sizeof(float), s.k, s.n, s.k, s.n);
      kernel(pre_transpose ? bt : b, a, c);
    } else {
      const char xta = s.tb ? 'T' : 'N', xtb = s.ta ? 'T' : 'N';
      const libxsmm_blasint xlda = ldb, xldb = lda, xldc = ldc;
      libxsmm_sgemm(&xta, &xtb, &xm, &xn, &xk, &one, b, &xlda, a, &xldb, &zero, c, &xldc);
    }
  };
}

// Runs every library once on NaN-filled C and records each one's max|C - C_openblas| /
// max|C_openblas| in r.err; a difference above 1e-4 is reported and clears bench.ok.
void check_against_openblas(Result& r, const Operands& op, const Calls& run, Bench& bench) {
  const Shape& s = r.shape;
  const float* const* C = op.C;
  for (int l = 0; l < kNumLibs; ++l) {
    std::fill(op.C[l], op.C[l] + op.c_n, std::nanf(""));
    run[l]();
  }
  bench.libs.strm.wait();
  double ref_max = 0.0;
  for (std::size_t i = 0; i < op.c_n; ++i) ref_max = std::max(ref_max, double(std::fabs(C[0][i])));
  for (int l = 1; l < kNumLibs; ++l) {
    double diff = 0.0;
    for (std::size_t i = 0; i < op.c_n; ++i) {
      const double d = std::fabs(double(C[l][i]) - double(C[0][i]));
      diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    }
    r.err[l] = diff / ref_max;
    if (!(r.err[l] <= 1e-4)) {
      std::fprintf(stderr,
                   "FAIL: %s differs from OpenBLAS on %s (%c%c m=%d n=%d k=%d): "
                   "max|diff|/max|ref| = %.3g > 1e-4\n",
                   kLibs[l], s.name.c_str(), s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k,
                   r.err[l]);
      bench.ok = false;
    }
  }
}

// Warms every library up, then times them round-robin for --rounds rounds and records each
// one's median time of the shape's `count` calls in r.ms.
void time_libraries(Result& r, const Calls& run, Bench& bench) {
  const Shape& s = r.shape;
  // Warm-up (also calibrates how many repetitions of the count calls make one sample).
  auto batch = [&](int l, int reps) {
    const double t0 = now_ms();
    for (int rep = 0; rep < reps; ++rep)
      for (int i = 0; i < s.count; ++i) run[l]();
    if (l == 2) bench.libs.strm.wait();
    return (now_ms() - t0) / reps;
  };
  for (int l = 0; l < kNumLibs; ++l) batch(l, 1);
  const double t_ref = batch(0, 1);
  const int reps = std::max(1, int(std::ceil(bench.options.min_ms / std::max(t_ref, 1e-6))));
  std::vector<double> samples[kNumLibs];
  for (int round = 0; round < bench.options.rounds; ++round)
    for (int j = 0; j < kNumLibs; ++j) {
      const int l = (round + j) % kNumLibs;
      samples[l].push_back(batch(l, reps));
    }
  for (int l = 0; l < kNumLibs; ++l) {
    std::sort(samples[l].begin(), samples[l].end());
    const std::size_t n = samples[l].size();
    r.ms[l] = n % 2 ? samples[l][n / 2] : 0.5 * (samples[l][n / 2 - 1] + samples[l][n / 2]);
  }
}

// Checks and times every library on one shape (fresh random operands).
Result measure_shape(const Shape& s, Bench& bench) {
  Operands op(s, bench);
  Result r{s, {}, {}, {}, {}};
  DnnlMatmul matmul = make_matmul(s, bench.libs.eng, op);
  r.dnnl_impl = matmul.pd.impl_info_str();
  const XsmmKernel xsmm = xsmm_kernel(s);
  r.xsmm_path = xsmm.path();
  dnnl::stream& strm = bench.libs.strm;
  const Calls run = {openblas_call(s, op), dnnl_sgemm_call(s, op),
                     [&matmul, &strm] { matmul.mm.execute(strm, matmul.args); },
                     blis_call(s, op, bench.libs.blis), xsmm_call(s, op, xsmm)};
  check_against_openblas(r, op, run, bench);
  time_libraries(r, run, bench);
  return r;
}

// Table 1: per shape, time per call and ratio to OpenBLAS.
void print_times_per_shape(const std::vector<Result>& results) {
  std::printf("### Per shape: median time per call (us), ratio to OpenBLAS in parentheses\n\n");
  std::printf("| # | GEMM | op | m | n | k | count |");
  for (const char* name : kLibs) std::printf(" %s |", name);
  std::printf(" matmul impl | libxsmm path |\n|--:|---|---|--:|--:|--:|--:|");
  for (int l = 0; l < kNumLibs; ++l) std::printf("--:|");
  std::printf("---|---|\n");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const Shape& s = r.shape;
    std::printf("| %zu | %s | %c%c | %d | %d | %d | %d |", i + 1, s.name.c_str(), s.ta ? 'T' : 'N',
                s.tb ? 'T' : 'N', s.m, s.n, s.k, s.count);
    for (int l = 0; l < kNumLibs; ++l) {
      const double us = 1e3 * r.ms[l] / s.count;
      if (l == 0)
        std::printf(" %.1f |", us);
      else
        std::printf(" %.1f (%.2f) |", us, r.ms[l] / r.ms[0]);
    }
    std::printf(" %s | %s |\n", r.dnnl_impl.c_str(), r.xsmm_path.c_str());
  }
}

// Table 2: per shape GFLOP/s.
void print_gflops_per_shape(const std::vector<Result>& results) {
  std::printf("\n### Per shape: GFLOP/s\n\n| # | GEMM |");
  for (const char* name : kLibs) std::printf(" %s |", name);
  std::printf("\n|--:|---|");
  for (int l = 0; l < kNumLibs; ++l) std::printf("--:|");
  std::printf("\n");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf("| %zu | %s |", i + 1, r.shape.name.c_str());
    for (int l = 0; l < kNumLibs; ++l)
      std::printf(" %.1f |", r.shape.flops() * r.shape.count / (r.ms[l] * 1e6));
    std::printf("\n");
  }
}

// Table 3: whole step (and its linear / attention parts).
void print_whole_step(const std::vector<Result>& results) {
  double total[kNumLibs] = {}, lin[kNumLibs] = {}, att[kNumLibs] = {}, max_err[kNumLibs] = {};
  double flops_total = 0, flops_lin = 0, flops_att = 0;
  for (const Result& r : results) {
    const bool is_att = r.shape.name.rfind("attn", 0) == 0;
    const double f = r.shape.flops() * r.shape.count;
    flops_total += f;
    (is_att ? flops_att : flops_lin) += f;
    for (int l = 0; l < kNumLibs; ++l) {
      total[l] += r.ms[l];
      (is_att ? att : lin)[l] += r.ms[l];
      max_err[l] = std::max(max_err[l], r.err[l]);
    }
  }
  std::printf(
      "\n### Whole step (sum over shapes weighted by count; %.3f GFLOP: linears %.3f, "
      "attention %.3f)\n\n",
      flops_total / 1e9, flops_lin / 1e9, flops_att / 1e9);
  std::printf(
      "| library | step ms | GFLOP/s | ratio | linears ms (ratio) | attention ms (ratio) "
      "| max rel. diff vs OpenBLAS |\n|---|--:|--:|--:|--:|--:|--:|\n");
  for (int l = 0; l < kNumLibs; ++l)
    std::printf("| %s | %.2f | %.1f | %.3f | %.2f (%.3f) | %.2f (%.3f) | %.1e |\n", kLibs[l],
                total[l], flops_total / (total[l] * 1e6), total[l] / total[0], lin[l],
                lin[l] / lin[0], att[l], att[l] / att[0], max_err[l]);
  std::printf("\nratio = time / OpenBLAS time (< 1 is faster than OpenBLAS)\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;

  openblas_set_num_threads(1);
  libxsmm_init();
  Libraries libs;
  const std::vector<Shape> shapes = gpt_step_shapes();

  if (o.probe) {  // one matmul on the first shape, for DNNL_VERBOSE
    probe_matmul(shapes[0], libs);
    return 0;
  }

  print_header(o, libs.blis);
  Bench bench{o, libs};
  std::vector<Result> results;
  for (const Shape& s : shapes) results.push_back(measure_shape(s, bench));
  if (!bench.ok) {
    std::fprintf(stderr, "FAIL: results differ from OpenBLAS (see above); no timings reported\n");
    return 1;
  }
  print_times_per_shape(results);
  print_gflops_per_shape(results);
  print_whole_step(results);
  libxsmm_finalize();
  return 0;
}
