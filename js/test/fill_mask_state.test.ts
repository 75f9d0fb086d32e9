// FillMask's state (views/fill_mask/state.ts): pure functions, checked against hand-computed cases.
import { describe, expect, it } from "vitest";
import {
  attentionRow,
  columnAt,
  fillCaption,
  fillTitle,
  fillsLayout,
  labelHeight,
  labelLine,
  labelReach,
  menuOptions,
  namedColumns,
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
    // font 10: x0 32; (400 - 32) / 4 = 92 -> at most 45 px a column; 30 px labels fit in 45 - 4: one level line
    expect(rowColumns(4, 400, 10, [30, 30, 30, 30])).toEqual({
      x0: 32,
      colW: 45,
      labels: { lines: 1, every: 1, room: 41 },
    });
    // notebook 02's row with the file browser open (font 20, 12 tokens in 800 px): 61 px columns hold no bold
    // "[MASK]" (75 px), so two lines: (800 - 64) / 13 = 56 px columns, a label up to 2 * 56 - 4 = 108 px, reaching
    // 26 px past its column, the first column 26 px further in
    expect(rowColumns(12, 800, 20, [52, 28, 40, 60, 28, 75, 36, 55, 48, 35, 6, 52])).toEqual({
      x0: 90,
      colW: 56,
      labels: { lines: 2, every: 1, room: 108 },
    });
    // 40 tokens: 9 px columns (at least 8), labels turned, every ceil(12.5 / 9) = 2nd named, 25 px down
    expect(rowColumns(40, 400, 10, new Array(40).fill(25))).toEqual({
      x0: 32,
      colW: 9,
      labels: { lines: 0, every: 2, room: 25 },
    });
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

describe("the attention row's labels", () => {
  // Each label's box as paint.ts draws it: level ones centred on their column, as wide as measured but cut to the
  // plan's room (fitToken), on line j % lines; turned ones one text line (1.2 font) wide, only the named ones.
  const boxes = (n: number, room: number, font: number, widths: number[], marked: number[]) => {
    const { x0, colW, labels } = rowColumns(n, room, font, widths);
    const named = labels.lines ? null : namedColumns(n, labels.every, marked);
    const out: Array<[number, number, number, number]> = [];
    for (let j = 0; j < n; j++) {
      if (named && !named[j]) continue;
      const cx = x0 + (j + 0.5) * colW;
      if (!labels.lines) {
        out.push([cx - 0.6 * font, 0, cx + 0.6 * font, Math.min(widths[j], labels.room)]);
        continue;
      }
      const w = Math.min(widths[j], labels.room);
      const y = (j % labels.lines) * labelLine(font);
      out.push([cx - w / 2, y, cx + w / 2, y + 1.1 * font]);
    }
    const width = x0 + colW * n + labelReach(labels, colW) + 8;
    return { out, width, axis: Math.round(font * 3.2), labels, colW };
  };
  const overlap = (a: number[], b: number[]) =>
    Math.min(a[2], b[2]) - Math.max(a[0], b[0]) > 0 && Math.min(a[3], b[3]) - Math.max(a[1], b[1]) > 0;

  it("never overlap, at any width, nor leave the canvas", () => {
    // token widths from 1 to 9 font-widths' worth of text, a fixed pseudo-random pattern
    for (const font of [12, 20])
      for (const n of [3, 7, 12, 19, 30, 60, 150])
        for (let room = 240; room <= 1200; room += 37) {
          const widths = Array.from({ length: n }, (_, j) => ((j * 37) % 9) * font * 0.55 + font * 0.6);
          const { out, width, axis, labels, colW } = boxes(n, room, font, widths, [n >> 1, (n >> 1) + 1]);
          for (let a = 0; a < out.length; a++) {
            expect(out[a][0], `label ${a} left of the axis`).toBeGreaterThanOrEqual(axis - 0.6 * font);
            expect(out[a][2]).toBeLessThanOrEqual(width);
            for (let b = a + 1; b < out.length; b++)
              expect(overlap(out[a], out[b]), `font ${font}, ${n} tokens in ${room} px: ${a} / ${b}`).toBe(
                false,
              );
          }
          // as wide as the room (columns are 8 px at least: more tokens than that makes the row wider)
          if (colW > 8) expect(width).toBeLessThanOrEqual(room + 8);
          // the labels' band holds them: level lines, or the turned labels' length
          const deepest = Math.max(0, ...out.map((b) => b[3]));
          expect(deepest).toBeLessThanOrEqual(labelHeight(labels, font));
        }
  });

  it("staggers over two lines only what one line cannot hold, and turns only what two cannot", () => {
    expect(rowColumns(12, 1100, 20, new Array(12).fill(60)).labels.lines).toBe(1);
    expect(rowColumns(12, 800, 20, new Array(12).fill(80)).labels.lines).toBe(2);
    expect(rowColumns(40, 800, 20, new Array(40).fill(80)).labels.lines).toBe(0);
  });

  it("names the marked tokens of a turned row and every k-th token clear of them", () => {
    expect(namedColumns(10, 3, [4]).flatMap((v, j) => (v ? [j] : []))).toEqual([0, 4, 9]);
    // two marked tokens closer than 3: the first is named, the second would overlap it
    expect(namedColumns(10, 3, [4, 5]).flatMap((v, j) => (v ? [j] : []))).toEqual([0, 4, 9]);
    expect(namedColumns(5, 1, []).every(Boolean)).toBe(true);
  });
});
