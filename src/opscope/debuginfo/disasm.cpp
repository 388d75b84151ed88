#include "opscope/debuginfo/disasm.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <array>

namespace opscope::debuginfo {

const char* class_name(InstrClass c) {
  switch (c) {
    case InstrClass::fma: return "fma";
    case InstrClass::arith: return "arith";
    case InstrClass::load: return "load";
    case InstrClass::store: return "store";
    case InstrClass::stream_store: return "stream_store";
    case InstrClass::convert: return "convert";
    case InstrClass::shuffle: return "shuffle";
    case InstrClass::branch: return "branch";
    case InstrClass::other: return "other";
  }
  return "other";
}

const char* width_name(VectorWidth w) {
  switch (w) {
    case VectorWidth::scalar: return "scalar";
    case VectorWidth::v128: return "128";
    case VectorWidth::v256: return "256";
    case VectorWidth::v512: return "512";
  }
  return "scalar";
}

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
template <size_t N>
bool starts_any(std::string_view s, const std::array<std::string_view, N>& ps) {
  return std::any_of(ps.begin(), ps.end(), [&](std::string_view p) { return starts(s, p); });
}

// The mnemonic without its VEX/EVEX 'v' and a packed-integer 'p' ("vpaddd" -> "addd").
std::string_view base_of(std::string_view m) {
  if (m.size() > 1 && m[0] == 'v') m.remove_prefix(1);
  if (m.size() > 1 && m[0] == 'p' && !starts(m, "pop") && !starts(m, "push") && !starts(m, "pause") &&
      !starts(m, "prefetch"))
    m.remove_prefix(1);
  return m;
}

bool is_convert(std::string_view m) {
  if (starts(m, "vcvt") || starts(m, "cvt")) return true;
  std::string_view b = base_of(m);  // vpmovzxwd, vpmovsxbd: widening; vpmovdw, vpmovusqd: narrowing
  if (starts(b, "movzx") || starts(b, "movsx")) return starts(m, "vp") || starts(m, "p");
  if (starts(m, "vpmov") && m.size() >= 7 && !starts(m, "vpmovm") && !contains(m, "msk") && !contains(m, "2m"))
    return true;
  return false;
}

bool is_shuffle(std::string_view m) {
  static constexpr std::array<std::string_view, 22> kBases = {
      "perm",   "shuf",   "unpck",  "insert", "extract", "align",  "blend", "compress", "expand", "movshdup", "movsldup",
      "movddup", "ack",   "srldq",  "slldq",  "broadcast", "movhlps", "movlhps", "valign", "multishift", "insr",
      "extr"};
  std::string_view b = base_of(m);
  if (starts(b, "ack")) return starts(m, "vpack") || starts(m, "pack");  // packssdw, packuswb
  // vpermps, vperm2f128: the 'p' is the op's own ("perm"), not a packed-integer prefix.
  std::string_view v = m.size() > 1 && m[0] == 'v' ? m.substr(1) : m;
  return starts_any(b, kBases) || starts_any(v, kBases);
}

bool is_fma(std::string_view m) {
  return contains(m, "fmadd") || contains(m, "fmsub") || contains(m, "fnmadd") || contains(m, "fnmsub") ||
         starts(m, "vdpbf16") || starts(m, "vpdpbusd") || starts(m, "vpdpwssd") || starts(m, "vdpph") ||
         starts(m, "vfcmadd") || starts(m, "vfmul");
}

bool is_arith(std::string_view m) {
  static constexpr std::array<std::string_view, 48> kBases = {
      "add",  "sub",    "mul",   "div",    "sqrt",  "min",    "max",   "and",     "or",     "xor",  "cmp",   "test",
      "rcp",  "rsqrt",  "round", "rndscale", "scalef", "getexp", "getmant", "fixup", "ternlog", "abs", "neg", "inc",
      "dec",  "shl",    "shr",   "sar",    "sal",   "rol",    "ror",   "imul",    "idiv",   "lea",  "adc",   "sbb",
      "not",  "bt",     "popcnt", "lzcnt", "tzcnt", "hadd",   "hsub",  "dp",      "avg",    "sign", "sll",   "srl"};
  static constexpr std::array<std::string_view, 14> kMore = {"sra", "range", "reduce", "cmov", "set", "ucomi", "comi",
                                                             "madd", "sad", "clmul", "exp2", "bls", "andn", "lzcnt"};
  std::string_view b = base_of(m);
  return starts_any(b, kBases) || starts_any(b, kMore) || starts_any(m, kBases) || starts_any(m, kMore);
}

bool is_move(std::string_view m) {
  return starts(m, "mov") || starts(m, "vmov") || starts(m, "vbroadcast") || starts(m, "vpbroadcast") ||
         starts(m, "vgather") || starts(m, "vpgather") || starts(m, "vscatter") || starts(m, "vpscatter") ||
         starts(m, "vmaskmov") || starts(m, "vpmaskmov") || starts(m, "lddqu") || starts(m, "vlddqu");
}

bool is_branch(std::string_view m) {
  return starts(m, "j") || starts(m, "call") || starts(m, "ret") || starts(m, "loop") || starts(m, "bnd j");
}

// Scalar forms of vector instructions: one element in an xmm register.
bool scalar_form(std::string_view m) {
  if (starts(m, "vbroadcast") || starts(m, "vpbroadcast")) return false;
  if (ends(m, "ss") || ends(m, "sd") || ends(m, "sh")) return true;
  if (contains(m, "si2s") || contains(m, "s2si") || contains(m, "ss2") || contains(m, "sd2") || contains(m, "sh2") ||
      contains(m, "2usi") || contains(m, "si2"))
    return true;
  std::string_view b = base_of(m);
  // pextrw, vpinsrd: one element to or from a general register; not vextracti64x4, which
  // moves a 256-bit half.
  bool element = (starts(b, "insr") || starts(b, "extr")) && !starts(m, "vextracti") && !starts(m, "vextractf");
  return m == "movd" || m == "movq" || m == "vmovd" || m == "vmovq" || m == "vmovw" || element ||
         m == "extractps" || m == "vextractps" || m == "insertps" || m == "vinsertps";
}

VectorWidth reg_width(std::string_view reg) {
  if (starts(reg, "zmm")) return VectorWidth::v512;
  if (starts(reg, "ymm")) return VectorWidth::v256;
  if (starts(reg, "xmm")) return VectorWidth::v128;
  return VectorWidth::scalar;
}

}  // namespace

