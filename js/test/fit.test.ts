import { describe, expect, it } from "vitest";
import { fitOn, fitScale, fixedBox, roomInBox, viewportHeight } from "../src/draw/fit";
import { heatmapLayout } from "../src/draw/layout";
import { THEMES } from "../src/shared/theme";
import { gridGeometry } from "../src/views/model_view/state";
import { PANEL_CHROME, fitGeometry, fontFor, panelWidths, panels, tagWidth } from "../src/views/qk/state";

const LECTURE = THEMES.lecture;

describe("fitOn / fixedBox", () => {
  it("auto fits in the lecture theme only; true, false and a box say so themselves", () => {
    expect(fitOn("auto", "lecture")).toBe(true);
    expect(fitOn("auto", "light")).toBe(false);
    expect(fitOn(undefined, "lecture")).toBe(true);
    expect(fitOn(true, "light")).toBe(true);
    expect(fitOn(false, "lecture")).toBe(false);
    expect(fitOn([800, 600], "light")).toBe(true);
    expect(fixedBox([800, 600])).toEqual({ width: 800, height: 600 });
    expect(fixedBox(true)).toBeNull();
  });
});

describe("viewportHeight", () => {
  const frame = (innerHeight: number, top: unknown, availHeight = 720) =>
    ({
      innerHeight,
      screen: { availHeight, height: availHeight },
      get top() {
        if (top === "cross") throw new Error("SecurityError");
        return top;
      },
    }) as unknown as Window;
  it("is the window's own height outside a frame", () => {
    const win = frame(700, null);
    Object.defineProperty(win, "top", { get: () => win });
    expect(viewportHeight(win)).toBe(700);
  });
  it("inside an output iframe that grew with its content, is the top window's viewport when readable", () => {
    expect(viewportHeight(frame(2000, { innerHeight: 720 }))).toBe(720);
  });
  it("inside a cross-origin frame, is a share of the screen, not the frame's own height", () => {
    expect(viewportHeight(frame(2000, "cross", 720))).toBe(540);
    expect(viewportHeight(frame(150, "cross", 1080))).toBe(810);
  });
});

describe("roomInBox / fitScale", () => {
  it("takes the chrome's height and the padding's width off the box", () => {
    expect(roomInBox({ width: 1000, height: 600 }, 130, 12)).toEqual({ width: 988, height: 470 });
    expect(roomInBox({ width: 100, height: 100 }, 300, 12)).toEqual({ width: 88, height: 0 });
  });
  it("only shrinks, by the tighter side, never below the floor", () => {
    expect(fitScale({ width: 400, height: 300 }, { width: 800, height: 800 })).toBe(1);
    expect(fitScale({ width: 800, height: 600 }, { width: 400, height: 450 })).toBe(0.5);
    expect(fitScale({ width: 800, height: 600 }, { width: 10, height: 10 }, 0.25)).toBe(0.25);
  });
});

describe("heatmapLayout in a box", () => {
  // The case: 16 tokens in the lecture theme are 48 px cells (an 875 px canvas, labels 100 px).
  const base = {
    nq: 16,
    nk: 16,
    maxGrid: 760,
    maxCell: 48,
    labelWidth: 100,
    labelHeight: 100,
    minLabelCell: 10,
  };
  it("without a box keeps the theme's size", () => {
    const l = heatmapLayout(base);
    expect(l.cell).toBe(47); // 760 / 16 = 47.5, floored
    expect(l.height).toBe(100 + 16 * 47 + 4);
  });
  it("shrinks cells until the whole canvas, labels included, is inside the box", () => {
    const l = heatmapLayout({ ...base, maxWidth: 1100, maxHeight: 460 });
    expect(l.cell).toBe(22); // (460 - 100 - 4) / 16 = 22.25
    expect(l.height).toBeLessThanOrEqual(460);
    expect(l.width).toBeLessThanOrEqual(1100);
    expect(l.showLabels).toBe(true);
    const narrow = heatmapLayout({ ...base, maxWidth: 420, maxHeight: 2000 });
    expect(narrow.cell).toBe(19); // (420 - 100 - 4) / 16 = 19.75
    expect(narrow.width).toBeLessThanOrEqual(420);
  });
  it("drops the labels when cells would be too small to read, and gives their room to the grid", () => {
    const l = heatmapLayout({ ...base, maxWidth: 1000, maxHeight: 250 });
    expect(l.showLabels).toBe(false);
    expect(l.x0).toBe(4);
    expect(l.height).toBeLessThanOrEqual(250);
  });
  it("never grows past the theme's cell", () => {
    expect(heatmapLayout({ ...base, nq: 3, nk: 3, maxWidth: 5000, maxHeight: 5000 }).cell).toBe(48);
  });
});

