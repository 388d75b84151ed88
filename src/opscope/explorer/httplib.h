// cpp-httplib as Debian builds it: a compiled library built with OpenSSL, zlib and brotli
// support, whose classes' layout depends on these macros, so every includer defines them
// alike by including this header instead of <httplib.h>.
#pragma once
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif
#include <httplib.h>
