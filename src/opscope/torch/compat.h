// What differs between the torch versions the bridge builds against, in one place.
// Debian 12 ships torch 1.13: PrivateUse1 keeps its name (no rename_privateuse1_backend,
// which torch 2.1 added) and has no per-backend hooks for generators or serialization.
#pragma once
#include <torch/version.h>

#define OPSCOPE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace opscope::torch_bridge {

// The name torch gives the device: "privateuseone" until a torch that can rename it.
inline constexpr bool kCanRenameBackend = OPSCOPE_TORCH_AT_LEAST(2, 1);
inline constexpr const char* kBackendName = "privateuseone";

}  // namespace opscope::torch_bridge
