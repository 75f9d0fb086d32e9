import { describe, expect, it } from "vitest";
import {
  type CompareMeta,
  type Side,
  absTop,
  captionText,
  gridScale,
  mapCellAt,
  mapLegendText,
  mapTip,
  panelLayout,
  positionInA,
  selectedRows,
  sides,
  spanKey,
  summarySlice,
  titleText,
} from "../src/views/compare/state";

// A: "a b c d", B: "e a c d": A's 1 (b) and B's 0 (e) have no partner.
const META: CompareMeta = {
  title: "t",
  a_name: "gpt2",
  b_name: "distilgpt2",
  labels: {
    a: [
      ["a", "b", "c", "d"],
      ["a", "b", "c", "d"],
    ],
    b: [
      ["e", "a", "c", "d"],
      ["e", "a", "c", "d"],
    ],
    a_matched: [
      [true, false, true, true],
      [true, false, true, true],
    ],
    b_matched: [
      [false, true, true, true],
      [false, true, true, true],
    ],
    aligned: [
      ["a", "c", "d"],
      ["a", "c", "d"],
    ],
  },
  shape: [2, 3],
  summaries: ["js", "cosine"],
  summary_labels: { js: "JS divergence", cosine: "cosine similarity" },
  method: "difflib",
  identity: false,
  can_words: false,
  signed: [],
  query_map: [
    [0, 2, 3],
    [1, 2, 3],
  ],
};

