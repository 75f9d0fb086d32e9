import { describe, expect, it } from "vitest";
import { deltaAxisText, deltaRanges, deltaSpan } from "../src/views/ablation/state";

const row = (name: string, before: number, after: number) => ({
  item: "pair 0",
  label: "",
  name,
  before,
  after,
  delta: after - before,
});

describe("the ablation's change axis", () => {
  it("zooms each watched number's axis to its largest change", () => {
    // a head's change of -0.0023 on a 0.979 cosine: on the value's axis 0.23 % of the track, here all of its half
    const rows = [row("cosine", 0.979, 0.9767), row("cosine", 0.626, 0.6288), row("loss", 2, 2.5)];
    const ranges = deltaRanges(rows);
    expect(ranges.get("cosine")).toBeCloseTo(0.0028, 10);
    expect(ranges.get("loss")).toBeCloseTo(0.5, 10);
    const biggest = deltaSpan(0.6288 - 0.626, 0.0028);
    expect(biggest.left).toBeCloseTo(0.5, 10);
    expect(biggest.width).toBeCloseTo(0.5, 10); // the largest change fills half the track, right of the centre
    const down = deltaSpan(-0.0014, 0.0028);
    expect(down.left).toBeCloseTo(0.25, 10); // half of the largest, left of the centre
    expect(down.width).toBeCloseTo(0.25, 10);
  });

  it("sets no axis for a change below NO_CHANGE (float rounding, printed as ±0.0000)", () => {
    const ranges = deltaRanges([row("cosine", 1, 0.99999994), row("cosine", 0.5, 0.5), row("loss", 2, 2.5)]);
    expect(ranges.get("cosine")).toBe(0);
    expect(ranges.get("loss")).toBeCloseTo(0.5, 10);
    expect(deltaSpan(0.99999994 - 1, ranges.get("cosine") ?? 0).width).toBe(0);
  });

  it("draws nothing for no change and says so", () => {
    expect(deltaSpan(0, 0)).toEqual({ left: 0.5, width: 0 });
    expect(deltaSpan(null, 1)).toEqual({ left: 0.5, width: 0 });
    expect(deltaAxisText(0)).toBe("change: none");
    // enough digits to read the half-width: 0.0028 -> 4 decimals, 0.5 -> 2
    expect(deltaAxisText(0.0028)).toBe("change, axis ±0.0028");
    expect(deltaAxisText(0.5)).toBe("change, axis ±0.50");
  });
});
