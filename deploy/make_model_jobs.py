#!/usr/bin/env python3
"""Writes the convolutional model jobs in deploy/jobs/ (compact form, Keras layer names):
  resnet20_cifar_shape.json  ResNet-20 (He et al. 2016, CIFAR variant; 1x1 projection shortcuts as
                             the Keras ResNet v1 example) on 32x32x3 synthetic data of CIFAR's shape
  resnet20_b128.json         the same at batch 128 per worker: the GPU speed workload
                             (tests/bench/train_bench.sh WORKLOADS=resnet20_b128 DEVICE=gpu)
  vgg16_transfer.json        VGG16's include_top=False layout at 224x224x3, its first layers frozen,
                             Flatten and a Dense softmax head, categorical cross-entropy, Adam, on an
                             image folder (deploy/make_mnist_png_folder.py writes one)
  vgg16_bench.json           the VGG16 speed workload: the same model with its first 10 layers
                             (blocks 1-3) frozen, on synthetic data of the same shape, a few short epochs
                             (tests/bench/train_bench.sh WORKLOADS=vgg16)
  mobilenetv2_transfer.json  the stem and first three inverted-residual blocks of Keras' MobileNetV2
                             (Conv2D, DepthwiseConv2D, BatchNormalization, ReLU6, ZeroPadding2D, a residual
                             Add) at MNIST's 28x28x1, the first two blocks frozen, on the real MNIST test set
  unet_segmentation.json     a small U-Net (two 2x poolings, UpSampling2D and Concatenate skips, a 1x1 Conv2D
                             to 11 per-pixel logits) on 128x128x1 segmentation masks of MNIST digits
                             (deploy/make_segmentation_folder.py writes them)
  unet_bench.json            the U-Net speed workload: the same model and data, 3 epochs of 10 steps
                             (tests/bench/train_bench.sh WORKLOADS=unet)
Run from anywhere: python3 deploy/make_model_jobs.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def resnet20():
    layers = [{"type": "Conv2D", "name": "conv", "filters": 16, "kernel_size": 3, "padding": "same",
               "use_bias": False},
              {"type": "BatchNormalization", "name": "bn"},
              {"type": "Activation", "name": "relu", "activation": "relu"}]
    prev = "relu"
    for stage, filters in enumerate([16, 32, 64]):
        for block in range(3):
            p = f"s{stage + 1}b{block + 1}"
            strides = 2 if stage > 0 and block == 0 else 1
            layers += [
                {"type": "Conv2D", "name": p + "_conv1", "inputs": [prev], "filters": filters, "kernel_size": 3,
                 "strides": strides, "padding": "same", "use_bias": False},
                {"type": "BatchNormalization", "name": p + "_bn1"},
                {"type": "Activation", "name": p + "_relu1", "activation": "relu"},
                {"type": "Conv2D", "name": p + "_conv2", "filters": filters, "kernel_size": 3, "padding": "same",
                 "use_bias": False},
                {"type": "BatchNormalization", "name": p + "_bn2"}]
            shortcut = prev
            if strides != 1:
                layers += [{"type": "Conv2D", "name": p + "_proj", "inputs": [prev], "filters": filters,
                            "kernel_size": 1, "strides": strides, "use_bias": False},
                           {"type": "BatchNormalization", "name": p + "_proj_bn"}]
                shortcut = p + "_proj_bn"
            layers += [{"type": "Add", "name": p + "_add", "inputs": [shortcut, p + "_bn2"]},
                       {"type": "Activation", "name": p + "_out", "activation": "relu"}]
            prev = p + "_out"
    layers += [{"type": "GlobalAveragePooling2D", "name": "pool", "inputs": [prev]},
               {"type": "Dense", "name": "logits", "units": 10}]
    return {
        "description": "ResNet-20 (He et al. 2016, CIFAR variant, 0.27 M parameters) with BatchNormalization, Add and "
                       "GlobalAveragePooling2D, on synthetic data of CIFAR-10's shape (32x32x3, 10 classes): the "
                       "issue-16 speed workload. SGD with momentum 0.9 and a cosine schedule, as the paper trains.",
        "model": {"name": "resnet20", "input_shape": [32, 32, 3], "layers": layers},
        "loss": {"type": "sparse_categorical_crossentropy", "from_logits": True},
        "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9},
        "lr_schedule": {"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 640},
        "data": {"train": {"format": "synthetic", "count": 8192, "shape": [32, 32, 3], "classes": 10, "seed": 1},
                 "eval": {"format": "synthetic", "count": 1024, "shape": [32, 32, 3], "classes": 10, "seed": 2}},
        "batch_size_per_worker": 64, "epochs": 5, "steps_per_epoch": 32, "seed": 1,
        "save_model": "../../build/resnet20/model.safetensors",
    }


VGG16_BLOCKS = [(1, 2, 64), (2, 2, 128), (3, 3, 256), (4, 3, 512), (5, 3, 512)]


def vgg16(frozen_layers=15):
    layers = []
    for block, convs, filters in VGG16_BLOCKS:
        for i in range(convs):
            layers.append({"type": "Conv2D", "name": f"block{block}_conv{i + 1}", "filters": filters,
                           "kernel_size": 3, "padding": "same", "activation": "relu"})
        layers.append({"type": "MaxPooling2D", "name": f"block{block}_pool"})
    # Keras' layer indices count the InputLayer as layer 0: base_model.layers[:15] are the input and
    # blocks 1-4 (14 layers here); the job freezes the first `frozen_layers - 1` of ours.
    for layer in layers[:frozen_layers - 1]:
        layer["trainable"] = False
    layers += [{"type": "Flatten", "name": "flatten"},
               {"type": "Dense", "name": "predictions", "units": 10, "activation": "softmax"}]
    return {
        "description": "The Estimator tutorial's transfer-learning case: VGG16 (include_top=False layout) at 224x224x3 "
                       "with blocks 1-4 frozen (Keras' base_model.layers[:15]), Flatten and a softmax head, "
                       "categorical cross-entropy, Adam, on an image folder. Pretrained weights go in "
                       "initial_weights (tools/keras_weights.py converts Keras' VGG16 weights); without them the "
                       "base starts from Glorot-uniform values. The folder: python3 deploy/make_mnist_png_folder.py "
                       "writes MNIST as PNGs (resized here to 224x224 RGB).",
        "model": {"name": "vgg16_transfer", "input_shape": [224, 224, 3], "layers": layers},
        "loss": {"type": "categorical_crossentropy", "from_logits": False},
        "metrics": ["accuracy"],
        "optimizer": {"type": "adam", "learning_rate": 0.0001},
        "data": {"train": {"format": "image_folder", "directory": "../../data/mnist_png/train", "label_mode":
                           "categorical", "color_mode": "rgb", "image_size": [224, 224], "rescale": 0.00392156862745098},
                 "eval": {"format": "image_folder", "directory": "../../data/mnist_png/eval", "label_mode":
                          "categorical", "color_mode": "rgb", "image_size": [224, 224], "rescale": 0.00392156862745098}},
        "batch_size_per_worker": 16, "epochs": 1, "steps_per_epoch": 20, "seed": 1,
        "save_model": "../../build/vgg16_transfer/model.safetensors",
    }


def vgg16_bench():
    """VGG16 for `ringtrain bench train`: the first 10 of our layers frozen (VGG16's "first 10 layers",
    blocks 1-3), synthetic 224x224x3 data (integer labels, so the sparse form of the same cross-entropy),
    3 epochs of 2 steps (the first is warm-up): VGG16 costs ~15.5 GMAC forward per image."""
    job = vgg16(frozen_layers=11)
    job["description"] = ("Issue 16's VGG16 speed workload (tests/bench/train_bench.sh WORKLOADS=vgg16): "
                          "vgg16_transfer.json's model with its first 10 layers (blocks 1-3) frozen, on synthetic "
                          "data of the same shape (224x224x3, 10 classes), sparse categorical cross-entropy on "
                          "the softmax output, Adam, 3 short epochs (the first is warm-up).")
    job["model"]["name"] = "vgg16_bench"
    job["loss"] = {"type": "sparse_categorical_crossentropy", "from_logits": False}
    job["data"] = {"train": {"format": "synthetic", "count": 128, "shape": [224, 224, 3], "classes": 10, "seed": 1},
                   "eval": {"format": "synthetic", "count": 32, "shape": [224, 224, 3], "classes": 10, "seed": 2}}
    job.update({"epochs": 3, "steps_per_epoch": 2})
    job["save_model"] = "../../build/vgg16_bench/model.safetensors"
    return job


def mobilenetv2_transfer():
    """MobileNetV2's stem and first three inverted-residual blocks (Keras' layer names; the first block
    without expansion, the second with stride 2 behind ZeroPadding2D as Keras pads it, the third with its
    residual Add), narrowed to MNIST, the stem and the first two blocks frozen and the third fine-tuned
    with a GlobalAveragePooling2D and softmax head."""
    layers = [{"type": "Reshape", "name": "reshape", "target_shape": [28, 28, 1]}]

    def add(frozen, **layer):
        if frozen:
            layer["trainable"] = False
        layers.append(layer)

    def conv(frozen, name, filters, kernel_size=1, strides=1):
        add(frozen, type="Conv2D", name=name, filters=filters, kernel_size=kernel_size, strides=strides,
            padding="same", use_bias=False)

    def depthwise(frozen, name, strides=1):
        add(frozen, type="DepthwiseConv2D", name=name, kernel_size=3, strides=strides,
            padding="same" if strides == 1 else "valid", use_bias=False)

    def bn(frozen, name):
        # Momentum 0.9 where it trains: 375 steps must forget the initial moving statistics.
        add(frozen, type="BatchNormalization", name=name, **({} if frozen else {"momentum": 0.9}))

    def relu6(frozen, name):
        add(frozen, type="ReLU", name=name, max_value=6.0)

    conv(True, "Conv1", 16, kernel_size=3, strides=2)
    bn(True, "bn_Conv1")
    relu6(True, "Conv1_relu")
    depthwise(True, "expanded_conv_depthwise")
    bn(True, "expanded_conv_depthwise_BN")
    relu6(True, "expanded_conv_depthwise_relu")
    conv(True, "expanded_conv_project", 8)
    bn(True, "expanded_conv_project_BN")
    conv(True, "block_1_expand", 48)
    bn(True, "block_1_expand_BN")
    relu6(True, "block_1_expand_relu")
    add(True, type="ZeroPadding2D", name="block_1_pad", padding=[[0, 1], [0, 1]])
    depthwise(True, "block_1_depthwise", strides=2)
    bn(True, "block_1_depthwise_BN")
    relu6(True, "block_1_depthwise_relu")
    conv(True, "block_1_project", 16)
    bn(True, "block_1_project_BN")
    conv(False, "block_2_expand", 96)
    bn(False, "block_2_expand_BN")
    relu6(False, "block_2_expand_relu")
    depthwise(False, "block_2_depthwise")
    bn(False, "block_2_depthwise_BN")
    relu6(False, "block_2_depthwise_relu")
    conv(False, "block_2_project", 16)
    bn(False, "block_2_project_BN")
    add(False, type="Add", name="block_2_add", inputs=["block_1_project_BN", "block_2_project_BN"])
    add(False, type="GlobalAveragePooling2D", name="global_average_pooling2d")
    add(False, type="Dense", name="predictions", units=10, activation="softmax")
    mnist = "../../data/mnist/"
    return {
        "description": ("A MobileNetV2-style transfer job: the stem and the first three inverted-residual blocks "
                        "of Keras' MobileNetV2 (Conv2D stride 2, BatchNormalization, ReLU6, DepthwiseConv2D, 1x1 "
                        "projections, ZeroPadding2D before the stride-2 depthwise, a residual Add) at MNIST's "
                        "28x28x1. The stem and the first two blocks are frozen (trainable: false, so their "
                        "BatchNormalization runs in inference mode); the third block is fine-tuned (its "
                        "BatchNormalization with momentum 0.9, not Keras' 0.99: in 375 steps the moving "
                        "statistics must forget their initial (0, 1)) with a GlobalAveragePooling2D and softmax "
                        "head, as Keras' transfer-learning guide fine-tunes the top of a base model. Pretrained "
                        "weights go in initial_weights; without them the base keeps its seeded initial values. "
                        "Adam 0.003 on the real MNIST test set (examples 0..7999 train, 8000..9999 eval). "
                        "Written by deploy/make_model_jobs.py."),
        "model": {"name": "mobilenetv2_transfer", "input_shape": [28, 28], "layers": layers},
        "loss": {"type": "sparse_categorical_crossentropy", "from_logits": False},
        "metrics": ["accuracy"],
        "optimizer": {"type": "adam", "learning_rate": 0.003},
        "data": {
            "train": {"format": "mnist_idx", "images": mnist + "t10k-images-idx3-ubyte.gz",
                      "labels": mnist + "t10k-labels-idx1-ubyte.gz", "first": 0, "count": 8000},
            "eval": {"format": "mnist_idx", "images": mnist + "t10k-images-idx3-ubyte.gz",
                     "labels": mnist + "t10k-labels-idx1-ubyte.gz", "first": 8000, "count": 2000},
        },
        "batch_size_per_worker": 32,
        "epochs": 3,
        "seed": 1,
        "save_model": "../../build/mobilenetv2_transfer/model.safetensors",
    }


def resnet20_b128():
    job = resnet20()
    job["description"] = ("ResNet-20 as resnet20_cifar_shape.json (the same model, data and optimizer) at batch 128 per "
                          "worker: the GPU speed workload (tests/bench/train_bench.sh WORKLOADS=resnet20_b128 DEVICE=gpu).")
    job["batch_size_per_worker"] = 128
    job["save_model"] = "../../build/resnet20_b128/model.safetensors"
    return job


def unet_layers():
    """A small U-Net (Ronneberger et al. 2015, narrowed): two 3x3 'same' relu Conv2Ds per level at 16, 32 and
    64 filters, MaxPooling2D 2 down, UpSampling2D 2 (nearest) up, each decoder level concatenating
    [upsampled, encoder skip] on the channels before its two convolutions, and a 1x1 Conv2D to 11 logits per
    pixel. tests/peers/pytorch_train_bench.py's unet is the same network."""
    layers = []

    def conv2(name, filters, inputs=None):
        first = {"type": "Conv2D", "name": name + "_conv1", "filters": filters, "kernel_size": 3, "padding": "same",
                 "activation": "relu"}
        if inputs:
            first["inputs"] = inputs
        layers.extend([first, {"type": "Conv2D", "name": name + "_conv2", "filters": filters, "kernel_size": 3,
                               "padding": "same", "activation": "relu"}])
        return name + "_conv2"

    enc1 = conv2("enc1", 16)
    layers.append({"type": "MaxPooling2D", "name": "pool1"})
    enc2 = conv2("enc2", 32)
    layers.append({"type": "MaxPooling2D", "name": "pool2"})
    conv2("bottleneck", 64)
    layers += [{"type": "UpSampling2D", "name": "up2"},
               {"type": "Concatenate", "name": "concat2", "inputs": ["up2", enc2]}]
    conv2("dec2", 32)
    layers += [{"type": "UpSampling2D", "name": "up1"},
               {"type": "Concatenate", "name": "concat1", "inputs": ["up1", enc1]}]
    conv2("dec1", 16)
    layers.append({"type": "Conv2D", "name": "logits", "filters": 11, "kernel_size": 1})
    return layers


