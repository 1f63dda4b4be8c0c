#!/usr/bin/env python3
# Usage: /usr/bin/python3 tests/peers/pytorch_train_bench.py
#            --workload w1|w2|w3|resnet20|resnet20_b128|vgg16|residual|mobilenetv2|unet --procs 1|2
#            [--epochs E] [--steps S] [--batch B] [--seed 1] [--threads 1] [--device cpu|cuda] [--bind none|core]
#            (Debian: python3-torch)
# Not part of the test suite: the PyTorch DDP peer of `ringtrain bench train`,
# driven side by side with it by tests/bench/train_bench.sh.
#
# N processes (torch.multiprocessing, fork) join a gloo process group on 127.0.0.1 and train the chosen
# workload with DistributedDataParallel, one intra-op thread each. Data as in ringtrain's jobs: MNIST test
# set examples 0..7999 train, 8000..9999 eval, pixels / 255; AUTO sharding (example i goes to rank i % N);
# each rank reads its shard as an endless stream, a fresh permutation from its own seeded generator per
# pass (tf.data's shuffle().repeat().batch()), the workload's batch per rank per step (64 unless said
# below; --batch overrides it). Each epoch is timed from barrier to barrier; rank 0 prints per-epoch
# images/s (global images / seconds) and a final line
#   RESULT workload=w1 procs=2 images_per_sec=<mean over epochs 2..E> step_ms=<mean> ...
# (the first epoch is warm-up and excluded).
#
# resnet20 and vgg16 (the convolutional speed workloads) are the models of deploy/jobs/resnet20_cifar_shape.json
# and deploy/jobs/vgg16_bench.json (deploy/make_model_jobs.py writes both), layer for layer and with the
# same parameter counts, on synthetic data of the job's shape (random pixels in [0, 1), random labels: the
# speed does not depend on the values): ResNet-20 with 1x1 projection shortcuts, BatchNorm with Keras'
# momentum 0.99 (torch momentum 0.01) and epsilon 1e-3, global average pooling and Dense 10, SGD with
# momentum 0.9 at 64 per rank; VGG16's include_top=False layout at 224x224x3 with its first 10 layers
# (blocks 1-3) frozen (requires_grad=False), Flatten, Dense 10 softmax (log-softmax + NLL, the same as
# categorical cross-entropy on softmax outputs), Adam, 16 per rank. resnet20_b128 is resnet20 at 128 per rank.
#
# residual and mobilenetv2 are the models of deploy/jobs/mnist_residual.json and
# deploy/jobs/mobilenetv2_transfer.json, layer for layer and with the same trainable / non-trainable counts
# as `ringtrain summary` prints, on MNIST as w1/w2. residual: RandomTranslation (8% each way, constant fill,
# nearest, training only; done on the model's device with affine_grid + grid_sample, one random shift per
# image) -> conv 32 -> BN -> relu -> max pooling -> [conv 32 same -> BN -> relu -> conv 32 same -> BN] + its
# input -> relu -> max pooling -> Dropout 0.25 -> flatten -> Dense 10 logits, BN momentum 0.9 (torch 0.1),
# Adam 0.003 (without the job's cosine decay), 64 per rank. mobilenetv2: the stem and first three
# inverted-residual blocks of Keras' MobileNetV2 at 28x28x1 (Keras "same" padding, asymmetric at stride 2, and
# ZeroPadding2D before the stride-2 depthwise), the stem and first two blocks frozen (requires_grad=False
# and their BatchNormalization kept in eval mode while training, as Keras' trainable: false), the third
# block with BN momentum 0.9 and a residual Add, GlobalAveragePooling2D, Dense 10 softmax (log-softmax +
# NLL), Adam 0.003, 32 per rank.
#
# unet is the model of deploy/jobs/unet_bench.json (deploy/make_model_jobs.py), layer for layer and with the same
# trainable count (118,155) as `ringtrain summary`: two 3x3 relu convolutions (Keras "same", Glorot-uniform) per
# level at 16, 32 and 64 filters with 2x max pooling down, nearest 2x upsampling up, each decoder level
# concatenating [upsampled, encoder skip] on the channels, and a 1x1 convolution to 11 logits per pixel;
# per-pixel cross-entropy (logits N x 11 x 128 x 128, targets N x 128 x 128), Adam 0.001, 16 per rank. Its data
# is the job's: data/mnist_seg/train (python3 deploy/make_segmentation_folder.py writes it), the 2,000 PNG images
# / 255 and their class-index masks, read once into memory with PIL and sharded as MNIST (example i to rank
# i % N). rank0_accuracy is then the pixel accuracy.
#
# --device cuda (the GPU peer: PyTorch eager on the same GPU): the model and each rank's whole shard
# live on the GPU (so no per-step upload at all, the most favourable setting for PyTorch), processes > 1
# use the nccl backend, and each epoch ends with torch.cuda.synchronize() before its time is taken.
# FP32 throughout: TF32 is off for cuDNN convolutions and cuBLAS matmuls (torch.backends.cudnn.allow_tf32,
# torch.backends.cuda.matmul.allow_tf32), as on ringtrain's side. At the end rank 0 prints
#   PEAK max_memory_allocated_mib=<x> max_memory_reserved_mib=<y>
# (torch.cuda.max_memory_allocated / max_memory_reserved of its GPU, MiB).
#
# --bind core pins rank r to its own contiguous share of the CPUs this process may use (the rule of
# `ringtrain launch --bind_to core`, common/cpu_binding.h); the default, none, is how torch.multiprocessing
# and torchrun start ranks.
#
# pytorch_fidelity.py imports the models, data and shard streams from here, so both peers train the
# same thing.
import argparse, gzip, os, socket, statistics, sys, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Where deploy/get_mnist.sh puts the MNIST test set (what deploy/jobs/mnist_w*.json read), else
# the copy beside the checkout.
_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
DATA_DIR = next((d for d in (os.path.join(_ROOT, "data/mnist"), os.path.join(_ROOT, "../shared/data/mnist"))
                 if os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz"))),
                os.path.join(_ROOT, "data/mnist"))
BATCH_PER_RANK = 64
TRAIN_FIRST, TRAIN_COUNT, EVAL_FIRST, EVAL_COUNT = 0, 8000, 8000, 2000


def keras_init(model):
    # Keras' defaults: Glorot-uniform kernels, zero biases. PyTorch's fan computation for a conv weight
    # (out, in, kh, kw) equals Keras' for (kh, kw, in, out), so xavier_uniform_ draws from the same range.
    for mod in model.modules():
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(mod.weight)
            if mod.bias is not None:  # ResNet-20's convolutions have none (use_bias false)
                nn.init.zeros_(mod.bias)
    return model


def build_w1():  # reshape -> conv2d(32, 3, relu) -> flatten -> dense(128, relu) -> dense(10)
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(32 * 26 * 26, 128), nn.ReLU(), nn.Linear(128, 10))


