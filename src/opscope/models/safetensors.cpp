#include "opscope/models/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "opscope/core/error.h"
#include "opscope/profiler/atomic_file.h"

namespace opscope::models {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

// The format's own limit: a larger header is a damaged length, not a real header.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kLoadable = "F32, BF16, F16, I32, I64";

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"F32", DType::f32}, {"BF16", DType::bf16}, {"F16", DType::f16}, {"I32", DType::i32}, {"I64", DType::i64}};

[[noreturn]] void bad(const std::string& path, std::string_view what) { fail("safetensors", "{}: {}", path, what); }

int64_t get_int(const nlohmann::json& j, const std::string& path, const std::string& tensor, const char* field) {
  if (!j.is_number_integer() && !j.is_number_unsigned())
    bad(path, fmt::format("tensor '{}': {} holds {}, not an integer", tensor, field, j.dump()));
  if (j.is_number_integer() && j.get<int64_t>() < 0)
    bad(path, fmt::format("tensor '{}': {} holds {}, which is negative", tensor, field, j.dump()));
  uint64_t v = j.get<uint64_t>();
  if (v > (uint64_t(1) << 62)) bad(path, fmt::format("tensor '{}': {} holds {}, which is too large", tensor, field, v));
  return int64_t(v);
}

SafetensorInfo parse_entry(const std::string& path, const std::string& name, const nlohmann::json& e,
                           int64_t data_size) {
  SafetensorInfo t;
  t.name = name;
  if (!e.is_object()) bad(path, fmt::format("tensor '{}': its entry is {}, not an object", name, e.type_name()));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key)) bad(path, fmt::format("tensor '{}': its entry has no \"{}\"", name, key));
  const auto& dt = e["dtype"];
  if (!dt.is_string()) bad(path, fmt::format("tensor '{}': dtype is {}, not a string", name, dt.dump()));
  t.dtype = parse_safetensors_dtype(dt.get<std::string>(), path, name);
  const auto& shape = e["shape"];
  if (!shape.is_array()) bad(path, fmt::format("tensor '{}': shape is {}, not a list", name, shape.dump()));
  if (shape.size() > size_t(kMaxDims))
    bad(path, fmt::format("tensor '{}': shape {} has more than {} dims", name, shape.dump(), kMaxDims));
  int64_t numel = 1;
  for (const auto& d : shape) {
    int64_t n = get_int(d, path, name, "shape");
    if (n > 0 && numel > (int64_t(1) << 50) / n)
      bad(path, fmt::format("tensor '{}': shape {} is too large", name, shape.dump()));
    t.shape.push_back(n);
    numel *= n;
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    bad(path, fmt::format("tensor '{}': data_offsets is {}, not [begin, end]", name, off.dump()));
  t.begin = get_int(off[0], path, name, "data_offsets");
  t.end = get_int(off[1], path, name, "data_offsets");
  if (t.begin > t.end) bad(path, fmt::format("tensor '{}': data_offsets [{}, {}] end before they begin", name, t.begin, t.end));
  if (t.end > data_size)
    bad(path, fmt::format("tensor '{}': data_offsets [{}, {}] run past the end of the data ({} bytes; is the file "
                          "truncated?)",
                          name, t.begin, t.end, data_size));
  int64_t want = numel * int64_t(itemsize(t.dtype));
  if (t.end - t.begin != want)
    bad(path, fmt::format("tensor '{}': data_offsets [{}, {}] hold {} bytes but shape {} of {} needs {}", name,
                          t.begin, t.end, t.end - t.begin, t.shape.str(), safetensors_dtype_name(t.dtype), want));
  return t;
}

}  // namespace

std::string_view safetensors_dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  return "?";
}

