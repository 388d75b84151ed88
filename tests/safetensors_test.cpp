// safetensors: write → read round trips, the model's save → load, and damaged files
// (truncated, bad header length, bad JSON, bad offsets, dtypes, missing or misshapen
// tensors), each an error naming the file and the tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/models/llama.h"
#include "opscope/models/safetensors.h"
#include "opscope/ops/ops.h"

using namespace opscope;
using namespace opscope::models;
namespace fs = std::filesystem;

namespace {

class Safetensors : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("opscope_st_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }

  // A file of the format by hand: the length (or `length`), the header, the data.
  std::string raw(const std::string& name, const std::string& header, const std::string& data,
                  int64_t length = -1) const {
    std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    uint64_t n = length >= 0 ? uint64_t(length) : header.size();
    for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
    out << header << data;
    return p;
  }
  // One f32 tensor "w" of shape (2) at data_offsets [b, e], with `data_bytes` of data.
  std::string one(const std::string& name, const std::string& entry, size_t data_bytes = 8) const {
    return raw(name, R"({"w": )" + entry + "}", std::string(data_bytes, '\0'));
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_F(Safetensors, RoundTripKeepsDtypesShapesValuesAndMetadata) {
  Tensor f32 = randn({3, 5}, 1);
  Tensor bf16 = randn({4, 3}, 2, DType::bf16);
  Tensor f16 = randn({7}, 3, DType::f16);
  Tensor i64 = from_host_i64({-5, 0, int64_t(1) << 40}, {3});
  Tensor i32 = from_host_i64({-7, 123456789}, {2}).to(DType::i32);
  Tensor view = randn({4, 6}, 4).transpose(0, 1).slice(0, 0, 6, 2);  // not contiguous
  Tensor empty = zeros({0, 3});
  std::string p = file("t.safetensors");
  save_safetensors(p, {{"f32", f32}, {"bf16", bf16}, {"f16", f16}, {"i64", i64}, {"i32", i32}, {"view", view}, {"empty", empty}},
                   {{"format", "pt"}, {"note", "naïve \"quoted\""}});

  SafetensorsFile f = SafetensorsFile::open(p);
  ASSERT_EQ(f.tensors().size(), 7u);
  EXPECT_EQ(f.metadata().at("note"), "naïve \"quoted\"");
  EXPECT_EQ(f.find("bf16")->dtype, DType::bf16);
  EXPECT_EQ(f.find("view")->shape, Shape({3, 4}));
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.load("f32").to_vector<float>(), f32.to_vector<float>());
  auto bits = [](const Tensor& t, auto tag) {
    using T = decltype(tag);
    std::vector<T> v = t.to_vector<T>();
    std::vector<uint16_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * 2);
    return b;
  };
  EXPECT_EQ(bits(f.load("bf16"), bf16_t{}), bits(bf16, bf16_t{}));
  EXPECT_EQ(bits(f.load("f16"), f16_t{}), bits(f16, f16_t{}));
  EXPECT_EQ(f.load("i64").to_vector<int64_t>(), i64.to_vector<int64_t>());
  EXPECT_EQ(f.load("i32").to_vector<int32_t>(), (std::vector<int32_t>{-7, 123456789}));
  EXPECT_EQ(f.load("view").to_float_vector(), view.to_float_vector());
  EXPECT_EQ(f.load("empty").shape(), Shape({0, 3}));
  EXPECT_EQ(load_safetensors(p).size(), 7u);

  // The layout other readers expect: the length, an 8-byte-aligned JSON header, then
  // the tensors back to back in the order given.
  std::ifstream in(p, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  std::string header(n, '\0');
  in.read(header.data(), std::streamsize(n));
  auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["f32"]["dtype"], "F32");
  EXPECT_EQ(j["f32"]["data_offsets"], nlohmann::json({0, 60}));
  EXPECT_EQ(j["bf16"]["data_offsets"], nlohmann::json({60, 84}));
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(int64_t(fs::file_size(p)), int64_t(8 + n) + 60 + 24 + 14 + 24 + 8 + 48);
}

TEST_F(Safetensors, SavingIsAtomicAndChecksNames) {
  std::string p = file("a.safetensors");
  save_safetensors(p, {{"x", ones({2})}});
  EXPECT_TRUE(has(error_of([&] { save_safetensors(p, {{"x", ones({2})}, {"x", ones({3})}}); }),
                  "[safetensors] " + p + ": tensor 'x' is given twice"));
  EXPECT_TRUE(has(error_of([&] { save_safetensors(p, {{"__metadata__", ones({2})}}); }), "cannot name a tensor"));
  EXPECT_EQ(SafetensorsFile::open(p).find("x")->shape, Shape({2}));  // the old file is intact
  std::string missing = file("no/such/dir/b.safetensors");
  EXPECT_TRUE(has(error_of([&] { save_safetensors(missing, {{"x", ones({2})}}); }), missing));
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temp file left behind
}

TEST_F(Safetensors, ModelSaveThenLoadGivesIdenticalLogits) {
  for (DType dt : {DType::f32, DType::bf16}) {
    LlamaConfig c = LlamaConfig::preset("tiny");
    c.dtype = dt;
    LlamaModel m(c, 11);
    std::string p = file("model.safetensors");
    m.save(p);
    SafetensorsFile f = SafetensorsFile::open(p);
    EXPECT_EQ(f.tensors().size(), 21u);
    EXPECT_EQ(LlamaConfig::from_json(f.metadata().at("opscope.llama_config")).to_json(), c.to_json());
    LlamaModel back = LlamaModel::load(c, p);
    KvCache a, b;
    Tensor ids = from_host_i64({1, 2, 3, 250}, {4});
    EXPECT_EQ(m.prefill(ids, a).to_float_vector(), back.prefill(ids, b).to_float_vector());
    EXPECT_EQ(m.decode(9, a).to_float_vector(), back.decode(9, b).to_float_vector());
  }
}

TEST_F(Safetensors, ATruncatedFileNamesTheTensorPastItsEnd) {
  LlamaModel m(LlamaConfig::preset("tiny"), 0);
  std::string p = file("cut.safetensors");
  m.save(p);
  fs::resize_file(p, fs::file_size(p) - 100);
  std::string e = error_of([&] { SafetensorsFile::open(p); });
  EXPECT_TRUE(has(e, "[safetensors] " + p + ": tensor 'lm_head.weight': data_offsets")) << e;
  EXPECT_TRUE(has(e, "run past the end of the data")) << e;
  EXPECT_TRUE(has(e, "truncated")) << e;
  e = error_of([&] { LlamaModel::load(LlamaConfig::preset("tiny"), p); });
  EXPECT_TRUE(has(e, "tensor 'lm_head.weight'")) << e;
  // Cut inside the header.
  fs::resize_file(p, 40);
  e = error_of([&] { SafetensorsFile::open(p); });
  EXPECT_TRUE(has(e, "[safetensors] " + p + ": the header length")) << e;
  EXPECT_TRUE(has(e, "runs past the end of the file (32 bytes follow it; truncated?)")) << e;
  fs::resize_file(p, 5);
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }),
            "[safetensors] " + p + ": the file is 5 bytes, too short for the 8-byte header length (truncated?)");
  std::string none = file("none.safetensors");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(none); }), "[safetensors] " + none + ": no such file");
}

