import { describe, expect, it } from "vitest";
import { divergingPixels } from "../src/views/compare/state";

describe("divergingPixels", () => {
  it("draws 0 white, the ends of a symmetric scale in opposite colours, NaN light grey", () => {
    const px = divergingPixels(new Float32Array([-0.5, 0, 0.5, Number.NaN]), 2, 2, 0.5, "rdbu");
    const at = (i: number) => Array.from(px.slice(i * 4, i * 4 + 4));
    const [neg, zero, pos, nan] = [at(0), at(1), at(2), at(3)];
    expect(neg[2]).toBeGreaterThan(neg[0] + 60); // blue below 0
    expect(pos[0]).toBeGreaterThan(pos[2] + 60); // red above 0
    expect(Math.min(zero[0], zero[1], zero[2])).toBeGreaterThan(240); // white at 0
    expect(nan).toEqual([235, 235, 235, 255]);
  });

  it("a zero scale (A and B agree) paints every cell the middle colour", () => {
    const px = divergingPixels(new Float32Array([0, 0, 0, 0]), 2, 2, 0, "puor");
    expect(new Set(Array.from({ length: 4 }, (_, i) => px.slice(i * 4, i * 4 + 3).join())).size).toBe(1);
    expect(Math.min(px[0], px[1], px[2])).toBeGreaterThan(240);
  });
});
