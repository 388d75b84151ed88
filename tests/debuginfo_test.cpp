// The instructions layer's code readers: instruction classes and vector widths on known
// instruction bytes, loops, and libopscope's own symbols and line table (libdw).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "opscope/debuginfo/disasm.h"
#include "opscope/debuginfo/elf_module.h"
#include "opscope/debuginfo/listing.h"
#include "opscope/debuginfo/source_text.h"
#include "opscope/runtime/device.h"

using namespace opscope::debuginfo;

namespace {

// Encoded by GNU as (intel syntax), addresses from 0x1000.
const std::vector<uint8_t> kBytes = {
    0x62, 0xf2, 0x75, 0x48, 0xb8, 0xc2,  // 0x1000 vfmadd231ps zmm0, zmm1, zmm2
    0xc5, 0xf4, 0x58, 0xc2,              // 0x1006 vaddps ymm0, ymm1, ymm2
    0xc5, 0xf2, 0x58, 0xc2,              // 0x100a vaddss xmm0, xmm1, xmm2
    0x62, 0xf1, 0x7c, 0x48, 0x10, 0x07,  // 0x100e vmovups zmm0, [rdi]
    0x62, 0xf1, 0x7c, 0x48, 0x11, 0x0e,  // 0x1014 vmovups [rsi], zmm1
    0x62, 0xf1, 0x7c, 0x48, 0x2b, 0x0e,  // 0x101a vmovntps [rsi], zmm1
    0x62, 0xf2, 0x7d, 0x48, 0x13, 0x07,  // 0x1020 vcvtph2ps zmm0, [rdi]
    0xc5, 0xfa, 0x2a, 0xc0,              // 0x1026 vcvtsi2ss xmm0, xmm0, eax
    0x62, 0xf2, 0x75, 0x48, 0x16, 0xc2,  // 0x102a vpermps zmm0, zmm1, zmm2
    0x48, 0x83, 0xc0, 0x01,              // 0x1030 add rax, 1
    0x48, 0x39, 0xd0,                    // 0x1034 cmp rax, rdx
    0x75, 0xf7,                          // 0x1037 jne 0x1030
    0x62, 0xf2, 0x7d, 0x48, 0x18, 0x1f,  // 0x1039 vbroadcastss zmm3, dword ptr [rdi]
    0xc5, 0xf8, 0x28, 0xc1,              // 0x103f vmovaps xmm0, xmm1
    0x90,                                // 0x1043 nop
    0xc5, 0xf0, 0x59, 0x07,              // 0x1044 vmulps xmm0, xmm1, [rdi]
    // Capstone 4.0.2 took these two for "(bad)" and fell out of step after them.
    0x62, 0xf2, 0x4d, 0xc9, 0x98, 0xd0,  // 0x1048 vfmadd132ps zmm2 {k1}{z}, zmm6, zmm0
    0x62, 0xe2, 0x4d, 0x58, 0x98, 0x3d, 0xbd, 0x0d, 0x00, 0x00,  // 0x104e vfmadd132ps zmm23, zmm6, dword bcst [rip+0xdbd]
    0x48, 0x83, 0xc7, 0x40,              // 0x1058 add rdi, 0x40
    0x62, 0xf1, 0x7c, 0x48, 0x11, 0x04, 0x86,  // 0x105c vmovups [rsi+rax*4], zmm0
    0x62, 0xf3, 0xfd, 0x48, 0x3b, 0xf8, 0x01,  // 0x1063 vextracti64x4 ymm0, zmm7, 1
    0xc5, 0xf9, 0xc5, 0xc0, 0x02,              // 0x106a vpextrw eax, xmm0, 2
};

struct Expect {
  const char* mnemonic;
  InstrClass cls;
  VectorWidth width;
  int read, write;
};

}  // namespace

