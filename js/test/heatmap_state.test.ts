import { describe, expect, it } from "vitest";
import { heatmapLayout } from "../src/draw/layout";
import { FSI, PDI } from "../src/shared/text";
import {
  type HeatmapMeta,
  type MatrixData,
  cellTip,
  detailLevel,
  geometryData,
  keyAction,
  labelsReadable,
  legendText,
  matrixData,
  regionRequest,
  spanKey,
  titleText,
  valueAt,
} from "../src/views/heatmap/state";

const iso = (s: string) => `${FSI}${s}${PDI}`;

const META: HeatmapMeta = {
  title: "tiny",
  measure: "weights",
  can_norms: false,
  reduce: "max",
  sinks: [],
  vmax: null,
  kinds: ["self"],
  shapes: { self: [2, 4] },
  tokens: {
    self: [
      ["a", "b", "c"],
      ["a", "b", "c"],
    ],
  },
  can_words: false,
  kv_group_size: { self: 2 },
};

const VIEW = { kind: "self", layer: 1, head: 3, words: false };

/** A 4 x 6 map sent as an overview of 2 x 2 blocks: 2 x 3 block values 0..5 (block (i, j) = 3i + j). */
function overview(): MatrixData {
  const labels: [string[], string[]] = [
    ["q0", "q1", "q2", "q3"],
    ["k0", "k1", "k2", "k3", "k4", "k5"],
  ];
  return matrixData("self/1/3/t", { data: Float32Array.from([0, 1, 2, 3, 4, 5]), shape: [2, 3] }, 2, labels);
}

describe("the matrix on screen", () => {
  it("takes a matrix that fits its labels, blocks rounded up, and scales it to its largest value", () => {
    const m = overview();
    expect(m.vmax).toBe(5);
    expect(m.rowsUsed).toBe(2); // every row of a block read unless Python says fewer
    const odd = matrixData(
      "k",
      { data: new Float32Array(2 * 3), shape: [2, 3] },
      2,
      [
        ["a", "b", "c"],
        ["a", "b", "c", "d", "e"],
      ],
      0.5,
      1,
    );
    expect(odd.vmax).toBe(0.5); // 3 x 5 tokens in 2 x 2 blocks: ceil(3 / 2) x ceil(5 / 2) = 2 x 3
    expect(odd.rowsUsed).toBe(1);
    expect(
      matrixData("k", { data: new Float32Array(4), shape: [2, 2] }, 1, [
        ["a", "b"],
        ["a", "b"],
      ]).vmax,
    ).toBe(1);
  });

  it("refuses a matrix whose shape does not fit the labels, naming both", () => {
    expect(() =>
      matrixData("k", { data: new Float32Array(6), shape: [2, 3] }, 1, [
        ["a", "b"],
        ["a", "b"],
      ]),
    ).toThrow("a 2 x 3 matrix does not fit 2 x 2 labels");
  });

  it("reads a cell from the tile that covers it, else from its overview block", () => {
    const m = overview();
    // cell (3, 4) is in block (1, 2) = 3 * 1 + 2
    expect(valueAt(m, [], 6, 3, 4)).toEqual({ v: 5, exact: false });
    expect(valueAt(m, [], 6, 0, 1)).toEqual({ v: 0, exact: false });
    const tile = { q0: 2, k0: 3, rows: 2, cols: 3, data: Float32Array.from([10, 11, 12, 13, 14, 15]) };
    // (3, 4) is row 1, column 1 of the tile: 3 + 1 = index 4
    expect(valueAt(m, [tile], 6, 3, 4)).toEqual({ v: 14, exact: true });
    expect(valueAt(m, [tile], 6, 1, 4)).toEqual({ v: 2, exact: false }); // above the tile: block (0, 2)
  });
});