def build_w2():  # conv2d(32, 3, relu) -> max_pool 2 -> flatten -> dense(64, relu) -> dense(10)
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 13 * 13, 64), nn.ReLU(), nn.Linear(64, 10))


def build_w3():  # the custom-training-loop seed: conv32 -> pool -> conv64 -> pool -> dense 64 -> dense 10
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 10))


class ResidualBlock(nn.Module):
    """conv3x3(stride) -> BN -> relu -> conv3x3 -> BN, plus the input (or its 1x1-conv + BN projection
    where the stride is 2), then relu: deploy/make_model_jobs.py's block, Keras' ResNet v1 example."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = keras_bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = keras_bn(cout)
        self.proj = None
        if stride != 1:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), keras_bn(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


def keras_bn(channels, momentum=0.99, epsilon=1e-3):
    # Keras' BatchNormalization (defaults momentum 0.99, epsilon 1e-3): Keras keeps momentum of the old
    # moving statistic, torch's momentum is the weight of the new batch statistic.
    return nn.BatchNorm2d(channels, eps=epsilon, momentum=1 - momentum)


def build_resnet20():  # 272,474 parameters (+ 2,752 BN moving statistics), as deploy/jobs/resnet20_cifar_shape.json
    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), keras_bn(16), nn.ReLU()]
    cin = 16
    for stage, filters in enumerate([16, 32, 64]):
        for block in range(3):
            layers.append(ResidualBlock(cin, filters, 2 if stage > 0 and block == 0 else 1))
            cin = filters
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


VGG16_BLOCKS = [(2, 64), (2, 128), (3, 256), (3, 512), (3, 512)]
VGG16_FROZEN = 10  # our (and Keras' base_model minus the InputLayer) first 10 layers: blocks 1-3


def build_vgg16():  # 14,714,688 + 250,890 parameters, as deploy/jobs/vgg16_bench.json
    layers, cin = [], 3
    for convs, filters in VGG16_BLOCKS:
        for _ in range(convs):
            layers += [nn.Conv2d(cin, filters, 3, 1, 1), nn.ReLU()]
            cin = filters
        layers.append(nn.MaxPool2d(2))
    layers += [nn.Flatten(), nn.Linear(512 * 7 * 7, 10), nn.LogSoftmax(dim=1)]
    model = nn.Sequential(*layers)
    # Keras-layer count: a conv (+ its relu) or a pool is one layer.
    keras_layers = [m for m in model if isinstance(m, (nn.Conv2d, nn.MaxPool2d))]
    for m in keras_layers[:VGG16_FROZEN]:
        for p in m.parameters():
            p.requires_grad = False
    return model


class RandomTranslation(nn.Module):
    """Keras' RandomTranslation on N x C x H x W: in training, each image is shifted by its own random
    fraction of its height in [lower, upper] (a factor f is [-f, f]) and likewise of its width, sampled
    with `interpolation` (nearest, bilinear or bicubic) and filled outside by `fill_mode` (reflect,
    constant: zeros, nearest: the edge pixel); the identity in inference. One affine_grid + grid_sample on
    the input's device. With align_corners=False a normalized offset of 2 * fraction moves the image by
    fraction * size pixels."""

    FILL = {"reflect": "reflection", "constant": "zeros", "nearest": "border"}

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear"):
        super().__init__()
        if fill_mode not in self.FILL:
            raise ValueError(f"RandomTranslation fill_mode {fill_mode!r} is not mirrored")
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError(f"RandomTranslation interpolation {interpolation!r} is not mirrored")
        bounds = lambda f: (-f, f) if isinstance(f, (int, float)) else (f[0], f[1])
        self.height, self.width = bounds(height_factor), bounds(width_factor)
        self.padding_mode, self.mode = self.FILL[fill_mode], interpolation

    def forward(self, x):
        if not self.training:
            return x
        n = x.shape[0]
        theta = torch.zeros(n, 2, 3, device=x.device, dtype=x.dtype)
        theta[:, 0, 0] = 1
        theta[:, 1, 1] = 1
        # grid_sample reads input(p + offset): an image shifted right / down by d reads at p - d.
        theta[:, 0, 2].uniform_(-2 * self.width[1], -2 * self.width[0])
        theta[:, 1, 2].uniform_(-2 * self.height[1], -2 * self.height[0])
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(x, grid, mode=self.mode, padding_mode=self.padding_mode, align_corners=False)


class MnistResidual(nn.Module):
    """deploy/jobs/mnist_residual.json: shift -> conv 32 (valid, no bias) -> BN -> relu -> pool1 ->
    [res_conv1 (same) -> BN -> relu -> res_conv2 (same) -> BN] + pool1 -> relu -> pool2 -> Dropout 0.25
    -> flatten -> Dense 10 logits; every BN with momentum 0.9. 30,442 trainable parameters + 192 BN moving
    statistics."""

    def __init__(self):
        super().__init__()
        self.shift = RandomTranslation(0.08, 0.08, fill_mode="constant", interpolation="nearest")
        self.stem = nn.Sequential(nn.Conv2d(1, 32, 3, bias=False), keras_bn(32, 0.9), nn.ReLU(), nn.MaxPool2d(2))
        self.res = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1, bias=False), keras_bn(32, 0.9), nn.ReLU(),
                                 nn.Conv2d(32, 32, 3, 1, 1, bias=False), keras_bn(32, 0.9))
        # Keras flattens H x W x C, torch C x H x W: the same 1152 inputs in another order
        self.head = nn.Sequential(nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(), nn.Linear(32 * 6 * 6, 10))

    def forward(self, x):
        y = self.stem(self.shift(x))
        return self.head(torch.relu(y + self.res(y)))


def build_residual():
    return MnistResidual()


def keras_conv(cin, cout, kernel, stride, size, depthwise=False):
    """Keras Conv2D / DepthwiseConv2D (no bias, padding "same") on size x size input: "same" pads
    max(kernel - stride, 0) in all (size divisible by stride), the extra one after (bottom / right), so
    stride 2 on 28 pads 0 before and 1 after: a ZeroPad2d in front of an unpadded conv there."""
    total = max(kernel - stride, 0) if size % stride == 0 else max(kernel - size % stride, 0)
    before, after = total // 2, total - total // 2
    groups = cin if depthwise else 1
    if before == after:
        return nn.Conv2d(cin, cout, kernel, stride, before, groups=groups, bias=False)
    return nn.Sequential(nn.ZeroPad2d((before, after, before, after)),
                         nn.Conv2d(cin, cout, kernel, stride, groups=groups, bias=False))


class MobileNetV2Transfer(nn.Module):
    """deploy/jobs/mobilenetv2_transfer.json: Keras MobileNetV2's stem (Conv1 stride 2) and blocks
    expanded_conv, block_1 (expand 48, ZeroPadding2D ((0, 1), (0, 1)), depthwise stride 2 valid, project
    16), all trainable: false; block_2 (expand 96, depthwise, project 16, BN momentum 0.9) + its input;
    GlobalAveragePooling2D; Dense 10 softmax (log-softmax here, for NLLLoss). ReLU6 after each expand and
    depthwise BN, none after a projection's. 4,522 trainable parameters; 3,024 non-trainable (the frozen
    2,608, BN moving statistics included, + block_2's 416 moving statistics)."""

    def __init__(self):
        super().__init__()
        self.frozen = nn.Sequential(
            keras_conv(1, 16, 3, 2, 28), keras_bn(16), nn.ReLU6(),                  # Conv1 -> 14x14
            keras_conv(16, 16, 3, 1, 14, depthwise=True), keras_bn(16), nn.ReLU6(),  # expanded_conv_depthwise
            keras_conv(16, 8, 1, 1, 14), keras_bn(8),                                # expanded_conv_project
            keras_conv(8, 48, 1, 1, 14), keras_bn(48), nn.ReLU6(),                   # block_1_expand
            nn.ZeroPad2d((0, 1, 0, 1)),                                              # block_1_pad -> 15x15
            nn.Conv2d(48, 48, 3, 2, groups=48, bias=False), keras_bn(48), nn.ReLU6(),  # block_1_depthwise -> 7x7
            keras_conv(48, 16, 1, 1, 7), keras_bn(16))                               # block_1_project
        for p in self.frozen.parameters():
            p.requires_grad = False
        self.block2 = nn.Sequential(
            keras_conv(16, 96, 1, 1, 7), keras_bn(96, 0.9), nn.ReLU6(),               # block_2_expand
            keras_conv(96, 96, 3, 1, 7, depthwise=True), keras_bn(96, 0.9), nn.ReLU6(),  # block_2_depthwise
            keras_conv(96, 16, 1, 1, 7), keras_bn(16, 0.9))                           # block_2_project
        self.predictions = nn.Linear(16, 10)
        self.train()

    def train(self, mode=True):
        # Keras runs a trainable: false BatchNormalization in inference mode (moving statistics, no
        # update) even while the model trains.
        super().train(mode)
        self.frozen.eval()
        return self

    def forward(self, x):
        y = self.frozen(x)
        y = (y + self.block2(y)).mean((2, 3))
        return torch.log_softmax(self.predictions(y), dim=1)


