#include "opscope/compiler/compile_cuda.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "opscope/compiler/cache.h"
#include "opscope/compiler/hash.h"
#include "opscope/compiler/nvrtc.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kManifestVersion = 1;  // the CPU artifacts' manifest format, with device "cuda"
std::atomic<uint64_t> g_counter{0};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string unique_suffix() { return fmt::format("{}-{}", ::getpid(), g_counter.fetch_add(1)); }

json launch_json(const CudaLaunch& l) {
  return {{"form", cuda_form_name(l.form)}, {"block", l.block},   {"grid", l.grid()},
          {"units", l.units},               {"units_per_block", l.units_per_block},
          {"vector", l.vector},             {"shared_bytes", l.shared_bytes}};
}

// A file of the entry checked against its recorded size and hash.
std::string read_checked(const std::string& dir, const json& m, const char* key, std::string& bytes) {
  std::string file = m.at(key).get<std::string>();
  if (!read_file(dir + "/" + file, bytes)) return file + " is missing";
  if (int64_t(bytes.size()) != m.at(std::string(key) + "_bytes").get<int64_t>() ||
      hex64(fnv1a64(bytes)) != m.at(std::string(key) + "_fnv").get<std::string>())
    return file + " does not match its manifest (partly written or changed)";
  return "";
}

// Reads and checks an entry; on success fills the files of `a`.
std::string try_load(const std::string& dir, const std::string& hash, const std::vector<CudaKernel>& kernels,
                     CudaArtifact& a) {
  auto t0 = std::chrono::steady_clock::now();
  std::string text;
  if (!read_file(dir + "/manifest.json", text)) {
    std::error_code ec;
    return fs::exists(dir, ec) ? "manifest.json is missing" : "missing";
  }
  try {
    json m = json::parse(text);
    if (m.value("format", "") != "opscope-artifact" || m.value("version", 0) != kManifestVersion ||
        m.value("device", "") != "cuda")
      return "manifest.json has an unknown format";
    if (m.value("hash", "") != hash) return "manifest.json is for another hash";
    std::set<std::string> have, want;
    for (auto& k : m.at("kernels")) have.insert(k.at("symbol").get<std::string>());
    for (auto& k : kernels) want.insert(k.symbol);
    if (have != want) return "manifest.json lists other kernels";
    std::string ptx, cubin;
    if (std::string why = read_checked(dir, m, "ptx", ptx); !why.empty()) return why;
    if (m.contains("cubin") && !m["cubin"].is_null())
      if (std::string why = read_checked(dir, m, "cubin", cubin); !why.empty()) return why;
    if (is_real_arch(a.arch) && cubin.empty()) return "the cubin is missing";
    a.dir = dir;
    a.source_path = dir + "/kernels.cu";
    a.ptx_path = dir + "/" + m["ptx"].get<std::string>();
    a.cubin_path = cubin.empty() ? "" : dir + "/" + m["cubin"].get<std::string>();
    a.ptx = std::move(ptx);
    a.cubin = std::move(cubin);
    a.load_ms = ms_since(t0);
    return "";
  } catch (const std::exception& e) {
    return std::string("manifest.json is not valid (") + e.what() + ")";
  }
}

// The kernel whose function holds line `line` of `source` ("" in the prelude).
std::string kernel_at_line(const std::string& source, const std::vector<CudaKernel>& kernels, int line) {
  std::string best;
  int best_line = 0;
  for (const CudaKernel& k : kernels) {
    size_t at = source.find(" " + k.symbol + "(");
    if (at == std::string::npos) continue;
    int l = 1 + int(std::count(source.begin(), source.begin() + std::ptrdiff_t(at), '\n'));
    if (l <= line && l > best_line) {
      best = k.name;
      best_line = l;
    }
  }
  return best;
}

