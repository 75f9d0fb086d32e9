import { describe, expect, it } from "vitest";
import { decode, halfToFloat, maxOf, replyPacked, scaleTop, toBytes } from "../src/shared/buffers";

describe("halfToFloat", () => {
  it("decodes known half-precision bit patterns", () => {
    expect(halfToFloat(0x3c00)).toBe(1);
    expect(halfToFloat(0x3800)).toBe(0.5);
    expect(halfToFloat(0xc000)).toBe(-2);
    expect(halfToFloat(0x0000)).toBe(0);
    expect(halfToFloat(0x7c00)).toBe(Number.POSITIVE_INFINITY);
    expect(Number.isNaN(halfToFloat(0x7e00))).toBe(true);
    expect(halfToFloat(0x0001)).toBeCloseTo(5.96e-8, 10); // smallest subnormal
  });
});

describe("decode", () => {
  it("reads little-endian float32 from a DataView with an offset", () => {
    const buf = new ArrayBuffer(4 + 3 * 4);
    const dv = new DataView(buf);
    [0.25, 0.5, 0.125].forEach((v, i) => dv.setFloat32(4 + i * 4, v, true));
    const m = decode({ buffer: new DataView(buf, 4), dtype: "float32", shape: [1, 3] });
    expect(Array.from(m.data)).toEqual([0.25, 0.5, 0.125]);
    expect(m.shape).toEqual([1, 3]);
  });

  it("reads float16 and uint8 with its scale", () => {
    const half = new Uint16Array([0x3c00, 0x3400]); // 1, 0.25
    expect(Array.from(decode({ buffer: half, dtype: "float16", shape: [2] }).data)).toEqual([1, 0.25]);
    const q = new Uint8Array([0, 255, 51]);
    const m = decode({ buffer: q, dtype: "uint8", shape: [3], scale: 0.5 });
    expect(m.data[0]).toBe(0);
    expect(m.data[1]).toBeCloseTo(0.5, 6);
    expect(m.data[2]).toBeCloseTo(0.1, 6);
  });

  it("reads a masked uint8 cell as NaN and the others on 0..254 (a causal mask is not a zero weight)", () => {
    const q = new Uint8Array([0, 254, 127, 255]);
    const m = decode({ buffer: q, dtype: "uint8", shape: [4], scale: 0.8, top: 254, masked: 255 });
    expect(m.data[0]).toBe(0);
    expect(m.data[1]).toBeCloseTo(0.8, 6);
    expect(m.data[2]).toBeCloseTo(0.4, 6);
    expect(Number.isNaN(m.data[3])).toBe(true);
    expect(maxOf(m.data)).toBeCloseTo(0.8, 6);
  });

  it("replyPacked keeps a reply's scale and mask", () => {
    const buffer = new Uint8Array([255, 254]);
    const content = { type: "reply", id: 3, dtype: "uint8", shape: [2], scale: 0.5, top: 254, masked: 255 };
    const m = decode(replyPacked(content, buffer));
    expect(Number.isNaN(m.data[0])).toBe(true);
    expect(m.data[1]).toBeCloseTo(0.5, 6);
  });

  it("refuses a buffer shorter than its shape", () => {
    expect(() => decode({ buffer: new Uint8Array(4), dtype: "float32", shape: [2, 2] })).toThrow(/too short/);
  });

  it("toBytes and maxOf", () => {
    expect(toBytes(new Uint16Array([1])).byteLength).toBe(2);
    expect(maxOf(new Float32Array([0.1, 0.7, 0.3]))).toBeCloseTo(0.7);
  });
});

describe("scaleTop", () => {
  it("is vmax as sent when positive and finite, else the largest value, else 1", () => {
    const data = Float32Array.from([0.25, 0.75, 0]);
    expect(scaleTop(0.5, data)).toBe(0.5);
    expect(scaleTop(undefined, data)).toBe(0.75);
    expect(scaleTop(0, data)).toBe(0.75);
    expect(scaleTop(Number.NaN, data)).toBe(0.75);
    expect(scaleTop(-1, new Float32Array(3))).toBe(1);
  });
});
