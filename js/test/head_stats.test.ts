import { describe, expect, it } from "vitest";
import { statSlice } from "../src/draw/head_stats";

describe("statSlice", () => {
  it("picks one statistic's (L, H) block out of (S, L, H)", () => {
    const values = Float32Array.from({ length: 12 }, (_, i) => i); // S=2, L=2, H=3
    expect(Array.from(statSlice(values, ["entropy", "sep"], [2, 3], "sep") ?? [])).toEqual([
      6, 7, 8, 9, 10, 11,
    ]);
    expect(Array.from(statSlice(values, ["entropy", "sep"], [2, 3], "entropy") ?? [])).toEqual([
      0, 1, 2, 3, 4, 5,
    ]);
  });
  it("gives null for a statistic the source lacks", () => {
    expect(statSlice(new Float32Array(6), ["entropy"], [2, 3], "cls")).toBeNull();
  });
});
