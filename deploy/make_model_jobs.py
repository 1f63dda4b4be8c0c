#!/usr/bin/env python3
"""Writes the convolutional model jobs in deploy/jobs/ (compact form, Keras layer names):
  resnet20_cifar_shape.json  ResNet-20 (He et al. 2016, CIFAR variant; 1x1 projection shortcuts as
                             the Keras ResNet v1 example) on 32x32x3 synthetic data of CIFAR's shape
  vgg16_transfer.json        VGG16's include_top=False layout at 224x224x3, its first layers frozen,
                             Flatten and a Dense softmax head, categorical cross-entropy, Adam, on an
                             image folder (deploy/make_mnist_png_folder.py writes one)
  vgg16_bench.json           the VGG16 speed workload: the same model with its first 10 layers
                             (blocks 1-3) frozen, on synthetic data of the same shape, a few short epochs
                             (tests/bench/train_bench.sh WORKLOADS=vgg16)
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


def main():
    for name, job in (("resnet20_cifar_shape", resnet20()), ("vgg16_transfer", vgg16()),
                      ("vgg16_bench", vgg16_bench())):
        with open(os.path.join(HERE, "jobs", name + ".json"), "w") as f:
            json.dump(job, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