TEST(Disassembly, ClassesAndWidthsOfKnownInstructions) {
  std::vector<Instruction> ins = disassemble(kBytes, 0x1000);
  const std::vector<Expect> want = {
      {"vfmadd231ps", InstrClass::fma, VectorWidth::v512, 0, 0},
      {"vaddps", InstrClass::arith, VectorWidth::v256, 0, 0},
      {"vaddss", InstrClass::arith, VectorWidth::scalar, 0, 0},
      {"vmovups", InstrClass::load, VectorWidth::v512, 64, 0},
      {"vmovups", InstrClass::store, VectorWidth::v512, 0, 64},
      {"vmovntps", InstrClass::stream_store, VectorWidth::v512, 0, 64},
      {"vcvtph2ps", InstrClass::convert, VectorWidth::v512, 32, 0},
      {"vcvtsi2ss", InstrClass::convert, VectorWidth::scalar, 0, 0},
      {"vpermps", InstrClass::shuffle, VectorWidth::v512, 0, 0},
      {"add", InstrClass::arith, VectorWidth::scalar, 0, 0},
      {"cmp", InstrClass::arith, VectorWidth::scalar, 0, 0},
      {"jnz", InstrClass::branch, VectorWidth::scalar, 0, 0},
      {"vbroadcastss", InstrClass::load, VectorWidth::v512, 4, 0},
      {"vmovaps", InstrClass::other, VectorWidth::v128, 0, 0},
      {"nop", InstrClass::other, VectorWidth::scalar, 0, 0},
      {"vmulps", InstrClass::arith, VectorWidth::v128, 16, 0},
      {"vfmadd132ps", InstrClass::fma, VectorWidth::v512, 0, 0},
      {"vfmadd132ps", InstrClass::fma, VectorWidth::v512, 4, 0},  // a broadcast reads one element
      {"add", InstrClass::arith, VectorWidth::scalar, 0, 0},
      {"vmovups", InstrClass::store, VectorWidth::v512, 0, 64},
      {"vextracti64x4", InstrClass::shuffle, VectorWidth::v512, 0, 0},  // a half, not an element
      {"vpextrw", InstrClass::shuffle, VectorWidth::scalar, 0, 0},
  };
  ASSERT_EQ(ins.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(ins[i].text);
    EXPECT_EQ(ins[i].text.substr(0, ins[i].text.find(' ')), want[i].mnemonic);
    EXPECT_EQ(ins[i].cls, want[i].cls) << class_name(ins[i].cls);
    EXPECT_EQ(ins[i].width, want[i].width) << width_name(ins[i].width);
    EXPECT_EQ(ins[i].read_bytes, want[i].read);
    EXPECT_EQ(ins[i].write_bytes, want[i].write);
  }
  EXPECT_EQ(ins[0].address, 0x1000u);
  EXPECT_EQ(ins[3].text, "vmovups zmm0, zmmword ptr [rdi]");
  EXPECT_TRUE(ins[11].jump);
  EXPECT_EQ(ins[11].target, 0x1030u);
  // What a loop's streams and inductions are read from.
  EXPECT_EQ(ins[3].mem_base, "rdi");
  EXPECT_EQ(ins[17].mem_base, "rip");
  EXPECT_EQ(ins[9].step_reg, "rax");
  EXPECT_EQ(ins[9].step, 1);
  EXPECT_EQ(ins[18].step_reg, "rdi");
  EXPECT_EQ(ins[18].step, 64);
  EXPECT_EQ(ins[19].mem_base, "rsi");
  EXPECT_EQ(ins[19].mem_index, "rax");
  EXPECT_EQ(ins[19].mem_scale, 4);
  EXPECT_EQ(full_register("r9d"), "r9");
  EXPECT_EQ(full_register("esi"), "rsi");
  EXPECT_EQ(full_register("zmm3"), "zmm3");
}

TEST(Disassembly, UndecodableBytesBecomeBadAndDecodingGoesOn) {
  std::vector<uint8_t> code = {0x06, 0x90};  // 0x06 (push es) does not exist in 64-bit mode
  std::vector<Instruction> ins = disassemble(code, 0);
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_EQ(ins[0].text, "(bad)");
  EXPECT_EQ(ins[1].text, "nop");
  EXPECT_EQ(ins[1].address, 1u);
}

TEST(Disassembly, ClassifyByMnemonic) {
  EXPECT_EQ(classify("vpmovzxwd", true, false, 2), InstrClass::convert);
  EXPECT_EQ(classify("vpmovdw", true, true, 2), InstrClass::convert);
  EXPECT_EQ(classify("vpmovmskb", false, false, 2), InstrClass::other);
  EXPECT_EQ(classify("vmovntdqa", true, false, 2), InstrClass::load);  // the streaming load
  EXPECT_EQ(classify("movnti", true, true, 2), InstrClass::stream_store);
  EXPECT_EQ(classify("vdpbf16ps", false, false, 3), InstrClass::fma);
  EXPECT_EQ(classify("vunpcklps", false, false, 3), InstrClass::shuffle);
  EXPECT_EQ(classify("vpbroadcastd", false, false, 2), InstrClass::shuffle);
  EXPECT_EQ(classify("vgatherdps", true, false, 3), InstrClass::load);
  EXPECT_EQ(classify("vscatterdps", true, true, 2), InstrClass::store);
  EXPECT_EQ(classify("call", false, false, 1), InstrClass::branch);
  EXPECT_EQ(classify("ret", false, false, 0), InstrClass::branch);
  EXPECT_EQ(classify("vzeroupper", false, false, 0), InstrClass::other);
  EXPECT_EQ(classify("lea", false, false, 2), InstrClass::arith);
}

