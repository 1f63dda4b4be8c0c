#!/usr/bin/env node
// TensorFlow.js (@tensorflow/tfjs 4.22.0, pure JavaScript CPU backend) as the Keras
// reference for ringtrain's fidelity tests.
//
//   node tests/oracle/tfjs_oracle.js REQUEST.json RESPONSE.json
//
// Reads one request, writes one response, exits 0. On any error it writes
// {"ok": false, "error": "..."} and exits 1 with the message on stderr.
// tests/testing/tfjs_oracle.{h,cc} run it from C++ (RunTfjs).
//
// ---- Tensors ---------------------------------------------------------------------
// A tensor is {"shape": [d0, d1, ...], "values": [v, ...]}: float32 values, row-major,
// channels-last (NHWC), the batch dimension included where there is one. Values are
// written with JSON.stringify of the float32 value (exact round trip through a double).
// Non-finite values are written as null.
//
// ---- Layer configs ---------------------------------------------------------------
// Keras' serialized form, tf.keras 2 style (what tfjs' model.toJSON() writes):
//   {"class_name": "Conv2D", "config": {"filters": 4, "kernel_size": [3, 3], "padding": "same", ...}}
// snake_case argument names as in Keras; tfjs converts them. The Keras 3 format
// (module, registered_name, build_config, inbound_nodes as "args") is NOT understood
// by tfjs: convert it first.
//
// ---- Requests ("kind") -----------------------------------------------------------
// "version": {} -> {"tfjs": "4.22.0", "backend": "cpu", "check": [4]}  (a smoke run: 1+3)
//
// "layer": one layer, applied to one or several inputs.
//   {"kind": "layer", "layer": {"class_name", "config"},
//    "inputs": [tensor, ...],            // one per layer input (Add/Concatenate/Multiply take several)
//    "weights": {"kernel": tensor, ...}, // optional, by Keras weight name; weights not given keep
//                                        // tfjs' initial values (seeded only if the config seeds them)
//    "training": false,                  // the `training` argument of the call
//    "dy": tensor}                       // optional upstream gradient, the output's shape
//   -> {"output": tensor,
//       "input_grads": [tensor, ...],     // d sum(output * dy) / d input_i      (only with dy)
//       "weight_grads": {"kernel": tensor, ...},  // the same per TRAINABLE weight  (only with dy)
//       "weights_before": {...}, "weights_after": {"kernel": ..., "moving_mean": ...}}
//   The forward pass runs exactly once (output and gradients come from the same call),
//   so a training-mode BatchNormalization updates its moving statistics once.
//
// "model": a whole model.
//   {"kind": "model", "model": <model JSON: {"class_name": "Sequential"|"Functional"|"Model",
//                               "config": ...}, as model.toJSON() / tf.keras 2 model.to_json()>,
//    "weights": {"dense/kernel": tensor, ...},  // optional, by full name "<layer>/<weight>"
//    "inputs": [tensor, ...], "training": false,
//    "dy": tensor | [tensor, ...]}               // optional, one per model output
//   -> {"outputs": [tensor, ...], "input_grads": [...], "weight_grads": {"dense/kernel": ...},
//       "weights_after": {...}}
//
// "build": layer configs -> real Keras model JSON and its initial weights.
//   {"kind": "build", "name": "model",
//    "inputs": [{"name": "input", "shape": [28, 28, 1]}],  // per-example shapes
//    "layers": [{"class_name", "config", "inputs": ["names"]}, ...],
//    "sequential": true}  // true: a Sequential (one input, "inputs" ignored); false: a Functional
//                         // model whose layers name their inputs ("inputs" absent: the previous
//                         // layer, or the model input for the first); its output is the last layer
//   -> {"model_json": <model.toJSON(), parsed>, "weights": {"dense/kernel": tensor, ...}}
//   The initial weights come from tfjs' initializers: random unless the configs give seeds.
//
// "train": training steps through model.compile + model.trainOnBatch (tfjs' fit step).
//   {"kind": "train", "model": <model JSON>, "weights": {...},
//    "inputs": [tensor, ...],            // N examples
//    "labels": tensor,                   // sparse losses: [N] integer class ids; otherwise the
//                                        // targets, shaped as the model output
//    "loss": {"name": "sparse_categorical_crossentropy" | "categorical_crossentropy" |
//                     "binary_crossentropy" | "mean_squared_error" | "mean_absolute_error",
//             "from_logits": false, "label_smoothing": 0},
//    "optimizer": {"name": "sgd", "learning_rate": 0.01, "momentum": 0, "nesterov": false},
//    "steps": 5, "batch": 4}
//   Step s trains on examples [s*batch, (s+1)*batch) modulo N (N must be a multiple of
//   batch), in order, no shuffling, no randomness.
//   -> {"losses": [loss of each step: the batch's mean loss plus regularization, computed
//       before that step's update, as Keras reports it], "weights": {final weights by full name}}
//   Several outputs: "loss" and "labels" are lists (one per model output, in its order) and
//   "loss_weights" an optional list; the response adds "output_losses": per step, each
//   output's loss times its weight (Keras 3's "<output>_loss"; tf.keras 2 logged it unweighted).
//
// ---- Where tfjs differs from Keras, and what this harness does about it ----------------
// * BatchNormalization in training mode: tfjs updates moving_mean/moving_variance inside
//   the call itself (imperatively, on every apply(..., {training: true}), not only in fit),
//   as moving = moving*momentum + batch*(1-momentum) with the BIASED batch variance (tf.moments),
//   which is what Keras 2 and 3 do (tf.keras 2's fused kernel removes Bessel's correction
//   again). So a single training call gives Keras' new moving statistics.
// * BatchNormalization with trainable=false: Keras 2+ runs it in inference mode even when
//   training=True; tfjs ignores `trainable` there. The harness forces training=false into
//   such layers' calls.
// * BatchNormalization with scale=false or center=false crashes in tfjs' training path
//   (it reads the missing gamma/beta). The harness substitutes constant ones/zeros for the
//   call, which is Keras' semantics.
// * SGD with momentum: tfjs' MomentumOptimizer (accum = m*accum + g; p -= lr*accum, and
//   p -= lr*(g + m*accum) with nesterov) equals Keras' (v = m*v - lr*g; p += v) for a
//   constant learning rate, which is all this harness accepts.
// * Losses with from_logits / label_smoothing: tfjs-layers' string losses take neither, so
//   the harness uses tfjs-core's tf.losses.softmaxCrossEntropy / sigmoidCrossEntropy
//   (label smoothing as Keras: y*(1-ls) + ls/classes, binary y*(1-ls) + ls/2) for
//   logits and tfjs-layers' probability losses (clip to [1e-7, 1-1e-7], as Keras) otherwise.
'use strict';

