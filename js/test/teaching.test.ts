import { describe, expect, it } from "vitest";
import {
  divergingPixels,
  divisors,
  formatBytes,
  panelCellAt,
  panelGeometry,
  parsePositions,
  tickIndices,
} from "../src/shared/teaching";

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

describe("divergingPixels", () => {
  it("paints zero white-ish, signs on opposite sides, NaN grey", () => {
    const px = divergingPixels(new Float32Array([-1, 0, 1, Number.NaN]), 1, 4, 1, "rdbu");
    for (const v of [px[4], px[5], px[6]]) expect(v).toBeGreaterThanOrEqual(245); // white-ish, as matplotlib draws 0
    expect(px[2]).toBeGreaterThan(px[0]); // negative: blue
    expect(px[8]).toBeGreaterThan(px[10]); // positive: red
    expect([px[12], px[13], px[14], px[15]]).toEqual([220, 220, 220, 255]);
  });
});

describe("tickIndices", () => {
  it("keeps the ends and picks round steps", () => {
    expect(tickIndices(32, 5)).toEqual([0, 10, 20, 31]);
    expect(tickIndices(8, 5)).toEqual([0, 2, 4, 6, 7]);
    expect(tickIndices(1)).toEqual([0]);
  });
});

describe("formatBytes / divisors / parsePositions", () => {
  it("formats binary sizes", () => {
    expect(formatBytes(2 ** 31)).toBe("2 GiB");
    expect(formatBytes(2 ** 26)).toBe("64 MiB");
    expect(formatBytes(1536)).toBe("1.50 KiB");
    expect(formatBytes(12)).toBe("12 B");
  });
  it("lists the kv-head counts that divide the query heads", () => {
    expect(divisors(12)).toEqual([1, 2, 3, 4, 6, 12]);
  });
  it("reads positions, dropping junk and out-of-range ones", () => {
    expect(parsePositions("6, 0 x 6;99 -1 3.5", 12)).toEqual([0, 6]);
  });
});