def build_mobilenetv2():
    return MobileNetV2Transfer()


def unet_conv2(cin, cout):  # two Keras Conv2D(cout, 3, padding="same", activation="relu")
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1), nn.ReLU())


class UNet(nn.Module):
    """deploy/jobs/unet_bench.json (and unet_segmentation.json): enc1 (16) -> pool1 -> enc2 (32) -> pool2 ->
    bottleneck (64) -> up2 -> concat2 [up2, enc2] -> dec2 (32) -> up1 -> concat1 [up1, enc1] -> dec1 (16) ->
    logits (1x1, 11, linear). Each stage is two 3x3 'same' relu convolutions; UpSampling2D is nearest 2x.
    118,155 trainable parameters, no others."""

    def __init__(self, channels=1, classes=11):
        super().__init__()
        self.enc1, self.enc2 = unet_conv2(channels, 16), unet_conv2(16, 32)
        self.bottleneck = unet_conv2(32, 64)
        self.dec2, self.dec1 = unet_conv2(64 + 32, 32), unet_conv2(32 + 16, 16)
        self.logits = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        y = self.bottleneck(F.max_pool2d(e2, 2))
        y = self.dec2(torch.cat([F.interpolate(y, scale_factor=2, mode="nearest"), e2], 1))
        y = self.dec1(torch.cat([F.interpolate(y, scale_factor=2, mode="nearest"), e1], 1))
        return self.logits(y)