const fs = require('fs');
const path = require('path');

// The CPU backend prints a banner suggesting tfjs-node on its first tensor; drop just that,
// so stderr (which RunTfjs reports on failure) holds real warnings and errors only.
const consoleWarn = console.warn;
console.warn = (...args) => {
  if (args.length === 1 && typeof args[0] === 'string' && args[0].includes('tfjs-node')) return;
  consoleWarn(...args);
};
const tf = require('@tensorflow/tfjs');

// ---- tensors in and out ------------------------------------------------------------
function fail(msg) { throw new Error(msg); }

function toTensor(t, what) {
  if (t == null || !Array.isArray(t.shape) || !Array.isArray(t.values)) {
    fail(`${what}: must be {"shape": [...], "values": [...]}`);
  }
  const n = t.shape.reduce((a, b) => a * b, 1);
  if (n !== t.values.length) fail(`${what}: shape ${JSON.stringify(t.shape)} holds ${n} values, got ${t.values.length}`);
  return tf.tensor(Float32Array.from(t.values), t.shape, 'float32');
}

function fromTensor(t) {
  const values = Array.from(t.dataSync(), v => (Number.isFinite(v) ? v : null));
  return {shape: t.shape.slice(), values};
}

function inputList(req) {
  if (!Array.isArray(req.inputs) || req.inputs.length === 0) fail('"inputs": must be a non-empty array of tensors');
  return req.inputs.map((t, i) => toTensor(t, `inputs[${i}]`));
}

