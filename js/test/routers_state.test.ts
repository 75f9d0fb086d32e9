// RouterView's state (views/routers/state.ts): pure functions, checked against hand-computed cases.
import { describe, expect, it } from "vitest";
import {
  type Routes,
  cellTip,
  choices,
  expertRgb,
  loadOver,
  loadTitle,
  routerHit,
  routerLayout,
} from "../src/views/routers/state";

// 2 layers x 3 tokens x top 2 over 4 experts: layer 0 routes a→(0,1) b→(2,3) c→(0,2); layer 1 a→(3,0) b→(3,1) c→(1,2)
const routes: Routes = {
  experts: Int32Array.from([0, 1, 2, 3, 0, 2, 3, 0, 3, 1, 1, 2]),
  weights: Float32Array.from([0.75, 0.25, 0.5, 0.5, 0.5, 0.5, 0.75, 0.25, 0.5, 0.5, 0.5, 0.5]),
  nLayers: 2,
  nTokens: 3,
  k: 2,
};

describe("loadOver", () => {
  it("counts each expert's share of the token-slot assignments", () => {
    // layer 1, all tokens: expert 3 twice, 1 twice, 0 once, 2 once, of 6
    expect(Array.from(loadOver(routes, 1, [], false, 4))).toEqual([1 / 6, 2 / 6, 1 / 6, 2 / 6]);
  });
  it("counts the selected tokens only", () => {
    // layer 0, tokens 0 and 2: experts 0, 1, 0, 2 -> 0 twice of 4
    expect(Array.from(loadOver(routes, 0, [0, 2], false, 4))).toEqual([0.5, 0.25, 0.25, 0]);
  });
  it("weighs by gate weight when asked", () => {
    // layer 1, token 0: expert 3 gets 0.75, expert 0 0.25
    expect(Array.from(loadOver(routes, 1, [0], true, 4))).toEqual([0.25, 0, 0, 0.75]);
  });
});

describe("choices and the tooltip", () => {
  it("reads a cell's experts and gates in the model's order", () => {
    expect(choices(routes, 1, 1)).toEqual([
      [3, 0.5],
      [1, 0.5],
    ]);
    expect(cellTip("cat", 1, 2, choices(routes, 0, 0))).toBe(
      "token 1 cat\nlayer 2\nexpert 0: gate 0.750\nexpert 1: gate 0.250",
    );
  });
});

describe("expertRgb", () => {
  const meta = { palette: ["#0173b2", "#de8f05"], fade_floor: 0.3 };
  it("is the palette colour at gate 1 and fades toward white", () => {
    expect(expertRgb(meta, 0, 1)).toEqual([1, 115, 178]);
    expect(expertRgb(meta, 2, 1)).toEqual([1, 115, 178]); // cycled
    // gate 0: strength 0.3 -> 0x01*0.3 + 255*0.7 = 178.8, 0x73*0.3 + 178.5 = 213, 0xb2*0.3 + 178.5 = 231.9
    expect(expertRgb(meta, 0, 0)).toEqual([179, 213, 232]);
  });
});

describe("loadTitle", () => {
  it("names the layer and the tokens as Python's load_title does", () => {
    expect(loadTitle(1, [], false)).toBe("load per expert, layer 1, all tokens");
    expect(loadTitle(1, [3], true)).toBe("gate weight per expert, layer 1, token 3");
    expect(loadTitle(0, [2, 3, 4], false)).toBe("load per expert, layer 0, tokens 2–4");
    expect(loadTitle(0, [2, 5], false)).toBe("load per expert, layer 0, 2 tokens");
  });
});

describe("routerLayout and routerHit", () => {
  const l = routerLayout({ nLayers: 2, nTokens: 3, nExperts: 4, labelW: 50, font: 10 }, null);
  it("finds cells, layer numbers, token labels and bars", () => {
    expect(routerHit(l, 50 + l.cellW * 1.5, l.top + l.cellH * 2.5)).toEqual({ what: "cell", t: 2, li: 1 });
    expect(routerHit(l, 50 + l.cellW * 0.5, l.top - 5)).toEqual({ what: "layer", li: 0 });
    expect(routerHit(l, 10, l.top + 1)).toEqual({ what: "token", t: 0 });
    expect(routerHit(l, l.barsX + l.barsW * 0.9, l.barsY + 5)).toEqual({ what: "bar", e: 3 });
    expect(routerHit(l, 50 + l.cellW * 0.5, l.top + l.cellH * 3.5)).toBeNull();
  });
  it("keeps a long text's strip under a canvas' height", () => {
    const long = routerLayout({ nLayers: 32, nTokens: 4096, nExperts: 8, labelW: 50, font: 12 }, null);
    expect(long.cellH).toBe(3); // floor(15000 / 4096)
    expect(long.height).toBeLessThan(16000);
  });
  it("shrinks the rows to fit a room", () => {
    const small = routerLayout(
      { nLayers: 2, nTokens: 30, nExperts: 4, labelW: 50, font: 10 },
      {
        width: 800,
        height: 300,
      },
    );
    expect(small.top + 30 * small.cellH).toBeLessThanOrEqual(300);
  });
});
