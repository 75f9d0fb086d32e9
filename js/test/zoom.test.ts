import { describe, expect, it } from "vitest";
import { heatmapLayout } from "../src/draw/layout";
import {
  NO_ZOOM,
  cellAtZoom,
  clampZoom,
  panBy,
  rowAtZoom,
  tilesFor,
  visibleCells,
  zoomAt,
} from "../src/draw/zoom";

const l = heatmapLayout({
  nq: 2048,
  nk: 2048,
  labelWidth: 60,
  labelHeight: 50,
  maxGrid: 512,
  minLabelCell: 0,
});

describe("zoom and pan", () => {
  it("shows the whole matrix at zoom 1 and needs no tiles for a long input", () => {
    expect(visibleCells(l, NO_ZOOM)).toEqual({ q0: 0, q1: 2048, k0: 0, k1: 2048 });
    expect(tilesFor(l, NO_ZOOM)).toEqual([]);
  });

  it("keeps the cell under the cursor in place when zooming", () => {
    const x = l.x0 + 100;
    const y = l.y0 + 300;
    const before = cellAtZoom(l, NO_ZOOM, x, y);
    const z = zoomAt(l, NO_ZOOM, 8, x, y);
    expect(z.z).toBe(8);
    expect(cellAtZoom(l, z, x, y)).toEqual(before);
  });

  it("clamps to the matrix and to [1, max zoom]", () => {
    expect(clampZoom(l, { z: 0.2, q0: -5, k0: 9999 })).toEqual(NO_ZOOM);
    const far = clampZoom(l, { z: 1e6, q0: 1e6, k0: 1e6 });
    expect(far.z * l.cell).toBeCloseTo(40);
    expect(far.q0 + 2048 / far.z).toBeCloseTo(2048);
  });

  it("pans opposite to the drag, in cells", () => {
    const z = clampZoom(l, { z: 4, q0: 500, k0: 500 });
    const p = panBy(l, z, 2 * l.cell * 4, -3 * l.cell * 4);
    expect(p.k0).toBeCloseTo(498);
    expect(p.q0).toBeCloseTo(503);
  });

  it("asks for the aligned 256-cell tiles covering a small visible region (non-square too)", () => {
    const z = clampZoom(l, { z: 8, q0: 300, k0: 1000 });
    const tiles = tilesFor(l, z);
    expect(tiles.map((t) => [t.q0, t.k0])).toEqual([
      [256, 768],
      [256, 1024],
      [512, 768],
      [512, 1024],
    ]);
    const wide = heatmapLayout({ nq: 5, nk: 300, labelWidth: 0, labelHeight: 0, minLabelCell: 0 });
    expect(tilesFor(wide, NO_ZOOM).map((t) => [t.q1, t.k1])).toEqual([
      [5, 256],
      [5, 300],
    ]);
  });
});

describe("rowAtZoom", () => {
  const small = heatmapLayout({ nq: 4, nk: 6, labelWidth: 40, labelHeight: 30, maxGrid: 120, maxCell: 20 });
  it("finds the query row under a cell or its label, unzoomed and zoomed", () => {
    expect(small.cell).toBe(20); // 6 keys in 120 px
    expect(rowAtZoom(small, NO_ZOOM, small.x0 + 5, small.y0 + 45)).toBe(2);
    expect(rowAtZoom(small, NO_ZOOM, 2, small.y0 + 5)).toBe(0); // on the row's label
    // zoom 2 from row 2: rows of 40 px, so 45 px down is row 2 + 1 and 5 px down row 2
    expect(rowAtZoom(small, { z: 2, q0: 2, k0: 0 }, small.x0 + 5, small.y0 + 45)).toBe(3);
    expect(rowAtZoom(small, { z: 2, q0: 2, k0: 0 }, small.x0 + 5, small.y0 + 5)).toBe(2);
  });
  it("is null above or below the grid and right of it", () => {
    expect(rowAtZoom(small, NO_ZOOM, small.x0 + 5, small.y0 - 1)).toBeNull();
    expect(rowAtZoom(small, NO_ZOOM, small.x0 + 5, small.y0 + 80)).toBeNull();
    expect(rowAtZoom(small, NO_ZOOM, small.x0 + 121, small.y0 + 5)).toBeNull();
  });
});
