#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/seed-*):
valid inputs and near misses, small. Run it from anywhere; it rewrites only seed-*
files. Crash reproducers found by the fuzzers are committed beside them as crash-*
(see docs/dev/fuzzing-and-sanitizers.md), and are never rewritten here."""
import glob, gzip, json, os, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def out(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(data)


def clear(target):
    for p in glob.glob(os.path.join(HERE, 'corpus', target, 'seed-*')):
        os.remove(p)


def small_job(**changes):
    job = {"model": {"input_shape": [12, 12], "layers": [
        {"type": "reshape", "target_shape": [12, 12, 1]},
        {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"},
        {"type": "max_pooling2d"}, {"type": "flatten"},
        {"type": "dense", "units": 16, "activation": "relu"}, {"type": "dense", "units": 4}]},
        "optimizer": {"type": "adam", "learning_rate": 0.01},
        "data": {"train": {"format": "synthetic", "count": 64, "shape": [12, 12], "classes": 4, "seed": 3},
                 "eval": {"format": "synthetic", "count": 16, "shape": [12, 12], "classes": 4, "seed": 4}},
        "batch_size_per_worker": 16, "epochs": 2, "steps_per_epoch": 4, "seed": 5}
    job.update(changes)
    return job


def jobs():
    clear('job_config')
    for p in sorted(glob.glob(os.path.join(ROOT, 'deploy', 'jobs', '*.json'))):
        with open(p, 'rb') as f:
            out('job_config', 'deploy-' + os.path.basename(p), f.read())
    out('job_config', 'small.json', json.dumps(small_job()))
    out('job_config', 'keras.json', json.dumps(small_job(
        lr_schedule={"type": "piecewise_constant", "unit": "epoch", "boundaries": [1, 2], "values": [1e-2, 1e-3, 1e-4]},
        validation_freq=[1, 2], tensorboard_dir="tb", device="cpu",
        backup_and_restore={"backup_dir": "b", "save_freq": 2, "delete_checkpoint": False},
        model_checkpoint={"filepath": "ckpt/ckpt_{epoch}.safetensors"}, recovery="restart",
        communication={"implementation": "RING", "timeout_seconds": 30, "bytes_per_pack": 4096},
        optimizer={"type": "sgd", "learning_rate": 0.1, "momentum": 0.9, "nesterov": True})))
    out('job_config', 'exp_decay.json', json.dumps(small_job(
        lr_schedule={"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 3, "decay_rate": 0.5,
                     "staircase": True, "unit": "step"})))
    out('job_config', 'dense_only.json', json.dumps(small_job(model={"input_shape": [4], "layers": [
        {"type": "dense", "units": 3, "use_bias": False, "name": "d"}, {"type": "Dense", "units": 2}]})))
    out('job_config', 'same_padding.json', json.dumps(small_job(model={"input_shape": [5, 5, 2], "layers": [
        {"type": "Conv2D", "filters": 2, "kernel_size": [3, 2], "strides": [2, 1], "padding": "same"},
        {"type": "MaxPooling2D", "pool_size": 2, "padding": "SAME"}, {"type": "flatten"},
        {"type": "dense", "units": 2}]})))
    out('job_config', 'mnist_files.json', json.dumps(small_job(data={
        "train": {"format": "mnist_idx", "images": ["a.gz", "b.gz"], "labels": ["la.gz", "lb.gz"]},
        "auto_shard_policy": "FILE"})))
    text = json.dumps(small_job())
    # Malformed numbers: out of range, overlong integers, huge sizes.
    out('job_config', 'lr-1e400.json', text.replace('"learning_rate": 0.01', '"learning_rate": 1e400'))
    out('job_config', 'lr-neg-1e400.json', text.replace('"learning_rate": 0.01', '"learning_rate": -1e400'))
    out('job_config', 'seed-400-digits.json', text.replace('"seed": 5', '"seed": ' + '9' * 400))
    out('job_config', 'seed-20-digits.json', text.replace('"seed": 5', '"seed": 99999999999999999999'))
    out('job_config', 'batch-1e9.json', text.replace('"batch_size_per_worker": 16', '"batch_size_per_worker": 1000000000'))
    out('job_config', 'batch-1e30.json', text.replace('"batch_size_per_worker": 16', '"batch_size_per_worker": 1e30'))
    out('job_config', 'batch-2.5.json', text.replace('"batch_size_per_worker": 16', '"batch_size_per_worker": 2.5'))
    out('job_config', 'batch-neg.json', text.replace('"batch_size_per_worker": 16', '"batch_size_per_worker": -5'))
    out('job_config', 'units-1e9.json', text.replace('"units": 16', '"units": 1000000000'))
    out('job_config', 'conv-huge.json', json.dumps(small_job(model={"input_shape": [1, 1, 1073741824], "layers": [
        {"type": "conv2d", "filters": 16777216, "kernel_size": 65536, "padding": "same"}, {"type": "flatten"},
        {"type": "dense", "units": 2}]})))
    out('job_config', 'timeout-1e300.json', json.dumps(small_job(communication={"timeout_seconds": 1e300})))
    out('job_config', 'deep.json', '{"model": ' + '[' * 200 + ']' * 200 + '}')
    out('job_config', 'not-json.txt', 'model: {layers: []}')


def tf_configs():
    clear('tf_config')
    out('tf_config', 'two.json', '{"cluster": {"worker": ["localhost:12345", "localhost:23456"]}, "task": {"type": "worker", "index": 1}}')
    out('tf_config', 'chief.json', json.dumps({"cluster": {"chief": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222", "[::1]:2223"],
                                                           "evaluator": ["e:1"]}, "task": {"type": "chief", "index": 0},
                                               "environment": "cloud", "rpc_layer": "grpc"}))
    out('tf_config', 'ps.json', '{"cluster": {"worker": ["a:1"], "ps": ["b:2"]}, "task": {"type": "worker"}}')
    out('tf_config', 'index-huge.json', '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1e400}}')
    out('tf_config', 'index-big.json', '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 18446744073709551615}}')
    out('tf_config', 'bad-port.json', '{"cluster": {"worker": ["a:99999", "[fe80::1%eth0]:1"]}, "task": {"type": "worker", "index": 0}}')
    out('tf_config', 'host-port.txt', '[::1]:8080')


def idx_file(count, rows, cols, first=0):
    b = struct.pack('>IIII', 2051, count, rows, cols)
    for k in range(count):
        b += bytes(((p * 37 + (first + k) * 11) % 256) for p in range(rows * cols))
    return b


def labels(count):
    return struct.pack('>II', 2049, count) + bytes(k % 10 for k in range(count))


def idx():
    clear('idx')
    img, lab = idx_file(3, 4, 4), labels(3)
    for mode, name in ((0, 'parse'), (2, 'file')):
        out('idx', f'{name}-images', bytes([mode]) + img)
        out('idx', f'{name}-labels', bytes([mode]) + lab)
        out('idx', f'{name}-truncated', bytes([mode]) + img[:-5])
        out('idx', f'{name}-trailing', bytes([mode]) + img + b'xx')
        out('idx', f'{name}-huge-header', bytes([mode]) + struct.pack('>IIII', 2051, 0xffffffff, 0xffffff, 0xffff))
    gz = gzip.compress(img, mtime=0)
    out('idx', 'gunzip-images', bytes([1]) + gz)
    out('idx', 'gunzip-multi', bytes([1]) + gzip.compress(img[:10], mtime=0) + gzip.compress(img[10:], mtime=0))
    out('idx', 'gunzip-truncated', bytes([1]) + gz[:len(gz) // 2])
    out('idx', 'file-gz-images', bytes([3]) + gz)
    out('idx', 'file-gz-labels', bytes([3]) + gzip.compress(lab, mtime=0))
    # A bomb: a header declaring 3 small images, then a megabyte of zeros.
    out('idx', 'file-gz-bomb', bytes([3]) + gzip.compress(img + bytes(1 << 20), mtime=0, compresslevel=9))
    out('idx', 'file-gz-not-idx', bytes([3]) + gzip.compress(b'hello world' * 100, mtime=0))


def safetensors_bytes(tensors, metadata=None):
    header, data, off = {}, b'', 0
    if metadata:
        header['__metadata__'] = metadata
    for name in sorted(tensors):
        shape, values = tensors[name]
        raw = struct.pack('<%df' % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    text = json.dumps(header, sort_keys=True, separators=(',', ':'))
    text += ' ' * ((8 - len(text) % 8) % 8)
    return struct.pack('<Q', len(text)) + text.encode() + data


def safetensors():
    clear('safetensors')
    t = {"dense/kernel": ([3, 2], [0.5, -1, 2, 0, 1e-3, 7]), "dense/bias": ([2], [0, 1])}
    good = safetensors_bytes(t, {"step": "100"})
    out('safetensors', 'model', good)
    out('safetensors', 'empty-tensor', safetensors_bytes({"z": ([0, 3], [])}))
    out('safetensors', 'scalar', safetensors_bytes({"s": ([], [3.5])}))
    out('safetensors', 'truncated', good[:-3])
    out('safetensors', 'f16', good.replace(b'"F32"', b'"F16"', 1))
    out('safetensors', 'long-header-length', struct.pack('<Q', 1 << 40) + good[8:])
    out('safetensors', 'nan', safetensors_bytes({"w": ([2], [float('nan'), float('inf')])}))


def backup():
    clear('backup')
    params = {"dense/kernel": ([3, 2], [0.5, -1, 2, 0, 1e-3, 7]), "dense/bias": ([2], [0.25, 1])}
    flat = params["dense/kernel"][1] + params["dense/bias"][1]
    tensors = {"params/" + k: v for k, v in params.items()}
    tensors["optimizer/m"] = ([8], [0.1 * i for i in range(8)])
    tensors["optimizer/v"] = ([8], [0.01 * i for i in range(8)])
    step = 7
    weights = safetensors_bytes(tensors, {"format": "ringtrain-backup", "global_step": str(step)})
    def crc(values):
        return '%08x' % (zlib.crc32(struct.pack('<%df' % len(values), *values)) & 0xffffffff)
    meta = {"format": "ringtrain-backup", "version": 1, "job_fingerprint": "0123456789abcdef", "num_workers": 2,
            "steps_per_epoch": 5, "global_step": step, "epoch": 1, "step_in_epoch": 2,
            "optimizer": {"name": "adam", "iterations": 7, "slots": ["m", "v"]},
            "metrics": {"loss_sum": 1.5, "correct": "nan", "examples": 32},
            "history": [{"epoch": 1, "loss": 0.5, "accuracy": 0.75}],
            "params": [{"name": "dense/kernel", "shape": [3, 2]}, {"name": "dense/bias", "shape": [2]}],
            "weights_file": "ckpt-%012d.safetensors" % step, "weights_bytes": len(weights),
            "checksums": {k: crc(v[1]) for k, v in tensors.items()}}
    def pack(m, w):
        m = json.dumps(m, sort_keys=True, indent=2).encode()
        return struct.pack('<H', len(m)) + m + w
    out('backup', 'valid', pack(meta, weights))
    other = dict(meta, job_fingerprint="ffffffffffffffff")
    out('backup', 'other-job', pack(other, weights))
    out('backup', 'truncated-weights', pack(meta, weights[:-4]))
    bad = dict(meta, epoch=4611686018427387904, step_in_epoch=2)
    out('backup', 'overflowing-epoch', pack(bad, weights))
    nan_tensors = dict(tensors)
    nan_tensors["optimizer/v"] = ([8], [float('nan')] * 8)
    nan_weights = safetensors_bytes(nan_tensors, {"format": "ringtrain-backup", "global_step": str(step)})
    nan_meta = dict(meta, weights_bytes=len(nan_weights), checksums={k: crc(v[1]) for k, v in nan_tensors.items()})
    out('backup', 'nan-state', pack(nan_meta, nan_weights))


def tfrecord():
    """Route byte: 0 Example bytes; 1 + 3*c a record file (c: "", GZIP, ZLIB); 2 + 3*m the
    whole source (m % 3: compression, m & 4: float features, m & 8: num_classes 3)."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, 'deploy'))
    import mnist_to_tfrecord as t
    clear('tfrecord')
    raw = t.example({'image/raw': t.feature_bytes(bytes([0, 64, 128, 255])), 'label': t.feature_int64([2])})
    floats = t.example({'image/raw': t.field(2, 2, t.field(1, 2, struct.pack('<4f', 0, 0.5, 1, -1))),
                        'label': t.feature_int64([1])})
    out('tfrecord', 'example', bytes([0]) + raw)
    out('tfrecord', 'example-floats', bytes([0]) + floats)
    out('tfrecord', 'example-unpacked', bytes([0]) + t.example({'k': t.field(3, 2, b'\x08\x07\x08\x09')}))
    stream = t.frame(raw) + t.frame(b'') + t.frame(raw)
    out('tfrecord', 'records', bytes([1]) + stream)
    out('tfrecord', 'records-gzip', bytes([4]) + gzip.compress(stream, mtime=0))
    out('tfrecord', 'records-zlib', bytes([7]) + zlib.compress(stream))
    out('tfrecord', 'records-truncated', bytes([1]) + stream[:-3])
    out('tfrecord', 'records-huge-length', bytes([1]) + struct.pack('<Q', 1 << 60) +
        struct.pack('<I', t.masked_crc(struct.pack('<Q', 1 << 60))) + b'tiny')
    out('tfrecord', 'source', bytes([2]) + stream)
    out('tfrecord', 'source-classes', bytes([2 + 3 * 8]) + stream)
    out('tfrecord', 'source-floats', bytes([2 + 3 * 4]) + t.frame(floats))
    out('tfrecord', 'source-gzip', bytes([2 + 3 * 1]) + gzip.compress(stream, mtime=0))


if __name__ == '__main__':
    jobs()
    tf_configs()
    idx()
    safetensors()
    backup()
    tfrecord()