TEST(Listing, FindsTheLoopOfABackwardJump) {
  std::vector<ListedInstruction> l;
  for (Instruction& in : disassemble(kBytes, 0x1000)) l.push_back({std::move(in), "", 0});
  std::vector<Loop> loops = find_loops(l);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].head, 0x1030u);
  EXPECT_EQ(loops[0].latch, 0x1037u);
  EXPECT_TRUE(loops[0].innermost);
  EXPECT_EQ(l[loops[0].first].insn.address, 0x1030u);
  EXPECT_EQ(l[loops[0].last].insn.address, 0x1037u);
}

namespace {
std::string libopscope_path(const void* fn, uint64_t& bias) {
  Dl_info info{};
  if (!dladdr(fn, &info) || !info.dli_fname) return "";
  bias = uintptr_t(info.dli_fbase);
  return info.dli_fname;
}
}  // namespace

// libopscope's kernels and runtime are built with line tables (-g1): a function of them
// resolves to its name, its source file and a line inside it.
TEST(ElfModule, ReadsLibopscopesSymbolsAndLines) {
  uint64_t bias = 0;
  opscope::Device& (*fn)() = &opscope::cpu;
  std::string path = libopscope_path(reinterpret_cast<const void*>(fn), bias);
  ASSERT_FALSE(path.empty());
  std::string why;
  auto m = ElfModule::open(path, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->build_id().size(), 40u) << "a GNU build id is 20 bytes";
  EXPECT_TRUE(m->has_symtab());
  ASSERT_TRUE(m->has_lines()) << path << " has no line table: built with OPSCOPE_LINE_TABLES=OFF?";
  uint64_t addr = uint64_t(reinterpret_cast<uintptr_t>(fn)) - bias;
  auto sym = m->symbol_at(addr + 4);
  ASSERT_TRUE(sym);
  EXPECT_NE(sym->name.find("opscope::cpu()"), std::string::npos) << sym->name;
  EXPECT_EQ(sym->low, addr);
  EXPECT_GT(sym->high, sym->low);
  auto line = m->line_at(addr + 4);
  ASSERT_TRUE(line);
  EXPECT_NE(line->file.find("runtime/cpu_device.cpp"), std::string::npos) << line->file;
  std::string text = source_line(find_source(line->file, path), line->line);
  EXPECT_FALSE(text.empty()) << line->file << ":" << line->line;
  auto found = m->find_symbol(sym->name);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->low, sym->low);
  auto code = m->code(sym->low, sym->high);
  EXPECT_EQ(code.size(), sym->high - sym->low);
  EXPECT_FALSE(list_code(*m, sym->low, sym->high).empty());
}

TEST(ElfModule, AFileThatIsNotElfIsRefusedWithTheReason) {
  std::string why;
  EXPECT_FALSE(ElfModule::open("/nonexistent/kernels.so", &why));
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;
  EXPECT_FALSE(ElfModule::open("/proc/self/status", &why));
  EXPECT_FALSE(why.empty());
}

TEST(SourceText, AGeneratedSourceIsFoundBesideItsModule) {
  // The line table names the temp folder it was built in; the cache keeps the file beside the library.
  std::string dir = ::testing::TempDir() + "opscope-srctext";
  std::system(("mkdir -p " + dir).c_str());
  { FILE* f = std::fopen((dir + "/kernels.cpp").c_str(), "w"); std::fputs("line one\nline two\n", f); std::fclose(f); }
  std::string found = find_source("/gone/.tmp-abc/kernels.cpp", dir + "/kernels.so");
  EXPECT_EQ(found, dir + "/kernels.cpp");
  EXPECT_EQ(source_line(found, 2), "line two");
  EXPECT_EQ(source_line(found, 3), "");
  EXPECT_EQ(find_source("/gone/other.cpp", ""), "");
}
