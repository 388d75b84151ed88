// Writes the generated part of the fuzz targets' seed corpora under DIR/<target>/
// (scripts/fuzz.sh adds fuzz/corpus/ and the import tests' traces):
//   saved_profile  the explorer's synthetic profiles (the shape of real captures: RMSNorm
//                  naive, built-in and compiled, training steps) saved as opscope saves
//                  them, profile.db and trace.json each a seed
//   kineto_json    those trace.json files too, and the quirks too big to keep as files:
//                  deep nesting, a 100 kB name
//   safetensors    files with every dtype, metadata, an empty and a 0-dim tensor
//   opscope-fuzz-seeds DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "opscope/explorer/synthetic.h"
#include "opscope/models/safetensors.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/tensor.h"

namespace fs = std::filesystem;
using namespace opscope;

namespace {

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

void saved_profiles(const fs::path& out) {
  struct Named {
    const char* name;
    prof::Trace trace;
  };
  explorer::SyntheticSpec steps;
  steps.events = 300;
  steps.threads = 2;
  steps.cores = 2;
  Named traces[] = {{"naive", explorer::synthetic_rmsnorm("naive", 4, 64, 2, 2)},
                    {"builtin", explorer::synthetic_rmsnorm("builtin", 4, 64, 1, 2)},
                    {"compiled", explorer::synthetic_rmsnorm("compiled", 4, 64, 1, 2)},
                    {"steps", explorer::synthetic_trace(steps)}};
  fs::path tmp = out / ".saved";
  for (const Named& n : traces) {
    prof::export_profile(n.trace, (tmp / n.name).string());
    fs::copy_file(tmp / n.name / prof::kProfileDbFile, out / "saved_profile" / (std::string(n.name) + ".db"),
                  fs::copy_options::overwrite_existing);
    for (const char* target : {"saved_profile", "kineto_json"})
      fs::copy_file(tmp / n.name / prof::kTraceJsonFile, out / target / (std::string(n.name) + ".trace.json"),
                    fs::copy_options::overwrite_existing);
  }
  fs::remove_all(tmp);
}

void kineto_quirks(const fs::path& out) {
  const std::string op = R"({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2, )";
  // Nesting deeper than any parser's limit, in an event's args and as an event.
  std::string deep = R"({"traceEvents": [)" + op + R"("name": "aten::cat", "args": {"Input Dims": )";
  deep += std::string(5000, '[') + std::string(5000, ']') + "}}, " + std::string(3000, '{') + "\"a\": 1" +
          std::string(3000, '}') + "]}";
  write(out / "kineto_json" / "deep_nesting.json", deep);
  // A 100 kB op name (generated code's names, a whole module's repr), and one in the args.
  std::string name(100 * 1024, 'n');
  write(out / "kineto_json" / "name_100kB.json",
        R"({"traceEvents": [)" + op + R"("name": ")" + name + R"("}, )" + op + R"("name": "b", "args": {"name": ")" +
            name + R"("}}]})");
}

void safetensors(const fs::path& out) {
  fs::create_directories(out / "safetensors");
  Tensor f32 = from_host({1.5f, -2, 3, 4, 5, 6}, {2, 3});
  Tensor bf16 = from_host({1, 2, 3, 4}, {4}, DType::bf16);
  Tensor f16 = from_host({0.5f}, {}, DType::f16);
  Tensor i64 = from_host_i64({-5, 0, int64_t(1) << 40}, {3, 1});
  Tensor i32 = from_host_i64({-7, 123456789}, {2}).to(DType::i32);
  Tensor empty = from_host({}, {0, 3});
  models::save_safetensors((out / "safetensors" / "all_dtypes.safetensors").string(),
                           {{"f32", f32}, {"bf16", bf16}, {"f16", f16}, {"i64", i64}, {"i32", i32}, {"empty", empty}},
                           {{"format", "pt"}, {"note", "naïve \"quoted\""}});
  models::save_safetensors((out / "safetensors" / "one.safetensors").string(), {{"model.norm.weight", f32}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: opscope-fuzz-seeds DIR\n";
    return 2;
  }
  fs::path out = argv[1];
  try {
    for (const char* target : {"saved_profile", "kineto_json", "safetensors"}) fs::create_directories(out / target);
    saved_profiles(out);
    kineto_quirks(out);
    safetensors(out);
  } catch (const std::exception& e) {
    std::cerr << "opscope-fuzz-seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