DType parse_safetensors_dtype(std::string_view name, const std::string& path, const std::string& tensor) {
  for (const auto& d : kDTypes)
    if (name == d.name) return d.dtype;
  bad(path, fmt::format("tensor '{}' has dtype '{}', which opscope cannot load (it reads {})", tensor, name, kLoadable));
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) bad(path, "no such file");
  int64_t size = int64_t(std::filesystem::file_size(path, ec));
  if (ec) bad(path, fmt::format("cannot read its size ({})", ec.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, fmt::format("cannot open it ({})", std::strerror(errno)));
  if (size < 8) bad(path, fmt::format("the file is {} bytes, too short for the 8-byte header length (truncated?)", size));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderBytes)
    bad(path, fmt::format("the header length {} is implausible (the format allows {}): not a safetensors file, or its "
                          "first 8 bytes are damaged",
                          n, kMaxHeaderBytes));
  if (n > uint64_t(size - 8))
    bad(path, fmt::format("the header length {} runs past the end of the file ({} bytes follow it; truncated?)", n,
                          size - 8));
  std::string text(size_t(n), '\0');
  in.read(text.data(), std::streamsize(n));
  if (!in) bad(path, "cannot read the header");

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad(path, fmt::format("the header is not valid JSON ({})", e.what()));
  }
  if (!header.is_object()) bad(path, fmt::format("the header is a JSON {}, not an object", header.type_name()));

  SafetensorsFile f;
  f.path_ = path;
  f.data_start_ = 8 + int64_t(n);
  int64_t data_size = size - f.data_start_;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) bad(path, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) bad(path, fmt::format("__metadata__ '{}' is {}, not a string", mk, mv.dump()));
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    f.tensors_.push_back(parse_entry(path, key, value, data_size));
  }
  std::stable_sort(f.tensors_.begin(), f.tensors_.end(),
                   [](const SafetensorInfo& a, const SafetensorInfo& b) { return a.begin < b.begin; });
  const SafetensorInfo* prev = nullptr;
  for (const SafetensorInfo& t : f.tensors_) {
    if (t.begin == t.end) continue;  // empty tensors take no bytes
    if (prev && t.begin < prev->end)
      bad(path, fmt::format("tensors '{}' [{}, {}] and '{}' [{}, {}] overlap in the data", prev->name, prev->begin,
                            prev->end, t.name, t.begin, t.end));
    prev = &t;
  }
  return f;
}

const SafetensorInfo* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

Tensor SafetensorsFile::load(std::string_view name, Device* device) const {
  const SafetensorInfo* t = find(name);
  if (!t) bad(path_, fmt::format("no tensor named '{}'", name));
  int64_t bytes = t->end - t->begin, numel = t->shape.numel();
  std::vector<char> raw(static_cast<size_t>(bytes));
  std::ifstream in(path_, std::ios::binary);
  in.seekg(data_start_ + t->begin);
  in.read(raw.data(), std::streamsize(bytes));
  if (!in || in.gcount() != bytes)
    bad(path_, fmt::format("tensor '{}': could read only {} of its {} bytes (the file changed or is truncated)", t->name,
                           std::max<int64_t>(0, in.gcount()), bytes));
  auto as = [&]<class T>(T*) {
    std::vector<T> v(static_cast<size_t>(numel));
    if (bytes) std::memcpy(v.data(), raw.data(), size_t(bytes));
    return v;
  };
  // Floats go through f32, which holds every bf16 and f16 value exactly.
  auto floats = [&]<class T>(T* tag) {
    std::vector<T> v = as(tag);
    std::vector<float> f(v.size());
    for (size_t i = 0; i < v.size(); ++i) f[i] = to_f32(v[i]);
    return from_host(f, t->shape, t->dtype, device);
  };
  switch (t->dtype) {
    case DType::f32: return from_host(as(static_cast<float*>(nullptr)), t->shape, DType::f32, device);
    case DType::bf16: return floats(static_cast<bf16_t*>(nullptr));
    case DType::f16: return floats(static_cast<f16_t*>(nullptr));
    case DType::i64: return from_host_i64(as(static_cast<int64_t*>(nullptr)), t->shape, device);
    case DType::i32: {
      std::vector<int32_t> v = as(static_cast<int32_t*>(nullptr));
      return from_host_i64(std::vector<int64_t>(v.begin(), v.end()), t->shape, device).to(DType::i32);
    }
    case DType::b8: break;  // not in kDtypes: never parsed
  }
  bad(path_, fmt::format("tensor '{}': unsupported dtype", t->name));
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__") bad(path, fmt::format("'{}' cannot name a tensor", name));
    if (!seen.insert(name).second) bad(path, fmt::format("tensor '{}' is given twice", name));
    if (!t.defined()) bad(path, fmt::format("tensor '{}' is undefined", name));
    if (t.dtype() == DType::b8) bad(path, fmt::format("tensor '{}' is bool; opscope writes {}", name, kLoadable));
    header[name] = {{"dtype", std::string(safetensors_dtype_name(t.dtype()))},
                    {"shape", t.shape().vec()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the format advises
  AtomicFile f(path, "safetensors");
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  f.write(std::string_view(len, 8));
  f.write(text);
  for (const auto& [name, t] : tensors) {
    if (t.numel() == 0) continue;
    OPSCOPE_DISPATCH_ALL(t.dtype(), T, [&] {
      std::vector<T> v = t.to_vector<T>();
      f.write(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
    });
  }
  f.commit();
}

std::map<std::string, Tensor> load_safetensors(const std::string& path, Device* device) {
  SafetensorsFile f = SafetensorsFile::open(path);
  std::map<std::string, Tensor> out;
  for (const SafetensorInfo& t : f.tensors()) out[t.name] = f.load(t.name, device);
  return out;
}

}  // namespace opscope::models