// The first lines of the log with an error, and the line number of the first error.
std::string log_head(const std::string& log, int lines, int* error_line) {
  static const std::regex where(R"(\((\d+)\): (catastrophic )?error)");
  std::istringstream in(log);
  std::string line, out;
  int n = 0;
  *error_line = -1;
  while (std::getline(in, line)) {
    std::smatch m;
    if (*error_line < 0 && std::regex_search(line, m, where)) *error_line = std::stoi(m[1].str());
    if (line.empty() || n >= lines) continue;
    out += (n ? "\n  " : "") + line;
    ++n;
  }
  return out.empty() ? "(NVRTC wrote no log)" : out;
}

CudaArtifact compile_impl(const std::string& source, const std::vector<CudaKernel>& kernels,
                          const std::vector<json>& extra, const CudaCompileOptions& opts) {
  check_cuda_arch(opts.arch);
  if (!nvrtc_available()) fail("nvrtc", "{}: this build has no CUDA toolkit (CMake did not find it)", opts.name);
  CudaArtifact a;
  a.arch = opts.arch;
  a.nvrtc_version = nvrtc_version();
  a.kernels = kernels;
  std::vector<std::string> options = nvrtc_options(opts.arch);
  std::string launches;
  for (const CudaKernel& k : kernels) launches += k.symbol + " " + k.launch.str() + "\n";
  std::string key = fmt::format("opscope-cuda v{}\narch: {}\nnvrtc: {}\noptions: {}\nlaunch:\n{}{}", kCudaCodegenVersion,
                                opts.arch, a.nvrtc_version, fmt::join(options, " "), launches, source);
  a.hash = hex64(fnv1a64(key));
  std::string root = cache_root(opts.cache_dir);
  std::string dir = root + "/" + a.hash;

  std::string why = try_load(dir, a.hash, kernels, a);
  if (why.empty()) {
    a.hit = true;
    return a;
  }
  std::error_code ec;
  fs::create_directories(root + "/.locks", ec);
  if (ec) fail("nvrtc", "cannot create the cache folder {} ({})", root, ec.message());
  FileLock lock(root + "/.locks/" + a.hash + ".lock", "nvrtc");
  why = try_load(dir, a.hash, kernels, a);  // another process may have built it meanwhile
  if (why.empty()) {
    a.hit = true;
    return a;
  }
  if (why != "missing") {
    a.damage = why;
    std::string trash = root + "/.trash-" + a.hash + "-" + unique_suffix();
    fs::rename(dir, trash, ec);
    remove_quietly(ec ? dir : trash);
  }

  std::string tmp = root + "/.tmp-" + a.hash + "-" + unique_suffix();
  fs::create_directories(tmp, ec);
  if (ec) fail("nvrtc", "cannot create {} ({})", tmp, ec.message());
  try {
    write_atomic(tmp + "/kernels.cu", source);
    NvrtcOutput out = nvrtc_compile(source, "kernels.cu", opts.arch);
    a.compile_ms = out.ms;
    json ks = json::array();
    for (size_t i = 0; i < kernels.size(); ++i) {
      json k = i < extra.size() && extra[i].is_object() ? extra[i] : json::object();
      k["name"] = kernels[i].name;
      k["symbol"] = kernels[i].symbol;
      k["launch"] = launch_json(kernels[i].launch);
      k["inputs"] = kernels[i].num_inputs;
      k["outputs"] = kernels[i].num_outputs;
      ks.push_back(std::move(k));
    }
    json m = {{"format", "opscope-artifact"}, {"version", kManifestVersion}, {"device", "cuda"},
              {"hash", a.hash},               {"name", opts.name},          {"created", iso_now()},
              {"source", "kernels.cu"},       {"arch", opts.arch},          {"codegen_version", kCudaCodegenVersion},
              {"kernels", ks}};
    m["nvrtc"] = {{"version", a.nvrtc_version}, {"options", options}, {"ms", out.ms}, {"ok", out.ok}};
    if (!out.ok) {
      std::string failed = root + "/failed-" + a.hash;
      remove_quietly(failed);
      write_atomic(tmp + "/nvrtc.log", out.log);
      m["nvrtc_log"] = "nvrtc.log";
      write_atomic(tmp + "/manifest.json", m.dump(2) + "\n");
      fs::rename(tmp, failed, ec);
      std::string where = ec ? tmp : failed;
      int line = -1;
      std::string head = log_head(out.log, 8, &line);
      std::string kernel = line > 0 ? kernel_at_line(source, kernels, line) : "";
      if (kernel.empty()) kernel = opts.name;
      fail("nvrtc", "{}: compile failed for {}: {}\n  (CUDA device code; source: {}/kernels.cu, full log: {}/nvrtc.log)",
           kernel, opts.arch, head, where, where);
    }
    if (!out.log.empty()) m["nvrtc"]["log"] = out.log;  // warnings
    write_atomic(tmp + "/kernels.ptx", out.ptx);
    m["ptx"] = "kernels.ptx";
    m["ptx_bytes"] = int64_t(out.ptx.size());
    m["ptx_fnv"] = hex64(fnv1a64(out.ptx));
    if (!out.cubin.empty()) {
      write_atomic(tmp + "/kernels.cubin", out.cubin);
      m["cubin"] = "kernels.cubin";
      m["cubin_bytes"] = int64_t(out.cubin.size());
      m["cubin_fnv"] = hex64(fnv1a64(out.cubin));
    } else {
      m["cubin"] = nullptr;
    }
    // What `opscope cache ls` checks in every entry: the loadable file.
    const std::string& lib = out.cubin.empty() ? out.ptx : out.cubin;
    m["library"] = out.cubin.empty() ? "kernels.ptx" : "kernels.cubin";
    m["library_bytes"] = int64_t(lib.size());
    m["library_fnv"] = hex64(fnv1a64(lib));
    write_atomic(tmp + "/manifest.json", m.dump(2) + "\n");
    if (::rename(tmp.c_str(), dir.c_str()) != 0) remove_quietly(tmp);  // someone else's entry won: use it
  } catch (...) {
    std::error_code ec2;
    if (fs::exists(tmp, ec2)) remove_quietly(tmp);
    throw;
  }
  double compile_ms = a.compile_ms;
  std::string damage = a.damage;
  why = try_load(dir, a.hash, kernels, a);
  if (!why.empty()) fail("nvrtc", "{}: the freshly built entry {} does not load: {}", opts.name, dir, why);
  a.hit = false;
  a.compile_ms = compile_ms;
  a.damage = damage;
  return a;
}

}  // namespace