TEST_F(Safetensors, BadHeadersAreNamed) {
  std::string p = raw("len.safetensors", "{}", "", int64_t(1) << 40);
  EXPECT_TRUE(has(error_of([&] { SafetensorsFile::open(p); }), "[safetensors] " + p + ": the header length 1099511627776 is implausible"));
  p = raw("json.safetensors", R"({"w": {"dtype": "F32", )", "");
  std::string e = error_of([&] { SafetensorsFile::open(p); });
  EXPECT_TRUE(has(e, "[safetensors] " + p + ": the header is not valid JSON")) << e;
  p = raw("array.safetensors", "[1, 2]", "");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }), "[safetensors] " + p + ": the header is a JSON array, not an object");
  p = one("nokey.safetensors", R"({"dtype": "F32", "shape": [2]})");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }), "[safetensors] " + p + ": tensor 'w': its entry has no \"data_offsets\"");
  p = one("shape.safetensors", R"({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]})");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }), "[safetensors] " + p + ": tensor 'w': shape holds -2, which is negative");
}

TEST_F(Safetensors, BadDataOffsetsAndDtypesAreNamed) {
  std::string p = one("range.safetensors", R"({"dtype": "F32", "shape": [2], "data_offsets": [8, 16]})");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }),
            "[safetensors] " + p + ": tensor 'w': data_offsets [8, 16] run past the end of the data (8 bytes; is the "
            "file truncated?)");
  p = one("size.safetensors", R"({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]})");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }),
            "[safetensors] " + p + ": tensor 'w': data_offsets [0, 8] hold 8 bytes but shape (3) of F32 needs 12");
  p = one("reversed.safetensors", R"({"dtype": "F32", "shape": [0], "data_offsets": [8, 0]})");
  EXPECT_TRUE(has(error_of([&] { SafetensorsFile::open(p); }), "tensor 'w': data_offsets [8, 0] end before they begin"));
  p = raw("overlap.safetensors",
          R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
          std::string(12, '\0'));
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }),
            "[safetensors] " + p + ": tensors 'a' [0, 8] and 'b' [4, 12] overlap in the data");
  p = one("f64.safetensors", R"({"dtype": "F64", "shape": [1], "data_offsets": [0, 8]})");
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p); }),
            "[safetensors] " + p + ": tensor 'w' has dtype 'F64', which opscope cannot load (it reads F32, BF16, F16, I32, I64)");
  p = one("q4.safetensors", R"({"dtype": "Q4", "shape": [1], "data_offsets": [0, 8]})");
  EXPECT_TRUE(has(error_of([&] { SafetensorsFile::open(p); }), "tensor 'w' has dtype 'Q4'"));
  p = one("ok.safetensors", R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})");
  EXPECT_EQ(SafetensorsFile::open(p).load("w").to_float_vector(), (std::vector<float>{0, 0}));
  EXPECT_EQ(error_of([&] { SafetensorsFile::open(p).load("v"); }), "[safetensors] " + p + ": no tensor named 'v'");
}