// ---- Keras semantics tfjs lacks (see the header) ---------------------------------------
function patchBatchNorm(model) {
  for (const layer of model.layers) {
    if (layer.getClassName() !== 'BatchNormalization') continue;
    const call = layer.call.bind(layer);
    layer.call = (inputs, kwargs) => {
      kwargs = Object.assign({}, kwargs);
      if (!layer.trainable) kwargs.training = false;
      if (!kwargs.training || (layer.gamma != null && layer.beta != null)) return call(inputs, kwargs);
      const dim = layer.movingMean.shape[0];
      const fakeGamma = layer.gamma == null, fakeBeta = layer.beta == null;
      if (fakeGamma) layer.gamma = {read: () => tf.ones([dim])};
      if (fakeBeta) layer.beta = {read: () => tf.zeros([dim])};
      try {
        return call(inputs, kwargs);
      } finally {
        if (fakeGamma) layer.gamma = null;
        if (fakeBeta) layer.beta = null;
      }
    };
  }
}

async function loadModel(json, what) {
  if (json == null || typeof json !== 'object' || typeof json.class_name !== 'string') {
    fail(`${what}: must be a Keras model JSON object with "class_name" and "config"`);
  }
  const model = await tf.models.modelFromJSON(json);
  patchBatchNorm(model);
  return model;
}

// Weights by full name ("dense/kernel"); `prefix` maps short names for the layer request.
function allWeights(model) {
  const out = {};
  for (const w of model.weights) out[w.originalName] = fromTensor(w.read());
  return out;
}

function setWeights(model, weights, prefix) {
  if (weights == null) return;
  const byName = new Map(model.weights.map(w => [w.originalName, w]));
  for (const [name, t] of Object.entries(weights)) {
    const full = prefix + name;
    const w = byName.get(full);
    if (w == null) fail(`weights: "${name}" is not a weight of the model (it has: ${[...byName.keys()].join(', ')})`);
    const value = toTensor(t, `weights["${name}"]`);
    if (!tf.util.arraysEqual(value.shape, w.shape)) {
      fail(`weights["${name}"]: shape ${JSON.stringify(value.shape)}, the model's is ${JSON.stringify(w.shape)}`);
    }
    w.write(value);
  }
}

// ---- model JSON from layer configs --------------------------------------------------
function inputLayerJson(name, shape) {
  return {class_name: 'InputLayer', name, inbound_nodes: [],
          config: {batch_input_shape: [null, ...shape], dtype: 'float32', sparse: false, name}};
}

// tfjs' Dense and Conv layers default to glorotNormal kernels; Keras' to glorot_uniform.
// Configs without one get Keras' default, so built model JSON and initial weights are Keras'.
const GLOROT_UNIFORM_KERNEL = new Set(['Dense', 'Conv1D', 'Conv2D', 'Conv3D', 'Conv2DTranspose', 'Conv3DTranspose']);
function kerasConfig(l, name) {
  const config = Object.assign({}, l.config || {}, {name});
  if (GLOROT_UNIFORM_KERNEL.has(l.class_name) && config.kernel_initializer == null) {
    config.kernel_initializer = {class_name: 'GlorotUniform', config: {seed: null}};
  }
  return config;
}

function layerName(l, i) {
  return (l.config && l.config.name) || `${l.class_name.toLowerCase()}_oracle_${i}`;
}

function functionalJson(name, inputs, layers, outputs) {
  const json = [];
  for (const inp of inputs) json.push(inputLayerJson(inp.name, inp.shape));
  let previous = [inputs[0].name];
  layers.forEach((l, i) => {
    if (l == null || typeof l.class_name !== 'string') fail(`layers[${i}]: needs "class_name" and "config"`);
    const lname = layerName(l, i);
    const from = l.inputs != null ? l.inputs : previous;
    json.push({class_name: l.class_name, name: lname,
               config: kerasConfig(l, lname),
               inbound_nodes: [from.map(n => [n, 0, 0, {}])]});
    previous = [lname];
  });
  return {class_name: 'Functional', config: {
    name, layers: json,
    input_layers: inputs.map(inp => [inp.name, 0, 0]),
    output_layers: (outputs || [previous[0]]).map(o => [o, 0, 0])}};
}