def segmentation_data(split):
    return {"format": "image_folder", "directory": f"../../data/mnist_seg/{split}/images",
            "masks": f"../../data/mnist_seg/{split}/masks", "num_classes": 11, "color_mode": "grayscale",
            "image_size": [128, 128], "rescale": 0.00392156862745098}


def unet_segmentation():
    return {
        "description": ("Per-pixel segmentation with a small U-Net (encoder 16-32-64 filters with two "
                        "MaxPooling2D, decoder with UpSampling2D and Concatenate skips, a 1x1 Conv2D to 11 logits "
                        "per pixel) on 128x128 grayscale images of 2 or 3 MNIST digits, each pixel labelled 0 "
                        "(background) or 1 + its digit: image_folder with masks (the images and their masks "
                        "paired by file name). Sparse categorical cross-entropy on the logits of every pixel, "
                        "pixel accuracy and mean IoU over the 11 classes, Adam 0.003, 10 epochs of 60 steps. The data: python3 "
                        "deploy/make_segmentation_folder.py writes data/mnist_seg/{train,eval}/{images,masks} "
                        "(2,000 training and 500 evaluation examples from the real MNIST test set). "
                        "Written by deploy/make_model_jobs.py."),
        "model": {"name": "unet_segmentation", "input_shape": [128, 128, 1], "layers": unet_layers()},
        "loss": {"type": "sparse_categorical_crossentropy", "from_logits": True},
        "metrics": ["accuracy", {"type": "mean_iou", "num_classes": 11}],
        "optimizer": {"type": "adam", "learning_rate": 0.003},
        "data": {"train": segmentation_data("train"), "eval": segmentation_data("eval")},
        "batch_size_per_worker": 16, "epochs": 10, "steps_per_epoch": 60, "seed": 1,
        "save_model": "../../build/unet_segmentation/model.safetensors",
    }


