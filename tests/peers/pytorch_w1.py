#!/usr/bin/env python3
# Usage: python3 tests/peers/pytorch_w1.py glorot|torch 1,2,3 [threads]   (Debian: apt-get install python3-torch)
# Not part of the test suite: a peer run behind the fidelity figures.
# PyTorch peer for the seed tutorial's W1 job: same data split, model, SGD(0.001),
# global batch 128 (= 2 workers x 64, gradients of the mean loss), 3 epochs x 70 steps.
# init=glorot uses Keras' Glorot-uniform kernels and zero biases; init=torch, PyTorch's defaults.
import gzip, sys, numpy as np, torch, torch.nn as nn
torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
import os
r = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../")  # data/mnist: deploy/get_mnist.sh
d = next((p for p in (r + "data/mnist/", r + "../shared/data/mnist/") if os.path.exists(p)), r + "data/mnist/")
x = np.frombuffer(gzip.open(d + "t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
y = np.frombuffer(gzip.open(d + "t10k-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
x = torch.tensor(x[:8000] / np.float32(255)); y = torch.tensor(y[:8000].astype(np.int64))
init, seeds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
for seed in seeds:
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(), nn.Linear(21632, 128), nn.ReLU(), nn.Linear(128, 10))
    if init == "glorot":
        for mod in m:
            if isinstance(mod, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(mod.weight); nn.init.zeros_(mod.bias)
    opt = torch.optim.SGD(m.parameters(), lr=0.001)
    g = torch.Generator().manual_seed(seed)
    order, pos, out = torch.randperm(8000, generator=g), 0, []
    for epoch in range(3):
        ls, cs, n = 0.0, 0, 0
        for step in range(70):
            idx = []
            while len(idx) < 128:
                take = min(128 - len(idx), 8000 - pos); idx += order[pos:pos + take].tolist(); pos += take
                if pos == 8000: order, pos = torch.randperm(8000, generator=g), 0
            xb, yb = x[idx], y[idx]
            logits = m(xb); loss = nn.functional.cross_entropy(logits, yb)
            opt.zero_grad(); loss.backward(); opt.step()
            ls += loss.item() * 128; cs += (logits.argmax(1) == yb).sum().item(); n += 128
        out.append((ls / n, cs / n))
    print(init, seed, " ".join("%.4f/%.4f" % e for e in out), flush=True)