def build_unet():
    return UNet()


def sgd(params):
    return torch.optim.SGD(params, lr=0.001)


def adam(params):
    return torch.optim.Adam(params, lr=0.001, eps=1e-7)  # Keras' epsilon, not PyTorch's 1e-8


def sgd_momentum(params):  # resnet20's job: SGD(0.1, momentum 0.9); its cosine schedule costs nothing
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def adam_vgg(params):  # vgg16's job: Adam(1e-4)
    return torch.optim.Adam(params, lr=1e-4, eps=1e-7)


def adam_3e3(params):
    # residual's and mobilenetv2's jobs: Adam(0.003); residual's cosine decay of the rate is left out
    # (one scalar per step, no effect on the speed)
    return torch.optim.Adam(params, lr=0.003, eps=1e-7)


# name -> (model builder, optimizer, epochs, steps per epoch, batch per rank, data: a synthetic input shape,
# None for MNIST, or a function returning the training split (x, y), loss). Epochs and steps match the job files that tests/bench/train_bench.sh runs; residual
# runs 3 of its job's 12 epochs, and mobilenetv2's job has no steps_per_epoch: None here, one pass over each
# rank's shard of the 8,000 training examples, as ringtrain takes it.
WORKLOADS = {
    "w1": (build_w1, sgd, 3, 70, 64, None, nn.CrossEntropyLoss),
    "w2": (build_w2, adam, 6, 63, 64, None, nn.CrossEntropyLoss),
    "w3": (build_w3, adam, 5, 62, 64, None, nn.CrossEntropyLoss),
    "resnet20": (build_resnet20, sgd_momentum, 5, 32, 64, (3, 32, 32), nn.CrossEntropyLoss),
    "resnet20_b128": (build_resnet20, sgd_momentum, 5, 32, 128, (3, 32, 32), nn.CrossEntropyLoss),
    "vgg16": (build_vgg16, adam_vgg, 3, 2, 16, (3, 224, 224), nn.NLLLoss),
    "residual": (build_residual, adam_3e3, 3, 63, 64, None, nn.CrossEntropyLoss),
    "mobilenetv2": (build_mobilenetv2, adam_3e3, 3, None, 32, None, nn.NLLLoss),
    "unet": (build_unet, adam, 3, 10, 16, lambda: load_segmentation(SEG_TRAIN_DIR), nn.CrossEntropyLoss),
}


