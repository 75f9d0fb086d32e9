import { describe, expect, it } from "vitest";
import { FSI, PDI } from "../src/shared/text";
import {
  type ModelViewMeta,
  cellTip,
  detailKey,
  detailOf,
  detailTitle,
  gridGeometry,
  gridTitle,
  gridWidth,
  headThumb,
  selectedBlocks,
  slotAt,
  spanKey,
  thumbTip,
  thumbsOf,
} from "../src/views/model_view/state";

const iso = (s: string) => `${FSI}${s}${PDI}`;

const META: ModelViewMeta = {
  title: "tiny",
  measure: "weights",
  can_norms: false,
  reduce: "max",
  kinds: ["self"],
  shapes: { self: [2, 4] },
  tokens: {
    self: [
      ["a", "b", "c"],
      ["a", "b", "c"],
    ],
  },
  causal: { self: true },
  kv_group_size: { self: 2 },
};

const packed = { buffer: new ArrayBuffer(0), dtype: "float32" as const, shape: [0] };

describe("the grid of thumbnails", () => {
  it("is 360–820 px wide, and at most 55% of a fitted box", () => {
    expect(gridWidth(100)).toBe(360);
    expect(gridWidth(500)).toBe(640);
    expect(gridWidth(900)).toBe(820);
    expect(gridWidth(500, 1000)).toBe(550);
    expect(gridWidth(500, 2000)).toBe(640);
  });

  it("puts the slot of (layer, head) after `head` slots and gaps across and `layer` down", () => {
    const g = gridGeometry(3, 4, 400, 10);
    // x0 = ceil(2.6 * 10) = 26, y0 = 16; slot = floor((400 - 26 - 16) / 4) = 89, capped at 64
    expect([g.x0, g.y0, g.slot, g.gap]).toEqual([26, 16, 64, 4]);
    expect(slotAt(g, 2, 1)).toEqual({ x: 26 + 68, y: 16 + 2 * 68 });
  });

  it("cuts one head's thumbnail out of the stack and greys the blocks wholly in the future", () => {
    // 1 layer x 2 heads of 2 x 2 blocks; head 1 is [0.1, 0.9, 0.3, 0.4]
    const data = Float32Array.from([1, 2, 3, 4, 0.1, 0.9, 0.3, 0.4]);
    const out = new Float32Array(4);
    const top = headThumb(data, 1, 2, 2, true, 1, out);
    expect(top).toBeCloseTo(0.9); // the scale is the head's own, taken before masking
    expect(Number.isNaN(out[1])).toBe(true); // query 0 cannot see key 1
    expect(Array.from(out).filter((v) => !Number.isNaN(v))).toEqual([
      Math.fround(0.1),
      Math.fround(0.3),
      Math.fround(0.4),
    ]);
    // Blocks of 4 tokens: block (0, 1) holds keys 4..7 and queries 0..3, all in the future
    headThumb(data, 1, 2, 2, true, 4, out);
    expect(Number.isNaN(out[1])).toBe(true);
    expect(Number.isNaN(out[2])).toBe(false); // block (1, 0): keys 0..3 are all in the past of queries 4..7
    headThumb(data, 0, 2, 2, false, 4, out); // not causal: nothing masked
    expect(Array.from(out)).toEqual([1, 2, 3, 4]);
  });

  it("titles the grid with its size, the GQA shading and the thumbnails' row sampling", () => {
    const t = thumbsOf("self", { factor: 8, rows_used: 2 }, packed);
    expect(t).toEqual({ kind: "self", factor: 8, rows_used: 2, thumbs: packed });
    expect(thumbsOf("self", { factor: 8 }, packed).rows_used).toBe(8);
    expect(gridTitle(META, "self", [2, 4, 3, 3], t)).toBe(
      `${iso("tiny")} · self attention · 2 layers × 4 heads · shaded: heads sharing a KV head (2 per group)` +
        " · thumbnails read 2 of every 8 query rows",
    );
    expect(gridTitle({ ...META, kv_group_size: {} }, "self", [2, 4], null)).toBe(
      `${iso("tiny")} · self attention · 2 layers × 4 heads`,
    );
    expect(thumbTip(META, "self", { layer: 1, head: 3 })).toBe("layer 1 · head 3 · KV head 1");
  });
});

describe("the chosen head", () => {
  it("is named by kind, layer and head, its span row by the selection's runs too", () => {
    expect(detailKey("self", 2, 5)).toBe("self/2/5");
    expect(spanKey("self", 2, 5, [0, 1, 2, 6], "mean")).toBe("span/self/2/5/0:3,6:7/mean");
  });

  it("scales to vmax as sent, else its largest value, else 1", () => {
    const m = { data: Float32Array.from([0.2, 0.6, 0, 0]), shape: [2, 2] };
    expect(detailOf("k", m, { vmax: 0.5, factor: 1 }).vmax).toBe(0.5);
    expect(detailOf("k", m, { vmax: 0 }).vmax).toBeCloseTo(0.6);
    expect(detailOf("k", m, {}).vmax).toBeCloseTo(0.6);
    expect(detailOf("k", { data: new Float32Array(4), shape: [2, 2] }, {}).vmax).toBe(1);
    const d = detailOf("k", m, { factor: 4 });
    expect([d.factor, d.rowsUsed]).toEqual([4, 4]);
  });

  it("outlines the blocks that hold a selected row", () => {
    expect(selectedBlocks([0, 1, 5, 9], 4)).toEqual([0, 1, 2]);
    expect(selectedBlocks([3, 1], 1)).toEqual([3, 1]);
  });

  it("says query → key at full detail and the token ranges of a block in an overview", () => {
    const tokens: [string[], string[]] = [
      ["a", "b"],
      ["c", "d"],
    ];
    expect(cellTip(tokens, { q: 1, k: 0 }, 0.125, 1, "max")).toBe(`${iso("b")} → ${iso("c")}\n0.1250`);
    expect(cellTip(tokens, { q: 1, k: 2 }, 0.5, 4, "mean")).toBe("queries 4–7 → keys 8–11 (mean)\n0.5000");
    expect(cellTip(tokens, { q: 0, k: 1 }, Number.NaN, 1, "max")).toMatch(/\nmasked \(future key\)$/);
  });

  it("titles the head with its KV head, an overview's note pointing at the heatmap, and the selection", () => {
    const full = { key: "self/1/3", data: new Float32Array(0), vmax: 1, factor: 1, rowsUsed: 1 };
    expect(detailTitle(META, "self", full, ["a", "b", "c"], [], "mean")).toBe(
      "self attention · layer 1 · head 3 · KV head 1",
    );
    const over = { ...full, factor: 8, rowsUsed: 2 };
    expect(detailTitle({ ...META, reduce: "mean" }, "self", over, [], [], "mean")).toBe(
      "self attention · layer 1 · head 3 · KV head 1 · overview (mean of 8×8 blocks, 2 of every 8 query rows read; " +
        "zoom in AttentionHeatmap)",
    );
    expect(detailTitle(META, "self", full, ["a", "b", "c"], [2], "sum")).toBe(
      `self attention · layer 1 · head 3 · KV head 1 · ${iso("sum of 1 row: c (2)")}`,
    );
  });
});
