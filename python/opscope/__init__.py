"""opscope as a PyTorch device.

    import torch, opscope
    dev = opscope.device()            # torch.device('privateuseone:0'), opscope's CPU device
    y = model.to(dev)(x.to(dev))      # ops launch asynchronously; .cpu()/.item() synchronize
    print(opscope.fallback_report())  # the aten ops that ran torch's CPU kernel instead

Importing registers the device with torch (the extension opscope._C).
"""
import os as _os

import torch  # noqa: F401  (libtorch must be loaded before the extension)

from . import _cpu_share

_cpu_share.apply()  # several ranks on one machine: each device its own CPUs (before the device exists)

# OPSCOPE_PROFILE=1 would make libopscope profile from its load on, outside torch's view;
# the Python package profiles instead (opscope.profiler, with the aten ops), so the
# library must not see the variable while it loads.
_auto = _os.environ.pop("OPSCOPE_PROFILE", None)
try:
    from . import _C  # noqa: F401  registers privateuseone
finally:
    if _auto is not None:
        _os.environ["OPSCOPE_PROFILE"] = _auto
from ._device import (Stream, current_stream, default_stream, device, device_count, empty_cache, memory_stats,
                      reset_peak_memory_stats, stream, synchronize)
from ._fallback import fallback_report, fallback_stats, reset_fallback_stats
from . import _printing, _serialization  # noqa: F401
from . import ops
from . import profiler
from ._compile import compile  # noqa: A001  (opscope.compile, as torch.compile)
from ._explain import explain
from . import distributed  # registers the "opscope" c10d backend

if _auto is not None:
    profiler._auto_profile()

__all__ = ["device", "device_count", "synchronize", "Stream", "stream", "current_stream", "default_stream",
           "memory_stats", "reset_peak_memory_stats", "empty_cache", "fallback_report", "fallback_stats", "reset_fallback_stats", "ops",
           "profiler", "compile", "explain", "distributed"]
