// The sampling playground's arithmetic: how temperature, top-k, top-p and min-p reshape one step's next-token
// distribution, in the order Hugging Face's generate applies them. The same as attnwidgets/analysis/sampling.py
// (reshape), which the tests check against transformers' own warpers; js/test/sampling.test.ts checks this one
// against the same hand cases.

export interface Sampling {
  temperature: number; // > 0
  top_k: number; // 1..k; 0 keeps all k
  top_p: number; // (0, 1]
  min_p: number; // [0, 1]
}

/** The sampler's distribution over the k candidates (most probable first) and the rule that cut each ("" kept). */
export function reshape(probs: ArrayLike<number>, s: Sampling): { after: number[]; cut: string[] } {
  const k = probs.length;
  const logits = Array.from(probs, (p) => Math.log(p) / s.temperature);
  const order = Array.from({ length: k }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
  const topK = s.top_k > 0 ? Math.min(s.top_k, k) : k;
  const keep = new Array<boolean>(k).fill(false);
  const cut = new Array<string>(k).fill("");
  order.forEach((i, n) => {
    keep[i] = n < topK;
    if (n >= topK) cut[i] = "top-k";
  });
  const softmax = (): number[] => {
    let top = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < k; i++) if (keep[i]) top = Math.max(top, logits[i]);
    const e = logits.map((l, i) => (keep[i] ? Math.exp(l - top) : 0));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  };
  if (s.top_p < 1) {
    const q = softmax();
    let total = 0;
    let n = 0;
    for (const i of order) {
      if (!keep[i]) continue;
      if (n > 0 && total >= s.top_p) {
        keep[i] = false;
        cut[i] = "top-p";
      }
      total += q[i];
      n++;
    }
  }
  if (s.min_p > 0) {
    const q = softmax();
    let top = 0;
    for (let i = 0; i < k; i++) if (keep[i]) top = Math.max(top, q[i]);
    for (let i = 0; i < k; i++)
      if (keep[i] && q[i] < s.min_p * top) {
        keep[i] = false;
        cut[i] = "min-p";
      }
  }
  return { after: softmax(), cut };
}
