"""torch.save of a device tensor: torch 1.13 has no way to map a privateuseone storage, so
it would fail deep in pickling; opscope stops it first with what to do instead."""
import torch.serialization

from ._device import BACKEND


def _tag(storage):
    dev = getattr(storage, "device", None)
    if dev is not None and dev.type == BACKEND:
        raise RuntimeError(f"[opscope] torch.save cannot save a tensor on {dev} (torch 1.13 cannot map its "
                           f"storage); save tensor.cpu() (or model.cpu().state_dict()) instead")
    return None


def _never_load(obj, location):
    return None


torch.serialization.register_package(5, _tag, _never_load)
