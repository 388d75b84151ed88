"""The device itself: factories, copies, printing, seeds, streams, memory, asynchrony, errors."""
import os
import subprocess
import sys

import pytest
import torch

import opscope
from conftest import Gate, assert_close


def test_to_and_back_keeps_values_and_dtype(dev):
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.bool, torch.uint8):
        x = (torch.randn(3, 5) * 10).to(dtype)
        y = x.to(dev)
        assert y.device == dev and y.dtype == dtype
        assert torch.equal(y.cpu(), x)


def test_copy_broadcasts_the_source(dev):
    d = torch.zeros(3, 4, device=dev)
    d.copy_(torch.arange(4.0))  # host to device, broadcast
    assert torch.equal(d.cpu(), torch.arange(4.0).expand(3, 4))
    e = torch.zeros(3, 4, device=dev)
    e.copy_(d[1])  # device to device, broadcast
    assert torch.equal(e.cpu(), torch.arange(4.0).expand(3, 4))
    with pytest.raises(RuntimeError):
        e.copy_(torch.ones(5))


def test_copy_between_overlapping_views_is_refused_as_on_cpu(dev):
    x = torch.arange(10.0).to(dev)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:].copy_(x[:-1])
    x[1:].copy_(x[:-1].clone())
    assert torch.equal(x.cpu(), torch.tensor([0.0, 0, 1, 2, 3, 4, 5, 6, 7, 8]))


def test_factories_make_device_tensors(dev):
    assert torch.equal(torch.zeros(2, 3, device=dev).cpu(), torch.zeros(2, 3))
    assert torch.equal(torch.ones(4, dtype=torch.bfloat16, device=dev).cpu(), torch.ones(4, dtype=torch.bfloat16))
    assert torch.equal(torch.arange(7, device=dev).cpu(), torch.arange(7))
    assert torch.equal(torch.full((2, 2), 3.5, device=dev).cpu(), torch.full((2, 2), 3.5))
    e = torch.empty(5, 6, device=dev)
    assert e.device == dev and e.shape == (5, 6)


def test_random_factories_follow_manual_seed(dev):
    torch.manual_seed(123)
    a = torch.randn(64, device=dev).cpu()
    torch.manual_seed(123)
    b = torch.randn(64, device=dev).cpu()
    torch.manual_seed(124)
    c = torch.randn(64, device=dev).cpu()
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_item_and_printing(dev):
    x = torch.tensor([[1.5, -2.0], [3.0, 4.25]]).to(dev)
    assert x.sum().item() == pytest.approx(6.75)
    text = repr(x)
    assert "1.5000" in text and "4.2500" in text and "device='privateuseone:0'" in text


def test_model_to_device_moves_parameters(dev):
    m = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    want = m(x)
    md = m.to(dev)
    assert all(p.device == dev for p in md.parameters())
    with torch.no_grad():
        assert_close(md(x.to(dev)), want)


def test_device_index_out_of_range():
    with pytest.raises(RuntimeError, match=r"device index 1 is out of range"):
        opscope.device(1)
    with pytest.raises(RuntimeError, match=r"device index 1 is out of range"):
        torch.empty(3, device="privateuseone:1")


def test_two_devices_in_one_op(dev):
    with pytest.raises(RuntimeError, match=r"two devices, privateuseone:0 and cpu"):
        torch.randn(3, device=dev) + torch.randn(3)
    with pytest.raises(RuntimeError, match=r"two devices"):
        torch.randn(3, 3, device=dev) @ torch.randn(3, 3)


def test_cpu_scalar_tensors_join_device_ops(dev):
    x = torch.randn(5)
    assert_close(x.to(dev) * torch.tensor(3.0), x * 3)


def test_launch_returns_before_the_kernel_ends(dev):
    x = torch.randn(256, device=dev)
    opscope.synchronize()
    gate = Gate()
    y = torch.ops.opscope._test_kernel(x, gate.id, False)  # returns with its kernel held at the gate
    assert not opscope.default_stream().query()
    gate.open()
    assert torch.equal(y.cpu(), x.cpu())
    assert opscope.default_stream().query()


def test_arange_and_empty_outs_do_not_wait_for_queued_kernels(dev):
    # torch.arange(..., device=dev) resizes an empty out tensor; a decode step starts with
    # one (its positions). Growing a storage of 0 bytes has nothing to copy, so it must not
    # wait for the device: here a held kernel stays queued while it runs. (Run on a thread,
    # so that a regression fails after the timeout instead of hanging on the gate.)
    import threading
    x = torch.randn(1000, device=dev)
    gate = Gate()
    y = torch.ops.opscope._test_kernel(x, gate.id, False)
    done = []
    t = threading.Thread(target=lambda: done.append(torch.arange(3, 8, device=dev)))
    t.start()
    t.join(timeout=60)
    queued = not opscope.default_stream().query()
    gate.open()
    t.join()
    assert done and queued, "torch.arange waited for the held kernel"
    assert torch.equal(done[0].cpu(), torch.arange(3, 8)) and torch.equal(y.cpu(), x.cpu())


