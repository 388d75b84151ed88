"""opscope.compile's rewrites of a traced aten graph before it is lowered: which nodes are
the same on every call (and so computed once per plan, or once per change of the module's
state), and the rewrites that use it — a constant mask's masked_fill as two elementwise ops,
an eval batch norm folded into the convolution before it — then a convolution's residual add
and activation taken into its kernel, and dropping what nothing reads. Each rewrite returns
a line per change, for explain.
"""
import operator

import torch

aten = torch.ops.aten


def _where(node):
    """The module a node came from ("features.0.0"), or its op where none is known."""
    mods = node.meta.get("opscope_modules", ())
    return mods[-1] if mods else str(getattr(node.target, "__name__", node.target))


def _val(node):
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


# Ops a plan must not compute ahead of time: their values differ per call.
_NONDETERMINISTIC = ("rand", "normal", "bernoulli", "dropout", "uniform", "empty", "multinomial", "poisson")


def _mutable(node):
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def eager_call(node):
    """(op, args, kwargs) that run a node eagerly. _reshape_alias carries the strides torch's
    meta kernels gave its input at trace time; opscope's kernels may lay that value out
    otherwise (an elementwise op on a transposed input writes it contiguous, where torch
    keeps the input's order), so it runs as reshape of its sizes, which reads the real
    strides."""
    if node.target is aten._reshape_alias.default:
        return aten.reshape.default, node.args[:2], {}
    return node.target, node.args, node.kwargs


def foldable_nodes(gm, state=()):
    """Nodes whose value does not change between calls: they depend on no argument, only on
    constants and on the module's state (`state`: parameters' and buffers' placeholders) —
    a causal mask built with full + triu, or sliced from a buffer and compared. Returns
    (the ones unfolded nodes read, every foldable node, those that read the state)."""
    folded, stateful = set(), set()
    for n in gm.graph.nodes:
        if n.op != "call_function" or _mutable(n) or any(_mutable(u) for u in n.users):
            continue
        if "opscope_dynamic" in n.meta:  # dynamic=True: changes with the size between calls
            continue
        name = str(getattr(n.target, "__name__", n.target))
        if any(w in name for w in _NONDETERMINISTIC):
            continue
        deps = n.all_input_nodes
        if all(d in folded or d.op == "get_attr" or d in state for d in deps):
            folded.add(n)
            if any(d in state or d in stateful for d in deps):
                stateful.add(n)
    kept = {n for n in folded if any(u not in folded for u in n.users)}
    return kept, folded, stateful


def _keep_where_not(mask, dtype):
    return (~mask).to(dtype)


def _fill_where(mask, value, dtype):
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, value)


_keep_where_not.__name__ = "opscope::masked_fill_keep"
_fill_where.__name__ = "opscope::masked_fill_value"


def rewrite_constant_masks(gm, state=()):
    """masked_fill(x, m, v) with a mask that does not change between calls (GPT-2's causal
    mask, sliced from a buffer) becomes x * keep + fill, keep and fill computed once with
    the mask: two elementwise ops a matmul takes as its epilogue, where masked_fill would
    run torch's CPU kernel. Equal to masked_fill for finite x (an infinite x under the
    mask gives NaN instead of v). Returns what it did, a line per masked_fill."""
    _, folded, _ = foldable_nodes(gm, state)
    g = gm.graph
    done = []
    for n in list(g.nodes):
        if n.op != "call_function" or n.target is not aten.masked_fill.Scalar:
            continue
        x, m, v = n.args[:3]
        if m not in folded or not isinstance(v, (int, float)) or not isinstance(x, torch.fx.Node):
            continue
        xv = _val(x)
        if xv is None or _val(m) is None or not xv.is_floating_point():
            continue
        meta = torch.empty(_val(m).shape, dtype=xv.dtype, device="meta")
        with g.inserting_before(n):
            keep = g.call_function(_keep_where_not, (m, xv.dtype))
            fill = g.call_function(_fill_where, (m, float(v), xv.dtype))
            kept = g.call_function(aten.mul.Tensor, (x, keep))
            out = g.call_function(aten.add.Tensor, (kept, fill))
        for k, val in ((keep, meta), (fill, meta), (kept, n.meta["val"]), (out, n.meta["val"])):
            k.meta.update(n.meta)
            k.meta["val"] = val
        n.replace_all_uses_with(out)
        done.append(f"masked_fill {_where(n)} by a constant mask: x * keep + fill")
        g.erase_node(n)
    if done:
        gm.recompile()
    return done