describe("what the page says", () => {
  it("a tooltip says query → key and whether the value is exact", () => {
    const tip = cellTip(["x", "y"], ["p", "q"], { q: 1, k: 0 }, { v: 0.25, exact: true }, 1);
    expect(tip.text).toBe(`${iso("y")} → ${iso("p")}\n0.2500`);
    expect(tip.data).toEqual({ q: "1", k: "0", value: "0.25", exact: "true" });
    const block = cellTip(["x"], ["p"], { q: 0, k: 0 }, { v: 0.5, exact: false }, 16);
    expect(block.text.split("\n")[1]).toBe("≤ 0.5000 (max of 16×16; zoom in)");
    expect(cellTip(["x"], ["p"], { q: 0, k: 0 }, { v: Number.NaN, exact: true }, 1).text).toMatch(
      /\nmasked$/,
    );
  });

  it("the legend names the scale and at most five discounted sinks", () => {
    expect(legendText(0.5, { vmax: null, sinks: [] })).toBe("0.500 · per-map scale (this map’s max)");
    expect(legendText(0.5, { vmax: 0.5, sinks: [0] })).toBe(
      "0.500 · fixed scale (same for every map) · sink key 0 discounted (clipped to the top colour)",
    );
    expect(legendText(1, { vmax: null, sinks: [0, 1, 2, 3, 4, 5] })).toContain(
      "sink keys 0, 1, 2, 3, 4, … discounted",
    );
  });

  it("the title names the head, its KV head, the level, zoom, overview and selection", () => {
    const base = {
      zoom: 1,
      factor: 1,
      rowsUsed: 1,
      queries: ["a", "b", "c"],
      selection: [],
      combine: "mean",
    };
    expect(titleText(META, VIEW, base)).toBe(
      `${iso("tiny")} · self attention · layer 1 · head 3 · KV head 1`,
    );
    const mean = titleText(META, { ...VIEW, head: -1, words: true }, base);
    expect(mean).toBe(`${iso("tiny")} · self attention · layer 1 · mean of heads · words`);
    // Zoomed in, the overview's note gives way to the zoom.
    const zoomed = titleText(META, VIEW, { ...base, zoom: 2.5, factor: 4, rowsUsed: 4 });
    expect(zoomed).toMatch(/ · zoom ×2\.5$/);
    expect(titleText(META, VIEW, { ...base, factor: 4, rowsUsed: 4 })).toContain(
      "overview (max of 4×4 blocks",
    );
    const sel = titleText(META, VIEW, { ...base, selection: [0, 1] });
    expect(sel.endsWith(` · ${iso("mean of 2 rows: a b (0–1)")}`)).toBe(true);
  });
});

describe("keys and requests", () => {
  it("arrows step heads down to the mean (-1) and layers within the shape; + − 0 zoom", () => {
    expect(keyAction("ArrowRight", VIEW, [2, 4])).toEqual({ view: { head: 3 } }); // the last head stays
    expect(keyAction("ArrowLeft", { ...VIEW, head: 0 }, [2, 4])).toEqual({ view: { head: -1 } });
    expect(keyAction("ArrowLeft", { ...VIEW, head: -1 }, [2, 4])).toEqual({ view: { head: -1 } });
    expect(keyAction("ArrowDown", VIEW, [2, 4])).toEqual({ view: { layer: 1 } });
    expect(keyAction("ArrowUp", VIEW, [2, 4])).toEqual({ view: { layer: 0 } });
    expect(keyAction("=", VIEW, [2, 4])).toEqual({ zoomBy: 1.6 });
    expect(keyAction("-", VIEW, [2, 4])).toEqual({ zoomBy: 1 / 1.6 });
    expect(keyAction("0", VIEW, [2, 4])).toEqual({ zoomReset: true });
    expect(keyAction("x", VIEW, [2, 4])).toBeNull();
  });

  it("names a span row and a tile request by view", () => {
    expect(spanKey(VIEW, [2, 3, 4, 7], "sum")).toBe("span/self/1/3/t/2:5,7:8/sum");
    const tl = { ti: 1, tj: 0, q0: 256, q1: 300, k0: 0, k1: 256 };
    expect(regionRequest({ ...VIEW, words: true }, tl)).toEqual({
      what: "region",
      kind: "self",
      layer: 1,
      head: 3,
      words: true,
      q0: 256,
      q1: 300,
      k0: 0,
      k1: 256,
    });
  });
});

describe("geometry", () => {
  const l = heatmapLayout({ nq: 8, nk: 8, labelWidth: 40, labelHeight: 30, maxGrid: 160, maxCell: 20 });

  it("puts cell (q, k) at x0 + (k + .5) * cell under a zoom", () => {
    // 8 cells in 160 px: 20 px a cell; zoom 2 from cell (2, 4): cells of 40 px, the origin 4 and 2 cells out
    const g = geometryData(l, { z: 2, q0: 2, k0: 4 });
    expect(l.cell).toBe(20);
    expect(g.cell).toBe("40");
    expect(g.x0).toBe(String(l.x0 - 4 * 40));
    expect(g.y0).toBe(String(l.y0 - 2 * 40));
    expect(g.visible).toBe("2:6,4:8");
    expect(g.gridW).toBe("160");
  });

  it("draws the whole map's labels only unzoomed with cells tall enough", () => {
    expect(labelsReadable(1, 10, 13)).toBe(true); // min(13, 12) - 2 = 10
    expect(labelsReadable(1, 9.9, 13)).toBe(false);
    expect(labelsReadable(2, 20, 13)).toBe(false);
  });

  it("says how much of a long input is at full detail", () => {
    expect(detailLevel(1, 0, 0)).toBe("full");
    expect(detailLevel(4, 2, 2)).toBe("tiles");
    expect(detailLevel(4, 2, 1)).toBe("overview");
    expect(detailLevel(4, 0, 0)).toBe("overview");
  });
});
