// safetensors files (Hugging Face's weight format): an 8-byte little-endian header
// length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets":
// [begin, end]}, "__metadata__": {..}}, then the tensors' bytes (offsets count from the
// end of the header).
//
//   SafetensorsFile f = SafetensorsFile::open("model.safetensors");  // reads and checks the header
//   Tensor w = f.load("model.norm.weight");                          // reads one tensor
//   save_safetensors("out.safetensors", {{"w", w}});                  // temp file + rename
//
// Every error starts "[safetensors] <path>: " and names the tensor it is about.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope::models {

struct SafetensorInfo {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  int64_t begin = 0, end = 0;  // byte range within the data section
};

// "F32", "BF16", "F16", "I32", "I64" ↔ DType. Parsing another name (F64, U8, ...)
// throws "[safetensors] <path>: tensor '<tensor>' has dtype 'F64', which opscope cannot load ...".
std::string_view safetensors_dtype_name(DType t);
DType parse_safetensors_dtype(std::string_view name, const std::string& path, const std::string& tensor);

class SafetensorsFile {
 public:
  // Reads and validates the header: its length against the file's size, the JSON, each
  // entry's dtype, shape and data_offsets (in range, sized for the shape, not
  // overlapping another tensor's).
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  // Tensors in the order of their data.
  const std::vector<SafetensorInfo>& tensors() const { return tensors_; }
  const SafetensorInfo* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Reads a tensor's bytes into a new tensor on `device` (default: cpu()); throws
  // "[safetensors] <path>: no tensor named 'x'" for an unknown name.
  Tensor load(std::string_view name, Device* device = nullptr) const;

 private:
  std::string path_;
  int64_t data_start_ = 0;  // file offset of the data section
  std::vector<SafetensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (any layout; names unique) and string metadata to `path`
// atomically: a reader sees the old file or the whole new one.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Every tensor of a file, by name.
std::map<std::string, Tensor> load_safetensors(const std::string& path, Device* device = nullptr);

}  // namespace opscope::models
