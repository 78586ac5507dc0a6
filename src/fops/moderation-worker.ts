/**
 * The moderation worker: the body of the `worker_threads` thread that moderation-model.ts starts. It owns
 * TensorFlow.js (wasm backend; its `.wasm` binaries are read from the installed @tensorflow/tfjs-backend-wasm
 * package, never fetched) and the nsfwjs MobileNetV2 model (weights bundled in the nsfwjs package), so the
 * ~60 ms of inference per image never blocks the server's event loop.
 *
 * The model loads once when the thread starts; a load failure throws, which ends the thread (the parent reports
 * it and starts a new thread for the next request). Protocol (one request at a time, see moderation-model.ts):
 * - in: `{id, pixels}` — `pixels` an ArrayBuffer of 224 × 224 × 3 RGB bytes (transferred);
 * - out: `{id, predictions}` (the five classes with their probabilities) or `{id, error}` (a message).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import * as tf from '@tensorflow/tfjs';
import { setThreadsCount, setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { load, type NSFWJS } from 'nsfwjs/core';
import { MobileNetV2Model } from 'nsfwjs/models/mobilenet_v2';
import { MODEL_INPUT_SIDE } from './moderation-labels.js';
import type { NsfwPrediction } from './types.js';

/** A request from the parent. */
export interface ClassifyRequest {
  id: number;
  pixels: ArrayBuffer;
}

/** A reply to the parent. */
export type ClassifyReply = { id: number; predictions: NsfwPrediction[] } | { id: number; error: string };

/** The directory of the wasm binaries, with a trailing separator (setWasmPaths takes a prefix). */
function wasmDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm')), '/');
}

/** Loads the backend and the model; nsfwjs' console banner is silenced. */
async function loadModel(): Promise<NSFWJS> {
  setWasmPaths(wasmDir());
  // One XNNPACK thread: the server's other work shares the cores (the threaded binary needs cross-origin isolation anyway).
  setThreadsCount(1);
  if (!(await tf.setBackend('wasm'))) throw new Error('the TensorFlow.js wasm backend did not initialise');
  await tf.ready();
  tf.enableProdMode();
  const info = console.info;
  console.info = () => undefined;
  try {
    return await load('MobileNetV2', { modelDefinitions: [MobileNetV2Model] });
  } finally {
    console.info = info;
  }
}

async function classify(model: NSFWJS, pixels: ArrayBuffer): Promise<NsfwPrediction[]> {
  const side = MODEL_INPUT_SIDE;
  const bytes = new Uint8Array(pixels);
  if (bytes.length !== side * side * 3) throw new Error(`expected ${side * side * 3} bytes of pixels, got ${bytes.length}`);
  const input = tf.tensor3d(Int32Array.from(bytes), [side, side, 3], 'int32');
  try {
    const predictions = await model.classify(input, 5);
    return predictions.map((p) => ({ className: p.className, probability: p.probability }));
  } finally {
    input.dispose();
  }
}

const port = parentPort;
if (!port) throw new Error('moderation-worker.ts runs only as a worker thread');
const model = await loadModel();
port.on('message', (msg: ClassifyRequest) => {
  classify(model, msg.pixels).then(
    (predictions) => port.postMessage({ id: msg.id, predictions } satisfies ClassifyReply),
    (err: unknown) => port.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) } satisfies ClassifyReply),
  );
});
