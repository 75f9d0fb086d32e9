// FillMask's state (views/fill_mask/state.ts): pure functions, checked against hand-computed cases.
import { describe, expect, it } from "vitest";
import {
  attentionRow,
  columnAt,
  fillCaption,
  fillTitle,
  fillsLayout,
  menuOptions,
  panelAt,
  pictureWidth,
  rowColumns,
  rowTitle,
  selectionRow,
  shownRows,
} from "../src/views/fill_mask/state";

describe("attentionRow", () => {
  // shape (masks 2, layers 1, heads 2, tokens 3): values = 100 * mask + 10 * head + token
  const shape = [2, 1, 2, 3];
  const rows = Float32Array.from({ length: 12 }, (_, i) => {
    const [m, hh, j] = [Math.floor(i / 6), Math.floor(i / 3) % 2, i % 3];
    return 100 * m + 10 * hh + j;
  });
  it("reads one head's row of one [MASK]", () => {
    expect(Array.from(attentionRow(rows, shape, 1, 0, 1))).toEqual([110, 111, 112]);
    expect(Array.from(attentionRow(rows, shape, 0, 0, 0))).toEqual([0, 1, 2]);
  });
  it("averages the layer's heads for head -1", () => {
    expect(Array.from(attentionRow(rows, shape, 1, 0, -1))).toEqual([105, 106, 107]);
  });
});

describe("controls", () => {
  it("offers a [MASK] menu only with several, and mean before the heads", () => {
    const one = menuOptions([1, 2, 3, 9]);
    expect(one.mask).toBeNull();
    expect(one.layer).toEqual([
      ["0", "0"],
      ["1", "1"],
    ]);
    expect(one.head.map(([v]) => v)).toEqual(["-1", "0", "1", "2"]);
    expect(one.head[0][1]).toBe("mean");
    expect(menuOptions([2, 1, 1, 4]).mask).toEqual([
      ["0", "#1"],
      ["1", "#2"],
    ]);
  });
});

describe("layout", () => {
  const fills = [
    { tokens: ["a", "b", "c"], probs: [0.5, 0.2, 0.1] },
    { tokens: ["d"], probs: [0.8] },
    { tokens: ["e", "f"], probs: [0.3, 0.3] },
  ];
  it("sizes the pictures to the widget, within 240 px and the theme's most", () => {
    expect(pictureWidth(700, 1000, "light")).toBe(692);
    expect(pictureWidth(0, 1000, "light")).toBe(900);
    expect(pictureWidth(0, 1000, "lecture")).toBe(976); // 1000 less 16 px of padding, less 8
    expect(pictureWidth(832, 820, "lecture")).toBe(796); // a stale, wider title does not widen it past the room
    expect(pictureWidth(100, 1000, "light")).toBe(240);
  });
  it("puts as many [MASK] panels in a row as fit, bars on one scale", () => {
    // font 10: line 16, labels 70, a panel at least 70 + 50 + 60 = 180 px, at most 70 + 50 + 140 = 260
    const l = fillsLayout(fills, 400, 10, 50);
    expect([l.perRow, l.w, l.h, l.nRows, l.lineH, l.labelW]).toEqual([2, 200, 16 * 4 + 8, 2, 16, 70]);
    expect(l.barMax).toBe(200 - 70 - 50 - 16);
    expect(l.pMax).toBe(1); // a fixed 0–100 % axis, not the top filler's 0.8
    const wide = fillsLayout(fills, 2000, 10, 50);
    expect([wide.perRow, wide.w, wide.nRows]).toEqual([3, 260, 1]);
    expect(fillsLayout([], 400, 10, 50).perRow).toBe(1);
  });
  it("finds the [MASK] panel under a click, none outside", () => {
    const l = { w: 200, h: 72, perRow: 2 };
    expect(panelAt(l, 3, 10, 10)).toBe(0);
    expect(panelAt(l, 3, 250, 10)).toBe(1);
    expect(panelAt(l, 3, 10, 80)).toBe(2);
    expect(panelAt(l, 3, 250, 80)).toBe(-1); // a fourth panel that does not exist
    expect(panelAt(l, 3, 450, 10)).toBe(-1); // right of the row
    expect(panelAt(l, 3, -5, 10)).toBe(-1);
  });
  it("spaces the tokens of the attention row and finds the one under the pointer", () => {
    // font 10: x0 32; (400 - 32) / 4 = 92 -> at most 45 px a column, labels level
    expect(rowColumns(4, 400, 10)).toEqual({ x0: 32, colW: 45, rotated: false });
    // 40 tokens: 9 px columns (at least 8), labels turned
    expect(rowColumns(40, 400, 10)).toEqual({ x0: 32, colW: 9, rotated: true });
    const cols = { x0: 32, colW: 45 };
    expect(columnAt(cols, 4, 32)).toBe(0);
    expect(columnAt(cols, 4, 32 + 45 * 3 + 44)).toBe(3);
    expect(columnAt(cols, 4, 32 + 45 * 4)).toBe(-1);
    expect(columnAt(cols, 4, 20)).toBe(-1);
  });
});

