import { describe, expect, it } from "vitest";
import { lensRows, lensShade } from "../src/draw/lens";

// Two tables (steps), two rows (embeddings, layer 1), k = 2: probs[t][r][j] = t + r / 10 + j / 100 (hand-made).
const probs = {
  shape: [2, 2, 2],
  data: Float32Array.from([0, 0.01, 0.1, 0.11, 1, 1.01, 1.1, 1.11]),
};
const tokens = [
  [
    ["a", "b"],
    ["c", "d"],
  ],
  [
    ["e", "f"],
    ["g", "h"],
  ],
];

describe("lensRows", () => {
  it("reads table t's rows in (tables, rows, k) order", () => {
    const rows = lensRows({ tokens }, probs, 1);
    expect(rows.map((r) => r.map(([t]) => t))).toEqual([
      ["e", "f"],
      ["g", "h"],
    ]);
    expect(rows[1][0][1]).toBeCloseTo(1.1, 6);
    expect(lensRows({ tokens }, probs, 0)[0][1][1]).toBeCloseTo(0.01, 6);
  });
  it("gives nothing for a table out of range", () => {
    expect(lensRows({ tokens }, probs, 2)).toEqual([]);
    expect(lensRows({ tokens }, probs, -1)).toEqual([]);
  });
});

describe("lensShade", () => {
  it("mixes in up to 70 % of the accent, clamped", () => {
    expect(lensShade(1)).toContain("70%");
    expect(lensShade(0.5)).toContain("35%");
    expect(lensShade(-1)).toContain(" 0%");
    expect(lensShade(3)).toContain("70%");
  });
});