describe("QKStepThrough fitGeometry", () => {
  const g = { rh: 28, top: 53, cw: 3, label: 110, bar: 76, num: 62 };
  it("keeps the natural size when it fits", () => {
    expect(fitGeometry(g, 32, 16, { width: 2000, height: 2000 })).toEqual(g);
  });
  it("in the lecture theme never shrinks the text under 14 px: the panels scroll instead", () => {
    const narrow = fitGeometry(g, 32, 40, { width: 700, height: 300 });
    expect(fontFor(LECTURE, narrow)).toBeLessThan(14); // the case is a real one
    const f = fitGeometry(g, 32, 40, { width: 700, height: 300 }, false, 0, 14);
    expect(fontFor(LECTURE, f)).toBeGreaterThanOrEqual(14);
  });
  it("shortens rows so every key row is inside the height", () => {
    const f = fitGeometry(g, 32, 16, { width: 2000, height: 400 });
    expect(f.rh).toBe(Math.floor(396 / 17.9)); // 22
    expect(f.top + f.rh * 16 + 4).toBeLessThanOrEqual(400);
  });
  it("narrows labels, bars and numbers (then strips) until six panels fit the width", () => {
    const f = fitGeometry(g, 32, 16, { width: 860, height: 2000 });
    const total = panelWidths(f, 32).reduce((a, b) => a + b, 0) + 6 * PANEL_CHROME;
    expect(total).toBeLessThanOrEqual(860);
    expect(f.bar).toBeLessThan(g.bar);
    const natural = panelWidths(g, 32).reduce((a, b) => a + b, 0) + 6 * PANEL_CHROME;
    expect(natural).toBeGreaterThan(860); // so the case is a real one
  });
});

describe("ModelView gridGeometry with a height", () => {
  it("shrinks slots so every layer is inside the height", () => {
    const free = gridGeometry(12, 12, 700, 20);
    const fitted = gridGeometry(12, 12, 700, 20, 300);
    expect(fitted.height).toBeLessThanOrEqual(300);
    expect(fitted.slot).toBeLessThan(free.slot);
    expect(gridGeometry(6, 12, 700, 20, 5000)).toEqual(gridGeometry(6, 12, 700, 20));
  });
});

describe("QKStepThrough with a position bias", () => {
  const g = { rh: 18, top: 34, cw: 3, label: 140, bar: 70, num: 46 };
  it("adds a numbered '+ bias' panel only when the capture has a bias", () => {
    expect(panels(false).map((p) => p.title)).toEqual([
      "① query q, keys k",
      "② q ⊙ k",
      "③ q · k",
      "④ × 1/√d",
      "⑤ softmax",
      "⑥ Σ weight × v",
    ]);
    const withBias = panels(true);
    expect(withBias.map((p) => p.id)).toEqual(["qk", "prod", "dot", "scaled", "bias", "softmax", "sum"]);
    expect(withBias[4].title).toBe("⑤ + bias");
    expect(withBias[6].title).toBe("⑦ Σ weight × v");
  });
  it("gives the bias panel a width (bars, numbers and the bucket column) and still fits the row", () => {
    const plain = panelWidths(g, 32);
    const biased = panelWidths(g, 32, true);
    expect(biased.length).toBe(7);
    expect(biased[4]).toBe(plain[2] + tagWidth(g));
    const f = fitGeometry(g, 32, 16, { width: 900, height: 2000 }, true);
    const total = panelWidths(f, 32, true).reduce((a, b) => a + b, 0) + 7 * PANEL_CHROME;
    expect(total).toBeLessThanOrEqual(900);
  });
});

describe("QKStepThrough scaling title", () => {
  it("says × 1/√d only when the model scales by it, else its factor (T5: × 1)", () => {
    expect(panels(false, 1 / Math.sqrt(32), 32)[3].title).toBe("④ × 1/√d");
    expect(panels(true, 1, 8)[3].title).toBe("④ × 1");
    expect(panels(true, 0.125, 8)[3].title).toBe("④ × 0.125");
  });
});