std::string full_register(std::string_view r) {
  if (r.size() >= 2 && r[0] == 'r' && r[1] >= '0' && r[1] <= '9') {  // r8d, r12w, r15b -> r8, r12, r15
    while (!r.empty() && (r.back() == 'd' || r.back() == 'w' || r.back() == 'b')) r.remove_suffix(1);
    return std::string(r);
  }
  static constexpr std::array<std::array<std::string_view, 5>, 9> kNames = {{
      {"rax", "eax", "ax", "al", "ah"}, {"rbx", "ebx", "bx", "bl", "bh"}, {"rcx", "ecx", "cx", "cl", "ch"},
      {"rdx", "edx", "dx", "dl", "dh"}, {"rsi", "esi", "si", "sil", ""}, {"rdi", "edi", "di", "dil", ""},
      {"rbp", "ebp", "bp", "bpl", ""},  {"rsp", "esp", "sp", "spl", ""}, {"rip", "eip", "ip", "", ""}}};
  for (const auto& names : kNames)
    for (std::string_view n : names)
      if (!n.empty() && n == r) return std::string(names[0]);
  return std::string(r);
}

InstrClass classify(std::string_view m, bool has_memory, bool mem_first, int operands) {
  if (is_branch(m)) return InstrClass::branch;
  if (starts(m, "vmovnt") || starts(m, "movnt")) {  // (v)movntdqa is the streaming *load*
    return ends(m, "ntdqa") ? InstrClass::load : InstrClass::stream_store;
  }
  if (is_convert(m)) return InstrClass::convert;
  if (is_fma(m)) return InstrClass::fma;
  if (is_shuffle(m)) {
    // A broadcast from memory is a load that fills every lane.
    if (has_memory && (starts(m, "vbroadcast") || starts(m, "vpbroadcast") || m == "vmovddup"))
      return InstrClass::load;
    return InstrClass::shuffle;
  }
  if (is_move(m)) {
    if (starts(m, "vscatter") || starts(m, "vpscatter")) return InstrClass::store;
    if (!has_memory) return InstrClass::other;  // register to register
    return mem_first && operands >= 2 ? InstrClass::store : InstrClass::load;
  }
  if (is_arith(m)) return InstrClass::arith;
  return InstrClass::other;
}

namespace {

struct Zydis {
  ZydisDecoder decoder;
  ZydisFormatter formatter;
  bool ok = false;
  Zydis() {
    ok = ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) &&
         ZYAN_SUCCESS(ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_INTEL));
    // objdump's look: lower-case hex, signed immediates ("sub rdx, -0x80"), no zero padding.
    ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE);
    ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_IMM_SIGNEDNESS, ZYDIS_SIGNEDNESS_SIGNED);
    ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED);
  }
};

std::string register_name(ZydisRegister r) {
  const char* n = ZydisRegisterGetString(r);
  return n ? n : "";
}

