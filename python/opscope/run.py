"""python3 -m opscope.run [torchrun's arguments] script.py [args]: torchrun itself
(torch.distributed.run, every argument as torchrun takes it), with one defect of Debian's
torch 1.13 under Python 3.11 worked around.

Why it exists: torch 1.13's Std.from_str (torch/distributed/elastic/multiprocessing/api.py)
maps "0".."3" to a Std flag by iterating the IntFlag. Python 3.11 no longer yields the zero
flag (NONE) or the composite ALL when iterating a Flag, so from_str("0") returns None and
torchrun dies at start with "AttributeError: 'NoneType' object has no attribute 'get'";
"--redirects 0:0 --tee 0:0" fails one line later the same way. Here Std.from_str builds the
flag from its value (Std(v)), which every Python reads the same; nothing else changes. On a
torch whose from_str works, the patch is not applied.

    python3 -m opscope.run --nproc_per_node 2 examples/tp_llama.py
    python3 -m opscope.run --nnodes 2 --node_rank 0 --master_addr HOST --master_port 29500 \\
        --nproc_per_node 2 script.py
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api as _mp_api


def _from_str(vm):
    """torch's Std.from_str, the value mapped with Std(int(v)) instead of by iteration."""
    std = _mp_api.Std
    if re.match(_mp_api._VALUE_REGEX, vm):
        return std(int(vm))
    if re.match(_mp_api._MAPPING_REGEX, vm):
        out = {}
        for m in vm.split(","):
            i, v = m.split(":")
            out[int(i)] = std(int(v))
        return out
    raise ValueError(f"{vm} does not match: <{_mp_api._VALUE_REGEX}> or <{_mp_api._MAPPING_REGEX}>")


def needs_patch():
    """True where torch's Std.from_str is broken (Python 3.11 with torch 1.13)."""
    try:
        return not isinstance(_mp_api.Std.from_str("0"), _mp_api.Std)
    except Exception:  # noqa: BLE001  (any failure of the original means: patch it)
        return True


def patch():
    if needs_patch():
        _mp_api.Std.from_str = staticmethod(_from_str)


def main(argv=None):
    patch()
    from torch.distributed.run import main as torchrun_main
    torchrun_main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
