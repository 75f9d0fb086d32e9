import { describe, expect, it } from "vitest";
import { cellAt, cellCenter, heatmapLayout, tokenLabel } from "../src/draw/layout";

describe("heatmapLayout", () => {
  it("keeps cells square, integral and capped, with room for labels", () => {
    const l = heatmapLayout({ nq: 5, nk: 7, labelWidth: 60, labelHeight: 50, maxGrid: 560, maxCell: 28 });
    expect(l.cell).toBe(28);
    expect(l.showLabels).toBe(true);
    expect(l.x0).toBe(60);
    expect(l.y0).toBe(50);
    expect(l.width).toBe(60 + 7 * 28 + 4);
    expect(l.height).toBe(50 + 5 * 28 + 4);
  });

  it("shrinks cells for long inputs and hides labels when too small", () => {
    const l = heatmapLayout({ nq: 512, nk: 512, labelWidth: 60, labelHeight: 50, maxGrid: 560 });
    expect(l.cell).toBeCloseTo(560 / 512); // below 2 px a cell may be fractional: the grid still fills 560 px
    expect(l.showLabels).toBe(false);
    const big = heatmapLayout({ nq: 4096, nk: 4096, labelWidth: 60, labelHeight: 50, maxGrid: 560 });
    expect(big.cell).toBeCloseTo(560 / 4096);
  });
});

describe("cellAt", () => {
  const l = heatmapLayout({ nq: 5, nk: 7, labelWidth: 60, labelHeight: 50, maxCell: 20 });
  it("maps the centre of a cell back to it (query row, key column: no transpose)", () => {
    const c = cellCenter(l, 3, 6);
    expect(cellAt(l, c.x, c.y)).toEqual({ q: 3, k: 6 });
  });
  it("is null outside the grid", () => {
    expect(cellAt(l, 10, 10)).toBeNull();
    expect(cellAt(l, l.x0 + 7 * l.cell + 1, l.y0 + 1)).toBeNull();
    expect(cellAt(l, l.x0 + 1, l.y0 + 5 * l.cell + 1)).toBeNull();
  });
});

describe("tokenLabel", () => {
  it("shows whitespace and shortens long tokens", () => {
    expect(tokenLabel(" cat")).toBe("·cat");
    expect(tokenLabel("\n")).toBe("⏎");
    expect(tokenLabel("")).toBe("∅");
    expect(tokenLabel("abcdefghijklmnopqrstuvwxyz", 10)).toBe("abcdefghi…");
  });
});
