import { describe, expect, it } from "vitest";
import {
  type AblationDict,
  barRange,
  barSpan,
  canonical,
  cellText,
  formatDelta,
  formatValue,
  headState,
  movedText,
  sameAblation,
  setScale,
  sliderValue,
  spanCompare,
  toggleHead,
  toggleLayer,
  withMode,
} from "../src/views/ablation/state";

const empty: AblationDict = { edits: [] };

describe("ablation edits", () => {
  it("toggles a head on and off in the current mode", () => {
    const off = toggleHead(empty, "self", 2, 5, "uniform");
    expect(off.edits).toEqual([{ stack: "self", layer: 2, head: 5, mode: "uniform", scale: 1 }]);
    expect(toggleHead(off, "self", 2, 5, "uniform")).toEqual(empty);
    const zero = toggleHead(empty, "self", 0, 1, "zero");
    expect(zero.edits[0].scale).toBe(0);
  });

  it("sorts like Python's Ablation: stack, layer, whole layer first, head", () => {
    let ab = toggleHead(empty, "self", 3, 1, "zero");
    ab = toggleHead(ab, "self", 1, 4, "zero");
    ab = toggleLayer(ab, "self", 3, "zero");
    expect(ab.edits.map((e) => [e.layer, e.head])).toEqual([
      [1, 4],
      [3, null],
      [3, 1],
    ]);
  });

  it("keeps head edits under a disabled layer and shows the layer off", () => {
    const ab = toggleLayer(toggleHead(empty, "self", 1, 0, "zero"), "self", 1, "mean");
    expect(headState(ab, "self", 1, 2)).toEqual({ layerOff: true, mode: null, scale: 0 });
    const back = toggleLayer(ab, "self", 1, "mean");
    expect(headState(back, "self", 1, 0)).toEqual({ layerOff: false, mode: "zero", scale: 0 });
  });

  it("a scaled head in a scaled layer shows the product, as Python applies both", () => {
    const ab = {
      edits: [
        { stack: "self", layer: 2, head: null, mode: "scale", scale: 0.5 },
        { stack: "self", layer: 2, head: 1, mode: "scale", scale: 0.4 },
      ],
    };
    expect(headState(ab, "self", 2, 1).scale).toBeCloseTo(0.2);
    expect(headState(ab, "self", 2, 0).scale).toBeCloseTo(0.5);
  });

  it("scales: 1 drops the edit, 0 is the zero edit, in between a scale edit", () => {
    const half = setScale(empty, "self", 0, 0, 0.5);
    expect(half.edits).toEqual([{ stack: "self", layer: 0, head: 0, mode: "scale", scale: 0.5 }]);
    expect(sliderValue(half, "self", 0, 0)).toBe(0.5);
    expect(cellText(headState(half, "self", 0, 0))).toBe(".50");
    expect(setScale(half, "self", 0, 0, 1)).toEqual(empty);
    expect(setScale(half, "self", 0, 0, 0).edits[0].mode).toBe("zero");
    expect(sliderValue(toggleHead(empty, "self", 0, 0, "uniform"), "self", 0, 0)).toBe(0);
    expect(sliderValue(empty, "self", 0, 0)).toBe(1);
  });

  it("switching mode rewrites disabled heads and layers, not scales", () => {
    let ab = toggleHead(empty, "self", 0, 0, "zero");
    ab = setScale(ab, "self", 0, 1, 0.3);
    ab = toggleLayer(ab, "self", 1, "zero");
    const u = withMode(ab, "uniform");
    expect(u.edits.map((e) => `${e.layer}/${e.head}/${e.mode}/${e.scale}`)).toEqual([
      "0/0/uniform/1",
      "0/1/scale/0.3",
      "1/null/uniform/1",
    ]);
  });

  it("compares ablations in canonical form", () => {
    const a = canonical({
      edits: [
        { stack: "self", layer: 1, head: 0, mode: "zero", scale: 0 },
        { stack: "self", layer: 0, head: 0, mode: "scale", scale: 1 },
      ],
    });
    expect(a.edits).toHaveLength(1);
    expect(sameAblation(a, { edits: [{ stack: "self", layer: 1, head: 0, mode: "zero", scale: 0 }] })).toBe(
      true,
    );
  });
});

describe("bars and numbers", () => {
  it("draws bars from zero within a range that holds zero", () => {
    expect(barRange([0.2, 0.8, null])).toEqual([0, 0.8]);
    expect(barRange([-0.5, 0.5])).toEqual([-0.5, 0.5]);
    expect(barRange([])).toEqual([0, 1]);
    expect(barSpan(0.4, 0, 0.8)).toEqual({ left: 0, width: 0.5 });
    const neg = barSpan(-0.5, -0.5, 0.5);
    expect(neg.left).toBeCloseTo(0);
    expect(neg.width).toBeCloseTo(0.5);
  });

  it("prints 4 decimals, integers (ranks) as they are, deltas with a sign", () => {
    expect(formatValue(0.97901)).toBe("0.9790");
    expect(formatValue(3)).toBe("3");
    expect(formatValue(null)).toBe("–");
    expect(formatDelta(-0.25)).toBe("−0.2500");
    expect(formatDelta(0.01)).toBe("+0.0100");
  });
});

describe("spanCompare (the selected rows of the maps, before and after)", () => {
  // 3 queries x 2 keys, before and after (row-major)
  const before = Float32Array.from([1, 0, 0.5, 0.5, 0.2, 0.8]);
  const after = Float32Array.from([0.5, 0.5, 0.5, 0.5, Number.NaN, 1]);
  it("means or sums the selected rows and measures how much attention moved", () => {
    const m = spanCompare(before, after, 2, [0, 1], "mean");
    expect(Array.from(m.before)).toEqual([0.75, 0.25]);
    expect(Array.from(m.after)).toEqual([0.5, 0.5]);
    expect(m.moved).toBeCloseTo(0.25, 6);
    const s = spanCompare(before, after, 2, [0, 1], "sum");
    expect(s.moved).toBeCloseTo(0.5, 6);
  });
  it("counts a masked key (NaN) as 0", () => {
    const m = spanCompare(before, after, 2, [2], "mean");
    expect(Array.from(m.after)).toEqual([0, 1]);
    expect(m.moved).toBeCloseTo(0.2, 6);
  });
  it("names the rows in the caption, nothing without a selection", () => {
    expect(movedText(["a", "b", "c"], [1, 2], 0.25)).toBe(" · rows b c (1–2): ½ Σ |after − before| = 0.250");
    expect(movedText(["a"], [], 0.25)).toBe("");
  });
});
