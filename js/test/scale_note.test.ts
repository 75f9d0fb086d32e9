import { describe, expect, it } from "vitest";
import { fixedTop, scaleNote } from "../src/views/heatmap/state";

describe("heatmap colour scale legend", () => {
  it("a fixed top is a positive finite number; anything else is per map", () => {
    expect(fixedTop(1)).toBe(1);
    expect(fixedTop(null)).toBeNull();
    expect(fixedTop(undefined)).toBeNull();
    expect(fixedTop(0)).toBeNull();
    expect(fixedTop(Number.NaN)).toBeNull();
  });
  it("the legend says fixed or per map", () => {
    expect(scaleNote(1)).toContain("fixed");
    expect(scaleNote(null)).toContain("per-map");
  });
});
