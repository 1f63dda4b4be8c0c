#!/usr/bin/env node
// Saves a small tf.LayersModel the way TensorFlow.js does (model.save with a save handler:
// the model JSON and the weights' manifest and bytes), as files on disk for
// tests/modelfiles/tfjs_weights_test.cc:
//
//   node tfjs_save.js ORACLE_DIR OUT_DIR
//   node tfjs_save.js ORACLE_DIR DIR decode
//
// OUT_DIR/model.json with its weights split over two shards (as tfjs' own file writers split
// at 4 MB), and OUT_DIR/expected.json: {"<manifest name>": {"shape", "values"}} from
// model.getWeights(). The weights are set to known values first (sin of their position).
// With "decode": DIR/model.json's manifest and shards (written by the test) decoded by tfjs'
// own tf.io.decodeWeights, group by group, into DIR/expected.json the same way.
const fs = require('fs');
const path = require('path');

const [oracleDir, outDir, mode] = process.argv.slice(2);
const consoleWarn = console.warn;
console.warn = (...args) => {
  if (args.length === 1 && typeof args[0] === 'string' && args[0].includes('tfjs-node')) return;
  consoleWarn(...args);
};
const tf = require(path.join(path.resolve(oracleDir), 'node_modules', '@tensorflow', 'tfjs'));

function decode() {
  const modelJson = JSON.parse(fs.readFileSync(path.join(outDir, 'model.json'), 'utf8'));
  const expected = {};
  for (const group of modelJson.weightsManifest) {
    const bytes = Buffer.concat(group.paths.map((p) => fs.readFileSync(path.join(outDir, p))));
    const data = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    const decoded = tf.io.decodeWeights(data, group.weights);
    for (const spec of group.weights) {
      const t = decoded[spec.name];
      expected[spec.name] = {shape: t.shape, values: Array.from(t.dataSync())};
    }
  }
  fs.writeFileSync(path.join(outDir, 'expected.json'), JSON.stringify(expected));
}

async function main() {
  if (mode === 'decode') return decode();
  const model = tf.sequential({name: 'seq'});
  model.add(tf.layers.conv2d({name: 'c1', inputShape: [5, 5, 2], filters: 3, kernelSize: 3, padding: 'same'}));
  model.add(tf.layers.batchNormalization({name: 'bn'}));
  model.add(tf.layers.depthwiseConv2d({name: 'dw', kernelSize: 3, padding: 'same'}));
  model.add(tf.layers.flatten({name: 'flat'}));
  model.add(tf.layers.dense({name: 'head', units: 2}));
  let k = 0;
  model.setWeights(model.getWeights().map((w) => {
    const n = w.size;
    const v = new Float32Array(n);
    for (let i = 0; i < n; ++i) v[i] = Math.sin(k * 7 + i) * (k % 3 === 2 ? 1 : 0.5) + (k % 4 === 3 ? 1.5 : 0);
    ++k;
    return tf.tensor(v, w.shape);
  }));
  await model.save(tf.io.withSaveHandler(async (artifacts) => {
    let data = artifacts.weightData;
    if (Array.isArray(data)) data = tf.io.concatenateArrayBuffers(data);
    const bytes = Buffer.from(data);
    const cut = 100;  // split in the middle of a weight, as tfjs' 4 MB shards may
    fs.writeFileSync(path.join(outDir, 'group1-shard1of2.bin'), bytes.subarray(0, cut));
    fs.writeFileSync(path.join(outDir, 'group1-shard2of2.bin'), bytes.subarray(cut));
    const modelJson = {
      modelTopology: artifacts.modelTopology,
      format: artifacts.format,
      generatedBy: artifacts.generatedBy,
      convertedBy: artifacts.convertedBy,
      weightsManifest: [{paths: ['group1-shard1of2.bin', 'group1-shard2of2.bin'], weights: artifacts.weightSpecs}],
    };
    fs.writeFileSync(path.join(outDir, 'model.json'), JSON.stringify(modelJson));
    const expected = {};
    const decoded = tf.io.decodeWeights(data, artifacts.weightSpecs);
    for (const spec of artifacts.weightSpecs) {
      const t = decoded[spec.name];
      expected[spec.name] = {shape: t.shape, values: Array.from(t.dataSync())};
    }
    fs.writeFileSync(path.join(outDir, 'expected.json'), JSON.stringify(expected));
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'JSON'}};
  }));
}

main().then(() => process.exit(0), (e) => { console.error(e.stack || String(e)); process.exit(1); });
