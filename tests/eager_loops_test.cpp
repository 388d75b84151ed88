// The eager elementwise kernels' f32 loops, read from libopscope.so's own code (the static
// half of `opscope kernel --static`): each activation's contiguous loop is vectorized and
// calls nothing per element. GCC once left mish's element function out of line in the loop
// that streams large outputs (a call per element, 9x its time), and no value test sees that.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "opscope/debuginfo/elf_module.h"
#include "opscope/debuginfo/listing.h"
#include "opscope/debuginfo/loop_facts.h"
#include "opscope/runtime/device.h"

using namespace opscope::debuginfo;

namespace {

std::string libopscope_path() {
  Dl_info info{};
  opscope::Device& (*fn)() = &opscope::cpu;
  if (!dladdr(reinterpret_cast<const void*>(fn), &info) || !info.dli_fname) return "";
  return info.dli_fname;
}

}  // namespace

// Every function of unary_flat<Op, float> (the loop over a contiguous f32 run,
// elementwise_unary.cpp), its clones, what GCC left out of line from it (the streaming
// writer, a lambda) and the op's block form wherever it stands: no innermost loop calls out,
// and one is vectorized.
TEST(EagerLoops, ActivationLoopsAreVectorizedAndCallNothing) {
  std::string path = libopscope_path(), why;
  ASSERT_FALSE(path.empty());
  auto elf = ElfModule::open(path, &why);
  ASSERT_TRUE(elf) << why;
  ASSERT_TRUE(elf->has_symtab()) << path;
  const std::string ns = "opscope::cpu_kernels::(anonymous namespace)::";
  std::vector<Symbol> all = elf->functions_containing(ns);
  for (const char* op : {"Exp", "Log", "Tanh", "Sigmoid", "Silu", "Gelu", "GeluTanh", "Elu", "Softplus", "Mish",
                         "LogSigmoid", "Atanh", "Frac"}) {
    SCOPED_TRACE(op);
    // unary_flat's instance, or an op's block form (Gelu::block) where it stands out of line
    const std::string instance = "unary_flat<" + ns + op + ", float>", block = ns + op + "::block(";
    int functions = 0, vector_loops = 0;
    for (const Symbol& sym : all) {
      if (sym.name.find(instance) == std::string::npos && sym.name.find(block) == std::string::npos) continue;
      ++functions;
      std::vector<ListedInstruction> listing = list_code(*elf, sym.low, sym.high);
      for (const Loop& loop : find_loops(listing)) {
        if (!loop.innermost) continue;
        LoopFacts f = loop_facts(listing, loop);
        if (f.compute() == 0 && f.calls == 0) continue;
        EXPECT_EQ(f.calls, 0) << sym.name << ": the loop at 0x" << std::hex << f.head << " calls out per iteration";
        if (!f.scalar()) ++vector_loops;
      }
    }
    ASSERT_GE(functions, 1) << instance << " is in no function of " << path;
    EXPECT_GE(vector_loops, 1) << "no vectorized loop in " << functions << " functions of " << instance;
  }
}