CudaArtifact compile_cuda_source(const std::string& source, const std::vector<CudaKernel>& kernels,
                                 const CudaCompileOptions& opts) {
  return compile_impl(source, kernels, {}, opts);
}

CudaArtifact compile_cuda_kernels(const std::vector<const FusedKernel*>& fused, const CudaCompileOptions& opts) {
  if (fused.empty()) fail("nvrtc", "{}: no kernels to compile", opts.name);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<CudaKernel> kernels;
  std::vector<json> extra;
  for (const FusedKernel* k : fused) {
    kernels.push_back(generate_cuda_kernel(*k));
    std::vector<std::string> ops;
    for (const Node& n : k->body.nodes)
      if (n.kind != OpKind::input && n.kind != OpKind::constant) ops.push_back(op_name(n.kind));
    extra.push_back({{"ops", ops}, {"domain", k->domain.vec()}, {"rows", k->rows}, {"cols", k->cols},
                     {"passes", k->passes}});
  }
  std::string source = generate_cuda_library(kernels);
  double codegen_ms = ms_since(t0);
  CudaArtifact a = compile_impl(source, kernels, extra, opts);
  a.codegen_ms = codegen_ms;
  return a;
}

CudaArtifact compile_cuda_kernels(const Graph& compiled, const CudaCompileOptions& opts) {
  std::vector<const FusedKernel*> ks;
  for (const Node& n : compiled.nodes)
    if (n.kind == OpKind::fused && n.attrs.kernel) ks.push_back(n.attrs.kernel.get());
  if (ks.empty()) fail("nvrtc", "{}: the graph has no fused kernels (run the passes first)", opts.name);
  return compile_cuda_kernels(ks, opts);
}

}  // namespace opscope::compiler