def drop_unused(gm):
    """Removes the nodes nothing reads that write nothing: make_fx records an aten.empty
    (batch norm's reserve) beside each norm, and a plan would allocate it every call.
    Returns what it did, one line (or none)."""
    dropped = 0
    for n in reversed(list(gm.graph.nodes)):
        if n.op == "call_function" and not n.users and not _mutable(n):
            gm.graph.erase_node(n)
            dropped += 1
    if dropped:
        gm.recompile()
    return [f"dropped {dropped} nodes nothing reads"] if dropped else []


def _bn_scale(weight, var, eps):
    """weight / sqrt(var + eps) per channel, in f32 whatever the parameters' dtype."""
    s = (var.float() + eps).rsqrt()
    return s * weight.float() if weight is not None else s


def _bn_folded_weight(conv_weight, weight, var, eps):
    s = _bn_scale(weight, var, eps).reshape([-1] + [1] * (conv_weight.dim() - 1))
    return (conv_weight.float() * s).to(conv_weight.dtype)


def _bn_folded_bias(conv_bias, weight, bias, mean, var, eps):
    centred = conv_bias.float() - mean.float() if conv_bias is not None else -mean.float()
    out = centred * _bn_scale(weight, var, eps)
    return (out + bias.float() if bias is not None else out).to(mean.dtype)


_bn_folded_weight.__name__ = "opscope::batch_norm_folded_weight"
_bn_folded_bias.__name__ = "opscope::batch_norm_folded_bias"


def fold_batch_norms(gm, state=()):
    """An eval-mode batch norm right after a convolution whose weights do not change between
    calls becomes that convolution's weight and bias: conv(x, W * s) + (b - mean) * s + beta
    with s = gamma / sqrt(var + eps), as Inductor's freezing and oneDNN do for inference.
    The folded weight and bias are computed once per plan and again when the module's state
    changes (they read it): each norm's pass over the activations is gone. Returns what it
    did, a line per norm."""
    _, folded, _ = foldable_nodes(gm, state)
    done = []

    def constant(a):
        return a is None or a in folded or a in state or (isinstance(a, torch.fx.Node) and a.op == "get_attr")

    g = gm.graph
    for n in list(g.nodes):
        if n.op != "call_function" or n.target is not aten.native_batch_norm.default:
            continue
        conv, weight, bias, mean, var, training, _, eps = n.args[:8]
        if (training or not isinstance(conv, torch.fx.Node) or conv.target is not aten.convolution.default
                or len(conv.users) != 1 or not all(constant(a) for a in (weight, bias, mean, var))):
            continue
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = conv.args
        outs = [u for u in n.users if u.target is operator.getitem]
        if (transposed or not constant(w) or not constant(b) or len(outs) != len(n.users)
                or any(u.args[1] != 0 and u.users for u in outs) or _val(conv) is None):
            continue
        with g.inserting_before(n):
            fw = g.call_function(_bn_folded_weight, (w, weight, var, eps))
            fb = g.call_function(_bn_folded_bias, (b, weight, bias, mean, var, eps))
            out = g.call_function(aten.convolution.default,
                                  (x, fw, fb, stride, padding, dilation, transposed, output_padding, groups))
        out.meta.update(conv.meta)
        for k, like in ((fw, w), (fb, mean)):  # the folded values have the weight's and the mean's shapes
            k.meta.update(conv.meta)
            k.meta["val"] = _val(like)
        for u in outs:
            if u.args[1] == 0:
                u.replace_all_uses_with(out)
            g.erase_node(u)
        done.append(f"batch norm {_where(n)} folded into convolution {_where(conv)}")
        g.erase_node(n)
        g.erase_node(conv)
    if done:
        gm.recompile()
    return done


