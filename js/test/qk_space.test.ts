import { describe, expect, it } from "vitest";
import { nearestPoint } from "../src/draw/heads";
import {
  COL,
  CONTINUOUS_BINS,
  N_COLS,
  OTHER,
  buildGrid,
  categoryCount,
  colorOptions,
  coordinates,
  gridNearest,
  panelSizes,
  panelTitle,
  pointColors,
  pointPick,
  pointTip,
  selectedPoints,
  tokenInSentence,
} from "../src/views/qk_space/state";

/** A point table as Python packs it: one row of nine numbers per point. */
function table(rows: Array<Partial<Record<keyof typeof COL, number>>>): Float32Array {
  const out = new Float32Array(rows.length * N_COLS);
  rows.forEach((r, i) => {
    for (const [name, col] of Object.entries(COL)) out[i * N_COLS + col] = r[name as keyof typeof COL] ?? 0;
  });
  return out;
}

describe("the hit-test grid", () => {
  const px = [5, 5, 14, 5, 35, 35, 36, 36, 99, 1];

  it("buckets every point once, by the cell it falls in", () => {
    const g = buildGrid(px, 100, 40, 10);
    expect([g.cols, g.rows]).toEqual([10, 4]);
    expect(g.items.length).toBe(5);
    expect(Array.from(g.items).sort()).toEqual([0, 1, 2, 3, 4]);
    const bucketOf = (b: number) => Array.from(g.items.slice(g.start[b], g.start[b + 1]));
    expect(bucketOf(0)).toEqual([0]); // (5, 5)
    expect(bucketOf(1)).toEqual([1]); // (14, 5)
    expect(bucketOf(3 * 10 + 3)).toEqual([2, 3]); // (35, 35), (36, 36)
    expect(bucketOf(9)).toEqual([4]); // (99, 1)
  });

  it("finds the nearest point within the radius, across bucket edges, the later one on a tie", () => {
    const g = buildGrid(px, 100, 40, 10);
    expect(gridNearest(g, px, 9.4, 5, 6)).toBe(0); // 4.4 from point 0, 4.6 from point 1 (another bucket)
    expect(gridNearest(g, px, 9.6, 5, 6)).toBe(1);
    expect(gridNearest(g, px, 35.5, 35.5, 3)).toBe(3); // equally near 2 and 3: 3 is drawn on top
    expect(gridNearest(g, px, 60, 20, 5)).toBe(-1);
    expect(gridNearest(g, px, -3, 5, 10)).toBe(0); // outside the box: edge buckets still searched
  });

  it("agrees with a plain search over 10,000 random points", () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const many = Array.from({ length: 20000 }, () => rand() * 500);
    const g = buildGrid(many, 500, 500, 16);
    for (let t = 0; t < 300; t++) {
      const [x, y] = [rand() * 500, rand() * 500];
      const want = nearestPoint(many, x, y, 7);
      const got = gridNearest(g, many, x, y, 7);
      if (want < 0) expect(got).toBe(-1);
      else {
        const d = (i: number) => (many[2 * i] - x) ** 2 + (many[2 * i + 1] - y) ** 2;
        expect(d(got)).toBeCloseTo(d(want), 9);
      }
    }
  });
});

describe("the point table", () => {
  it("reads coordinates from columns 0 and 1 of each row", () => {
    const t = table([
      { x: 1, y: 2, kind: 0 },
      { x: -3, y: 4, kind: 1 },
    ]);
    expect(Array.from(coordinates(t))).toEqual([1, 2, -3, 4]);
  });

  it("colours categories by index, 'other' grey", () => {
    const t = table([
      { tokenCat: 0, posCat: -1 },
      { tokenCat: 2, posCat: 5 },
      { tokenCat: -1, posCat: -1 },
      { posCat: 1 },
    ]);
    const c = pointColors(t, "token", "viridis", 3);
    expect(Array.from(c.index)).toEqual([0, 2, 3, 0]);
    expect(c.palette[3]).toBe(OTHER);
    expect(c.palette[0]).toBe("#0072B2");
    expect(Array.from(pointColors(t, "pos", "viridis", 2).index)).toEqual([2, 2, 2, 1]);
  });

  it("colours positions on 0..1 and attention on 0..max, queries without a value grey", () => {
    const t = table([
      { position: 0, received: Number.NaN },
      { position: 1, received: 0.2 },
      { position: 0.5, received: 0.4 },
    ]);
    const pos = pointColors(t, "position", "blues", 0);
    expect(pos.vmax).toBe(1);
    expect(Array.from(pos.index)).toEqual([
      0,
      CONTINUOUS_BINS - 1,
      Math.round((128 / 255) * (CONTINUOUS_BINS - 1)),
    ]);
    const att = pointColors(t, "attention", "blues", 0);
    expect(att.vmax).toBeCloseTo(0.4, 6);
    expect(att.index[0]).toBe(CONTINUOUS_BINS); // a query: grey
    expect(att.palette[CONTINUOUS_BINS]).toBe(OTHER);
    expect(att.index[2]).toBe(CONTINUOUS_BINS - 1);
    expect(att.index[1]).toBe(Math.round((128 / 255) * (CONTINUOUS_BINS - 1)));
  });
});

