import { describe, expect, it } from "vitest";
import { keeps, lineThreshold } from "../src/views/head_view/state";
import { gridGeometry, thumbAt } from "../src/views/model_view/state";

describe("HeadView helpers", () => {
  it("sentence filters keep only their segment pair", () => {
    expect(keeps("all", 1, 0)).toBe(true);
    expect(keeps("AB", 0, 1)).toBe(true);
    expect(keeps("AB", 1, 0)).toBe(false);
    expect(keeps("BB", 1, 1)).toBe(true);
    expect(keeps("BA", 0, 0)).toBe(false);
  });

  it("raises the threshold only for long inputs with nothing in focus", () => {
    expect(lineThreshold(20, 0.02, false)).toBe(0.02);
    expect(lineThreshold(512, 0.02, false)).toBe(0.1);
    expect(lineThreshold(512, 0.02, true)).toBe(0.02);
  });
});

describe("ModelView grid", () => {
  it("maps a thumbnail's centre back to its layer and head; gaps are outside", () => {
    const g = gridGeometry(6, 12, 700, 12);
    const step = g.slot + g.gap;
    expect(thumbAt(g, g.x0 + 7 * step + g.slot / 2, g.y0 + 3 * step + g.slot / 2)).toEqual({
      layer: 3,
      head: 7,
    });
    expect(thumbAt(g, g.x0 + step - g.gap / 2, g.y0 + 1)).toBeNull();
    expect(thumbAt(g, g.x0 - 1, g.y0 + 1)).toBeNull();
    expect(thumbAt(g, g.x0 + 12 * step + 1, g.y0 + 1)).toBeNull();
  });
});
