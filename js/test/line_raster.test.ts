import { describe, expect, it } from "vitest";
import { LineRaster } from "../src/draw/line_raster";

/** Opaque white pixels, `w` x `h`. */
const white = (w: number, h: number) => new Uint8ClampedArray(w * h * 4).fill(255);
const red = (px: Uint8ClampedArray, w: number, x: number, y: number) => px[(y * w + x) * 4];
const green = (px: Uint8ClampedArray, w: number, x: number, y: number) => px[(y * w + x) * 4 + 1];

describe("LineRaster", () => {
  it("covers a horizontal line's width, and nothing off it", () => {
    const r = new LineRaster(10, 8);
    r.line(0, 4, 10, 4, 1, 1); // rows 3 and 4 in full (y 3..5)
    const px = white(10, 8);
    r.composite(px, [0, 0, 0]);
    for (let x = 0; x < 10; x++) {
      expect([red(px, 10, x, 2), red(px, 10, x, 3), red(px, 10, x, 4), red(px, 10, x, 5)]).toEqual([
        255, 0, 0, 255,
      ]);
    }
  });

  it("shares a pixel by how much of it the line covers", () => {
    const r = new LineRaster(4, 8);
    r.line(0, 4.5, 4, 4.5, 1, 1); // y 3.5..5.5: half of row 3, all of row 4, half of row 5
    const px = white(4, 8);
    r.composite(px, [0, 0, 0]);
    expect([red(px, 4, 1, 3), red(px, 4, 1, 4), red(px, 4, 1, 5)]).toEqual([128, 0, 128]);
  });

  it("keeps a head's strongest line where lines cross, rather than adding them up", () => {
    const r = new LineRaster(10, 8);
    r.line(0, 4, 10, 4, 1, 0.25);
    r.line(0, 4, 10, 4, 1, 0.5);
    r.line(0, 4, 10, 4, 1, 0.25);
    const px = white(10, 8);
    r.composite(px, [0, 0, 0]);
    expect(red(px, 10, 5, 4)).toBe(128); // 255 * (1 - 0.5)
  });

  it("draws a steep line along its rows, its ends cut at the endpoints", () => {
    const r = new LineRaster(8, 40);
    r.line(2, 0, 6, 40, 1, 1); // 10 rows per column
    const px = white(8, 40);
    r.composite(px, [0, 0, 0]);
    for (let y = 0; y < 40; y++) {
      const xc = 2 + (y + 0.5) / 10; // the centre in row y
      expect(red(px, 8, Math.floor(xc), y)).toBeLessThan(128);
      expect(red(px, 8, Math.floor(xc) + 3, y) ?? 255).toBe(255);
    }
    expect(red(px, 8, 0, 20)).toBe(255);
  });

  it("blends heads in the order drawn and clears between them", () => {
    const r = new LineRaster(10, 8);
    const px = white(10, 8);
    r.line(0, 4, 10, 4, 1, 1);
    r.composite(px, [255, 0, 0]);
    r.composite(px, [0, 0, 255]); // nothing drawn since: no change
    expect([red(px, 10, 5, 4), green(px, 10, 5, 4), px[(4 * 10 + 5) * 4 + 2]]).toEqual([255, 0, 0]);
    r.line(0, 4, 10, 4, 1, 0.5);
    r.composite(px, [0, 0, 255]);
    expect([red(px, 10, 5, 4), px[(4 * 10 + 5) * 4 + 2]]).toEqual([128, 128]);
    expect(px[(4 * 10 + 5) * 4 + 3]).toBe(255);
  });

  it("draws only the part of a line inside the region", () => {
    const r = new LineRaster(6, 6);
    r.line(-10, -5, 20, -5, 1, 1); // above it
    r.line(-10, 3, 20, 3, 1, 1); // across it: rows 2 and 3
    r.line(5.5, -50, 5.5, 100, 0.5, 1); // down its last column (steep), out at both ends
    const px = white(6, 6);
    r.composite(px, [0, 0, 0]);
    const dark = [];
    for (let y = 0; y < 6; y++)
      for (let x = 0; x < 6; x++) if (red(px, 6, x, y) < 255) dark.push(`${x},${y}`);
    const expected = [
      "5,0",
      "5,1",
      "0,2",
      "1,2",
      "2,2",
      "3,2",
      "4,2",
      "5,2",
      "0,3",
      "1,3",
      "2,3",
      "3,3",
      "4,3",
    ];
    expect(dark).toEqual([...expected, "5,3", "5,4", "5,5"]);
  });
});
