import { describe, expect, it } from "vitest";
import {
  type HeadViewMeta,
  columnsOf,
  complete,
  isWindowed,
  keyChange,
  keyKept,
  keyY,
  layerRequest,
  layout,
  queriesDrawn,
  queryKept,
  rowPlan,
  segmentRuns,
  selectedRows,
  soloHead,
  swatchInk,
  swatchStyle,
  titleText,
  toggleHead,
  tokenAt,
  viewKey,
} from "../src/views/head_view/state";

const META: HeadViewMeta = {
  title: "tiny",
  kinds: ["self"],
  shapes: { self: [3, 4] },
  tokens: {
    self: [
      ["a", "b", "c"],
      ["a", "b", "c"],
    ],
  },
  segments: {
    self: [
      [0, 0, 1],
      [0, 0, 1],
    ],
  },
  can_words: true,
  long: false,
  n_kv_heads: 0,
};
const WIN = {
  q: [10, 12] as [number, number],
  k: [10, 13] as [number, number],
  far: [0, 4],
  n: [600, 600] as [number, number],
};

describe("head view state", () => {
  it("keys a layer by kind, layer, level and a window's range", () => {
    const v = { kind: "self", layer: 2, words: false, window: [0, 3] };
    expect(isWindowed(META, v)).toBe(false);
    expect(viewKey(META, v)).toBe("self/2/t");
    expect(viewKey(META, { ...v, words: true })).toBe("self/2/w");
    expect(viewKey(META, { ...v, window: [1, 3] })).toBe("self/2/t/1-3");
    // words are never windowed, a long input always is
    expect(viewKey(META, { ...v, words: true, window: [1, 3] })).toBe("self/2/w");
    expect(isWindowed({ ...META, long: true }, v)).toBe(true);
    expect(layerRequest(META, { ...v, window: [1, 3] })).toEqual({
      what: "layer",
      kind: "self",
      layer: 2,
      words: false,
      window: [1, 3],
    });
    expect(layerRequest(META, v)).not.toHaveProperty("window");
  });

  it("knows when a payload's floor covers min_weight", () => {
    expect(complete(0.01, 0.01)).toBe(true);
    expect(complete(0.02, 0.01)).toBe(false);
    expect(complete(undefined, 0)).toBe(true);
  });

  it("toggles and isolates heads from the swatches", () => {
    expect(toggleHead([3, 0], 1)).toEqual([0, 1, 3]);
    expect(toggleHead([0, 1, 3], 1)).toEqual([0, 3]);
    expect(soloHead([0, 1, 2], 1, 4)).toEqual([1]);
    expect(soloHead([1], 1, 4)).toEqual([0, 1, 2, 3]);
  });

  it("picks black ink on light swatches and white on dark ones", () => {
    expect(swatchInk([240, 228, 66])).toBe("#000"); // yellow
    expect(swatchInk([0, 114, 178])).toBe("#fff"); // blue: 0.587 * 114 + 0.114 * 178 = 87
    expect(swatchInk([150, 150, 150])).toBe("#fff"); // exactly 150 is not above it
  });

  it("greys the tokens outside the sentence filter on each side", () => {
    expect(queryKept("all", 1)).toBe(true);
    expect([0, 1].map((s) => queryKept("BA", s))).toEqual([false, true]);
    expect([0, 1].map((s) => keyKept("BA", s))).toEqual([true, false]);
  });

  it("maps selected positions to a window's rows and draws hovered, selected or all queries", () => {
    expect(selectedRows([9, 10, 11, 12], 10, 2)).toEqual([0, 1]);
    expect(queriesDrawn({ side: "q", i: 4 }, [1], 8)).toEqual([4]);
    expect(queriesDrawn(null, [1, 9], 8)).toEqual([1]);
    expect(queriesDrawn({ side: "k", i: 2 }, [], 3)).toEqual([0, 1, 2]);
  });

  it("leaves a gap row before the far keys and lays the columns out", () => {
    expect(rowPlan(2, 5, WIN)).toEqual({ nWin: 3, gap: 1, n: 6 });
    expect(rowPlan(4, 3, null)).toEqual({ nWin: 3, gap: 0, n: 4 });
    const g = layout({ font: 12, name: "light" }, 6, 50, 60, { win: WIN, pair: false }, null);
    // positions column: 3 digits of 600 at 0.62 × font, + 8
    expect(g.posW).toBe(Math.ceil(3 * 12 * 0.62) + 8);
    expect(g.rowH).toBe(18);
    expect(g.xl).toBe(g.posW + 54);
    expect(g.xr - g.xl).toBe(240);
    expect(g.width).toBe(2 * g.posW + 50 + 240 + 60 + 12);
    expect(keyY(g, 2, 3, 1)).toBe(8 + 2.5 * 18);
    expect(keyY(g, 3, 3, 1)).toBe(8 + 4.5 * 18); // the first far key, below the gap row
    // fitted into a narrow, short box: rows shrink, the gap between the columns gives way (not below 120)
    const f = layout(
      { font: 12, name: "light" },
      6,
      50,
      60,
      { win: null, pair: true },
      { width: 300, height: 76 },
    );
    expect(f.rowH).toBe(10);
    expect(f.posW).toBe(Math.ceil(12 * 0.9) + 12); // a pair's segment marks: 23
    expect(f.xr - f.xl).toBe(300 - (2 * 23 + 50 + 60 + 12));
    const narrow = layout(
      { font: 12, name: "light" },
      6,
      50,
      60,
      { win: null, pair: false },
      { width: 200, height: 999 },
    );
    expect(narrow.xr - narrow.xl).toBe(120);
    expect(f.pair).toBe(true);
  });

  it("finds the token under the pointer, never the gap row", () => {
    const g = { top: 8, rowH: 10, xl: 50, xr: 200 };
    expect(tokenAt(g, 2, 5, WIN, 10, 8 + 15)).toEqual({ side: "q", i: 1 });
    expect(tokenAt(g, 2, 5, WIN, 10, 8 + 25)).toBeNull(); // below the queries
    expect(tokenAt(g, 2, 5, WIN, 100, 8 + 5)).toBeNull(); // between the columns
    expect(tokenAt(g, 2, 5, WIN, 210, 8 + 25)).toEqual({ side: "k", i: 2 });
    expect(tokenAt(g, 2, 5, WIN, 210, 8 + 35)).toBeNull(); // the gap row
    expect(tokenAt(g, 2, 5, WIN, 210, 8 + 45)).toEqual({ side: "k", i: 3 });
    expect(tokenAt(g, 2, 5, WIN, 210, 8 + 65)).toBeNull();
  });

  it("runs of sentence segments", () => {
    expect(segmentRuns([0, 0, 1, 1, 1])).toEqual([
      [0, 1, 0],
      [2, 4, 1],
    ]);
    expect(segmentRuns([])).toEqual([]);
  });

  it("steps layers and heads with the arrows, pages a window only when windowed", () => {
    const tr = { layer: 2, heads: [0, 1], window: [0, 2], kind: "self" };
    expect(keyChange(tr, META, false, "ArrowDown")).toEqual({ layer: 2 });
    expect(keyChange(tr, META, false, "ArrowUp")).toEqual({ layer: 1 });
    expect(keyChange(tr, META, false, "ArrowLeft")).toEqual({ heads: [3] });
    expect(keyChange({ ...tr, heads: [3] }, META, false, "ArrowRight")).toEqual({ heads: [0] });
    expect(keyChange(tr, META, false, "Escape")).toEqual({ selected: [] });
    expect(keyChange(tr, META, false, "PageDown")).toBeNull();
    expect(keyChange(tr, META, true, "PageDown")).toEqual({ window: [1, 3] });
    expect(keyChange(tr, META, true, "x")).toBeNull();
  });

  it("titles the view and reads labels of a kind", () => {
    const v = { kind: "cross", layer: 1, words: true, window: [] };
    expect(titleText(META, v, null)).toBe(
      "\u2068tiny\u2069 · target (left) → source (right) · layer 1 · words",
    );
    expect(titleText(META, { ...v, kind: "self", words: false }, WIN)).toBe(
      "\u2068tiny\u2069 · self attention · layer 1 · tokens 10–11 of 600",
    );
    expect(columnsOf(null, "self")).toEqual({ tokens: [[], []], segments: [[], []] });
    expect(columnsOf(META, "self").tokens[0]).toEqual(["a", "b", "c"]);
  });
});

describe("head swatches", () => {
  it("keep a hidden head's digit opaque and readable", () => {
    const shown = swatchStyle("#ffd700", true);
    expect(shown).toContain("background:#ffd700;color:#000"); // black digits on yellow
    const hidden = swatchStyle("#1f3a93", false);
    expect(hidden).not.toMatch(/opacity/); // 25 % opacity took the digit with the swatch
    expect(hidden).toContain("color:var(--aw-fg");
    expect(hidden).toContain("dashed");
  });
});
