import { describe, expect, it } from "vitest";
import { THEMES } from "../src/shared/theme";
import {
  type HeadData,
  type QKMeta,
  arrowStep,
  captionText,
  headData,
  headRequest,
  isWindowed,
  naturalGeometry,
  products,
  queryIndex,
  queryRow,
  replyArrays,
  rowAtY,
  rowLabel,
  stepWindowRange,
  strongestKey,
  tipLines,
  viewKey,
  windowRows,
} from "../src/views/qk/state";

const META: QKMeta = {
  title: "tiny",
  stack: "self",
  layers: [0, 2, 4],
  n_heads: 4,
  n_kv_heads: 2,
  head_dim: 2,
  scaling: 1 / Math.sqrt(2),
  tokens: ["a", "b"],
  key_tokens: ["a", "b", "c"],
  long: false,
  bias: false,
  buckets: false,
};

const f32 = (xs: number[]) => Float32Array.from(xs);

/** Two queries, three keys, d = 2; query 1 may see keys 0 and 1 (key 2 masked). */
function head(extra: Record<string, Float32Array> = {}, pos: number[] | null = null): HeadData {
  return {
    key: "0/0",
    n: 2,
    m: 3,
    d: 2,
    pos,
    outside: 0.25,
    arrays: {
      q: f32([0, 0, 1, 2]),
      k: f32([1, 0, 0, 1, 1, 1]),
      v: f32([1, 1, 2, 2, 3, 3]),
      output: f32([0, 0, 1.7, 1.7]),
      logits: f32([0, 0, 0, 1, 2, 3]),
      scaled: f32([0, 0, 0, 0.5, 1, 1.5]),
      weights: f32([1, 0, 0, 0.3, 0.7, 0.9]),
      mask: f32([1, 0, 0, 1, 1, 0]),
      ...extra,
    },
  };
}