function sequentialJson(name, input, layers) {
  return {class_name: 'Sequential', config: {name, layers: layers.map((l, i) => {
    if (l == null || typeof l.class_name !== 'string') fail(`layers[${i}]: needs "class_name" and "config"`);
    const config = kerasConfig(l, layerName(l, i));
    if (i === 0) config.batch_input_shape = [null, ...input.shape];
    return {class_name: l.class_name, config};
  })}};
}

// ---- forward + gradients in one pass ----------------------------------------------------
// Runs the model once on `inputs`; with dy, also d sum(out_k * dy_k) / d (inputs, trainable weights).
function forwardAndGrads(model, inputs, training, dys) {
  const feed = inputs.length === 1 ? inputs[0] : inputs;
  if (dys == null) {
    const out = tf.tidy(() => {
      const y = model.apply(feed, {training});
      return Array.isArray(y) ? y : [y];
    });
    return {outputs: out.map(fromTensor)};
  }
  const inputVars = inputs.map((x, i) => tf.variable(x, true, `oracle_input_${i}`));
  const weightVars = model.trainableWeights.map(w => w.read());
  let outputs = null;
  const {grads} = tf.variableGrads(() => {
    let y = model.apply(inputVars.length === 1 ? inputVars[0] : inputVars, {training});
    y = Array.isArray(y) ? y : [y];
    if (y.length !== dys.length) fail(`dy: the model has ${y.length} outputs, got ${dys.length} upstream gradients`);
    outputs = y.map(t => tf.keep(t.clone()));
    let total = tf.scalar(0);
    y.forEach((t, k) => {
      if (!tf.util.arraysEqual(t.shape, dys[k].shape)) {
        fail(`dy[${k}]: shape ${JSON.stringify(dys[k].shape)}, the output's is ${JSON.stringify(t.shape)}`);
      }
      total = tf.add(total, tf.sum(tf.mul(t, dys[k])));
    });
    return total;
  }, [...inputVars, ...weightVars]);
  const weightGrads = {};
  model.trainableWeights.forEach(w => {
    const g = grads[w.read().name];
    weightGrads[w.originalName] = fromTensor(g != null ? g : tf.zerosLike(w.read()));
  });
  const inputGrads = inputVars.map(v => fromTensor(grads[v.name] != null ? grads[v.name] : tf.zerosLike(v)));
  return {outputs: outputs.map(fromTensor), input_grads: inputGrads, weight_grads: weightGrads};
}

function dyList(dy) {
  if (dy == null) return null;
  const list = Array.isArray(dy) ? dy : [dy];
  return list.map((t, k) => toTensor(t, `dy[${k}]`));
}

function stripPrefix(obj, prefix) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) out[k.startsWith(prefix) ? k.slice(prefix.length) : k] = v;
  return out;
}

// ---- the requests -------------------------------------------------------------------------
async function runLayer(req) {
  const inputs = inputList(req);
  const l = req.layer;
  if (l == null || typeof l.class_name !== 'string') fail('"layer": must be {"class_name": ..., "config": {...}}');
  const lname = layerName(l, 0);
  const inNames = inputs.map((_, i) => `oracle_input_${i}`);
  const json = functionalJson('oracle', inputs.map((x, i) => ({name: inNames[i], shape: x.shape.slice(1)})),
                              [{class_name: l.class_name, config: l.config, inputs: inNames}]);
  const model = await loadModel(json, '"layer"');
  const prefix = lname + '/';
  setWeights(model, req.weights, prefix);
  const before = stripPrefix(allWeights(model), prefix);
  const r = forwardAndGrads(model, inputs, !!req.training, dyList(req.dy));
  const res = {output: r.outputs[0], weights_before: before, weights_after: stripPrefix(allWeights(model), prefix)};
  if (r.weight_grads) {
    res.input_grads = r.input_grads;
    res.weight_grads = stripPrefix(r.weight_grads, prefix);
  }
  return res;
}

