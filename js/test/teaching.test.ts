import { describe, expect, it } from "vitest";
import { panelCellAt, panelGeometry, tickIndices } from "../src/draw/teaching";

describe("panelGeometry / panelCellAt", () => {
  it("fits a non-square [position, dim] matrix and maps pixels back without a transpose", () => {
    const g = panelGeometry(5, 7, 140, 100, 40, 8);
    expect(g.cw).toBe(20);
    expect(g.ch).toBe(20);
    expect(g.w).toBe(140);
    expect(g.h).toBe(100);
    expect(panelCellAt(g, 40 + 6 * 20 + 1, 8 + 4 * 20 + 1)).toEqual({ row: 4, col: 6 });
    expect(panelCellAt(g, 39, 10)).toBeNull();
    expect(panelCellAt(g, 40 + 140, 10)).toBeNull();
  });
  it("caps cells and lets long axes go below a pixel", () => {
    const g = panelGeometry(2, 512, 340, 340, 0, 0, 28);
    expect(g.ch).toBe(28);
    expect(g.cw).toBeCloseTo(340 / 512);
  });
});

describe("tickIndices", () => {
  it("keeps the ends and picks round steps", () => {
    expect(tickIndices(32, 5)).toEqual([0, 10, 20, 31]);
    expect(tickIndices(8, 5)).toEqual([0, 2, 4, 6, 7]);
    expect(tickIndices(1)).toEqual([0]);
  });
});
