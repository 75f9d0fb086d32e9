// User-supplied text (tokens, model names, titles, watched texts) as the widgets show it: characters that draw
// nothing or reorder what follows are made visible, and every such string is isolated from the text around it.
//
// The rule is the same as attnwidgets/viewdata/labels.py (visible_text, token_label), so a matplotlib figure labels a
// token as the widget does; tests/token_label_cases.json holds cases both test suites check.

/** First and last code point of every character shown as a ⟨U+XXXX⟩ marker: control (Cc) and format (Cf)
 * characters of Unicode 17, with the line and paragraph separators U+2028/U+2029. This covers the bidi controls
 * (U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C), the zero-width characters (U+200B–U+200D, U+2060,
 * U+FEFF), the soft hyphen and the tag characters. A fixed table, not the runtime's \p{Cf}, so that the browser and
 * Python (whose Unicode database may be older) mark exactly the same characters. */
export const INVISIBLE_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x0000, 0x001f],
  [0x007f, 0x009f],
  [0x00ad, 0x00ad],
  [0x0600, 0x0605],
  [0x061c, 0x061c],
  [0x06dd, 0x06dd],
  [0x070f, 0x070f],
  [0x0890, 0x0891],
  [0x08e2, 0x08e2],
  [0x180e, 0x180e],
  [0x200b, 0x200f],
  [0x2028, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x206f],
  [0xfeff, 0xfeff],
  [0xfff9, 0xfffb],
  [0x110bd, 0x110bd],
  [0x110cd, 0x110cd],
  [0x13430, 0x1343f],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0001, 0xe0001],
  [0xe0020, 0xe007f],
];

/** FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE: what `isolate` wraps a string in. */
export const FSI = "\u2068";
export const PDI = "\u2069";

/** Whether code point `c` is shown as a marker. */
export function isInvisible(c: number): boolean {
  for (const [lo, hi] of INVISIBLE_RANGES) {
    if (c < lo) return false;
    if (c <= hi) return true;
  }
  return false;
}

/** The marker for code point `c`: ⟨U+202E⟩ (at least four hex digits, upper case). */
export function marker(c: number): string {
  return `⟨U+${c.toString(16).toUpperCase().padStart(4, "0")}⟩`;
}

/** `text` with newline as ⏎, tab as ⇥ and every other invisible character (see INVISIBLE_RANGES) as ⟨U+XXXX⟩, so
 * a right-to-left override cannot reverse what follows it and a zero-width space does not draw a blank. */
export function visibleText(text: string): string {
  let out = "";
  for (const ch of text) {
    const c = ch.codePointAt(0) ?? 0;
    if (ch === "\n") out += "⏎";
    else if (ch === "\t") out += "⇥";
    else out += isInvisible(c) ? marker(c) : ch;
  }
  return out;
}

/** `text` between FSI and PDI: its own direction comes from its first strong character, and it cannot reorder the
 * text around it (an Arabic model name in "name · self attention · layer 2" stays one piece, left of the rest). */
export function isolate(text: string): string {
  return `${FSI}${text}${PDI}`;
}

/** User text as it goes into a title, caption, menu or tooltip: made visible, then isolated. */
export function userText(text: string): string {
  return isolate(visibleText(text));
}

/** A token as an axis label: visibleText, a leading space as "·", empty as "∅", at most `max` characters (code
 * points, so an emoji is never cut in half) with "…" where it was cut. Not isolated: canvas labels are isolated where
 * they are drawn (fitToken in draw.ts), and a static figure draws no bidi anyway. */
export function tokenLabel(token: string, max = 14): string {
  let t = visibleText(token);
  if (t.startsWith(" ")) t = `·${t.slice(1)}`;
  if (t.length === 0) t = "∅";
  const chars = Array.from(t);
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : t;
}
