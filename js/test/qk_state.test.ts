import { describe, expect, it } from "vitest";
import { THEMES } from "../src/shared/theme";
import { withSelection } from "../src/views/qk/controls";
import {
  type HeadData,
  PANEL_CHROME,
  type QKMeta,
  angleCss,
  arrowStep,
  captionText,
  fitGeometry,
  headData,
  headRequest,
  isWindowed,
  labelPanel,
  naturalGeometry,
  panelWidths,
  panels,
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
  wrapAngle,
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
  rope: false,
  rotary_dim: 0,
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
    expect(text).not.toContain("selected");
    const picked = captionText(META, v, hd, 1, r, strongestKey(r), [0, 1]);
    expect(picked).toContain("(one of 2 selected: \u2068a\u2069 \u2068b\u2069 (0–1))");
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

describe("QKStepThrough's RoPE step", () => {
  // d = 2, one rotating pair (r = 2): q before the rotation, q·k before it, each position's angle
  const rope = {
    q_pre: f32([1, 0, 0, 1]),
    k_pre: f32([1, 0, 0, 1, 1, 1]),
    logits_pre: f32([1, 0, 1, 0, 1, 1]),
    angle: f32([0, 1, 2]),
    q_angle: f32([0, 1]),
  };
  it("puts three numbered panels before q and k, which are now after the rotation", () => {
    const p = panels(false, 1 / Math.sqrt(2), 2, true);
    expect(p.map((x) => x.id)).toEqual([
      "pre",
      "dotpre",
      "angle",
      "qk",
      "prod",
      "dot",
      "scaled",
      "softmax",
      "sum",
    ]);
    expect(p[0].title).toBe("① q, k before RoPE");
    expect(p[3].title).toBe("④ q, k after RoPE");
    expect(p[8].title).toBe("⑨ Σ weight × v");
    expect(panels(true, 1, 8, true).length).toBe(10);
    expect(labelPanel(true)).toBe("pre");
    expect(labelPanel(false)).toBe("qk");
  });
  it("slices the query's row of the rotary arrays", () => {
    const r = queryRow(head(rope), 1);
    expect(Array.from(r.qPre ?? [])).toEqual([0, 1]);
    expect(Array.from(r.logitsPre ?? [])).toEqual([0, 1, 1]);
    expect(Array.from(r.qAngle ?? [])).toEqual([1]);
    expect(queryRow(head(), 1).qPre).toBeNull();
  });
  it("tells where a pair of a query and a key meet", () => {
    const g = naturalGeometry(THEMES.light, 2, 3, 60);
    // pair 0 (cells 0 and 1 of the angle panel), key 2: the query turns 1 rad, the key 2 rad: they meet at -1 rad
    const lines = tipLines({ ...META, rope: true, rotary_dim: 2 }, head(rope), g, 1, "angle", 2, 4 + g.cw);
    expect(lines.join("\n")).toContain("pair 0: the query turns 57.3°, this key 114.6°; they meet at -57.3°");
    const dot = tipLines({ ...META, rope: true, rotary_dim: 2 }, head(rope), g, 1, "dot", 1, 10);
    expect(dot).toContain("q·k before RoPE = 1.0000");
    expect(dot).toContain("q·k after RoPE = 2.0000");
  });
  it("colours angles on a wheel: -π and π are the same colour, 0 the opposite", () => {
    expect(angleCss(Math.PI)).toBe(angleCss(-Math.PI));
    expect(angleCss(Math.PI)).toBe(angleCss(3 * Math.PI));
    expect(angleCss(0)).not.toBe(angleCss(Math.PI));
    expect(wrapAngle(3 * Math.PI)).toBeCloseTo(Math.PI);
    expect(wrapAngle(-0.5)).toBeCloseTo(-0.5);
  });
  it("fits all nine panels of a rotary head into a lecture row", () => {
    const g = { rh: 28, top: 53, cw: 3, label: 190, bar: 76, num: 62 };
    for (const [d, r] of [
      [8, 4],
      [32, 32],
      [64, 64],
    ]) {
      const f = fitGeometry(g, d, 12, { width: 1240, height: 600 }, false, r);
      const widths = panelWidths(f, d, false, r);
      expect(widths.length).toBe(9);
      expect(widths.reduce((a, b) => a + b, 0) + 9 * PANEL_CHROME).toBeLessThanOrEqual(1240);
    }
  });
});

describe("withSelection (a query chosen in the menu or by the arrow keys)", () => {
  it("selects a query outside the selection alone, and leaves the rest alone", () => {
    expect(withSelection({ query: 1 }, [4, 5])).toEqual({ query: 1, selection: [1] });
    expect(withSelection({ query: 5 }, [4, 5])).toEqual({ query: 5 });
    expect(withSelection({ query: 5 }, [])).toEqual({ query: 5 });
    expect(withSelection({ head: 2 }, [4, 5])).toEqual({ head: 2 });
    expect(withSelection({ query: 1, selection: [1, 2] }, [4, 5])).toEqual({ query: 1, selection: [1, 2] });
  });
});