describe("texts", () => {
  it("titles the row and captions the view", () => {
    expect(rowTitle(0, 3, -1)).toBe("Where [MASK] #1 attends: layer 3, mean of the heads");
    expect(rowTitle(1, 0, 5)).toBe("Where [MASK] #2 attends: layer 0, head 5");
    expect(fillCaption(1)).not.toContain("Click");
    expect(fillCaption(2)).toContain("Click a [MASK]'s bars to see where it attends. ");
    expect(fillCaption(1)).toContain("0–100 %");
  });

  it("titles a shipped head's guesses as not the model's own", () => {
    expect(fillTitle("m", "Not the model's own head: m has none")).toBe(
      "m · fill in the [MASK] · attnwidgets' head",
    );
    expect(fillTitle("m", "The model's own masked-LM head (m).")).toBe("m · fill in the [MASK]");
  });
});

describe("selectionRow (the panel's row for a selection of query tokens)", () => {
  // attention (layers 2, heads 2, n 3, n 3): value = 1000 * layer + 100 * head + 10 * query + key
  const shape = [2, 2, 3, 3];
  const att = Float32Array.from({ length: 36 }, (_, i) => {
    const [l, hh, q, k] = [Math.floor(i / 18), Math.floor(i / 9) % 2, Math.floor(i / 3) % 3, i % 3];
    return 1000 * l + 100 * hh + 10 * q + k;
  });
  it("means or sums the selected rows of one head", () => {
    expect(Array.from(selectionRow(att, shape, 1, 1, [0, 2], "mean"))).toEqual([1110, 1111, 1112]);
    expect(Array.from(selectionRow(att, shape, 1, 1, [0, 2], "sum"))).toEqual([2220, 2222, 2224]);
  });
  it("averages the heads with head -1", () => {
    expect(Array.from(selectionRow(att, shape, 0, -1, [1], "mean"))).toEqual([60, 61, 62]);
    expect(Array.from(selectionRow(att, shape, 0, -1, [1, 2], "sum"))).toEqual([130, 132, 134]);
  });
  it("skips positions past the tokens (a selection for the next sentence, before its rows arrive)", () => {
    expect(Array.from(selectionRow(att, shape, 0, 0, [1, 7], "mean"))).toEqual([10, 11, 12]);
  });
});

describe("shownRows and rowTitle with a selection", () => {
  const tokens = ["[CLS]", "new", "york", "[MASK]", "[SEP]"];
  it("marks the selection, or the [MASK] with nothing selected", () => {
    expect(shownRows([1, 2], [3], 0)).toEqual([1, 2]);
    expect(shownRows([], [3], 0)).toEqual([3]);
  });
  it("names the [MASK] for its own row and the selection otherwise", () => {
    const own = { tokens, positions: [3], selection: [3], combine: "mean" };
    expect(rowTitle(0, 2, -1, own)).toBe("Where [MASK] #1 attends: layer 2, mean of the heads");
    expect(rowTitle(0, 2, -1, { ...own, selection: [] })).toBe(
      "Where [MASK] #1 attends: layer 2, mean of the heads",
    );
    expect(rowTitle(0, 2, 1, { ...own, selection: [1, 2], combine: "sum" })).toBe(
      "Where new york (1–2) attend (sum of 2 rows): layer 2, head 1",
    );
    expect(rowTitle(0, 0, 1, { ...own, selection: [2] })).toBe("Where york (2) attends: layer 0, head 1");
  });
});
