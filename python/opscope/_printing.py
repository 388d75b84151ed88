"""Printing a device tensor: torch 1.13 formats privateuseone tensors with device ops
(each a fallback); opscope formats a host copy instead and names the device."""
import torch
import torch._tensor_str

from ._device import BACKEND

_str = torch._tensor_str._str


def _device_str(self, *, tensor_contents=None):
    if isinstance(self, torch.Tensor) and self.device.type == BACKEND and tensor_contents is None:
        with torch.no_grad():
            text = _str(self.detach().cpu())
        return text[:-1] + f", device='{self.device}')" if text.endswith(")") else text
    return _str(self, tensor_contents=tensor_contents)


torch._tensor_str._str = _device_str
