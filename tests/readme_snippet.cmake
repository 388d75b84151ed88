# Copies the README's C++ example (its first ```cpp block) out of README.md for
# tests/readme_test.cpp: its #include lines into readme_cpp_includes.inc, the rest into
# readme_cpp_body.inc behind a #line directive, so a compile error points at README.md.
#   cmake -DREADME=README.md -DOUT_DIR=DIR -P readme_snippet.cmake
file(READ "${README}" text)
string(FIND "${text}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block (tests/readme_test.cpp runs it)")
endif()
math(EXPR body_start "${start} + 7")
string(SUBSTRING "${text}" 0 ${body_start} before)
string(SUBSTRING "${text}" ${body_start} -1 rest)
string(FIND "${rest}" "```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the ```cpp block is not closed")
endif()
string(SUBSTRING "${rest}" 0 ${end} code)
# The block's first line: one more than the newlines before it.
string(REGEX MATCHALL "\n" newlines "${before}")
list(LENGTH newlines line)
math(EXPR line "${line} + 1")
string(REGEX MATCHALL "#include[^\n]*" includes "${code}")
string(REPLACE ";" "\n" includes "${includes}")
string(REGEX REPLACE "#include[^\n]*" "" body "${code}")  # blank lines keep the numbering
file(WRITE "${OUT_DIR}/readme_cpp_includes.inc.tmp" "${includes}\n")
file(WRITE "${OUT_DIR}/readme_cpp_body.inc.tmp" "#line ${line} \"${README}\"\n${body}")
file(RENAME "${OUT_DIR}/readme_cpp_includes.inc.tmp" "${OUT_DIR}/readme_cpp_includes.inc")
file(RENAME "${OUT_DIR}/readme_cpp_body.inc.tmp" "${OUT_DIR}/readme_cpp_body.inc")