// "add rax, 0x40", "sub rsi, 16", "inc rcx", "dec rdx", "lea rdx, [rdx + 8]": a register
// advanced by a constant.
void note_step(std::string_view m, const ZydisDecodedOperand* ops, int count, Instruction& out) {
  if (count < 1 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER) return;
  std::string reg = full_register(register_name(ops[0].reg.value));
  if ((m == "add" || m == "sub") && count >= 2 && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
    out.step_reg = reg;
    out.step = m == "add" ? ops[1].imm.value.s : -ops[1].imm.value.s;
  } else if ((m == "inc" || m == "dec") && count >= 1) {
    out.step_reg = reg;
    out.step = m == "inc" ? 1 : -1;
  } else if (m == "lea" && count >= 2 && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
             ops[1].mem.index == ZYDIS_REGISTER_NONE && ops[1].mem.base != ZYDIS_REGISTER_NONE &&
             full_register(register_name(ops[1].mem.base)) == reg) {
    out.step_reg = reg;
    out.step = ops[1].mem.disp.value;
  }
}

// The bytes a memory operand touches: one element for a broadcast.
int memory_bytes(const ZydisDecodedInstruction& in, const ZydisDecodedOperand& op) {
  if (in.avx.broadcast.mode != ZYDIS_BROADCAST_MODE_INVALID && op.element_size) return op.element_size / 8;
  return op.size / 8;
}

void fill(const Zydis& z, const ZydisDecodedInstruction& in, const ZydisDecodedOperand* ops, uint64_t address,
          Instruction& out) {
  out.address = address;
  out.size = in.length;
  char text[256];
  if (ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&z.formatter, &in, ops, in.operand_count_visible, text,
                                                   sizeof text, address, nullptr)))
    out.text = text;
  const std::string_view m = ZydisMnemonicGetString(in.mnemonic);
  const int visible = in.operand_count_visible;
  bool has_mem = false, mem_first = false, agen = false;
  VectorWidth w = VectorWidth::scalar;
  int mem_bytes = 0;
  for (int i = 0; i < visible; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      VectorWidth rw = reg_width(register_name(op.reg.value));
      if (uint16_t(rw) > uint16_t(w)) w = rw;
    } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
      agen = agen || op.mem.type == ZYDIS_MEMOP_TYPE_AGEN;
      if (!has_mem) {
        if (op.mem.base != ZYDIS_REGISTER_NONE) out.mem_base = full_register(register_name(op.mem.base));
        if (op.mem.index != ZYDIS_REGISTER_NONE) out.mem_index = full_register(register_name(op.mem.index));
        out.mem_scale = int8_t(op.mem.scale);
        out.mem_disp = op.mem.disp.value;
      }
      has_mem = true;
      mem_first = mem_first || i == 0;
      mem_bytes = memory_bytes(in, op);
      if (op.actions & ZYDIS_OPERAND_ACTION_MASK_READ) out.read_bytes += mem_bytes;
      if (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) out.write_bytes += mem_bytes;
    }
  }
  if (agen || starts(m, "nop") || starts(m, "prefetch")) out.read_bytes = out.write_bytes = 0;  // no access
  out.cls = classify(m, has_mem && !agen, mem_first, visible);
  if (w == VectorWidth::scalar && has_mem && mem_bytes >= 16 && out.cls != InstrClass::other &&
      out.cls != InstrClass::branch)
    w = mem_bytes >= 64 ? VectorWidth::v512 : mem_bytes >= 32 ? VectorWidth::v256 : VectorWidth::v128;
  out.width = scalar_form(m) ? VectorWidth::scalar : w;
  out.gather = starts(m, "vgather") || starts(m, "vpgather") || starts(m, "vscatter") || starts(m, "vpscatter");
  note_step(m, ops, visible, out);
  bool jump = in.meta.category == ZYDIS_CATEGORY_COND_BR || in.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
  ZyanU64 target = 0;
  if (jump && visible == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative &&
      ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], address, &target))) {
    out.jump = true;
    out.target = target;
  }
}

}  // namespace

std::vector<Instruction> disassemble(std::span<const uint8_t> code, uint64_t address) {
  static const Zydis z;  // decoder and formatter hold no state between calls
  std::vector<Instruction> out;
  if (!z.ok) return out;
  size_t at = 0;
  ZydisDecodedInstruction in;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  while (at < code.size()) {
    if (ZYAN_SUCCESS(ZydisDecoderDecodeFull(&z.decoder, code.data() + at, code.size() - at, &in, ops))) {
      fill(z, in, ops, address + at, out.emplace_back());
      at += in.length;
    } else {  // skip one byte and go on
      Instruction& bad = out.emplace_back();
      bad.address = address + at;
      bad.size = 1;
      bad.text = "(bad)";
      ++at;
    }
  }
  return out;
}

}  // namespace opscope::debuginfo
