import { describe, expect, it } from "vitest";
import { heatmapLayout } from "../src/draw/layout";
import { visibleCells, zoomTo } from "../src/draw/zoom";

const l = heatmapLayout({
  nq: 2048,
  nk: 2048,
  labelWidth: 60,
  labelHeight: 50,
  maxGrid: 512,
  minLabelCell: 0,
});

describe("zoomTo (AttentionHeatmap.zoom from Python)", () => {
  it("shows the asked region whole and centred", () => {
    const v = visibleCells(l, zoomTo(l, 1000, 1010, 200, 264));
    expect(v.k0).toBeLessThanOrEqual(200);
    expect(v.k1).toBeGreaterThanOrEqual(264);
    expect(v.q0).toBeLessThanOrEqual(1000);
    expect(v.q1).toBeGreaterThanOrEqual(1010);
    expect(v.k1 - v.k0).toBeLessThan(80); // zoomed in to about the 64 keys, not the whole matrix
  });
  it("stays inside the matrix at its edges", () => {
    const v = visibleCells(l, zoomTo(l, 2040, 2048, 0, 16));
    expect(v.q1).toBe(2048);
    expect(v.k0).toBe(0);
  });
});
