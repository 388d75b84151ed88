#include "opscope/debuginfo/elf_module.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <mutex>

namespace opscope::debuginfo {

std::string demangle(std::string_view name) {
  std::string s(name);
  int status = 0;
  char* d = abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : s;
  std::free(d);
  return out;
}

namespace {

// The file itself only: no debuginfod, no separate debug files by build id (a profile
// reads the artifact it ran, or says that it cannot).
const Dwfl_Callbacks kOffline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

}  // namespace

struct ElfModule::Impl {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  GElf_Addr bias = 0;  // dwfl address = file address + bias
  // libdw's lookups fill caches as they go: one at a time (the explorer serves from
  // several threads).
  mutable std::mutex m;
  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }
};

ElfModule::~ElfModule() = default;

std::unique_ptr<ElfModule> ElfModule::open(const std::string& path, std::string* error) {
  auto fail_with = [&](std::string why) -> std::unique_ptr<ElfModule> {
    if (error) *error = std::move(why);
    return nullptr;
  };
  if (::access(path.c_str(), R_OK) != 0) return fail_with(fmt::format("cannot read it ({})", std::strerror(errno)));
  std::unique_ptr<ElfModule> out(new ElfModule);
  out->path_ = path;
  out->impl_ = std::make_unique<Impl>();
  Impl& im = *out->impl_;
  im.dwfl = dwfl_begin(&kOffline);
  if (!im.dwfl) return fail_with(dwfl_errmsg(-1));
  dwfl_report_begin(im.dwfl);
  im.mod = dwfl_report_offline(im.dwfl, path.c_str(), path.c_str(), -1);
  dwfl_report_end(im.dwfl, nullptr, nullptr);
  if (!im.mod) return fail_with(fmt::format("not an ELF file libdw can read ({})", dwfl_errmsg(-1)));
  Elf* elf = dwfl_module_getelf(im.mod, &im.bias);
  if (!elf) return fail_with(fmt::format("not an ELF file ({})", dwfl_errmsg(-1)));
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int n = dwfl_module_build_id(im.mod, &bits, &vaddr);
  for (int i = 0; i < n; ++i) out->build_id_ += fmt::format("{:02x}", bits[i]);
  Dwarf_Addr dbias = 0;
  Dwarf* dw = dwfl_module_getdwarf(im.mod, &dbias);
  if (dw) {
    // A CU with a line table: -g1 keeps one, a stripped file has none.
    Dwarf_Off off = 0, next = 0;
    size_t hsize = 0;
    while (!out->has_lines_ && dwarf_nextcu(dw, off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
      Dwarf_Die cu;
      Dwarf_Lines* lines = nullptr;
      size_t nl = 0;
      if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &nl) == 0 && nl > 0)
        out->has_lines_ = true;
      off = next;
    }
  }
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) out->has_symtab_ = true;
  }
  return out;
}

std::optional<Symbol> ElfModule::symbol_at(uint64_t addr) const {
  std::lock_guard<std::mutex> g(impl_->m);
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(impl_->mod, addr + impl_->bias, &offset, &sym, nullptr, nullptr, nullptr);
  if (!name) return std::nullopt;
  uint64_t low = addr - offset;
  return Symbol{demangle(name), low, low + (sym.st_size ? sym.st_size : offset + 1)};
}

template <class F> void ElfModule::each_function(F&& f) const {
  std::lock_guard<std::mutex> g(impl_->m);
  int n = dwfl_module_getsymtab(impl_->mod);
  for (int i = 0; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    const char* name = dwfl_module_getsym_info(impl_->mod, i, &sym, &addr, nullptr, nullptr, nullptr);
    if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0) continue;
    if (!f(name, addr - impl_->bias, uint64_t(sym.st_size))) return;
  }
}

std::optional<Symbol> ElfModule::find_symbol(std::string_view want) const {
  std::optional<Symbol> found;
  each_function([&](const char* name, uint64_t low, uint64_t size) {
    if (want != name && want != demangle(name)) return true;
    found = Symbol{demangle(name), low, low + size};
    return false;
  });
  return found;
}

std::vector<Symbol> ElfModule::functions_containing(std::string_view part) const {
  std::vector<Symbol> out;
  each_function([&](const char* name, uint64_t low, uint64_t size) {
    std::string d = demangle(name);
    if (d.find(part) != std::string::npos) out.push_back(Symbol{std::move(d), low, low + size});
    return true;
  });
  return out;
}

std::optional<SourceLine> ElfModule::line_at(uint64_t addr) const {
  if (!has_lines_) return std::nullopt;
  std::lock_guard<std::mutex> g(impl_->m);
  Dwfl_Line* l = dwfl_module_getsrc(impl_->mod, addr + impl_->bias);
  if (!l) return std::nullopt;
  int line = 0;
  const char* file = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr);
  if (!file || line <= 0) return std::nullopt;
  return SourceLine{file, line};
}

std::span<const uint8_t> ElfModule::code(uint64_t low, uint64_t high) const {
  std::lock_guard<std::mutex> g(impl_->m);
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(impl_->mod, &bias);
  if (!elf || high <= low) return {};
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR)) continue;
    if (low < sh.sh_addr || low >= sh.sh_addr + sh.sh_size) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) return {};
    uint64_t end = std::min<uint64_t>(high, sh.sh_addr + std::min<uint64_t>(sh.sh_size, data->d_size));
    auto* base = static_cast<const uint8_t*>(data->d_buf);
    return {base + (low - sh.sh_addr), size_t(end - low)};
  }
  return {};
}

}  // namespace opscope::debuginfo