def synthetic(shape, count, seed):
    """count random images of shape (C, H, W) in [0, 1) and labels in 0..9."""
    gen = torch.Generator().manual_seed(seed)
    return torch.rand((count,) + shape, generator=gen), torch.randint(0, 10, (count,), generator=gen)


def load_mnist():
    """Returns (images float32 N x 1 x 28 x 28 in [0, 1], labels int64 N) of the whole 10,000-image file."""
    try:
        with gzip.open(os.path.join(DATA_DIR, "t10k-images-idx3-ubyte.gz")) as f:
            raw = f.read()
        with gzip.open(os.path.join(DATA_DIR, "t10k-labels-idx1-ubyte.gz")) as f:
            lab = f.read()
    except OSError as e:
        sys.exit(f"cannot read MNIST from {DATA_DIR} ({e}); it must hold t10k-images-idx3-ubyte.gz and "
                 "t10k-labels-idx1-ubyte.gz")
    x = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28) / np.float32(255)
    y = np.frombuffer(lab, np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), torch.from_numpy(y)


SEG_TRAIN_DIR = os.path.join(_ROOT, "data/mnist_seg/train")


def load_segmentation(directory):
    """Returns (images float32 N x 1 x H x W in [0, 1], masks int64 N x H x W) of a folder written by
    deploy/make_segmentation_folder.py: directory/images/*.png and the masks of the same names in
    directory/masks, in sorted name order."""
    from PIL import Image
    names = sorted(n for n in os.listdir(os.path.join(directory, "images")) if n.endswith(".png"))
    if not names:
        sys.exit(f"no PNG images in {directory}/images; run python3 deploy/make_segmentation_folder.py")
    x = np.stack([np.asarray(Image.open(os.path.join(directory, "images", n)).convert("L")) for n in names])
    y = np.stack([np.asarray(Image.open(os.path.join(directory, "masks", n))) for n in names])
    x = (x[:, None] / np.float32(255)).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


