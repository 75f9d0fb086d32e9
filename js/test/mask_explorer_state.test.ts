// MaskExplorer's state (views/mask_explorer/state.ts): pure functions, checked against hand-computed cases.
import { describe, expect, it } from "vitest";
import {
  type MaskMeta,
  cacheBars,
  cellColor,
  countAllowed,
  divisors,
  formatBytes,
  globalSet,
  hasWindow,
  kvLayout,
  kvText,
  lengthChange,
  maskColors,
  maskSide,
  maskTip,
  maskTitle,
  padStart,
  parsePositions,
  statsText,
} from "../src/views/mask_explorer/state";

// A causal mask of 3 tokens: query i sees keys 0..i.
const CAUSAL3 = [1, 0, 0, 1, 1, 0, 1, 1, 1];

describe("formatBytes / divisors / parsePositions", () => {
  it("formats binary sizes", () => {
    expect(formatBytes(2 ** 31)).toBe("2 GiB");
    expect(formatBytes(2 ** 26)).toBe("64 MiB");
    expect(formatBytes(1536)).toBe("1.50 KiB");
    expect(formatBytes(12)).toBe("12 B");
  });
  it("lists the kv-head counts that divide the query heads", () => {
    expect(divisors(12)).toEqual([1, 2, 3, 4, 6, 12]);
    expect(divisors(7)).toEqual([1, 7]);
  });
  it("reads positions, dropping junk and out-of-range ones", () => {
    expect(parsePositions("6, 0 x 6;99 -1 3.5", 12)).toEqual([0, 6]);
  });
});

describe("controls", () => {
  it("shrinks the window and the padding with the length", () => {
    expect(lengthChange(5, 8, 6)).toEqual({ length: 5, window: 5, padding: 4 });
    expect(lengthChange(20, 8, 2)).toEqual({ length: 20, window: 8, padding: 2 });
    expect(hasWindow("sliding_window")).toBe(true);
    expect(hasWindow("global_local")).toBe(true);
    expect(hasWindow("causal")).toBe(false);
  });
});

describe("the mask panel", () => {
  it("is the theme's size, or what the fitted box leaves beside the KV panel and above the counts", () => {
    const none = { kvWidth: 0, gap: 0, statsHeight: 0 };
    expect(maskSide(false, 34, null, none)).toBe(340);
    expect(maskSide(true, 44, null, none)).toBe(460);
    const taken = { kvWidth: 320, gap: 24, statsHeight: 40 };
    expect(maskSide(false, 34, { width: 600, height: 300 }, taken)).toBe(600 - 320 - 24 - 34 - 8); // 214 < 218
    expect(maskSide(false, 34, { width: 900, height: 300 }, taken)).toBe(300 - 40 - 34 - 8);
    expect(maskSide(false, 34, { width: 200, height: 100 }, taken)).toBe(80);
  });

  it("colours allowed pairs, those through a global token and masked ones", () => {
    const c = maskColors(false);
    const globals = globalSet("global_local", [0]);
    expect(cellColor(c, true, globals, 2, 0)).toBe(c.viaGlobal);
    expect(cellColor(c, true, globals, 0, 2)).toBe(c.viaGlobal);
    expect(cellColor(c, true, globals, 2, 1)).toBe(c.on);
    expect(cellColor(c, false, globals, 0, 1)).toBe(c.off);
    expect(globalSet("sliding_window", [0, 1]).size).toBe(0); // only global + local has global tokens
    expect(maskColors(true).on).not.toBe(c.on);
  });

  it("counts, describes and titles the mask", () => {
    expect(countAllowed(CAUSAL3, 3)).toBe(6);
    expect(padStart(8, 3)).toBe(5);
    expect(padStart(8, undefined)).toBe(8);
    const meta = { allowed: 6, total: 9, keys_min: 1, keys_max: 3 } as MaskMeta;
    expect(statsText(meta, 0, 3, 3)).toBe("6 of 9 query–key pairs computed (67 %); each query sees 1–3 keys");
    expect(statsText({ ...meta, keys_min: 3 }, 2, 2, 3)).toBe(
      "6 of 9 query–key pairs computed (67 %); each query sees 3 keys" +
        "; blue: the local window, orange: through a global token" +
        "; keys 2–2 are [PAD] (outlined): weight 0 for every query",
    );
    expect(maskTitle("sliding_window", 4, 16)).toBe("Attention masks · sliding window · w = 4 · 16 tokens");
    expect(maskTitle("causal", 4, 8)).toBe("Attention masks · causal (decoder) · 8 tokens");
  });

  it("says in the tooltip what a cell means, padding included", () => {
    expect(maskTip(CAUSAL3, 3, 1, 2, 3)).toBe("query 1 → key 2: masked\nquery 1 sees 2 keys");
    expect(maskTip(CAUSAL3, 3, 0, 0, 3)).toBe("query 0 → key 0: attends\nquery 0 sees 1 key");
    expect(maskTip(CAUSAL3, 3, 1, 2, 2)).toBe(
      "query 1 → key 2: masked\nquery 1 sees 2 keys\nkey 2 is [PAD]: masked for every query",
    );
    expect(maskTip(CAUSAL3, 3, 2, 0, 2)).toBe(
      "query 2 → key 0: attends\nquery 2 sees 3 keys\nquery 2 is [PAD]: computed, then thrown away",
    );
  });
});

describe("the KV panel", () => {
  it("spreads the kv heads under the query heads, the last under the last", () => {
    const l = kvLayout(8, 2, false);
    expect([l.size, l.width, l.height, l.font, l.qY, l.kvY]).toEqual([14, 320, 130, 11, 19, 97]);
    expect(l.qX(0)).toBe(20); // 14 + 6: room for the first kv box, twice as wide
    expect(l.qX(7)).toBe(20 + 7 * 24); // boxes 14 px, gaps 10 px
    expect(l.kvX(0)).toBe(20);
    expect(l.kvX(1)).toBe(188);
    expect(kvLayout(8, 1, false).kvX(0)).toBe(20 + (8 * 24 - 10 - 14) / 2); // one kv head: centred
    expect(kvLayout(64, 8, false).width).toBe(28 + 12 + 64 * (14 + 3)); // gaps at least 3 px: wider than 320
  });

  it("says who shares what and compares the caches", () => {
    const cache = { n_layers: 12, head_dim: 64, seq_len: 4096, bytes_per_value: 2 };
    expect(kvText("GQA", 8, 2, cache)).toBe(
      "GQA: 4 query heads share each K/V head. KV cache for 12 layers × 64 dims × 4,096 tokens at 2 bytes:",
    );
    expect(kvText("MHA", 8, 8, cache).startsWith("MHA: every query head has its own K/V. ")).toBe(true);
    const bars = cacheBars({ cache: { MHA: 2 ** 31, GQA: 2 ** 29, MQA: 2 ** 27 }, variant: "GQA" }, 2);
    expect(bars.map((b) => [b.label, b.text, b.width, b.current])).toEqual([
      ["MHA", "2 GiB", 220, false],
      ["GQA (2)", "512 MiB", 55, true],
      ["MQA", "128 MiB", 13.75, false],
    ]);
    expect(cacheBars({ cache: {}, variant: "MHA" }, 1)[0].width).toBe(2); // nothing to show: a 2 px stub
  });
});
