"""Real models run forward on the device and match torch CPU: torchvision's resnet18,
mobilenet_v3_small and vit_b_16 (random weights, eval), and a Hugging Face-style Llama
decoder with a KV cache (prefill + decode steps)."""
import warnings

import pytest
import torch
import torchvision

import opscope
from llama_hf import Llama, generate


def run_both(model, x):
    model.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model(x)
        got = model.to(opscope.device())(x.to(opscope.device())).cpu()
    model.cpu()
    return got, want


def assert_rel_close(got, want, rtol):
    err = (got - want).abs().max().item()
    scale = want.abs().max().item()
    assert scale > 0, "the reference is all zeros: the comparison would prove nothing"
    assert err <= rtol * scale, f"max error {err} vs scale {scale}"


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_cnn_matches_cpu(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)()
    if name == "mobilenet_v3_small":
        model.classifier = torch.nn.Identity()  # its random classifier makes outputs ~1e-9
    opscope.reset_fallback_stats()
    got, want = run_both(model, torch.randn(2, 3, 64, 64))
    assert_rel_close(got, want, 1e-4)
    # Convolutions (dense, 1x1, depthwise), max pooling, batch norm and the activations
    # all ran on opscope's kernels: nothing fell back.
    assert opscope.fallback_stats() == {}, opscope.fallback_stats()


def test_vit_b_16_matches_cpu():
    torch.manual_seed(0)
    model = torchvision.models.vit_b_16()
    model.heads = torch.nn.Identity()  # torchvision zero-initialises the head
    opscope.reset_fallback_stats()
    got, want = run_both(model, torch.randn(1, 3, 224, 224))
    assert_rel_close(got, want, 1e-4)
    # The patch convolution, attention, MLP and norms all ran on opscope: nothing fell back.
    assert opscope.fallback_stats() == {}, opscope.fallback_stats()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_llama_decoder_prefill_and_decode_match_cpu(dtype):
    torch.manual_seed(0)
    model = Llama().eval()
    tokens = torch.randint(0, 97, (2, 7))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = generate(model.to(torch.float32), tokens, 3) if dtype == torch.float32 else None
        dev_model = model.to(dtype).to(opscope.device())
        got = [t.cpu() for t in generate(dev_model, tokens.to(opscope.device()), 3)]
        if want is None:  # torch 1.13's CPU lacks bf16 kernels this model needs: compare to f32
            want = generate(model.cpu().to(torch.float32), tokens, 3)
    assert len(got) == 4 and got[0].shape == (2, 7, 97) and got[1].shape == (2, 1, 97)
    for g, w in zip(got, want):
        assert_rel_close(g.float(), w, 1e-4 if dtype == torch.float32 else 6e-2)
