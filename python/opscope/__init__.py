"""opscope as a PyTorch device.

    import torch, opscope
    dev = opscope.device()            # torch.device('privateuseone:0'), opscope's CPU device
    y = model.to(dev)(x.to(dev))      # ops launch asynchronously; .cpu()/.item() synchronize
    print(opscope.fallback_report())  # the aten ops that ran torch's CPU kernel instead

Importing registers the device with torch (the extension opscope._C).
"""
import torch  # noqa: F401  (libtorch must be loaded before the extension)

from . import _C  # noqa: F401  registers privateuseone
from ._device import (Stream, current_stream, default_stream, device, device_count, empty_cache, memory_stats,
                      stream, synchronize)
from ._fallback import fallback_report, fallback_stats, reset_fallback_stats
from . import _printing, _serialization  # noqa: F401
from . import ops

__all__ = ["device", "device_count", "synchronize", "Stream", "stream", "current_stream", "default_stream",
           "memory_stats", "empty_cache", "fallback_report", "fallback_stats", "reset_fallback_stats", "ops"]
