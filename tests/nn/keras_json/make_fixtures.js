// Writes the tf.keras 2 format fixtures of keras_json_test (tfjs_*.json) with
// TensorFlow.js, whose model.toJSON() writes the JSON that tf.keras 2's
// model.to_json() writes. The Keras 3 fixtures (keras3_*.json) describe the same
// models and are written by hand, in the form Keras 3's model.to_json() writes.
//
// Regenerate (the outputs are committed; the test does not run node):
//   mkdir /tmp/tfjs && cd /tmp/tfjs && npm install @tensorflow/tfjs@4.22.0
//   NODE_PATH=/tmp/tfjs/node_modules node tests/nn/keras_json/make_fixtures.js tests/nn/keras_json
//
// Every layer is named explicitly, so that the Keras 3 fixtures can use the same
// names and both formats translate to the same compact model.
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');

const outDir = process.argv[2] || '.';

function write(name, model) {
  const text = JSON.stringify(JSON.parse(model.toJSON(null, true)), null, 1) + '\n';
  fs.writeFileSync(path.join(outDir, name), text);
  console.log('wrote', name);
}

// 1. A Sequential CNN; the input shape is given to the first layer (tf.keras 2 writes
//    it there as batch_input_shape), one kernel regularizer, one "same"-padded stride.
function sequentialCnn() {
  return tf.sequential({
    name: 'cnn',
    layers: [
      tf.layers.conv2d({inputShape: [28, 28, 1], filters: 8, kernelSize: 3, activation: 'relu', name: 'conv2d_1'}),
      tf.layers.maxPooling2d({poolSize: 2, name: 'max_pooling2d_1'}),
      tf.layers.conv2d({filters: 16, kernelSize: 3, strides: 2, padding: 'same', activation: 'relu',
                        kernelRegularizer: tf.regularizers.l2({l2: 0.01}), name: 'conv2d_2'}),
      tf.layers.flatten({name: 'flatten_1'}),
      tf.layers.dense({units: 64, activation: 'relu', kernelInitializer: 'heNormal', name: 'dense_1'}),
      tf.layers.dense({units: 10, name: 'dense_2'}),
    ],
  });
}

// 2. A Functional residual block: conv -> BN -> relu -> conv -> BN, added to a 1x1
//    projection of the input, then relu, global average pooling, dropout, dense.
function residualBlock() {
  const input = tf.input({shape: [32, 32, 3], name: 'input'});
  let y = tf.layers.conv2d({filters: 16, kernelSize: 3, padding: 'same', useBias: false, name: 'conv_a'}).apply(input);
  y = tf.layers.batchNormalization({name: 'bn_a'}).apply(y);
  y = tf.layers.activation({activation: 'relu', name: 'relu_a'}).apply(y);
  y = tf.layers.conv2d({filters: 16, kernelSize: 3, padding: 'same', useBias: false, name: 'conv_b'}).apply(y);
  y = tf.layers.batchNormalization({momentum: 0.9, name: 'bn_b'}).apply(y);
  const shortcut = tf.layers.conv2d({filters: 16, kernelSize: 1, name: 'shortcut'}).apply(input);
  let x = tf.layers.add({name: 'add'}).apply([shortcut, y]);
  x = tf.layers.activation({activation: 'relu', name: 'relu_out'}).apply(x);
  x = tf.layers.globalAveragePooling2d({name: 'gap'}).apply(x);
  x = tf.layers.dropout({rate: 0.5, name: 'dropout'}).apply(x);
  const output = tf.layers.dense({units: 10, activation: 'softmax', name: 'logits'}).apply(x);
  return tf.model({inputs: input, outputs: output, name: 'residual'});
}

// 3. A Functional model that calls a nested Sequential, frozen as a whole. tf.keras 2
//    and Keras 3 set trainable false on every layer of a model whose trainable is set
//    false, and write it in each layer's config; tfjs only freezes the weights and
//    writes nothing, so the layers are frozen one by one here to write what tf.keras 2
//    writes.
function nestedSequential() {
  const features = tf.sequential({
    name: 'features',
    layers: [
      tf.layers.conv2d({inputShape: [16, 16, 3], filters: 4, kernelSize: 3, activation: 'relu', name: 'feat_conv'}),
      tf.layers.maxPooling2d({poolSize: 2, name: 'feat_pool'}),
    ],
  });
  features.trainable = false;
  for (const layer of features.layers) layer.trainable = false;
  const input = tf.input({shape: [16, 16, 3], name: 'image'});
  let x = features.apply(input);
  x = tf.layers.flatten({name: 'flatten'}).apply(x);
  const output = tf.layers.dense({units: 5, name: 'head'}).apply(x);
  return tf.model({inputs: input, outputs: output, name: 'outer'});
}

// 4. Transfer learning as the Estimator tutorial does it: a Sequential holding a
//    VGG-like Functional base whose first layers are frozen one by one, then
//    Flatten and a Dense softmax head.
function frozenBase() {
  const input = tf.input({shape: [32, 32, 3], name: 'input_1'});
  let x = tf.layers.conv2d({filters: 8, kernelSize: 3, padding: 'same', activation: 'relu', name: 'block1_conv1'}).apply(input);
  x = tf.layers.conv2d({filters: 8, kernelSize: 3, padding: 'same', activation: 'relu', name: 'block1_conv2'}).apply(x);
  x = tf.layers.maxPooling2d({poolSize: 2, strides: 2, name: 'block1_pool'}).apply(x);
  x = tf.layers.conv2d({filters: 16, kernelSize: 3, padding: 'same', activation: 'relu', name: 'block2_conv1'}).apply(x);
  x = tf.layers.maxPooling2d({poolSize: 2, strides: 2, name: 'block2_pool'}).apply(x);
  const base = tf.model({inputs: input, outputs: x, name: 'vgg_base'});
  for (const layer of base.layers.slice(0, 3)) layer.trainable = false;  // input_1, block1_conv1, block1_conv2
  return tf.sequential({
    name: 'transfer',
    layers: [
      base,
      tf.layers.flatten({name: 'flatten'}),
      tf.layers.dense({units: 3, activation: 'softmax', name: 'predictions'}),
    ],
  });
}

write('tfjs_sequential_cnn.json', sequentialCnn());
write('tfjs_residual.json', residualBlock());
write('tfjs_nested.json', nestedSequential());
write('tfjs_frozen.json', frozenBase());

// 5. The model.json that tfjs' model.save() writes (tfjs-core io: modelTopology is the
//    model JSON itself, beside format, generatedBy, convertedBy and weightsManifest), for
//    the Sequential CNN above. Teachable Machine exports this form too.
async function writeModelJson(name, model) {
  let json;
  await model.save(tf.io.withSaveHandler(async (artifacts) => {
    const manifest = [{paths: ['./' + name.replace('.json', '.weights.bin')], weights: artifacts.weightSpecs}];
    // tfjs-core io_utils getModelJSONForModelArtifacts (not exported by tf.io).
    json = {modelTopology: artifacts.modelTopology, format: artifacts.format, generatedBy: artifacts.generatedBy,
            convertedBy: artifacts.convertedBy, weightsManifest: manifest};
    return {modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts)};
  }));
  fs.writeFileSync(path.join(outDir, name), JSON.stringify(json, null, 1) + '\n');
  console.log('wrote', name);
}

writeModelJson('tfjs_model_json_layers_model.json', sequentialCnn());
