// The link rules: which op an event happened in, and which op launched each GPU launch.
//
// - Nesting: on each thread (pid, tid), the innermost cpu_op or user_annotation whose
//   span contains an event is its parent (a sweep over the thread's events in time
//   order, longest first at equal starts).
// - Launch → GPU work: a runtime/driver call and the kernels, copies and memsets it made
//   share args.correlation (flows s/f carry the same id; they are checked, not needed).
// - Launch → CPU op, by the file's generation (LaunchRule):
//     2024+:    the call's "External id" equals the launching cpu_op's "External id";
//     2021:     the lowercase "external id" does the same;
//     2022-23:  "External id" is the call's own correlation (useless for this), so the
//               launching op is the innermost cpu_op on the call's thread containing it.
//   Where an id finds no op, the enclosing op is used. GPU work whose launch fell outside
//   the window has no launch and no op.
#pragma once
#include <cstdint>
#include <vector>

#include "opscope/importer/kineto_reader.h"

namespace opscope::importer {

// framework scopes: cpu_op, user_annotation, and the legacy array's events.
bool is_scope(const RawTrace& t, const RawEvent& e);
bool is_op(const RawTrace& t, const RawEvent& e);

// The rule of this file. `self_referencing`: runtime calls' External id all equal their
// correlation (the 2022-23 form).
LaunchRule detect_launch_rule(const RawTrace& t, bool& self_referencing);

// Per event (by position in t.events; -1 = none): the innermost scope and the innermost
// op that contain it on its host track (`track[i]`, -1 for events not on a host thread).
struct Nesting {
  std::vector<int32_t> scope, op;
};
Nesting nest(const RawTrace& t, const std::vector<int32_t>& track);

// Per event: the op (event position) that launched it, for runtime calls; -1 otherwise.
std::vector<int32_t> launching_ops(const RawTrace& t, LaunchRule rule, const Nesting& nesting);

}  // namespace opscope::importer