# Activation nodes (functional or in place) a convolution takes as its epilogue, by the
# name opscope::conv2d_act knows them by; hardtanh only as ReLU6.
_CONV_ACTIVATIONS = {
    aten.relu.default: "relu", aten.relu_.default: "relu",
    aten.hardswish.default: "hardswish", aten.hardswish_.default: "hardswish",
    aten.silu.default: "silu", aten.silu_.default: "silu",
    aten.hardtanh.default: "relu6", aten.hardtanh_.default: "relu6",
}


def _fusable_conv(conv):
    """A 2-d, not transposed, f32 convolution on opscope's device that only one node reads."""
    if not isinstance(conv, torch.fx.Node) or conv.target is not aten.convolution.default or len(conv.users) != 1:
        return False
    x, w, _, stride, padding, dilation, transposed, _, _ = conv.args
    xv, wv, out = _val(x), _val(w), _val(conv)
    return (not transposed and xv is not None and wv is not None and out is not None and xv.dim() == 4
            and wv.dim() == 4 and out.dtype == torch.float32 and out.device.type == "privateuseone"
            and all(len(v) == 2 for v in (stride, padding, dilation)))


def _residual_of(add, conv):
    """The other operand of `add` when it adds a tensor of the convolution's shape and dtype
    to it (out + identity, or identity + out; in place only into the convolution's own
    output, which nothing else reads), else None."""
    if add.target not in (aten.add.Tensor, aten.add_.Tensor) or add.kwargs.get("alpha", 1) != 1 or len(add.args) != 2:
        return None
    a, b = add.args
    if add.target is aten.add_.Tensor and a is not conv:
        return None  # identity += out would change identity for its other readers
    other = b if a is conv else a
    ov, cv = _val(other), _val(conv)
    if other is conv or ov is None or ov.shape != cv.shape or ov.dtype != cv.dtype:
        return None
    return other


def fuse_conv_epilogues(gm):
    """conv2d, then a residual add (ResNet's skip connection), then relu, ReLU6, hardswish
    or silu — either or both — becomes opscope::conv2d_act: the add and the activation in
    the convolution kernel's epilogue, applied to each output block while it is in cache,
    instead of a pass each over the activations (oneDNN's sum and eltwise post-ops,
    Inductor's conv fusions). Returns what it did, a line per convolution."""
    g = gm.graph
    done = []
    for conv in list(g.nodes):
        if not _fusable_conv(conv):
            continue
        chain, act = [conv], ""  # the nodes the fused op replaces, in order
        residual = _residual_of(next(iter(conv.users)), conv)
        if residual is not None:
            chain.append(next(iter(conv.users)))
        if len(chain[-1].users) == 1:
            n = next(iter(chain[-1].users))
            name = _CONV_ACTIVATIONS.get(n.target) if n.op == "call_function" and n.args[0] is chain[-1] else None
            if name == "relu6" and tuple(n.args[1:3]) not in ((0.0, 6.0), (0, 6)):
                name = None
            if name:
                chain.append(n)
                act = name
        if len(chain) == 1:
            continue
        tail = chain[-1]
        x, w, b, stride, padding, dilation, _, _, groups = conv.args
        with g.inserting_before(tail):
            fused = g.call_function(torch.ops.opscope.conv2d_act.default,
                                    (x, w, b, list(stride), list(padding), list(dilation), groups, act, residual))
        fused.meta.update(conv.meta)
        tail.replace_all_uses_with(fused)
        parts = (["add"] if residual is not None else []) + ([act] if act else [])
        done.append(f"convolution {_where(conv)} + {' + '.join(parts)}: one kernel (opscope::conv2d_act)")
        for n in reversed(chain):  # the activation, the add, then the convolution
            g.erase_node(n)
    if done:
        gm.recompile()
    return done