def test_stream_order_and_sync(dev):
    x = torch.randn(1000, device=dev)
    gate = Gate()
    y = torch.ops.opscope._test_kernel(x, gate.id, False)  # a held writer
    z = y * 2  # queued behind it on the same stream
    assert not opscope.default_stream().query()
    gate.open()
    assert_close(z, x.cpu() * 2)


def test_kernel_error_surfaces_at_the_next_sync_naming_the_op(dev):
    x = torch.randn(16, device=dev)
    y = torch.ops.opscope._test_kernel(x, 0, True)  # returns: the error is not known yet
    with pytest.raises(RuntimeError, match=r"\[opscope::_test_kernel\] kernel test_gated_copy failed"):
        y.cpu()
    # The stream recovers after the error was reported.
    assert_close(x * 1, x.cpu())


def test_the_test_kernel_refuses_an_unknown_gate(dev):
    with pytest.raises(RuntimeError, match=r"\[opscope::_test_kernel\] no closed gate -5"):
        torch.ops.opscope._test_kernel(torch.randn(4, device=dev), -5, False)
    with pytest.raises(RuntimeError, match=r"no closed gate"):
        opscope._C._test_gate_open(-5)


def test_freed_memory_is_not_reused_while_a_launch_uses_it(dev):
    n = 1 << 16
    x = torch.randn(n, device=dev)
    want = x.cpu()
    ptr = x.data_ptr()
    gate = Gate()
    y = torch.ops.opscope._test_kernel(x, gate.id, False)  # reads x once the gate opens
    del x
    z = torch.empty(n, device=dev)  # same size: the cache would hand out x's block
    assert z.data_ptr() != ptr
    z.fill_(7.0)
    gate.open()
    assert torch.equal(y.cpu(), want)
    # Once the launch has retired the block returns to the cache and is reused.
    del z
    opscope.synchronize()
    w = torch.empty(n, device=dev)
    v = torch.empty(n, device=dev)
    assert ptr in (w.data_ptr(), v.data_ptr())


def test_streams_from_python(dev):
    s = opscope.Stream()
    assert s != opscope.default_stream()
    x = torch.randn(100, device=dev)
    gate = Gate()
    with opscope.stream(s):
        assert opscope.current_stream() == s
        y = torch.ops.opscope._test_kernel(x, gate.id, False)
        assert not s.query()
    assert opscope.current_stream() == opscope.default_stream()
    gate.open()
    s.synchronize()
    assert s.query()
    assert torch.equal(y.cpu(), x.cpu())


def test_memory_stats_count_allocations(dev):
    before = opscope.memory_stats()
    keep = torch.empty(1 << 20, device=dev)
    after = opscope.memory_stats()
    assert after["allocated_bytes"] - before["allocated_bytes"] >= 4 << 20
    assert after["num_allocs"] == before["num_allocs"] + 1
    del keep
    # The peak starts again from what is allocated now, then follows new allocations.
    opscope.synchronize()
    opscope.reset_peak_memory_stats()
    s = opscope.memory_stats()
    assert s["peak_allocated_bytes"] == s["allocated_bytes"]
    tmp = torch.empty(1 << 21, device=dev)
    assert opscope.memory_stats()["peak_allocated_bytes"] >= s["allocated_bytes"] + (8 << 20)
    del tmp


def test_torch_save_of_a_device_tensor_says_to_save_cpu(dev, tmp_path):
    x = torch.randn(3, device=dev)
    with pytest.raises(RuntimeError, match=r"\.cpu\(\)"):
        torch.save(x, tmp_path / "x.pt")
    torch.save(x.cpu(), tmp_path / "x.pt")
    assert torch.equal(torch.load(tmp_path / "x.pt"), x.cpu())


def test_out_of_memory_names_the_op_the_bytes_and_the_allocator_state(dev):
    with pytest.raises(RuntimeError, match=r"\[aten::empty\] out of memory on privateuseone:0.*"
                                           r"17592186044416 bytes.*allocator: \d+ bytes allocated"):
        torch.empty(1 << 42, device=dev)
    x = torch.ones(1 << 10, device=dev)
    with pytest.raises(RuntimeError, match=r"\[aten::mul\] out of memory .*allocator: ") as e:
        x.expand(1 << 32, 1 << 10) * 2
    assert str(e.value).count("[aten::mul]") == 1, str(e.value)  # named once, not by each layer
    assert torch.equal((x * 2).cpu(), torch.full((1 << 10,), 2.0))  # the device still works


def test_an_out_of_range_embedding_index_is_a_kernel_error_at_sync(dev):
    w = torch.randn(10, 4).to(dev)
    y = torch.nn.functional.embedding(torch.tensor([1, 12]).to(dev), w)  # launched: no error yet
    with pytest.raises(RuntimeError, match=r"\[embedding\] index 12 .* out of range for a weight of 10 rows"):
        y.cpu()
    assert torch.equal((w * 1).cpu(), w.cpu())


def test_memory_stats_report_the_devices_capacity(tmp_path):
    code = "import opscope; print(opscope.memory_stats()['capacity_bytes'])"
    env = dict(os.environ, OPSCOPE_CPU_MEMORY="3G")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip().splitlines()[-1]) == 3 << 30
    assert opscope.memory_stats()["capacity_bytes"] > 0