describe("a token in its sentence", () => {
  const tokens = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"];
  it("marks the token and cuts the context with an ellipsis", () => {
    expect(tokenInSentence(tokens, 2)).toBe("[CLS] the ⟦cat⟧ sat on the mat [SEP]");
    expect(tokenInSentence(tokens, 4, 1)).toBe("… sat ⟦on⟧ the …");
    expect(tokenInSentence(tokens, 0, 1)).toBe("⟦[CLS]⟧ the …");
  });
  it("shows invisible characters as the other views do", () => {
    expect(tokenInSentence(["a\u200bb"], 0)).toBe("⟦a⟨U+200B⟩b⟧");
  });
});

describe("the view's sizes, menu and texts", () => {
  it("offers part of speech only when the corpus has it", () => {
    expect(colorOptions({ has_pos: false }).map(([v]) => v)).toEqual(["position", "token", "attention"]);
    expect(colorOptions({ has_pos: true }).map(([v]) => v)).toEqual([
      "position",
      "token",
      "pos",
      "attention",
    ]);
    const m = { token_names: ["the", "a", "of"], pos_names: ["NOUN"] };
    expect([categoryCount(m, "token"), categoryCount(m, "pos"), categoryCount(m, "position")]).toEqual([
      3, 1, 0,
    ]);
  });

  it("sizes the scatter and the panel to the theme, the output area and a fitted box", () => {
    // area 1000: avail 988, scatter min(400, 543) = 400, panel min(400, 988 - 400 - 12) = 400
    expect(panelSizes(500, 1000, null)).toEqual([400, 400]);
    // area 600: avail 588, scatter round(0.55 * 588) = 323, panel 588 - 323 - 12 = 253
    expect(panelSizes(500, 600, null)).toEqual([323, 253]);
    // fitted 700 x 300: scatter min(378, 300 - 4) = 296; panel min(296, 300 - 24) = 276
    expect(panelSizes(500, 1000, { width: 700, height: 300 })).toEqual([296, 276]);
    expect(panelSizes(500, 200, null)).toEqual([240, 140]); // never below 240 and 140
  });

  it("explains a point in its tooltip, by what the colour shows", () => {
    const meta = { tokens: [["a"], ["the", "cat", "sat", "down"]], pos_names: ["NOUN"] };
    const points = table([
      { kind: 1, sentence: 1, token: 2, received: 0.125, posCat: 0 },
      { kind: 0, sentence: 0, token: 0, received: Number.NaN, posCat: -1 },
    ]);
    const key = pointTip(meta, points, "attention", 0);
    expect(key.text).toBe("key “sat” · sentence 1, token 2\nthe cat ⟦sat⟧ down\nattention received: 0.125");
    expect(key.data).toEqual({ kind: "key", sentence: "1", token: "2", text: "sat" });
    expect(pointTip(meta, points, "pos", 0).text.split("\n")[2]).toBe("part of speech: NOUN");
    expect(pointTip(meta, points, "attention", 1).text).toBe("query “a” · sentence 0, token 0\n⟦a⟧");
    expect(pointTip(meta, points, "pos", 1).text.split("\n")[2]).toBe("part of speech: other");
  });

  it("titles the panel with the sentence, the head and the clicked token", () => {
    const m = { layer: 3, head: 1 };
    expect(panelTitle(m, 4, null)).toBe("sentence 4 · layer 3 head 1");
    expect(panelTitle(m, 4, { text: "cat", isKey: true })).toBe("sentence 4 · layer 3 head 1 · key “cat”");
    expect(panelTitle(m, 4, { text: "cat", isKey: false })).toBe("sentence 4 · layer 3 head 1 · query “cat”");
  });
});

describe("selecting tokens by their points", () => {
  // sentence 0: tokens 0..2, sentence 1: tokens 0..1; queries first (rows 0..4), then keys (rows 5..9)
  const rows = [
    ...[0, 1, 2].map((token) => ({ kind: 0, sentence: 0, token })),
    ...[0, 1].map((token) => ({ kind: 0, sentence: 1, token })),
    ...[0, 1, 2].map((token) => ({ kind: 1, sentence: 0, token })),
    ...[0, 1].map((token) => ({ kind: 1, sentence: 1, token })),
  ];
  const pts = table(rows);
  const plain = { shiftKey: false, ctrlKey: false, metaKey: false };

  it("rings the query points of the selected tokens of the sentence shown, in token order", () => {
    expect(selectedPoints(pts, 0, [2, 0])).toEqual([0, 2]);
    expect(selectedPoints(pts, 1, [1])).toEqual([4]);
    expect(selectedPoints(pts, -1, [1])).toEqual([]);
  });

  it("a query point selects its token; shift extends within its sentence; another sentence starts again", () => {
    let pick = pointPick(pts, 1, { sentence: 0, selection: [] }, plain, null);
    expect(pick).toEqual({ sentence: 0, point: 1, selection: [1], anchor: 1 });
    pick = pointPick(pts, 2, { sentence: 0, selection: [1] }, { ...plain, shiftKey: true }, 1);
    expect(pick.selection).toEqual([1, 2]);
    pick = pointPick(pts, 4, { sentence: 0, selection: [1, 2] }, { ...plain, shiftKey: true }, 1);
    expect(pick).toEqual({ sentence: 1, point: 4, selection: [1], anchor: 1 });
  });

  it("a key point opens its sentence and keeps only that sentence's selection", () => {
    expect(pointPick(pts, 6, { sentence: 0, selection: [2] }, plain, 2).selection).toEqual([2]);
    expect(pointPick(pts, 9, { sentence: 0, selection: [2] }, plain, 2)).toEqual({
      sentence: 1,
      point: 9,
      selection: [],
      anchor: null,
    });
  });
});
