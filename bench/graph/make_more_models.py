#!/usr/bin/env python3
"""Writes more model shapes for the engine's comparison with ONNX Runtime, each as its usual
export writes it (BatchNormalization folded into the convs' biases, as torch exports in eval
mode), with seeded random weights and a symbolic batch:
  vgg11            VGG-11 at 224: 3x3 convs with ReLU, 2x2 max pools, Flatten and the
                   25088 -> 4096 -> 4096 -> 1000 classifier Gemms (Simonyan and Zisserman, 2014)
  efficientnet_b0  EfficientNet-B0 at 224: SiLU as x * Sigmoid(x), MBConv blocks with 3x3 and
                   5x5 depthwise convs, squeeze-excitation (GlobalAveragePool, two 1x1 convs,
                   Sigmoid, Mul), residual Adds, torchvision's block settings (Tan and Le, 2019)
  vit_s16          ViT-S/16 at 224 (DeiT-small's shape: 384 wide, 6 heads, 12 layers): a 16x16
                   stride-16 patch conv, Reshape and Transpose to tokens, a class token by Expand
                   and Concat, position embeddings, pre-LayerNormalization blocks (opset 17) with
                   one QKV MatMul split by Reshape, Transpose and Gather, erf GELU, the class
                   token's Gather and the head Gemm (Dosovitskiy et al., 2020)
  yolo_neck        a YOLOv5-style backbone and neck at 320: a 6x6 stride-2 stem, SiLU, C3-like
                   blocks, SPPF (three 5x5 max pools), nearest 2x Resize up the top-down path,
                   Concat, and detection heads reshaped and transposed to [1, 3, cells, 85]
  unet             a U-Net at 256 (Ronneberger et al., 2015): two 3x3 conv + ReLU per level, 2x2
                   max pools down, 2x2 stride-2 ConvTranspose up, Concat with the skip, a 1x1
                   conv and Sigmoid
  resnext_stages   ResNeXt-50 32x4d's stem and first two stages (Xie et al., 2017): grouped 3x3
                   convs of 32 groups between 1x1 convs, residual Adds
  regnetx_200mf, regnetx_400mf  RegNetX at 224 (Radosavovic et al., 2020; torchvision's widths,
                   depths and group widths 8 and 16): a 3x3 stride-2 stem, X blocks of a 1x1 conv,
                   a grouped 3x3 conv (stride 2 first in each stage), a 1x1 conv, a projected or
                   identity shortcut Add and ReLU, global average pool and the classifier Gemm
  inception_v3_blocks  Inception v3's 17 x 17 blocks, four of them on a 26 x 26 map (Szegedy et
                   al., 2016): 1x7 and 7x1 convs (pads [0, 3, 0, 3] and [3, 0, 3, 0]), an average
                   pool counting its pads, Concat
  whisper_front    Whisper-tiny's encoder front on 30 s of audio (Radford et al., 2022): 80 mel
                   bins x 3000 frames through two 1-D convs (kernel 3; the second stride 2) with
                   erf GELU, Transpose to [N, 1500, 384], positional embeddings, LayerNormalization
                   (opset 17)
  wav2vec2_features  wav2vec2-base's feature encoder on 1 s of 16 kHz audio (Baevski et al., 2020):
                   seven 1-D convs of 512 channels (kernel 10 stride 5, then 3 stride 2 four
                   times, then 2 stride 2 twice), no bias, erf GELU
  convnext_tiny    ConvNeXt-T at 224 (Liu et al., 2022; torchvision's export at opset 17): a 4x4
                   stride-4 stem, blocks of a 7x7 depthwise conv, Transpose to channels-last,
                   LayerNormalization, two MatMul + Add linears around erf GELU, the layer scale
                   Mul and Transpose back before the residual Add; downsamples as LayerNormalization
                   between Transposes and a 2x2 stride-2 conv; global average pool, LayerNorm, Gemm
  gpt2             GPT-2 small's decoder (2 of its 12 layers, a 1000-word vocabulary) as torch
                   exports Hugging Face's GPT2LMHeadModel at opset 14 with dynamic axes: int64
                   input_ids [batch_size, sequence_length], position ids by Range over the length
                   read from Shape, LayerNorm decomposed, Conv1D as MatMul + Add, QKV Split, the
                   causal mask sliced from a bool buffer at offsets computed from shapes and
                   applied by Where, tanh GELU written with Pow, the tied head's MatMul
  t5_encoder       T5-small's encoder (2 of its 6 layers, a 1000-word vocabulary) as torch exports
                   Hugging Face's T5EncoderModel at opset 13 with dynamic axes: int64 input_ids
                   and attention_mask, T5's RMS layer norm (Pow, ReduceMean, Add, Sqrt,
                   Reciprocal, Mul), unscaled attention with the relative position bias computed
                   in the graph from Range over the lengths (Sub, Greater, Cast, Abs, Less, Log,
                   Div, Min, Where, a Gather from the bucket table, Transpose, Unsqueeze), the
                   extended mask, ReLU feed-forward
  swin_stages      Swin-T's first two stages at 224 (Liu et al., 2021) as torch exports them at
                   opset 13, batch 1: a 4x4 patch conv, 7x7 windows by 6-D Reshape and Transpose,
                   shifted windows by Slice and Concat (torch.roll) with the shift mask added
                   through 5-D views, the relative position bias gathered from its table by a
                   constant index, erf GELU MLPs, patch merging by strided Slices, Concat,
                   LayerNorm and a bias-free MatMul
  yolov8n          YOLOv8n at 640 (Ultralytics' export at opset 17): C2f blocks (a 1x1
                   conv Split in two, bottlenecks on one half, Concat of every part), SPPF, the
                   FPN/PAN neck with nearest Resize, and the decoded head: per level box and class
                   branches Concat'ed and Reshape'd, the levels Concat'ed, Split into the DFL's 64
                   and the 80 classes, the DFL (Reshape, Transpose, Softmax, a fixed 1x1 conv),
                   boxes from anchors (Slice, Sub, Add, Div, Concat, Mul by strides), Sigmoid
  lstm_tagger      a BiLSTM sequence tagger (Huang et al., 2015) as torch exports nn.LSTM(batch_first=True,
                   bidirectional=True, num_layers=2) at opset 14: int64 token ids [batch_size,
                   sequence_length], a 128-wide embedding Gather, Transpose to seq-first, two LSTM
                   layers of 256 a direction joined by Transpose and Reshape, and a per-token MatMul
                   + Add to 20 tags
  r3d_18           torchvision's r3d_18 video classifier (Tran et al., 2018) on an 8-frame 112 x 112
                   clip: a 3x7x7 stride (1, 2, 2) stem, four stages of two basic blocks of 3x3x3
                   convs (64 to 512 channels; stride 2 and a 1x1x1 projection opening stages 2-4),
                   ReLU, residual Adds, global average pool, Flatten and the 400-class Gemm
  unet3d           a 3-D U-Net (Cicek et al., 2016) on a 32 x 64 x 64 single-channel volume: two 3x3x3
                   conv + ReLU per level over three levels (16, 32, 64 channels), 2x2x2 max pools
                   down, 2x2x2 stride-2 ConvTranspose up, Concat with the skip, a 1x1x1 conv and
                   Sigmoid
  mobilenet_v3_large  MobileNetV3-Large at 224 (Howard et al., 2019; torchvision's blocks) as torch
                   exports it at opset 14: HardSwish and ReLU inverted residuals with 3x3 and 5x5
                   depthwise convs, squeeze-excitation with HardSigmoid, a 1x1 conv to 960, global
                   pool, the 960 -> 1280 -> 1000 classifier with HardSwish
  deeplabv3        DeepLabV3's output stride 8 head on a ResNet-style backbone at 256 (Chen et al.,
                   2017): dilated 3x3 convs (dilations 2 and 4), ASPP (a 1x1 conv, 3x3 convs of
                   dilations 12, 24 and 36, and image pooling upsampled by Resize), Concat, the
                   classifier, and a bilinear Resize (half_pixel) back to the input's size
  fast_neural_style  Johnson et al.'s style transfer net (2016) at 256, as torch's
                   fast_neural_style example exports it: reflection Pad before every conv,
                   InstanceNormalization, ReLU, five residual blocks, nearest 2x Resize upsampling
  espcn            ESPCN super-resolution (Shi et al., 2016) of a 224 x 224 luminance plane at 3x:
                   5x5 and 3x3 convs with Tanh, and PixelShuffle as DepthToSpace (CRD)
Usage: make_more_models.py NAME OUT.onnx"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_bert_export import Writer as TokenWriter  # noqa: E402
from make_mobilenet_v2 import Writer  # noqa: E402


class ConvWriter(Writer):
    def conv(self, x, cin, cout, k, stride=1, group=1, act="relu", pad=None):
        w = self.const(self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group * k * k)))
        y = self.node("Conv", [x, w, self.const(self.rng.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k],
                      strides=[stride, stride], pads=[(k - 1) // 2 if pad is None else pad] * 4, group=group)
        if act == "relu":
            return self.node("Relu", [y])
        if act == "silu":
            return self.node("Mul", [y, self.node("Sigmoid", [y])])
        return y

    def gemm(self, x, n_in, n_out):
        return self.node("Gemm", [x, self.const(self.rng.standard_normal((n_out, n_in)) * np.sqrt(1.0 / n_in)),
                                  self.const(np.zeros(n_out))], transB=1)


def model(w, name, outputs, hw=224, opset=13):
    return Writer.model(w, name, [("input", ["N", 3, hw, hw])], [(o, None) for o in outputs], opset)


def vgg11():
    w = ConvWriter(6)
    x, c = "input", 3
    for cout, convs in [(64, 1), (128, 1), (256, 2), (512, 2), (512, 2)]:
        for _ in range(convs):
            x, c = w.conv(x, c, cout, 3), cout
        x = w.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = w.node("Relu", [w.gemm(w.node("Flatten", [x], axis=1), 512 * 7 * 7, 4096)])
    x = w.node("Relu", [w.gemm(x, 4096, 4096)])
    return model(w, "vgg11", [w.gemm(x, 4096, 1000)])


# (expansion, kernel, first stride, input channels, output channels, blocks), torchvision's B0.
EFFICIENTNET_B0 = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                   (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]


def efficientnet_b0():
    w = ConvWriter(4)

    def mbconv(x, expand, k, stride, cin, cout):
        c = cin * expand
        y = w.conv(x, cin, c, 1, act="silu") if expand != 1 else x
        y = w.conv(y, c, c, k, stride, group=c, act="silu")
        squeeze = w.conv(w.node("GlobalAveragePool", [y]), c, max(1, cin // 4), 1, act="silu")
        y = w.node("Mul", [w.node("Sigmoid", [w.conv(squeeze, max(1, cin // 4), c, 1, act=None)]), y])
        y = w.conv(y, c, cout, 1, act=None)
        return w.node("Add", [y, x]) if stride == 1 and cin == cout else y

    x = w.conv("input", 3, 32, 3, 2, act="silu")
    for expand, k, stride, cin, cout, blocks in EFFICIENTNET_B0:
        for i in range(blocks):
            x = mbconv(x, expand, k, stride if i == 0 else 1, cin if i == 0 else cout, cout)
    x = w.node("Flatten", [w.node("GlobalAveragePool", [w.conv(x, 320, 1280, 1, act="silu")])], axis=1)
    return model(w, "efficientnet_b0", [w.gemm(x, 1280, 1000)])


def vit_s16(layers=12, width=384, heads=6, patch=16):
    w = TokenWriter(5)

    def layer_norm(x):
        return w.node("LayerNormalization", [x, w.const(1 + w.rng.uniform(-0.1, 0.1, width)),
                                             w.const(w.rng.uniform(-0.1, 0.1, width))], axis=-1, epsilon=1e-6)

    def attention(x):
        head = width // heads
        shape = w.node("Concat", [w.dim(x, 0), w.dim(x, 1), w.ints([3]), w.ints([heads]), w.ints([head])], axis=0)
        qkv = w.node("Transpose", [w.node("Reshape", [w.linear(x, width, 3 * width), shape])], perm=[2, 0, 3, 1, 4])
        q, k, v = (w.node("Gather", [qkv, w.ints(i)], axis=0) for i in range(3))
        scores = w.node("Mul", [w.node("MatMul", [q, w.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                                w.const(head ** -0.5)])
        ctx = w.node("Transpose", [w.node("MatMul", [w.node("Softmax", [scores], axis=-1), v])], perm=[0, 2, 1, 3])
        joined = w.node("Concat", [w.dim(x, 0), w.dim(x, 1), w.ints([width])], axis=0)
        return w.linear(w.node("Reshape", [ctx, joined]), width, width)

    x = w.node("Conv", ["input", w.weight(width, 3, patch, patch), w.const(np.zeros(width))],
               kernel_shape=[patch, patch], strides=[patch, patch])
    tokens = w.node("Concat", [w.dim(x, 0), w.ints([width]), w.ints([-1])], axis=0)
    x = w.node("Transpose", [w.node("Reshape", [x, tokens])], perm=[0, 2, 1])
    cls = w.node("Expand", [w.weight(1, 1, width), w.node("Concat", [w.dim(x, 0), w.ints([1, 1])], axis=0)])
    x = w.node("Add", [w.node("Concat", [cls, x], axis=1), w.weight(1, (224 // patch) ** 2 + 1, width)])
    for _ in range(layers):
        x = w.node("Add", [x, attention(layer_norm(x))])
        x = w.node("Add", [x, w.linear(w.gelu(w.linear(layer_norm(x), width, 4 * width)), 4 * width, width)])
    x = w.node("Gather", [layer_norm(x), w.ints(0)], axis=1)
    logits = w.node("Gemm", [x, w.weight(1000, width), w.const(np.zeros(1000))], transB=1)
    return model(w, "vit_s16", [logits], opset=17)


def yolo_neck():
    w = ConvWriter(6)

    def c3(x, c):
        a = w.conv(x, c, c // 2, 1, act="silu")
        b = w.conv(x, c, c // 2, 1, act="silu")
        b = w.node("Add", [b, w.conv(w.conv(b, c // 2, c // 2, 1, act="silu"), c // 2, c // 2, 3, act="silu")])
        return w.conv(w.node("Concat", [b, a], axis=1), c, c, 1, act="silu")

    x, c, levels = w.conv("input", 3, 16, 6, 2, act="silu", pad=2), 16, []
    for cout in [32, 64, 128, 256]:
        x, c = c3(w.conv(x, c, cout, 3, 2, act="silu"), cout), cout
        levels.append((x, c))
    pool = lambda t: w.node("MaxPool", [t], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2])  # noqa: E731
    p1 = pool(x)
    p2 = pool(p1)
    x = w.conv(w.node("Concat", [x, p1, p2, pool(p2)], axis=1), 4 * c, c, 1, act="silu")
    heads = []
    for finer, fc in reversed(levels[:-1]):
        x = w.conv(x, c, fc, 1, act="silu")
        up = w.node("Resize", [x, "", w.const(np.array([1, 1, 2, 2]))], mode="nearest")
        x, c = c3(w.conv(w.node("Concat", [up, finer], axis=1), 2 * fc, fc, 1, act="silu"), fc), fc
        head = w.conv(x, c, 3 * 85, 1, act=None)
        heads.append(w.node("Transpose", [w.node("Reshape", [head, w.ints([1, 3, 85, -1])])], perm=[0, 1, 3, 2]))
    return model(w, "yolo_neck", heads, hw=320)


def unet():
    w = ConvWriter(6)
    x, c, skips = "input", 3, []
    for cout in [32, 64, 128, 256]:
        x, c = w.conv(w.conv(x, c, cout, 3), cout, cout, 3), cout
        skips.append((x, c))
        x = w.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x, c = w.conv(w.conv(x, c, 512, 3), 512, 512, 3), 512
    for skip, sc in reversed(skips):
        up = w.node("ConvTranspose", [x, w.const(w.rng.standard_normal((c, sc, 2, 2)) * np.sqrt(1.0 / c)),
                                      w.const(np.zeros(sc))], kernel_shape=[2, 2], strides=[2, 2])
        x, c = w.conv(w.conv(w.node("Concat", [skip, up], axis=1), 2 * sc, sc, 3), sc, sc, 3), sc
    return model(w, "unet", [w.node("Sigmoid", [w.conv(x, c, 1, 1, act=None)])], hw=256)


def resnext_stages():
    w = ConvWriter(9)
    x = w.node("MaxPool", [w.conv("input", 3, 64, 7, 2, pad=3)], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    c = 64
    for width, out, blocks, stride in [(128, 256, 3, 1), (256, 512, 4, 2)]:
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = w.conv(w.conv(w.conv(x, c, width, 1), width, width, 3, s, group=32), width, out, 1, act=None)
            shortcut = w.conv(x, c, out, 1, s, act=None) if i == 0 else x
            x, c = w.node("Relu", [w.node("Add", [y, shortcut])]), out
    return model(w, "resnext_stages", [x])


def inception_v3_blocks():
    w = ConvWriter(9)

    def asymmetric(x, cin, cout, kh, kw):
        weights = w.const(w.rng.standard_normal((cout, cin, kh, kw)) * np.sqrt(2.0 / (cin * kh * kw)))
        y = w.node("Conv", [x, weights, w.const(np.zeros(cout))], kernel_shape=[kh, kw],
                   pads=[(kh - 1) // 2, (kw - 1) // 2, (kh - 1) // 2, (kw - 1) // 2])
        return w.node("Relu", [y])

    x = w.conv("input", 3, 192, 3, 2)
    for _ in range(3):
        x = w.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    c = 192
    for _ in range(4):
        a = w.conv(x, c, 192, 1)
        b = asymmetric(asymmetric(w.conv(x, c, 160, 1), 160, 160, 1, 7), 160, 192, 7, 1)
        d = w.conv(x, c, 160, 1)
        for kh, kw, cout in [(7, 1, 160), (1, 7, 160), (7, 1, 160), (1, 7, 192)]:
            d = asymmetric(d, 160, cout, kh, kw)
        pool = w.node("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)
        x, c = w.node("Concat", [a, b, d, w.conv(pool, c, 192, 1)], axis=1), 768
    return model(w, "inception_v3_blocks", [x])


def regnet_x(widths, depths, group_width, seed):
    w = ConvWriter(seed)
    x, c = w.conv("input", 3, 32, 3, 2), 32
    for width, depth in zip(widths, depths):
        for i in range(depth):
            s = 2 if i == 0 else 1
            y = w.conv(w.conv(x, c, width, 1), width, width, 3, s, group=width // group_width)
            y = w.conv(y, width, width, 1, act=None)
            shortcut = w.conv(x, c, width, 1, s, act=None) if s != 1 or c != width else x
            x, c = w.node("Relu", [w.node("Add", [y, shortcut])]), width
    x = w.node("Flatten", [w.node("GlobalAveragePool", [x])], axis=1)
    return model(w, "regnet_x", [w.gemm(x, c, 1000)])


def regnetx_200mf():
    return regnet_x([24, 56, 152, 368], [1, 1, 4, 7], 8, 11)


def regnetx_400mf():
    return regnet_x([32, 64, 160, 384], [1, 2, 7, 12], 16, 12)


class AudioWriter(ConvWriter):
    def conv1d_gelu(self, x, cin, cout, k, stride, pad, bias=True):
        w = self.const(self.rng.standard_normal((cout, cin, k)) * np.sqrt(2.0 / (cin * k)))
        ins = [x, w] + ([self.const(self.rng.uniform(-0.1, 0.1, cout))] if bias else [])
        y = self.node("Conv", ins, kernel_shape=[k], strides=[stride], pads=[pad, pad])
        erf = self.node("Erf", [self.node("Div", [y, self.const(np.sqrt(2.0))])])
        return self.node("Mul", [self.node("Mul", [y, self.node("Add", [erf, self.const(1.0)])]), self.const(0.5)])


def whisper_front(mels=80, frames=3000, width=384):
    w = AudioWriter(13)
    x = w.conv1d_gelu(w.conv1d_gelu("input", mels, width, 3, 1, 1), width, width, 3, 2, 1)
    x = w.node("Add", [w.node("Transpose", [x], perm=[0, 2, 1]),
                       w.const(w.rng.standard_normal((frames // 2, width)) * 0.02)])
    x = w.node("LayerNormalization", [x, w.const(np.ones(width)), w.const(np.zeros(width))], axis=-1, epsilon=1e-5)
    return Writer.model(w, "whisper_front", [("input", ["N", mels, frames])], [(x, None)], 17)


def wav2vec2_features(samples=16000, width=512):
    w = AudioWriter(14)
    x, c = "input", 1
    for k, stride in [(10, 5), (3, 2), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2)]:
        x, c = w.conv1d_gelu(x, c, width, k, stride, 0, bias=False), width
    return Writer.model(w, "wav2vec2_features", [("input", ["N", 1, samples])], [(x, None)], 13)


def token_model(w, name, inputs, output, width, opset):
    """The model of w's nodes: int64 inputs of [batch_size, sequence_length] and one float output
    of [batch_size, sequence_length, width], as exporters declare a text model's."""
    dims = ["batch_size", "sequence_length"]
    graph = helper.make_graph(w.nodes, name, [helper.make_tensor_value_info(n, T.INT64, dims) for n in inputs],
                              [helper.make_tensor_value_info(output, T.FLOAT, dims + [width])], w.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8  # what ONNX Runtime 1.23 and Debian's libonnx read
    return m


def convnext_tiny(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768)):
    w = TokenWriter(15)

    def channels_last_norm(x, c, eps=1e-6):
        return w.node("LayerNormalization", [x, w.const(1 + w.rng.uniform(-0.1, 0.1, c)),
                                             w.const(w.rng.uniform(-0.1, 0.1, c))], axis=-1, epsilon=eps)

    def conv(x, cin, cout, k, stride, group=1):
        fan_in = cin // group * k * k
        return w.node("Conv", [x, w.const(w.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)),
                               w.const(w.rng.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k], strides=[stride, stride],
                      pads=[(k - 1) // 2 if stride == 1 else 0] * 4, group=group)

    def block(x, c):
        y = w.node("Transpose", [conv(x, c, c, 7, 1, group=c)], perm=[0, 2, 3, 1])
        y = w.linear(w.gelu(w.linear(channels_last_norm(y, c), c, 4 * c)), 4 * c, c)
        y = w.node("Mul", [y, w.const(w.rng.uniform(0.1, 0.5, c))])
        return w.node("Add", [w.node("Transpose", [y], perm=[0, 3, 1, 2]), x])

    def norm2d(x, c):
        y = channels_last_norm(w.node("Transpose", [x], perm=[0, 2, 3, 1]), c)
        return w.node("Transpose", [y], perm=[0, 3, 1, 2])

    x = norm2d(conv("input", 3, dims[0], 4, 4), dims[0])
    for stage, (depth, c) in enumerate(zip(depths, dims)):
        if stage > 0:
            x = conv(norm2d(x, dims[stage - 1]), dims[stage - 1], c, 2, 2)
        for _ in range(depth):
            x = block(x, c)
    x = norm2d(w.node("GlobalAveragePool", [x]), dims[-1])
    x = w.node("Flatten", [x], axis=1)
    logits = w.node("Gemm", [x, w.weight(1000, dims[-1]), w.const(np.zeros(1000))], transB=1)
    return Writer.model(w, "convnext_tiny", [("input", ["N", 3, 224, 224])], [(logits, None)], 17)


def gpt2(layers=2, hidden=768, heads=12, vocab=1000, positions=1024):
    w = TokenWriter(16)
    width = hidden // heads
    seq = w.node("Gather", [w.node("Shape", ["input_ids"]), w.ints(1)], axis=0)
    position_ids = w.node("Unsqueeze", [w.node("Range", [w.ints(0), seq, w.ints(1)]), w.ints([0])])
    wte = w.weight(vocab, hidden)
    x = w.node("Add", [w.node("Gather", [wte, "input_ids"], axis=0),
                       w.node("Gather", [w.weight(positions, hidden), position_ids], axis=0)])
    causal = w.const(np.tril(np.ones((positions, positions), dtype=bool)).reshape(1, 1, positions, positions), bool)
    lowest = w.const(np.finfo(np.float32).min)

    def split_heads(t):
        shape = w.node("Concat", [w.dim(t, 0), w.dim(t, 1), w.ints([heads]), w.ints([width])], axis=0)
        return w.node("Transpose", [w.node("Reshape", [t, shape])], perm=[0, 2, 1, 3])

    def attention(h):
        qkv = w.linear(h, hidden, 3 * hidden)
        out = [w.name("split") for _ in range(3)]
        w.nodes.append(helper.make_node("Split", [qkv, w.ints([hidden] * 3)], out, name=out[0] + "_node", axis=2))
        q, k, v = (split_heads(t) for t in out)
        scores = w.node("Div", [w.node("MatMul", [q, w.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                                w.const(np.sqrt(width))])
        q_len = w.node("Gather", [w.node("Shape", [q]), w.ints(-2)], axis=0)
        k_len = w.node("Gather", [w.node("Shape", [k]), w.ints(-2)], axis=0)
        start = w.node("Unsqueeze", [w.node("Sub", [k_len, q_len]), w.ints([0])])
        end = w.node("Unsqueeze", [k_len, w.ints([0])])
        rows = w.node("Slice", [causal, start, end, w.ints([2]), w.ints([1])])
        mask = w.node("Slice", [rows, w.ints([0]), end, w.ints([3]), w.ints([1])])
        probs = w.node("Softmax", [w.node("Where", [mask, scores, lowest])], axis=-1)
        ctx = w.node("Transpose", [w.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        joined = w.node("Concat", [w.dim(h, 0), w.dim(h, 1), w.ints([hidden])], axis=0)
        return w.linear(w.node("Reshape", [ctx, joined]), hidden, hidden)

    def gelu_new(t):
        inner = w.node("Add", [t, w.node("Mul", [w.node("Pow", [t, w.const(3.0)]), w.const(0.044715)])])
        th = w.node("Tanh", [w.node("Mul", [inner, w.const(np.sqrt(2.0 / np.pi))])])
        return w.node("Mul", [w.node("Mul", [t, w.const(0.5)]), w.node("Add", [th, w.const(1.0)])])

    for _ in range(layers):
        x = w.node("Add", [x, attention(w.layer_norm(x, hidden))])
        x = w.node("Add", [x, w.linear(gelu_new(w.linear(w.layer_norm(x, hidden), hidden, 4 * hidden)),
                                       4 * hidden, hidden)])
    logits = w.node("MatMul", [w.layer_norm(x, hidden), w.node("Transpose", [wte], perm=[1, 0])])
    return token_model(w, "gpt2", ["input_ids"], logits, vocab, 14)


def t5_encoder(layers=2, d_model=512, heads=8, d_kv=64, d_ff=2048, vocab=1000, buckets=32, max_distance=128):
    w = TokenWriter(17)
    inner = heads * d_kv

    def rms_norm(x):
        var = w.node("ReduceMean", [w.node("Pow", [x, w.const(2.0)])], axes=[-1], keepdims=1)
        scale = w.node("Reciprocal", [w.node("Sqrt", [w.node("Add", [var, w.const(1e-6)])])])
        return w.node("Mul", [w.const(1 + w.rng.uniform(-0.1, 0.1, d_model)), w.node("Mul", [x, scale])])

    def heads_of(x):
        shape = w.node("Concat", [w.dim(x, 0), w.ints([-1]), w.ints([heads]), w.ints([d_kv])], axis=0)
        return w.node("Transpose", [w.node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def position_bias(q_len, k_len):  # T5Attention.compute_bias, bidirectional
        context = w.node("Unsqueeze", [w.node("Range", [w.ints(0), q_len, w.ints(1)]), w.ints([1])])
        memory = w.node("Unsqueeze", [w.node("Range", [w.ints(0), k_len, w.ints(1)]), w.ints([0])])
        rel = w.node("Sub", [memory, context])
        half = buckets // 2
        bucket = w.node("Mul", [w.node("Cast", [w.node("Greater", [rel, w.ints(0)])], to=T.INT64), w.ints(half)])
        rel = w.node("Abs", [rel])
        exact = half // 2
        small = w.node("Less", [rel, w.ints(exact)])
        log = w.node("Log", [w.node("Div", [w.node("Cast", [rel], to=T.FLOAT), w.const(float(exact))])])
        large = w.node("Div", [log, w.const(np.log(max_distance / exact))])
        large = w.node("Mul", [large, w.const(float(half - exact))])
        large = w.node("Add", [w.ints(exact), w.node("Cast", [large], to=T.INT64)])
        large = w.node("Min", [large, w.node("ConstantOfShape", [w.node("Shape", [large])],
                                              value=helper.make_tensor("v", T.INT64, [1], [half - 1]))])
        bucket = w.node("Add", [bucket, w.node("Where", [small, rel, large])])
        values = w.node("Gather", [w.weight(buckets, heads), bucket], axis=0)  # [q, k, heads]
        return w.node("Unsqueeze", [w.node("Transpose", [values], perm=[2, 0, 1]), w.ints([0])])

    x = w.node("Gather", [w.weight(vocab, d_model), "input_ids"], axis=0)
    seq = w.node("Gather", [w.node("Shape", ["input_ids"]), w.ints(1)], axis=0)
    mask = w.node("Cast", [w.node("Unsqueeze", ["attention_mask", w.ints([1, 2])])], to=T.FLOAT)
    mask = w.node("Mul", [w.node("Sub", [w.const(1.0), mask]), w.const(np.finfo(np.float32).min)])
    bias = w.node("Add", [position_bias(seq, seq), mask])
    for _ in range(layers):
        h = rms_norm(x)
        q, k, v = (heads_of(w.node("MatMul", [h, w.weight(d_model, inner)])) for _ in range(3))
        scores = w.node("Add", [w.node("MatMul", [q, w.node("Transpose", [k], perm=[0, 1, 3, 2])]), bias])
        ctx = w.node("Transpose", [w.node("MatMul", [w.node("Softmax", [scores], axis=-1), v])], perm=[0, 2, 1, 3])
        joined = w.node("Reshape", [ctx, w.node("Concat", [w.dim(h, 0), w.ints([-1]), w.ints([inner])], axis=0)])
        x = w.node("Add", [x, w.node("MatMul", [joined, w.weight(inner, d_model)])])
        ff = w.node("Relu", [w.node("MatMul", [rms_norm(x), w.weight(d_model, d_ff)])])
        x = w.node("Add", [x, w.node("MatMul", [ff, w.weight(d_ff, d_model)])])
    return token_model(w, "t5_encoder", ["input_ids", "attention_mask"], rms_norm(x), d_model, 13)


def swin_stages(dims=(96, 192), depths=(2, 2), heads=(3, 6), window=7, size=56):
    w = TokenWriter(18)
    n = window * window

    def norm(x, c):
        return w.node("LayerNormalization", [x, w.const(1 + w.rng.uniform(-0.1, 0.1, c)),
                                             w.const(w.rng.uniform(-0.1, 0.1, c))], axis=-1, epsilon=1e-5)

    def roll(x, shift, hw):  # torch.roll over H and W (dims 1 and 2) as Slice + Concat
        for axis in (1, 2):
            tail = w.node("Slice", [x, w.ints([hw - shift]), w.ints([hw]), w.ints([axis])])
            head = w.node("Slice", [x, w.ints([0]), w.ints([hw - shift]), w.ints([axis])])
            x = w.node("Concat", [tail, head], axis=axis)
        return x

    def relative_index():
        coords = np.stack(np.meshgrid(np.arange(window), np.arange(window), indexing="ij")).reshape(2, -1)
        rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + window - 1
        return (rel[:, :, 0] * (2 * window - 1) + rel[:, :, 1]).reshape(-1)

    def shift_mask(hw, shift):
        img = np.zeros((hw, hw))
        cuts = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
        for i, hs in enumerate(cuts):
            for j, ws in enumerate(cuts):
                img[hs, ws] = i * 3 + j
        win = img.reshape(hw // window, window, hw // window, window).transpose(0, 2, 1, 3).reshape(-1, n)
        return np.where(win[:, None, :] != win[:, :, None], -100.0, 0.0)  # [windows, n, n]

    def block(x, c, h, hw, shift):
        wins = (hw // window) ** 2
        y = norm(x, c)
        if shift:
            y = roll(y, hw - shift, hw)  # torch.roll(x, -shift)
        y = w.node("Reshape", [y, w.ints([1, hw // window, window, hw // window, window, c])])
        y = w.node("Reshape", [w.node("Transpose", [y], perm=[0, 1, 3, 2, 4, 5]), w.ints([-1, n, c])])
        qkv = w.node("Reshape", [w.linear(y, c, 3 * c), w.ints([-1, n, 3, h, c // h])])
        qkv = w.node("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
        q, k, v = (w.node("Gather", [qkv, w.ints(i)], axis=0) for i in range(3))
        attn = w.node("MatMul", [w.node("Mul", [q, w.const((c // h) ** -0.5)]),
                                 w.node("Transpose", [k], perm=[0, 1, 3, 2])])
        table = w.weight((2 * window - 1) ** 2, h)
        bias = w.node("Gather", [table, w.ints(relative_index())], axis=0)
        bias = w.node("Transpose", [w.node("Reshape", [bias, w.ints([n, n, -1])])], perm=[2, 0, 1])
        attn = w.node("Add", [attn, w.node("Unsqueeze", [bias, w.ints([0])])])
        if shift:
            attn = w.node("Reshape", [attn, w.ints([-1, wins, h, n, n])])
            attn = w.node("Add", [attn, w.const(shift_mask(hw, shift).reshape(1, wins, 1, n, n))])
            attn = w.node("Reshape", [attn, w.ints([-1, h, n, n])])
        ctx = w.node("MatMul", [w.node("Softmax", [attn], axis=-1), v])
        ctx = w.node("Reshape", [w.node("Transpose", [ctx], perm=[0, 2, 1, 3]), w.ints([-1, n, c])])
        y = w.linear(ctx, c, c)
        y = w.node("Reshape", [y, w.ints([1, hw // window, hw // window, window, window, c])])
        y = w.node("Reshape", [w.node("Transpose", [y], perm=[0, 1, 3, 2, 4, 5]), w.ints([1, hw, hw, c])])
        if shift:
            y = roll(y, shift, hw)
        x = w.node("Add", [x, y])
        return w.node("Add", [x, w.linear(w.gelu(w.linear(norm(x, c), c, 4 * c)), 4 * c, c)])

    def merge(x, c):  # PatchMerging: the four 2x2 phases by strided Slices, Concat, LayerNorm, Linear
        parts = [w.node("Slice", [x, w.ints([i, j]), w.ints([size * 4, size * 4]), w.ints([1, 2]), w.ints([2, 2])])
                 for i, j in ((0, 0), (1, 0), (0, 1), (1, 1))]
        y = norm(w.node("Concat", parts, axis=-1), 4 * c)
        return w.node("MatMul", [y, w.weight(4 * c, 2 * c)])

    x = w.node("Conv", ["input", w.weight(dims[0], 3, 4, 4), w.const(np.zeros(dims[0]))], kernel_shape=[4, 4],
               strides=[4, 4])
    x = norm(w.node("Transpose", [x], perm=[0, 2, 3, 1]), dims[0])  # [1, 56, 56, 96]
    hw = size
    for stage, (c, depth, h) in enumerate(zip(dims, depths, heads)):
        if stage > 0:
            x, hw = merge(x, dims[stage - 1]), hw // 2
        for i in range(depth):
            x = block(x, c, h, hw, window // 2 if i % 2 else 0)
    return Writer.model(w, "swin_stages", [("input", [1, 3, 224, 224])], [(norm(x, dims[-1]), None)], 13)


def yolov8n(size=640, classes=80, reg_max=16):
    w = ConvWriter(19)

    def split(x, sizes, axis=1):
        outs = ["%s_part%d" % (x, i) for i in range(len(sizes))]
        w.nodes.append(helper.make_node("Split", [x, w.ints(sizes)], outs, name=x + "_split", axis=axis))
        return outs

    def c2f(x, c1, c2, n, shortcut):
        c = c2 // 2
        parts = split(w.conv(x, c1, 2 * c, 1, act="silu"), [c, c])
        y = parts[-1]
        for _ in range(n):
            b = w.conv(w.conv(y, c, c, 3, act="silu"), c, c, 3, act="silu")
            y = w.node("Add", [y, b]) if shortcut else b
            parts.append(y)
        return w.conv(w.node("Concat", parts, axis=1), (2 + n) * c, c2, 1, act="silu")

    def up(x):
        return w.node("Resize", [x, "", w.const(np.array([1, 1, 2, 2]))], mode="nearest")

    x = w.conv(w.conv("input", 3, 16, 3, 2, act="silu"), 16, 32, 3, 2, act="silu")
    p3 = c2f(w.conv(c2f(x, 32, 32, 1, True), 32, 64, 3, 2, act="silu"), 64, 64, 2, True)
    p4 = c2f(w.conv(p3, 64, 128, 3, 2, act="silu"), 128, 128, 2, True)
    x = c2f(w.conv(p4, 128, 256, 3, 2, act="silu"), 256, 256, 1, True)
    x = w.conv(x, 256, 128, 1, act="silu")
    pools = [x]
    for _ in range(3):
        pools.append(w.node("MaxPool", [pools[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
    p5 = w.conv(w.node("Concat", pools, axis=1), 512, 256, 1, act="silu")
    n4 = c2f(w.node("Concat", [up(p5), p4], axis=1), 384, 128, 1, False)
    n3 = c2f(w.node("Concat", [up(n4), p3], axis=1), 192, 64, 1, False)
    m4 = c2f(w.node("Concat", [w.conv(n3, 64, 64, 3, 2, act="silu"), n4], axis=1), 192, 128, 1, False)
    m5 = c2f(w.node("Concat", [w.conv(m4, 128, 128, 3, 2, act="silu"), p5], axis=1), 384, 256, 1, False)
    levels, anchors, strides = [], [], []
    for feat, c, stride in ((n3, 64, 8), (m4, 128, 16), (m5, 256, 32)):
        box = w.conv(w.conv(w.conv(feat, c, 64, 3, act="silu"), 64, 64, 3, act="silu"), 64, 4 * reg_max, 1, act=None)
        cls = w.conv(w.conv(w.conv(feat, c, 80, 3, act="silu"), 80, 80, 3, act="silu"), 80, classes, 1, act=None)
        levels.append(w.node("Reshape", [w.node("Concat", [box, cls], axis=1), w.ints([1, 4 * reg_max + classes, -1])]))
        g = size // stride
        ys, xs = np.meshgrid(np.arange(g) + 0.5, np.arange(g) + 0.5, indexing="ij")
        anchors.append(np.stack([xs.reshape(-1), ys.reshape(-1)]))
        strides.append(np.full(g * g, float(stride)))
    box, cls = split(w.node("Concat", levels, axis=2), [4 * reg_max, classes])
    dist = w.node("Reshape", [box, w.ints([1, 4, reg_max, -1])])
    dist = w.node("Softmax", [w.node("Transpose", [dist], perm=[0, 2, 1, 3])], axis=1)
    dfl = w.const(np.arange(reg_max).reshape(1, reg_max, 1, 1))
    dist = w.node("Reshape", [w.node("Conv", [dist, dfl], kernel_shape=[1, 1]), w.ints([1, 4, -1])])
    lt, rb = split(dist, [2, 2])
    anchor = w.const(np.concatenate(anchors, axis=1)[None])
    x1y1, x2y2 = w.node("Sub", [anchor, lt]), w.node("Add", [anchor, rb])
    centre = w.node("Div", [w.node("Add", [x1y1, x2y2]), w.const(2.0)])
    wh = w.node("Sub", [x2y2, x1y1])
    boxes = w.node("Mul", [w.node("Concat", [centre, wh], axis=1), w.const(np.concatenate(strides)[None, None])])
    out = w.node("Concat", [boxes, w.node("Sigmoid", [cls])], axis=1)
    return model(w, "yolov8n", [out], hw=size, opset=17)


def lstm_tagger(vocab=1000, embed=128, hidden=256, tags=20):
    w = TokenWriter(20)
    x = w.node("Transpose", [w.node("Gather", [w.weight(vocab, embed), "input_ids"], axis=0)], perm=[1, 0, 2])
    n_in = embed
    for _ in range(2):
        ins = [x, w.const(w.rng.uniform(-0.06, 0.06, (2, 4 * hidden, n_in))),
               w.const(w.rng.uniform(-0.06, 0.06, (2, 4 * hidden, hidden))),
               w.const(w.rng.uniform(-0.06, 0.06, (2, 8 * hidden)))]
        y = w.name("lstm")
        w.nodes.append(helper.make_node("LSTM", ins, [y], name=y + "_node", hidden_size=hidden,
                                        direction="bidirectional"))
        shape = w.node("Concat", [w.dim(x, 0), w.dim(x, 1), w.ints([2 * hidden])], axis=0)
        x, n_in = w.node("Reshape", [w.node("Transpose", [y], perm=[0, 2, 1, 3]), shape]), 2 * hidden
    logits = w.linear(w.node("Transpose", [x], perm=[1, 0, 2]), 2 * hidden, tags)
    return token_model(w, "lstm_tagger", ["input_ids"], logits, tags, 14)


def r3d_18(frames=8, size=112, classes=400):
    w = ConvWriter(21)

    def conv3d(x, cin, cout, k, stride=(1, 1, 1), relu=True):
        weight = w.const(w.rng.standard_normal((cout, cin) + k) * np.sqrt(2.0 / (cin * np.prod(k))))
        y = w.node("Conv", [x, weight, w.const(w.rng.uniform(-0.1, 0.1, cout))], kernel_shape=list(k),
                   strides=list(stride), pads=[d // 2 for d in k] * 2)
        return w.node("Relu", [y]) if relu else y

    x = conv3d("input", 3, 64, (3, 7, 7), (1, 2, 2))
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = (2, 2, 2) if stage > 0 and block == 0 else (1, 1, 1)
            y = conv3d(conv3d(x, cin, cout, (3, 3, 3), stride), cout, cout, (3, 3, 3), relu=False)
            skip = conv3d(x, cin, cout, (1, 1, 1), stride, relu=False) if stride != (1, 1, 1) else x
            x, cin = w.node("Relu", [w.node("Add", [y, skip])]), cout
    logits = w.gemm(w.node("Flatten", [w.node("GlobalAveragePool", [x])]), 512, classes)
    return Writer.model(w, "r3d_18", [("input", ["N", 3, frames, size, size])], [(logits, None)], 13)


def unet3d(depth=32, size=64, widths=(16, 32, 64)):
    w = ConvWriter(22)

    def conv3d(x, cin, cout, k=3):
        weight = w.const(w.rng.standard_normal((cout, cin, k, k, k)) * np.sqrt(2.0 / (cin * k ** 3)))
        return w.node("Relu", [w.node("Conv", [x, weight, w.const(w.rng.uniform(-0.1, 0.1, cout))],
                                      kernel_shape=[k] * 3, pads=[k // 2] * 6)])

    x, cin, skips = "input", 1, []
    for level, width in enumerate(widths):
        x, cin = conv3d(conv3d(x, cin, width), width, width), width
        if level + 1 < len(widths):
            skips.append((x, width))
            x = w.node("MaxPool", [x], kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    for skip, width in reversed(skips):
        up = w.node("ConvTranspose", [x, w.const(w.rng.standard_normal((cin, width, 2, 2, 2)) * np.sqrt(1.0 / cin)),
                                      w.const(np.zeros(width))], kernel_shape=[2, 2, 2], strides=[2, 2, 2])
        x = w.node("Concat", [up, skip], axis=1)
        x, cin = conv3d(conv3d(x, 2 * width, width), width, width), width
    head = w.node("Conv", [x, w.const(w.rng.standard_normal((1, cin, 1, 1, 1)) * 0.1), w.const([0.0])],
                  kernel_shape=[1, 1, 1])
    return Writer.model(w, "unet3d", [("input", ["N", 1, depth, size, size])], [(w.node("Sigmoid", [head]), None)], 13)


# (kernel, expanded, output channels, squeeze-excitation, HardSwish, stride), torchvision's large.
MOBILENET_V3_LARGE = [(3, 16, 16, False, False, 1), (3, 64, 24, False, False, 2), (3, 72, 24, False, False, 1),
                      (5, 72, 40, True, False, 2), (5, 120, 40, True, False, 1), (5, 120, 40, True, False, 1),
                      (3, 240, 80, False, True, 2), (3, 200, 80, False, True, 1), (3, 184, 80, False, True, 1),
                      (3, 184, 80, False, True, 1), (3, 480, 112, True, True, 1), (3, 672, 112, True, True, 1),
                      (5, 672, 160, True, True, 2), (5, 960, 160, True, True, 1), (5, 960, 160, True, True, 1)]


def mobilenet_v3_large():
    w = ConvWriter(23)

    def conv(x, cin, cout, k, stride=1, group=1, act="hardswish"):
        y = w.conv(x, cin, cout, k, stride, group, act=None)
        return {"hardswish": lambda: w.node("HardSwish", [y]), "relu": lambda: w.node("Relu", [y]),
                None: lambda: y}[act]()

    def squeeze(x, c):
        s = w.conv(w.node("GlobalAveragePool", [x]), c, (c // 4 + 7) // 8 * 8, 1, act="relu")
        gate = w.node("HardSigmoid", [w.conv(s, (c // 4 + 7) // 8 * 8, c, 1, act=None)], alpha=1.0 / 6)
        return w.node("Mul", [gate, x])

    x, cin = conv("input", 3, 16, 3, 2), 16
    for k, expanded, cout, se, hs, stride in MOBILENET_V3_LARGE:
        act = "hardswish" if hs else "relu"
        y = conv(x, cin, expanded, 1, act=act) if expanded != cin else x
        y = conv(y, expanded, expanded, k, stride, group=expanded, act=act)
        y = squeeze(y, expanded) if se else y
        y = conv(y, expanded, cout, 1, act=None)
        x, cin = (w.node("Add", [y, x]) if stride == 1 and cin == cout else y), cout
    x = w.node("Flatten", [w.node("GlobalAveragePool", [conv(x, 160, 960, 1)])], axis=1)
    x = w.node("HardSwish", [w.gemm(x, 960, 1280)])
    return model(w, "mobilenet_v3_large", [w.gemm(x, 1280, 1000)], opset=14)


def deeplabv3(size=256, classes=21):
    w = ConvWriter(24)

    def conv(x, cin, cout, k, stride=1, dilation=1, relu=True):
        weight = w.const(w.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k)))
        y = w.node("Conv", [x, weight, w.const(w.rng.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k],
                   strides=[stride, stride], pads=[dilation * (k // 2)] * 4, dilations=[dilation, dilation])
        return w.node("Relu", [y]) if relu else y

    def block(x, cin, width, cout, stride=1, dilation=1):
        y = conv(conv(x, cin, width, 1), width, width, 3, stride, dilation)
        skip = conv(x, cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else x
        return w.node("Relu", [w.node("Add", [conv(y, width, cout, 1, relu=False), skip])])

    x = w.node("MaxPool", [conv("input", 3, 64, 7, 2)], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    x = block(block(x, 64, 64, 256), 256, 128, 512, stride=2)  # output stride 8
    x = block(block(x, 512, 128, 512, dilation=2), 512, 128, 512, dilation=4)
    pooled = conv(w.node("GlobalAveragePool", [x]), 512, 128, 1)
    image = w.node("Resize", [pooled, "", "", w.ints([1, 128, size // 8, size // 8])], mode="linear",
                   coordinate_transformation_mode="half_pixel")
    branches = [conv(x, 512, 128, 1)] + [conv(x, 512, 128, 3, dilation=d) for d in (12, 24, 36)] + [image]
    x = conv(conv(w.node("Concat", branches, axis=1), 5 * 128, 128, 1), 128, 128, 3)
    logits = conv(x, 128, classes, 1, relu=False)
    out = w.node("Resize", [logits, "", "", w.ints([1, classes, size, size])], mode="linear",
                 coordinate_transformation_mode="half_pixel")
    return Writer.model(w, "deeplabv3", [("input", [1, 3, size, size])], [(out, None)], 13)


def fast_neural_style(size=256):
    w = ConvWriter(25)

    def conv(x, cin, cout, k, stride=1, relu=True, norm=True):
        padded = w.node("Pad", [x, w.ints([0, 0, k // 2, k // 2] * 2)], mode="reflect")
        weight = w.const(w.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k)))
        y = w.node("Conv", [padded, weight, w.const(w.rng.uniform(-0.1, 0.1, cout))], kernel_shape=[k, k],
                   strides=[stride, stride])
        if norm:
            y = w.node("InstanceNormalization", [y, w.const(w.rng.uniform(0.5, 1.5, cout)),
                                                 w.const(w.rng.uniform(-0.1, 0.1, cout))], epsilon=1e-5)
        return w.node("Relu", [y]) if relu else y

    x = conv(conv(conv("input", 3, 32, 9), 32, 64, 3, 2), 64, 128, 3, 2)
    for _ in range(5):
        x = w.node("Add", [conv(conv(x, 128, 128, 3), 128, 128, 3, relu=False), x])
    for cin, cout in [(128, 64), (64, 32)]:
        x = conv(w.node("Resize", [x, "", w.const([1, 1, 2, 2])], mode="nearest"), cin, cout, 3)
    out = conv(x, 32, 3, 9, relu=False, norm=False)
    return Writer.model(w, "fast_neural_style", [("input", ["N", 3, size, size])], [(out, None)], 13)


def espcn(size=224, scale=3):
    w = ConvWriter(26)

    def conv(x, cin, cout, k, act=True):
        y = w.conv(x, cin, cout, k, act=None)
        return w.node("Tanh", [y]) if act else y

    x = conv(conv("input", 1, 64, 5), 64, 32, 3)
    out = w.node("DepthToSpace", [conv(x, 32, scale * scale, 3, act=False)], blocksize=scale, mode="CRD")
    return Writer.model(w, "espcn", [("input", ["N", 1, size, size])], [(out, None)], 13)


def yolov3_tiny(size=416, classes=80):
    """Darknet's tiny YOLOv3 as converters write it: conv, BN, LeakyRelu(0.1) throughout, a
    stride-1 MaxPool padded on the right and bottom, nearest upsampling, two linear heads."""
    w = ConvWriter(27)
    rng = np.random.default_rng(27)

    def conv(x, cin, cout, k):
        y = w.conv(x, cin, cout, k, act=None)
        stats = [rng.uniform(0.5, 1.5, cout), rng.uniform(-0.1, 0.1, cout), rng.uniform(-0.1, 0.1, cout),
                 rng.uniform(0.5, 1.5, cout)]
        y = w.node("BatchNormalization", [y] + [w.const(s) for s in stats], epsilon=1e-5)
        return w.node("LeakyRelu", [y], alpha=0.1)

    x, c = "input", 3
    for cout in (16, 32, 64, 128, 256):
        x, c = conv(x, c, cout, 3), cout
        if cout == 256:
            route = x
        x = w.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = w.node("MaxPool", [conv(x, 256, 512, 3)], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1])
    small = conv(conv(x, 512, 1024, 3), 1024, 256, 1)
    head1 = w.conv(conv(small, 256, 512, 3), 512, 3 * (5 + classes), 1, act=None)
    up = w.node("Resize", [conv(small, 256, 128, 1), "", w.const([1, 1, 2, 2])], mode="nearest")
    x = conv(w.node("Concat", [up, route], axis=1), 384, 256, 3)
    head2 = w.conv(x, 256, 3 * (5 + classes), 1, act=None)
    return Writer.model(w, "yolov3_tiny", [("input", ["N", 3, size, size])], [(head1, None), (head2, None)], 13)


MODELS = {"vgg11": vgg11, "efficientnet_b0": efficientnet_b0, "vit_s16": vit_s16, "yolo_neck": yolo_neck,
          "unet": unet, "resnext_stages": resnext_stages, "inception_v3_blocks": inception_v3_blocks,
          "regnetx_200mf": regnetx_200mf, "regnetx_400mf": regnetx_400mf, "whisper_front": whisper_front,
          "wav2vec2_features": wav2vec2_features, "convnext_tiny": convnext_tiny, "gpt2": gpt2,
          "t5_encoder": t5_encoder, "swin_stages": swin_stages,
          "yolov8n": yolov8n, "lstm_tagger": lstm_tagger, "r3d_18": r3d_18,
          "unet3d": unet3d, "mobilenet_v3_large": mobilenet_v3_large, "deeplabv3": deeplabv3,
          "fast_neural_style": fast_neural_style, "espcn": espcn, "yolov3_tiny": yolov3_tiny}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODELS:
        sys.exit("usage: make_more_models.py {%s} OUT.onnx" % ",".join(MODELS))
    onnx.save(MODELS[sys.argv[1]](), sys.argv[2])
