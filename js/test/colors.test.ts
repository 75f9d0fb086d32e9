import { describe, expect, it } from "vitest";
import { categorical, hexToRgb, lut, lutIndex, rgbAt } from "../src/shared/colors";

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
