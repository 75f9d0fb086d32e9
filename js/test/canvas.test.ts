import { describe, expect, it } from "vitest";
import { fitLabel, labelPlan } from "../src/draw/canvas";
import type { Theme } from "../src/shared/theme";

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

describe("labelPlan", () => {
  const light = { name: "light", font: 12 } as Theme;
  const lecture = { name: "lecture", font: 20 } as Theme;
  it("names every token in the light theme, shrinking the label to the cell", () => {
    const plan = labelPlan(light, 9);
    expect(plan.size).toBe(8);
    expect([0, 1, 2, 3].every((i) => plan.named(i))).toBe(true);
  });
  it("keeps lecture labels at 14 px and names every k-th token on small cells", () => {
    // 12 px cells (32 tokens fitted to a 384 px map): 14 px labels need ceil(14 * 1.15 / 12) = 2 cells each
    const plan = labelPlan(lecture, 12);
    expect(plan.size).toBe(14);
    expect(plan.every).toBe(2);
    expect([0, 1, 2, 3, 4].map((i) => plan.named(i))).toEqual([true, false, true, false, true]);
    // the highlighted token always, its neighbours closer than 2 cells not (they would overlap it)
    expect([0, 1, 2, 3, 4].map((i) => plan.named(i, 3))).toEqual([true, false, false, true, false]);
    // big cells: the theme's font and every token
    const big = labelPlan(lecture, 30);
    expect([big.size, big.every]).toEqual([20, 1]);
  });
});
