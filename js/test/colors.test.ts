import { describe, expect, it } from "vitest";
import { categorical, contrast, hexToRgb, lut, lutIndex, readableOn, rgbAt } from "../src/draw/colors";

describe("colour maps", () => {
  it("starts and ends on the map's end stops", () => {
    expect(rgbAt("blues", 0, 1)).toEqual(hexToRgb("#f7fbff"));
    expect(rgbAt("blues", 1, 1)).toEqual(hexToRgb("#08306b"));
    expect(rgbAt("viridis", 0.5, 0.5)).toEqual(hexToRgb("#fde725"));
  });
  it("is monotone in lightness for blues (darker = more attention)", () => {
    const t = lut("blues");
    const light = (i: number) => t[i * 3] + t[i * 3 + 1] + t[i * 3 + 2];
    for (let i = 1; i < 256; i++) expect(light(i)).toBeLessThanOrEqual(light(i - 1));
  });
  it("clamps and survives a zero or NaN scale", () => {
    expect(lutIndex(2, 1)).toBe(255);
    expect(lutIndex(-1, 1)).toBe(0);
    expect(lutIndex(0.5, 0)).toBe(0);
    expect(lutIndex(Number.NaN, 1)).toBe(0);
  });
  it("gives distinct head colours and cycles", () => {
    expect(new Set(Array.from({ length: 12 }, (_, i) => categorical(i))).size).toBe(12);
    expect(categorical(16)).toBe(categorical(0));
  });
});

describe("a head's colour alone on white", () => {
  it("measures contrast as WCAG does", () => {
    expect(contrast("#000000", "#ffffff")).toBeCloseTo(21, 5);
    expect(contrast("#ffffff", "#ffffff")).toBeCloseTo(1, 5);
    expect(contrast("#F0E442", "#ffffff")).toBeCloseTo(1.32, 2); // the yellow head (6): invisible on a projector
  });
  it("darkens every head colour to 4.5 : 1, keeping its hue, and leaves dark ones alone", () => {
    for (let i = 0; i < 12; i++) {
      const c = readableOn(categorical(i), "#ffffff");
      expect(contrast(c, "#ffffff")).toBeGreaterThanOrEqual(4.5);
      const [r, g, b] = hexToRgb(categorical(i));
      const [r2, g2, b2] = hexToRgb(c);
      if (r + g + b > 0) expect(Math.abs(r2 * g - g2 * r) + Math.abs(g2 * b - b2 * g)).toBeLessThan(255 * 12);
    }
    expect(readableOn("#000000", "#ffffff")).toBe("#000000");
    expect(readableOn("#0072B2", "#ffffff")).toBe("#0072b2"); // 5.1 : 1 already
  });
});
