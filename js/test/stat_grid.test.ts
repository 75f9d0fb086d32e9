// The stat grids' shared state (draw/stat_grid.ts) and each grid's own (views/head_stats_grid, head_cluster_map,
// entropy_bars: state.ts): pure functions, checked against hand-computed cases.
import { describe, expect, it } from "vitest";
import { headOf, headTitle, isSelected, selectionInside, valueAt } from "../src/draw/stat_grid";
import { userText } from "../src/shared/text";
import {
  availWidth,
  baseline,
  entropyCaption,
  entropyScale,
  entropyTip,
  entropyTitle,
  rowLabel,
  rowStat,
} from "../src/views/entropy_bars/state";
import {
  clusterTip,
  clusterTitle,
  colorOptions,
  paintOrder,
  pointRadius,
  tipStats,
} from "../src/views/head_cluster_map/state";
import {
  gridMargins,
  gridTip,
  gridTitle,
  labelEvery,
  statOptions,
  valuesFit,
} from "../src/views/head_stats_grid/state";

describe("stat grid skeleton: heads", () => {
  it("names a head, reads its value and finds it from a flat index", () => {
    expect(headTitle(3, 5)).toBe("3-5 (layer 3, head 5)");
    expect(headTitle(2, -1)).toBe("2-all (layer 2, head -1)");
    const data = Float32Array.from([0, 1, 2, 3, 4, 5]); // 2 layers x 3 heads
    expect(valueAt(data, 3, 1, 2)).toBe(5);
    expect(valueAt(data, 3, 0, 1)).toBe(1);
    expect(valueAt(null, 3, 0, 0)).toBeNaN();
    expect(headOf(5, 3)).toEqual({ layer: 1, head: 2 });
    expect(headOf(3, 3)).toEqual({ layer: 1, head: 0 });
  });

  it("selects a head or a whole layer, inside the shape only", () => {
    expect(isSelected({ layer: 1, head: 2 }, 1, 2)).toBe(true);
    expect(isSelected({ layer: 1, head: 2 }, 1, 1)).toBe(false);
    expect(isSelected({ layer: 1, head: 2 }, 0, 2)).toBe(false);
    expect(isSelected({ layer: 1, head: -1 }, 1, 0)).toBe(true); // -1: every head of the layer
    expect(selectionInside({ layer: 1, head: -1 }, [2, 3])).toBe(true);
    expect(selectionInside({ layer: 2, head: 0 }, [2, 3])).toBe(false);
    expect(selectionInside({ layer: -1, head: 0 }, [2, 3])).toBe(false);
    expect(selectionInside({ layer: 0, head: 3 }, [2, 3])).toBe(false);
  });
});

const META = {
  title: "tiny <b>",
  names: ["entropy", "sep"],
  labels: { entropy: "entropy (nats)" } as Record<string, string>,
  shape: [2, 3] as [number, number],
};

const TITLE = userText("tiny <b>"); // isolated, as every title from Python

describe("HeadStatsGrid state", () => {
  it("labels the statistics, sizes the margins and decides when numbers fit", () => {
    expect(statOptions(META)).toEqual([
      ["entropy", "entropy (nats)"],
      ["sep", "sep"],
    ]);
    expect(gridMargins(12, 7.3)).toEqual({ left: 8 + 24 + 8, top: 34 });
    expect(valuesFit(40, 30, 12)).toBe(true);
    expect(valuesFit(30, 30, 12)).toBe(false); // narrower than the text + 6
    expect(valuesFit(30, 20, 16)).toBe(false); // smaller than two font heights
    expect(labelEvery(12, 10)).toBe(2); // 19.2 px a number: every other head
    expect(labelEvery(12, 40)).toBe(1);
  });

  it("says the head and its value in the tooltip, the statistic in the title", () => {
    const data = Float32Array.from([0.1, 0.2, 0.3, 0.4, 0.5, 0.625]);
    const tip = gridTip(META, "entropy", data, { layer: 1, head: 2 });
    expect(tip.text).toBe("head 1-2 (layer 1, head 2)\nentropy (nats): 0.625");
    expect(tip.data).toEqual({ layer: "1", head: "2", value: "0.625" });
    expect(gridTip(META, "nope", null, { layer: 0, head: 0 }).text).toBe(
      "head 0-0 (layer 0, head 0)\nnope: n/a",
    );
    expect(gridTitle(META, "sep")).toBe(`${TITLE} · sep`);
  });
});

