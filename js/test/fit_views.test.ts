import { describe, expect, it } from "vitest";
import { fitGridWidth, fitLength, fitZoom } from "../src/draw/fit_views";
import { gridLayout } from "../src/draw/heads";

describe("fitGridWidth", () => {
  const g = { nLayers: 12, nHeads: 12, left: 40, top: 46 };
  it("leaves the grid alone when not fitting", () => {
    expect(fitGridWidth(600, null, g)).toBe(600);
  });
  it("keeps a 12 x 12 grid inside a 950 x 470 room: square cells sized by the height", () => {
    const w = fitGridWidth(600, { width: 950, height: 470 }, g);
    // (470 - 46 - 4) / 12 = 35 px cells, 12 of them across
    expect(w).toBe(35 * 12);
    const l = gridLayout(12, 12, w, g.left, g.top, 200, 6);
    expect(l.height).toBeLessThanOrEqual(470);
    expect(l.width).toBeLessThanOrEqual(950);
  });
  it("only shrinks, and never below 6 px cells", () => {
    expect(fitGridWidth(300, { width: 2000, height: 2000 }, g)).toBe(300);
    expect(fitGridWidth(600, { width: 100, height: 50 }, g)).toBe(72);
  });
});

describe("fitLength", () => {
  it("takes the room less the chrome, at most the natural length, at least the minimum", () => {
    expect(fitLength(300, undefined, 50)).toBe(300);
    expect(fitLength(300, 200, 50)).toBe(150);
    expect(fitLength(300, 1000, 50)).toBe(300);
    expect(fitLength(300, 90, 50, 60)).toBe(60);
  });
});

describe("fitZoom", () => {
  it("zooms out just enough, never in, never below the minimum", () => {
    expect(fitZoom({ width: 800, height: 900 }, null)).toBe(1);
    expect(fitZoom({ width: 800, height: 900 }, { width: 950, height: 600 })).toBe(0.66);
    expect(fitZoom({ width: 500, height: 300 }, { width: 950, height: 600 })).toBe(1);
    expect(fitZoom({ width: 4000, height: 4000 }, { width: 950, height: 600 })).toBe(0.55);
  });
});