async function runModel(req) {
  const model = await loadModel(req.model, '"model"');
  setWeights(model, req.weights, '');
  const inputs = inputList(req);
  const r = forwardAndGrads(model, inputs, !!req.training, dyList(req.dy));
  const res = {outputs: r.outputs, weights_after: allWeights(model)};
  if (r.weight_grads) {
    res.input_grads = r.input_grads;
    res.weight_grads = r.weight_grads;
  }
  return res;
}

async function runBuild(req) {
  if (!Array.isArray(req.inputs) || req.inputs.length === 0) fail('"inputs": must list the model inputs, [{"name", "shape"}]');
  if (!Array.isArray(req.layers) || req.layers.length === 0) fail('"layers": must be a non-empty array');
  const name = req.name || 'model';
  const json = req.sequential === false ? functionalJson(name, req.inputs, req.layers, req.outputs)
                                        : sequentialJson(name, req.inputs[0], req.layers);
  const model = await loadModel(json, '"build"');
  return {model_json: JSON.parse(model.toJSON(null, true)), weights: allWeights(model)};
}

function makeLoss(spec) {
  if (spec == null || typeof spec.name !== 'string') fail('"loss": must be {"name": ..., "from_logits": ...}');
  const logits = !!spec.from_logits, ls = spec.label_smoothing || 0;
  const none = tf.Reduction.NONE;
  switch (spec.name) {
    case 'sparse_categorical_crossentropy':  // labels arrive one-hot (see runTrain)
    case 'categorical_crossentropy':
      if (logits) return (y, p) => tf.losses.softmaxCrossEntropy(y, p, undefined, ls, none);
      return (y, p) => tf.metrics.categoricalCrossentropy(
          ls ? tf.add(tf.mul(y, 1 - ls), ls / y.shape[y.rank - 1]) : y, p);
    case 'binary_crossentropy':
      if (logits) return (y, p) => tf.mean(tf.losses.sigmoidCrossEntropy(y, p, undefined, ls, none), -1);
      return (y, p) => tf.metrics.binaryCrossentropy(ls ? tf.add(tf.mul(y, 1 - ls), 0.5 * ls) : y, p);
    case 'mean_squared_error': return (y, p) => tf.metrics.meanSquaredError(y, p);
    case 'mean_absolute_error': return (y, p) => tf.metrics.meanAbsoluteError(y, p);
    default: fail(`"loss": unknown name "${spec.name}"`);
  }
}

function makeOptimizer(spec) {
  if (spec == null || spec.name !== 'sgd') fail('"optimizer": only {"name": "sgd", "learning_rate", "momentum", "nesterov"}');
  const lr = spec.learning_rate != null ? spec.learning_rate : 0.01;
  const m = spec.momentum || 0;
  return m ? tf.train.momentum(lr, m, !!spec.nesterov) : tf.train.sgd(lr);
}