describe("compare view state", () => {
  it("maps a selection of A's rows onto B's and the aligned rows", () => {
    expect(selectedRows([1, 2, 3], META.query_map, "a")).toEqual([1, 2, 3]);
    expect(selectedRows([1, 2, 3], META.query_map, "b")).toEqual([2, 3]); // b has no partner
    expect(selectedRows([1, 2, 3], META.query_map, "diff")).toEqual([1, 2]); // rows of the aligned map
    expect(selectedRows([0], undefined, "b")).toEqual([]);
  });

  it("maps a clicked row back to a position of A", () => {
    expect(positionInA(META.query_map, "a", 1)).toBe(1);
    expect(positionInA(META.query_map, "diff", 1)).toBe(2);
    expect(positionInA(META.query_map, "diff", 5)).toBeNull();
    expect(positionInA(META.query_map, "b", 2)).toBe(2);
    expect(positionInA(META.query_map, "b", 3)).toBe(3);
    expect(positionInA(META.query_map, "b", 0)).toBeNull(); // e: no partner in A
  });

  it("names the panels A and B, with the model names when they differ", () => {
    expect(sides(META, "side").map((s) => [s.which, s.name, s.q.length])).toEqual([
      ["a", "A · gpt2", 4],
      ["b", "B · distilgpt2", 4],
    ]);
    expect(sides({ ...META, b_name: "gpt2" }, "side").map((s) => s.name)).toEqual(["A", "B"]);
    const [diff, ...none] = sides(META, "diff");
    expect(none).toEqual([]);
    expect([diff.which, diff.name, diff.q, diff.qOk]).toEqual(["diff", "B − A", ["a", "c", "d"], null]);
  });

  it("lays the panels out left to right with their label room, cells fitted to the box", () => {
    const two: Side[] = [
      { q: ["a", "b", "c"], k: ["a", "b", "c"], qOk: null, kOk: null, which: "a", name: "A" },
      { q: ["x", "y"], k: ["w", "x", "y", "z"], qOk: null, kOk: null, which: "b", name: "B" },
    ];
    const o = { sides: two, rooms: [40, 50], heading: 20, avail: 500, maxCell: 30, maxSide: 340 };
    const free = panelLayout({ ...o, fitted: null, gridW: 0, below: 0 });
    // top: heading + the largest room; cell capped at 30; A at 40, B at 40 + 3·30 + 16 + 50 = 196
    expect(free.top).toBe(70);
    expect(free.cell).toBe(30);
    expect(free.rowsMax).toBe(3);
    expect(free.panels.map((p) => [p.x0, p.y0, p.nq, p.nk, p.which])).toEqual([
      [40, 70, 3, 3, "a"],
      [196, 70, 2, 4, "b"],
    ]);
    expect(free.width).toBe(332);
    // fitted 400 x 200 beside a 100 px grid: by width (400 − 100 − 44 − 122) / 7 columns = 19
    const fitted = panelLayout({ ...o, fitted: { width: 400, height: 200 }, gridW: 100, below: 20 });
    expect(fitted.cell).toBe(19);
    expect(fitted.panels[1].x0).toBe(40 + 3 * 19 + 16 + 50);
  });

  it("finds the cell under the pointer and writes its tooltip", () => {
    const panels = panelLayout({
      sides: sides(META, "side"),
      rooms: [10, 10],
      heading: 0,
      avail: 1000,
      maxCell: 20,
      maxSide: 340,
      fitted: null,
      gridW: 0,
      below: 0,
    }).panels;
    // A: x 10–90, y 10–90; B from 10 + 80 + 16 + 10 = 116
    expect(mapCellAt(panels, 5, 50)).toBeNull();
    const hit = mapCellAt(panels, 10 + 2 * 20 + 5, 10 + 1 * 20 + 5);
    expect([hit?.panel.which, hit?.q, hit?.k]).toEqual(["a", 1, 2]);
    const inB = mapCellAt(panels, 116 + 3 * 20 + 1, 10 + 1);
    expect([inB?.panel.which, inB?.q, inB?.k]).toEqual(["b", 0, 3]);
    expect(mapCellAt(panels, 100, 20)).toBeNull(); // the gap between the panels
    expect(mapTip(META.labels, "b", 0, 3, 0.25)).toBe("e → d\nB: 0.250");
    expect(mapTip(META.labels, "diff", 1, 2, -0.1)).toBe("c → d\nB − A: -0.100");
  });

  it("keys the span rows and slices the stacked summaries", () => {
    expect(spanKey({ layer: 1, head: -1, selection: [2, 3], combine: "sum" })).toBe("1/-1/2,3/sum");
    const S = new Float32Array([1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60]);
    expect(Array.from(summarySlice(S, META, "cosine").data)).toEqual([10, 20, 30, 40, 50, 60]);
    expect(Array.from(summarySlice(S, META, "nope").data)).toEqual([1, 2, 3, 4, 5, 6]); // unknown: the first
  });

  it("shades JS divergence from 0 up and cosine reversed, so the most changed heads are dark in both", () => {
    const js = gridScale("js", new Float32Array([0.1, 0.4, Number.NaN]));
    expect([js.lo, js.hi]).toEqual([0, expect.closeTo(0.4, 6)]);
    expect(js.shade(0.4)).toBeCloseTo(0.4); // the top of the map: dark
    expect(js.ends).toEqual(["0.00", "0.40"]);
    const cos = gridScale("cosine", new Float32Array([-0.5, 0.5, 1]));
    expect([cos.lo, cos.hi]).toEqual([-0.5, 1]);
    expect(cos.shade(-0.5)).toBeCloseTo(1.5); // least similar: the top of the map
    expect(cos.shade(1)).toBe(0);
    expect(cos.ends).toEqual(["1.00", "-0.50"]);
  });

  it("writes the title, the caption and the legends", () => {
    expect(titleText(META, 2, -1)).toBe("A: \u2068gpt2\u2069 · B: \u2068distilgpt2\u2069 · head 2/mean");
    expect(titleText({ ...META, b_name: "gpt2" }, 0, 3)).toBe("\u2068gpt2\u2069: A vs B · head 0/3");
    expect(captionText(META)).toContain("(1 in A, 1 in B)");
    expect(captionText({ ...META, identity: true })).toBe(
      "A and B have the same tokens: every position compared.",
    );
    expect(mapLegendText("diff", 0.5, 0.125)).toEqual({
      lo: "−0.125",
      hi: "+0.125",
      label: "B − A (white: 0, no change)",
    });
    expect(mapLegendText("diff", 0.5, 0).label).toContain("zero everywhere");
    expect(mapLegendText("side", 0.5, 0.1)).toEqual({ lo: "0", hi: "0.500", label: "attention weight" });
    expect(absTop(new Float32Array([0.2, -0.7, Number.NaN]))).toBeCloseTo(0.7);
    expect(absTop([])).toBe(0);
  });
});
