import { describe, expect, it } from "vitest";
import {
  type GenerationMeta,
  LENS_ROOM,
  MIN_MAP,
  captionText,
  clampStep,
  currentIndex,
  finiteMax,
  mapGeometry,
  rowAtY,
  selectable,
  selectionText,
  shareCaption,
  shareHeight,
  shareStepAt,
  shareSubject,
  shareTop,
  sharing,
  stepRow,
  textLines,
  titleText,
  topkRows,
  viewKey,
} from "../src/views/generation/state";

const DECODER: GenerationMeta = {
  title: "tiny",
  kinds: ["self"],
  shapes: { self: [2, 4] },
  prompt: ["The", " cat"],
  generated: [" sat", " on", " mat"],
  keys: { self: ["The", " cat", " sat", " on"] },
  first_row: 1,
  encoder_decoder: false,
  topk_tokens: [
    [" sat", " ran"],
    [" on", " in"],
    [" mat", " the"],
  ],
  text: "The cat sat on mat",
  n_selectable: 4, // the last generated token is never fed back
  roles: [],
};

const SEQ2SEQ: GenerationMeta = {
  ...DECODER,
  kinds: ["encoder", "decoder", "cross"],
  prompt: ["Hallo", " Welt"],
  generated: [" Hello", " world"],
  keys: { decoder: ["<pad>", " Hello"], cross: ["Hallo", " Welt"] },
  encoder_decoder: true,
  n_selectable: 2,
};