class ShardStream:
    """Endless batches of one rank's AUTO shard: example i of the split belongs to rank i % procs.
    Each pass over the shard is a fresh permutation from the rank's own generator; a batch that
    reaches the end of a pass continues into the next."""

    def __init__(self, x, y, rank, procs, seed, device="cpu"):
        idx = torch.arange(rank, x.shape[0], procs)
        self.x, self.y = x[idx].contiguous().to(device), y[idx].contiguous().to(device)
        self.gen = torch.Generator().manual_seed(seed * 1000003 + rank)
        self.order, self.pos = torch.randperm(self.x.shape[0], generator=self.gen), 0

    def next(self, batch):
        parts, need, n = [], batch, self.x.shape[0]
        while need > 0:
            take = min(need, n - self.pos)
            parts.append(self.order[self.pos:self.pos + take])
            self.pos += take
            need -= take
            if self.pos == n:
                self.order, self.pos = torch.randperm(n, generator=self.gen), 0
        sel = torch.cat(parts).to(self.x.device)
        return self.x[sel], self.y[sel]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(rank, args, port):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    if args.bind == "core":
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= args.procs:  # else nobody is bound, as ringtrain does
            os.sched_setaffinity(0, cpus[rank * len(cpus) // args.procs:(rank + 1) * len(cpus) // args.procs])
    torch.set_num_threads(args.threads)
    n = args.procs
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank % torch.cuda.device_count())
        # FP32 on both sides: no TF32 in cuDNN convolutions or cuBLAS matmuls
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    backend = "nccl" if cuda and n > 1 else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=n)
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    build, make_opt, _, steps, batch, shape, make_loss = WORKLOADS[args.workload]
    if args.steps is not None:
        steps = args.steps
    if args.batch is not None:
        batch = args.batch
    if steps is None:  # one pass over this rank's shard
        steps = TRAIN_COUNT // (n * batch)
    if shape is None:
        x, y = load_mnist()
        x, y = x[TRAIN_FIRST:TRAIN_FIRST + TRAIN_COUNT], y[TRAIN_FIRST:TRAIN_FIRST + TRAIN_COUNT]
    elif callable(shape):  # the workload's own training data (unet: the segmentation folder)
        x, y = shape()
    else:  # enough for two passes' worth of distinct batches, bounded (VGG16: 600 KB an image)
        x, y = synthetic(shape, n * batch * min(steps, 8), args.seed)
    stream = ShardStream(x, y, rank, n, args.seed, device)
    torch.manual_seed(args.seed)
    # DDP also broadcasts rank 0's parameters; frozen parameters (requires_grad=False) are not reduced
    model = DDP(keras_init(build()).to(device), device_ids=[device.index] if cuda else None,
                find_unused_parameters=False)
    opt = make_opt([p for p in model.parameters() if p.requires_grad])
    loss_fn = make_loss()
    images = steps * batch * n
    if rank == 0:
        where = torch.cuda.get_device_name(device) + " (FP32, TF32 off)" if cuda else "CPU"
        print(f"# torch {torch.__version__} DDP {backend} on {where}: workload {args.workload}, {n} process(es) x "
              f"{args.threads} thread(s), batch {batch} per process, {args.epochs} epochs x {steps} "
              f"steps ({images} images per epoch)", flush=True)
    rates, step_ms = [], []
    def train_step():
        xb, yb = stream.next(batch)
        logits = model(xb)
        loss = loss_fn(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return logits, yb, loss

    dist.barrier()
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), dtype=torch.int64, device=device)
        labels = 0  # predictions counted: an image's label, or each of its pixels' (unet)
        for _ in range(steps):
            logits, yb, loss = train_step()
            loss_sum += loss.detach()
            correct += (logits.detach().argmax(1) == yb).sum()
            labels += yb.numel()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        sec = time.perf_counter() - t0
        rates.append(images / sec)
        step_ms.append(sec * 1e3 / steps)
        if rank == 0:  # rank 0's own shard metrics: a sanity check, not the global figures
            print(f"epoch {epoch + 1}/{args.epochs}: {sec:.3f} s, images_per_sec={rates[-1]:.1f} "
                  f"step_ms={step_ms[-1]:.3f} rank0_loss={float(loss_sum) / steps:.4f} "
                  f"rank0_accuracy={int(correct) / labels:.4f}", flush=True)
    if rank == 0:
        timed = slice(1, None) if args.epochs > 1 else slice(0, None)
        if args.epochs == 1:
            print("# warning: only one epoch, so the warm-up epoch is in the mean", flush=True)
        print(f"RESULT workload={args.workload} procs={n} images_per_sec={statistics.mean(rates[timed]):.1f} "
              f"step_ms={statistics.mean(step_ms[timed]):.3f} epochs={args.epochs} steps_per_epoch={steps} "
              f"batch_per_proc={batch} threads={args.threads} device={args.device}", flush=True)
    if cuda and args.profile_steps:
        # Each kernel's GPU time over a few more steps (torch.profiler, CUPTI): where the peer's step goes.
        # Every rank steps (DDP's all-reduce needs them all); rank 0 prints.
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.profile_steps):
                train_step()
            torch.cuda.synchronize()
        if rank == 0:
            table = None
            for key in ("self_device_time_total", "self_cuda_time_total"):  # the name changed in torch 2.4
                try:
                    table = prof.key_averages().table(sort_by=key, row_limit=30, max_name_column_width=100)
                    break
                except Exception:  # an unknown sort key in this version
                    continue
            print(f"PROFILE {args.profile_steps} steps\n{table}", flush=True)
    if cuda and rank == 0:
        print(f"PEAK max_memory_allocated_mib={torch.cuda.max_memory_allocated(device) / 2**20:.1f} "
              f"max_memory_reserved_mib={torch.cuda.max_memory_reserved(device) / 2**20:.1f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description="PyTorch DDP (gloo) training-speed peer of `ringtrain bench train`")
    p.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=None,
                   help="default: the workload's (w1 3, w2 6, w3 5, resnet20 5, vgg16 3, residual 3, "
                        "mobilenetv2 3, unet 3)")
    p.add_argument("--steps", type=int, default=None,
                   help="steps per epoch; default: the workload's (w1 70, w2 63, w3 62, resnet20 32, vgg16 2, "
                        "residual 63, mobilenetv2 one pass over the shard, 8000 / (procs x batch), unet 10)")
    p.add_argument("--batch", type=int, default=None,
                   help="batch per process; default: the workload's (vgg16 16, unet 16, resnet20_b128 128, "
                        "mobilenetv2 32, else 64)")
    p.add_argument("--profile_steps", type=int, default=0,
                   help="with --device cuda: after the timed epochs, this many more steps under torch.profiler, and "
                        "rank 0 prints each kernel's GPU time")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per process")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--bind", choices=["none", "core"], default="none",
                   help="core: each rank on its own share of the CPUs (as ringtrain's --bind_to core)")
    args = p.parse_args()
    if args.procs < 1 or args.threads < 1:
        p.error("--procs and --threads must be at least 1")
    if args.epochs is None:
        args.epochs = WORKLOADS[args.workload][2]
    if args.epochs < 1:
        p.error("--epochs must be at least 1")
    if args.steps is not None and args.steps < 1:
        p.error("--steps must be at least 1")
    if args.batch is not None and args.batch < 1:
        p.error("--batch must be at least 1")
    if args.workload == "unet" and not os.path.isdir(os.path.join(SEG_TRAIN_DIR, "masks")):
        sys.exit(f"pytorch_train_bench: no segmentation data in {os.path.normpath(SEG_TRAIN_DIR)}; "
                 "run python3 deploy/make_segmentation_folder.py")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch.cuda.is_available() is False (no GPU or no CUDA build of PyTorch)")
    # torch.multiprocessing reports a child's exception and exits non-zero.
    import torch.multiprocessing as mp
    # CUDA cannot be used in a forked child once the parent has touched it (is_available above): spawn there.
    mp.start_processes(run, args=(args, free_port()), nprocs=args.procs,
                       start_method="spawn" if args.device == "cuda" else "fork")


if __name__ == "__main__":
    main()
