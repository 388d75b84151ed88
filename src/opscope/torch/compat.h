// What differs between the torch versions the bridge builds against, in one place.
// Debian 12 ships torch 1.13: PrivateUse1 keeps the name "privateuseone" (torch 2.1's
// rename_privateuse1_backend is used from Python where it exists: python/opscope/_device.py),
// and SymInt schemas take c10::SymIntArrayRef (copy.cpp converts with asIntArrayRefSlow).
#pragma once
#include <torch/version.h>

#define OPSCOPE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace opscope::torch_bridge {

// The device's name in torch's messages.
inline constexpr const char* kBackendName = OPSCOPE_TORCH_AT_LEAST(2, 1) ? "opscope" : "privateuseone";

}  // namespace opscope::torch_bridge
