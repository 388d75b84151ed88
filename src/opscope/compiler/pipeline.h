// The compile pipeline after tracing, as one function: passes → codegen → build or load
// the artifact → an executable. compile() calls it for each new signature; tests call it
// with graphs built by hand.
#pragma once
#include "opscope/compiler/compile.h"
#include "opscope/compiler/executor.h"
#include "opscope/compiler/graph.h"

namespace opscope::compiler {

// Compiles a traced graph. Fills `rep` from compiled_graph on (the caller sets name,
// signature, traced_graph and trace_ms). Throws "[compile] ..." on build errors.
Executable compile_graph(Graph g, const CompileOptions& opts, CompileReport& rep);

}  // namespace opscope::compiler
