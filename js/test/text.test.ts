import { describe, expect, it } from "vitest";
import shared from "../../tests/token_label_cases.json";
import { fitToken } from "../src/draw/canvas";
import {
  FSI,
  INVISIBLE_RANGES,
  PDI,
  isInvisible,
  isolate,
  tokenLabel,
  userText,
  visibleText,
} from "../src/shared/text";

// The cases attnwidgets/viewdata/labels.py's token_label is held to as well (tests/viewdata/test_labels.py).
const CASES = shared.cases as Array<[string, number, string]>;

const BIDI = [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c];
const ZERO_WIDTH = [0x200b, 0x200c, 0x200d, 0x2060, 0xfeff];

describe("tokenLabel", () => {
  it("labels every shared case as the Python twin does", () => {
    for (const [token, max, label] of CASES) expect([token, tokenLabel(token, max)]).toEqual([token, label]);
  });
  it("shows bidi controls and zero-width characters as ⟨U+XXXX⟩, never raw", () => {
    for (const c of [...BIDI, ...ZERO_WIDTH]) {
      const label = tokenLabel(`a${String.fromCodePoint(c)}b`, 40);
      expect(label).toBe(`a⟨U+${c.toString(16).toUpperCase().padStart(4, "0")}⟩b`);
      expect(label).not.toContain(String.fromCodePoint(c));
    }
  });
  it("gives a zero-width-space token a marker, not a blank", () => {
    expect(tokenLabel("\u200b")).toBe("⟨U+200B⟩");
  });
  it("cuts by code points, never through an emoji", () => {
    expect(tokenLabel("😀😀😀😀", 3)).toBe("😀😀…");
  });
});

describe("the invisible table", () => {
  it("is every Cc, Cf, Zl and Zp character of this runtime's Unicode, and nothing else", () => {
    const re = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
    const wrong: string[] = [];
    for (let c = 0; c < 0x110000; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      if (re.test(String.fromCodePoint(c)) !== isInvisible(c)) wrong.push(c.toString(16));
    }
    expect(wrong).toEqual([]);
  });
  it("is sorted and does not overlap (isInvisible stops at the first range past c)", () => {
    for (let i = 1; i < INVISIBLE_RANGES.length; i++)
      expect(INVISIBLE_RANGES[i][0]).toBeGreaterThan(INVISIBLE_RANGES[i - 1][1]);
  });
});

describe("isolation", () => {
  it("wraps user text in FSI … PDI after making it visible", () => {
    expect(isolate("abc")).toBe(`${FSI}abc${PDI}`);
    expect(userText("gpt\u202e-x")).toBe(`${FSI}gpt⟨U+202E⟩-x${PDI}`);
    expect(visibleText(" a\tb\n")).toBe(" a⇥b⏎"); // a title keeps its leading space; a label shows it as ·
  });
  it("isolates a canvas token label, cut or not", () => {
    const ctx = { measureText: (s: string) => ({ width: Array.from(s).length * 10 }) as TextMetrics };
    expect(fitToken(ctx, "\u202eabc", 200)).toBe(`${FSI}⟨U+202E⟩abc${PDI}`);
    expect(fitToken(ctx, "\u202eabc", 50)).toBe(`${FSI}⟨U+2…${PDI}`);
  });
});
