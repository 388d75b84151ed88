"""Each model family the device must run natively, small configurations: the forward under
OPSCOPE_STRICT=1 (any fallback is an error) equals torch CPU's. torchvision's
classification, segmentation, detection and video models, torchaudio's wav2vec2/HuBERT and
Conformer, nn.LSTM/GRU/RNN, Transformer and MultiheadAttention."""
import warnings

import pytest
import torch

import opscope
from model_zoo import tensors_of

torchvision = pytest.importorskip("torchvision")


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("OPSCOPE_STRICT", "1")


def check(model, *inputs, rtol=1e-4):
    torch.manual_seed(0)
    model.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tensors_of(model(*inputs))
        dev = opscope.device()
        move = lambda x: x.to(dev) if isinstance(x, torch.Tensor) else x if x is None else [t.to(dev) for t in x]  # noqa: E731
        got = tensors_of(model.to(dev)(*[move(i) for i in inputs]))
    model.cpu()
    assert len(got) == len(want) and len(want) > 0
    scale = max(w.abs().max().item() for w in want if w.numel())
    assert scale > 0, "the reference is all zeros: the comparison would prove nothing"
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
        if w.numel():
            err = (g.cpu().double() - w.double()).abs().max().item()
            assert err <= rtol * scale, f"max error {err} vs scale {scale}"


@pytest.mark.parametrize("name", ["densenet121", "googlenet", "mobilenet_v2", "inception_v3", "squeezenet1_1",
                                  "regnet_y_400mf", "resnext50_32x4d"])  # the last two: grouped convolutions
def test_classification(name):
    torch.manual_seed(0)
    kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(**kw)
    for head in ("classifier", "fc"):  # random classifiers drown the features' digits
        if hasattr(model, head):
            setattr(model, head, torch.nn.Identity())
    check(model, torch.randn(1, 3, *((80, 80) if name == "inception_v3" else (64, 64))))


def test_swin_transformer():
    torch.manual_seed(0)
    model = torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4], num_classes=10)
    model.head = torch.nn.Identity()
    check(model, torch.randn(2, 3, 40, 40))  # windows shifted by roll, masked attention


def test_segmentation():
    torch.manual_seed(0)
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    check(model, torch.randn(1, 3, 64, 48))
    model = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, num_classes=3)
    check(model, torch.randn(1, 3, 48, 48))


def test_detection():
    """Faster R-CNN and Mask R-CNN run their whole forward strictly (no op falls back).
    Their detections are compared stage by stage below: whole detections reorder
    near-tied proposals."""
    dev = opscope.device()
    for model, x in detection_models():
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = model.eval().to(dev)([t.to(dev) for t in x])[0]
        n = out["boxes"].shape[0]
        assert n > 0 and out["boxes"].shape == (n, 4) and out["scores"].shape == out["labels"].shape == (n,)
        assert torch.isfinite(out["boxes"].cpu()).all() and (out["scores"].cpu()[:-1] >= out["scores"].cpu()[1:]).all()
        if "masks" in out:
            assert out["masks"].shape[0] == n


def test_detection_stages_equal_torch_cpu():
    """Faster R-CNN, strictly, stage by stage against torch CPU. Whole
    detections compared row by row prove little here: with random weights the f32 features'
    summation-order differences (~3e-6 relative) reorder near-tied proposals, and then
    different boxes are kept (up to 116 px apart at 128 px). So: the backbone's features, the
    RPN head's objectness and box deltas, its proposals' boxes, and the ROI heads' detections
    from the same proposals. Convolutions get Kaiming weights: the default init's features
    (~1e-7) and near-constant scores would leave nothing to compare."""
    import copy
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, min_size=128, max_size=128, box_score_thresh=0.0).eval()
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    dev = opscope.device()
    cpu, ours = model, copy.deepcopy(model).to(dev)
    x = [torch.rand(3, 128, 112)]

    def close(want, got, rtol):
        got = got.cpu()
        assert got.shape == want.shape, (got.shape, want.shape)
        scale = want.abs().max().item()
        assert scale > 0, "the reference is all zeros: the comparison would prove nothing"
        assert (got - want).abs().max().item() <= rtol * scale, ((got - want).abs().max().item(), scale)

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        images, _ = cpu.transform(x)
        images_d, _ = ours.transform([t.to(dev) for t in x])
        close(images.tensors, images_d.tensors, 1e-6)
        feats, feats_d = cpu.backbone(images.tensors), ours.backbone(images_d.tensors)
        for k in feats:
            close(feats[k], feats_d[k], 1e-4)
        objectness, deltas = cpu.rpn.head(list(feats.values()))
        objectness_d, deltas_d = ours.rpn.head(list(feats_d.values()))
        for a, b in zip(objectness + deltas, objectness_d + deltas_d):
            close(a, b, 1e-4)
        proposals, _ = cpu.rpn(images, feats)
        proposals_d, _ = ours.rpn(images_d, feats_d)
        close(proposals[0], proposals_d[0], 1e-2)  # decoded through exp: the deltas' error grows
        dets, _ = cpu.roi_heads(feats, proposals, images.image_sizes)
        dets_d, _ = ours.roi_heads(feats_d, [p.to(dev) for p in proposals], images_d.image_sizes)
    assert dets[0]["boxes"].shape[0] > 10, dets  # enough detections for the comparison to mean something
    for k in ("boxes", "scores"):
        close(dets[0][k], dets_d[0][k], 1e-4)
    assert torch.equal(dets[0]["labels"], dets_d[0]["labels"].cpu())