describe("qk view state", () => {
  it("keys a full head by layer/head and a window by its query and keys too", () => {
    const full = { layer: 1, head: 2, query: 3, window: [0, 3] };
    expect(isWindowed(META, full.window)).toBe(false);
    expect(viewKey(META, full)).toBe("1/2");
    expect(headRequest(META, full)).toEqual({ what: "qk", layer: 1, head: 2 });
    const win = { ...full, window: [1, 3] };
    expect(viewKey(META, win)).toBe("1/2/3/1-3");
    expect(headRequest(META, win)).toEqual({ what: "qk", layer: 1, head: 2, query: 3, window: [1, 3] });
    expect(isWindowed({ ...META, long: true }, [0, 3])).toBe(true);
    expect(isWindowed(META, [])).toBe(false);
  });

  it("pages a window by its size inside the keys", () => {
    expect(stepWindowRange([4, 8], 10, 1)).toEqual([6, 10]);
    expect(stepWindowRange([2, 6], 10, -1)).toEqual([0, 4]);
    expect(stepWindowRange([0, 4], 10, 1)).toEqual([4, 8]);
  });

  it("moves heads with ← → and layers with ↑ ↓, clamped", () => {
    expect(arrowStep(META, 2, 1, "ArrowDown")).toEqual({ layer: 4 });
    expect(arrowStep(META, 4, 1, "ArrowDown")).toEqual({ layer: 4 });
    expect(arrowStep(META, 0, 1, "ArrowUp")).toEqual({ layer: 0 });
    expect(arrowStep(META, 0, 3, "ArrowRight")).toEqual({ head: 3 });
    expect(arrowStep(META, 0, 0, "ArrowLeft")).toEqual({ head: 0 });
    expect(arrowStep(META, 0, 1, "ArrowRight")).toEqual({ head: 2 });
    expect(arrowStep(META, 0, 1, "a")).toBeNull();
  });

  it("slices one query's row, multiplies q by each key and finds the strongest visible key", () => {
    const hd = head();
    const r = queryRow(hd, 1);
    expect(Array.from(r.q)).toEqual([1, 2]);
    expect(r.allowed).toEqual([true, true, false]);
    expect(products(hd, r.q).map((p) => Array.from(p))).toEqual([
      [1, 0],
      [0, 2],
      [1, 2],
    ]);
    // key 2 has the largest weight but is masked
    expect(strongestKey(r)).toBe(1);
    expect(strongestKey({ weights: f32([0.5, 0.5]), allowed: [true, true] })).toBe(0);
    expect(strongestKey({ weights: f32([0.5]), allowed: [false] })).toBe(-1);
  });

  it("adds the bias before the softmax and rounds the buckets", () => {
    const r = queryRow(head({ bias: f32([0, 0, 0, 0.25, -1, 2]), bucket: f32([0, 0, 0, 2.9999, 1, 0]) }), 1);
    expect(Array.from(r.biased)).toEqual([0.75, 0, 3.5]);
    expect(r.bucket).toEqual([3, 1, 0]);
  });

  it("reads a window's rows as its keys then the far keys", () => {
    const hd = head({}, [5, 6, 20]);
    expect(queryIndex(hd, 7)).toBe(7);
    expect(queryIndex(head(), 7)).toBe(1);
    expect(windowRows(hd, [5, 7])).toBe(2);
    expect(windowRows(head(), [5, 7])).toBe(3);
    const keys = Array.from({ length: 21 }, (_, i) => `t${i}`);
    expect([0, 1, 2].map((j) => rowLabel(keys, hd, j, 2))).toEqual(["5 t5", "6 t6", "far #20 t20"]);
    expect(rowLabel(META.key_tokens, head(), 2, 3)).toBe("c");
  });

  it("finds the row under the pointer, none above or below", () => {
    const g = { rh: 5, top: 10, cw: 3, label: 40, bar: 70, num: 46 };
    expect(rowAtY(g, 3, 9)).toBe(-1);
    expect(rowAtY(g, 3, 10)).toBe(0);
    expect(rowAtY(g, 3, 24.9)).toBe(2);
    expect(rowAtY(g, 3, 25)).toBe(-1);
  });

  it("sizes rows and strips from the theme and head size", () => {
    expect(naturalGeometry(THEMES.light, 32, 10, 50)).toMatchObject({ rh: 18, top: 34, cw: 3, label: 50 });
    expect(naturalGeometry(THEMES.light, 12, 97, 50)).toMatchObject({ rh: 12, top: 23, cw: 6 });
    expect(naturalGeometry(THEMES.lecture, 200, 10, 50)).toMatchObject({ rh: 28, cw: 1, bar: 76, num: 62 });
  });

  it("explains a key in the tooltip, the component under the pointer included", () => {
    const g = { rh: 5, top: 10, cw: 3, label: 40, bar: 70, num: 46 };
    const hd = head();
    // panel ①, x = 40 + 3 * 1 + 1: component 1 of key 1
    expect(tipLines(META, hd, g, 1, "qk", 1, 44)).toEqual([
      "key 1 “\u2068b\u2069” ← query “\u2068b\u2069”", // user text isolated (bidi)
      "q[1] = 2.0000   k[1] = 1.0000   q⊙k = 2.0000",
      "q·k = 2.0000",
      "× 0.7071 = 1.0000",
      "softmax = 0.7000",
    ]);
    expect(tipLines(META, hd, g, 1, "dot", 2, 0)).toEqual([
      "key 2 “\u2068c\u2069” ← query “\u2068b\u2069”",
      "masked: this query may not attend to this key",
    ]);
  });

  it("captions the key/value head, the scaling as 1/√d and the window's share", () => {
    const hd = head({}, [0, 1, 2]);
    const v = { layer: 0, head: 3, query: 1, window: [0, 2] };
    const r = queryRow(hd, 0);
    const text = captionText(META, v, hd, 1, r, strongestKey(r));
    expect(text).toContain("(key/value head 1)");
    expect(text).toContain("scaling 0.7071 = 1/√2");
    expect(text).toContain("strongest key: “\u2068a\u2069”");
    expect(text).toContain("keys 0–1 of 3, outside them 25.0 % of the weight");
  });

  it("joins a reply's specs with its buffers and decodes a head", () => {
    const buf = (xs: number[]) => f32(xs).buffer;
    const specs = [
      { name: "q", dtype: "float32" as const, shape: [1, 2] },
      { name: "logits", dtype: "float32" as const, shape: [1, 3] },
      { name: "keys", dtype: "float32" as const, shape: [3] },
    ];
    const arrays = replyArrays(specs, [buf([1, 2]), buf([0, 1, 2]), buf([4, 5.0001, 9])]);
    const hd = headData("k", arrays);
    expect([hd.n, hd.m, hd.d]).toEqual([1, 3, 2]);
    expect(hd.pos).toEqual([4, 5, 9]);
    expect(Array.from(hd.arrays.logits)).toEqual([0, 1, 2]);
  });
});
