import { describe, expect, it } from "vitest";
import {
  barAt,
  barLayout,
  barX,
  finiteRange,
  fmt,
  gridCellAt,
  gridLayout,
  headLabel,
  nearestPoint,
  niceTicks,
  scatterLayout,
  statRange,
  textOn,
  toPixel,
} from "../src/draw/heads";

describe("labels and numbers", () => {
  it("names heads layer-head, the whole layer as -all", () => {
    expect(headLabel(2, 7)).toBe("2-7");
    expect(headLabel(3, -1)).toBe("3-all");
  });
  it("formats NaN as n/a", () => {
    expect(fmt(0.12345)).toBe("0.123");
    expect(fmt(Number.NaN)).toBe("n/a");
  });
  it("ranges ignore NaN and start shares at 0", () => {
    expect(finiteRange([0.2, Number.NaN, 0.7])).toEqual([0.2, 0.7]);
    expect(finiteRange([Number.NaN])).toEqual([0, 1]);
    expect(statRange([0.2, 0.7])).toEqual([0, 0.7]);
    expect(statRange([-1, 2])).toEqual([-1, 2]);
    expect(statRange([0, 0])).toEqual([0, 1]);
  });
  it("gives round ticks covering the range", () => {
    expect(niceTicks(0, 2.6, 5)).toEqual([0, 0.5, 1, 1.5, 2, 2.5]);
    expect(niceTicks(0, 1, 4)).toEqual([0, 0.5, 1]);
  });
  it("picks readable text colours", () => {
    expect(textOn([255, 255, 255])).toBe("#000000");
    expect(textOn([8, 48, 107])).toBe("#ffffff");
  });
});

describe("bars grouped by layer", () => {
  const l = barLayout({
    nLayers: 6,
    nHeads: 12,
    targetWidth: 728,
    plotH: 200,
    left: 50,
    top: 10,
    bottom: 40,
    right: 80,
  });
  it("fits the target width and keeps layers apart", () => {
    expect(l.plotW).toBeLessThanOrEqual(760);
    expect(l.barW).toBeGreaterThanOrEqual(2);
    expect(barX(l, 1, 0) - (barX(l, 0, 11) + l.barW)).toBeGreaterThan(l.barGap);
  });
  it("maps every bar's centre back to its (layer, head), not transposed", () => {
    for (const [layer, head] of [
      [0, 0],
      [2, 7],
      [5, 11],
    ]) {
      const x = barX(l, layer, head) + l.barW / 2;
      expect(barAt(l, x, l.y0 + l.plotH - 1)).toEqual({ layer, head });
      expect(barAt(l, x, l.y0 + 1)).toEqual({ layer, head }); // short bars: the whole column hits
    }
  });
  it("is null in the gaps and outside the plot", () => {
    expect(barAt(l, barX(l, 1, 0) - l.groupGap / 2, l.y0 + 5)).toBeNull();
    expect(barAt(l, barX(l, 0, 0) + 1, l.y0 - 5)).toBeNull();
    expect(barAt(l, barX(l, 5, 11) + l.barW + l.groupGap, l.y0 + 5)).toBeNull();
  });
});

describe("grid", () => {
  it("puts layers in rows and heads in columns", () => {
    const g = gridLayout(2, 3, 300, 40, 30);
    expect(g.cell).toBe(56);
    expect(gridCellAt(g, 40 + 2.5 * 56, 30 + 1.5 * 56)).toEqual({ layer: 1, head: 2 });
    expect(gridCellAt(g, 39, 31)).toBeNull();
    expect(gridCellAt(g, 40 + 3 * 56 + 1, 31)).toBeNull();
  });
});

describe("scatter", () => {
  it("fits points in the square with one scale and finds the nearest", () => {
    const xy = [-1, 0, 1, 0, 0, 0.5];
    const l = scatterLayout(xy, 400, 20);
    const [ax, ay] = toPixel(l, -1, 0);
    const [bx] = toPixel(l, 1, 0);
    expect(ax).toBeCloseTo(20);
    expect(bx).toBeCloseTo(380);
    const [, cy] = toPixel(l, 0, 0.5);
    expect(cy).toBeLessThan(ay); // up is up
    const px = [ax, ay, bx, ay, 200, cy];
    expect(nearestPoint(px, bx - 3, ay + 2, 8)).toBe(1);
    expect(nearestPoint(px, 200, 300, 8)).toBe(-1);
  });
});
