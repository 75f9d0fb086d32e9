import { describe, expect, it } from "vitest";
import { fitLabel } from "../src/draw/canvas";

// 10 px per character: a label of n characters is 10n px wide.
const ctx = { measureText: (s: string) => ({ width: Array.from(s).length * 10 }) as TextMetrics };

describe("fitLabel", () => {
  it("keeps a label that fits", () => {
    expect(fitLabel(ctx, "mat", 30)).toBe("mat");
  });
  it("cuts a label wider than its room, with an ellipsis, to the longest prefix that fits", () => {
    expect(fitLabel(ctx, "<img src=x onerror", 100)).toBe("<img src=…");
    expect(fitLabel(ctx, "unbelievable", 60)).toBe("unbel…");
  });
  it("does not stack ellipses on a label tokenLabel already cut", () => {
    expect(fitLabel(ctx, "</script><scr…", 60)).toBe("</scr…");
  });
  it("leaves an ellipsis when nothing else fits", () => {
    expect(fitLabel(ctx, "word", 5)).toBe("…");
  });
});