describe("HeadClusterMap state", () => {
  it("offers layer then the statistics, and draws the selection last", () => {
    expect(
      colorOptions({
        ...META,
        colors: [
          ["layer", ""],
          ["entropy", ""],
        ],
      }),
    ).toEqual([
      ["layer", "layer"],
      ["entropy", "entropy (nats)"],
    ]);
    expect(pointRadius(18)).toBe(9);
    expect(pointRadius(13)).toBe(6);
    expect(paintOrder(6, 3, { layer: 0, head: 1 })).toEqual([0, 2, 3, 4, 5, 1]);
    expect(paintOrder(6, 3, { layer: 0, head: -1 })).toEqual([3, 4, 5, 0, 1, 2]);
    expect(paintOrder(4, 2, { layer: 5, head: 0 })).toEqual([0, 1, 2, 3]);
  });

  it("lists the colouring's statistic first, then entropy, sep and cls the source has", () => {
    expect(tipStats("layer")).toEqual(["entropy", "sep", "cls"]);
    expect(tipStats("sep")).toEqual(["sep", "entropy", "cls"]);
    expect(tipStats("kl")).toEqual(["kl", "entropy", "sep", "cls"]);
    const stats: Record<string, number[]> = { entropy: [0, 0, 0, 0, 1.5, 0], sep: [0, 0, 0, 0, 0.25, 0] };
    const tip = clusterTip(META, "sep", (name) => stats[name] ?? null, 4);
    expect(tip.text).toBe("1-1 (layer 1, head 1)\nsep: 0.250\nentropy (nats): 1.500");
    expect(tip.data).toEqual({ layer: "1", head: "1", value: "0.25" });
    expect(clusterTip(META, "layer", (name) => stats[name] ?? null, 5).data.value).toBe("1");
    expect(clusterTitle(META, "layer")).toBe(`${TITLE} · head map, coloured by layer`);
    expect(clusterTitle(META, "entropy")).toBe(`${TITLE} · head map, coloured by entropy (nats)`);
  });
});

describe("EntropyBars state", () => {
  const meta = {
    ...META,
    rows: [
      ["all", "all rows"],
      ["cls", "[CLS] row"],
    ] as Array<[string, string]>,
    row_stat: { all: "entropy", cls: "entropy_cls" } as Record<string, string>,
    baselines: { all: 2, cls: null } as Record<string, number | null>,
  };

  it("finds the row choice's statistic, label and baseline", () => {
    expect(rowStat(meta, "cls")).toBe("entropy_cls");
    expect(rowStat(meta, "last")).toBe("");
    expect(rowLabel(meta, "cls")).toBe("[CLS] row");
    expect(rowLabel(meta, "last")).toBe("last");
    expect(baseline(meta, "all")).toBe(2);
    expect(baseline(meta, "cls")).toBeNull();
    expect(baseline(meta, "last")).toBeNull();
  });

  it("scales the y axis to the largest bar or baseline", () => {
    // vmax 2.5 (NaN skipped); ticks to 2.7 step 0.5; the top is 2.5 x 1.02 above the last tick
    const s = entropyScale([1.2, Number.NaN, 2.5, 0.3], 2);
    expect(s.vmax).toBe(2.5);
    expect(s.ticks).toEqual([0, 0.5, 1, 1.5, 2, 2.5]);
    expect(s.yTop).toBeCloseTo(2.55, 10);
    // nothing to show: 0 to 1, step 0.2
    const e = entropyScale(null, null);
    expect(e.ticks).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(e.yTop).toBeCloseTo(1.02, 10);
    expect(entropyScale([0.5], 3).vmax).toBe(3); // the baseline above every bar
  });

  it("keeps a shrink-wrapped view's width from creeping down", () => {
    expect(availWidth(600, false, 800)).toBe(600);
    expect(availWidth(600, true, 800)).toBe(800);
    expect(availWidth(900, true, 800)).toBe(900);
  });

  it("captions, tooltips and titles the bars", () => {
    expect(entropyCaption(2, { layer: 1, head: 0 })).toBe(
      "Dashed line: entropy of uniform attention (2.000 nats). Selected head 1-0.",
    );
    expect(entropyCaption(null, { layer: 2, head: -1 })).toBe(
      "No uniform baseline in this source. Selected head 2-all.",
    );
    const tip = entropyTip(meta, "all", 1.25, { layer: 0, head: 2 });
    expect(tip.text).toBe("head 0-2 (layer 0, head 2)\nentropy, all rows: 1.250 nats\nuniform: 2.000 nats");
    expect(entropyTip(meta, "cls", Number.NaN, { layer: 0, head: 2 }).text).toBe(
      "head 0-2 (layer 0, head 2)\nentropy, [CLS] row: n/a nats",
    );
    expect(entropyTitle(meta, "cls")).toBe(`${TITLE} · attention entropy, [CLS] row`);
  });
});