def unet_bench():
    job = unet_segmentation()
    job["description"] = ("The U-Net speed workload (tests/bench/train_bench.sh WORKLOADS=unet, against "
                          "tests/peers/pytorch_train_bench.py --workload unet): unet_segmentation.json's model and "
                          "data (python3 deploy/make_segmentation_folder.py writes it), 3 epochs of 10 steps at "
                          "batch 16 (the first is warm-up), decoded images and masks cached in memory after the "
                          "first pass (data.pipeline.cache). Written by deploy/make_model_jobs.py.")
    job["model"]["name"] = "unet_bench"
    job["data"]["pipeline"] = {"cache": True}
    job.update({"epochs": 3, "steps_per_epoch": 10})
    job["save_model"] = "../../build/unet_bench/model.safetensors"
    return job


def main():
    for name, job in (("resnet20_cifar_shape", resnet20()), ("resnet20_b128", resnet20_b128()), ("vgg16_transfer", vgg16()),
                      ("vgg16_bench", vgg16_bench()), ("mobilenetv2_transfer", mobilenetv2_transfer()), ("unet_segmentation", unet_segmentation()),
                      ("unet_bench", unet_bench())):
        with open(os.path.join(HERE, "jobs", name + ".json"), "w") as f:
            json.dump(job, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
