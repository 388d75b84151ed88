// x86-64 disassembly (Zydis) with each instruction classed as a kernel engineer
// reads it: what it does (FMA, arithmetic, load, store, streaming store, convert,
// shuffle, branch, other) and on how wide a vector (512/256/128 bits, or scalar).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace opscope::debuginfo {

enum class InstrClass : uint8_t { fma, arith, load, store, stream_store, convert, shuffle, branch, other };
constexpr int kNumInstrClasses = 9;
const char* class_name(InstrClass c);  // "fma", "arith", "load", "store", "stream_store", ...

// The widest vector register the instruction computes on; scalar for general-purpose
// code and for the scalar forms of vector instructions (vaddss, vcvtsi2sd, vmovd).
enum class VectorWidth : uint16_t { scalar = 0, v128 = 128, v256 = 256, v512 = 512 };
const char* width_name(VectorWidth w);  // "scalar", "128", "256", "512"

struct Instruction {
  uint64_t address = 0;
  uint8_t size = 0;
  std::string text;  // "vfmadd231ps zmm0, zmm1, zmmword ptr [rax + 0x40]"
  InstrClass cls = InstrClass::other;
  VectorWidth width = VectorWidth::scalar;
  int32_t read_bytes = 0;   // memory read by the instruction (its memory operands)
  int32_t write_bytes = 0;  // memory written
  bool jump = false;        // a jump (conditional or not) with a known target
  uint64_t target = 0;      // the jump's target
  // The memory operand, as 64-bit register names ("" when absent): [base + index * scale + disp].
  // A loop's streams are read from these; base "rip" is a constant, "rsp"/"rbp" the stack.
  std::string mem_base, mem_index;
  int8_t mem_scale = 0;
  int64_t mem_disp = 0;
  bool gather = false;      // a gather or scatter: one element per lane from an index vector
  // A general register advanced by a constant ("add rax, 0x40", "inc rcx", "lea rdx, [rdx + 8]",
  // "sub rsi, 16"): its 64-bit name and the step; "" otherwise. Loop inductions are read from it.
  std::string step_reg;
  int64_t step = 0;
};

// The 64-bit register a general register name is part of ("eax" -> "rax", "r9d" -> "r9");
// other names come back as they are.
std::string full_register(std::string_view reg);

// Decodes `code` starting at `address`; an undecodable byte becomes a one-byte "(bad)"
// of class other, and decoding goes on after it.
std::vector<Instruction> disassemble(std::span<const uint8_t> code, uint64_t address);

// The class of a decoded mnemonic and its operands' facts (exposed for tests and for
// decoders other than Zydis): `mem_first` is true when the first operand is memory.
InstrClass classify(std::string_view mnemonic, bool has_memory, bool mem_first, int operands);

}  // namespace opscope::debuginfo
