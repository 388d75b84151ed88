// One ELF file's code as a profiler reads it: its build id, its symbols, its line table
// (DWARF, through elfutils' libdw) and the bytes of its code. Addresses are the file's
// own virtual addresses (what objdump and the DWARF line table use): a sample's
// instruction pointer minus the module's load bias.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace opscope::debuginfo {

struct Symbol {
  std::string name;  // demangled
  uint64_t low = 0;  // [low, high): the function's code
  uint64_t high = 0;
};

struct SourceLine {
  std::string file;  // as the line table names it (absolute when the compiler knew the folder)
  int line = 0;
};

class ElfModule {
 public:
  // Opens `path`; null with the reason in `error` when it is not a readable ELF file.
  static std::unique_ptr<ElfModule> open(const std::string& path, std::string* error);
  ~ElfModule();
  ElfModule(const ElfModule&) = delete;
  ElfModule& operator=(const ElfModule&) = delete;

  const std::string& path() const { return path_; }
  const std::string& build_id() const { return build_id_; }  // hex; empty when the file has none
  // True when the file has a DWARF line table (built with -g or -g1, not stripped).
  bool has_lines() const { return has_lines_; }
  // True when the file has a full symbol table (.symtab), not only the exported names.
  bool has_symtab() const { return has_symtab_; }

  std::optional<Symbol> symbol_at(uint64_t addr) const;
  // The function named `name` (mangled or demangled), when the symbol table has it.
  std::optional<Symbol> find_symbol(std::string_view name) const;
  // The functions whose demangled name contains `part`: a template's instances, and the
  // compiler's clones of them ("... [clone .constprop.0]").
  std::vector<Symbol> functions_containing(std::string_view part) const;
  // The innermost source line of the instruction at `addr` (inlined code: the inlined
  // function's line).
  std::optional<SourceLine> line_at(uint64_t addr) const;
  // The file's bytes for [low, high) of an executable section, clipped to it; empty when
  // `low` is in none.
  std::span<const uint8_t> code(uint64_t low, uint64_t high) const;

 private:
  ElfModule() = default;
  // f(name, low, size) for each function symbol, until it returns false.
  template <class F> void each_function(F&& f) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
  std::string build_id_;
  bool has_lines_ = false;
  bool has_symtab_ = false;
};

// Demangles a C++ symbol name; other names come back as they are.
std::string demangle(std::string_view name);

}  // namespace opscope::debuginfo
