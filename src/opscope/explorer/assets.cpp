#include "opscope/explorer/assets.h"

extern "C" __attribute__((weak)) const opscope_ui_asset* opscope_ui_assets(size_t* count) {
  *count = 0;
  return nullptr;
}

namespace opscope::explorer {

const opscope_ui_asset* find_ui_asset(std::string_view path) {
  size_t n = 0;
  const opscope_ui_asset* table = opscope_ui_assets(&n);
  for (size_t i = 0; i < n; ++i)
    if (path == table[i].path) return &table[i];
  return nullptr;
}

std::string_view ui_not_built_page() {
  return R"(<!doctype html><html><head><meta charset="utf-8"><title>opscope explorer</title>
<link rel="stylesheet" href="/opscope-not-built.css"></head><body>
<h1>opscope explorer</h1>
<p>The UI was not built: <code>npm</code> was not found when this build was configured.
Install Node.js and npm, then re-run CMake and rebuild.</p>
<p>The JSON API works without it: <a href="/api/profiles">/api/profiles</a>.</p>
</body></html>)";
}

std::string_view ui_not_built_css() {
  return "body{font:15px/1.5 system-ui,sans-serif;max-width:40em;margin:4em auto;color:#222}\n"
         "code{background:#eee;padding:0 .3em;border-radius:3px}\n";
}

}  // namespace opscope::explorer