def detection_models():
    torch.manual_seed(0)
    faster = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, min_size=128, max_size=128, box_score_thresh=0.0)
    mask = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, min_size=64,
                                                              max_size=64, box_score_thresh=0.0,
                                                              box_detections_per_img=5)
    return [(faster, [torch.rand(3, 128, 112)]), (mask, [torch.rand(3, 64, 64)])]  # mask: roi_align, transposed conv


# s3d is not here: its (2, 7, 7) head pool needs 16 x 224 x 224 frames, too slow for a unit test.
@pytest.mark.parametrize("name", ["r3d_18", "r2plus1d_18"])
def test_video(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models.video, name)()
    if name == "s3d":
        model.classifier = torch.nn.Identity()
    else:
        model.fc = torch.nn.Identity()
    check(model, torch.randn(1, 3, 8 if name == "s3d" else 4, 48, 48))


@pytest.mark.parametrize("extractor", ["group_norm", "layer_norm"])
def test_wav2vec2_and_hubert(extractor):
    wav2vec2(extractor)  # strict: its lengths' div(rounding_mode="floor") on int64 runs natively


def wav2vec2(extractor):
    torchaudio = pytest.importorskip("torchaudio")
    torch.manual_seed(0)
    model = torchaudio.models.wav2vec2_model(
        extractor_mode=extractor, extractor_conv_layer_config=[(32, 10, 5), (32, 3, 2), (32, 2, 2)],
        extractor_conv_bias=extractor == "layer_norm", encoder_embed_dim=48, encoder_projection_dropout=0.0,
        encoder_pos_conv_kernel=8, encoder_pos_conv_groups=4, encoder_num_layers=2, encoder_num_heads=4,
        encoder_attention_dropout=0.0, encoder_ff_interm_features=96, encoder_ff_interm_dropout=0.0,
        encoder_dropout=0.0, encoder_layer_norm_first=extractor == "layer_norm", encoder_layer_drop=0.0,
        aux_num_out=None)
    check(model, torch.randn(2, 1200), torch.tensor([1200, 900]))


def test_conformer():
    torchaudio = pytest.importorskip("torchaudio")
    torch.manual_seed(0)
    model = torchaudio.models.Conformer(input_dim=32, num_heads=4, ffn_dim=64, num_layers=2,
                                        depthwise_conv_kernel_size=7)
    check(model, torch.randn(2, 30, 32), torch.tensor([30, 21]))


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_recurrent(cls):
    torch.manual_seed(0)
    check(cls(16, 24, num_layers=2, bidirectional=True, batch_first=True), torch.randn(3, 11, 16))


def test_transformer_and_attention():
    torch.manual_seed(0)
    model = torch.nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                 dim_feedforward=64, dropout=0.0, batch_first=True)
    src, tgt = torch.randn(2, 9, 32), torch.randn(2, 7, 32)
    mask = model.generate_square_subsequent_mask(7)
    check(model, src, tgt, None, mask)

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)

        def forward(self, x, padding):
            return self.attn(x, x, x, key_padding_mask=padding)

    padding = torch.zeros(2, 9, dtype=torch.bool)
    padding[1, 6:] = True
    check(Attention(), src, padding)
