// The chains of fusable ops a profile ran: on each host thread, top-level launching ops
// in time order, cut at ops that never fuse (matmul, softmax, concat, the built-in
// norms) and where their range ends (each call's record_function, each ProfilerStep,
// each module), grouped by their op sequence and the ranges around them, so a chain
// repeated is one suggestion with its count. Ops without launches (views) do not cut a
// chain.
//
// On a GPU, a bias add and/or an activation right after a matmul or convolution is its
// epilogue: the chain is "matmul → add → relu", and what fusing saves is the epilogue's
// kernels (the matmul writes its output once, finished).
//
// keep_chain() decides which chains become suggestions: the place for rules that drop
// one (a profile whose compiled regions already fused it).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "opscope/analysis/advisor/advise.h"
#include "opscope/analysis/advisor/profile_ops.h"

namespace opscope::advisor {

struct Chain {
  std::vector<const Op*> ops;
  std::string next;              // the op that ended it ("" at a range's end)
  const Op* epilogue_of = nullptr;  // the matmul whose epilogue it is (GPU), else none
};

struct ChainKey {
  std::string pattern, context, scope;
};

// The chains found, by suggestion: (pattern, context) → occurrences.
using FoundChains = std::map<std::pair<std::string, std::string>, std::vector<Chain>>;

FoundChains find_chains(const ProfileOps& p, const AdviseOptions& options);
ChainKey chain_key(const ProfileOps& p, const Chain& chain);
bool keep_chain(const Chain& chain, const AdviseOptions& options);

}  // namespace opscope::advisor