describe("generation view state", () => {
  it("names a matrix kind/layer/head and clamps a step to the steps", () => {
    expect(viewKey({ kind: "cross", layer: 2, head: -1 })).toBe("cross/2/-1");
    expect(clampStep(-3, 5)).toBe(0);
    expect(clampStep(9, 5)).toBe(4);
    expect(clampStep(2, 5)).toBe(2);
  });

  it("lays a decoder's text out on one line, its last generated token not selectable", () => {
    const [line, ...rest] = textLines(DECODER);
    expect(rest).toEqual([]);
    expect(line.label).toBe("");
    expect(line.tokens.map((t) => [t.line, t.index, t.pos])).toEqual([
      [0, 0, 0],
      [0, 1, 1],
      [1, 0, 2],
      [1, 1, 3],
      [1, 2, null],
    ]);
    expect(selectable(DECODER)).toEqual(["The", " cat", " sat", " on"]);
    expect(currentIndex(false, 1)).toBe(1);
  });

  it("lays an encoder-decoder's source and output on two lines, the output after its start token", () => {
    const [source, output] = textLines(SEQ2SEQ);
    expect(source.label).toBe("source");
    expect(source.tokens.map((t) => t.pos)).toEqual([0, 1]);
    expect(output.label).toBe("output");
    expect(output.tokens.map((t) => t.text)).toEqual(["<pad>", " Hello", " world"]);
    expect(output.tokens.every((t) => t.pos === null)).toBe(true);
    expect(selectable(SEQ2SEQ)).toEqual(["Hallo", " Welt"]);
    expect(currentIndex(true, 1)).toBe(2);
  });

  it("takes a step's row and the largest finite weight", () => {
    const m = { data: new Float32Array([0.5, Number.NaN, 0.2, 0.8]), shape: [2, 2] };
    expect(Array.from(stepRow(m, 1)).map((v) => v.toFixed(1))).toEqual(["0.2", "0.8"]);
    expect(finiteMax(m.data)).toBeCloseTo(0.8);
    expect(finiteMax([Number.NaN, Number.POSITIVE_INFINITY])).toBe(0);
  });

  it("says which tokens are selected, with positions for one span", () => {
    const toks = ["a", "b", "c", "d"];
    expect(selectionText(toks, [1, 2, 3])).toBe("3 tokens: b c d (1–3)");
    expect(selectionText(toks, [2])).toBe("1 token: c (2)");
    expect(selectionText(toks, [0, 2])).toBe("2 tokens: a · c");
  });

  it("shows the share panel only for a selection Python answered", () => {
    expect(sharing([1], { key: "k", error: "" })).toBe(true);
    expect(sharing([], { key: "k", error: "" })).toBe(false);
    expect(sharing([1], {})).toBe(false);
    expect(sharing(undefined, undefined)).toBe(false);
    expect(shareHeight("light", null)).toBe(150);
    expect(shareHeight("lecture", null)).toBe(190);
    expect(shareHeight("lecture", 400)).toBe(152); // 0.38 of the box
    expect(shareHeight("light", 100)).toBe(100); // never under 100
    expect(shareTop([0.2, 0.7], true)).toBe(1);
    expect(shareTop(new Float32Array([0.25, Number.NaN, 0.5]), false)).toBe(0.5);
    expect(shareTop([], false)).toBe(1);
    expect(shareCaption("2 tokens: a b (0–1)", true, "layer", 3)).toBe(
      "share of each step's attention on 2 tokens: a b (0–1) · each layer, mean of its heads · click a step to go there",
    );
    expect(shareCaption("x", false, "head", 3)).toContain("mean weight per token of x · heads of layer 3");
  });

  it("shows a line per role of a chat prompt with nothing selected, the roles named in the caption", () => {
    expect(sharing([], { key: "roles/sum/role/1", error: "" }, "role")).toBe(true);
    expect(sharing([], { key: "k", error: "" }, "layer")).toBe(false);
    const roles: Array<[string, number, number]> = [
      ["system", 0, 4],
      ["user", 4, 9],
      ["assistant", 9, 12],
    ];
    expect(shareSubject(roles, "role", "0 tokens: ")).toBe(
      "each role (system 0–3 · user 4–8 · assistant 9–11)",
    );
    expect(shareSubject(roles, "layer", "1 token: a (0)")).toBe("1 token: a (0)");
    expect(shareCaption("each role", true, "role", 1)).toContain("each role · layer 1, mean of its heads");
  });

  it("finds the step under a click on the share panel and on the map", () => {
    const l = { x0: 40, w: 200, steps: 5 };
    expect(shareStepAt(l, 40)).toBe(0);
    expect(shareStepAt(l, 140)).toBe(2); // halfway: step 2 of 0..4
    expect(shareStepAt(l, 240)).toBe(4);
    expect(shareStepAt(l, 243)).toBe(4); // a little past the end still counts
    expect(shareStepAt(l, 300)).toBeNull();
    expect(shareStepAt({ ...l, steps: 0 }, 100)).toBeNull();
    const map = { y0: 60, cellH: 10, rows: 3 };
    expect(rowAtY(map, 59)).toBeNull();
    expect(rowAtY(map, 60)).toBe(0);
    expect(rowAtY(map, 89)).toBe(2);
    expect(rowAtY(map, 90)).toBeNull();
  });

  it("sizes the map's cells to the room, with labels only on cells of 10 px or more", () => {
    const base = {
      rows: 4,
      cols: 5,
      font: 12,
      maxCell: 30,
      maxGrid: 600,
      roomW: 1000,
      fitted: null,
      panelH: 0,
    };
    // label font 10: margins 70 and 60; cells capped at 30 (600 / 5 = 120 would fit); 4 rows of 30 px would make a
    // map 188 px tall, so rows of (240 - 60 - 8) / 4 = 43 px make it MIN_MAP tall
    expect(mapGeometry(base)).toEqual({
      cell: 30,
      cellH: 43,
      showLabels: true,
      x0: 70,
      y0: 60,
      width: 228,
      height: 240,
    });
    // fitted in a 100 px box: (100 - 60 - 8) / 4 rows = 8 px cells, too small for labels: 8 px margins; the box
    // holds no taller rows
    const fitted = mapGeometry({ ...base, fitted: { width: 600, height: 100 }, panelH: 0 });
    expect(fitted).toEqual({ cell: 8, cellH: 8, showLabels: false, x0: 8, y0: 8, width: 56, height: 48 });
    // the share panel takes its height from the box, but the map keeps MIN_FIT_MAP (340 px): (340 - 60 - 8) / 4 = 68,
    // so the 30 px cap holds; before, 600 - 560 = 40 px were left and the map shrank to 3 px cells
    const shared = mapGeometry({ ...base, fitted: { width: 600, height: 600 }, panelH: 560 });
    expect(shared.cell).toBe(30);
    expect(Math.min(shared.width, shared.height)).toBeGreaterThanOrEqual(188);
    // the lens table beside the map keeps LENS_ROOM (400) instead of TOPK_ROOM (300): fitted 600 px wide,
    // (600 - 300 - 70 - 8) / 5 = 44 → the 30 px cap; (600 - 400 - 70 - 8) / 5 = 24 px cells
    const box = { width: 600, height: 600 };
    expect(mapGeometry({ ...base, fitted: box }).cell).toBe(30);
    expect(mapGeometry({ ...base, fitted: box, side: LENS_ROOM }).cell).toBe(24);
    // unfitted: the room beside the map is taken from the row's width the same way (1000 - 400 + 40 = 640 ≥ 600)
    expect(mapGeometry({ ...base, side: LENS_ROOM }).cell).toBe(30);
    expect(mapGeometry({ ...base, roomW: 500, side: LENS_ROOM }).cell).toBe(28);
  });

  it("makes a map of few steps MIN_MAP tall, its keys labelled (thinned) in the lecture theme", () => {
    // notebook 06's chat view: 6 steps over 53 keys, lecture font 20 (labels 18: margins 126 x 108), fitted beside
    // the top-k list in the output with the file browser open (830 px) and closed (1080 px); the share panel under
    const chat = { rows: 6, cols: 53, font: 20, maxCell: 48, maxGrid: 760, panelH: 260, thin: true };
    for (const width of [830, 1080]) {
      const g = mapGeometry({ ...chat, roomW: width, fitted: { width, height: 560 } });
      // columns by the width: (830 - 300 - 126 - 8) / 53 = 7 px, (1080 - 434) / 53 = 12 px
      expect(g.cell).toBe(width === 830 ? 7 : 12);
      expect(g.showLabels).toBe(true); // 7 px columns: every 3rd key named (labelPlan), not none
      // 21 px rows: each step's token named at 18 px (labelPlan names every row from 1.15 x 18 = 21 px)
      expect(g.cellH).toBe(Math.ceil((MIN_MAP - 108 - 8) / 6));
      expect(g.cellH).toBe(21);
      expect(g.height).toBeGreaterThanOrEqual(MIN_MAP);
      expect(g.width).toBeGreaterThanOrEqual(MIN_MAP);
    }
    // without `thin` (the light theme) small cells keep no labels, and the rows still make the map MIN_MAP tall
    const light = mapGeometry({ ...chat, thin: false, roomW: 830, fitted: { width: 830, height: 560 } });
    // tall but within the box: rows of (240 - 16) / 6 = 38 px would do, the fitted 340 px leave (340 - 116) / 6 = 37
    expect([light.showLabels, light.y0, light.cellH, light.height]).toEqual([false, 8, 37, 8 + 6 * 37 + 8]);
    // many steps: rows as tall as the columns are wide (square cells), as before
    const long = mapGeometry({ ...chat, rows: 40, cols: 40, roomW: 1080, fitted: null, panelH: 0 });
    expect(long.cellH).toBe(long.cell);
  });

  it("writes the title, the caption and the top-k rows", () => {
    // user text is isolated (FSI … PDI) so a right-to-left name cannot reorder the line
    expect(titleText(DECODER, 1)).toBe("\u2068tiny\u2069 · generated token 2 of 3");
    expect(captionText(DECODER, { kind: "self", layer: 1, head: -1, step: 0 })).toBe(
      "step=0: the query that wrote \u2068·sat\u2069, self-attention, head 1-all (mean over heads). Grey: tokens not written yet.",
    );
    expect(captionText(SEQ2SEQ, { kind: "cross", layer: 0, head: 2, step: 1 })).toContain(
      "cross-attention over the source, head 0-2.",
    );
    const probs = { data: new Float32Array([0.6, 0.3, 0.7, 0.2, 0.9, 0.05]), shape: [3, 2] };
    const rows = topkRows(probs, DECODER.topk_tokens, DECODER.generated[1], 1);
    expect(rows.map((r) => [r.token, r.p.toFixed(1), r.chosen])).toEqual([
      [" on", "0.7", true],
      [" in", "0.2", false],
    ]);
  });
});
