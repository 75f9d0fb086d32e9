import { describe, expect, it } from "vitest";
import { reshape } from "../src/draw/sampling";

const base = { temperature: 1, top_k: 0, top_p: 1, min_p: 0 };
const P = [0.4, 0.3, 0.2, 0.05];

// The hand cases of tests/studies/test_sampling_on_models.py (Python's reshape, checked there against transformers).
describe("reshape", () => {
  it("top-k renormalises over the kept", () => {
    const { after, cut } = reshape(P, { ...base, top_k: 3 });
    [4 / 9, 3 / 9, 2 / 9, 0].forEach((v, i) => expect(after[i]).toBeCloseTo(v, 12));
    expect(cut).toEqual(["", "", "", "top-k"]);
  });
  it("top-p keeps the fewest reaching p", () => {
    expect(reshape(P, { ...base, top_p: 0.6 }).cut).toEqual(["", "", "top-p", "top-p"]);
  });
  it("min-p cuts below a share of the best", () => {
    expect(reshape(P, { ...base, min_p: 0.6 }).cut).toEqual(["", "", "min-p", "min-p"]);
  });
  it("a low temperature is greedy and the doc example holds", () => {
    expect(reshape(P, { ...base, temperature: 0.01 }).after[0]).toBeCloseTo(1, 9);
    const { after, cut } = reshape([0.5, 0.3, 0.1], { ...base, top_k: 3, top_p: 0.8 });
    expect(after.map((v) => Number(v.toFixed(3)))).toEqual([0.625, 0.375, 0]);
    expect(cut).toEqual(["", "", "top-p"]);
  });
});
