"""The device, its streams and its memory, as torch.cuda spells them."""
import contextlib

import torch

from . import _C

BACKEND = "privateuseone"  # torch 1.13 cannot rename it; a torch that can calls it "opscope"
if hasattr(torch.utils, "rename_privateuse1_backend"):
    torch.utils.rename_privateuse1_backend("opscope")
    BACKEND = "opscope"


def device_count():
    return _C.device_count()


def device(index=0):
    """The torch.device of opscope device `index` (privateuseone:index)."""
    if not isinstance(index, int) or not 0 <= index < device_count():
        raise RuntimeError(f"[privateuseone] device index {index} is out of range: opscope has "
                           f"{device_count()} device(s), privateuseone:0 to {device_count() - 1}")
    return torch.device(BACKEND, index)


def _index(dev):
    if dev is None:
        return 0
    if isinstance(dev, int):
        return dev
    d = torch.device(dev)
    if d.type != BACKEND:
        raise RuntimeError(f"[opscope] {d} is not an opscope device ({BACKEND}:N)")
    return d.index or 0


def synchronize(dev=None):
    """Waits for every launch on the device; raises the first kernel error since the last sync."""
    _C.synchronize(_index(dev))


def memory_stats(dev=None):
    """The caching allocator's figures: allocated/reserved/peak bytes, allocation counts."""
    return _C.memory_stats(_index(dev))


def empty_cache(dev=None):
    _C.empty_cache(_index(dev))


def reset_peak_memory_stats(dev=None):
    """memory_stats()'s peak_allocated_bytes starts again from the bytes allocated now."""
    _C.reset_peak_memory_stats(_index(dev))


class Stream:
    """An in-order queue of launches on the device (a new one, or an existing opscope stream)."""

    def __init__(self, dev=None, _stream=None):
        self._s = _stream if _stream is not None else _C.new_stream(_index(dev))

    @property
    def id(self):
        return self._s.id

    def synchronize(self):
        self._s.synchronize()

    def query(self):
        return self._s.query()

    def wait_stream(self, other):
        """Later launches on this stream wait for what `other` has queued so far."""
        self._s.wait_stream(other._s)

    def __eq__(self, other):
        return isinstance(other, Stream) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"opscope.Stream(id={self.id})"


def current_stream(dev=None):
    return Stream(_stream=_C.current_stream(_index(dev)))


def default_stream(dev=None):
    return Stream(_stream=_C.default_stream(_index(dev)))


@contextlib.contextmanager
def stream(s):
    """Ops in the block launch onto `s`."""
    _C._stream_enter(s._s)
    try:
        yield s
    finally:
        _C._stream_exit()