TEST_F(Safetensors, WeightsThatDoNotFitTheModelAreNamed) {
  LlamaConfig c = LlamaConfig::preset("tiny");
  LlamaModel m(c, 0);
  auto named = m.weights().named();
  // Missing.
  std::string p = file("missing.safetensors");
  auto fewer = named;
  fewer.erase(fewer.begin() + 5);  // model.layers.0.mlp.gate_proj.weight
  save_safetensors(p, fewer);
  EXPECT_EQ(error_of([&] { LlamaModel::load(c, p); }),
            "[llama] " + p + ": tensor 'model.layers.0.mlp.gate_proj.weight' is missing (the model needs 21 tensors; "
            "the file has 20)");
  // Wrong shape: a smaller vocabulary.
  p = file("shape.safetensors");
  LlamaConfig small = c;
  small.vocab = 100;
  LlamaModel(small, 0).save(p);
  EXPECT_EQ(error_of([&] { LlamaModel::load(c, p); }),
            "[llama] " + p + ": tensor 'model.embed_tokens.weight' has shape (100, 64) but the model needs (256, 64)");
  // Wrong dtype.
  p = file("dtype.safetensors");
  auto half = named;
  half[3].second = half[3].second.to(DType::bf16);
  save_safetensors(p, half);
  EXPECT_EQ(error_of([&] { LlamaModel::load(c, p); }),
            "[llama] " + p + ": tensor 'model.layers.0.self_attn.v_proj.weight' has dtype bf16 but the model's dtype is "
            "f32 (load it with dtype bf16)");
  // Extra tensors (older checkpoints keep rotary buffers) are ignored; fewer layers load.
  p = file("extra.safetensors");
  auto more = named;
  more.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", ones({8}));
  save_safetensors(p, more);
  LlamaConfig one_layer = c;
  one_layer.n_layers = 1;
  EXPECT_EQ(LlamaModel::load(one_layer, p).weights().layers.size(), 1u);
}