async function runTrain(req) {
  const model = await loadModel(req.model, '"model"');
  setWeights(model, req.weights, '');
  const inputs = inputList(req);
  const n = inputs[0].shape[0];
  const steps = req.steps, batch = req.batch;
  if (!Number.isInteger(steps) || steps < 1) fail('"steps": must be a positive integer');
  if (!Number.isInteger(batch) || batch < 1 || n % batch !== 0) fail(`"batch": must divide the ${n} examples`);
  // Several outputs: "loss" and "labels" are lists, one per output, and "loss_weights" a list.
  const several = Array.isArray(req.loss);
  const lossSpecs = several ? req.loss : [req.loss];
  const labelList = several ? req.labels : [req.labels];
  if (!Array.isArray(labelList) || labelList.length !== lossSpecs.length) fail('"labels": one tensor per loss');
  const labels = labelList.map((l, k) => {
    let t = toTensor(l, `"labels"[${k}]`);
    if (lossSpecs[k] && lossSpecs[k].name === 'sparse_categorical_crossentropy') {
      const classes = model.outputs[k].shape[model.outputs[k].shape.length - 1];
      const ids = Array.from(t.dataSync());
      ids.forEach((v, i) => {
        if (!Number.isInteger(v) || v < 0 || v >= classes) fail(`labels[${i}]: ${v} is not a class id in [0, ${classes})`);
      });
      t = tf.oneHot(tf.tensor1d(ids, 'int32'), classes).toFloat();
    }
    if (t.shape[0] !== n) fail(`"labels": ${t.shape[0]} examples, the inputs have ${n}`);
    return t;
  });
  // tfjs 4.22 ignores compile's lossWeights (a TODO in its training.js): each output's loss is
  // scaled here instead, as Keras 3's CompileLoss does before it records the output's loss.
  const weights = req.loss_weights || lossSpecs.map(() => 1);
  const lossFns = lossSpecs.map((spec, k) => {
    const f = makeLoss(spec);
    return weights[k] === 1 ? f : (y, p) => tf.mul(f(y, p), weights[k]);
  });
  model.compile({optimizer: makeOptimizer(req.optimizer), loss: several ? lossFns : lossFns[0]});
  const losses = [], outputLosses = [];
  for (let s = 0; s < steps; ++s) {
    const start = (s * batch) % n;
    const xs = inputs.map(x => x.slice(start, batch));
    const ys = labels.map(l => l.slice(start, batch));
    const loss = await model.trainOnBatch(xs.length === 1 ? xs[0] : xs, several ? ys : ys[0]);
    losses.push(Array.isArray(loss) ? loss[0] : loss);
    if (several) outputLosses.push(loss.slice(1));
  }
  const res = {losses, weights: allWeights(model)};
  if (several) res.output_losses = outputLosses;
  return res;
}

// "reduce": tf.sum / tf.mean over axes (the batch being axis 0), what tf.math.reduce_sum and
// reduce_mean compute in a model.
//   {"kind": "reduce", "op": "sum" | "mean", "axis": [1, 2], "keepdims": false, "input": tensor, "dy": tensor}
//   -> {"output": tensor, "input_grad": tensor}  (d sum(output * dy) / d input)
async function runReduce(req) {
  const x = toTensor(req.input, '"input"');
  const f = req.op === 'mean' ? tf.mean : req.op === 'sum' ? tf.sum : fail('"op": must be "sum" or "mean"');
  const keep = !!req.keepdims;
  const y = f(x, req.axis, keep);
  const res = {output: fromTensor(y)};
  if (req.dy != null) {
    const dy = toTensor(req.dy, '"dy"');
    const g = tf.grad(v => tf.sum(tf.mul(f(v, req.axis, keep), dy)))(x);
    res.input_grad = fromTensor(g);
  }
  return res;
}

async function runVersion() {
  const check = Array.from(tf.add(tf.tensor1d([1]), tf.tensor1d([3])).dataSync());
  return {tfjs: tf.version.tfjs, backend: tf.getBackend(), check};
}

async function main() {
  const [reqPath, resPath] = process.argv.slice(2);
  if (!reqPath || !resPath) {
    process.stderr.write(`usage: node ${path.basename(process.argv[1])} REQUEST.json RESPONSE.json\n`);
    process.exit(2);
  }
  let res;
  try {
    await tf.setBackend('cpu');
    await tf.ready();
    const req = JSON.parse(fs.readFileSync(reqPath, 'utf8'));
    const kinds = {version: runVersion, layer: runLayer, model: runModel, build: runBuild, train: runTrain,
                   reduce: runReduce};
    const run = kinds[req.kind];
    if (run == null) fail(`"kind": must be one of ${Object.keys(kinds).join(', ')}, got ${JSON.stringify(req.kind)}`);
    res = Object.assign({ok: true}, await run(req));
  } catch (e) {
    const msg = (e && e.message) ? e.message : String(e);
    try { fs.writeFileSync(resPath, JSON.stringify({ok: false, error: msg})); } catch (_) {}
    process.stderr.write(`tfjs_oracle: ${msg}\n`);
    process.exit(1);
  }
  fs.writeFileSync(resPath, JSON.stringify(res));
}

main();
