import { describe, expect, it } from "vitest";
import { keySpan, stepKey } from "../src/views/generation/state";

describe("generation view helpers", () => {
  it("maps a key to its token on the text", () => {
    expect(keySpan("self", false, 3, 1)).toEqual([0, 1]);
    expect(keySpan("self", false, 3, 4)).toEqual([1, 1]);
    expect(keySpan("cross", true, 3, 2)).toEqual([0, 2]);
    expect(keySpan("decoder", true, 3, 2)).toEqual([1, 2]);
  });
  it("steps with the arrow keys within the steps", () => {
    expect(stepKey("ArrowRight", 2, 5)).toBe(3);
    expect(stepKey("ArrowRight", 4, 5)).toBe(4);
    expect(stepKey("ArrowLeft", 0, 5)).toBe(0);
    expect(stepKey("End", 0, 5)).toBe(4);
    expect(stepKey("Home", 3, 5)).toBe(0);
    expect(stepKey("a", 3, 5)).toBeNull();
  });
});
