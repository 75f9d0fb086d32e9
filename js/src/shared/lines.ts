// HeadView's layer payload (attnwidgets/viewdata/lines.py) as compressed sparse rows: for each (head, query) row,
// the keys whose weight is at least the payload's floor and their weights. A dense layer (sent when sparse rows
// would not be smaller) is turned into the same rows, so drawing has one path.

import { type DType, type Packed, decode, halfToFloat, toBytes } from "./buffers";

export type IntDType = "uint8" | "uint16" | "uint32";

export interface IntPart {
  buffer: DataView | ArrayBuffer | ArrayBufferView;
  dtype: IntDType | "float16";
  shape: number[];
}

/** The payload as Python sends it: dense ({buffer, dtype, shape}) or sparse (counts, keys, values). */
export type LinePayload =
  | (Packed & { format?: "dense"; floor?: number })
  | { format: "sparse"; shape: number[]; floor: number; counts: IntPart; keys: IntPart; values: IntPart };

export interface LineRows {
  heads: number;
  nq: number;
  nk: number;
  floor: number; // weights under it are not in the rows (0: every weight is)
  start: Uint32Array; // heads * nq + 1 offsets into keys/values; row r = head * nq + query
  keys: Uint32Array; // ascending within a row
  values: Float32Array;
}

/** Unsigned little-endian integers (or float16 values) of a part, as a typed array. */
export function readPart(p: IntPart): Uint32Array | Float32Array {
  const bytes = toBytes(p.buffer);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = p.shape.reduce((a, b) => a * b, 1);
  const size = p.dtype === "uint8" ? 1 : p.dtype === "uint32" ? 4 : 2;
  if (bytes.byteLength < n * size)
    throw new Error(`${p.dtype} buffer too short: ${bytes.byteLength} < ${n * size}`);
  if (p.dtype === "float16") {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
    return out;
  }
  const out = new Uint32Array(n);
  if (p.dtype === "uint8") out.set(bytes.subarray(0, n));
  else if (p.dtype === "uint16") for (let i = 0; i < n; i++) out[i] = view.getUint16(i * 2, true);
  else if (p.dtype === "uint32") for (let i = 0; i < n; i++) out[i] = view.getUint32(i * 4, true);
  else throw new Error(`unknown dtype ${String(p.dtype)}`);
  return out;
}

/** Rows from a dense [head, query, key] matrix (every weight kept, so nothing drawable is lost). */
export function fromDense(data: Float32Array, shape: number[]): LineRows {
  const [heads, nq, nk] = shape;
  const rows = heads * nq;
  const start = new Uint32Array(rows + 1);
  const keys = new Uint32Array(rows * nk);
  for (let r = 0; r <= rows; r++) start[r] = r * nk;
  for (let r = 0; r < rows; r++) for (let k = 0; k < nk; k++) keys[r * nk + k] = k;
  return { heads, nq, nk, floor: 0, start, keys, values: data.subarray(0, rows * nk) };
}

export function toRows(p: LinePayload): LineRows {
  if (p.format === "sparse") {
    const [heads, nq, nk] = p.shape;
    const counts = readPart(p.counts) as Uint32Array;
    const keys = readPart(p.keys) as Uint32Array;
    const values = readPart(p.values) as Float32Array;
    if (counts.length !== heads * nq)
      throw new Error(`expected ${heads * nq} row counts, got ${counts.length}`);
    const start = new Uint32Array(counts.length + 1);
    for (let r = 0; r < counts.length; r++) start[r + 1] = start[r] + counts[r];
    if (start[counts.length] !== keys.length || keys.length !== values.length)
      throw new Error("sparse layer: counts, keys and values disagree");
    return { heads, nq, nk, floor: p.floor, start, keys, values };
  }
  const m = decode(p as Packed);
  return fromDense(m.data, m.shape);
}

/** A payload from a request reply: content (as payload_reply in _lines.py makes it) and its binary buffers. */
export function payloadFromReply(
  content: Record<string, unknown>,
  buffers: Array<DataView | ArrayBuffer>,
): LinePayload {
  if (content.format === "sparse") {
    const parts = content.parts as Array<{ name: string; dtype: IntPart["dtype"]; shape: number[] }>;
    const out: Record<string, IntPart> = {};
    parts.forEach((spec, i) => {
      out[spec.name] = { buffer: buffers[i], dtype: spec.dtype, shape: spec.shape };
    });
    return {
      format: "sparse",
      shape: content.shape as number[],
      floor: Number(content.floor ?? 0),
      counts: out.counts,
      keys: out.keys,
      values: out.values,
    };
  }
  return {
    buffer: buffers[0],
    dtype: content.dtype as DType,
    shape: content.shape as number[],
    scale: content.scale as number | undefined,
    floor: 0,
  };
}

/** Index into keys/values of key `k` in row `r`, or -1 (keys ascend within a row: binary search). */
export function findKey(rows: LineRows, r: number, k: number): number {
  let lo = rows.start[r];
  let hi = rows.start[r + 1] - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = rows.keys[mid];
    if (v === k) return mid;
    if (v < k) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Call `fn(query, key, weight)` for each weight >= `thr` of `head`, over queries `qs` (and only key `kOnly` if >= 0). */
export function forEachLine(
  rows: LineRows,
  head: number,
  qs: number[],
  kOnly: number,
  thr: number,
  fn: (q: number, k: number, w: number) => void,
): void {
  for (const q of qs) {
    const r = head * rows.nq + q;
    if (kOnly >= 0) {
      const e = findKey(rows, r, kOnly);
      if (e >= 0 && rows.values[e] >= thr) fn(q, kOnly, rows.values[e]);
      continue;
    }
    for (let e = rows.start[r]; e < rows.start[r + 1]; e++) {
      const w = rows.values[e];
      if (w >= thr) fn(q, rows.keys[e], w);
    }
  }
}
