// The streaming reader: a trace read through a window of a few bytes, in pieces that
// split every token, reads exactly as when read whole — names with escaped quotes and
// backslashes, root keys before and after traceEvents, events larger than the window.
#include <gtest/gtest.h>

#include <cstring>

#include "import_util.h"
#include "opscope/core/error.h"
#include "opscope/importer/kineto_reader.h"
#include "opscope/importer/trace_file.h"

namespace opscope::test {
namespace {

using importer::MemorySource;
using importer::RawTrace;

json tricky_trace() {
  json ev = json::array();
  for (int i = 0; i < 40; ++i) {
    std::string name = i % 3 == 0 ? "aten::add \"quoted\" \\ back\\slash ]}," : i % 3 == 1 ? "caf\u00e9 [x]" : "k";
    json args = {{"External id", i}, {"Input Dims", {{i, 2}, json::array()}}, {"Input type", {"float", "Scalar"}},
                 {"note", std::string(size_t(i * 7), 'x') + "\\\""}};
    ev.push_back(x_event("cpu_op", name, 1, 1, 10.0 * i, 5.0, args));
  }
  // Keys before and after the events, pretty-printed.
  json t;
  t["deviceProperties"] = {h100()};
  t["traceEvents"] = ev;
  t["zzz_after"] = {{"nested", {{"deep", {1, 2, {{"k", "}]"}}}}}}};
  t["baseTimeNanoseconds"] = 1700000000000000000;
  return t;
}

RawTrace read(const std::string& text, size_t window, size_t max_read) {
  MemorySource src("mem.json", text, max_read);
  return importer::read_kineto_from(src, window);
}

void expect_same(const RawTrace& a, const RawTrace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.strings[a.events[i].name], b.strings[b.events[i].name]) << i;
    EXPECT_EQ(a.strings[a.events[i].detail], b.strings[b.events[i].detail]) << i;
    EXPECT_EQ(a.events[i].ts, b.events[i].ts) << i;
    EXPECT_EQ(a.events[i].index, b.events[i].index) << i;
    EXPECT_EQ(a.events[i].external_id, b.events[i].external_id) << i;
  }
  EXPECT_EQ(a.gpus.size(), b.gpus.size());
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.legacy_array, b.legacy_array);
}

TEST(ImportStream, TinyWindowsAndSplitReadsReadTheSame) {
  for (int indent : {-1, 2}) {
    std::string text = tricky_trace().dump(indent);
    RawTrace whole = read(text, size_t(32) << 20, SIZE_MAX);
    ASSERT_EQ(whole.events.size(), 40u);
    EXPECT_EQ(whole.strings[whole.events[0].name], "aten::add \"quoted\" \\ back\\slash ]},");
    EXPECT_EQ(whole.strings[whole.events[1].name], "caf\u00e9 [x]");
    EXPECT_EQ(whole.strings[whole.events[5].detail], "[(5, 2) f32, () Scalar]");
    EXPECT_EQ(whole.base_time_ns, 1700000000000000000);
    ASSERT_EQ(whole.gpus.size(), 1u);
    EXPECT_EQ(whole.gpus[0].name, "NVIDIA H100 80GB HBM3");
    for (size_t window : {size_t(16), size_t(61), size_t(200), size_t(4096)})
      for (size_t piece : {size_t(1), size_t(7), SIZE_MAX}) {
        SCOPED_TRACE("window " + std::to_string(window) + " piece " + std::to_string(piece));
        expect_same(whole, read(text, window, piece));
      }
  }
}

TEST(ImportStream, LegacyArrayThroughATinyWindow) {
  json ev = json::array();
  for (int i = 0; i < 25; ++i)
    ev.push_back({{"name", "op" + std::to_string(i)}, {"ph", "X"}, {"ts", i}, {"dur", 1}, {"tid", 1}, {"pid", "CPU functions"}});
  std::string text = ev.dump();
  RawTrace whole = read(text, size_t(32) << 20, SIZE_MAX);
  EXPECT_TRUE(whole.legacy_array);
  expect_same(whole, read(text, 16, 3));
}

TEST(ImportStream, ErrorsNameTheSameEventThroughAnyWindow) {
  std::string text = tricky_trace().dump();
  std::string cut = text.substr(0, text.find("\"External id\":7,"));  // inside event 7
  for (size_t window : {size_t(16), size_t(100), size_t(32) << 20}) {
    try {
      read(cut, window, 5);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "[import] mem.json: event 7 cannot be read: the file ends inside it (a truncated file?)");
    }
  }
  // A value the parser refuses inside one event of a batch: that event is named.
  std::string bad = text;
  size_t at = bad.find("\"External id\":12");
  bad.replace(at, std::strlen("\"External id\":12"), "\"External id\" 12");  // no ':'

  for (size_t window : {size_t(64), size_t(32) << 20}) {
    try {
      read(bad, window, SIZE_MAX);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[import] mem.json: event 12 cannot be read: ", 0), 0u) << e.what();
    }
  }
  // A list in an event's args with no comma between two values (the fuzzer's
  // "[[2- 3]]"): that event is named, through any window. The reader used to end the
  // list there, which left the parser unable to go on: the one-window read then lost
  // the events after it without a word, and the 64-byte window read them all.
  for (const char* list : {"[[2 3]]", "[[2- 3], []]", "[1, [2 3]]"}) {
    std::string dims = text;
    size_t e5 = dims.find("\"External id\":5");
    dims.insert(e5, std::string("\"Input Dims\":") + list + ",");
    for (size_t window : {size_t(64), size_t(32) << 20}) {
      try {
        read(dims, window, 7);
        ADD_FAILURE() << list << ": no error";
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("[import] mem.json: event 5 cannot be read: ", 0), 0u) << e.what();
      }
    }
  }
  // Between two events, no comma or two: an error through any window, found by the
  // splitter (a window may end between the two, and the parser then sees each alone).
  size_t tenth = text.rfind(",{", text.find("\"External id\":10"));
  ASSERT_NE(tenth, std::string::npos);
  for (const char* between : {" ", ",,"}) {
    std::string joined = text;
    joined.replace(tenth, 1, between);
    for (size_t window : {size_t(64), size_t(32) << 20}) {
      try {
        read(joined, window, 7);
        ADD_FAILURE() << "'" << between << "': no error";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(std::strlen(between) == 1 ? "not JSON (expected ',' or ']' after an event"
                                                                        : "not JSON (two ',' in a row between events"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  // Text after the root value.
  try {
    read(text + " {}", 64, SIZE_MAX);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not JSON (text follows the end of the JSON value"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opscope::test
