// The UI's files, embedded in the library at build time (tools/explorer/embed_assets.cmake
// writes them into a generated source), so no Node.js is needed at run time. When the UI
// was not built (no npm at configure time) the table is empty and the server says so.
#pragma once
#include <cstddef>
#include <string_view>

extern "C" {
struct opscope_ui_asset {
  const char* path;          // "/index.html", "/app.js", ...
  const char* content_type;  // "text/html; charset=utf-8", ...
  const unsigned char* data;
  size_t size;
};
// Defined by the generated source; a weak fallback returns none.
const opscope_ui_asset* opscope_ui_assets(size_t* count);
}

namespace opscope::explorer {

// The asset at exactly `path`, or nullptr. Paths are looked up, never opened: no traversal.
const opscope_ui_asset* find_ui_asset(std::string_view path);

// The page served at / when the UI was not built, and its style sheet at kNotBuiltCss
// (a file, not inline: the Content-Security-Policy allows no inline style).
std::string_view ui_not_built_page();
inline constexpr const char* kNotBuiltCss = "/opscope-not-built.css";
std::string_view ui_not_built_css();

}  // namespace opscope::explorer
