#include "opscope/debuginfo/disasm.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <array>
#include <mutex>

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
  return m == "movd" || m == "movq" || m == "vmovd" || m == "vmovq" || m == "vmovw" || starts(b, "insr") ||
         starts(b, "extr") || m == "extractps" || m == "vextractps" || m == "insertps" || m == "vinsertps";
}

VectorWidth reg_width(std::string_view reg) {
  if (starts(reg, "zmm")) return VectorWidth::v512;
  if (starts(reg, "ymm")) return VectorWidth::v256;
  if (starts(reg, "xmm")) return VectorWidth::v128;
  return VectorWidth::scalar;
}

}  // namespace

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

struct Capstone {
  csh handle = 0;
  bool ok = false;
  Capstone() {
    ok = cs_open(CS_ARCH_X86, CS_MODE_64, &handle) == CS_ERR_OK;
    if (ok) cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  }
  ~Capstone() {
    if (ok) cs_close(&handle);
  }
};

void fill(csh h, const cs_insn& in, Instruction& out) {
  out.address = in.address;
  out.size = uint8_t(in.size);
  out.text = in.op_str[0] ? std::string(in.mnemonic) + " " + in.op_str : std::string(in.mnemonic);
  const cs_x86& x = in.detail->x86;
  bool has_mem = false, mem_first = false;
  VectorWidth w = VectorWidth::scalar;
  int mem_bytes = 0;
  for (int i = 0; i < x.op_count; ++i) {
    const cs_x86_op& op = x.operands[i];
    if (op.type == X86_OP_REG) {
      VectorWidth rw = reg_width(cs_reg_name(h, op.reg));
      if (uint16_t(rw) > uint16_t(w)) w = rw;
    } else if (op.type == X86_OP_MEM) {
      has_mem = true;
      mem_first = mem_first || i == 0;
      mem_bytes = op.size;
      // Capstone says how the operand is used where it knows; else the destination is first.
      bool reads = op.access ? (op.access & CS_AC_READ) : i > 0;
      bool writes = op.access ? (op.access & CS_AC_WRITE) : i == 0 && x.op_count >= 2;
      if (reads) out.read_bytes += op.size;
      if (writes) out.write_bytes += op.size;
    }
  }
  std::string_view m = in.mnemonic;
  if (starts(m, "lea") || starts(m, "nop") || starts(m, "prefetch")) out.read_bytes = out.write_bytes = 0;  // no access
  out.cls = classify(m, has_mem && !starts(m, "lea"), mem_first, x.op_count);
  // A store writes its memory operand and reads none (Capstone 4 marks some AVX-512
  // stores' destination as read).
  if (out.cls == InstrClass::store || out.cls == InstrClass::stream_store) {
    out.write_bytes = mem_bytes;
    out.read_bytes = 0;
  }
  if (w == VectorWidth::scalar && has_mem && mem_bytes >= 16 && out.cls != InstrClass::other &&
      out.cls != InstrClass::branch)
    w = mem_bytes >= 64 ? VectorWidth::v512 : mem_bytes >= 32 ? VectorWidth::v256 : VectorWidth::v128;
  out.width = scalar_form(m) ? VectorWidth::scalar : w;
  for (int g = 0; g < in.detail->groups_count; ++g)
    if (in.detail->groups[g] == X86_GRP_JUMP && x.op_count == 1 && x.operands[0].type == X86_OP_IMM) {
      out.jump = true;
      out.target = uint64_t(x.operands[0].imm);
    }
}

}  // namespace

std::vector<Instruction> disassemble(std::span<const uint8_t> code, uint64_t address) {
  thread_local Capstone cs;  // a handle is not to be shared between threads
  std::vector<Instruction> out;
  if (!cs.ok) return out;
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t at = address;
  cs_insn* in = cs_malloc(cs.handle);
  while (left > 0) {
    if (cs_disasm_iter(cs.handle, &p, &left, &at, in)) {
      fill(cs.handle, *in, out.emplace_back());
    } else {  // skip one byte and go on
      Instruction& bad = out.emplace_back();
      bad.address = at;
      bad.size = 1;
      bad.text = "(bad)";
      ++p;
      --left;
      ++at;
    }
  }
  cs_free(in, 1);
  return out;
}

}  // namespace opscope::debuginfo
