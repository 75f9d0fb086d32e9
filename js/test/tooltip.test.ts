import { describe, expect, it } from "vitest";
import { tooltipPosition } from "../src/draw/tooltip";

describe("tooltipPosition", () => {
  it("goes right of the pointer, or left when it would stick out", () => {
    expect(tooltipPosition(100, 50, 120, 800)).toEqual({ left: 114, top: 64 });
    expect(tooltipPosition(700, 50, 120, 800)).toEqual({ left: 566, top: 64 });
  });
  it("never goes past the left edge", () => {
    expect(tooltipPosition(40, 0, 300, 200)).toEqual({ left: 0, top: 14 });
  });
});
