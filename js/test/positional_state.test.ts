// PositionalExplorer's state (views/positional/state.ts): pure functions, checked against hand-computed cases.
import { describe, expect, it } from "vitest";
import {
  cellTip,
  controlsFor,
  divergingPixels,
  fittedSide,
  headsChange,
  legendEnds,
  noteWidth,
  positionalTitle,
} from "../src/views/positional/state";

describe("divergingPixels", () => {
  it("paints zero white-ish, signs on opposite sides, NaN grey", () => {
    const px = divergingPixels(new Float32Array([-1, 0, 1, Number.NaN]), 1, 4, 1, "rdbu");
    for (const v of [px[4], px[5], px[6]]) expect(v).toBeGreaterThanOrEqual(245); // white-ish, as matplotlib draws 0
    expect(px[2]).toBeGreaterThan(px[0]); // negative: blue
    expect(px[8]).toBeGreaterThan(px[10]); // positive: red
    expect([px[12], px[13], px[14], px[15]]).toEqual([220, 220, 220, 255]);
  });
});

describe("controls", () => {
  it("shows each encoding's own controls", () => {
    expect(controlsFor("sinusoidal", false)).toEqual({ width: "d_model", similarity: true, heads: false });
    expect(controlsFor("learned", false)).toEqual({ width: "d_model", similarity: true, heads: false });
    expect(controlsFor("learned", true)).toEqual({ width: null, similarity: true, heads: false }); // a model's table
    expect(controlsFor("rope", true)).toEqual({ width: "head width d", similarity: false, heads: false });
    expect(controlsFor("alibi", false)).toEqual({ width: null, similarity: false, heads: true });
    expect(controlsFor("t5", false)).toEqual({ width: null, similarity: false, heads: true });
  });
  it("keeps the head below the head count", () => {
    expect(headsChange(4, 6)).toEqual({ n_heads: 4, head: 3 });
    expect(headsChange(8, 2)).toEqual({ n_heads: 8, head: 2 });
  });
});

describe("panels", () => {
  it("fit both side by side in the box, between 60 px and the natural side", () => {
    // across: (800 - 18) / 2 - 52 - 12 = 327; down: 500 - 100 - 8 - 42 = 350
    expect(fittedSide(false, { width: 800, height: 500 }, 100, 18)).toBe(327);
    // lecture: across (782 / 2) - 70 - 12 = 309; down 500 - 100 - 8 - 56 = 336
    expect(fittedSide(true, { width: 800, height: 500 }, 100, 18)).toBe(309);
    expect(fittedSide(false, { width: 2000, height: 2000 }, 100, 18)).toBe(340);
    expect(fittedSide(false, { width: 100, height: 100 }, 100, 18)).toBe(60);
    expect(noteWidth(null)).toBe(420);
    expect(noteWidth(200)).toBe(360);
    expect(noteWidth(320)).toBe(390);
  });

  it("label the legend, the title and the tooltip", () => {
    expect(legendEnds({ legend: ["far", "near"] }, 0.5)).toEqual(["far", "near"]);
    expect(positionalTitle("learned", "bert-base", 64)).toBe(
      "Positional encodings · learned (BERT) · bert-base · 64 positions",
    );
    expect(positionalTitle("t5", "x", 32)).toBe("Positional encodings · T5 relative buckets · 32 positions");
    const panel = { rows: "query", cols: "offset", col_start: -3, value: "bias", extra_name: "bucket" };
    expect(cellTip(panel, -0.5, 7, 1, 0)).toBe("query 1, offset -3\nbias -0.5000\nbucket 7");
    expect(cellTip({ ...panel, extra_name: undefined }, Number.NaN, 0, 2, 4)).toBe(
      "query 2, offset 1\nbias masked\nextra 0",
    );
    expect(cellTip(panel, 0.25, null, 0, 3)).toBe("query 0, offset 0\nbias 0.2500");
  });
});
