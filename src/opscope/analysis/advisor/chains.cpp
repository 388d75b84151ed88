#include "opscope/analysis/advisor/chains.h"

#include <algorithm>
#include <unordered_map>

#include "opscope/analysis/advisor/op_kinds.h"

namespace opscope::advisor {

ChainKey chain_key(const ProfileOps& p, const Chain& c) {
  std::vector<std::string_view> ctx = p.context_of(c.ops.front()->ev);
  for (const Op* o : c.ops) {
    std::vector<std::string_view> other = p.context_of(o->ev);
    size_t k = 0;
    while (k < ctx.size() && k < other.size() && ctx[k] == other[k]) ++k;
    ctx.resize(k);
  }
  ChainKey key;
  for (auto s : ctx) {
    if (!key.context.empty()) key.context += '/';
    key.context += generalize(s);
  }
  if (c.epilogue_of) key.pattern = c.epilogue_of->ev->name;
  for (const Op* o : c.ops) {
    if (!key.pattern.empty()) key.pattern += " → ";
    key.pattern += o->ev->name;
  }
  // The region to compile; a ProfilerStep is the loop's iteration, not a region.
  key.scope = ctx.empty() || ctx.back().rfind("ProfilerStep#", 0) == 0 ? "" : std::string(ctx.back());
  return key;
}

bool keep_chain(const Chain& c, const AdviseOptions& options) {
  if (c.epilogue_of) return true;           // one op past its matmul is worth an epilogue
  if (!options.pattern.empty()) return true;  // every place the asked-for sequence runs
  return int(c.ops.size()) >= options.min_ops;
}

FoundChains find_chains(const ProfileOps& p, const AdviseOptions& options) {
  // With options.within, each op's innermost enclosing scope of that name (0: none).
  std::unordered_map<const Op*, uint64_t> region_of;
  std::map<int32_t, std::vector<const Op*>> by_track;
  for (auto& [id, o] : p.ops) {
    if (!options.within.empty()) {
      uint64_t r = p.enclosing(o.ev, options.within);
      if (!r) continue;
      region_of[&o] = r;
    }
    by_track[o.ev->track].push_back(&o);
  }
  FoundChains found;
  auto collect = [&](Chain c) {
    if (!keep_chain(c, options)) return;
    ChainKey k = chain_key(p, c);
    found[{k.pattern, k.context}].push_back(std::move(c));
  };
  // A chain, or with options.pattern each place the pattern occurs in it. `before`: the
  // op just before the chain in its range (a matmul may take its head as an epilogue).
  auto close = [&](std::vector<const Op*>& chain, const std::string& next, const Op* before) {
    size_t head = 0;
    if (p.gpu && options.pattern.empty() && before && !chain.empty() && matmul_like(before->ev->name) &&
        before->range == chain.front()->range) {
      if (head < chain.size() && bias_add(chain[head]->ev->name, chain[head]->ev->shapes)) ++head;
      if (head < chain.size() && activation(chain[head]->ev->name)) ++head;
      if (head > 0)
        collect({{chain.begin(), chain.begin() + long(head)}, head == chain.size() ? next : chain[head]->ev->name, before});
    }
    std::vector<const Op*> rest(chain.begin() + long(head), chain.end());
    const auto& pat = options.pattern;
    if (pat.empty()) {
      if (!rest.empty()) collect({rest, next, nullptr});
    } else {
      for (size_t i = 0; i + pat.size() <= rest.size();) {
        bool match = true;
        for (size_t k = 0; k < pat.size() && match; ++k) match = base_op(rest[i + k]->ev->name) == pat[k];
        if (!match) {
          ++i;
          continue;
        }
        std::vector<const Op*> sub(rest.begin() + long(i), rest.begin() + long(i + pat.size()));
        collect({sub, i + pat.size() == rest.size() ? next : rest[i + pat.size()]->ev->name, nullptr});
        i += pat.size();
      }
    }
    chain.clear();
  };
  for (auto& [track, list] : by_track) {
    std::sort(list.begin(), list.end(), [](const Op* a, const Op* b) { return a->ev->t0 < b->ev->t0; });
    std::vector<const Op*> chain;
    const Op* before = nullptr;
    for (const Op* o : list) {
      // A chain ends at its range's end (each call, step, module) and at an op that
      // cannot fuse.
      if (!chain.empty() && (o->range != chain.front()->range ||
                             (!options.within.empty() && region_of[o] != region_of[chain.front()]))) {
        close(chain, "", before);
        before = nullptr;
      }
      if (fusable_op(o->ev->name)) {
        chain.push_back(o);
      } else {
        close(chain, o->ev->name, before);
        before = o;
      }
    }
    close(chain, "", before);
  }
  return found;
}

}  // namespace opscope::advisor
