import { describe, expect, it } from "vitest";
import {
  type LinePayload,
  findKey,
  forEachLine,
  fromDense,
  payloadFromReply,
  toRows,
} from "../src/shared/lines";
import { stepHead } from "../src/views/head_view/state";

/** float16 bits of a few exact values. */
const HALF: Record<number, number> = { 0.5: 0x3800, 0.25: 0x3400, 1: 0x3c00, 0.125: 0x3000 };

function half(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setUint16(i * 2, HALF[v], true));
  return out;
}

// 2 heads x 2 queries x 3 keys; rows: (h0,q0) keys 0,2 · (h0,q1) none · (h1,q0) key 1 · (h1,q1) keys 0,1,2
const sparse: LinePayload = {
  format: "sparse",
  shape: [2, 2, 3],
  floor: 0.1,
  counts: { buffer: new Uint8Array([2, 0, 1, 3]), dtype: "uint8", shape: [4] },
  keys: { buffer: new Uint8Array([0, 0, 2, 0, 1, 0, 0, 0, 1, 0, 2, 0]), dtype: "uint16", shape: [6] },
  values: { buffer: half([0.5, 0.5, 1, 0.25, 0.125, 0.5]), dtype: "float16", shape: [6] },
};

describe("HeadView line rows", () => {
  it("reads sparse rows: offsets, keys and float16 weights", () => {
    const rows = toRows(sparse);
    expect([rows.heads, rows.nq, rows.nk, rows.floor]).toEqual([2, 2, 3, 0.1]);
    expect(Array.from(rows.start)).toEqual([0, 2, 2, 3, 6]);
    expect(Array.from(rows.keys)).toEqual([0, 2, 1, 0, 1, 2]);
    expect(Array.from(rows.values)).toEqual([0.5, 0.5, 1, 0.25, 0.125, 0.5]);
    expect(findKey(rows, 3, 2)).toBe(5);
    expect(findKey(rows, 0, 1)).toBe(-1);
    expect(findKey(rows, 1, 0)).toBe(-1);
  });

  it("visits the lines of a head over chosen queries, one key, and a threshold", () => {
    const rows = toRows(sparse);
    const seen: Array<[number, number, number]> = [];
    forEachLine(rows, 1, [0, 1], -1, 0.2, (q, k, w) => seen.push([q, k, w]));
    expect(seen).toEqual([
      [0, 1, 1],
      [1, 0, 0.25],
      [1, 2, 0.5],
    ]);
    seen.length = 0;
    forEachLine(rows, 1, [0, 1], 1, 0, (q, k, w) => seen.push([q, k, w])); // incoming to key 1
    expect(seen).toEqual([
      [0, 1, 1],
      [1, 1, 0.125],
    ]);
  });

  it("turns a dense layer into rows that hold every weight", () => {
    const data = new Float32Array([0, 0.5, 0.25, 1, 0, 0]); // 1 head x 2 queries x 3 keys: a transpose would show
    const rows = fromDense(data, [1, 2, 3]);
    const seen: Array<[number, number]> = [];
    forEachLine(rows, 0, [0, 1], -1, 0.2, (q, k) => seen.push([q, k]));
    expect(seen).toEqual([
      [0, 1],
      [0, 2],
      [1, 0],
    ]);
    expect(rows.floor).toBe(0);
  });

  it("rebuilds a payload from a reply's parts and buffers", () => {
    const s = sparse as Extract<LinePayload, { format: "sparse" }>;
    const content = {
      format: "sparse",
      shape: [2, 2, 3],
      floor: 0.1,
      parts: [
        { name: "counts", dtype: "uint8", shape: [4] },
        { name: "keys", dtype: "uint16", shape: [6] },
        { name: "values", dtype: "float16", shape: [6] },
      ],
    };
    const bufs = [s.counts, s.keys, s.values].map((p) => {
      const b = p.buffer as Uint8Array;
      return new DataView(b.buffer, b.byteOffset, b.byteLength);
    });
    const rows = toRows(payloadFromReply(content, bufs));
    expect(Array.from(rows.keys)).toEqual([0, 2, 1, 0, 1, 2]);
    const dense = payloadFromReply({ format: "dense", shape: [1, 1, 2], dtype: "uint8", scale: 1 }, [
      new DataView(new Uint8Array([255, 0]).buffer),
    ]);
    expect(Array.from(toRows(dense).values)).toEqual([1, 0]);
  });

  it("refuses rows whose counts and keys disagree", () => {
    const bad = { ...sparse, counts: { buffer: new Uint8Array([2, 0, 1, 2]), dtype: "uint8", shape: [4] } };
    expect(() => toRows(bad as LinePayload)).toThrow(/disagree/);
  });

  it("arrow keys show one head at a time, wrapping", () => {
    expect(stepHead([0, 1, 2], 3, 1)).toEqual([0]);
    expect(stepHead([0, 1, 2], 3, -1)).toEqual([2]);
    expect(stepHead([1], 3, 1)).toEqual([2]);
    expect(stepHead([2], 3, 1)).toEqual([0]);
    expect(stepHead([0], 3, -1)).toEqual([2]);
  });
});
